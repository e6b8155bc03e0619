/* threadpool.c - persistent workers woken per parallel loop.
 *
 * Work is split into one contiguous slice per thread (the caller takes slice
 * 0), which keeps each thread on its own rows of a weight matrix: decode is
 * bound by memory bandwidth, and contiguous slices stream best. */
#include "threadpool.h"

#include <pthread.h>
#include <stdlib.h>

struct pd_pool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    uint64_t generation; /* bumped for every loop, so workers know there is new work */
    int pending;         /* workers still busy with the current loop */
    int stopping;
    /* the current loop */
    pd_range_fn fn;
    void *arg;
    int64_t n;
    int slices;
};

typedef struct {
    pd_pool *pool;
    int index;
} worker_arg;

static void slice_bounds(int64_t n, int slices, int s, int64_t *begin, int64_t *end)
{
    *begin = n * s / slices;
    *end = n * (s + 1) / slices;
}

static void *worker_main(void *p)
{
    worker_arg *wa = p;
    pd_pool *pool = wa->pool;
    int index = wa->index;
    free(wa);
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stopping) break;
        seen = pool->generation;
        pd_range_fn fn = pool->fn;
        void *arg = pool->arg;
        int64_t n = pool->n;
        int slices = pool->slices;
        pthread_mutex_unlock(&pool->lock);
        if (index < slices) {
            int64_t b, e;
            slice_bounds(n, slices, index, &b, &e);
            if (b < e) fn(arg, b, e, index);
        }
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0) pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
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
    pool->stopping = 1;
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
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t max_slices = (n + grain - 1) / grain;
    int slices = pool->n_threads < max_slices ? pool->n_threads : (int)max_slices;
    if (slices <= 1) {
        fn(arg, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->slices = slices;
    pool->pending = pool->n_threads - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    int64_t b, e;
    slice_bounds(n, slices, 0, &b, &e);
    fn(arg, b, e, 0);

    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
