/* matmul.c - the forward pass's matrix products: a weight matrix (float or
 * block-quantized, with a runtime adapter's low-rank deltas) times a pass's
 * rows, across the context's pool; chosen rows only (a sparse LM head); two
 * or three products over the same input fused (q/k/v, gate/up). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const pdi_kernels *kern;
    const pdi_matrix *w;
    const float *x;  /* [n_tok][x_stride] */
    const pdi_qact *qx; /* x quantized, for block-quantized weights; else NULL */
    float *y;        /* [n_tok][y_stride] */
    int64_t n_tok, x_stride, y_stride;
    const int32_t *rows; /* NULL: rows 0..n-1 of w; else the chosen rows (sparse head) */
} matmul_job;

/* Tokens per tile of float weights: the tile's inputs stay in cache while
 * each panel of rows (widened once per tile) is dotted with them. Decode
 * (one token) runs tiles too: several rows at once keep the FMA units busy
 * where a dot per row waits on its one accumulator (bench_kernels, BF16
 * 704 x 256 in cache: 30-40 multiply-adds a ns against 14). */
#define TOKEN_TILE 64

/* Chunks per thread of a matrix product over a pass of fewer than
 * FEW_TOKENS rows (decode, several sequences decoding together,
 * speculation's drafts): fewer, longer runs than the pool's default. Each
 * chunk starts a new stream of weight rows whose first tile the prefetch has
 * not reached, and such passes read their weights from memory: with 8
 * reviews in flight (passes of 8-16 rows) 2 chunks a thread measured 6-8%
 * faster than 8 (alternating, AVX-512 and AVX2 tables; pure passes of 8 rows
 * 8-15%), decode about 4% faster than 4, and 1 about 3-4% faster than 2
 * (AVX-512 table). A thread that falls behind still loses its chunk to one
 * that has none left only if it has not claimed it yet; a busy machine is the
 * pool's to weigh (running alone). Prefill keeps the pool's 4. */
#define FEW_CHUNKS 1
#define FEW_TOKENS 64

/* A matrix product's rows across the pool, in chunks of whole grains (16s,
 * the interleaved groups, or 32s where a chunk quantizes its columns). */
static void pool_rows(pd_context *ctx, int64_t n_tok, int64_t rows, int64_t grain, pdi_range_fn fn, void *arg)
{
    if (n_tok < FEW_TOKENS) pdi_pool_for_chunks(ctx->pool, rows, grain, FEW_CHUNKS, fn, arg);
    else pdi_pool_for(ctx->pool, rows, grain, fn, arg);
}

/* Quantized activations per token tile: the tile's blocks stay in L2 while
 * each panel of weight rows streams past them. */
#define QACT_TILE_BYTES (192 * 1024)

/* Block-quantized weights: integer dots on the quantized activations. */
static void qmatmul_range(const matmul_job *j, int64_t begin, int64_t end)
{
    const pdi_matrix *w = j->w;
    if (j->rows && w->interleave) {
        /* a chosen row: its group, one token at a time, into as many floats */
        const int n = w->interleave;
        for (int64_t i = begin; i < end; i++) {
            int64_t r = j->rows[i];
            float group[16];
            for (int64_t t = 0; t < j->n_tok; t++) {
                j->kern->qmatmul_x(w->dtype, w->data + (size_t)(r - r % n) * w->row_bytes, w->row_bytes, n, j->qx, t,
                                   t + 1, group, 0);
                j->y[t * j->y_stride + i] = group[r % n];
            }
        }
        return;
    }
    if (j->rows) {
        for (int64_t i = begin; i < end; i++)
            j->kern->qmatmul(w->dtype, w->data + (size_t)j->rows[i] * w->row_bytes, w->row_bytes, 1, j->qx, 0,
                             j->n_tok, j->y + i, j->y_stride);
        return;
    }
    int64_t tile = QACT_TILE_BYTES / w->cols < 8 ? 8 : QACT_TILE_BYTES / w->cols;
    const uint8_t *rows = w->data + (size_t)begin * w->row_bytes; /* begin: a multiple of 16, so of the interleave */
    for (int64_t t0 = 0; t0 < j->n_tok; t0 += tile) {
        int64_t t1 = t0 + tile < j->n_tok ? t0 + tile : j->n_tok;
        if (w->interleave)
            j->kern->qmatmul_x(w->dtype, rows, w->row_bytes, end - begin, j->qx, t0, t1, j->y + begin, j->y_stride);
        else
            j->kern->qmatmul(w->dtype, rows, w->row_bytes, end - begin, j->qx, t0, t1, j->y + begin, j->y_stride);
    }
}

static void matmul_part(const matmul_job *j, int64_t begin, int64_t end)
{
    const pdi_matrix *w = j->w;
    if (j->qx) {
        qmatmul_range(j, begin, end);
        return;
    }
    if (j->rows) {
        /* chosen rows (a sparse head): each row dotted straight from its stored
         * form, with the bits of the tiles (every table's fmatmul has dot_row's) */
        for (int64_t i = begin; i < end; i++) {
            int64_t r = j->rows ? j->rows[i] : i;
            const uint8_t *wr = w->data + (size_t)r * w->row_bytes;
            for (int64_t t = 0; t < j->n_tok; t++)
                j->y[t * j->y_stride + i] = j->kern->dot_row(w->dtype, wr, j->x + t * j->x_stride, w->cols);
        }
        return;
    }
    for (int64_t t0 = 0; t0 < j->n_tok; t0 += TOKEN_TILE) {
        int64_t t1 = t0 + TOKEN_TILE < j->n_tok ? t0 + TOKEN_TILE : j->n_tok;
        j->kern->fmatmul(w->dtype, w->data + (size_t)begin * w->row_bytes, w->row_bytes, end - begin, w->cols, j->x,
                         j->x_stride, t0, t1, j->y + begin, j->y_stride);
    }
}

static void matmul_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    matmul_part(arg, begin, end);
}

typedef struct {
    const pdi_kernels *kern;
    pdi_qact *a;
    const float *x;
    int64_t x_stride;
} quantize_job;

static void quantize_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const quantize_job *q = arg;
    q->kern->quantize_act(q->a, q->x, q->x_stride, begin, end, 0, q->a->cols / PD_QBLOCK);
}

/* x quantized into the context's activation buffer when w is block-quantized
 * (NULL otherwise): done once for all the matrices that read the same x. */
static const pdi_qact *quantize_for(pd_context *ctx, const pdi_matrix *w, const float *x, int64_t x_stride,
                                   int64_t n_tok)
{
    if (!pdi_dtype_is_block(w->dtype)) return NULL;
    pdi_qact *a = &ctx->qact;
    a->n_tok = n_tok;
    a->cols = w->cols;
    quantize_job q = {ctx->model->kern, a, x, x_stride};
    /* Chunks of 16 tokens: d, s and block_bias are [block][token], so threads
     * quantizing neighbouring tokens would write the same cache lines for
     * every block (with chunks of 4, a tenth of a pass of 8-12 rows went to
     * that); a pass of up to 16 rows is quantized by one thread. */
    pdi_pool_for(ctx->pool, n_tok, 16, quantize_range, &q);
    return a;
}

/* y[t][i] = W[rows[i]] . x[t] for n_out rows (all rows of W when rows is NULL);
 * qx is x quantized (quantize_for), or NULL to quantize here if w needs it. */
void pdi_matmul_rows(pd_context *ctx, const pdi_matrix *w, const int32_t *rows, int64_t n_out, const float *x,
                     const pdi_qact *qx, int64_t x_stride, float *y, int64_t y_stride, int64_t n_tok)
{
    if (pdi_dtype_is_block(w->dtype) && !qx && n_tok > ctx->qact.n_cap) {
        /* more rows than a chunk (kept outputs): quantize and multiply a chunk at a time */
        for (int64_t t0 = 0; t0 < n_tok; t0 += ctx->qact.n_cap) {
            int64_t nt = n_tok - t0 < ctx->qact.n_cap ? n_tok - t0 : ctx->qact.n_cap;
            pdi_matmul_rows(ctx, w, rows, n_out, x + t0 * x_stride, NULL, x_stride, y + t0 * y_stride, y_stride, nt);
        }
        return;
    }
    if (pdi_dtype_is_block(w->dtype) && !qx) qx = quantize_for(ctx, w, x, x_stride, n_tok);
    if (!pdi_dtype_is_block(w->dtype)) qx = NULL;
    matmul_job j = {ctx->model->kern, w, x, qx, y, n_tok, x_stride, y_stride, rows};
    pool_rows(ctx, n_tok, n_out, 16, matmul_range, &j);
}

typedef struct {
    const pdi_kernels *kern;
    const pdi_matrix *w;
    const float *x;
    float *y;
    int64_t x_stride, y_stride;
} delta_job;

/* y[t] += scale * B (A x[t]) for every low-rank term of w, token by token
 * (the rank is small: A x[t] fits on the stack). */
static void delta_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const delta_job *j = arg;
    float u[PD_LOWRANK_MAX_RANK];
    for (int64_t t = begin; t < end; t++) {
        const float *x = j->x + t * j->x_stride;
        float *y = j->y + t * j->y_stride;
        for (const pdi_delta *d = j->w->delta; d; d = d->next) {
            for (int64_t k = 0; k < d->rank; k++) u[k] = d->scale * j->kern->dot(d->A + k * j->w->cols, x, j->w->cols);
            for (int64_t k = 0; k < d->rank; k++) j->kern->axpy(y, u[k], d->Bt + k * j->w->rows, j->w->rows);
        }
    }
}

static void add_deltas(pd_context *ctx, const pdi_matrix *w, const float *x, int64_t x_stride, float *y,
                       int64_t y_stride, int64_t n_tok)
{
    if (w->delta) {
        delta_job j = {ctx->model->kern, w, x, y, x_stride, y_stride};
        pdi_pool_for(ctx->pool, n_tok, 1, delta_range, &j);
    }
}

/* y = w x (and its adapters' deltas); qx: x already quantized, or NULL. */
void pdi_matmul(pd_context *ctx, const pdi_matrix *w, const float *x, const pdi_qact *qx, int64_t x_stride, float *y,
                int64_t y_stride, int64_t n_tok)
{
    pdi_matmul_rows(ctx, w, NULL, w->rows, x, qx, x_stride, y, y_stride, n_tok);
    add_deltas(ctx, w, x, x_stride, y, y_stride, n_tok);
}

/* Several matrices on one input in one parallel loop: one wait instead of one
 * a matrix. Stacked, each matrix's rows follow the last one's (q, k, v);
 * paired, the matrices have the same rows and a thread takes the same rows of
 * each, so SwiGLU's silu(gate) * up is formed where gate and up are made. */
#define FUSED_MAX 3
typedef struct {
    matmul_job part[FUSED_MAX];
    int n_parts;
    bool paired, swiglu;
    pdi_qact *qout; /* with swiglu: where each chunk quantizes the columns it made */
} fused_job;

static void fused_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const fused_job *f = arg;
    int64_t first = 0;
    for (int p = 0; p < f->n_parts; p++) {
        const matmul_job *j = &f->part[p];
        int64_t b = f->paired ? begin : begin - first, e = f->paired ? end : end - first;
        b = b < 0 ? 0 : b;
        e = e > j->w->rows ? j->w->rows : e;
        if (b < e) matmul_part(j, b, e);
        first += j->w->rows;
    }
    if (f->swiglu) {
        const matmul_job *g = &f->part[0], *u = &f->part[1];
        for (int64_t t = 0; t < g->n_tok; t++) {
            float *gy = g->y + t * g->y_stride;
            const float *uy = u->y + t * u->y_stride;
            g->kern->silu_mul(gy + begin, uy + begin, end - begin);
        }
        /* its blocks of every row, while they are in this core's cache (begin
         * and end are whole blocks: the loop's grain) */
        if (f->qout)
            g->kern->quantize_act(f->qout, g->y, g->y_stride, 0, g->n_tok, begin / PD_QBLOCK, end / PD_QBLOCK);
    }
}

/* y[p] = w[p] x for n matrices with x's columns (x quantized once for all the
 * block-quantized ones), then their adapters' deltas. With swiglu (paired gate
 * and up), y[0] becomes silu(gate) * up; given qout, it is also quantized
 * there by the threads that made it, and qout is returned (NULL when it was
 * not: adapters' deltas come after the loop). */
const pdi_qact *pdi_matmul_fused(pd_context *ctx, int n, const pdi_matrix *const *w, float *const *y,
                                 const int64_t *y_stride, const float *x, int64_t x_stride, int64_t n_tok, bool paired,
                                 bool swiglu, pdi_qact *qout)
{
    const pdi_qact *qx = NULL;
    for (int p = 0; p < n && !qx; p++) qx = quantize_for(ctx, w[p], x, x_stride, n_tok);
    bool deltas = false;
    fused_job f = {.n_parts = n, .paired = paired};
    int64_t rows = 0;
    for (int p = 0; p < n; p++) {
        f.part[p] = (matmul_job){ctx->model->kern, w[p], x, pdi_dtype_is_block(w[p]->dtype) ? qx : NULL, y[p],
                                 n_tok, x_stride, y_stride[p], NULL};
        rows = paired ? w[p]->rows : rows + w[p]->rows;
        deltas = deltas || w[p]->delta;
    }
    f.swiglu = swiglu && !deltas; /* deltas come first: then SwiGLU after them */
    if (f.swiglu && qout && w[0]->rows % PD_QBLOCK == 0 && n_tok <= qout->n_cap) {
        f.qout = qout;
        qout->n_tok = n_tok;
        qout->cols = w[0]->rows;
    }
    pool_rows(ctx, n_tok, rows, f.qout ? PD_QBLOCK : 16, fused_range, &f);
    for (int p = 0; p < n; p++) add_deltas(ctx, w[p], x, x_stride, y[p], y_stride[p], n_tok);
    if (swiglu && deltas)
        for (int64_t t = 0; t < n_tok; t++)
            ctx->model->kern->silu_mul(y[0] + t * y_stride[0], y[1] + t * y_stride[1], w[0]->rows);
    return f.qout;
}
