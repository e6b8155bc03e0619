/* attention.c - grouped-query attention of one layer for the rows of a pass.
 *
 * A pass holds the rows of one or more sequences (pdi_seq_part): their
 * queries and outputs are rows of the pass context's scratch, their keys and
 * values are in each sequence's own cache. A token sees its cache before its
 * batch and its batch up to itself (the mask, if any, is lower-triangular and
 * may hide more of the batch). */
#include "model.h"

#include <math.h>
#include <string.h>

typedef struct {
    pd_context *ctx; /* the pass's scratch: q, att, scores, keep */
    int layer;
    const pdi_seq_part *parts;
    int32_t n_parts;
    bool trim; /* only the kept rows (ctx->keep) */
} attn_job;

/* Tokens of part p that attention runs for. */
static int32_t part_items(const attn_job *a, const pdi_seq_part *p) { return a->trim ? p->n_keep : p->n_tok; }

/* The part-local index of part p's k-th token. */
static inline int32_t tok_at(const attn_job *a, const pdi_seq_part *p, int32_t k)
{
    return a->trim ? a->ctx->keep[p->keep0 + k] - p->row0 : k;
}

/* nb cached rows (row bytes apart, hd elements each) as floats: the rows
 * themselves for an F32 cache, else widened into block ([nb][hd]); *stride
 * gets the bytes from one returned row to the next. */
static const void *widen_block(const pdi_kernels *kern, pdi_dtype kvt, const uint8_t *rows, size_t row, int64_t nb,
                               int64_t hd, float *block, size_t *stride)
{
    *stride = row;
    if (kvt == PD_F32) return rows;
    for (int64_t j = 0; j < nb; j++) kern->widen(kvt, rows + (size_t)j * row, block + j * hd, hd);
    *stride = (size_t)hd * sizeof(float);
    return block;
}

/* The largest of s[0..n) (NaN skipped, -INFINITY when none): eight running
 * maxima, so the compares are not one chain of latencies; max is exact, so
 * the order does not change the result. */
static float row_max(const float *s, int64_t n)
{
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t t = 0;
    for (; t + 8 <= n; t += 8)
        for (int k = 0; k < 8; k++) m[k] = s[t + k] > m[k] ? s[t + k] : m[k];
    for (; t < n; t++) m[0] = s[t] > m[0] ? s[t] : m[0];
    for (int k = 1; k < 8; k++) m[0] = m[k] > m[0] ? m[k] : m[0];
    return m[0];
}

/* Whether part-local token i (seeing kv0 + i keys) sees none of the keys in
 * [t0, t0 + PD_ATTN_BLOCK): all in the batch and all hidden by its mask (the
 * candidate blocks of a parallel layout hide most of the batch from each
 * other). Such a block is skipped: its scores would be set to -inf below and
 * its weights would be exp(-inf) = 0, and adding 0 * v to the sums changes
 * no bit of them, so the results are those of computing it. */
static bool block_hidden(const pdi_seq_part *p, int32_t i, int64_t t0, int64_t kv0)
{
    const uint8_t *visible = p->batch->visible;
    if (!visible || t0 < p->batch_kv0) return false;
    int64_t i_batch = (int64_t)p->chunk_start + i, end = t0 + PD_ATTN_BLOCK < kv0 + i ? t0 + PD_ATTN_BLOCK : kv0 + i;
    const uint8_t *vis = visible + (size_t)i_batch * (size_t)p->batch->n_tokens;
    for (int64_t j = t0; j < end; j++)
        if (vis[j - p->batch_kv0]) return false;
    return true;
}

/* Whether some token of the tile [k0, k1) sees a key of the block at t0. */
static bool block_seen(const attn_job *a, const pdi_seq_part *p, int32_t k0, int32_t k1, int64_t t0, int64_t kv0)
{
    for (int32_t k = k0; k < k1; k++)
        if (t0 < kv0 + tok_at(a, p, k) && !block_hidden(p, tok_at(a, p, k), t0, kv0)) return true;
    return false;
}

/* The cache lines of [p, p + bytes) on their way to this core: attention
 * reads each block of keys and values once a pass, after the layer's weights
 * have gone through the caches. */
static void prefetch_bytes(const uint8_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
}

/* One work item: a tile of up to pdi_attn_tokens tokens of one part and one
 * KV head, with every query head that shares it (grouped-query attention):
 * each block of keys is read (or, stored as rows, widened) once for the
 * tile, and every token's sums are those it would have alone. Items run part
 * by part, tile by tile. */
static void attention_range(void *arg, int64_t begin, int64_t end, int thread)
{
    const attn_job *a = arg;
    pd_context *ctx = a->ctx;
    const pd_config *c = &ctx->model->cfg;
    const pdi_kernels *kern = ctx->model->kern;
    int64_t hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads, group = nh / nkv, n_ctx = ctx->n_ctx;
    int64_t kvd = nkv * hd, tq = pdi_attn_tokens(ctx->n_batch);
    /* per thread: each tile token's group rows of n_ctx scores, then a block of widened key rows */
    size_t per_token = (size_t)(group * n_ctx);
    float *scores = ctx->scores + (size_t)thread * ((size_t)tq * per_token + (size_t)(PD_ATTN_BLOCK * hd));
    float *block = scores + (size_t)tq * per_token;
    float inv_sqrt = 1.0f / sqrtf((float)hd);

    int32_t pi = 0;
    int64_t first = 0; /* the first item of part pi */
    for (int64_t item = begin; item < end; item++) {
        const pdi_seq_part *p = &a->parts[pi];
        int64_t tiles = (part_items(a, p) + tq - 1) / tq * nkv;
        while (item >= first + tiles) { /* items ascend: the part is found from the last one */
            first += tiles;
            p = &a->parts[++pi];
            tiles = (part_items(a, p) + tq - 1) / tq * nkv;
        }
        const pd_context *seq = p->seq; /* whose cache the part reads */
        pdi_dtype kvt = seq->kv_f16 ? PD_F16 : PD_F32;
        size_t elt = seq->kv_f16 ? 2 : 4, row = (size_t)kvd * elt; /* bytes from a position to the next in a block */
        const uint8_t *visible = p->batch->visible;
        const float *q_rows = ctx->q + (size_t)p->row0 * (size_t)(nh * hd);
        float *att_rows = ctx->att + (size_t)p->row0 * (size_t)(nh * hd);

        int32_t n_items = part_items(a, p);
        int32_t k0 = (int32_t)((item - first) / nkv * tq), g = (int32_t)((item - first) % nkv);
        int32_t k1 = k0 + (int32_t)tq < n_items ? k0 + (int32_t)tq : n_items;
        if (pdi_rope_in_attention(p, ctx->n_batch, a->trim)) /* the part's one tile: every row, head g */
            for (int32_t r = 0; r < p->n_tok; r++) pdi_rope_store(ctx, a->layer, p, p->row0 + r, g, g + 1);
        int64_t kv0 = (int64_t)p->batch_kv0 + p->chunk_start + 1; /* token i sees kv0 + i keys */
        int64_t keys_max = kv0 + tok_at(a, p, k1 - 1);             /* the tile's last token sees the most */
        for (int64_t t0 = 0; t0 < keys_max; t0 += PD_ATTN_BLOCK) {
            if (visible && !block_seen(a, p, k0, k1, t0, kv0)) continue;
            /* the KV head's keys from position t0: blocked, its rows of the
             * block ([hd][PD_KEY_BLOCK], as stored); else rows, widened */
            const uint8_t *k = (const uint8_t *)seq->k_cache + pdi_key_at(seq, kvd, a->layer, t0, g * hd) * elt;
            /* on their way: the next block's keys, this block's values */
            if (seq->k_blocked && t0 + PD_ATTN_BLOCK < keys_max)
                prefetch_bytes((const uint8_t *)seq->k_cache +
                                   pdi_key_at(seq, kvd, a->layer, t0 + PD_ATTN_BLOCK, g * hd) * elt,
                               (size_t)(hd * PD_KEY_BLOCK) * elt);
            const uint8_t *v_block = (const uint8_t *)seq->v_cache + pdi_value_at(seq, kvd, a->layer, t0, g * hd) * elt;
            for (int64_t r = 0; r < PD_ATTN_BLOCK && t0 + r < keys_max; r++)
                prefetch_bytes(v_block + (size_t)r * row, (size_t)hd * elt);
            size_t stride = 0;
            const void *rows = seq->k_blocked ? (const void *)k
                                              : widen_block(kern, kvt, k, row,
                                                            keys_max - t0 < PD_ATTN_BLOCK ? keys_max - t0 : PD_ATTN_BLOCK,
                                                            hd, block, &stride);
            for (int32_t k = k0; k < k1; k++) {
                int32_t i = tok_at(a, p, k);
                if (t0 >= kv0 + i || block_hidden(p, i, t0, kv0)) continue; /* past or hidden from this token */
                int64_t nb = kv0 + i - t0 < PD_ATTN_BLOCK ? kv0 + i - t0 : PD_ATTN_BLOCK;
                const float *q = q_rows + (size_t)i * nh * hd + (size_t)g * group * hd;
                float *out = scores + (size_t)(k - k0) * per_token + t0;
                if (seq->k_blocked)
                    kern->key_scores_t(kvt, rows, nb, q, hd, group, hd, inv_sqrt, out, n_ctx);
                else
                    kern->key_scores(PD_F32, rows, stride, nb, q, hd, group, hd, inv_sqrt, out, n_ctx);
            }
        }
        if (visible)
            for (int32_t k = k0; k < k1; k++) {
                int32_t i = tok_at(a, p, k);
                int32_t i_batch = p->chunk_start + i;
                const uint8_t *vis = visible + (size_t)i_batch * (size_t)p->batch->n_tokens;
                float *s = scores + (size_t)(k - k0) * per_token + p->batch_kv0;
                for (int64_t jb = 0; jb <= i_batch; jb++)
                    if (!vis[jb])
                        for (int64_t h = 0; h < group; h++) s[h * n_ctx + jb] = -INFINITY;
            }
        for (int64_t h0 = 0; h0 < group; h0 += PD_ATTN_BLOCK) { /* inv holds a block of heads */
            int64_t nh0 = group - h0 < PD_ATTN_BLOCK ? group - h0 : PD_ATTN_BLOCK;
            float inv[PD_ATTN_TOKENS][PD_ATTN_BLOCK];
            for (int32_t k = k0; k < k1; k++) {
                int32_t i = tok_at(a, p, k);
                float *out = att_rows + (size_t)i * nh * hd + (size_t)g * group * hd;
                for (int64_t h = h0; h < h0 + nh0; h++) {
                    float *s = scores + (size_t)(k - k0) * per_token + h * n_ctx;
                    inv[k - k0][h - h0] = 1.0f / kern->exp_sum(s, kv0 + i, row_max(s, kv0 + i));
                }
                memset(out + h0 * hd, 0, (size_t)(nh0 * hd) * sizeof(float));
            }
            for (int64_t t0 = 0; t0 < keys_max; t0 += PD_ATTN_BLOCK) {
                if (visible && !block_seen(a, p, k0, k1, t0, kv0)) continue;
                /* the block's value rows as stored: a kernel converts F16 as it
                 * loads, cheaper than widening the block first even for a
                 * tile of 4 tokens (and the same bits) */
                const uint8_t *v = (const uint8_t *)seq->v_cache + pdi_value_at(seq, kvd, a->layer, t0, g * hd) * elt;
                for (int32_t k = k0; k < k1; k++) {
                    int32_t i = tok_at(a, p, k);
                    if (t0 >= kv0 + i || block_hidden(p, i, t0, kv0)) continue;
                    int64_t nb = kv0 + i - t0 < PD_ATTN_BLOCK ? kv0 + i - t0 : PD_ATTN_BLOCK;
                    float *out = att_rows + (size_t)i * nh * hd + (size_t)g * group * hd;
                    kern->value_mix(kvt, v, row, nb, scores + (size_t)(k - k0) * per_token + h0 * n_ctx + t0,
                                    n_ctx, nh0, hd, out + h0 * hd, hd);
                }
            }
            for (int32_t k = k0; k < k1; k++) {
                int32_t i = tok_at(a, p, k);
                float *out = att_rows + (size_t)i * nh * hd + (size_t)g * group * hd;
                for (int64_t h = h0; h < h0 + nh0; h++)
                    for (int64_t d = 0; d < hd; d++) out[h * hd + d] *= inv[k - k0][h - h0];
            }
        }
    }
}

void pdi_attention(pd_context *ctx, int layer, const pdi_seq_part *parts, int32_t n_parts, bool trim)
{
    attn_job a = {ctx, layer, parts, n_parts, trim};
    int64_t tq = pdi_attn_tokens(ctx->n_batch), items = 0;
    for (int32_t p = 0; p < n_parts; p++) items += (part_items(&a, &parts[p]) + tq - 1) / tq * ctx->model->cfg.n_kv_heads;
    if (items) pdi_pool_for(ctx->pool, items, 1, attention_range, &a);
}
