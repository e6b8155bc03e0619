/* gguf_write.c - pd_model_quantize: an HF model directory written as one
 * GGUF v3 file that both pocketdec and llama.cpp load.
 *
 * Matrices and the token embedding are quantized row by row with the exact
 * arithmetic of ggml's quantize_row_q8_0/q4_0/q4_1_ref, so the file holds the
 * bytes llama.cpp's own quantizer would write from the same F32 values;
 * norms (1-D tensors) stay F32, as llama.cpp keeps them. Metadata: the
 * qwen3.* hyperparameters and the tokenizer.ggml.* vocabulary built from the
 * directory's tokenizer.json (vocab_export.c), in the order
 * tools/testmodels/make_model.py writes them (so the two files can be
 * compared byte for byte). Tensor names come from the table gguf.c reads
 * them by. */
#include "formats.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct qtype {
    pd_weight_quant quant;
    pdi_dtype dtype;
    uint32_t file_type; /* llama_ftype: MOSTLY_Q4_0 2, MOSTLY_Q4_1 3, MOSTLY_Q8_0 7 */
} qtype;

static const qtype QTYPES[] = {{PD_QUANT_Q4_0, PD_Q4_0, 2}, {PD_QUANT_Q4_1, PD_Q4_1, 3}, {PD_QUANT_Q8_0, PD_Q8_0, 7}};

/* Encode one row of n floats (n a multiple of 32 for block types) as t. */
static void encode_row(pdi_dtype t, const float *x, int64_t n, uint8_t *out)
{
    if (t == PD_F32) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &x[i], 4);
            for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(u >> (8 * k)); /* little-endian on any host */
        }
        return;
    }
    pdi_quantize_row(t, x, n, out);
}

/* ---------------------------------------------------------- writer */

/* A file being written; the first error sticks and later writes are skipped. */
typedef struct writer {
    FILE *f;
    uint64_t pos;
    int err; /* errno of the first failed write */
} writer;

static void w_bytes(writer *w, const void *p, size_t n)
{
    if (w->err || n == 0) return;
    if (fwrite(p, 1, n, w->f) != n) w->err = errno ? errno : EIO;
    w->pos += n;
}

static void w_u32(writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    w_bytes(w, b, 4);
}

static void w_u64(writer *w, uint64_t v)
{
    w_u32(w, (uint32_t)v);
    w_u32(w, (uint32_t)(v >> 32));
}

static void w_str(writer *w, const char *s)
{
    w_u64(w, strlen(s));
    w_bytes(w, s, strlen(s));
}

static void w_pad(writer *w)
{
    static const uint8_t zeros[PD_GGUF_ALIGN];
    w_bytes(w, zeros, (size_t)(-w->pos % PD_GGUF_ALIGN));
}

static void kv_head(writer *w, const char *key, uint32_t type)
{
    w_str(w, key);
    w_u32(w, type);
}

static void kv_u32(writer *w, const char *key, uint32_t v)
{
    kv_head(w, key, PD_GGUF_U32);
    w_u32(w, v);
}

static void kv_f32(writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    kv_head(w, key, PD_GGUF_F32);
    w_u32(w, u);
}

static void kv_str(writer *w, const char *key, const char *v)
{
    kv_head(w, key, PD_GGUF_STRING);
    w_str(w, v);
}

static void kv_strings(writer *w, const char *key, char *const *s, size_t n)
{
    kv_head(w, key, PD_GGUF_ARRAY);
    w_u32(w, PD_GGUF_STRING);
    w_u64(w, n);
    for (size_t i = 0; i < n; i++) w_str(w, s[i]);
}

/* ------------------------------------------------------- vocabulary */

/* What the tokenizer.* keys hold. */
typedef struct vocab {
    pdi_vocab_parts parts;
    char *chat_template; /* from tokenizer_config.json, or NULL */
    int32_t bos, eos;
} vocab;

static int32_t find_token(const pdi_vocab_parts *v, const char *s)
{
    for (size_t i = 0; i < v->n_tokens; i++)
        if (strcmp(v->tokens[i], s) == 0) return (int32_t)i;
    return -1;
}

/* dir/tokenizer.json's vocabulary, tokenizer_config.json's chat_template,
 * and the BOS and EOS ids. */
static pd_status vocab_load(const char *dir, const pd_config *cfg, vocab *v, pd_error *err)
{
    char *path = pdi_path_join(dir, "tokenizer.json"), *side = pdi_path_join(dir, "tokenizer_config.json");
    pd_status rc = path && side ? pdi_vocab_parts_from_json(path, cfg->vocab, &v->parts, err)
                                : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    if (rc == PD_OK) {
        /* config.json's ids first; else Qwen's <|endoftext|> / <|im_end|>, as make_model.py and the
         * converters choose them */
        int32_t eot = find_token(&v->parts, "<|endoftext|>"), im_end = find_token(&v->parts, "<|im_end|>");
        v->bos = cfg->bos_id >= 0 ? cfg->bos_id : eot >= 0 ? eot : cfg->vocab - 1;
        v->eos = cfg->eos_id >= 0 ? cfg->eos_id : im_end >= 0 ? im_end : v->bos;
        json_error_t jerr;
        json_t *tc = json_load_file(side, 0, &jerr);
        const char *tpl = json_string_value(json_object_get(tc, "chat_template"));
        if (tpl && !(v->chat_template = strdup(tpl))) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", side);
        json_decref(tc);
    }
    free(path);
    free(side);
    return rc;
}

static void vocab_free(vocab *v)
{
    pdi_vocab_parts_free(&v->parts);
    free(v->chat_template);
}

static void write_vocab(writer *w, const vocab *v)
{
    const pdi_vocab_parts *p = &v->parts;
    kv_str(w, "tokenizer.ggml.model", "gpt2");
    kv_str(w, "tokenizer.ggml.pre", p->pre);
    kv_strings(w, "tokenizer.ggml.tokens", p->tokens, p->n_tokens);
    kv_head(w, "tokenizer.ggml.token_type", PD_GGUF_ARRAY);
    w_u32(w, PD_GGUF_I32);
    w_u64(w, (uint64_t)p->n_tokens);
    for (size_t i = 0; i < p->n_tokens; i++) w_u32(w, (uint32_t)p->token_types[i]);
    kv_strings(w, "tokenizer.ggml.merges", p->merges, p->n_merges);
    kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    kv_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->bos);
    kv_head(w, "tokenizer.ggml.add_bos_token", PD_GGUF_BOOL);
    w_bytes(w, "", 1); /* false: Qwen prompts start with no BOS */
    if (v->chat_template) kv_str(w, "tokenizer.chat_template", v->chat_template);
}

/* ---------------------------------------------------------- tensors */

/* One tensor of the output: its HF source, GGUF name, type and place. */
typedef struct out_tensor {
    const pdi_tensor *src;
    char name[64];
    pdi_dtype dtype;
    uint64_t offset, nbytes;
} out_tensor;

static pd_status add_tensor(const pdi_tensor_store *st, const char *hf, const char *gguf, pdi_dtype qt, out_tensor *t,
                            size_t *n, uint64_t *offset, pd_error *err)
{
    const pdi_tensor *src = pdi_store_find(st, hf);
    if (!src) /* the loader checked them: a bug if reached */
        return pdi_set_error(err, PD_ERR_INTERNAL, "missing tensor %s after loading", hf);
    out_tensor *o = &t[(*n)++];
    o->src = src;
    snprintf(o->name, sizeof o->name, "%s.weight", gguf);
    o->dtype = src->n_dims == 1 ? PD_F32 : qt;
    int64_t cols = src->shape[src->n_dims - 1], rows = src->n_dims == 1 ? 1 : src->shape[0];
    if (o->dtype != PD_F32 && cols % PD_QBLOCK)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: rows of %lld weights are not a multiple of %d; cannot quantize them",
                             hf, (long long)cols, PD_QBLOCK);
    o->nbytes = (uint64_t)pdi_dtype_row_bytes(o->dtype, cols) * (uint64_t)rows;
    o->offset = *offset;
    *offset += o->nbytes + (-o->nbytes % PD_GGUF_ALIGN);
    return PD_OK;
}

/* Every tensor of the model in make_model.py's order, with data offsets. */
static pd_status plan_tensors(const pdi_tensor_store *st, const pd_config *cfg, pdi_dtype qt, out_tensor *t, size_t *n,
                              pd_error *err)
{
    const pdi_gguf_name *g = pdi_gguf_global_names; /* token_embd, output_norm, output */
    uint64_t offset = 0;
    char hf[96], gguf[64];
    *n = 0;
    snprintf(hf, sizeof hf, "%s.weight", g[0].hf);
    pd_status rc = add_tensor(st, hf, g[0].gguf, qt, t, n, &offset, err);
    for (int32_t l = 0; rc == PD_OK && l < cfg->n_layers; l++)
        for (size_t k = 0; rc == PD_OK && k < PD_GGUF_N_BLOCK; k++) {
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, pdi_gguf_block_names[k].hf);
            snprintf(gguf, sizeof gguf, "blk.%d.%s", l, pdi_gguf_block_names[k].gguf);
            rc = add_tensor(st, hf, gguf, qt, t, n, &offset, err);
        }
    for (int k = 1; rc == PD_OK && k < (cfg->tied_embeddings ? 2 : 3); k++) {
        snprintf(hf, sizeof hf, "%s.weight", g[k].hf);
        rc = add_tensor(st, hf, g[k].gguf, qt, t, n, &offset, err);
    }
    return rc;
}

/* Convert and write one tensor's rows. */
static void write_tensor(writer *w, const out_tensor *t, float *row, uint8_t *enc)
{
    const pdi_tensor *s = t->src;
    int64_t cols = s->shape[s->n_dims - 1], rows = s->n_dims == 1 ? 1 : s->shape[0];
    size_t in_bytes = pdi_dtype_row_bytes(s->dtype, cols), out_bytes = pdi_dtype_row_bytes(t->dtype, cols);
    for (int64_t r = 0; r < rows && !w->err; r++) {
        pdi_row_to_f32(s->dtype, s->data + (size_t)r * in_bytes, row, cols);
        encode_row(t->dtype, row, cols, enc);
        w_bytes(w, enc, out_bytes);
    }
    w_pad(w);
}

/* ---------------------------------------------------------- the file */

/* Header, metadata and tensor infos; the data section follows. */
static void write_header(writer *w, const pd_config *cfg, const qtype *q, const char *name, const vocab *v,
                         const out_tensor *t, size_t n)
{
    w_bytes(w, "GGUF", 4);
    w_u32(w, 3);
    w_u64(w, n);
    w_u64(w, 25 + (v->chat_template != NULL));
    kv_str(w, "general.architecture", "qwen3");
    kv_str(w, "general.name", name);
    kv_u32(w, "general.alignment", PD_GGUF_ALIGN);
    kv_u32(w, "general.file_type", q->file_type);
    kv_u32(w, "general.quantization_version", 2);
    kv_u32(w, "qwen3.block_count", (uint32_t)cfg->n_layers);
    kv_u32(w, "qwen3.context_length", (uint32_t)cfg->max_positions);
    kv_u32(w, "qwen3.embedding_length", (uint32_t)cfg->hidden);
    kv_u32(w, "qwen3.feed_forward_length", (uint32_t)cfg->ffn);
    kv_u32(w, "qwen3.vocab_size", (uint32_t)cfg->vocab);
    kv_u32(w, "qwen3.attention.head_count", (uint32_t)cfg->n_heads);
    kv_u32(w, "qwen3.attention.head_count_kv", (uint32_t)cfg->n_kv_heads);
    kv_u32(w, "qwen3.attention.key_length", (uint32_t)cfg->head_dim);
    kv_u32(w, "qwen3.attention.value_length", (uint32_t)cfg->head_dim);
    kv_f32(w, "qwen3.rope.freq_base", cfg->rope_theta);
    kv_f32(w, "qwen3.attention.layer_norm_rms_epsilon", cfg->rms_eps);
    write_vocab(w, v);
    for (size_t i = 0; i < n; i++) {
        const pdi_tensor *s = t[i].src;
        w_str(w, t[i].name);
        w_u32(w, (uint32_t)s->n_dims);
        for (int d = s->n_dims - 1; d >= 0; d--) w_u64(w, (uint64_t)s->shape[d]); /* innermost first */
        w_u32(w, (uint32_t)t[i].dtype);
        w_u64(w, t[i].offset);
    }
    w_pad(w);
}

/* general.name: the directory's last component. */
static const char *model_name(const char *dir, char *buf, size_t size)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(buf, size, "%.*s", (int)(len - start), dir + start);
    return buf;
}

/* Write the planned file to path; on failure nothing is left there. */
static pd_status write_file(const char *path, const char *dir, const pd_config *cfg, const qtype *q, const vocab *v,
                            const out_tensor *t, size_t n, uint64_t *bytes, pd_error *err)
{
    int64_t widest = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t c = t[i].src->shape[t[i].src->n_dims - 1];
        widest = c > widest ? c : widest;
    }
    float *row = malloc((size_t)widest * sizeof *row);
    uint8_t *enc = malloc((size_t)widest * 4);
    writer w = {NULL, 0, 0};
    pd_status rc = row && enc ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    if (rc == PD_OK && !(w.f = fopen(path, "wb")))
        rc = pdi_set_error(err, PD_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    if (rc == PD_OK) {
        char name[256];
        write_header(&w, cfg, q, model_name(dir, name, sizeof name), v, t, n);
        for (size_t i = 0; i < n && !w.err; i++) write_tensor(&w, &t[i], row, enc);
        if (fclose(w.f) != 0 && !w.err) w.err = errno ? errno : EIO;
        if (w.err) {
            rc = pdi_set_error(err, PD_ERR_IO, "%s: write failed: %s", path, strerror(w.err));
            unlink(path); /* never leave a truncated model behind */
        }
    }
    free(row);
    free(enc);
    *bytes = w.pos;
    return rc;
}

pd_status pd_model_quantize(const char *hf_dir, const char *path, pd_weight_quant type, pd_quantize_stats *stats,
                            pd_error *err)
{
    if (!hf_dir || !path) return pdi_set_error(err, PD_ERR_ARG, "quantizing: no model directory or no output path");
    const qtype *q = NULL;
    for (size_t i = 0; i < sizeof QTYPES / sizeof QTYPES[0]; i++)
        if (type == QTYPES[i].quant) q = &QTYPES[i];
    if (type == PD_QUANT_Q4_64)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: Q4_64 has no GGUF type (GGUF files hold Q8_0, Q4_0 and Q4_1)",
                             path);
    if (!q)
        return pdi_set_error(err, PD_ERR_ARG, "%s: quantization type %d is not Q8_0, Q4_0 or Q4_1", path, (int)type);
    pdi_tensor_store st;
    pdi_store_init(&st);
    pd_config cfg;
    vocab v = {0};
    out_tensor *t = NULL;
    size_t n = 0;
    uint64_t bytes = 0;
    pd_status rc = pdi_hf_dir_load(hf_dir, &st, &cfg, err);
    if (rc == PD_OK) rc = vocab_load(hf_dir, &cfg, &v, err);
    if (rc == PD_OK && !(t = calloc(4 + (size_t)cfg.n_layers * PD_GGUF_N_BLOCK, sizeof *t)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    if (rc == PD_OK) rc = plan_tensors(&st, &cfg, q->dtype, t, &n, err);
    if (rc == PD_OK) rc = write_file(path, hf_dir, &cfg, q, &v, t, n, &bytes, err);
    if (rc == PD_OK && stats) *stats = (pd_quantize_stats){.n_tensors = (int32_t)n, .n_bytes = bytes};
    free(t);
    vocab_free(&v);
    pdi_store_free(&st);
    return rc;
}
