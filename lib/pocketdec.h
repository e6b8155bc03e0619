/*
 * pocketdec.h - the one public header of libpocketdec.
 *
 * pocketdec runs Qwen3 decoders of the MNN-Pocket-0.3B family on the CPU.
 *
 * Conventions (as in SQLite and jansson):
 *   - Handles are opaque. A pd_model is immutable once loaded and may be shared
 *     read-only by any number of pd_context objects in any threads; a
 *     pd_context is used by one thread at a time.
 *   - Every call that can fail takes a pd_error * (may be NULL) and returns a
 *     pd_status (0 = PD_OK) or NULL. On failure err->code holds the status and
 *     err->message a one-line text that names the file and the problem.
 *   - Memory returned to the caller is released with pd_free().
 *   - There is no global mutable state.
 */
#ifndef POCKETDEC_H
#define POCKETDEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD_VERSION "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum pd_status {
    PD_OK = 0,
    PD_ERR_IO = 1,          /* a file is missing or cannot be read */
    PD_ERR_FORMAT = 2,      /* a file is malformed, truncated or inconsistent */
    PD_ERR_UNSUPPORTED = 3, /* valid input that pocketdec does not handle (architecture, dtype) */
    PD_ERR_SHAPE = 4,       /* a tensor has the wrong shape or is missing */
    PD_ERR_RANGE = 5,       /* an id, index or length is out of range */
    PD_ERR_NOMEM = 6,       /* an allocation failed */
    PD_ERR_ARG = 7,         /* an invalid argument (NULL, zero size, bad option) */
    PD_ERR_CONTEXT = 8,     /* the context (KV cache) is full */
    PD_ERR_INTERNAL = 9,    /* a bug: please report it */
    PD_ERR_LIMIT = 10       /* a limit would be exceeded: a PD_MAX_* constant, a schema's limits, or the
                               caller's memory budget; checked before the work starts (nothing changed) */
} pd_status;

#define PD_ERROR_MESSAGE_SIZE 512

typedef struct pd_error {
    pd_status code;
    char message[PD_ERROR_MESSAGE_SIZE];
} pd_error;

/* A short constant name for a status ("format error", ...). */
const char *pd_status_name(pd_status code);

/* Release memory that pocketdec returned to the caller. NULL is fine. */
void pd_free(void *ptr);

/* --------------------------------------------------------------- tokenizer */

typedef struct pd_tokenizer pd_tokenizer;

/* Load an HF tokenizer.json (byte-level BPE, NFC normalizer, Split regex
 * pre-tokenizer, added tokens). */
pd_tokenizer *pd_tokenizer_load(const char *path, pd_error *err);
void pd_tokenizer_free(pd_tokenizer *tok);

/* Number of ids (vocabulary plus added tokens, i.e. max id + 1). */
int32_t pd_tokenizer_n_vocab(const pd_tokenizer *tok);

/* Encode UTF-8 text (special/added tokens written inline are recognised).
 * On success *ids is a pd_free()-able array of *n_ids ids. Invalid UTF-8 in
 * the text is refused with PD_ERR_FORMAT. */
pd_status pd_tokenizer_encode(const pd_tokenizer *tok, const char *text, size_t text_len,
                              int32_t **ids, size_t *n_ids, pd_error *err);

/* Encode UTF-8 text as plain text: normalised and split like
 * pd_tokenizer_encode, but no added token is recognised, so "<|im_end|>"
 * written in the text becomes the ids of its bytes. For untrusted text. */
pd_status pd_tokenizer_encode_plain(const pd_tokenizer *tok, const char *text, size_t text_len,
                                    int32_t **ids, size_t *n_ids, pd_error *err);

/* Decode ids to bytes (not necessarily valid UTF-8: a token may hold part of a
 * character). *text is pd_free()-able and NUL-terminated; *text_len excludes
 * the NUL. Out-of-range ids give PD_ERR_RANGE. */
pd_status pd_tokenizer_decode(const pd_tokenizer *tok, const int32_t *ids, size_t n_ids,
                              char **text, size_t *text_len, pd_error *err);

/* The raw bytes a token stands for (after the byte-level mapping is undone).
 * Returns NULL for an out-of-range id. The pointer lives as long as tok. */
const char *pd_tokenizer_token_bytes(const pd_tokenizer *tok, int32_t id, size_t *len);

/* Id of a token written exactly as in the vocabulary or added tokens
 * (e.g. "<|im_end|>"), or -1. */
int32_t pd_tokenizer_token_id(const pd_tokenizer *tok, const char *token);

/* Whether id is a special added token (skipped by nothing, but useful to UIs). */
int pd_tokenizer_is_special(const pd_tokenizer *tok, int32_t id);

/* The columns UTF-8 text takes in a terminal, for padding tables of labels:
 * East Asian wide and fullwidth characters (Chinese) count 2, combining marks
 * and other zero-width characters 0, the rest 1 (utf8proc's widths); each
 * invalid byte counts 1. Stops at len bytes or at a NUL. */
size_t pd_text_width(const char *text, size_t len);

/* ------------------------------------------------------------------- model */

typedef struct pd_model pd_model;

/* Dimensions of a Qwen3 model, from config.json or GGUF metadata. */
typedef struct pd_config {
    int32_t n_layers;
    int32_t hidden;        /* hidden_size */
    int32_t n_heads;       /* num_attention_heads */
    int32_t n_kv_heads;    /* num_key_value_heads */
    int32_t head_dim;
    int32_t ffn;           /* intermediate_size */
    int32_t vocab;         /* rows of the embedding matrix */
    int32_t max_positions; /* max_position_embeddings / context_length */
    float rope_theta;
    float rms_eps;
    int tied_embeddings;   /* 1 when the LM head is the embedding matrix */
    int32_t bos_id, eos_id; /* -1 when unknown */
} pd_config;

/* How a model holds its block-quantized weights once loaded. */
typedef enum pd_weight_layout {
    /* The kernels' faster layout where they have one, else the file's. Today
     * every kernel set (AVX-512 VNNI, AVX2, NEON, portable) has one for the
     * block types Q8_0, Q4_0, Q4_1 and Q4_64: those matrices of the layers and of
     * the LM head are interleaved (sixteen rows at a time for AVX-512 VNNI,
     * eight for AVX2, four for NEON and portable) into memory of the model's own (the same number of bytes; the file's pages for them are
     * given back as they are packed), which speeds up prefill and decode. The
     * results differ from PD_LAYOUT_FILE's only in the rounding of the sums. */
    PD_LAYOUT_AUTO = 0,
    PD_LAYOUT_FILE = 1 /* every weight read in place from the mapped file */
} pd_weight_layout;

/* Quantizing float weights as they load (an HF directory of BF16/F16/F32,
 * or a float GGUF): every layer matrix, the LM head and the token
 * embeddings become blocks. Q8_0, Q4_0 and Q4_1 are blocks of 32 made with
 * ggml's quantize_row_*_ref arithmetic, the bytes `pocketdec quantize`
 * writes, so the model computes what loading that file computes. Q4_64 is
 * MNN's W4A16 layout: 4 bits with a scale and a minimum per block of 64
 * (Q4_1's arithmetic over 64 weights: 4.5 bits a weight, Q4_0's size with
 * Q4_1's asymmetric range); it exists only in memory, no file holds it.
 * Their file pages are given back as each matrix is done. Matrices already
 * block-quantized stay as they are; columns that are not whole blocks (of
 * 32, or 64 for Q4_64) fail the load with PD_ERR_SHAPE. */
typedef enum pd_weight_quant {
    PD_QUANT_NONE = 0, /* every weight as stored */
    PD_QUANT_Q8_0 = 1,
    PD_QUANT_Q4_0 = 2,
    PD_QUANT_Q4_1 = 3,
    PD_QUANT_Q4_64 = 4
} pd_weight_quant;

typedef struct pd_model_params {
    pd_weight_layout layout; /* zero-initialised: PD_LAYOUT_AUTO */
    pd_weight_quant quantize; /* zero-initialised: PD_QUANT_NONE */
} pd_model_params;

/* Load a model: an HF directory (config.json + model.safetensors or a sharded
 * model.safetensors.index.json, tokenizer.json optional) or a .gguf file.
 * Weights are mmapped. params may be NULL.
 *
 * Kernels: each load chooses the numeric inner loops for the CPU it runs
 * on, the first this CPU has of AVX-512 VNNI and AVX2 (with FMA and F16C)
 * on x86-64, NEON on aarch64 (SDOT when the build targets a CPU with it),
 * else portable C; pd_model_info_json names the choice ("kernels"). The
 * environment variable PD_KERNELS, read at each load, forces one:
 * PD_KERNELS=portable the portable C loops, PD_KERNELS=avx2 the AVX2 ones
 * on a CPU with AVX-512 (on a CPU without AVX2 it is as if unset); other
 * values are ignored. The sets differ in speed and in the rounding of sums
 * only. */
pd_model *pd_model_load(const char *path, const pd_model_params *params, pd_error *err);
void pd_model_free(pd_model *model);

const pd_config *pd_model_config(const pd_model *model);

/* The tokenizer that came with the model, or NULL when there is none. */
const pd_tokenizer *pd_model_tokenizer(const pd_model *model);

/* Writes a JSON object describing the model (architecture, dimensions,
 * dtypes, parameter count, source). pd_free() the result. */
char *pd_model_info_json(const pd_model *model);

/* What pd_model_quantize wrote. */
typedef struct pd_quantize_stats {
    int32_t n_tensors; /* tensors in the file */
    uint64_t n_bytes;  /* the file's size */
} pd_quantize_stats;

/* Write the HF model directory hf_dir (config.json, safetensors of F32, F16
 * or BF16, tokenizer.json) as one GGUF v3 file at path that pocketdec and
 * llama.cpp load, its matrices and token embedding of type PD_QUANT_Q8_0,
 * PD_QUANT_Q4_0 or PD_QUANT_Q4_1 (as llama.cpp's llama_model_quantize
 * writes a GGUF file from another). Rows are quantized with ggml's
 * reference arithmetic, so the file holds the bytes llama.cpp's quantizer
 * writes from the same values and computes what loading hf_dir with that
 * pd_model_params.quantize computes; norms stay F32. The metadata holds the
 * qwen3.* dimensions, the vocabulary of tokenizer.json and the chat_template
 * of tokenizer_config.json when there is one. stats (may be NULL) receives
 * what was written. Errors name the file: PD_ERR_ARG for a NULL path or a
 * type other than those three, PD_ERR_UNSUPPORTED for PD_QUANT_Q4_64 (no
 * GGUF type holds it); what pd_model_load gives for the directory; PD_ERR_IO
 * without tokenizer.json, PD_ERR_FORMAT when it is not a byte-level BPE
 * tokenizer; PD_ERR_SHAPE for rows that are not whole blocks of 32;
 * PD_ERR_IO when path cannot be created or written. Every failure but a
 * failed write comes before path is opened, so a file already there stays
 * as it was; a failed write removes the file. */
pd_status pd_model_quantize(const char *hf_dir, const char *path, pd_weight_quant type, pd_quantize_stats *stats,
                            pd_error *err);

/* ----------------------------------------------------------------- context */

typedef struct pd_context pd_context;

/* How the KV cache stores keys and values. AUTO: F16 when the model's weights
 * are block-quantized (Q8_0, Q4_0, Q4_1: their rounding is far larger than
 * F16's, and the cache is half the size and half the bytes a decode step
 * reads), F32 otherwise (float weights keep float32 agreement). */
typedef enum pd_kv_type { PD_KV_AUTO = 0, PD_KV_F32 = 1, PD_KV_F16 = 2 } pd_kv_type;

typedef struct pd_context_params {
    int32_t n_ctx;     /* KV cache length in tokens; 0 = min(model max, 4096) */
    int32_t n_threads; /* threads, the caller's included; 0 = 1; at most pd_cpu_count() run */
    int32_t n_batch;   /* tokens per prefill chunk; 0 = 256 */
    size_t max_bytes;  /* memory budget of the context (KV cache, scratch, kept outputs); 0 = none */
    pd_kv_type kv_type; /* KV cache element type; PD_KV_AUTO (0) as above */
} pd_context_params;

pd_context_params pd_context_default_params(void);

/* The cores this process may run on (its CPU affinity, as taskset or a
 * container sets it), at least 1: a good n_threads. Contexts never run more
 * threads than this (more would wait on each other's time slices). */
int32_t pd_cpu_count(void);

/* Bytes a context with these parameters allocates when created: the KV cache
 * (2 x layers x n_ctx x kv_heads x head_dim elements of 4 bytes, or 2 for an
 * F16 cache) plus the scratch of one
 * prefill chunk. pd_eval adds the kept outputs (hidden size, and the
 * vocabulary when logits are asked, floats per kept row). 0 when the
 * parameters are invalid or the size overflows. */
size_t pd_context_bytes(const pd_model *model, const pd_context_params *params);

/* A context over model. n_ctx above the model's positions gives PD_ERR_RANGE;
 * with a budget (max_bytes > 0), a context that needs more than it gives
 * PD_ERR_LIMIT with both sizes in the message, before anything is allocated;
 * and a later pd_eval whose kept outputs would take the context over its
 * budget gives PD_ERR_LIMIT and leaves the cache as it was. */
pd_context *pd_context_new(const pd_model *model, const pd_context_params *params, pd_error *err);
void pd_context_free(pd_context *ctx);

/* A new context holding a copy of ctx's KV cache (a shared prefix evaluated
 * once, continued several ways). */
pd_context *pd_context_fork(const pd_context *ctx, pd_error *err);

/* Tokens currently in the KV cache. */
int32_t pd_context_kv_len(const pd_context *ctx);
int32_t pd_context_n_ctx(const pd_context *ctx);
/* The KV cache's element type, PD_KV_AUTO resolved (PD_KV_F32 or PD_KV_F16). */
pd_kv_type pd_context_kv_type(const pd_context *ctx);

/* Forget the cache past its first n tokens (n <= kv_len). */
pd_status pd_context_kv_truncate(pd_context *ctx, int32_t n, pd_error *err);

/* One evaluation step: tokens appended to the KV cache and run through the
 * trunk. A batch longer than the free part of the cache gives PD_ERR_CONTEXT;
 * more kept rows than tokens gives PD_ERR_LIMIT. Every token sees the whole
 * cache that was there before the batch.
 * Within the batch it sees the tokens that `visible` allows (row-major
 * n_tokens x n_tokens bytes, visible[i*n+j] != 0 when token i may attend to
 * token j; j == i must be allowed) or, when visible is NULL, itself and the
 * tokens before it (causal). positions NULL means kv_len, kv_len+1, ... */
typedef struct pd_batch {
    const int32_t *tokens;
    int32_t n_tokens;
    const int32_t *positions;  /* may be NULL */
    const uint8_t *visible;    /* may be NULL */
    const int32_t *outputs;    /* batch rows whose hidden state to keep */
    int32_t n_outputs;         /* 0 with outputs NULL: keep the last row only */
    int want_logits;           /* also compute full logits for the kept rows */
} pd_batch;

pd_status pd_eval(pd_context *ctx, const pd_batch *batch, pd_error *err);

/* Convenience: causal evaluation of ids, keeping logits of the last token. */
pd_status pd_eval_tokens(pd_context *ctx, const int32_t *ids, int32_t n_ids, pd_error *err);

/* Results of the last pd_eval, for its i-th kept row (0 <= i < n_outputs).
 * Pointers stay valid until the next pd_eval on ctx. */
int32_t pd_context_n_outputs(const pd_context *ctx);
const float *pd_context_hidden(const pd_context *ctx, int32_t i);  /* [hidden], final-norm */
const float *pd_context_logits(const pd_context *ctx, int32_t i);  /* [vocab] or NULL */

/* Logits of chosen vocabulary rows only, from the i-th kept hidden state: out[k]
 * = logit of rows[k]. Reads just those rows of the LM head (sparse head). */
pd_status pd_context_logits_rows(pd_context *ctx, int32_t i, const int32_t *rows, int32_t n_rows,
                                 float *out, pd_error *err);

/* -------------------------------------------------------------- generation */

typedef struct pd_sampler_params {
    float temperature;  /* <= 0: greedy */
    int32_t top_k;      /* <= 0: off */
    float top_p;        /* >= 1: off */
    uint64_t seed;
} pd_sampler_params;

pd_sampler_params pd_sampler_default_params(void); /* greedy */

/* Pick a token from logits[n_vocab] (mask: NULL or n_vocab bytes, 0 = banned).
 * *rng_state carries the random stream between calls (seed it with
 * params->seed). Returns the id, or -1 when every token is banned. */
int32_t pd_sample(const float *logits, int32_t n_vocab, const uint8_t *mask,
                  const pd_sampler_params *params, uint64_t *rng_state);

typedef struct pd_generate_params {
    pd_sampler_params sampler;
    int32_t max_tokens;  /* 0 = until a stop token or the context ends */
    int chat;            /* wrap the prompt as a ChatML user turn */
} pd_generate_params;

/* Per-token callback; return non-zero to stop. */
typedef int (*pd_token_callback)(int32_t id, const char *piece, size_t piece_len, void *user);

/* Tokenize prompt with the model's tokenizer, evaluate it, and generate until
 * EOS/<|im_end|>/max_tokens. *text (may be NULL) receives the generated bytes,
 * pd_free()-able. */
pd_status pd_generate(pd_context *ctx, const char *prompt, const pd_generate_params *params,
                      pd_token_callback callback, void *user, char **text, pd_error *err);

/* ChatML form of one user message followed by the assistant turn header. */
char *pd_chatml_user(const char *message);

/* ---------------------------------------------------------------- adapters */

/* PEFT LoRA adapters, applied exactly as PEFT defines them: W' = W + scale * B A
 * with scale = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora), on any
 * of the q, k, v, o, gate, up and down projections of any layers. Applying
 * adapters makes a new model that shares the base's mapped weights; the base
 * is never modified, so freeing the adapted model ("unmerge") leaves the base
 * exactly as loaded, and switching adapters is applying another set to the
 * same base (no reload). */
typedef struct pd_adapter pd_adapter;

/* Load a PEFT directory: adapter_config.json (peft_type "LORA", r, lora_alpha,
 * use_rslora, target_modules) and adapter_model.safetensors (keys with or
 * without the "base_model.model." prefix and with or without an adapter name,
 * "lora_A.default.weight"). What PEFT can write but pocketdec cannot apply
 * exactly is refused with PD_ERR_UNSUPPORTED: DoRA, LoRA biases,
 * modules_to_save, rank_pattern/alpha_pattern, fan_in_fan_out, layer
 * replication, embedding or lm_head targets. A lora_A without its lora_B, or
 * a rank other than r, gives PD_ERR_SHAPE naming the tensor. */
pd_adapter *pd_adapter_load(const char *dir, pd_error *err);
void pd_adapter_free(pd_adapter *adapter);

/* r, the scale (lora_alpha / r or lora_alpha / sqrt(r)), the number of
 * adapted matrices, and base_model_name_or_path ("" when absent); 0 or ""
 * for a NULL adapter. */
int32_t pd_adapter_rank(const pd_adapter *adapter);
float pd_adapter_scale(const pd_adapter *adapter);
size_t pd_adapter_n_targets(const pd_adapter *adapter);
const char *pd_adapter_base_model(const pd_adapter *adapter);

typedef enum pd_apply_mode {
    /* merge into F32 copies the matrices stored as F32; add the others' B (A x)
     * at runtime (16-bit and quantized bases: no copy, no re-rounding of
     * weights, e.g. of quantization-aware-trained 4-bit ones) */
    PD_APPLY_AUTO = 0,
    PD_APPLY_MERGE = 1,   /* every adapted matrix becomes an F32 copy W + scale B A */
    PD_APPLY_RUNTIME = 2  /* no copies: y = W x + scale B (A x) */
} pd_apply_mode;

/* A model with adapters[0..n) applied on top of base, adapter i scaled by
 * weights[i] (weights NULL: all 1); adapters of one matrix add up. base must
 * outlive the result; the adapters need not (their tensors are copied). Free
 * the result with pd_model_free (before base). Like a loaded model it is
 * immutable and may be shared by contexts in any threads. Shapes that do not
 * fit the base (another hidden size, a layer the base lacks) give
 * PD_ERR_SHAPE naming the tensor and both shapes; a rank above 1024 applied at
 * runtime gives PD_ERR_UNSUPPORTED. */
pd_model *pd_model_apply_adapters(const pd_model *base, const pd_adapter *const *adapters, const float *weights,
                                  size_t n, pd_apply_mode mode, pd_error *err);

/* ------------------------------------------------------------ decision heads */

/* Score label candidates for a text in one forward pass, without generating.
 *
 * Prompt (marker tokens named in head.json; these are the defaults):
 *   <|fim_prefix|>{text}<|fim_middle|>{question}
 *   <|box_start|>{candidate}<|box_end|>   ... once per candidate
 *   <|fim_suffix|>                        the query token
 * Pointer head: q = Wq h[query] + bq, k_i = Wk h[end marker of i] + bk,
 * score_i = q.k_i / sqrt(head_dim) / temperature, prob = softmax(scores).
 * Classifier head: the candidates are not in the prompt (text, question,
 * suffix); score_l = (W h[query] + b)_l / temperature over the head's labels.
 * No head (LM verbalizer): score_i = sum of log p(candidate token | prompt and
 * the candidate's earlier tokens) under the LM, prob = softmax(scores).
 *
 * Layouts: sequential (candidates follow each other; what the pointer heads
 * that llama.cpp converts were trained on) or parallel (each candidate sees
 * the prefix and itself only, positions restart after the prefix, the query
 * token sees everything and sits at prefix + total candidate tokens, so
 * scores do not depend on the order of the candidates). Either way a
 * decision is one pd_eval. Text and candidates are tokenized as plain text,
 * but special tokens written inline are recognised (do not pass untrusted
 * text containing marker tokens). */

typedef struct pd_head pd_head;

typedef enum pd_head_type {
    PD_HEAD_POINTER = 0,
    PD_HEAD_CLASSIFIER = 1,
    PD_HEAD_VERBALIZER = 2,
    PD_HEAD_TAGGER = 3 /* extraction by decisions: see pd_tag_extractor_new */
} pd_head_type;
typedef enum pd_layout { PD_LAYOUT_DEFAULT = 0, PD_LAYOUT_SEQUENTIAL = 1, PD_LAYOUT_PARALLEL = 2 } pd_layout;

/* Load a head directory (head.json + head.safetensors) and check it against
 * model: tensor shapes vs the hidden size, marker tokens in the model's
 * vocabulary (a tagger head has no markers; its fields are checked against a
 * schema by pd_tag_extractor_new). The head keeps no reference to model; it is immutable and may
 * be shared by any number of deciders in any threads. */
pd_head *pd_head_load(const char *dir, const pd_model *model, pd_error *err);
/* Release a head (NULL is fine); no decider may still use it. */
void pd_head_free(pd_head *head);
/* PD_HEAD_POINTER, PD_HEAD_CLASSIFIER or PD_HEAD_TAGGER. */
pd_head_type pd_head_get_type(const pd_head *head);
/* A classifier's labels (NULL for a pointer head); *n receives their number. */
const char *const *pd_head_labels(const pd_head *head, int32_t *n);

typedef struct pd_decider_params {
    pd_layout layout;  /* DEFAULT: the head's layout (sequential without a head) */
    int32_t n_threads; /* 0 = 1 */
    int32_t n_ctx;     /* 0 = min(model max, 4096) */
    size_t max_bytes;  /* memory budget of the decider's context (see pd_context_params); 0 = none */
} pd_decider_params;

/* The most candidates one decision scores (and the most labels a classifier
 * head may have): more give PD_ERR_LIMIT before anything is tokenized. */
#define PD_MAX_CANDIDATES 4096

/* Layout DEFAULT, one thread, the default context length. */
pd_decider_params pd_decider_default_params(void);

/* A decider: one context over model plus a head (NULL: LM verbalizer).
 * Use one per thread; model and head are only read. A tagger head is refused
 * with PD_ERR_ARG (it extracts records: pd_tag_extractor_new). */
typedef struct pd_decider pd_decider;
pd_decider *pd_decider_new(const pd_model *model, const pd_head *head, const pd_decider_params *params,
                           pd_error *err);
/* Release a decider and its context (NULL is fine). */
void pd_decider_free(pd_decider *d);

/* Prefix reuse: evaluate "<|fim_prefix|>{text}<|fim_middle|>" once; later
 * pd_decide calls with text NULL start from it (the cache past it is dropped
 * before each decision). text NULL forgets the document. */
pd_status pd_decider_set_text(pd_decider *d, const char *text, pd_error *err);
/* A new decider (e.g. for another thread) holding a copy of d's document. */
pd_decider *pd_decider_fork(const pd_decider *d, pd_error *err);

typedef struct pd_decision {
    int32_t n_candidates;
    float *probs;          /* [n_candidates], softmax of scores */
    float *scores;         /* [n_candidates], raw scores */
    float *mean_logprob;   /* [n_candidates], verbalizer only (else NULL) */
    int32_t *label_index;  /* [n_candidates], classifier: index in the head's labels (else NULL) */
    int32_t forward_passes;  /* pd_eval calls made by this decision (1) */
    int32_t prompt_tokens;   /* tokens of the whole prompt, document included */
    int32_t *tokens;       /* [prompt_tokens] the prompt's ids */
    int32_t *positions;    /* [prompt_tokens] their RoPE positions */
    int32_t query_index;   /* index in tokens of the query token (-1 for the verbalizer) */
    int32_t *key_index;    /* [n_candidates] pointer: index of each end marker; verbalizer: first token (else NULL) */
} pd_decision;

/* Score candidates (1 <= n_candidates <= PD_MAX_CANDIDATES; for a classifier,
 * 0 means all its labels, otherwise each candidate must be one of its labels)
 * in one pd_eval. A prompt longer than the decider's context gives
 * PD_ERR_CONTEXT before the model runs.
 * text NULL reuses the document: the text of pd_decider_set_text or of the
 * last successful pd_decide (its cache is kept), so only the question and
 * candidates are evaluated. On success *out is a decision to release with
 * pd_decision_free. */
pd_status pd_decide(pd_decider *d, const char *text, const char *question, const char *const *candidates,
                    int32_t n_candidates, pd_decision **out, pd_error *err);
/* Release a decision and its arrays (NULL is fine). */
void pd_decision_free(pd_decision *dec);

/* pd_eval calls made by d since it was created (a document counts one). */
int64_t pd_decider_forward_passes(const pd_decider *d);


/* -------------------------------------------------------------- extraction */

/* Schema-bound extraction: generation under a token mask so that the output
 * always parses into records that obey a YAML schema (spans copied verbatim
 * from the input text or `_`, enum values from closed sets, PCRE2 patterns),
 * whatever the weights. See schemas/tianchi-makeup.yaml for the format. */

typedef struct pd_schema pd_schema;

/* Read a schema file. Errors name the file, line and column (PD_ERR_FORMAT). */
pd_schema *pd_schema_load(const char *path, pd_error *err);
/* Same from YAML text in memory; name is used in messages (NULL: "<memory>"). */
pd_schema *pd_schema_parse(const char *yaml, size_t len, const char *name, pd_error *err);
void pd_schema_free(pd_schema *schema);
int32_t pd_schema_n_fields(const pd_schema *schema);
const char *pd_schema_field_name(const pd_schema *schema, int32_t i); /* NULL when out of range */
/* Candidates of the schema's decide section (see pd_extraction_decide); 0 when it has none. */
int32_t pd_schema_n_candidates(const pd_schema *schema);

/* A schema bound to a model's vocabulary (a trie of every token's bytes).
 * Immutable: share it between contexts and threads. model and schema must
 * outlive it. */
typedef struct pd_extractor pd_extractor;

pd_extractor *pd_extractor_new(const pd_model *model, const pd_schema *schema, pd_error *err);
void pd_extractor_free(pd_extractor *ex);

typedef struct pd_extract_params {
    pd_sampler_params sampler; /* greedy by default */
    int32_t max_records;       /* 0: the schema's limit (limits.max_records); more: PD_ERR_LIMIT */
    int32_t max_tokens;        /* 0: the schema's limit (limits.max_tokens); more: PD_ERR_LIMIT */
    int32_t sparse_head;       /* -1 auto (sparse when the allowed set is small), 0 never, 1 always */
} pd_extract_params;

pd_extract_params pd_extract_default_params(void);

/* One record: n_fields NUL-terminated values in schema order; "_" for an
 * empty field. */
typedef struct pd_record {
    char **values;
} pd_record;

typedef enum pd_extract_stop {
    PD_STOP_END = 0,     /* the model ended the output */
    PD_STOP_RECORDS = 1, /* max_records reached */
    PD_STOP_TOKENS = 2,  /* max_tokens reached (an unfinished record is dropped) */
    PD_STOP_CONTEXT = 3, /* the context is full (an unfinished record is dropped) */
    PD_STOP_REPEAT = 4   /* distinct_records: the model repeated a record (dropped) */
} pd_extract_stop;

typedef struct pd_extraction {
    int32_t n_fields, n_records;
    pd_record *records;
    int32_t n_prompt_tokens, n_tokens; /* prompt length; tokens generated */
    pd_extract_stop stop;
    int32_t n_sparse;                  /* steps that used the sparse LM head */
    double *mask_us;                   /* [n_tokens + 1] time to compute each step's token set, microseconds */
} pd_extraction;

/* Extract records from text (valid UTF-8; an empty text gives no records
 * without running the model). The context's cache is cleared first. A
 * prompt longer than the context gives PD_ERR_CONTEXT; params asking more
 * records or tokens than the schema's limits give PD_ERR_LIMIT, negative ones
 * PD_ERR_ARG, before anything runs (an empty text checks params alone).
 * *out is freed with pd_extraction_free. */
pd_status pd_extract(pd_context *ctx, const pd_extractor *ex, const char *text, size_t len,
                     const pd_extract_params *params, pd_extraction **out, pd_error *err);
void pd_extraction_free(pd_extraction *x);

/* Relabel x with a decision head, for a schema with a `decide` section
 * (question and candidate templates over its fields, e.g. question
 * "aspect: {aspect}; opinion: {opinion}", candidate "{category}/{polarity}"):
 * the candidates are every combination of the enum fields the candidate
 * template names; for each record of x, d is asked the question filled from
 * the record (one pd_decide a record, text evaluated once and reused) and
 * those fields take the values of the most probable candidate. With the
 * schema's distinct_records, records that become equal to an earlier one are
 * dropped. text (NUL-terminated) is the text x was extracted from; d's
 * document is replaced by it. No records: no model call. On error x keeps
 * the records relabelled so far. */
pd_status pd_extraction_decide(pd_decider *d, const pd_schema *schema, const char *text, pd_extraction *x,
                               pd_error *err);

typedef enum pd_record_format {
    PD_FORMAT_TIANCHI = 0, /* CSV rows "id,<print.csv fields>" (RFC 4180 quoting); "id,_,..,_" for none */
    PD_FORMAT_JSONL = 1    /* one line {"id": id, "records": [{field: value, ...}, ...]} */
} pd_record_format;

/* Print x for input id in the given form. *text is pd_free()-able and
 * NUL-terminated; *len (may be NULL) excludes the NUL. x may be NULL (no
 * records). */
pd_status pd_extraction_format(const pd_schema *schema, const pd_extraction *x, const char *id, pd_record_format fmt,
                               char **text, size_t *len, pd_error *err);

/* -------------------------------------------- extraction by decisions (tagger) */

/* Records from one forward pass, for small models: no generation. A tagger
 * head (head.json "type": "tagger") names its prompt, e.g.
 *   <|fim_prefix|>{text}<|fim_middle|>{text}<|fim_suffix|>
 * (literal parts tokenized with special tokens recognised, each {text} the
 * text alone by pd_tokenizer_encode_plain), so the last copy of the text, the
 * read copy, is read by a causal trunk that has seen the whole text. One
 * pd_eval keeps the final-norm hidden states h_i of the read copy; then
 *   1. emissions e_i[t] = tag.weight[t] . h_i + tag.bias[t] over the tags
 *      O, B-<span 1>, I-<span 1>, B-<span 2>, I-<span 2>;
 *   2. the best tag sequence (start, emissions, transitions, end) in which I-f
 *      follows only B-f or I-f, and a token that does not start a UTF-8
 *      character continues its predecessor (I-f after B-f/I-f, else O); ties
 *      go to the smaller tag index;
 *   3. each run B-f I-f* is a span of field f (its bytes those of its tokens),
 *      represented by h at its last token;
 *   4. each span of the link's `from` field picks among the `to` spans (text
 *      order) and "none": q . k / sqrt(d), ties to the earlier;
 *   5. records: one per `from` span in text order (partner or `_`, span), then
 *      one per `to` span that no `from` span chose (span, `_`);
 *   6. each record's label class: argmax of label.weight [x_1; x_2] +
 *      label.bias, x_k the hidden state of its span of field k or label.none
 *      for `_`; the label fields take that class's values;
 *   7. records stably sorted by the first token of their earliest span; with
 *      the schema's distinct_records, repeats of an earlier record dropped.
 * Fields that are neither spans nor labels are `_`. See
 * docs/extraction-by-decisions.md for the head file format. */

typedef struct pd_tag_extractor pd_tag_extractor;

/* Bind a tagger head to a schema and a model, once: the head's span fields
 * must be span fields of the schema and its label fields enum fields, every
 * label value one of that field's values (PD_ERR_FORMAT naming the head and
 * the field or value; fields a record leaves `_` are `_` whatever the
 * schema's `empty` says);
 * the head's hidden size must be the model's (PD_ERR_SHAPE); the model needs
 * a tokenizer (PD_ERR_ARG); a head of another type gives PD_ERR_ARG.
 * Immutable: share it between contexts and threads. model, schema and head
 * must outlive it. */
pd_tag_extractor *pd_tag_extractor_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                                       pd_error *err);
/* Release it (NULL is fine). */
void pd_tag_extractor_free(pd_tag_extractor *tx);

/* Extract records from text (len bytes of valid UTF-8) in one pd_eval on ctx
 * (its cache is cleared first). An empty text gives no records without
 * running the model; a prompt longer than the context gives PD_ERR_CONTEXT
 * before it runs. *out is a pd_extraction as pd_extract makes (free it with
 * pd_extraction_free): n_prompt_tokens the prompt's length, n_tokens 0, stop
 * PD_STOP_END, no mask_us. */
pd_status pd_tag_extract(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                         pd_extraction **out, pd_error *err);

/* What one tagger pass saw and decided, for tests and debugging. */
typedef struct pd_tag_span {
    int32_t field;        /* index of its field in the head's spans (tag B = 1 + 2 field) */
    const char *name;     /* that field's name */
    int32_t first, last;  /* its first and last token, indices within the read copy */
    char *text;           /* its bytes, NUL-terminated */
} pd_tag_span;

typedef struct pd_tag_link {
    int32_t from;         /* index in spans of a span of the link's `from` field */
    int32_t n_scores;     /* the `to` spans in text order, then "none" */
    float *scores;
    int32_t choice;       /* index in spans of the chosen `to` span, -1 for none */
} pd_tag_link;

typedef struct pd_tag_trace {
    int32_t n_tokens;     /* the whole prompt */
    int32_t *tokens;
    int32_t read_start;   /* index in tokens of the read copy's first token */
    int32_t n_read;       /* tokens of the read copy */
    int32_t n_tags;       /* 1 + 2 x span fields */
    char **tag_names;     /* [n_tags]: "O", "B-<field>", "I-<field>", ... */
    float *emissions;     /* [n_read][n_tags] */
    int32_t *tags;        /* [n_read] */
    int32_t n_spans;      /* in text order */
    pd_tag_span *spans;
    int32_t n_links;      /* one per span of the `from` field, in text order */
    pd_tag_link *links;
    int32_t n_label_rows; /* one per record before sorting and dropping repeats; 0 without labels */
    int32_t n_labels;     /* label classes of the head */
    float *label_logits;  /* [n_label_rows][n_labels] */
    int32_t forward_passes; /* pd_eval calls (1; 0 for an empty text) */
} pd_tag_trace;

/* pd_tag_extract that also fills *trace (may be NULL; free it with
 * pd_tag_trace_free). out may be NULL when only the trace is wanted. */
pd_status pd_tag_extract_trace(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                               pd_extraction **out, pd_tag_trace **trace, pd_error *err);
/* Release a trace and its arrays (NULL is fine). */
void pd_tag_trace_free(pd_tag_trace *trace);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_H */
