/* threadpool.c - persistent workers woken per parallel loop.
 *
 * Work is split into a few contiguous chunks per thread, claimed one at a time
 * by whichever thread is running (the caller too): each chunk streams its own
 * rows of a weight matrix, and a thread that falls behind (a late wake-up, a
 * busy core, slower memory) takes fewer chunks. A loop ends when its chunks
 * are done, not when every worker has checked in: on a machine where other
 * processes hold the cores, a descheduled worker that never claimed a chunk
 * costs nothing, and the threads that run finish its share.
 *
 * A forward pass runs hundreds of loops a token, microseconds apart, so the
 * workers and the caller first spin briefly on atomics and only then sleep on
 * the condition variables (waking a sleeping thread costs tens of
 * microseconds; spinning longer would take cores other processes need).
 *
 * A worker preempted in the middle of a chunk still holds up its loop for the
 * rest of the other process's time slice, and on a core shared with a busy
 * process that happens several times a token; when the caller is the one
 * preempted, no loop starts until it runs again. Then one thread can beat
 * two, so the caller tries both, a window of loops at a time (the loops of
 * consecutive tokens repeat, so windows of the same length do about the same
 * work): after a window shared out whose wall time was more than GATE of the
 * caller's estimate of doing it alone (its pace: wall time per item over its
 * chunks, scaled by the part of that time it was running, sampled), the next
 * window runs alone, and if that was faster, the next ones too, a stretch
 * that doubles while running alone keeps winning. On a quiet machine two
 * threads make a window take about half the estimate and nothing is tried. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "threadpool.h"

#include "pocketdec_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* Spins before sleeping: longer than the gap between two loops of a forward
 * pass, short enough not to hold a busy machine's core for long. Every
 * YIELD_EVERY rounds the spinner yields, so a thread of ours that the
 * scheduler parked on this core (the one holding a chunk) gets to run. */
#define SPIN_ROUNDS 20000
#define YIELD_EVERY 1024

/* Chunks per thread: enough to even out a slow thread, few enough that each
 * chunk is a long contiguous run. */
#define CHUNKS_PER_THREAD 4

/* The claim word of the current loop: its generation in the high 32 bits, the
 * next chunk to take in bits 16..31, the number of chunks in bits 0..15. One
 * compare-and-swap claims a chunk of one loop only, so a worker that wakes
 * late cannot take a chunk of the next loop with the last one's numbers. */
#define MAX_CHUNKS 0xFFFF

/* TUNE_WINDOW loops make a window (a token of the MNN-Pocket shape is about
 * 170 loops); a thread's processor time costs a system call (about a
 * microsecond), so it is read on every SAMPLE_EVERY-th loop only. */
#define TUNE_WINDOW 1024
#define SAMPLE_EVERY 16
#define GATE 0.75
#define SOLO_MAX_WINDOWS 16

typedef enum { TUNE_SHARED, TUNE_TRY_ALONE, TUNE_ALONE } tune_mode;

/* The caller's record of whether sharing out pays (only the caller touches it). */
typedef struct {
    tune_mode mode;
    int loops;             /* loops in the current window */
    int64_t wall_ns;       /* their wall time */
    double own_pace_ns;    /* shared: the caller's time a chunk item, times each loop's items, summed */
    int64_t sampled_wall;  /* shared: the caller's chunks on sampled loops, wall time */
    int64_t sampled_cpu;   /* and processor time */
    int64_t shared_window; /* the wall time of the last window shared out */
    int alone_left;        /* windows still to run alone */
    int stretch;           /* windows alone after the next one that wins */
} pool_tuning;

struct pdi_pool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_uint_fast64_t claim;
    atomic_int finished;     /* chunks of the current loop done */
    atomic_int sleepers;     /* workers asleep on wake: the caller broadcasts only then */
    atomic_int caller_asleep;
    atomic_int stopping;
    uint32_t generation; /* the caller's count of loops (only the caller writes it) */
    pool_tuning tuning;
    /* the current loop: written before claim is published, read after a chunk of it is claimed */
    pdi_range_fn fn;
    void *arg;
    int64_t n, grain;
};

typedef struct {
    pdi_pool *pool;
    int index;
} worker_arg;

static uint32_t claim_generation(uint64_t w) { return (uint32_t)(w >> 32); }

static void spin_pause(int round)
{
    if (round % YIELD_EVERY == YIELD_EVERY - 1) sched_yield();
    else cpu_relax();
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Take chunks of loop `generation` until none is left (or a newer loop
 * began); returns the items done. */
static int64_t run_chunks(pdi_pool *pool, uint32_t generation, int thread)
{
    int64_t items = 0;
    for (;;) {
        uint64_t w = atomic_load_explicit(&pool->claim, memory_order_acquire);
        int c, chunks;
        do {
            c = (int)(w >> 16 & MAX_CHUNKS);
            chunks = (int)(w & MAX_CHUNKS);
            if (claim_generation(w) != generation || c >= chunks) return items;
        } while (!atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + (1u << 16), memory_order_acq_rel,
                                                        memory_order_acquire));
        /* whole grains: a kernel may need its rows in groups (interleaved weights) */
        int64_t units = (pool->n + pool->grain - 1) / pool->grain;
        int64_t begin = units * c / chunks * pool->grain, end = units * (c + 1) / chunks * pool->grain;
        if (end > pool->n) end = pool->n;
        if (begin < end) {
            pool->fn(pool->arg, begin, end, thread);
            items += end - begin;
        }
        if (atomic_fetch_add(&pool->finished, 1) + 1 == chunks && atomic_load(&pool->caller_asleep)) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

/* The generation after `seen` (or anything when stopping); spins, then sleeps. */
static uint32_t wait_for_work(pdi_pool *pool, uint32_t seen)
{
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        uint32_t g = claim_generation(atomic_load_explicit(&pool->claim, memory_order_acquire));
        if (g != seen || atomic_load_explicit(&pool->stopping, memory_order_acquire)) return g;
        spin_pause(i);
    }
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->sleepers, 1);
    uint32_t g;
    while ((g = claim_generation(atomic_load(&pool->claim))) == seen && !atomic_load(&pool->stopping))
        pthread_cond_wait(&pool->wake, &pool->lock);
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->lock);
    return g;
}

static void *worker_main(void *p)
{
    worker_arg *wa = p;
    pdi_pool *pool = wa->pool;
    int index = wa->index;
    free(wa);
    uint32_t seen = 0;
    for (;;) {
        seen = wait_for_work(pool, seen);
        if (atomic_load_explicit(&pool->stopping, memory_order_acquire)) break;
        run_chunks(pool, seen, index);
    }
    return NULL;
}

int32_t pd_cpu_count(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

pdi_pool *pdi_pool_for_weights(void)
{
    int cores = pd_cpu_count();
    return cores > 1 ? pdi_pool_new(cores < 8 ? cores : 8) : NULL;
}

pdi_pool *pdi_pool_new(int n_threads)
{
    int cores = pd_cpu_count();
    if (n_threads > cores) n_threads = cores; /* more would wait on each other's time slices */
    if (n_threads < 1) n_threads = 1;
    pdi_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->n_threads = 1;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->tuning.stretch = 1;
    if (n_threads > 1 && !(pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers))) goto fail;
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) goto fail;
        wa->pool = pool;
        wa->index = i;
        if (pthread_create(&pool->workers[i - 1], NULL, worker_main, wa) != 0) {
            free(wa);
            goto fail;
        }
        pool->n_threads = i + 1; /* threads actually started, for pdi_pool_free */
    }
    return pool;
fail:
    pdi_pool_free(pool);
    return NULL;
}

void pdi_pool_free(pdi_pool *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stopping, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->n_threads && pool->workers; i++) pthread_join(pool->workers[i - 1], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->workers);
    free(pool);
}

int pdi_pool_size(const pdi_pool *pool) { return pool->n_threads; }

void pdi_pool_for(pdi_pool *pool, int64_t n, int64_t grain, pdi_range_fn fn, void *arg)
{
    pdi_pool_for_chunks(pool, n, grain, CHUNKS_PER_THREAD, fn, arg);
}

/* Returns when all `chunks` of the current loop are done: only chunks that a
 * running thread claimed are left. */
static void wait_for_chunks(pdi_pool *pool, int64_t chunks)
{
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&pool->finished, memory_order_acquire) == chunks) return;
        spin_pause(i);
    }
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->caller_asleep, 1);
    while (atomic_load(&pool->finished) < chunks) pthread_cond_wait(&pool->done, &pool->lock);
    atomic_store(&pool->caller_asleep, 0);
    pthread_mutex_unlock(&pool->lock);
}

/* Counts a loop just timed; at the end of a window, sets the mode of the next one. */
static void weigh_window(pool_tuning *t)
{
    if (++t->loops < TUNE_WINDOW) return;
    switch (t->mode) {
    case TUNE_SHARED: {
        double running = t->sampled_cpu > 0 && t->sampled_wall > t->sampled_cpu
                             ? (double)t->sampled_cpu / (double)t->sampled_wall : 1.0;
        t->shared_window = t->wall_ns;
        if ((double)t->wall_ns > GATE * t->own_pace_ns * running) t->mode = TUNE_TRY_ALONE;
        break;
    }
    case TUNE_TRY_ALONE:
        if (t->wall_ns < t->shared_window) {
            t->mode = TUNE_ALONE;
            t->alone_left = t->stretch;
            t->stretch = t->stretch * 2 > SOLO_MAX_WINDOWS ? SOLO_MAX_WINDOWS : t->stretch * 2;
        } else {
            t->mode = TUNE_SHARED;
            t->stretch = 1;
        }
        break;
    case TUNE_ALONE:
        if (--t->alone_left == 0) t->mode = TUNE_SHARED;
        break;
    }
    t->loops = 0;
    t->wall_ns = t->sampled_wall = t->sampled_cpu = 0;
    t->own_pace_ns = 0.0;
}

void pdi_pool_for_chunks(pdi_pool *pool, int64_t n, int64_t grain, int chunks_per_thread, pdi_range_fn fn, void *arg)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (chunks_per_thread < 1) chunks_per_thread = 1;
    int64_t max_chunks = (n + grain - 1) / grain, want = (int64_t)pool->n_threads * chunks_per_thread;
    if (pool->n_threads == 1 || max_chunks <= 1) {
        fn(arg, 0, n, 0);
        return;
    }
    pool_tuning *tune = &pool->tuning;
    if (tune->mode != TUNE_SHARED) {
        int64_t start = clock_ns(CLOCK_MONOTONIC);
        fn(arg, 0, n, 0);
        tune->wall_ns += clock_ns(CLOCK_MONOTONIC) - start;
        weigh_window(tune);
        return;
    }
    bool sampled = tune->loops % SAMPLE_EVERY == 0;
    /* the processor clock around the wall clock: its own cost never counts as time not running */
    int64_t cpu = sampled ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0, start = clock_ns(CLOCK_MONOTONIC);
    int64_t chunks = want < max_chunks ? want : max_chunks;
    if (chunks > MAX_CHUNKS) chunks = MAX_CHUNKS;
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->grain = grain;
    atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
    uint32_t generation = ++pool->generation;
    /* seq_cst with the sleepers count: a worker going to sleep either sees
     * this loop or is counted, and then the broadcast under the lock wakes it */
    atomic_store(&pool->claim, (uint64_t)generation << 32 | (uint64_t)chunks);
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }

    int64_t own = run_chunks(pool, generation, 0), own_end = clock_ns(CLOCK_MONOTONIC);
    if (sampled) {
        tune->sampled_cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
        tune->sampled_wall += own_end - start;
    }
    wait_for_chunks(pool, chunks);
    int64_t shared_ns = clock_ns(CLOCK_MONOTONIC) - start;
    tune->wall_ns += shared_ns;
    /* a loop the caller had no part in counts as a tie */
    tune->own_pace_ns += own > 0 ? (double)(own_end - start) * (double)n / (double)own : (double)shared_ns;
    weigh_window(tune);
}
