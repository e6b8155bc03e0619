/* threadpool.h - a fixed set of worker threads that run one parallel loop at a time. */
#ifndef PD_THREADPOOL_H
#define PD_THREADPOOL_H

#include <stdint.h>

typedef struct pdi_pool pdi_pool;

/* The body of a parallel loop: handles items [begin, end) on worker `thread`
 * (0 <= thread < n_threads, so per-thread scratch can be indexed by it). */
typedef void (*pdi_range_fn)(void *arg, int64_t begin, int64_t end, int thread);

/* n_threads counts the calling thread: 1 starts no worker. More than
 * pd_cpu_count() (pocketdec_runtime.h) starts that many (pdi_pool_size says how many). NULL on
 * failure. */
pdi_pool *pdi_pool_new(int n_threads);
void pdi_pool_free(pdi_pool *pool);
int pdi_pool_size(const pdi_pool *pool);
/* A pool of this machine's cores (up to 8) for a pass over the weights at
 * load or derive (repacking, quantizing, interleaving); NULL with one core,
 * and the pass then runs on the calling thread. */
pdi_pool *pdi_pool_for_weights(void);

/* Split [0, n) into contiguous chunks of whole `grain`s (a few per thread;
 * every chunk starts at a multiple of grain, the last ends at n) and run fn on
 * them across the pool, each chunk on whichever thread takes it first;
 * returns when all are done. fn may be called several times per thread, with
 * any chunks. While sharing out has been losing to the caller alone (other
 * processes hold the workers' cores; threadpool.c), fn is called once, with
 * [0, n) on thread 0. */
void pdi_pool_for(pdi_pool *pool, int64_t n, int64_t grain, pdi_range_fn fn, void *arg);
/* pdi_pool_for with about chunks_per_thread chunks a thread (pdi_pool_for: 4). */
void pdi_pool_for_chunks(pdi_pool *pool, int64_t n, int64_t grain, int chunks_per_thread, pdi_range_fn fn, void *arg);

#endif
