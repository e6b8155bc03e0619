/* gguf.c - map a GGUF v2/v3 file: qwen3.* metadata into a config, tensors
 * into the store under HF names, tokenizer.ggml.* into vocabulary parts. */
#include "formats.h"

#include <stdio.h>
#include <stdlib.h>

#define GGUF_MAX_COUNT ((uint64_t)1 << 20) /* tensors, metadata pairs */
#define GGUF_MAX_NAME 1024                  /* key and tensor name bytes */
#define GGUF_MAX_DEPTH 4                    /* nesting of arrays we step over */
#define GGUF_MAX_ALIGN ((uint64_t)1 << 30)

/* One metadata pair; the value stays in the mapping. */
typedef struct gguf_kv {
    const char *key;
    size_t key_len;
    uint32_t type;
    size_t at;          /* offset of the value; for arrays, of the first element */
    uint32_t elem_type; /* arrays only */
    uint64_t count;     /* arrays only */
} gguf_kv;

/* One tensor info as stored (dims innermost first). */
typedef struct gguf_tinfo {
    const char *name;
    size_t name_len;
    uint32_t n_dims, type;
    int64_t dims[4];
    uint64_t offset;
} gguf_tinfo;

typedef struct gguf {
    const char *path;
    pdi_cursor cur; /* over the whole file */
    gguf_kv *kv;
    size_t n_kv;
    gguf_tinfo *ti;
    size_t n_ti;
    uint64_t alignment;
    pd_error *err;
} gguf;

/* Fixed byte size of a scalar type, 0 for strings and arrays. */
static size_t scalar_size(uint32_t t)
{
    static const uint8_t size[PD_GGUF_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < PD_GGUF_COUNT ? size[t] : 0;
}

static bool skip_value(pdi_cursor *c, uint32_t type, int depth);

/* Step over count elements of type et. False when they run past the end or
 * the type is unknown. */
static bool skip_array(pdi_cursor *c, uint32_t et, uint64_t count, int depth)
{
    size_t fixed = scalar_size(et), bytes;
    if (fixed) return count <= SIZE_MAX && pdi_mul_size((size_t)count, fixed, &bytes) && pdi_cur_take(c, bytes);
    if (et != PD_GGUF_STRING && et != PD_GGUF_ARRAY) return false;
    /* Each element takes at least 8 bytes, so this ends at the end of the file. */
    for (uint64_t i = 0; i < count; i++)
        if (!skip_value(c, et, depth)) return false;
    return true;
}

static bool skip_value(pdi_cursor *c, uint32_t type, int depth)
{
    const char *s;
    size_t n;
    uint32_t et;
    uint64_t count;
    if (scalar_size(type)) return pdi_cur_take(c, scalar_size(type)) != NULL;
    if (type == PD_GGUF_STRING) return pdi_cur_str(c, &s, &n);
    if (type != PD_GGUF_ARRAY || depth >= GGUF_MAX_DEPTH) return false;
    return pdi_cur_u32(c, &et) && pdi_cur_u64(c, &count) && skip_array(c, et, count, depth + 1);
}

/* printf precision for a length-delimited name (long ones are cut). */
static int shown(size_t len) { return len > 200 ? 200 : (int)len; }

static pd_status truncated(gguf *g, const char *what, const char *name, size_t name_len)
{
    return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: truncated or malformed %s%s%.*s at offset %zu (file is %zu "
                         "bytes)", g->path, what, name_len ? " " : "", shown(name_len), name, g->cur.pos,
                         g->cur.size);
}

/* A length-checked name: not empty, no NUL bytes, not absurdly long. */
static pd_status read_name(gguf *g, const char *what, const char **s, size_t *len)
{
    if (!pdi_cur_str(&g->cur, s, len)) return truncated(g, what, "", 0);
    if (*len == 0 || *len > GGUF_MAX_NAME || memchr(*s, 0, *len))
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: bad %s name at offset %zu", g->path, what, g->cur.pos);
    return PD_OK;
}

static pd_status parse_header(gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    const uint8_t *magic = pdi_cur_take(&g->cur, 4);
    uint32_t version;
    if (!magic || memcmp(magic, "GGUF", 4) != 0)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: not a GGUF file (bad magic)", g->path);
    if (!pdi_cur_u32(&g->cur, &version)) return truncated(g, "header", "", 0);
    /* v1 used 32-bit counts; v2 and v3 share one layout (v3 added big-endian
     * files, which show up here as a byte-swapped version). */
    if (version != 2 && version != 3)
        return pdi_set_error(g->err, PD_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported (only 2 and 3%s)",
                             g->path, version, (version & 0xffff) == 0 ? "; big-endian file?" : "");
    if (!pdi_cur_u64(&g->cur, n_tensors) || !pdi_cur_u64(&g->cur, n_kv)) return truncated(g, "header", "", 0);
    /* A pair needs at least 13 bytes and a tensor info 29: bound the counts
     * by the file size before allocating for them. */
    if (*n_tensors > GGUF_MAX_COUNT || *n_tensors > pdi_cur_left(&g->cur) / 29 || *n_kv > GGUF_MAX_COUNT ||
        *n_kv > pdi_cur_left(&g->cur) / 13)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: implausible counts: %llu tensors, %llu metadata pairs "
                             "in a file of %zu bytes", g->path, (unsigned long long)*n_tensors,
                             (unsigned long long)*n_kv, g->cur.size);
    return PD_OK;
}

static pd_status parse_metadata(gguf *g, uint64_t n)
{
    if (!(g->kv = calloc((size_t)n + 1, sizeof *g->kv)))
        return pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory", g->path);
    for (g->n_kv = 0; g->n_kv < n; g->n_kv++) {
        gguf_kv *kv = &g->kv[g->n_kv];
        pd_status rc = read_name(g, "metadata key", &kv->key, &kv->key_len);
        if (rc) return rc;
        if (!pdi_cur_u32(&g->cur, &kv->type)) return truncated(g, "metadata key", kv->key, kv->key_len);
        if (kv->type >= PD_GGUF_COUNT)
            return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: metadata key %.*s has unknown value type %u",
                                 g->path, shown(kv->key_len), kv->key, kv->type);
        bool ok = true;
        if (kv->type == PD_GGUF_ARRAY) {
            ok = pdi_cur_u32(&g->cur, &kv->elem_type) && pdi_cur_u64(&g->cur, &kv->count);
            kv->at = g->cur.pos;
            ok = ok && skip_array(&g->cur, kv->elem_type, kv->count, 1);
        } else {
            kv->at = g->cur.pos;
            ok = skip_value(&g->cur, kv->type, 0);
        }
        if (!ok) return truncated(g, "value of metadata key", kv->key, kv->key_len);
    }
    return PD_OK;
}

static const gguf_kv *find_kv(const gguf *g, const char *key)
{
    size_t len = strlen(key);
    for (size_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == len && memcmp(g->kv[i].key, key, len) == 0) return &g->kv[i];
    return NULL;
}

static const uint8_t *value_at(const gguf *g, const gguf_kv *kv) { return g->cur.data + kv->at; }

/* An integer of any integer type. */
static bool kv_integer(const gguf *g, const gguf_kv *kv, int64_t *out)
{
    const uint8_t *p = value_at(g, kv);
    switch (kv->type) {
    case PD_GGUF_U8: *out = p[0]; return true;
    case PD_GGUF_I8: *out = (int8_t)p[0]; return true;
    case PD_GGUF_U16: *out = pdi_le16(p); return true;
    case PD_GGUF_I16: *out = (int16_t)pdi_le16(p); return true;
    case PD_GGUF_U32: *out = pdi_le32(p); return true;
    case PD_GGUF_I32: *out = (int32_t)pdi_le32(p); return true;
    case PD_GGUF_I64: *out = (int64_t)pdi_le64(p); return true;
    case PD_GGUF_U64: *out = (int64_t)pdi_le64(p); return pdi_le64(p) <= INT64_MAX;
    }
    return false;
}

/* An integer key that fits in int32 (def when absent and not required). */
static pd_status get_i32(gguf *g, const char *key, bool required, int32_t def, int32_t *out)
{
    const gguf_kv *kv = find_kv(g, key);
    int64_t v;
    *out = def;
    if (!kv)
        return required ? pdi_set_error(g->err, PD_ERR_FORMAT, "%s: missing metadata key %s", g->path, key)
                        : PD_OK;
    if (!kv_integer(g, kv, &v) || v < INT32_MIN || v > INT32_MAX)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: metadata key %s must be a 32-bit integer", g->path, key);
    *out = (int32_t)v;
    return PD_OK;
}

static pd_status get_float(gguf *g, const char *key, float def, float *out)
{
    const gguf_kv *kv = find_kv(g, key);
    int64_t i;
    *out = def;
    if (!kv) return PD_OK;
    if (kv->type == PD_GGUF_F32) {
        uint32_t bits = pdi_le32(value_at(g, kv));
        memcpy(out, &bits, sizeof *out);
    } else if (kv->type == PD_GGUF_F64) {
        uint64_t bits = pdi_le64(value_at(g, kv));
        double d;
        memcpy(&d, &bits, sizeof d);
        *out = (float)d;
    } else if (kv_integer(g, kv, &i)) {
        *out = (float)i;
    } else {
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: metadata key %s must be a number", g->path, key);
    }
    return PD_OK;
}

/* A string key; *s is NULL when absent. */
static pd_status get_string(gguf *g, const char *key, const char **s, size_t *len)
{
    const gguf_kv *kv = find_kv(g, key);
    *s = NULL;
    *len = 0;
    if (!kv) return PD_OK;
    pdi_cursor c = {g->cur.data, g->cur.size, kv->at}; /* validated by parse_metadata */
    if (kv->type != PD_GGUF_STRING || !pdi_cur_str(&c, s, len))
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: metadata key %s must be a string", g->path, key);
    return PD_OK;
}

static pd_status read_general(gguf *g)
{
    const char *arch;
    size_t len;
    pd_status rc = get_string(g, "general.architecture", &arch, &len);
    if (rc) return rc;
    if (!arch) return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: no general.architecture", g->path);
    if (len != 5 || memcmp(arch, "qwen3", 5) != 0)
        return pdi_set_error(g->err, PD_ERR_UNSUPPORTED, "%s: architecture %.*s is not supported; pocketdec runs "
                             "qwen3", g->path, shown(len), arch);
    int32_t align;
    rc = get_i32(g, "general.alignment", false, PD_GGUF_ALIGN, &align);
    if (rc) return rc;
    if (align <= 0 || (uint64_t)align > GGUF_MAX_ALIGN || (align & (align - 1)) != 0)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: general.alignment %d is not a power of two", g->path,
                             (int)align);
    g->alignment = (uint64_t)align;
    return PD_OK;
}

/* qwen3.* keys (vocab is set later from the embedding's rows). */
static pd_status read_config(gguf *g, pd_config *cfg)
{
    const char *scaling;
    size_t len;
    int32_t value_len;
    pd_status rc = get_i32(g, "qwen3.block_count", true, 0, &cfg->n_layers);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.context_length", true, 0, &cfg->max_positions);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.embedding_length", true, 0, &cfg->hidden);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.feed_forward_length", true, 0, &cfg->ffn);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.attention.head_count", true, 0, &cfg->n_heads);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.attention.head_count_kv", false, cfg->n_heads, &cfg->n_kv_heads);
    if (rc == PD_OK)
        rc = get_i32(g, "qwen3.attention.key_length", false, cfg->n_heads > 0 ? cfg->hidden / cfg->n_heads : 0,
                     &cfg->head_dim);
    if (rc == PD_OK) rc = get_i32(g, "qwen3.attention.value_length", false, cfg->head_dim, &value_len);
    if (rc == PD_OK && value_len != cfg->head_dim)
        rc = pdi_set_error(g->err, PD_ERR_UNSUPPORTED, "%s: attention.value_length %d differs from key_length %d",
                           g->path, (int)value_len, (int)cfg->head_dim);
    /* llama.cpp's default when the key is absent, as HF's. */
    if (rc == PD_OK) rc = get_float(g, "qwen3.rope.freq_base", PD_DEFAULT_ROPE_THETA, &cfg->rope_theta);
    if (rc == PD_OK)
        rc = get_float(g, "qwen3.attention.layer_norm_rms_epsilon", PD_DEFAULT_RMS_EPS, &cfg->rms_eps);
    if (rc == PD_OK) rc = get_string(g, "qwen3.rope.scaling.type", &scaling, &len);
    if (rc == PD_OK && scaling && !(len == 4 && memcmp(scaling, "none", 4) == 0))
        rc = pdi_set_error(g->err, PD_ERR_UNSUPPORTED, "%s: rope scaling %.*s is not supported (plain RoPE only)",
                           g->path, shown(len), scaling);
    if (rc == PD_OK) rc = get_i32(g, "tokenizer.ggml.bos_token_id", false, -1, &cfg->bos_id);
    if (rc == PD_OK) rc = get_i32(g, "tokenizer.ggml.eos_token_id", false, -1, &cfg->eos_id);
    return rc;
}

static pd_status parse_tensor_infos(gguf *g, uint64_t n)
{
    if (!(g->ti = calloc((size_t)n + 1, sizeof *g->ti)))
        return pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory", g->path);
    for (g->n_ti = 0; g->n_ti < n; g->n_ti++) {
        gguf_tinfo *t = &g->ti[g->n_ti];
        pd_status rc = read_name(g, "tensor info", &t->name, &t->name_len);
        if (rc) return rc;
        if (!pdi_cur_u32(&g->cur, &t->n_dims)) return truncated(g, "tensor info", t->name, t->name_len);
        if (t->n_dims < 1 || t->n_dims > 4)
            return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s has %u dims (1 to 4 allowed)", g->path,
                                 shown(t->name_len), t->name, t->n_dims);
        for (uint32_t i = 0; i < t->n_dims; i++) {
            uint64_t d;
            if (!pdi_cur_u64(&g->cur, &d)) return truncated(g, "tensor info", t->name, t->name_len);
            if (d == 0 || d > INT64_MAX)
                return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s has dimension %llu", g->path,
                                     shown(t->name_len), t->name, (unsigned long long)d);
            t->dims[i] = (int64_t)d;
        }
        if (!pdi_cur_u32(&g->cur, &t->type) || !pdi_cur_u64(&g->cur, &t->offset))
            return truncated(g, "tensor info", t->name, t->name_len);
    }
    return PD_OK;
}

static const char *ggml_type_name(uint32_t t)
{
    static const char *const names[] = {
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K",
        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

const pdi_gguf_name pdi_gguf_global_names[PD_GGUF_N_GLOBAL] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};

const pdi_gguf_name pdi_gguf_block_names[PD_GGUF_N_BLOCK] = {
    {"attn_norm", "input_layernorm"},   {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},     {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},      {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"}};

/* Write the HF name of a GGUF tensor into buf; names we do not know are kept. */
static void hf_name(const char *name, size_t len, char *buf, size_t size)
{
    const char *p = name, *end = name + len;
    const pdi_gguf_name *table = pdi_gguf_global_names;
    size_t n_table = PD_GGUF_N_GLOBAL;
    int layer_len = 0; /* digits of N in "blk.N." */
    if (len > 4 && memcmp(name, "blk.", 4) == 0) {
        const char *q = name + 4;
        while (q < end && *q >= '0' && *q <= '9') q++;
        if (q > name + 4 && q < end && *q == '.') {
            layer_len = (int)(q - (name + 4));
            p = q + 1;
            table = pdi_gguf_block_names;
            n_table = PD_GGUF_N_BLOCK;
        }
    }
    const char *dot = memchr(p, '.', (size_t)(end - p));
    size_t base = dot ? (size_t)(dot - p) : (size_t)(end - p);
    for (size_t i = 0; i < n_table; i++) {
        if (strlen(table[i].gguf) != base || memcmp(table[i].gguf, p, base) != 0) continue;
        if (layer_len)
            snprintf(buf, size, "model.layers.%.*s.%s%.*s", layer_len, name + 4, table[i].hf,
                     (int)(end - p - base), p + base);
        else
            snprintf(buf, size, "%s%.*s", table[i].hf, (int)(end - p - base), p + base);
        return;
    }
    snprintf(buf, size, "%.*s", (int)len, name);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Validate one tensor info against the file and add it under its HF name. */
static pd_status add_tensor(gguf *g, const gguf_tinfo *t, uint64_t data_start, pdi_tensor_store *st)
{
    int nl = shown(t->name_len);
    if (!pdi_dtype_known((int)t->type))
        return pdi_set_error(g->err, PD_ERR_UNSUPPORTED, "%s: tensor %.*s has type %u (%s); pocketdec reads "
                             "F32, F16, BF16, Q8_0, Q4_0 and Q4_1", g->path, nl, t->name, t->type,
                             ggml_type_name(t->type));
    pdi_dtype dt = (pdi_dtype)t->type;
    size_t row = pdi_dtype_row_bytes(dt, t->dims[0]), rows, nbytes;
    if (row == 0)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s: row length %lld is not a multiple of %d, "
                             "as %s needs", g->path, nl, t->name, (long long)t->dims[0], PD_QBLOCK,
                             pdi_dtype_name(dt));
    if (!pdi_shape_elements((int)t->n_dims - 1, t->dims + 1, &rows) || !pdi_mul_size(row, rows, &nbytes))
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s is too large", g->path, nl, t->name);
    if (t->offset % g->alignment != 0)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s: offset %llu is not a multiple of the "
                             "alignment %llu", g->path, nl, t->name, (unsigned long long)t->offset,
                             (unsigned long long)g->alignment);
    uint64_t end = sat_add(sat_add(data_start, t->offset), nbytes);
    if (end > g->cur.size)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %.*s data ends at %llu, file is %zu bytes",
                             g->path, nl, t->name, (unsigned long long)end, g->cur.size);
    char name[GGUF_MAX_NAME + 64];
    hf_name(t->name, t->name_len, name, sizeof name);
    if (pdi_store_find(st, name))
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tensor %s appears twice", g->path, name);
    int64_t shape[4]; /* HF order: outermost first */
    for (uint32_t i = 0; i < t->n_dims; i++) shape[i] = t->dims[t->n_dims - 1 - i];
    return pdi_store_add_tensor(st, name, strlen(name), dt, (int)t->n_dims, shape, g->cur.data + (end - nbytes), nbytes,
                                g->err);
}

static pd_status add_tensors(gguf *g, pdi_tensor_store *st)
{
    /* Data starts at the next multiple of the alignment after the infos. */
    uint64_t pos = g->cur.pos, data_start = pos + (g->alignment - pos % g->alignment) % g->alignment;
    size_t first = st->n_tensors;
    for (size_t i = 0; i < g->n_ti; i++) {
        pd_status rc = add_tensor(g, &g->ti[i], data_start, st);
        if (rc) return rc;
    }
    return pdi_store_check_overlaps(st, first, g->path, g->err);
}

/* --------------------------------------------------------- vocabulary */

void pdi_vocab_parts_free(pdi_vocab_parts *parts)
{
    if (!parts) return;
    for (size_t i = 0; parts->tokens && i < parts->n_tokens; i++) free(parts->tokens[i]);
    for (size_t i = 0; parts->merges && i < parts->n_merges; i++) free(parts->merges[i]);
    free(parts->tokens);
    free(parts->merges);
    free(parts->token_types);
    free(parts->pre);
    memset(parts, 0, sizeof *parts);
}

static char *copy_str(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* An array key with elements of type et; *kv is NULL when absent. */
static pd_status get_array(gguf *g, const char *key, uint32_t et, const gguf_kv **kv)
{
    *kv = find_kv(g, key);
    if (*kv && ((*kv)->type != PD_GGUF_ARRAY || (*kv)->elem_type != et))
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: metadata key %s must be an array of %s", g->path, key,
                             et == PD_GGUF_STRING ? "strings" : "int32");
    return PD_OK;
}

/* Copy an array of strings (*out NULL and *n 0 when absent). */
static pd_status get_strings(gguf *g, const char *key, char ***out, size_t *n)
{
    const gguf_kv *kv;
    pd_status rc = get_array(g, key, PD_GGUF_STRING, &kv);
    if (rc || !kv) return rc;
    /* parse_metadata stepped over these, so count <= file size / 8. */
    if (!(*out = calloc((size_t)kv->count + 1, sizeof **out)))
        return pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory reading %s", g->path, key);
    pdi_cursor c = {g->cur.data, g->cur.size, kv->at};
    for (*n = 0; *n < kv->count; (*n)++) {
        const char *s;
        size_t len;
        if (!pdi_cur_str(&c, &s, &len)) return pdi_set_error(g->err, PD_ERR_INTERNAL, "%s: %s", g->path, key);
        if (!((*out)[*n] = copy_str(s, len)))
            return pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory reading %s", g->path, key);
    }
    return PD_OK;
}

static pd_status read_vocab(gguf *g, pdi_vocab_parts *v)
{
    const gguf_kv *types;
    const char *pre;
    size_t pre_len;
    pd_status rc = get_strings(g, "tokenizer.ggml.tokens", &v->tokens, &v->n_tokens);
    if (rc == PD_OK) rc = get_strings(g, "tokenizer.ggml.merges", &v->merges, &v->n_merges);
    if (rc == PD_OK) rc = get_string(g, "tokenizer.ggml.pre", &pre, &pre_len);
    if (rc == PD_OK && pre && !(v->pre = copy_str(pre, pre_len)))
        rc = pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory", g->path);
    if (rc == PD_OK) rc = get_array(g, "tokenizer.ggml.token_type", PD_GGUF_I32, &types);
    if (rc || !types) return rc;
    if (types->count != v->n_tokens)
        return pdi_set_error(g->err, PD_ERR_FORMAT, "%s: tokenizer.ggml.token_type has %llu entries for %zu tokens",
                             g->path, (unsigned long long)types->count, v->n_tokens);
    if (!(v->token_types = malloc((v->n_tokens + 1) * sizeof *v->token_types)))
        return pdi_set_error(g->err, PD_ERR_NOMEM, "%s: out of memory", g->path);
    for (size_t i = 0; i < v->n_tokens; i++) v->token_types[i] = (int32_t)pdi_le32(value_at(g, types) + 4 * i);
    return PD_OK;
}

/* ------------------------------------------------------------- loading */

/* cfg from metadata and the tensors now in st: vocab is the embedding's rows. */
static pd_status finish_config(gguf *g, const pdi_tensor_store *st, pd_config *cfg)
{
    const pdi_tensor *emb = pdi_store_find(st, "model.embed_tokens.weight");
    if (!emb) return pdi_set_error(g->err, PD_ERR_SHAPE, "%s: missing tensor token_embd.weight", g->path);
    if (emb->n_dims != 2 || emb->shape[0] > INT32_MAX)
        return pdi_set_error(g->err, PD_ERR_SHAPE, "%s: token_embd.weight is not a [vocab, hidden] matrix", g->path);
    cfg->vocab = (int32_t)emb->shape[0];
    cfg->tied_embeddings = 1; /* GGUF has no flag: output.weight may be absent */
    pd_status rc = pdi_config_validate(cfg, g->path, g->err);
    return rc ? rc : pdi_check_qwen3_tensors(st, cfg, g->path, g->err);
}

pd_status pdi_gguf_load(const char *path, pdi_tensor_store *st, pd_config *cfg, pdi_vocab_parts *vocab,
                        pd_error *err)
{
    size_t n_tensors = st->n_tensors, n_maps = st->n_maps, mi;
    uint64_t n_ti = 0, n_kv = 0;
    memset(cfg, 0, sizeof *cfg);
    if (vocab) memset(vocab, 0, sizeof *vocab);
    pd_status rc = pdi_store_map_file(st, path, &mi, err);
    if (rc) return rc;
    gguf g = {.path = st->maps[mi].path, .err = err};
    g.cur = (pdi_cursor){st->maps[mi].data, st->maps[mi].size, 0};
    rc = parse_header(&g, &n_ti, &n_kv);
    if (rc == PD_OK) rc = parse_metadata(&g, n_kv);
    if (rc == PD_OK) rc = read_general(&g);
    if (rc == PD_OK) rc = read_config(&g, cfg);
    if (rc == PD_OK) rc = parse_tensor_infos(&g, n_ti);
    if (rc == PD_OK) rc = add_tensors(&g, st);
    if (rc == PD_OK) rc = finish_config(&g, st, cfg);
    if (rc == PD_OK && vocab) rc = read_vocab(&g, vocab);
    free(g.kv);
    free(g.ti);
    if (rc) {
        pdi_vocab_parts_free(vocab);
        pdi_store_rollback(st, n_tensors, n_maps);
    }
    return rc;
}
