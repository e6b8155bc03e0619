/* forward.c - the Qwen3 forward pass (HF semantics), one chunk of tokens at a time.
 *
 * For each layer: RMSNorm, q/k/v projections, per-head q/k RMSNorm, RoPE
 * (rotate-half), K/V appended to the cache, grouped-query attention under the
 * batch's visibility, output projection into the residual stream; RMSNorm,
 * SwiGLU MLP into the residual stream. Then the final norm for the rows the
 * caller keeps, and the LM head for those rows. */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ matmul */

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
static void matmul_rows(pd_context *ctx, const pdi_matrix *w, const int32_t *rows, int64_t n_out, const float *x,
                        const pdi_qact *qx, int64_t x_stride, float *y, int64_t y_stride, int64_t n_tok)
{
    if (pdi_dtype_is_block(w->dtype) && !qx && n_tok > ctx->qact.n_cap) {
        /* more rows than a chunk (kept outputs): quantize and multiply a chunk at a time */
        for (int64_t t0 = 0; t0 < n_tok; t0 += ctx->qact.n_cap) {
            int64_t nt = n_tok - t0 < ctx->qact.n_cap ? n_tok - t0 : ctx->qact.n_cap;
            matmul_rows(ctx, w, rows, n_out, x + t0 * x_stride, NULL, x_stride, y + t0 * y_stride, y_stride, nt);
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
static void matmul(pd_context *ctx, const pdi_matrix *w, const float *x, const pdi_qact *qx, int64_t x_stride, float *y,
                   int64_t y_stride, int64_t n_tok)
{
    matmul_rows(ctx, w, NULL, w->rows, x, qx, x_stride, y, y_stride, n_tok);
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
static const pdi_qact *matmul_fused(pd_context *ctx, int n, const pdi_matrix *const *w, float *const *y, const int64_t *y_stride,
                         const float *x, int64_t x_stride, int64_t n_tok, bool paired, bool swiglu, pdi_qact *qout)
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

/* ------------------------------------------------------------------- RoPE */

static void rope_tables(pd_context *ctx, int32_t n_tok)
{
    const pd_config *c = &ctx->model->cfg;
    int half = c->head_dim / 2;
    for (int32_t i = 0; i < n_tok; i++) {
        for (int k = 0; k < half; k++) {
            double inv_freq = pow((double)c->rope_theta, -2.0 * k / (double)c->head_dim);
            double angle = (double)ctx->chunk_pos[i] * inv_freq;
            ctx->rope_cos[(size_t)i * half + k] = (float)cos(angle);
            ctx->rope_sin[(size_t)i * half + k] = (float)sin(angle);
        }
    }
}

/* Per-head RMSNorm then rotate-half RoPE, in place, on n_heads vectors of a token. */
static void norm_rope(float *v, int n_heads, int hd, const float *norm_w, float eps, const float *cosv,
                      const float *sinv)
{
    int half = hd / 2;
    for (int h = 0; h < n_heads; h++) {
        float *x = v + (size_t)h * hd;
        pdi_rmsnorm(x, x, norm_w, hd, eps);
        for (int k = 0; k < half; k++) {
            float x1 = x[k], x2 = x[k + half];
            x[k] = x1 * cosv[k] - x2 * sinv[k];
            x[k + half] = x2 * cosv[k] + x1 * sinv[k];
        }
    }
}

/* -------------------------------------------------------------- one chunk */

/* n floats into the cache at element `at` (F16 when kv_f16), every
 * `step` elements: a row is 1 apart, a blocked key's elements PD_KEY_BLOCK. */
static void store_cached(const pd_context *ctx, void *cache, size_t at, size_t step, const float *x, int64_t n)
{
    if (step == 1 && !ctx->kv_f16) memcpy((float *)cache + at, x, (size_t)n * sizeof(float));
    else if (step == 1) ctx->model->kern->narrow(x, (uint16_t *)cache + at, n);
    else if (!ctx->kv_f16)
        for (int64_t e = 0; e < n; e++) ((float *)cache)[at + (size_t)e * step] = x[e];
    else
        for (int64_t e0 = 0; e0 < n; e0 += 64) { /* narrowed a piece at a time, then spread */
            uint16_t h[64];
            int64_t len = n - e0 < 64 ? n - e0 : 64;
            ctx->model->kern->narrow(x + e0, h, len);
            for (int64_t e = 0; e < len; e++) ((uint16_t *)cache)[at + (size_t)(e0 + e) * step] = h[e];
        }
}

/* Per-token work between the matrix products, run across the pool: the
 * residual sum and RMSNorm, or the q/k norms, RoPE and the cache write. */
typedef struct {
    pd_context *ctx;
    const float *norm;         /* residual_range: the norm's weights */
    int layer;                 /* rope_store_range: the layer, */
    const pdi_seq_part *parts;  /* the pass's parts (whose caches the rows go to) */
    bool trim;                 /* and whether attention runs for the kept rows only */
} token_job;

/* x += delta (when add), then xn = RMSNorm(x) for tokens [begin, end). */
static void residual_range(const token_job *j, bool add, int64_t begin, int64_t end)
{
    pd_context *ctx = j->ctx;
    const pd_config *c = &ctx->model->cfg;
    int64_t H = c->hidden;
    for (int64_t t = begin; t < end; t++) {
        float *x = ctx->x + t * H;
        if (add)
            for (int64_t i = 0; i < H; i++) x[i] += ctx->delta[t * H + i];
        pdi_rmsnorm(ctx->xn + t * H, x, j->norm, H, c->rms_eps);
    }
}

static void norm_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    residual_range(arg, false, begin, end);
}

static void add_norm_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    residual_range(arg, true, begin, end);
}

/* Row t's heads [g0, g1) normed, rotated and cached (model.h). */
void pdi_rope_store(pd_context *ctx, int layer, const pdi_seq_part *p, int64_t t, int g0, int g1)
{
    const pd_config *c = &ctx->model->cfg;
    const pdi_layer *L = &ctx->model->layers[layer];
    int64_t hd = c->head_dim, group = c->n_heads / c->n_kv_heads, KV = (int64_t)c->n_kv_heads * hd;
    const float *cs = ctx->rope_cos + (size_t)t * (hd / 2), *sn = ctx->rope_sin + (size_t)t * (hd / 2);
    float *q = ctx->q + t * c->n_heads * hd + g0 * group * hd, *k = ctx->k + t * KV + g0 * hd;
    norm_rope(q, (int)((g1 - g0) * group), (int)hd, L->q_norm, c->rms_eps, cs, sn);
    norm_rope(k, g1 - g0, (int)hd, L->k_norm, c->rms_eps, cs, sn);
    pd_context *seq = p->seq;
    size_t pos = (size_t)p->batch_kv0 + (size_t)p->chunk_start + (size_t)(t - p->row0);
    int64_t n = (g1 - g0) * hd;
    store_cached(seq, seq->k_cache, pdi_key_at(seq, KV, layer, (int64_t)pos, g0 * hd), seq->k_blocked ? PD_KEY_BLOCK : 1,
                 k, n);
    store_cached(seq, seq->v_cache, pdi_value_at(seq, KV, layer, (int64_t)pos, g0 * hd), 1, ctx->v + t * KV + g0 * hd, n);
}

/* Every KV head of the rows whose part attention does not do them (pdi_rope_in_attention). */
static void rope_store_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const token_job *j = arg;
    const pdi_seq_part *p = j->parts;
    for (int64_t t = begin; t < end; t++) {
        while (t >= p->row0 + p->n_tok) p++; /* the part that holds row t */
        if (!pdi_rope_in_attention(p, j->ctx->n_batch, j->trim))
            pdi_rope_store(j->ctx, j->layer, p, t, 0, j->ctx->model->cfg.n_kv_heads);
    }
}

/* Rows k of ctx->att and ctx->x become rows rows[k] (ascending, so each
 * moves down or stays). */
static void gather_rows(pd_context *ctx, const int32_t *rows, int32_t n_rows)
{
    const pd_config *c = &ctx->model->cfg;
    size_t Q = (size_t)c->n_heads * (size_t)c->head_dim, H = (size_t)c->hidden;
    for (int32_t k = 0; k < n_rows; k++)
        if (rows[k] != k) {
            memcpy(ctx->att + (size_t)k * Q, ctx->att + (size_t)rows[k] * Q, Q * sizeof(float));
            memcpy(ctx->x + (size_t)k * H, ctx->x + (size_t)rows[k] * H, H * sizeof(float));
        }
}

/* One layer on the pass's n_tok rows; ctx->xn holds RMSNorm(x) with the
 * layer's attention norm on entry, and the next layer's (or nothing, after
 * the last) on return. With trim (the last layer: the n_keep rows ctx->keep
 * lists, ascending), every row's keys and values go to its cache, but only
 * the kept rows go on through attention and the MLP, into rows 0..n_keep-1
 * of x: no other row's output is read, and each row's sums are those it has
 * in the whole pass. */
static void layer_forward(pd_context *ctx, int l, const pdi_seq_part *parts, int32_t n_parts, int32_t n_tok, bool trim,
                          int32_t n_keep)
{
    const pd_model *m = ctx->model;
    const pd_config *c = &m->cfg;
    const pdi_layer *L = &m->layers[l];
    int64_t H = c->hidden, hd = c->head_dim, Q = (int64_t)c->n_heads * hd, KV = (int64_t)c->n_kv_heads * hd;
    int64_t F = c->ffn;

    const pdi_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {ctx->q, ctx->k, ctx->v};
    matmul_fused(ctx, 3, qkv, qkv_out, (const int64_t[3]){Q, KV, KV}, ctx->xn, H, n_tok, false, false, NULL);

    token_job rj = {.ctx = ctx, .layer = l, .parts = parts, .trim = trim};
    bool rope_apart = false; /* some part's rows are not roped by attention */
    for (int32_t i = 0; i < n_parts && !rope_apart; i++) rope_apart = !pdi_rope_in_attention(&parts[i], ctx->n_batch, trim);
    if (rope_apart) pdi_pool_for(ctx->pool, n_tok, 8, rope_store_range, &rj);

    pdi_attention(ctx, l, parts, n_parts, trim);
    if (trim) {
        n_tok = n_keep;
        if (n_tok == 0) return; /* the keys and values were all the pass had to give */
        gather_rows(ctx, ctx->keep, n_keep);
    }
    matmul(ctx, &L->wo, ctx->att, NULL, Q, ctx->delta, H, n_tok);
    token_job ffn = {.ctx = ctx, .norm = L->ffn_norm};
    pdi_pool_for(ctx->pool, n_tok, 8, add_norm_range, &ffn);

    const pdi_matrix *gate_up[2] = {&L->w_gate, &L->w_up};
    float *gate_up_out[2] = {ctx->gate, ctx->up};
    /* the down projection's input is quantized where silu(gate) * up is made */
    const pdi_qact *inner = matmul_fused(ctx, 2, gate_up, gate_up_out, (const int64_t[2]){F, F}, ctx->xn, H, n_tok, true,
                                        true, pdi_dtype_is_block(L->w_down.dtype) ? &ctx->qact_inner : NULL);
    matmul(ctx, &L->w_down, ctx->gate, inner, F, ctx->delta, H, n_tok);
    if (l + 1 < c->n_layers) {
        token_job next = {.ctx = ctx, .norm = m->layers[l + 1].attn_norm};
        pdi_pool_for(ctx->pool, n_tok, 8, add_norm_range, &next);
    } else {
        for (int64_t i = 0; i < (int64_t)n_tok * H; i++) ctx->x[i] += ctx->delta[i];
    }
}

/* ------------------------------------------------------------- validation */

static pd_status check_batch(const pd_context *ctx, const pd_batch *b, pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    const char *src = ctx->model->source;
    if (!b || !b->tokens || b->n_tokens <= 0)
        return pdi_set_error(err, PD_ERR_ARG, "evaluation: empty batch");
    if (b->n_tokens > ctx->n_ctx - ctx->kv_len)
        return pdi_set_error(err, PD_ERR_CONTEXT, "%s: %d tokens do not fit: %d of the context's %d are in use", src,
                             b->n_tokens, ctx->kv_len, ctx->n_ctx);
    for (int32_t i = 0; i < b->n_tokens; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= c->vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "%s: token %d at batch index %d is outside the vocabulary [0, %d)",
                                 src, b->tokens[i], i, c->vocab);
        if (b->positions && (b->positions[i] < 0 || b->positions[i] >= c->max_positions))
            return pdi_set_error(err, PD_ERR_RANGE, "%s: position %d at batch index %d is outside [0, %d)", src,
                                 b->positions[i], i, c->max_positions);
    }
    if (b->visible) {
        size_t n = (size_t)b->n_tokens;
        for (size_t i = 0; i < n; i++) {
            if (!b->visible[i * n + i])
                return pdi_set_error(err, PD_ERR_ARG, "evaluation: token %zu of the batch must see itself", i);
            for (size_t j = i + 1; j < n; j++)
                if (b->visible[i * n + j])
                    return pdi_set_error(err, PD_ERR_ARG,
                                         "evaluation: token %zu may not see the later token %zu (the mask must be lower-triangular)", i, j);
        }
    }
    if (b->n_outputs < 0 || (b->n_outputs > 0 && !b->outputs))
        return pdi_set_error(err, PD_ERR_ARG, "evaluation: %d outputs asked with no output list", b->n_outputs);
    if (b->n_outputs > b->n_tokens) /* bounds the output buffers by the batch */
        return pdi_set_error(err, PD_ERR_LIMIT, "evaluation: %d outputs asked for a batch of %d tokens (at most one a token)",
                             b->n_outputs, b->n_tokens);
    for (int32_t k = 0; k < b->n_outputs; k++)
        if (b->outputs[k] < 0 || b->outputs[k] >= b->n_tokens)
            return pdi_set_error(err, PD_ERR_RANGE, "evaluation: output row %d is outside the batch of %d tokens",
                                 b->outputs[k], b->n_tokens);
    return PD_OK;
}

static pd_status reserve_outputs(pd_context *ctx, int32_t n, int logits, pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    if (n > ctx->cap_outputs || (logits && !ctx->out_logits)) {
        int32_t cap = n > ctx->cap_outputs ? n : ctx->cap_outputs;
        size_t hb, lb;
        if (!pdi_mul_size((size_t)cap, (size_t)c->hidden * sizeof(float), &hb) ||
            !pdi_mul_size((size_t)cap, (size_t)c->vocab * sizeof(float), &lb))
            return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: %d outputs are too many", n);
        size_t out = hb + (logits ? lb : 0); /* the context's own bytes are within its budget */
        if (ctx->max_bytes && (out < hb || out > ctx->max_bytes - ctx->bytes))
            return pdi_set_error(err, PD_ERR_LIMIT,
                                 "evaluation: %d kept rows need %zu bytes of outputs; with the context's %zu bytes that "
                                 "is over its budget of %zu bytes",
                                 cap, out, ctx->bytes, ctx->max_bytes);
        float *h = realloc(ctx->out_hidden, hb);
        if (!h) return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for %d outputs", n);
        ctx->out_hidden = h;
        free(ctx->out_logits);
        ctx->out_logits = NULL;
        if (logits && !(ctx->out_logits = malloc(lb))) {
            ctx->cap_outputs = 0;
            return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for the logits of %d outputs", n);
        }
        ctx->cap_outputs = cap;
    }
    return PD_OK;
}

/* Room for the layer states of n rows (pd_context_keep_layer_states). */
static pd_status reserve_states(pd_context *ctx, int32_t n, pd_error *err)
{
    size_t need;
    if (!pdi_mul_size((size_t)n, (size_t)ctx->n_state_layers * (size_t)ctx->model->cfg.hidden, &need))
        return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: the layer states of %d rows are too many", n);
    if (need > ctx->cap_states) {
        float *s = realloc(ctx->states, need * sizeof(float));
        if (!s) return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for the layer states of %d rows", n);
        ctx->states = s;
        ctx->cap_states = need;
    }
    return PD_OK;
}

/* The residual stream of the pass's rows after layer l into the layer
 * states of the parts' contexts that keep that layer. */
static void copy_states(pd_context *ctx, int l, const pdi_seq_part *parts, int32_t n_parts)
{
    int64_t H = ctx->model->cfg.hidden;
    for (int32_t i = 0; i < n_parts; i++) {
        pd_context *seq = parts[i].seq;
        for (int32_t k = 0; k < seq->n_state_layers; k++) {
            if (seq->state_layers[k] != l) continue;
            for (int32_t t = 0; t < parts[i].n_tok; t++) {
                size_t row = (size_t)(parts[i].chunk_start + t);
                memcpy(seq->states + (row * (size_t)seq->n_state_layers + (size_t)k) * (size_t)H,
                       ctx->x + (size_t)(parts[i].row0 + t) * (size_t)H, (size_t)H * sizeof(float));
            }
        }
    }
}

/* ------------------------------------------------------------------- eval */

/* The batch rows whose hidden states are kept: its outputs, or its last row
 * (stored in *last). */
static const int32_t *kept_outputs(const pd_batch *b, int32_t *last, int32_t *n)
{
    *last = b->n_tokens - 1;
    *n = b->n_outputs > 0 ? b->n_outputs : 1;
    return b->n_outputs > 0 ? b->outputs : last;
}

/* One pass: the parts' rows (at most ctx->n_batch together) through the
 * trunk on ctx's scratch and threads. Each part's cache grows by its rows,
 * and its kept rows' final-norm hidden states go to its context's outputs. */
static void run_pass(pd_context *ctx, pdi_seq_part *parts, int32_t n_parts)
{
    const pd_model *m = ctx->model;
    const pd_config *c = &m->cfg;
    int64_t H = c->hidden;
    int32_t n_tok = 0, last, n_out;
    for (int32_t i = 0; i < n_parts; i++) {
        pdi_seq_part *p = &parts[i];
        const pd_batch *b = p->batch;
        p->row0 = n_tok;
        for (int32_t t = 0; t < p->n_tok; t++, n_tok++) {
            pdi_matrix_row(&m->embed, b->tokens[p->chunk_start + t], ctx->x + n_tok * H);
            ctx->chunk_pos[n_tok] = b->positions ? b->positions[p->chunk_start + t] : p->batch_kv0 + p->chunk_start + t;
        }
    }
    rope_tables(ctx, n_tok);
    if (c->n_layers > 0) {
        token_job first = {.ctx = ctx, .norm = m->layers[0].attn_norm};
        pdi_pool_for(ctx->pool, n_tok, 8, norm_range, &first);
    }
    /* the pass's kept rows, ascending (slot: a row's place among them, -1 for none) */
    int32_t n_keep = 0;
    for (int32_t t = 0; t < n_tok; t++) ctx->slot[t] = -1;
    for (int32_t i = 0; i < n_parts; i++) {
        pdi_seq_part *p = &parts[i];
        const int32_t *outputs = kept_outputs(p->batch, &last, &n_out);
        for (int32_t k = 0; k < n_out; k++)
            if (outputs[k] >= p->chunk_start && outputs[k] < p->chunk_start + p->n_tok)
                ctx->slot[p->row0 + outputs[k] - p->chunk_start] = 0;
        p->keep0 = n_keep;
        for (int32_t t = p->row0; t < p->row0 + p->n_tok; t++)
            if (ctx->slot[t] == 0) {
                ctx->slot[t] = n_keep;
                ctx->keep[n_keep++] = t;
            }
        p->n_keep = n_keep - p->keep0;
    }
    bool trim = n_keep < n_tok, states = false; /* the last layer carries the kept rows only, */
    for (int32_t i = 0; i < n_parts; i++) {
        trim = trim && !parts[i].seq->states_last; /* unless its states are kept */
        states = states || parts[i].seq->n_state_layers > 0;
    }
    for (int l = 0; l < c->n_layers; l++) {
        layer_forward(ctx, l, parts, n_parts, n_tok, trim && l + 1 == c->n_layers, n_keep);
        if (states) copy_states(ctx, l, parts, n_parts);
    }
    for (int32_t i = 0; i < n_parts; i++) {
        const pdi_seq_part *p = &parts[i];
        p->seq->kv_len = p->batch_kv0 + p->chunk_start + p->n_tok;
        const int32_t *outputs = kept_outputs(p->batch, &last, &n_out);
        for (int32_t k = 0; k < n_out; k++) {
            int32_t r = outputs[k] - p->chunk_start;
            if (r >= 0 && r < p->n_tok) {
                int32_t at = trim && c->n_layers > 0 ? ctx->slot[p->row0 + r] : p->row0 + r;
                pdi_rmsnorm(p->seq->out_hidden + (size_t)k * H, ctx->x + (size_t)at * H, m->final_norm, H, c->rms_eps);
            }
        }
    }
}

/* The contexts and batches of pd_eval_many, checked before anything is
 * evaluated or allocated (a message names the context when there are several). */
static pd_status check_many(const pd_context *lead, pd_context *const *ctxs, const pd_batch *batches, int32_t n,
                            pd_error *err)
{
    if (!lead || !ctxs || !batches || n <= 0)
        return pdi_set_error(err, PD_ERR_ARG, "%s: no context or no batch", n == 1 ? "pd_eval" : "pd_eval_many");
    for (int32_t i = 0; i < n; i++) {
        if (!ctxs[i]) return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: context %d is NULL", i);
        if (ctxs[i]->model != lead->model)
            return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: context %d is of another model than the pass context", i);
        if (ctxs[i]->n_ctx > lead->n_ctx)
            return pdi_set_error(err, PD_ERR_ARG,
                                 "joint evaluation: context %d holds %d tokens, more than the pass context's %d (whose "
                                 "scratch the passes use)", i, ctxs[i]->n_ctx, lead->n_ctx);
        for (int32_t j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i])
                return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: contexts %d and %d are the same context", j, i);
        pd_status rc = check_batch(ctxs[i], &batches[i], err);
        if (rc && n > 1) pdi_error_prefix(err, "joint evaluation: context %d", i);
        if (rc) return rc;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t last, n_out;
        kept_outputs(&batches[i], &last, &n_out);
        pd_status rc = reserve_outputs(ctxs[i], n_out, batches[i].want_logits, err);
        if (rc == PD_OK && ctxs[i]->n_state_layers) rc = reserve_states(ctxs[i], batches[i].n_tokens, err);
        if (rc && n > 1) pdi_error_prefix(err, "joint evaluation: context %d", i);
        if (rc) return rc;
    }
    return PD_OK;
}

/* What a finished batch leaves on its context: the plain causal run (kv_ids),
 * the count of outputs, and the logits (computed with lead's threads). */
static void finish_batch(pd_context *lead, pd_context *ctx, const pd_batch *b, int32_t kv0)
{
    const pd_config *c = &ctx->model->cfg;
    /* the plain causal run grows only from its own end; any other batch ends it at kv0 */
    bool plain = !b->visible && ctx->kv_plain == kv0;
    for (int32_t i = 0; plain && b->positions && i < b->n_tokens; i++) plain = b->positions[i] == kv0 + i;
    if (ctx->kv_plain > kv0) ctx->kv_plain = kv0;
    if (plain) {
        memcpy(ctx->kv_ids + kv0, b->tokens, (size_t)b->n_tokens * sizeof(int32_t));
        ctx->kv_plain = kv0 + b->n_tokens;
    }
    int32_t last;
    kept_outputs(b, &last, &ctx->n_outputs);
    ctx->state_rows = ctx->n_state_layers ? b->n_tokens : 0;
    if (b->want_logits) {
        matmul(lead, &ctx->model->lm_head, ctx->out_hidden, NULL, c->hidden, ctx->out_logits, c->vocab, ctx->n_outputs);
        ctx->have_logits = 1;
    }
}

pd_status pd_eval_many(pd_context *lead, pd_context *const *ctxs, const pd_batch *batches, int32_t n, pd_error *err)
{
    pd_status rc = check_many(lead, ctxs, batches, n, err);
    if (rc) return rc;
    for (int32_t i = 0; i < n; i++) {
        ctxs[i]->n_outputs = 0;
        ctxs[i]->have_logits = 0;
    }
    /* passes of at most n_batch rows: a batch goes whole into one pass when
     * it fits in one, else it is split across passes */
    int32_t i = 0, start = 0;
    while (i < n) {
        int32_t n_parts = 0, rows = 0;
        while (i < n && rows < lead->n_batch) {
            int32_t left = batches[i].n_tokens - start, take = left;
            if (rows + left > lead->n_batch) {
                if (rows > 0 && left <= lead->n_batch) break; /* whole, in the next pass */
                take = lead->n_batch - rows;
            }
            lead->parts[n_parts++] = (pdi_seq_part){ctxs[i], &batches[i], 0, take, start, ctxs[i]->kv_len - start, 0, 0};
            rows += take;
            start += take;
            if (start == batches[i].n_tokens) {
                i++;
                start = 0;
            }
        }
        run_pass(lead, lead->parts, n_parts);
    }
    for (int32_t k = 0; k < n; k++) finish_batch(lead, ctxs[k], &batches[k], ctxs[k]->kv_len - batches[k].n_tokens);
    return PD_OK;
}

pd_status pd_eval(pd_context *ctx, const pd_batch *batch, pd_error *err)
{
    if (!ctx) return pdi_set_error(err, PD_ERR_ARG, "evaluation: no context");
    return pd_eval_many(ctx, &ctx, batch, 1, err);
}

pd_status pd_eval_tokens(pd_context *ctx, const int32_t *ids, int32_t n_ids, pd_error *err)
{
    pd_batch b = {.tokens = ids, .n_tokens = n_ids, .want_logits = 1};
    return pd_eval(ctx, &b, err);
}

pd_status pd_context_logits_rows(pd_context *ctx, int32_t i, const int32_t *rows, int32_t n_rows, float *out,
                                 pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    if (i < 0 || i >= ctx->n_outputs)
        return pdi_set_error(err, PD_ERR_RANGE, "logits of kept rows: output %d of %d", i, ctx->n_outputs);
    if (n_rows < 0 || (n_rows > 0 && (!rows || !out)))
        return pdi_set_error(err, PD_ERR_ARG, "logits of kept rows: no rows or no output buffer");
    for (int32_t k = 0; k < n_rows; k++)
        if (rows[k] < 0 || rows[k] >= c->vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "logits of kept rows: row %d is outside [0, %d)", rows[k],
                                 c->vocab);
    matmul_rows(ctx, &ctx->model->lm_head, rows, n_rows, pd_context_hidden(ctx, i), NULL, c->hidden, out, n_rows, 1);
    return PD_OK;
}

void pdi_model_embed_rows(const pd_model *model, const int32_t *ids, int64_t n, float *out)
{
    for (int64_t t = 0; t < n; t++) pdi_matrix_row(&model->embed, ids[t], out + t * model->cfg.hidden);
}

void pdi_context_head_logits(pd_context *ctx, const float *x, int64_t n_tok, float *logits)
{
    const pd_config *c = &ctx->model->cfg;
    matmul(ctx, &ctx->model->lm_head, x, NULL, c->hidden, logits, c->vocab, n_tok);
}

struct pdi_pool *pdi_context_pool(pd_context *ctx) { return ctx->pool; }
const pd_model *pdi_context_model(const pd_context *ctx) { return ctx->model; }
