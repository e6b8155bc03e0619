/* draft_forward.c - the draft's forward pass (the z-lab release's semantics).
 *
 * Context: each appended position's features (the target's hidden states
 * after the draft's target layers, concatenated) -> fc -> RMSNorm
 * (hidden_norm); for every layer k_proj -> per-head k_norm -> RoPE at the
 * position, and v_proj, into the draft's cache.
 *
 * Block (positions len, len + 1, ...): the target's embeddings of its ids
 * (times input_embedding_scale); for each layer: RMSNorm; [DFlash2: the
 * attention convolution's side 0]; q, k, v projections, per-head q/k norms,
 * RoPE; attention of every block row over the context and the block (causal
 * and sliding-window layers restrict it); o_proj; [side 1]; residual;
 * RMSNorm; [the MLP convolution's side 0]; SwiGLU MLP; [side 1]; residual.
 * Then the final norm, the target's LM head, output_multiplier and the soft
 * cap, for the rows after the first; their argmax (DFlash) or the candidate
 * selector's path (DFlash2). */
#include "drafts.h"

#include "core/kernels.h"
#include "core/threadpool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pd_draft_context {
    const pd_draft *d;
    pd_context *head; /* a small context of the target: its LM head and threads */
    pdi_pool *pool;
    const pdi_kernels *kern;
    int32_t n_ctx, len;
    float *k_cache, *v_cache; /* [n_layers][n_ctx + block_size][kv_dim]: K after norm and RoPE */
    /* scratch for block_size rows */
    float *x, *h, *conv, *q, *k, *v, *att, *out, *gate, *up;
    float *dyn_attn, *dyn_mlp; /* DFlash2: [rows][2 * taps * groups] */
    float *rope_cos, *rope_sin; /* [rows][head_dim / 2] */
    float *scores;              /* [threads][n_ctx + block_size] */
    float *logits;              /* [block_size][vocab] */
    float *sel_unary, *sel_proj; /* [block_size][top_k], [block_size][rank] */
    int32_t *sel_cand;           /* [block_size][top_k] */
    pdi_qact qact;               /* block rows quantized, for a draft quantized at load */
};

/* ------------------------------------------------------------------ pieces */

typedef struct {
    const pdi_kernels *kern;
    const pdi_draft_matrix *w;
    const float *x;
    const pdi_qact *qx; /* x quantized, for block-quantized weights; else NULL */
    int64_t n_tok;
    float *y;
} mm_job;

static void mm_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const mm_job *j = arg;
    const pdi_draft_matrix *w = j->w;
    const uint8_t *rows = w->data + (size_t)begin * w->row_bytes;
    if (j->qx && w->interleave) /* begin: a multiple of 16, so of the interleave */
        j->kern->qmatmul_x(w->dtype, rows, w->row_bytes, end - begin, j->qx, 0, j->n_tok, j->y + begin, w->rows);
    else if (j->qx)
        j->kern->qmatmul(w->dtype, rows, w->row_bytes, end - begin, j->qx, 0, j->n_tok, j->y + begin, w->rows);
    else j->kern->fmatmul(w->dtype, rows, w->row_bytes, end - begin, w->cols, j->x, w->cols, 0, j->n_tok, j->y + begin,
                          w->rows);
}

/* y[t][r] = w[r] . x[t] for n_tok rows of x (w->cols wide) into y (w->rows
 * wide); x quantized first when w is (the target's integer products). */
static void matmul(pd_draft_context *dc, const pdi_draft_matrix *w, const float *x, int64_t n_tok, float *y)
{
    mm_job j = {dc->kern, w, x, NULL, n_tok, y};
    if (pdi_dtype_is_block(w->dtype)) {
        dc->qact.n_tok = n_tok;
        dc->qact.cols = w->cols;
        dc->kern->quantize_act(&dc->qact, x, w->cols, 0, n_tok, 0, w->cols / PD_QBLOCK);
        j.qx = &dc->qact;
    }
    pdi_pool_for(dc->pool, w->rows, 16, mm_range, &j);
}

static void rms_rows(float *out, const float *x, const float *w, int64_t n, int64_t dim, float eps)
{
    for (int64_t t = 0; t < n; t++) pdi_rmsnorm(out + t * dim, x + t * dim, w, dim, eps);
}

/* cos and sin of each row's angles (as the target's forward computes them). */
static void rope_tables(pd_draft_context *dc, int32_t pos0, int32_t n)
{
    const pd_draft *d = dc->d;
    int half = d->head_dim / 2;
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < half; k++) {
            double angle = (double)(pos0 + i) * pow((double)d->rope_theta, -2.0 * k / (double)d->head_dim);
            dc->rope_cos[(size_t)i * half + k] = (float)cos(angle);
            dc->rope_sin[(size_t)i * half + k] = (float)sin(angle);
        }
}

/* Per-head RMSNorm then rotate-half RoPE of row i's n_heads vectors, in place. */
static void norm_rope(const pd_draft_context *dc, float *v, int n_heads, const float *norm_w, int32_t i)
{
    const pd_draft *d = dc->d;
    int hd = d->head_dim, half = hd / 2;
    const float *c = dc->rope_cos + (size_t)i * half, *s = dc->rope_sin + (size_t)i * half;
    for (int h = 0; h < n_heads; h++) {
        float *x = v + (size_t)h * hd;
        pdi_rmsnorm(x, x, norm_w, hd, d->rms_eps);
        for (int k = 0; k < half; k++) {
            float x1 = x[k], x2 = x[k + half];
            x[k] = x1 * c[k] - x2 * s[k];
            x[k + half] = x2 * c[k] + x1 * s[k];
        }
    }
}

/* n rows of keys (normed and roped here) and values into layer l's cache from position pos0. */
static void store_kv(pd_draft_context *dc, int l, int32_t pos0, int32_t n)
{
    const pd_draft *d = dc->d;
    const pdi_draft_layer *L = &d->layers[l];
    size_t kv = (size_t)d->n_kv_heads * d->head_dim, rows = (size_t)dc->n_ctx + (size_t)d->block_size;
    for (int32_t i = 0; i < n; i++) {
        norm_rope(dc, dc->k + i * kv, d->n_kv_heads, L->k_norm, i);
        size_t at = ((size_t)l * rows + (size_t)(pos0 + i)) * kv;
        memcpy(dc->k_cache + at, dc->k + i * kv, kv * sizeof(float));
        memcpy(dc->v_cache + at, dc->v + i * kv, kv * sizeof(float));
    }
}

/* DFlash2's convolution, one side (pdi_draft_conv): out = conv(in) over n rows. */
static void conv_side(const pd_draft *d, const pdi_draft_conv *cv, int side, const float *dyn, const float *in,
                      int32_t n, float *out)
{
    int64_t H = d->hidden, G = H / d->group_size, dyn_stride = 2 * (int64_t)d->taps * G;
    for (int32_t t = 0; t < n; t++) {
        float *o = out + t * H;
        memset(o, 0, (size_t)H * sizeof(float));
        for (int32_t k = 0; k < d->taps && k <= t; k++) {
            const float *base = cv->base + ((int64_t)side * d->taps + k) * H, *src = in + (t - k) * H;
            const float *dk = dyn + t * dyn_stride + ((int64_t)side * d->taps + k) * G;
            for (int64_t c = 0; c < H; c++) o[c] += (base[c] + dk[c / d->group_size]) * src[c];
        }
    }
}

/* ---------------------------------------------------------------- attention */

typedef struct {
    pd_draft_context *dc;
    int l;
    int32_t n;
} attn_job;

/* Items: (block row, query head) pairs. Row i sits at position len + i; the
 * cache holds positions 0 .. len + n - 1 (the block's own rows last). */
static void attn_range(void *arg, int64_t begin, int64_t end, int thread)
{
    const attn_job *j = arg;
    pd_draft_context *dc = j->dc;
    const pd_draft *d = dc->d;
    const pdi_draft_layer *L = &d->layers[j->l];
    int64_t hd = d->head_dim, kv = (int64_t)d->n_kv_heads * hd, group = d->n_heads / d->n_kv_heads;
    int64_t rows = (int64_t)dc->n_ctx + d->block_size, n_keys = (int64_t)dc->len + j->n;
    const float *kc = dc->k_cache + j->l * rows * kv, *vc = dc->v_cache + j->l * rows * kv;
    float *s = dc->scores + (size_t)thread * (size_t)rows, scale = 1.0f / sqrtf((float)hd);
    for (int64_t item = begin; item < end; item++) {
        int64_t i = item / d->n_heads, h = item % d->n_heads, g = h / group, qp = dc->len + i;
        const float *q = dc->q + i * d->n_heads * hd + h * hd;
        float max = -INFINITY;
        for (int64_t kp = 0; kp < n_keys; kp++) {
            bool seen = !(L->causal && kp > qp) &&
                        !(L->window && (qp - kp >= L->window || (!L->causal && kp - qp >= L->window)));
            s[kp] = seen ? scale * dc->kern->dot(q, kc + kp * kv + g * hd, hd) : -INFINITY;
            if (s[kp] > max) max = s[kp];
        }
        float sum = dc->kern->exp_sum(s, n_keys, max);
        float *o = dc->att + i * d->n_heads * hd + h * hd;
        memset(o, 0, (size_t)hd * sizeof(float));
        for (int64_t kp = 0; kp < n_keys; kp++)
            if (s[kp] != 0.0f) dc->kern->axpy(o, s[kp] / sum, vc + kp * kv + g * hd, hd);
    }
}

/* ------------------------------------------------------------------ layers */

/* Rows 0..n-1 of dc->h (normed) through DFlash2's side 0 when the draft has
 * it, into dc->conv; returns the sublayer's input (dc->h or dc->conv). */
static const float *conv_in(pd_draft_context *dc, const pdi_draft_conv *cv, float *dyn, int32_t n)
{
    const pd_draft *d = dc->d;
    if (d->kind != PD_DRAFT_DFLASH2) return dc->h;
    matmul(dc, &cv->proj, dc->h, n, dyn);
    conv_side(d, cv, 0, dyn, dc->h, n, dc->conv);
    return dc->conv;
}

/* x += the sublayer's output dc->out (through side 1 for DFlash2). */
static void conv_out_add(pd_draft_context *dc, const pdi_draft_conv *cv, const float *dyn, int32_t n)
{
    const pd_draft *d = dc->d;
    const float *y = dc->out;
    if (d->kind == PD_DRAFT_DFLASH2) {
        conv_side(d, cv, 1, dyn, dc->out, n, dc->conv);
        y = dc->conv;
    }
    for (int64_t i = 0; i < (int64_t)n * d->hidden; i++) dc->x[i] += y[i];
}

static void layer_forward(pd_draft_context *dc, int l, int32_t n)
{
    const pd_draft *d = dc->d;
    const pdi_draft_layer *L = &d->layers[l];
    int64_t H = d->hidden, Q = (int64_t)d->n_heads * d->head_dim;

    rms_rows(dc->h, dc->x, L->attn_norm, n, H, d->rms_eps);
    const float *in = conv_in(dc, &L->attn_conv, dc->dyn_attn, n);
    matmul(dc, &L->wq, in, n, dc->q);
    matmul(dc, &L->wk, in, n, dc->k);
    matmul(dc, &L->wv, in, n, dc->v);
    for (int32_t i = 0; i < n; i++) norm_rope(dc, dc->q + i * Q, d->n_heads, L->q_norm, i);
    store_kv(dc, l, dc->len, n); /* the block's rows, past the context: scratch until the next block */
    attn_job aj = {dc, l, n};
    pdi_pool_for(dc->pool, (int64_t)n * d->n_heads, 1, attn_range, &aj);
    matmul(dc, &L->wo, dc->att, n, dc->out);
    conv_out_add(dc, &L->attn_conv, dc->dyn_attn, n);

    rms_rows(dc->h, dc->x, L->ffn_norm, n, H, d->rms_eps);
    in = conv_in(dc, &L->mlp_conv, dc->dyn_mlp, n);
    matmul(dc, &L->w_gate, in, n, dc->gate);
    matmul(dc, &L->w_up, in, n, dc->up);
    for (int32_t i = 0; i < n; i++) dc->kern->silu_mul(dc->gate + i * d->ffn, dc->up + i * d->ffn, d->ffn);
    matmul(dc, &L->w_down, dc->gate, n, dc->out);
    conv_out_add(dc, &L->mlp_conv, dc->dyn_mlp, n);
}

/* ------------------------------------------------------------------ context */

pd_draft_context *pd_draft_context_new(const pd_draft *d, int32_t n_ctx, int32_t n_threads, pd_error *err)
{
    if (!d || n_ctx < 1 || n_threads < 0) {
        pdi_set_error(err, PD_ERR_ARG, "draft context: no draft, or n_ctx %d / n_threads %d out of range", n_ctx,
                      n_threads);
        return NULL;
    }
    const pd_config *tc = pd_model_config(d->target);
    if (n_ctx > tc->max_positions) { /* a block past them is harmless: attention sees only distances */
        pdi_set_error(err, PD_ERR_RANGE, "%s: a draft context of %d positions is longer than the target's %d",
                      d->source, n_ctx, tc->max_positions);
        return NULL;
    }
    pd_draft_context *dc = calloc(1, sizeof *dc);
    if (!dc) {
        pdi_set_error(err, PD_ERR_NOMEM, "draft context: out of memory");
        return NULL;
    }
    dc->d = d;
    dc->n_ctx = n_ctx;
    dc->kern = pdi_kernels_select();
    pd_context_params hp = pd_context_default_params();
    hp.n_ctx = hp.n_batch = d->block_size;
    hp.n_threads = n_threads;
    if (!(dc->head = pd_context_new(d->target, &hp, err))) {
        free(dc);
        return NULL;
    }
    dc->pool = pdi_context_pool(dc->head);
    size_t B = (size_t)d->block_size, H = (size_t)d->hidden, hd = (size_t)d->head_dim;
    size_t kv = (size_t)d->n_kv_heads * hd, Q = (size_t)d->n_heads * hd, F = (size_t)d->ffn;
    size_t rows = (size_t)n_ctx + B, wide = H > Q ? H : Q;
    size_t dyn = d->kind == PD_DRAFT_DFLASH2 ? 2 * (size_t)d->taps * (H / (size_t)d->group_size) : 1;
    float **bufs[] = {&dc->k_cache, &dc->v_cache, &dc->x, &dc->h, &dc->conv, &dc->q, &dc->k, &dc->v, &dc->att,
                      &dc->out, &dc->gate, &dc->up, &dc->dyn_attn, &dc->dyn_mlp, &dc->rope_cos, &dc->rope_sin,
                      &dc->scores, &dc->logits, &dc->sel_unary, &dc->sel_proj};
    size_t sizes[] = {(size_t)d->n_layers * rows * kv, (size_t)d->n_layers * rows * kv, B * wide, B * wide, B * H,
                      B * Q, B * kv, B * kv, B * Q, B * H, B * F, B * F, B * dyn, B * dyn, B * hd, B * hd,
                      (size_t)pdi_pool_size(dc->pool) * rows, B * (size_t)d->vocab,
                      B * (size_t)(d->top_k + 1), B * (size_t)(d->rank + 1)};
    bool ok = true;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ok = ok && (*bufs[i] = calloc(sizes[i], sizeof(float)));
    ok = ok && (dc->sel_cand = calloc(B * (size_t)(d->top_k + 1), sizeof(int32_t)));
    size_t widest = (size_t)d->n_targets * H > F ? (size_t)d->n_targets * H : F; /* fc's input, or down's */
    if (d->quantize != PD_QUANT_NONE) ok = ok && pdi_qact_alloc(&dc->qact, (int64_t)B, widest > Q ? widest : Q);
    if (!ok) {
        pd_draft_context_free(dc);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for a draft context of %d positions", d->source, n_ctx);
        return NULL;
    }
    return dc;
}

void pd_draft_context_free(pd_draft_context *dc)
{
    if (!dc) return;
    float *bufs[] = {dc->k_cache, dc->v_cache, dc->x, dc->h, dc->conv, dc->q, dc->k, dc->v, dc->att, dc->out,
                     dc->gate, dc->up, dc->dyn_attn, dc->dyn_mlp, dc->rope_cos, dc->rope_sin, dc->scores,
                     dc->logits, dc->sel_unary, dc->sel_proj};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(dc->sel_cand);
    pdi_qact_free(&dc->qact);
    pd_context_free(dc->head);
    free(dc);
}

int32_t pd_draft_context_len(const pd_draft_context *dc) { return dc ? dc->len : 0; }
const pd_draft *pdi_draft_of(const pd_draft_context *dc) { return dc->d; }

pd_status pd_draft_context_truncate(pd_draft_context *dc, int32_t n, pd_error *err)
{
    if (!dc || n < 0 || n > dc->len)
        return pdi_set_error(err, PD_ERR_RANGE, "draft context: cannot keep %d of %d positions", n, dc ? dc->len : 0);
    dc->len = n;
    return PD_OK;
}

pd_status pd_draft_context_append(pd_draft_context *dc, const float *features, int32_t n, pd_error *err)
{
    if (!dc || !features || n < 0) return pdi_set_error(err, PD_ERR_ARG, "draft context: no features");
    const pd_draft *d = dc->d;
    if (n > dc->n_ctx - dc->len)
        return pdi_set_error(err, PD_ERR_CONTEXT, "%s: %d context positions do not fit: %d of the draft context's %d "
                             "are in use", d->source, n, dc->len, dc->n_ctx);
    int64_t H = d->hidden, F = (int64_t)d->n_targets * H;
    for (int32_t t0 = 0; t0 < n; t0 += d->block_size) {
        int32_t m = n - t0 < d->block_size ? n - t0 : d->block_size;
        matmul(dc, &d->fc, features + t0 * F, m, dc->out);
        rms_rows(dc->h, dc->out, d->hidden_norm, m, H, d->rms_eps);
        rope_tables(dc, dc->len, m);
        for (int l = 0; l < d->n_layers; l++) {
            matmul(dc, &d->layers[l].wk, dc->h, m, dc->k);
            matmul(dc, &d->layers[l].wv, dc->h, m, dc->v);
            store_kv(dc, l, dc->len, m);
        }
        dc->len += m;
    }
    return PD_OK;
}

/* ---------------------------------------------------------------- proposals */

/* The top_k ids of a row of logits, best first (ties: the lower id first). */
static void top_k(const float *logits, int32_t vocab, int32_t k, int32_t *ids, float *vals)
{
    int32_t n = 0;
    for (int32_t v = 0; v < vocab; v++) {
        if (n == k && !(logits[v] > vals[k - 1])) continue;
        int32_t at = n < k ? n++ : k - 1;
        while (at > 0 && logits[v] > vals[at - 1]) {
            ids[at] = ids[at - 1];
            vals[at] = vals[at - 1];
            at--;
        }
        ids[at] = v;
        vals[at] = logits[v];
    }
}

void pdi_draft_select(const pd_draft *d, const int32_t *candidates, const float *unary, const float *proj, int32_t n,
                      int32_t anchor, int32_t *path)
{
    int32_t prev = anchor;
    for (int32_t p = 0; p < n; p++) {
        const float *pred = d->sel_pred + (size_t)prev * d->rank, *h = proj + (size_t)p * d->rank;
        double best = -INFINITY;
        int32_t choice = candidates[(size_t)p * d->top_k];
        for (int32_t c = 0; c < d->top_k; c++) {
            int32_t id = candidates[(size_t)p * d->top_k + c];
            const float *succ = d->sel_succ + (size_t)id * d->rank;
            double s = 0;
            for (int32_t r = 0; r < d->rank; r++) s += (double)pred[r] * h[r] * succ[r];
            s += unary[(size_t)p * d->top_k + c];
            if (s > best) {
                best = s;
                choice = id;
            }
        }
        path[p] = prev = choice;
    }
}

pd_status pd_draft_propose(pd_draft_context *dc, const int32_t *block, int32_t n_block, int32_t *tokens,
                           float *logits, pd_error *err)
{
    if (!dc || !block || !tokens) return pdi_set_error(err, PD_ERR_ARG, "draft: no block or no token buffer");
    const pd_draft *d = dc->d;
    if (n_block < 2 || n_block > d->block_size)
        return pdi_set_error(err, PD_ERR_ARG, "%s: a block of %d tokens (2 to %d)", d->source, n_block, d->block_size);
    for (int32_t i = 0; i < n_block; i++)
        if (block[i] < 0 || block[i] >= d->vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "%s: block token %d at %d is outside the vocabulary [0, %d)",
                                 d->source, block[i], i, d->vocab);
    int64_t H = d->hidden, V = d->vocab;
    pdi_model_embed_rows(d->target, block, n_block, dc->x);
    if (d->embed_scale != 1.0f)
        for (int64_t i = 0; i < n_block * H; i++) dc->x[i] *= d->embed_scale;
    rope_tables(dc, dc->len, n_block);
    for (int l = 0; l < d->n_layers; l++) layer_forward(dc, l, n_block);

    int32_t n = n_block - 1; /* the proposals: rows 1 .. n_block - 1 */
    rms_rows(dc->h, dc->x + H, d->final_norm, n, H, d->rms_eps);
    pdi_context_head_logits(dc->head, dc->h, n, dc->logits);
    for (int64_t i = 0; i < n * V; i++) {
        float z = dc->logits[i] * d->output_multiplier;
        dc->logits[i] = d->softcap > 0 ? d->softcap * tanhf(z / d->softcap) : z;
    }
    if (logits) memcpy(logits, dc->logits, (size_t)(n * V) * sizeof(float));
    if (d->kind == PD_DRAFT_DFLASH2) {
        for (int32_t p = 0; p < n; p++)
            top_k(dc->logits + p * V, d->vocab, d->top_k, dc->sel_cand + p * d->top_k, dc->sel_unary + p * d->top_k);
        matmul(dc, &d->sel_proj, dc->h, n, dc->sel_proj);
        pdi_draft_select(d, dc->sel_cand, dc->sel_unary, dc->sel_proj, n, block[0], tokens);
        return PD_OK;
    }
    for (int32_t p = 0; p < n; p++) top_k(dc->logits + p * V, d->vocab, 1, tokens + p, dc->sel_unary);
    return PD_OK;
}
