/* threadpool.c - persistent workers woken per parallel loop.
 *
 * Work is split into a few contiguous chunks per thread, taken in order from
 * an atomic counter by whichever thread is free (the caller too): each chunk
 * streams its own rows of a weight matrix, and a thread that falls behind (a
 * late wake-up, a busy core, slower memory) takes fewer chunks instead of
 * making the others wait at the end of every loop.
 *
 * A forward pass runs hundreds of loops a token, microseconds apart, so the
 * workers and the caller first spin on atomic counters (the generation of the
 * current loop, the workers still busy) and only then sleep on the condition
 * variables: waking a sleeping thread costs tens of microseconds. */
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* Spins before sleeping: a few tens of microseconds, longer than the gap
 * between two loops of a forward pass, short enough not to steal a busy
 * machine's cores for long. */
#define SPIN_ROUNDS 20000

struct pd_pool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_uint_fast64_t generation; /* bumped for every loop, so workers know there is new work */
    atomic_int pending;              /* workers still busy with the current loop */
    atomic_int stopping;
    atomic_int next_chunk; /* the next chunk of the current loop to take */
    /* the current loop: written before generation is bumped, read after it is seen */
    pd_range_fn fn;
    void *arg;
    int64_t n, grain;
    int chunks;
};

/* Chunks per thread: enough to even out a slow thread, few enough that each
 * chunk is a long contiguous run. */
#define CHUNKS_PER_THREAD 4

typedef struct {
    pd_pool *pool;
    int index;
} worker_arg;

/* Take chunks of the current loop until none is left. */
static void run_chunks(pd_pool *pool, int thread)
{
    for (;;) {
        int c = atomic_fetch_add_explicit(&pool->next_chunk, 1, memory_order_relaxed);
        if (c >= pool->chunks) return;
        /* whole grains: a kernel may need its rows in groups (interleaved weights) */
        int64_t units = (pool->n + pool->grain - 1) / pool->grain;
        int64_t begin = units * c / pool->chunks * pool->grain, end = units * (c + 1) / pool->chunks * pool->grain;
        if (end > pool->n) end = pool->n;
        if (begin < end) pool->fn(pool->arg, begin, end, thread);
    }
}

/* The generation after `seen`, or seen when stopping; spins, then sleeps. */
static uint64_t wait_for_work(pd_pool *pool, uint64_t seen)
{
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&pool->stopping, memory_order_acquire)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    uint64_t g;
    while ((g = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&pool->stopping, memory_order_acquire))
        pthread_cond_wait(&pool->wake, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    return g;
}

static void *worker_main(void *p)
{
    worker_arg *wa = p;
    pd_pool *pool = wa->pool;
    int index = wa->index;
    free(wa);
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_work(pool, seen);
        if (atomic_load_explicit(&pool->stopping, memory_order_acquire)) break;
        run_chunks(pool, index);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            /* the last one out wakes the caller if it went to sleep */
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
    return NULL;
}

pd_pool *pd_pool_new(int n_threads)
{
    if (n_threads < 1) n_threads = 1;
    pd_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (n_threads > 1) {
        pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            pd_pool_free(pool);
            return NULL;
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) goto fail;
        wa->pool = pool;
        wa->index = i;
        if (pthread_create(&pool->workers[i - 1], NULL, worker_main, wa) != 0) {
            free(wa);
            goto fail;
        }
        pool->n_threads = i + 1; /* threads actually started, for pd_pool_free */
    }
    pool->n_threads = n_threads;
    return pool;
fail:
    pd_pool_free(pool);
    return NULL;
}

void pd_pool_free(pd_pool *pool)
{
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->stopping, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->n_threads && pool->workers; i++) pthread_join(pool->workers[i - 1], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->workers);
    free(pool);
}

int pd_pool_size(const pd_pool *pool) { return pool->n_threads; }

void pd_pool_for(pd_pool *pool, int64_t n, int64_t grain, pd_range_fn fn, void *arg)
{
    pd_pool_for_chunks(pool, n, grain, CHUNKS_PER_THREAD, fn, arg);
}

void pd_pool_for_chunks(pd_pool *pool, int64_t n, int64_t grain, int chunks_per_thread, pd_range_fn fn, void *arg)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (chunks_per_thread < 1) chunks_per_thread = 1;
    int64_t max_chunks = (n + grain - 1) / grain, want = (int64_t)pool->n_threads * chunks_per_thread;
    if (pool->n_threads == 1 || max_chunks <= 1) {
        fn(arg, 0, n, 0);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->grain = grain;
    pool->chunks = (int)(want < max_chunks ? want : max_chunks);
    atomic_store_explicit(&pool->next_chunk, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->pending, pool->n_threads - 1, memory_order_relaxed);
    /* under the lock, so a worker between its last check and its wait cannot miss it */
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_chunks(pool, 0);

    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
