/*
 * pocketdec_drafts.h - speculative-decoding draft models of the DFlash family
 * (drafts/): DFlash and DFlash2 ("Block Diffusion for Flash Speculative
 * Decoding", z-lab), such as the MNN-Pocket-0.3B-DFlash2 draft.
 *
 * A draft is a small Qwen3-style stack with no embeddings and no LM head of
 * its own: it reads the target's token embeddings and LM head. Its keys and
 * values are, first, its context: the target's hidden states after the layers
 * pd_draft_target_layer() names, concatenated per position (HF's
 * hidden_states[layer + 1]), projected by the draft's `fc` and `hidden_norm`;
 * then the block itself: the last accepted token followed by mask tokens.
 * One non-causal pass over the block gives a proposal for each of its
 * positions after the first. DFlash2 adds a grouped dynamic causal
 * convolution around each layer's attention and MLP, and a candidate
 * selector that walks the block through the top-k tokens of each position,
 * rescored with low-rank predecessor/successor codebooks.
 *
 * Conventions (errors, memory, threads) are those of pocketdec_runtime.h. A
 * pd_draft is immutable once loaded and may be shared; a pd_draft_context
 * (the draft's cache of context keys and values) is used by one thread at a
 * time. The target model must outlive every draft loaded against it.
 */
#ifndef POCKETDEC_DRAFTS_H
#define POCKETDEC_DRAFTS_H

#include "pocketdec_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pd_draft pd_draft;
typedef struct pd_draft_context pd_draft_context;

typedef enum pd_draft_kind {
    PD_DRAFT_DFLASH = 1,  /* config.json architectures: DFlashDraftModel */
    PD_DRAFT_DFLASH2 = 2  /* DFlash2DraftModel: convolutions and a candidate selector */
} pd_draft_kind;

/* Load the draft in the HF directory dir (config.json, then model.safetensors
 * or the shards model.safetensors.index.json lists; F32, F16 or BF16) for the
 * target model. The weight matrices are kept in the file's type (the norms,
 * convolution kernels and codebooks converted to F32) and the files closed.
 * Errors name the file (and the tensor): PD_ERR_IO for a missing directory,
 * config.json or safetensors; PD_ERR_FORMAT for malformed JSON, a missing or
 * ill-typed config key, a truncated or inconsistent safetensors file;
 * PD_ERR_UNSUPPORTED for another architecture, scaled RoPE, attention bias,
 * another activation, or a tensor of another dtype; PD_ERR_SHAPE for a
 * missing tensor or one of the wrong shape, and for a draft whose hidden
 * size or vocabulary differs from the target's; PD_ERR_RANGE for a target
 * layer id outside the target's layers, a mask token outside its vocabulary,
 * or a block size, top-k or convolution size out of range. */
PD_API pd_draft *pd_draft_load(const char *dir, const pd_model *target, pd_error *err);
/* pd_draft_load with the weight matrices (fc, the layers' projections, the
 * DFlash2 convolution projections and selector projection) quantized as they
 * load: PD_QUANT_Q8_0 or PD_QUANT_Q4_0 (PD_QUANT_NONE: pd_draft_load), the
 * block types the target's integer products run, with the block rows
 * quantized on the way in. A draft's pass then reads a half or a quarter of
 * the bytes of BF16 (what a memory-bound device pays for), and its proposals
 * change a little (verification keeps the output exact). PD_ERR_ARG for
 * another type, PD_ERR_SHAPE naming the tensor for a matrix whose columns are
 * not whole blocks of 32. */
PD_API pd_draft *pd_draft_load_quantized(const char *dir, const pd_model *target, pd_weight_quant quantize,
                                         pd_error *err);
PD_API void pd_draft_free(pd_draft *draft);

PD_API pd_draft_kind pd_draft_get_kind(const pd_draft *draft);
/* Tokens a block holds (dflash_config.block_size): the last accepted token
 * and block_size - 1 proposals. */
PD_API int32_t pd_draft_block_size(const pd_draft *draft);
/* The id the block's positions after the first hold (dflash_config.mask_token_id). */
PD_API int32_t pd_draft_mask_id(const pd_draft *draft);
/* How many target layers feed the draft, and the i-th of them (0-based
 * target layer index; its hidden state is the output of that layer), or -1
 * when i is out of range. */
PD_API int32_t pd_draft_n_target_layers(const pd_draft *draft);
PD_API int32_t pd_draft_target_layer(const pd_draft *draft, int32_t i);
/* Floats of one position's context features: n_target_layers x hidden. */
PD_API int32_t pd_draft_feature_size(const pd_draft *draft);
/* The target the draft was loaded for. */
PD_API const pd_model *pd_draft_target(const pd_draft *draft);

/* A draft context: the keys and values of up to n_ctx context positions
 * (positions 0, 1, ... in the order appended), and the scratch of one block
 * on n_threads threads (0: pd_cpu_count()). It also holds a small context of
 * the target (for its LM head). PD_ERR_ARG for n_ctx < 1, PD_ERR_RANGE for
 * more positions than the target's max_positions. */
PD_API pd_draft_context *pd_draft_context_new(const pd_draft *draft, int32_t n_ctx, int32_t n_threads,
                                              pd_error *err);
PD_API void pd_draft_context_free(pd_draft_context *dc);

/* Context positions held, and forgetting those past the first n (n <= len),
 * as pd_context_kv_truncate does for the target. */
PD_API int32_t pd_draft_context_len(const pd_draft_context *dc);
PD_API pd_status pd_draft_context_truncate(pd_draft_context *dc, int32_t n, pd_error *err);

/* Append n context positions: features holds n rows of
 * pd_draft_feature_size() floats, row t the target's hidden states at
 * position len + t after each of the draft's target layers, in their order.
 * PD_ERR_CONTEXT when they do not fit (nothing appended). */
PD_API pd_status pd_draft_context_append(pd_draft_context *dc, const float *features, int32_t n, pd_error *err);

/* Draft one block: block[0..n_block) at positions len, len + 1, ... (block[0]
 * the last accepted token, whose features are not in the context yet; the
 * others normally the mask id), 2 <= n_block <= block size. The context is
 * not changed. tokens[0..n_block-1) receives the proposals for positions 1
 * .. n_block-1: each position's argmax (DFlash), or the candidate selector's
 * greedy path (DFlash2). logits (may be NULL) receives the draft's logits
 * for those positions, n_block - 1 rows of the vocabulary, after
 * output_multiplier and final_logit_softcapping. PD_ERR_ARG for a bad size
 * or a NULL buffer, PD_ERR_RANGE for an id outside the vocabulary. */
PD_API pd_status pd_draft_propose(pd_draft_context *dc, const int32_t *block, int32_t n_block, int32_t *tokens,
                                  float *logits, pd_error *err);

/* What a speculative generation did. */
typedef struct pd_draft_stats {
    int32_t passes;   /* target passes after the prompt's: one a block verified */
    int32_t drafted;  /* tokens the draft proposed */
    int32_t accepted; /* of those, the ones the target's greedy choice confirmed */
    int32_t produced; /* tokens generated (stop tokens not counted) */
} pd_draft_stats;

/* pd_generate with the draft proposing, greedy: the same text, token for
 * token, and the same tokens left in ctx's cache, as pd_generate with the
 * same ctx and params (whose prompt, chat, max_tokens, stop tokens, callback
 * and errors it shares). The target evaluates the prompt keeping the
 * draft's layer states (pd_context_keep_layer_states; turned off again on
 * return), then each pass verifies a block: the last token, then the
 * draft's proposals for the next block - 1 positions; the proposals that
 * equal the target's greedy choices are kept, with the target's token after
 * them, and both caches are cut back to what was kept. block: tokens a
 * block (2 to the draft's block size), 0 for the draft's block size. dc is
 * a context of a draft loaded for ctx's model; it is emptied first (the
 * draft sees only this prompt and what follows); when its positions run
 * out, the rest is decoded a token at a time. With a sampler
 * (temperature > 0) a proposal is kept when the target's sample at its row
 * is the proposal, else that sample ends the pass: the speculative
 * acceptance rule for a draft that proposes one token a position, and with
 * pd_generate's seeded stream the text is pd_generate's for the same seed.
 * stats may be NULL. PD_ERR_ARG for a draft of another model or
 * a bad block size. */
PD_API pd_status pd_draft_generate(pd_context *ctx, pd_draft_context *dc, const char *prompt,
                                   const pd_generate_params *params, int32_t block, pd_token_callback callback,
                                   void *user, char **text, pd_draft_stats *stats, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_DRAFTS_H */
