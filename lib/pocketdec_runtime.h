/*
 * pocketdec_runtime.h - the runtime of libpocketdec (lib/): errors, the
 * tokenizer, models, contexts (the KV cache and pd_eval), sampling and
 * generation. It knows nothing of adapters, heads or schemas; their headers
 * (pocketdec_adapters.h, pocketdec_heads.h, pocketdec_schemas.h) build on
 * this one, and pocketdec.h includes them all.
 *
 * pocketdec runs Qwen3 decoders of the MNN-Pocket-0.3B family on the CPU.
 *
 * Conventions (as in SQLite and jansson), for every pocketdec header:
 *   - Handles are opaque. A pd_model is immutable once loaded and may be shared
 *     read-only by any number of pd_context objects in any threads; a
 *     pd_context is used by one thread at a time.
 *   - Every call that can fail takes a pd_error * (may be NULL) and returns a
 *     pd_status (0 = PD_OK) or NULL. On failure err->code holds the status and
 *     err->message a one-line text that names the file and the problem.
 *   - Memory returned to the caller is released with pd_free().
 *   - There is no global mutable state.
 */
#ifndef POCKETDEC_RUNTIME_H
#define POCKETDEC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD_VERSION "0.1.0"

/* Marks the functions libpocketdec exports. The library is compiled with
 * hidden visibility, so every function without it (the internal pdi_* ones)
 * stays inside libpocketdec.so. */
#if defined(__GNUC__) || defined(__clang__)
#define PD_API __attribute__((visibility("default")))
#else
#define PD_API
#endif

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
PD_API const char *pd_status_name(pd_status code);

/* Release memory that pocketdec returned to the caller. NULL is fine. */
PD_API void pd_free(void *ptr);

/* The library's reading of UTF-8 (RFC 3629: no overlong form, no surrogate,
 * nothing past U+10FFFF), for programs that check or walk text the way the
 * library will. pd_utf8_valid_prefix: the offset of the first ill-formed byte
 * of s[0..n), or n when all of it is well formed. pd_utf8_char: the length
 * (1 to 4) of the well-formed character at the start of s[0..n) with its code
 * point in *cp, or 0 when s starts with an ill-formed byte (or n is 0). */
PD_API size_t pd_utf8_valid_prefix(const char *s, size_t n);
PD_API size_t pd_utf8_char(const char *s, size_t n, uint32_t *cp);

/* --------------------------------------------------------------- tokenizer */

typedef struct pd_tokenizer pd_tokenizer;

/* Load an HF tokenizer.json (byte-level BPE, NFC normalizer, Split regex
 * pre-tokenizer, added tokens). */
PD_API pd_tokenizer *pd_tokenizer_load(const char *path, pd_error *err);
PD_API void pd_tokenizer_free(pd_tokenizer *tok);

/* Number of ids (vocabulary plus added tokens, i.e. max id + 1). */
PD_API int32_t pd_tokenizer_n_vocab(const pd_tokenizer *tok);

/* Encode UTF-8 text (special/added tokens written inline are recognised).
 * On success *ids is a pd_free()-able array of *n_ids ids. Invalid UTF-8 in
 * the text is refused with PD_ERR_FORMAT. */
PD_API pd_status pd_tokenizer_encode(const pd_tokenizer *tok, const char *text, size_t text_len,
                                     int32_t **ids, size_t *n_ids, pd_error *err);

/* Encode UTF-8 text as plain text: normalised and split like
 * pd_tokenizer_encode, but no added token is recognised, so "<|im_end|>"
 * written in the text becomes the ids of its bytes. For untrusted text. */
PD_API pd_status pd_tokenizer_encode_plain(const pd_tokenizer *tok, const char *text, size_t text_len,
                                           int32_t **ids, size_t *n_ids, pd_error *err);

/* Decode ids to bytes (not necessarily valid UTF-8: a token may hold part of a
 * character). *text is pd_free()-able and NUL-terminated; *text_len excludes
 * the NUL. Out-of-range ids give PD_ERR_RANGE. */
PD_API pd_status pd_tokenizer_decode(const pd_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                     char **text, size_t *text_len, pd_error *err);

/* The raw bytes a token stands for (after the byte-level mapping is undone).
 * Returns NULL for an out-of-range id. The pointer lives as long as tok. */
PD_API const char *pd_tokenizer_token_bytes(const pd_tokenizer *tok, int32_t id, size_t *len);

/* Id of a token written exactly as in the vocabulary or added tokens
 * (e.g. "<|im_end|>"), or -1. */
PD_API int32_t pd_tokenizer_token_id(const pd_tokenizer *tok, const char *token);

/* Whether id is a special added token (skipped by nothing, but useful to UIs). */
PD_API int pd_tokenizer_is_special(const pd_tokenizer *tok, int32_t id);

/* The columns UTF-8 text takes in a terminal, for padding tables of labels:
 * East Asian wide and fullwidth characters (Chinese) count 2, combining marks
 * and other zero-width characters 0, the rest 1 (utf8proc's widths); each
 * invalid byte counts 1. Stops at len bytes or at a NUL. */
PD_API size_t pd_text_width(const char *text, size_t len);

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

/* The name of a weight type: "none", "q8_0", "q4_0", "q4_1", "q4_64" (the
 * names every command, benchmark and binding uses); NULL for a value that is
 * none of the types. */
PD_API const char *pd_quant_type_name(pd_weight_quant type);
/* The type pd_quant_type_name calls name into *type: PD_OK, or PD_ERR_ARG
 * (NULL name or type, or no such name; the message lists the names). */
PD_API pd_status pd_quant_type_from_name(const char *name, pd_weight_quant *type, pd_error *err);

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
PD_API pd_model *pd_model_load(const char *path, const pd_model_params *params, pd_error *err);
PD_API void pd_model_free(pd_model *model);

PD_API const pd_config *pd_model_config(const pd_model *model);

/* The tokenizer that came with the model, or NULL when there is none. */
PD_API const pd_tokenizer *pd_model_tokenizer(const pd_model *model);

/* Writes a JSON object describing the model (architecture, dimensions,
 * dtypes, parameter count, source). pd_free() the result. */
PD_API char *pd_model_info_json(const pd_model *model);

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
PD_API pd_status pd_model_quantize(const char *hf_dir, const char *path, pd_weight_quant type, pd_quantize_stats *stats,
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
    int32_t n_threads; /* threads, the caller's included; 0 = pd_cpu_count() (the default everywhere:
                          the command's --threads, Python's threads=None); at most pd_cpu_count() run */
    int32_t n_batch;   /* tokens per prefill chunk; 0 = 256 */
    size_t max_bytes;  /* memory budget of the context (KV cache, scratch, kept outputs); 0 = none */
    pd_kv_type kv_type; /* KV cache element type; PD_KV_AUTO (0) as above */
} pd_context_params;

PD_API pd_context_params pd_context_default_params(void);

/* The cores this process may run on (its CPU affinity, as taskset or a
 * container sets it), at least 1: a good n_threads. Contexts never run more
 * threads than this (more would wait on each other's time slices). */
PD_API int32_t pd_cpu_count(void);

/* Bytes a context with these parameters allocates when created: the KV cache
 * (2 x layers x n_ctx x kv_heads x head_dim elements of 4 bytes, or 2 for an
 * F16 cache) plus the scratch of one
 * prefill chunk. pd_eval adds the kept outputs (hidden size, and the
 * vocabulary when logits are asked, floats per kept row). 0 when the
 * parameters are invalid or the size overflows. */
PD_API size_t pd_context_bytes(const pd_model *model, const pd_context_params *params);

/* A context over model. n_ctx above the model's positions gives PD_ERR_RANGE;
 * with a budget (max_bytes > 0), a context that needs more than it gives
 * PD_ERR_LIMIT with both sizes in the message, before anything is allocated;
 * and a later pd_eval whose kept outputs would take the context over its
 * budget gives PD_ERR_LIMIT and leaves the cache as it was. */
PD_API pd_context *pd_context_new(const pd_model *model, const pd_context_params *params, pd_error *err);
PD_API void pd_context_free(pd_context *ctx);

/* A new context holding a copy of ctx's KV cache (a shared prefix evaluated
 * once, continued several ways). */
PD_API pd_context *pd_context_fork(const pd_context *ctx, pd_error *err);

/* Tokens currently in the KV cache. */
PD_API int32_t pd_context_kv_len(const pd_context *ctx);
PD_API int32_t pd_context_n_ctx(const pd_context *ctx);
/* The threads its passes run on, the caller's included (n_threads as
 * started: 0 gives 1, and never more than pd_cpu_count()). */
PD_API int32_t pd_context_n_threads(const pd_context *ctx);
/* The KV cache's element type, PD_KV_AUTO resolved (PD_KV_F32 or PD_KV_F16). */
PD_API pd_kv_type pd_context_kv_type(const pd_context *ctx);

/* Forget the cache past its first n tokens (n <= kv_len). */
PD_API pd_status pd_context_kv_truncate(pd_context *ctx, int32_t n, pd_error *err);

/* Prefix reuse: how many leading tokens of ids[0..n_ids) the cache already
 * holds, evaluated causally from position 0 (batches with no positions, or
 * positions kv_len, kv_len+1, ..., and no visibility mask). A batch with a
 * mask or other positions ends the reusable run where it starts; truncation
 * and forks keep what they keep of it. To evaluate ids from an empty cache,
 * truncate to the match (at most n_ids - 1, so that one token is evaluated
 * for its logits) and evaluate the rest: each row's sums are those of a
 * whole evaluation, so the results have the same bits. 0 for a NULL ctx or
 * ids, or n_ids <= 0. */
PD_API int32_t pd_context_kv_match(const pd_context *ctx, const int32_t *ids, int32_t n_ids);

/* One evaluation step: tokens appended to the KV cache and run through the
 * trunk. A batch longer than the free part of the cache gives PD_ERR_CONTEXT;
 * more kept rows than tokens gives PD_ERR_LIMIT. Every token sees the whole
 * cache that was there before the batch.
 * Within the batch it sees the tokens that `visible` allows (row-major
 * n_tokens x n_tokens bytes, visible[i*n+j] != 0 when token i may attend to
 * token j; j == i must be allowed) or, when visible is NULL, itself and the
 * tokens before it (causal). positions NULL means kv_len, kv_len+1, ...
 * Only the kept rows go through the last layer's attention and MLP (every
 * token's keys and values still reach the cache), so keeping fewer rows
 * costs less; a kept row has the same bits whichever other rows are kept. */
typedef struct pd_batch {
    const int32_t *tokens;
    int32_t n_tokens;
    const int32_t *positions;  /* may be NULL */
    const uint8_t *visible;    /* may be NULL */
    const int32_t *outputs;    /* batch rows whose hidden state to keep */
    int32_t n_outputs;         /* 0 with outputs NULL: keep the last row only */
    int want_logits;           /* also compute full logits for the kept rows */
} pd_batch;

PD_API pd_status pd_eval(pd_context *ctx, const pd_batch *batch, pd_error *err);

/* Several sequences in joint passes: batches[i] evaluated on ctxs[i], for
 * n distinct contexts of one model. The rows of all the batches go through
 * each weight matrix together, so the weights are read once a pass and not
 * once a context (decoding n sequences a token each costs about what one
 * does while the weights' bytes are the bound); attention, the caches and the
 * outputs stay each context's own. The passes run on pass's scratch and
 * threads (pass may be one of ctxs, or a context that evaluates nothing
 * itself): a pass holds at most its n_batch rows (a batch goes whole into
 * one pass when it fits in one, else it is split across passes), so ctxs
 * need only their caches (n_threads 1 and a small n_batch do; their n_ctx
 * may not exceed pass's). Each context ends as pd_eval of its batch leaves
 * it, outputs and logits included; a row's values are those of pd_eval up
 * to the rounding of float weights' products, which the number of rows in a
 * pass may change (block-quantized weights give the same bits). Every batch
 * is checked, and every output buffer reserved, before anything is
 * evaluated: an error (naming the context) leaves every cache as it was.
 * None of the contexts may be in use elsewhere during the call. */
PD_API pd_status pd_eval_many(pd_context *pass, pd_context *const *ctxs, const pd_batch *batches, int32_t n,
                              pd_error *err);

/* Convenience: causal evaluation of ids, keeping logits of the last token. */
PD_API pd_status pd_eval_tokens(pd_context *ctx, const int32_t *ids, int32_t n_ids, pd_error *err);

/* Results of the last pd_eval, for its i-th kept row (0 <= i < n_outputs).
 * Pointers stay valid until the next pd_eval on ctx. */
PD_API int32_t pd_context_n_outputs(const pd_context *ctx);
PD_API const float *pd_context_hidden(const pd_context *ctx, int32_t i);  /* [hidden], final-norm */
PD_API const float *pd_context_logits(const pd_context *ctx, int32_t i);  /* [vocab] or NULL */

/* Layer states, for speculative drafts that read the target's inner layers:
 * from the next evaluation on, every token's residual stream after each of
 * layers[0..n) (0-based layer indices, in that order; HF's hidden_states[layer
 * + 1], before any final norm) is kept for every row of the batch, whichever
 * rows the batch keeps. n = 0 stops it (the default: nothing is copied then).
 * When the last layer is one of them, every row goes through the last layer.
 * A fork does not inherit the setting. PD_ERR_RANGE for a layer the model
 * does not have. */
PD_API pd_status pd_context_keep_layer_states(pd_context *ctx, const int32_t *layers, int32_t n, pd_error *err);
/* After pd_eval with layer states on: batch row `row`'s states, n x hidden
 * floats (layer by layer, in the order asked), valid until the next pd_eval;
 * NULL when off or row is outside the last batch. */
PD_API const float *pd_context_layer_states(const pd_context *ctx, int32_t row);

/* Logits of chosen vocabulary rows only, from the i-th kept hidden state: out[k]
 * = logit of rows[k]. Reads just those rows of the LM head (sparse head). */
PD_API pd_status pd_context_logits_rows(pd_context *ctx, int32_t i, const int32_t *rows, int32_t n_rows,
                                        float *out, pd_error *err);

/* -------------------------------------------------------------- generation */

typedef struct pd_sampler_params {
    float temperature;  /* <= 0: greedy */
    int32_t top_k;      /* <= 0: off */
    float top_p;        /* >= 1: off */
    uint64_t seed;
} pd_sampler_params;

PD_API pd_sampler_params pd_sampler_default_params(void); /* greedy */

/* Pick a token from logits[n_vocab] (mask: NULL or n_vocab bytes, 0 = banned).
 * *rng_state carries the random stream between calls (seed it with
 * params->seed). Returns the id, or -1 when every token is banned. */
PD_API int32_t pd_sample(const float *logits, int32_t n_vocab, const uint8_t *mask,
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
PD_API pd_status pd_generate(pd_context *ctx, const char *prompt, const pd_generate_params *params,
                             pd_token_callback callback, void *user, char **text, pd_error *err);

/* ChatML form of one user message followed by the assistant turn header. */
PD_API char *pd_chatml_user(const char *message);

/* --------------------------------------------------------- resumable output */

/* A crash-safe output file that a later run can continue: a batch job writes
 * each unit of its work (a review's lines) as one commit, and whatever
 * happens to the process (a kill, a full disk, a power loss) the file holds
 * whole commits only once a resume has run. Beside it, PATH.progress (a text
 * file) names the run (the caller's description) and how far the output is
 * whole: its length and the caller's state at that point (e.g. how many
 * input rows are done). docs/reliability.md says what each failure leaves.
 * An output is used by one thread at a time. */
typedef struct pd_output pd_output;

/* Seconds between fsyncs by default: a power loss costs at most this much
 * work; a process crash costs nothing written. */
#define PD_OUTPUT_SYNC_SECONDS 5.0

typedef struct pd_output_params {
    int resume;          /* continue the run PATH.progress describes (else PATH is replaced) */
    double sync_seconds; /* the longest time between fsyncs of the output and its
                            progress; 0: after every commit (slow, for the cautious) */
} pd_output_params;

/* The defaults: replace, sync every PD_OUTPUT_SYNC_SECONDS. */
PD_API pd_output_params pd_output_default_params(void);

/* Open path for a run described by run (text of "key: value" lines: what
 * makes the output what it is, e.g. the input, its size, the model and the
 * options; at most 1 MiB). Without resume, path is created or emptied and
 * *state is NULL. With resume and path.progress present, the run must equal
 * the recorded one (else PD_ERR_ARG, the message naming each key that
 * differs, "schema: was 'a', now 'b'"); the output is cut to its last whole
 * commit (a torn line and commits not yet recorded go) and *state is the
 * state of that commit (release it with pd_free); a run that finished is
 * continued the same way (the caller then finds nothing left to do). With
 * resume and no progress file, an empty or missing path starts afresh
 * (*state NULL) and a non-empty one is refused (PD_ERR_IO: not written by a
 * resumable run). A progress file that cannot be parsed, or an output shorter
 * than its last synced point, gives PD_ERR_FORMAT. On failure the files are
 * as they were and NULL is returned. */
PD_API pd_output *pd_output_open(const char *path, const char *run, const pd_output_params *params, char **state,
                                 pd_error *err);

/* Append one commit: len bytes (0 is fine: work done that writes nothing)
 * and the caller's state after it (one line, at most 4096 bytes; what a
 * resume hands back). The bytes are written with write(2), not buffered: once
 * this returns they survive a crash of the process. On a failed write (a full
 * disk: PD_ERR_IO naming the cause) the output is cut back to the last whole
 * commit, and the output refuses further commits: finish or free it, then
 * resume later. */
PD_API pd_status pd_output_commit(pd_output *o, const void *bytes, size_t len, const char *state, pd_error *err);

/* Take back the commits after the first `bytes` bytes of the output, which
 * must end a commit the caller made (e.g. an annotation undone): the output
 * cut there and state its state, both durable before this returns. The
 * progress file is replaced first, so a crash in between leaves it naming
 * the shorter output, which a resume cuts to. PD_ERR_ARG for bytes past the
 * output's end or an output that failed; PD_ERR_IO as a commit's. */
PD_API pd_status pd_output_rewind(pd_output *o, int64_t bytes, const char *state, pd_error *err);

/* The run is done: the output and its progress synced (the progress says
 * "complete"), the file closed, o freed (also on failure). */
PD_API pd_status pd_output_finish(pd_output *o, pd_error *err);

/* Close without finishing (after an error): the progress is brought up to
 * the last commit so that a resume loses nothing. NULL is fine. */
PD_API void pd_output_free(pd_output *o);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_RUNTIME_H */
