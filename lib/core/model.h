/* model.h - the loaded model and the run state of a context (llama2.c style:
 * a config, a weights struct, and the scratch of a forward pass). */
#ifndef PD_MODEL_H
#define PD_MODEL_H

#include "kernels.h"
#include "threadpool.h"

/* A low-rank term added after each product with a matrix: y += scale * B (A x).
 * Terms of a stack are chained. Owned by the derived model that made them. */
typedef struct pdi_delta {
    int64_t rank;
    float scale;
    const float *A, *Bt; /* [rank][cols]; B transposed, [rank][rows], so B u is rank axpys */
    const struct pdi_delta *next;
} pdi_delta;

/* A weight matrix [rows, cols] of any supported dtype, rows contiguous. A
 * derived model (pdi_model_derive) points data at a merged copy or chains
 * low-rank terms in delta. An interleaved matrix (Q8_0, Q4_0 or Q4_1, rows a
 * multiple of the kernels' interleave) holds its rows that many at a time
 * (pdi_x_pack): products go through the kernels' qmatmul_x in whole groups (a
 * single chosen row of the LM head through its group), rows through
 * pdi_matrix_row. */
typedef struct pdi_matrix {
    pdi_dtype dtype;
    int64_t rows, cols;
    size_t row_bytes; /* of one plain row */
    const uint8_t *data;
    const pdi_delta *delta; /* NULL: none */
    int interleave; /* rows a group; 0: the file's layout */
} pdi_matrix;

typedef struct pdi_layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm; /* F32 copies */
    pdi_matrix wq, wk, wv, wo, w_gate, w_up, w_down;
} pdi_layer;

struct pd_model {
    pd_config cfg;
    char *source;       /* path it was loaded from */
    const char *format; /* "hf" or "gguf" */
    pdi_tensor_store store;
    pdi_matrix embed, lm_head;
    const float *final_norm;
    pdi_layer *layers;
    float *norm_storage; /* the F32 copies of every 1-D norm weight */
    pd_tokenizer *tokenizer;
    const pdi_kernels *kern;
    int n_interleaved; /* matrices held interleaved (pdi_matrix.interleave) */
    /* A derived model borrows base's store, norms and tokenizer and owns only
     * its layers array and the blocks listed in owned. */
    const pd_model *base;
    void **owned;
    size_t n_owned, cap_owned;
};

/* Validated row access: the matrix's row r converted to F32. */
static inline void pdi_matrix_row(const pdi_matrix *m, int64_t r, float *dst)
{
    if (m->interleave) pdi_x_row_to_f32(m->dtype, m->interleave, m->data, m->row_bytes, r, dst, m->cols);
    else pdi_row_to_f32(m->dtype, m->data + (size_t)r * m->row_bytes, dst, m->cols);
}

/* Cached rows widened at a time in attention (an F16 cache), and query heads
 * normalised at a time: a key block. */
#define PD_ATTN_BLOCK PD_KEY_BLOCK
/* Tokens of a chunk that share each widened block of cached rows. */
#define PD_ATTN_TOKENS 4
static inline int64_t pdi_attn_tokens(int64_t n_batch) { return n_batch < PD_ATTN_TOKENS ? n_batch : PD_ATTN_TOKENS; }

/* Blocks of PD_KEY_BLOCK positions that hold n positions. */
static inline size_t pdi_kv_blocks(int64_t n) { return (size_t)(n + PD_KEY_BLOCK - 1) / PD_KEY_BLOCK; }

typedef struct pdi_seq_part pdi_seq_part;

struct pd_context {
    const pd_model *model;
    int32_t n_ctx, n_batch;
    size_t max_bytes; /* the caller's budget (0: none) */
    size_t bytes;     /* allocated at creation: KV cache and scratch */
    pdi_pool *pool;
    int32_t kv_len;
    /* floats, or halves when kv_f16; K after RoPE. One mapping of kv_mapped
     * bytes in blocks of PD_KEY_BLOCK positions, a block every layer's keys
     * then every layer's values (pdi_key_at, pdi_value_at): k_cache is its
     * start, v_cache the values of block 0. */
    void *k_cache, *v_cache;
    size_t kv_mapped;
    bool kv_f16, k_blocked;
    /* The cache's first kv_plain positions hold kv_ids[0..kv_plain) as a
     * causal evaluation from position 0 (no positions, no mask) left them:
     * what pd_context_kv_match compares with. [n_ctx] */
    int32_t *kv_ids;
    int32_t kv_plain;

    /* scratch for one chunk of up to n_batch tokens */
    float *x;      /* residual stream [n_batch][hidden] */
    float *xn;     /* normed input [n_batch][max(hidden, ffn)] */
    float *q;      /* [n_batch][n_heads*head_dim] */
    float *k, *v;  /* [n_batch][kv_dim] */
    float *att;    /* attention output [n_batch][n_heads*head_dim] */
    float *gate, *up; /* [n_batch][ffn] */
    float *delta;  /* projection output added to x [n_batch][hidden] */
    float *scores; /* per thread: attention scores [pdi_attn_tokens][heads per KV head][n_ctx], then [PD_ATTN_BLOCK][head_dim] */
    float *rope_cos, *rope_sin; /* [n_batch][head_dim/2] */
    int32_t *chunk_pos;
    int32_t *keep, *slot; /* [n_batch]: the chunk's kept rows, ascending; each row's place among them or -1 */
    pdi_qact qact; /* activations quantized for block-quantized weights, n_batch tokens */
    pdi_qact qact_inner; /* the MLP's inner activations (ffn columns), quantized where they are made */
    pdi_seq_part *parts; /* [n_batch]: the sequences of a pass */

    /* layer states (pd_context_keep_layer_states): the residual stream after
     * each of state_layers[0..n_state_layers) for every row of the last
     * evaluation, [state_rows][n_state_layers][hidden] */
    int32_t *state_layers, n_state_layers, state_rows;
    size_t cap_states; /* floats */
    float *states;
    bool states_last; /* the last layer is one of them: the last layer carries every row */

    /* results of the last pd_eval */
    int32_t n_outputs, cap_outputs;
    float *out_hidden; /* [n_outputs][hidden] */
    float *out_logits; /* [n_outputs][vocab], NULL rows when not asked */
    int have_logits;
};

/* One sequence's share of a pass (pd_eval: one; pd_eval_many: one a
 * context): its rows of the pass context's scratch, and the context whose
 * cache they read and extend and whose outputs they fill. */
struct pdi_seq_part {
    pd_context *seq;
    const pd_batch *batch;
    int32_t row0, n_tok;   /* its rows of the pass: row0 .. row0 + n_tok */
    int32_t chunk_start;   /* the batch index of its first row */
    int32_t batch_kv0;     /* the cache's length before the batch */
    int32_t keep0, n_keep; /* its rows kept through the last layer: keep[keep0 ..] of the pass context */
};

/* Attention of layer `layer` for the pass's rows (trim: only the kept rows),
 * queries from ctx->q, keys and values from each part's cache, into ctx->att
 * (attention.c). */
void pdi_attention(pd_context *ctx, int layer, const pdi_seq_part *parts, int32_t n_parts, bool trim);

/* model_weights.c: a loaded model's float matrices quantized to blocks of type
 * q (PD_ERR_SHAPE for columns that are not whole blocks), and its block
 * matrices interleaved for the kernels (pd_model_load). */
pd_status pdi_model_quantize_weights(pd_model *m, pd_weight_quant q, pd_error *err);
void pdi_model_interleave_weights(pd_model *m);

/* matmul.c: y[t][i] = W[rows[i]] . x[t] for n_out rows (all rows of W when
 * rows is NULL) and the pass's n_tok rows, across the context's pool; qx is
 * x quantized already, or NULL to quantize here if w needs it. */
void pdi_matmul_rows(pd_context *ctx, const pdi_matrix *w, const int32_t *rows, int64_t n_out, const float *x,
                     const pdi_qact *qx, int64_t x_stride, float *y, int64_t y_stride, int64_t n_tok);
/* y = w x and its adapters' deltas. */
void pdi_matmul(pd_context *ctx, const pdi_matrix *w, const float *x, const pdi_qact *qx, int64_t x_stride, float *y,
                int64_t y_stride, int64_t n_tok);
/* y[p] = w[p] x for n matrices in one parallel loop (x quantized once for the
 * block-quantized ones), then their deltas; with swiglu (paired gate and up)
 * y[0] becomes silu(gate) * up, quantized into qout when given (returned;
 * NULL when it was not). */
const pdi_qact *pdi_matmul_fused(pd_context *ctx, int n, const pdi_matrix *const *w, float *const *y,
                                 const int64_t *y_stride, const float *x, int64_t x_stride, int64_t n_tok, bool paired,
                                 bool swiglu, pdi_qact *qout);

/* rope.c: the pass's RoPE cosines and sines, a row of the chunk's positions each. */
void pdi_rope_tables(pd_context *ctx, int32_t n_tok);
/* Row t of the pass (in part p), KV heads [g0, g1): the per-head norms and
 * RoPE of those heads' queries and keys, in place, then the keys and values
 * into p's cache at the row's position. Heads are independent: any split of
 * them gives the same bits. */
void pdi_rope_store(pd_context *ctx, int layer, const pdi_seq_part *p, int64_t t, int g0, int g1);

/* Whether attention ropes and stores part p's rows itself, a KV head an item
 * (pdi_rope_store), rather than the pass's loop over its rows before it: when
 * the part's rows make one tile and attention runs for some of them. The
 * thread that writes a head's keys and values then reads them at once, and
 * a pass of a few rows a sequence has one parallel loop less a layer (with 8
 * reviews in flight, extraction 5-8% faster). */
static inline bool pdi_rope_in_attention(const pdi_seq_part *p, int64_t n_batch, bool trim)
{
    return p->n_tok <= pdi_attn_tokens(n_batch) && (trim ? p->n_keep : p->n_tok) > 0;
}

/* The cache is position-major: the positions a sequence has used are a
 * prefix of it, so the pages they touch are few and dense (2 MiB pages where
 * the system gives them: attention reads each block once a pass, after the
 * weights have streamed through, and with 4 KiB pages its loads waited on
 * page walks). A block holds, for each layer l, the keys [kv_dim][PD_KEY_BLOCK]
 * (k_blocked: a KV head's rows g*head_dim.. are the transposed
 * [head_dim][PD_KEY_BLOCK] key_scores_t reads) or [PD_KEY_BLOCK][kv_dim],
 * then for each layer the values [PD_KEY_BLOCK][kv_dim]. */

/* Elements from one block of the cache to the next. */
static inline size_t pdi_kv_block_elems(const pd_context *ctx, int64_t kv_dim)
{
    return 2 * (size_t)ctx->model->cfg.n_layers * (size_t)kv_dim * PD_KEY_BLOCK;
}

/* Element index, from the block's start, of layer l's part of the block of position pos. */
static inline size_t pdi_kv_part(const pd_context *ctx, int64_t kv_dim, int l, int64_t pos)
{
    return (size_t)(pos / PD_KEY_BLOCK) * pdi_kv_block_elems(ctx, kv_dim) + (size_t)l * (size_t)kv_dim * PD_KEY_BLOCK;
}

/* The element index in v_cache of value element e of position pos in layer
 * l; the rows of a block's positions are kv_dim elements apart. */
static inline size_t pdi_value_at(const pd_context *ctx, int64_t kv_dim, int l, int64_t pos, int64_t e)
{
    return pdi_kv_part(ctx, kv_dim, l, pos) + (size_t)(pos % PD_KEY_BLOCK) * (size_t)kv_dim + (size_t)e;
}

/* The element index in k_cache of key element e (< kv_dim) of position pos
 * in layer l: laid out as the values, or transposed when blocked. */
static inline size_t pdi_key_at(const pd_context *ctx, int64_t kv_dim, int l, int64_t pos, int64_t e)
{
    if (!ctx->k_blocked) return pdi_value_at(ctx, kv_dim, l, pos, e);
    return pdi_kv_part(ctx, kv_dim, l, pos) + (size_t)e * PD_KEY_BLOCK + (size_t)(pos % PD_KEY_BLOCK);
}

#endif
