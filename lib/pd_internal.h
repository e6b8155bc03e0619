/*
 * pd_internal.h - what the modules of libpocketdec share with each other and
 * with the in-tree tests. Not installed; not part of the public API.
 *
 * Naming: pd_* is the public API (declared PD_API in the installed headers,
 * exported from libpocketdec.so); the functions and tables that the files of
 * the library share, here and in each part's internal headers, are pdi_*
 * (hidden: reachable from the static library only, as the tests do).
 */
#ifndef PD_INTERNAL_H
#define PD_INTERNAL_H

#include "pocketdec_runtime.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PD_PRINTF(a, b)
#endif

/* Fill err (may be NULL) and return code. */
pd_status pdi_set_error(pd_error *err, pd_status code, const char *fmt, ...) PD_PRINTF(3, 4);
/* Prefix err's message (err may be NULL): "context: old message". The caller
 * returns the status it already has: without an error object there is no
 * code to give back. */
void pdi_error_prefix(pd_error *err, const char *fmt, ...) PD_PRINTF(2, 3);

/* Overflow-checked size arithmetic: return false on overflow. */
static inline bool pdi_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* Growable arrays, the one growth rule: p (capacity *cap elements of elem
 * bytes) with room for at least need elements (and one). p itself when it has
 * room; else p reallocated, the capacity doubled from max(*cap, 16) until it
 * holds need and *cap updated; NULL when the size overflows or memory is
 * short, p then untouched and still the caller's:
 *     int32_t *v = pdi_grow(a->v, &a->cap, a->n + 1, sizeof *v);
 *     if (!v) return nomem; a->v = v; */
void *pdi_grow(void *p, size_t *cap, size_t need, size_t elem);

/* A growable byte string; zero-initialise it. data is NUL-terminated once
 * anything was appended; free it with free(). The first failed append
 * sticks: failed is set and later appends do nothing, so a writer may check
 * once at the end. */
typedef struct pdi_buf {
    char *data;
    size_t len, cap;
    bool failed;
} pdi_buf;

/* Append n bytes of s; false (and b->failed) when memory is short. */
bool pdi_buf_append(pdi_buf *b, const void *s, size_t n);
/* Append s as a CSV field (RFC 4180): quoted when it holds a comma, a quote
 * or a line break, its quotes doubled. The one rule of every CSV pocketdec
 * writes (extract's Tianchi rows, summarize's tables). */
void pdi_buf_csv_field(pdi_buf *b, const char *s);

/* Read a whole file into memory (NUL-terminated). */
pd_status pdi_read_file(const char *path, char **data, size_t *len, pd_error *err);

/* malloc'ed "dir/name", or NULL when out of memory. */
char *pdi_path_join(const char *dir, const char *name);

/* ---------------------------------------------------------- UTF-8 (utf8.c) */

/* Whether byte b continues a character (10xxxxxx) rather than starting one. */
static inline bool pdi_utf8_is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }
/* Length of the well-formed UTF-8 character at s (n bytes left) with its code
 * point in *cp; 0 when ill-formed (overlong, a surrogate, past U+10FFFF, cut). */
size_t pdi_utf8_char(const uint8_t *s, size_t n, uint32_t *cp);
/* cp written as UTF-8 at out (room for 4 bytes); its length. */
size_t pdi_utf8_put(uint32_t cp, char *out);
/* Offset of the first ill-formed byte of s, or n when s is valid UTF-8. */
size_t pdi_utf8_check(const void *s, size_t n);
/* Characters in n bytes of valid UTF-8 (bytes that start one). */
int32_t pdi_utf8_count(const char *s, size_t n);

/* ------------------------------------------------------------- tensors */

/* Element types; the numbers are GGUF's ggml_type values, but for
 * PD_Q4_64, which no file holds: it is made only by quantizing at load. */
typedef enum pdi_dtype {
    PD_F32 = 0,
    PD_F16 = 1,
    PD_Q4_0 = 2,
    PD_Q4_1 = 3,
    PD_Q8_0 = 8,
    PD_BF16 = 30,
    /* MNN's W4A16 layout: 4 bits with a scale d and a minimum m (F16) per
     * block of 64, w = d * q + m, 36 bytes a block (d, m, then the nibbles of
     * its two halves of 32, each half as Q4_1 stores its 32). */
    PD_Q4_64 = 1064
} pdi_dtype;

#define PD_QBLOCK 32 /* weights per Q8_0/Q4_0/Q4_1 block, and per block of the quantized activations */
#define PD_QBLOCK_64 64 /* weights per Q4_64 block */

const char *pdi_dtype_name(pdi_dtype t);
/* Bytes of a row of n elements (n a multiple of the block size for block
 * types; returns 0 when it is not, or when t is unknown). */
size_t pdi_dtype_row_bytes(pdi_dtype t, int64_t n);
/* Elements a block of t holds: 32 or 64 for the block types, 1 for the float ones. */
int pdi_dtype_block_len(pdi_dtype t);
/* Whether t is a type a GGUF or safetensors file may hold (not PD_Q4_64). */
bool pdi_dtype_known(int t);

/* A tensor view into mapped file data. shape is outermost first (HF/numpy
 * order): a linear layer's weight is [out, in] and each of its `out` rows is
 * `in` contiguous elements, whichever file it came from. */
typedef struct pdi_tensor {
    char *name;
    pdi_dtype dtype;
    int n_dims;
    int64_t shape[4];
    const uint8_t *data;
    size_t nbytes;
} pdi_tensor;

/* A memory mapping: of one file (read-only), or anonymous memory the
 * store owns (pdi_store_map_anonymous). */
typedef struct pdi_mapping {
    char *path;
    const uint8_t *data;
    size_t size;
    bool owned; /* anonymous: load-time passes may rewrite it in place */
} pdi_mapping;

/* Every tensor of a model, whatever files it came from. Tensor names are HF
 * names (GGUF names are translated on load). */
typedef struct pdi_tensor_store {
    pdi_tensor *tensors;
    size_t n_tensors, cap_tensors;
    pdi_mapping *maps;
    size_t n_maps, cap_maps;
} pdi_tensor_store;

void pdi_store_init(pdi_tensor_store *st);
void pdi_store_free(pdi_tensor_store *st);
/* size bytes of zeroed, writable memory of the store's own (an anonymous
 * mapping appended to st->maps, named name in messages), freed with the
 * store; its pages can be given back with madvise as a file's can. */
pd_status pdi_store_map_anonymous(pdi_tensor_store *st, size_t size, const char *name, uint8_t **data, pd_error *err);
const pdi_tensor *pdi_store_find(const pdi_tensor_store *st, const char *name);

/* Check that st holds tensor name (unless optional: then *found, which may
 * be NULL, says whether it does) with exactly this shape and a known dtype.
 * A missing tensor is PD_ERR_SHAPE naming source; a wrong shape PD_ERR_SHAPE
 * naming the file that holds it, both shapes given. */
pd_status pdi_store_expect(const pdi_tensor_store *st, const char *name, int n_dims, const int64_t *shape,
                           bool optional, bool *found, const char *source, pd_error *err);

/* Map one .safetensors file and add its tensors (F32/F16/BF16). The header is
 * validated: length inside the file, JSON well formed, offsets inside the
 * data, end - begin == product(shape) * dtype size, no overlaps, no duplicate
 * names across files. */
pd_status pdi_safetensors_add(pdi_tensor_store *st, const char *path, pd_error *err);

/* Read config.json of a Qwen3 model (refuses other architectures). */
pd_status pdi_hf_config_load(const char *path, pd_config *cfg, pd_error *err);

/* Load an HF model directory: config.json, then model.safetensors or the
 * shards listed by model.safetensors.index.json. */
pd_status pdi_hf_dir_load(const char *dir, pdi_tensor_store *st, pd_config *cfg, pd_error *err);

/* Whether dir exists and is a directory (PD_ERR_IO naming it otherwise). */
pd_status pdi_hf_dir_check(const char *dir, pd_error *err);

/* The tensors of an HF directory into st: model.safetensors, or the shards
 * model.safetensors.index.json lists (each shard must hold what the index
 * puts in it). On failure st may hold part of them: roll it back. */
pd_status pdi_hf_tensors_load(const char *dir, pdi_tensor_store *st, pd_error *err);

/* Parse the JSON file path, whose root must be an object (PD_ERR_IO when it
 * cannot be read, PD_ERR_FORMAT naming the line otherwise). json_decref it. */
struct json_t;
pd_status pdi_json_load_object(const char *path, struct json_t **root, pd_error *err);

/* Drop the tensors and mappings added after the store held n_tensors and
 * n_maps: a failed load leaves the store as it found it. */
void pdi_store_rollback(pdi_tensor_store *st, size_t n_tensors, size_t n_maps);

/* The vocabulary parts a GGUF file carries (tokenizer.ggml.*). Owned by the
 * struct; freed with pdi_vocab_parts_free. */
typedef struct pdi_vocab_parts {
    char **tokens;        /* byte-level strings, as in tokenizer.json */
    int32_t *token_types; /* GGUF token_type (1 normal, 3 control, 4 user defined) or NULL */
    size_t n_tokens;
    char **merges;        /* "a b" */
    size_t n_merges;
    char *pre;            /* pre-tokenizer name ("qwen2"), may be NULL */
} pdi_vocab_parts;

void pdi_vocab_parts_free(pdi_vocab_parts *parts);

/* Map a GGUF v3 file: metadata into cfg (qwen3.*), tensors into st under HF
 * names, with dims reversed into HF order. vocab (may be NULL) receives the
 * tokenizer.ggml.* arrays when present (n_tokens 0 otherwise). */
pd_status pdi_gguf_load(const char *path, pdi_tensor_store *st, pd_config *cfg, pdi_vocab_parts *vocab,
                        pd_error *err);

/* Whether dir holds an MNN LLM export (an llm.mnn file). */
bool pdi_mnn_dir(const char *dir);

/* Map an MNN LLM export folder (formats/mnn.c): llm.mnn's graph and
 * llm_config.json into cfg, the 4-bit weights of llm.mnn.weight into st as
 * Q4_64 under HF names, the norms in place; vocab (may be NULL) receives
 * tokenizer.txt's parts. Errors name the file and the op. */
pd_status pdi_mnn_load(const char *dir, pdi_tensor_store *st, pd_config *cfg, pdi_vocab_parts *vocab,
                       pd_error *err);

/* MNN's tokenizer.txt (HUGGINGFACE kind: byte-level BPE) as vocabulary parts
 * (tokenizer/tok_mnn.c): tokens one a line, the special ones typed as
 * control, merges "a b", pre "qwen2"; *eos (may be NULL) the first stop id,
 * or -1. PD_ERR_FORMAT naming the line for a file cut short or malformed,
 * PD_ERR_UNSUPPORTED for another tokenizer kind. */
pd_status pdi_mnn_vocab_parts(const char *path, pdi_vocab_parts *parts, int32_t *eos, pd_error *err);

/* Build a tokenizer from GGUF vocabulary parts (Qwen2/3 pre-tokenizer). */
pd_tokenizer *pdi_tokenizer_from_parts(const pdi_vocab_parts *parts, const char *source, pd_error *err);

/* ------------------------------------------------------ derived models */

/* A low-rank update of one weight matrix of the trunk: W' = W + scale * B A,
 * with A [rank, cols] and B [rows, rank] in F32, rows contiguous. `matrix` is
 * the HF name of the base weight ("model.layers.3.self_attn.q_proj.weight");
 * the seven projections of every layer can be updated. The data is copied. */
typedef struct pdi_lowrank {
    const char *matrix;
    int64_t rows, cols; /* of W, as the caller read them from A and B */
    int64_t rank;
    float scale;
    const float *A, *B;
} pdi_lowrank;

/* How pdi_model_derive applies the updates of a matrix: MERGE makes an owned
 * F32 copy W + sum scale*B*A; RUNTIME keeps W and adds scale*B(Ax) after
 * each product; AUTO merges F32 matrices, and 16-bit ones whose update is
 * large for them (rank x (rows + cols) > rows x cols / 8), and keeps the
 * others (16-bit with a small update, quantized) as stored, adding the
 * updates at runtime, so no weight is ever re-rounded. */
typedef enum pdi_derive_mode { PD_DERIVE_AUTO = 0, PD_DERIVE_MERGE = 1, PD_DERIVE_RUNTIME = 2 } pdi_derive_mode;

/* Largest rank applied at runtime (the per-token product A x lives on the stack). */
#define PD_LOWRANK_MAX_RANK 1024

/* A new model that shares base's mapped weights, tokenizer and norms, with
 * the updates applied; several updates of one matrix add up. base is never
 * modified and must outlive the result (free it with pd_model_free). An
 * update whose matrix is unknown or whose shapes do not fit is refused
 * (PD_ERR_SHAPE), naming the matrix and both shapes. */
pd_model *pdi_model_derive(const pd_model *base, const pdi_lowrank *updates, size_t n_updates, pdi_derive_mode mode,
                           pd_error *err);

/* ------------------------------------------ a model's parts, for modules */

/* The token embeddings of ids[0..n) as floats, row t at out + t * hidden
 * (ids must be inside the vocabulary). */
void pdi_model_embed_rows(const pd_model *model, const int32_t *ids, int64_t n, float *out);

/* The model's LM head on n_tok vectors of its hidden size (row t at x + t *
 * hidden): logits[t * vocab + v], computed on ctx's threads and scratch (ctx
 * a context of that model; its cache is not touched). */
void pdi_context_head_logits(pd_context *ctx, const float *x, int64_t n_tok, float *logits);

/* The thread pool of ctx's passes, for work between them (core/threadpool.h). */
struct pdi_pool;
struct pdi_pool *pdi_context_pool(pd_context *ctx);
/* The model ctx runs. */
const pd_model *pdi_context_model(const pd_context *ctx);

/* ---------------------------------------------- generation (core/generate.c) */

/* One pd_generate-style generation, for the loops that decode otherwise
 * (speculative drafts): the prompt's ids, the stop tokens, the text so far. */
typedef struct pdi_gen {
    const pd_model *model;
    pd_generate_params p;
    pd_token_callback callback;
    void *user;
    uint64_t rng;
    int32_t *ids, n_ids; /* the prompt, encoded (ChatML-wrapped with p.chat) */
    int32_t stops[3];
    int32_t produced;
    bool done;       /* a stop token, the callback or max_tokens ended it */
    bool stop_token; /* a stop token did */
    pdi_buf out;
} pdi_gen;

/* Check the parameters and encode the prompt as pd_generate does (same
 * errors, the same room check against ctx's cache). On failure nothing is
 * left to free. */
pd_status pdi_gen_start(pdi_gen *g, pd_context *ctx, const char *prompt, const pd_generate_params *params,
                        pd_token_callback callback, void *user, pd_error *err);
/* The next generated token, as pd_generate takes it: a stop token (or -1)
 * ends the generation unprinted; otherwise its bytes are appended and the
 * callback called, and the callback's stop or max_tokens ends it after. A
 * token after the end is ignored. */
pd_status pdi_gen_emit(pdi_gen *g, int32_t id, pd_error *err);
/* Free the prompt; *text (when text is not NULL) receives the text, else it is freed. */
void pdi_gen_end(pdi_gen *g, char **text);

/* ----------------------------------------------- stored numbers (formats/) */

/* A little-endian uint16 at p. */
static inline uint16_t pdi_load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* Convert n elements of a row of type t to F32 (n a multiple of the block
 * size for block types; lib/formats/numbers.c). */
void pdi_row_to_f32(pdi_dtype t, const void *src, float *dst, int64_t n);

float pdi_f16_to_f32(uint16_t h);
uint16_t pdi_f32_to_f16(float f);
float pdi_bf16_to_f32(uint16_t h);
/* n floats (a multiple of the block) as Q8_0, Q4_0 or Q4_1 blocks with
 * ggml's quantize_row_*_ref arithmetic, or as Q4_64 blocks with Q4_1's
 * (lib/formats/quantize.c). */
void pdi_quantize_row(pdi_dtype t, const float *x, int64_t n, uint8_t *out);

#endif /* PD_INTERNAL_H */
