/* cmd_quantize.c - `pocketdec quantize`: an HF model directory written as one
 * GGUF v3 file that both pocketdec and llama.cpp load.
 *
 * Matrices and the token embedding are quantized row by row with the exact
 * arithmetic of ggml's quantize_row_q8_0/q4_0/q4_1_ref, so the file holds the
 * bytes llama.cpp's own quantizer would write from the same F32 values;
 * norms (1-D tensors) stay F32, as llama.cpp keeps them. Metadata: the
 * qwen3.* hyperparameters and the tokenizer.ggml.* vocabulary built from the
 * directory's tokenizer.json, in the order tools/testmodels/make_model.py
 * writes them (so the two files can be compared byte for byte). */
#include "cli.h"
#include "pd_internal.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 32 /* general.alignment */

/* GGUF metadata value types (gguf_type). */
enum { GT_U32 = 4, GT_I32 = 5, GT_F32 = 6, GT_BOOL = 7, GT_STRING = 8, GT_ARRAY = 9 };

typedef struct qtype {
    const char *name;
    pd_dtype dtype;
    uint32_t file_type; /* llama_ftype: MOSTLY_Q4_0 2, MOSTLY_Q4_1 3, MOSTLY_Q8_0 7 */
} qtype;

static const qtype QTYPES[] = {{"q4_0", PD_Q4_0, 2}, {"q4_1", PD_Q4_1, 3}, {"q8_0", PD_Q8_0, 7}};

/* ------------------------------------------------------- quantizers */

/* Encode one row of n floats (n a multiple of 32 for block types) as t. */
static void encode_row(pd_dtype t, const float *x, int64_t n, uint8_t *out)
{
    if (t == PD_F32) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &x[i], 4);
            for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(u >> (8 * k)); /* little-endian on any host */
        }
        return;
    }
    pd_quantize_row(t, x, n, out);
}

/* ---------------------------------------------------------- writer */

/* A file being written; the first error sticks and later writes are skipped. */
typedef struct writer {
    FILE *f;
    const char *path;
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
    static const uint8_t zeros[ALIGN];
    w_bytes(w, zeros, (size_t)(-w->pos % ALIGN));
}

static void kv_head(writer *w, const char *key, uint32_t type)
{
    w_str(w, key);
    w_u32(w, type);
}

static void kv_u32(writer *w, const char *key, uint32_t v)
{
    kv_head(w, key, GT_U32);
    w_u32(w, v);
}

static void kv_f32(writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    kv_head(w, key, GT_F32);
    w_u32(w, u);
}

static void kv_str(writer *w, const char *key, const char *v)
{
    kv_head(w, key, GT_STRING);
    w_str(w, v);
}

/* ------------------------------------------------------- vocabulary */

/* The tokenizer.ggml.* arrays, as llama.cpp's converter derives them from
 * tokenizer.json: one token per id up to the embedding's row count (gaps
 * become "[PADn]", type 5 unused), types 1 normal, 3 control (special added
 * token), 4 user defined (other added token); merges as "a b". */
typedef struct vocab {
    char **tokens;
    int32_t *types;
    int32_t n;
    char **merges;
    size_t n_merges;
    char *chat_template; /* from tokenizer_config.json, or NULL */
    int32_t bos, eos;
} vocab;

static void vocab_free(vocab *v)
{
    for (int32_t i = 0; v->tokens && i < v->n; i++) free(v->tokens[i]);
    for (size_t i = 0; v->merges && i < v->n_merges; i++) free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->merges);
    free(v->chat_template);
}

/* Put token s at id (replacing an earlier one: added tokens win). */
static int vocab_set(vocab *v, json_int_t id, const char *s, int32_t type, const char *path)
{
    if (id < 0 || id >= v->n)
        return cli_failf("%s: token id %lld is outside the model's vocabulary of %d rows", path, (long long)id, v->n);
    char *copy = strdup(s);
    if (!copy) return cli_failf("out of memory");
    free(v->tokens[id]);
    v->tokens[id] = copy;
    v->types[id] = type;
    return 0;
}

/* A merge as "a b": tokenizer.json has either that string or ["a", "b"]. */
static char *merge_string(const json_t *m)
{
    if (json_is_string(m)) return strdup(json_string_value(m));
    const char *a = json_string_value(json_array_get(m, 0)), *b = json_string_value(json_array_get(m, 1));
    if (!json_is_array(m) || json_array_size(m) != 2 || !a || !b) return NULL;
    char *s = malloc(strlen(a) + strlen(b) + 2);
    if (s) sprintf(s, "%s %s", a, b);
    return s;
}

static int32_t find_token(const vocab *v, const char *s)
{
    for (int32_t i = 0; i < v->n; i++)
        if (v->tokens[i] && strcmp(v->tokens[i], s) == 0) return i;
    return -1;
}

/* Read dir/tokenizer.json (and tokenizer_config.json's chat_template). */
static int vocab_load(const char *dir, const pd_config *cfg, vocab *v)
{
    char *path = pd_path_join(dir, "tokenizer.json"), *side = pd_path_join(dir, "tokenizer_config.json");
    json_error_t jerr;
    json_t *root = path ? json_load_file(path, 0, &jerr) : NULL;
    int rc = 0;
    v->n = cfg->vocab;
    v->tokens = calloc((size_t)v->n, sizeof *v->tokens);
    v->types = calloc((size_t)v->n, sizeof *v->types);
    const json_t *model = json_object_get(root, "model"), *tv = json_object_get(model, "vocab");
    const json_t *merges = json_object_get(model, "merges"), *added = json_object_get(root, "added_tokens");
    if (!path || !side || !v->tokens || !v->types) rc = cli_failf("out of memory");
    else if (!root) rc = cli_failf("%s: %s", path, access(path, F_OK) ? "cannot open (quantize needs the tokenizer)" : jerr.text);
    else if (!json_is_object(tv) || !json_is_array(merges))
        rc = cli_failf("%s: model.vocab and model.merges are required (a byte-level BPE tokenizer)", path);
    const char *tok;
    json_t *id;
    if (rc == 0)
        json_object_foreach((json_t *)tv, tok, id) {
            if (rc == 0 && !json_is_integer(id))
                rc = cli_failf("%s: model.vocab[\"%s\"] is not an integer id", path, tok);
            if (rc == 0) rc = vocab_set(v, json_integer_value(id), tok, 1, path);
        }
    for (size_t i = 0; rc == 0 && i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i), *content = json_object_get(a, "content");
        if (!json_is_string(content) || !json_is_integer(json_object_get(a, "id")))
            rc = cli_failf("%s: added_tokens[%zu] needs \"id\" and \"content\"", path, i);
        else
            rc = vocab_set(v, json_integer_value(json_object_get(a, "id")), json_string_value(content),
                           json_is_true(json_object_get(a, "special")) ? 3 : 4, path);
    }
    for (int32_t i = 0; rc == 0 && i < v->n; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        if (!v->tokens[i]) rc = vocab_set(v, i, pad, 5, path);
    }
    v->n_merges = rc ? 0 : json_array_size(merges);
    if (v->n_merges && !(v->merges = calloc(v->n_merges, sizeof *v->merges))) rc = cli_failf("out of memory");
    for (size_t i = 0; rc == 0 && i < v->n_merges; i++)
        if (!(v->merges[i] = merge_string(json_array_get(merges, i))))
            rc = cli_failf("%s: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", path, i);
    if (rc == 0) {
        /* config.json's ids first; else Qwen's <|endoftext|> / <|im_end|>, as make_model.py and the
         * converters choose them */
        int32_t eot = find_token(v, "<|endoftext|>"), im_end = find_token(v, "<|im_end|>");
        v->bos = cfg->bos_id >= 0 ? cfg->bos_id : eot >= 0 ? eot : v->n - 1;
        v->eos = cfg->eos_id >= 0 ? cfg->eos_id : im_end >= 0 ? im_end : v->bos;
        json_t *tc = json_load_file(side, 0, &jerr);
        const char *tpl = json_string_value(json_object_get(tc, "chat_template"));
        if (tpl && !(v->chat_template = strdup(tpl))) rc = cli_failf("out of memory");
        json_decref(tc);
    }
    json_decref(root);
    free(path);
    free(side);
    return rc;
}

static void write_vocab(writer *w, const vocab *v)
{
    kv_str(w, "tokenizer.ggml.model", "gpt2");
    kv_str(w, "tokenizer.ggml.pre", "qwen2");
    kv_head(w, "tokenizer.ggml.tokens", GT_ARRAY);
    w_u32(w, GT_STRING);
    w_u64(w, (uint64_t)v->n);
    for (int32_t i = 0; i < v->n; i++) w_str(w, v->tokens[i]);
    kv_head(w, "tokenizer.ggml.token_type", GT_ARRAY);
    w_u32(w, GT_I32);
    w_u64(w, (uint64_t)v->n);
    for (int32_t i = 0; i < v->n; i++) w_u32(w, (uint32_t)v->types[i]);
    kv_head(w, "tokenizer.ggml.merges", GT_ARRAY);
    w_u32(w, GT_STRING);
    w_u64(w, v->n_merges);
    for (size_t i = 0; i < v->n_merges; i++) w_str(w, v->merges[i]);
    kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    kv_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->bos);
    kv_head(w, "tokenizer.ggml.add_bos_token", GT_BOOL);
    w_bytes(w, "", 1); /* false: Qwen prompts start with no BOS */
    if (v->chat_template) kv_str(w, "tokenizer.chat_template", v->chat_template);
}

/* ---------------------------------------------------------- tensors */

/* One tensor of the output: its HF source, GGUF name, type and place. */
typedef struct out_tensor {
    const pd_tensor *src;
    char name[64];
    pd_dtype dtype;
    uint64_t offset, nbytes;
} out_tensor;

/* HF suffix -> GGUF suffix of a layer's tensors, in make_model.py's order. */
static const char *const LAYER_NAMES[][2] = {
    {"input_layernorm", "attn_norm"},          {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},            {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},       {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},       {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},             {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};
#define N_LAYER_NAMES (sizeof LAYER_NAMES / sizeof LAYER_NAMES[0])

static int add_tensor(const pd_tensor_store *st, const char *hf, const char *gguf, pd_dtype qt, out_tensor *t,
                      size_t *n, uint64_t *offset)
{
    const pd_tensor *src = pd_store_find(st, hf);
    if (!src) return cli_failf("missing tensor %s", hf); /* the loader checked them; a bug if reached */
    out_tensor *o = &t[(*n)++];
    o->src = src;
    snprintf(o->name, sizeof o->name, "%s.weight", gguf);
    o->dtype = src->n_dims == 1 ? PD_F32 : qt;
    int64_t cols = src->shape[src->n_dims - 1], rows = src->n_dims == 1 ? 1 : src->shape[0];
    if (o->dtype != PD_F32 && cols % PD_QBLOCK)
        return cli_failf("%s: rows of %lld weights are not a multiple of %d; cannot quantize them", hf,
                         (long long)cols, PD_QBLOCK);
    o->nbytes = (uint64_t)pd_dtype_row_bytes(o->dtype, cols) * (uint64_t)rows;
    o->offset = *offset;
    *offset += o->nbytes + (-o->nbytes % ALIGN);
    return 0;
}

/* Every tensor of the model in make_model.py's order, with data offsets. */
static int plan_tensors(const pd_tensor_store *st, const pd_config *cfg, pd_dtype qt, out_tensor **out, size_t *n)
{
    size_t cap = 4 + (size_t)cfg->n_layers * N_LAYER_NAMES;
    out_tensor *t = calloc(cap, sizeof *t);
    if (!t) return cli_failf("out of memory");
    *out = t;
    *n = 0;
    uint64_t offset = 0;
    char hf[96], gguf[64];
    int rc = add_tensor(st, "model.embed_tokens.weight", "token_embd", qt, t, n, &offset);
    for (int32_t l = 0; rc == 0 && l < cfg->n_layers; l++)
        for (size_t k = 0; rc == 0 && k < N_LAYER_NAMES; k++) {
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, LAYER_NAMES[k][0]);
            snprintf(gguf, sizeof gguf, "blk.%d.%s", l, LAYER_NAMES[k][1]);
            rc = add_tensor(st, hf, gguf, qt, t, n, &offset);
        }
    if (rc == 0) rc = add_tensor(st, "model.norm.weight", "output_norm", qt, t, n, &offset);
    if (rc == 0 && !cfg->tied_embeddings) rc = add_tensor(st, "lm_head.weight", "output", qt, t, n, &offset);
    return rc;
}

/* Convert and write one tensor's rows. */
static void write_tensor(writer *w, const out_tensor *t, float *row, uint8_t *enc)
{
    const pd_tensor *s = t->src;
    int64_t cols = s->shape[s->n_dims - 1], rows = s->n_dims == 1 ? 1 : s->shape[0];
    size_t in_bytes = pd_dtype_row_bytes(s->dtype, cols), out_bytes = pd_dtype_row_bytes(t->dtype, cols);
    for (int64_t r = 0; r < rows && !w->err; r++) {
        pd_row_to_f32(s->dtype, s->data + (size_t)r * in_bytes, row, cols);
        encode_row(t->dtype, row, cols, enc);
        w_bytes(w, enc, out_bytes);
    }
    w_pad(w);
}

/* ---------------------------------------------------------- command */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
    kv_u32(w, "general.alignment", ALIGN);
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
        const pd_tensor *s = t[i].src;
        w_str(w, t[i].name);
        w_u32(w, (uint32_t)s->n_dims);
        for (int d = s->n_dims - 1; d >= 0; d--) w_u64(w, (uint64_t)s->shape[d]); /* innermost first */
        w_u32(w, (uint32_t)t[i].dtype);
        w_u64(w, t[i].offset);
    }
    w_pad(w);
}

/* "DIR-q4_0.gguf" next to the model directory (trailing slashes dropped). */
static char *default_out(const char *dir, const char *type)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    char *s = malloc(len + strlen(type) + 7);
    if (s) sprintf(s, "%.*s-%s.gguf", (int)len, dir, type);
    return s;
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

int cmd_quantize(cli_args *a);

/* pocketdec quantize --model HFDIR --type q4_0|q4_1|q8_0 [--out FILE.gguf] */
int cmd_quantize(cli_args *a)
{
    const char *dir = cli_opt(a, "--model"), *type = cli_opt(a, "--type"), *out = cli_opt(a, "--out");
    if (!dir) return cli_usage(a, "--model HFDIR is required");
    if (!type) return cli_usage(a, "--type q4_0|q4_1|q8_0 is required");
    const qtype *q = NULL;
    for (size_t i = 0; i < sizeof QTYPES / sizeof QTYPES[0]; i++)
        if (strcmp(type, QTYPES[i].name) == 0) q = &QTYPES[i];
    if (!q) return cli_usage(a, "--type must be q4_0, q4_1 or q8_0");
    double t0 = now_s();
    pd_tensor_store st;
    pd_store_init(&st);
    pd_config cfg;
    pd_error err;
    vocab v = {0};
    out_tensor *t = NULL;
    size_t n = 0;
    char *owned_out = out ? NULL : default_out(dir, q->name);
    if (!out) out = owned_out;
    int rc = out ? 0 : cli_failf("out of memory");
    if (rc == 0 && pd_hf_dir_load(dir, &st, &cfg, &err)) rc = cli_fail(&err);
    if (rc == 0) rc = vocab_load(dir, &cfg, &v);
    if (rc == 0) rc = plan_tensors(&st, &cfg, q->dtype, &t, &n);
    writer w = {NULL, out, 0, 0};
    if (rc == 0 && !(w.f = fopen(out, "wb"))) rc = cli_failf("%s: cannot create: %s", out, strerror(errno));
    int64_t widest = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t c = t[i].src->shape[t[i].src->n_dims - 1];
        widest = c > widest ? c : widest;
    }
    float *row = rc ? NULL : malloc((size_t)widest * sizeof *row);
    uint8_t *enc = rc ? NULL : malloc((size_t)widest * 4);
    if (rc == 0 && (!row || !enc)) rc = cli_failf("out of memory");
    if (rc == 0) {
        char name[256];
        write_header(&w, &cfg, q, model_name(dir, name, sizeof name), &v, t, n);
        for (size_t i = 0; i < n && !w.err; i++) write_tensor(&w, &t[i], row, enc);
        if (fclose(w.f) != 0 && !w.err) w.err = errno ? errno : EIO;
        w.f = NULL;
        if (w.err) rc = cli_failf("%s: write failed: %s", out, strerror(w.err));
        if (rc) unlink(out); /* never leave a truncated model behind */
    }
    if (w.f) fclose(w.f);
    if (rc == 0) {
        printf("{\"out\": ");
        cli_print_json_string(stdout, out, strlen(out));
        printf(", \"type\": \"%s\", \"tensors\": %zu, \"bytes\": %llu, \"seconds\": %.3f}\n", q->name, n,
               (unsigned long long)w.pos, now_s() - t0);
    }
    free(row);
    free(enc);
    free(t);
    vocab_free(&v);
    pd_store_free(&st);
    free(owned_out);
    return rc;
}
