/* drafts.h - the loaded draft model (draft_load.c) and what its forward pass
 * (draft_forward.c) shares with it. Internal to drafts/ and its tests. */
#ifndef PD_DRAFTS_INTERNAL_H
#define PD_DRAFTS_INTERNAL_H

#include "pd_internal.h"
#include "pocketdec_drafts.h"

/* DFlash2's grouped dynamic causal convolution around a sublayer: one
 * projection gives, per row, a coefficient per side, tap and group of
 * channels (groups = hidden / group_size); side 0 convolves the sublayer's
 * input, side 1 its output:
 *     out[t][c] = sum over k < taps of (base[side][k][c] + dyn[t][side][k][c / group_size]) * in[t - k][c],
 * in[t - k] zero before the block's first row. */
/* A weight matrix [rows][cols] (out x in) as the draft holds it: in its
 * file's type, F32, F16 or BF16 (the products widen each value exactly, so
 * they give an F32 copy's results), or quantized at load (Q8_0, Q4_0:
 * pd_draft_load_quantized), then held interleaved as the kernels' integer
 * products read the target's (pdi_x_pack) when its rows are whole groups. */
typedef struct pdi_draft_matrix {
    pdi_dtype dtype;
    int64_t rows, cols;
    size_t row_bytes; /* of one plain row */
    const uint8_t *data;
    int interleave; /* rows a group; 0: rows as stored */
} pdi_draft_matrix;

typedef struct pdi_draft_conv {
    const float *base;     /* [2][taps][hidden] */
    pdi_draft_matrix proj; /* [2 * taps * groups][hidden] */
} pdi_draft_conv;

typedef struct pdi_draft_layer {
    const float *attn_norm, *ffn_norm, *q_norm, *k_norm;
    pdi_draft_matrix wq, wk, wv, wo, w_gate, w_up, w_down;
    pdi_draft_conv attn_conv, mlp_conv;                      /* DFlash2 only */
    int32_t window; /* sliding window in positions; 0: full attention */
    bool causal;    /* the block's rows see the block's earlier rows only */
} pdi_draft_layer;

struct pd_draft {
    char *source; /* the directory */
    const pd_model *target;
    pd_draft_kind kind;
    int32_t n_layers, hidden, n_heads, n_kv_heads, head_dim, ffn, vocab;
    float rms_eps, rope_theta;
    int32_t block_size, mask_id, n_targets;
    int32_t *target_layers;
    float embed_scale, output_multiplier, softcap; /* softcap 0: none */
    int32_t taps, group_size;                      /* DFlash2 convolutions */
    int32_t rank, top_k;                           /* DFlash2 selector */
    pd_weight_quant quantize;           /* how the matrices were quantized at load */
    pdi_draft_matrix fc;                /* [hidden][n_targets * hidden] */
    const float *hidden_norm, *final_norm;
    pdi_draft_matrix sel_proj;          /* [rank][hidden] */
    const float *sel_pred, *sel_succ; /* [vocab][rank] */
    pdi_draft_layer *layers;
    void **owned; /* every copy above */
    size_t n_owned, cap_owned;
};

/* The selector's greedy walk: for positions p < n, candidates[p] (top_k ids)
 * with unary scores unary[p] and projected hidden states proj[p] (rank);
 * the predecessor of position 0 is anchor, of p > 0 the token chosen at p - 1:
 * score[c] = unary[p][c] + sum over r of pred[prev][r] * proj[p][r] * succ[cand][r];
 * the first best score wins. path[p] receives the chosen ids. */
void pdi_draft_select(const pd_draft *d, const int32_t *candidates, const float *unary, const float *proj, int32_t n,
                      int32_t anchor, int32_t *path);

/* The draft a context runs. */
const pd_draft *pdi_draft_of(const pd_draft_context *dc);

#endif
