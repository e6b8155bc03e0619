/*
 * formats.h - helpers shared by the file loaders of lib/formats (safetensors,
 * config.json, GGUF). Internal to the module and its tests.
 */
#ifndef PD_FORMATS_H
#define PD_FORMATS_H

#include "pd_internal.h"

#include <string.h>

/* ------------------------------------------------ little-endian readers */

/* Byte by byte, so they work on any alignment and any host byte order. */
static inline uint16_t pdi_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t pdi_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t pdi_le64(const uint8_t *p) { return pdi_le32(p) | ((uint64_t)pdi_le32(p + 4) << 32); }

/* ------------------------------------------------ bounds-checked cursor */

/* A read position in a byte range. Every read checks the remaining length
 * first, so a malformed file can never make us read past the mapping. */
typedef struct pdi_cursor {
    const uint8_t *data;
    size_t size, pos;
} pdi_cursor;

static inline size_t pdi_cur_left(const pdi_cursor *c) { return c->size - c->pos; }

/* Take n bytes; returns NULL (and leaves the cursor alone) when fewer remain. */
static inline const uint8_t *pdi_cur_take(pdi_cursor *c, uint64_t n)
{
    if (n > pdi_cur_left(c)) return NULL;
    const uint8_t *p = c->data + c->pos;
    c->pos += (size_t)n;
    return p;
}

static inline bool pdi_cur_u32(pdi_cursor *c, uint32_t *v)
{
    const uint8_t *p = pdi_cur_take(c, 4);
    if (p) *v = pdi_le32(p);
    return p != NULL;
}

static inline bool pdi_cur_u64(pdi_cursor *c, uint64_t *v)
{
    const uint8_t *p = pdi_cur_take(c, 8);
    if (p) *v = pdi_le64(p);
    return p != NULL;
}

/* A GGUF string: u64 length then that many bytes (not NUL-terminated). */
static inline bool pdi_cur_str(pdi_cursor *c, const char **s, size_t *len)
{
    size_t save = c->pos;
    uint64_t n;
    const uint8_t *p;
    if (!pdi_cur_u64(c, &n) || !(p = pdi_cur_take(c, n))) {
        c->pos = save;
        return false;
    }
    *s = (const char *)p;
    *len = (size_t)n;
    return true;
}

/* ------------------------------------------------------- tensor store */

/* Map path read-only and append it to st->maps; *index receives its slot. */
pd_status pdi_store_map_file(pdi_tensor_store *st, const char *path, size_t *index, pd_error *err);

/* Append a tensor (name copied; data points into a mapping of st). */
pd_status pdi_store_add_tensor(pdi_tensor_store *st, const char *name, size_t name_len, pdi_dtype dtype,
                               int n_dims, const int64_t *shape, const uint8_t *data, size_t nbytes,
                               pd_error *err);

/* Whether t's bytes lie in mapping m. */
bool pdi_mapping_holds(const pdi_mapping *m, const pdi_tensor *t);

/* Path of the file holding t's bytes (for messages), or "?" */
const char *pdi_store_tensor_path(const pdi_tensor_store *st, const pdi_tensor *t);

/* Refuse tensors first..n_tensors-1 whose bytes overlap each other. */
pd_status pdi_store_check_overlaps(const pdi_tensor_store *st, size_t first, const char *source,
                                   pd_error *err);

/* Write "[a, b, c]" into buf. */
void pdi_shape_str(char *buf, size_t size, int n_dims, const int64_t *shape);

/* Elements of a shape, or false when the product overflows int64/size_t. */
bool pdi_shape_elements(int n_dims, const int64_t *shape, size_t *out);


/* -------------------------------------------------------------- GGUF */

/* Metadata value types (gguf_type). */
enum {
    PD_GGUF_U8, PD_GGUF_I8, PD_GGUF_U16, PD_GGUF_I16, PD_GGUF_U32, PD_GGUF_I32, PD_GGUF_F32, PD_GGUF_BOOL,
    PD_GGUF_STRING, PD_GGUF_ARRAY, PD_GGUF_U64, PD_GGUF_I64, PD_GGUF_F64, PD_GGUF_COUNT
};

#define PD_GGUF_ALIGN 32 /* general.alignment when absent, and what the writer uses */

/* A GGUF tensor name and its HF counterpart (both before ".weight"): the
 * one table gguf.c reads names by and gguf_write.c writes them by. */
typedef struct pdi_gguf_name {
    const char *gguf, *hf;
} pdi_gguf_name;

#define PD_GGUF_N_GLOBAL 3
#define PD_GGUF_N_BLOCK 11
/* token_embd, output_norm, output. */
extern const pdi_gguf_name pdi_gguf_global_names[PD_GGUF_N_GLOBAL];
/* A layer's tensors, "blk.N.<gguf>" for "model.layers.N.<hf>", in the order
 * llama.cpp's converter (and tools/testmodels/make_model.py) writes them. */
extern const pdi_gguf_name pdi_gguf_block_names[PD_GGUF_N_BLOCK];

/* The vocabulary of an HF tokenizer.json as a GGUF file carries it, as
 * llama.cpp's converter derives it: one token per id below n_vocab (the
 * embedding's rows; ids no token has become "[PADn]", type 5 unused), types
 * 1 normal, 3 control (special added token), 4 user defined (other added
 * token); merges as "a b"; pre "qwen2". Errors name path: PD_ERR_IO when it
 * cannot be opened, PD_ERR_FORMAT when it is not a byte-level BPE
 * tokenizer.json, PD_ERR_RANGE for an id at or past n_vocab. */
pd_status pdi_vocab_parts_from_json(const char *path, int32_t n_vocab, pdi_vocab_parts *parts, pd_error *err);

/* ------------------------------------------------------------- Qwen3 */

/* Upper bounds that keep every later size computation (dims multiplied
 * together, times 4 bytes) far from overflow. */
#define PD_MAX_LAYERS 1024
#define PD_MAX_DIM (1 << 20)
#define PD_MAX_POSITIONS (1 << 24)

/* Defaults for keys a file may omit, as HF's Qwen3Config has them. */
#define PD_DEFAULT_ROPE_THETA 10000.0f
#define PD_DEFAULT_RMS_EPS 1e-6f
#define PD_DEFAULT_MAX_POSITIONS 32768

/* Check the dimensions of cfg (positive, within limits, heads divisible by
 * kv heads, even head_dim...). Messages start with source. */
pd_status pdi_config_validate(const pd_config *cfg, const char *source, pd_error *err);

/* Check that st holds every tensor a Qwen3 model of cfg needs, with the exact
 * shape and a known dtype. lm_head.weight may be absent only when
 * cfg->tied_embeddings is set on entry; on success cfg->tied_embeddings =
 * (lm_head.weight absent). */
pd_status pdi_check_qwen3_tensors(const pdi_tensor_store *st, pd_config *cfg, const char *source,
                                  pd_error *err);

#endif /* PD_FORMATS_H */
