/* rope.c - the per-head q/k RMSNorm, rotate-half RoPE and the write of keys
 * and values into a sequence's cache (F32 or F16, blocked keys), a row's
 * heads at a time: what the pass's loop and attention both call. */
#include "model.h"

#include <math.h>
#include <string.h>

void pdi_rope_tables(pd_context *ctx, int32_t n_tok)
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
