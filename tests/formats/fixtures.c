/* fixtures.c - writers of tiny test models (see fixtures.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fixtures.h"

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) abort();
    return p;
}

/* ------------------------------------------------------------- tensors */

tmodel tmodel_default(void)
{
    return (tmodel){.layers = 2, .hidden = 32, .heads = 2, .kv_heads = 1, .head_dim = 16, .ffn = 64,
                    .vocab = 40, .lm_head = true, .dtypes = {PD_F32}, .n_dtypes = 1};
}

static size_t tensor_bytes(pdi_dtype dt, int n_dims, const int64_t *shape)
{
    size_t rows = 1;
    for (int i = 0; i < n_dims - 1; i++) rows *= (size_t)shape[i];
    return n_dims ? pdi_dtype_row_bytes(dt, shape[n_dims - 1]) * rows : pdi_dtype_row_bytes(dt, 1);
}

ttensor *tlist_add(tlist *l, const char *name, const char *gguf_name, pdi_dtype dt, int n_dims,
                   const int64_t *shape)
{
    l->t = xrealloc(l->t, (l->n + 1) * sizeof *l->t);
    ttensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->gguf_name, sizeof t->gguf_name, "%s", gguf_name);
    t->dtype = dt;
    t->n_dims = n_dims;
    if (n_dims) memcpy(t->shape, shape, (size_t)n_dims * sizeof *shape);
    t->nbytes = tensor_bytes(dt, n_dims, shape);
    t->data = xrealloc(NULL, t->nbytes);
    unsigned h = 2166136261u; /* FNV-1a of the name: every tensor gets its own bytes */
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    for (size_t i = 0; i < t->nbytes; i++) t->data[i] = (uint8_t)(h + i * 31 + (i >> 8));
    return t;
}

/* Next dtype of the cycle; GGUF vectors stay F32. */
static pdi_dtype pick_dtype(const tmodel *m, bool gguf, bool vector, int *k)
{
    if (gguf && vector) return PD_F32;
    return m->dtypes[(*k)++ % (m->n_dtypes ? m->n_dtypes : 1)];
}

tlist tmodel_tensors(const tmodel *m, bool gguf)
{
    tlist l = {NULL, 0};
    const int64_t q = (int64_t)m->heads * m->head_dim, kv = (int64_t)m->kv_heads * m->head_dim;
    const struct {
        const char *hf, *gg;
        int64_t d0, d1; /* d1 0: a vector */
    } layer[] = {
        {"input_layernorm", "attn_norm", m->hidden, 0},  {"self_attn.q_proj", "attn_q", q, m->hidden},
        {"self_attn.k_proj", "attn_k", kv, m->hidden},    {"self_attn.v_proj", "attn_v", kv, m->hidden},
        {"self_attn.o_proj", "attn_output", m->hidden, q}, {"self_attn.q_norm", "attn_q_norm", m->head_dim, 0},
        {"self_attn.k_norm", "attn_k_norm", m->head_dim, 0}, {"post_attention_layernorm", "ffn_norm", m->hidden, 0},
        {"mlp.gate_proj", "ffn_gate", m->ffn, m->hidden}, {"mlp.up_proj", "ffn_up", m->ffn, m->hidden},
        {"mlp.down_proj", "ffn_down", m->hidden, m->ffn},
    };
    int k = 0; /* dtype cycle position */
    int64_t emb[2] = {m->vocab, m->hidden}, norm[1] = {m->hidden};
    tlist_add(&l, "model.embed_tokens.weight", "token_embd.weight", pick_dtype(m, gguf, false, &k), 2, emb);
    for (int i = 0; i < m->layers; i++) {
        for (size_t j = 0; j < sizeof layer / sizeof layer[0]; j++) {
            char hf[128], gg[128];
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", i, layer[j].hf);
            snprintf(gg, sizeof gg, "blk.%d.%s.weight", i, layer[j].gg);
            int64_t shape[2] = {layer[j].d0, layer[j].d1};
            bool vec = layer[j].d1 == 0;
            tlist_add(&l, hf, gg, pick_dtype(m, gguf, vec, &k), vec ? 1 : 2, shape);
        }
    }
    tlist_add(&l, "model.norm.weight", "output_norm.weight", pick_dtype(m, gguf, true, &k), 1, norm);
    if (m->lm_head) tlist_add(&l, "lm_head.weight", "output.weight", pick_dtype(m, gguf, false, &k), 2, emb);
    return l;
}

ttensor *tlist_find(tlist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->t[i].name, name) == 0) return &l->t[i];
    return NULL;
}

void tlist_remove(tlist *l, const char *name)
{
    ttensor *t = tlist_find(l, name);
    assert_non_null(t);
    free(t->data);
    size_t i = (size_t)(t - l->t);
    memmove(t, t + 1, (l->n - i - 1) * sizeof *t);
    l->n--;
}

void tlist_free(tlist *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->t[i].data);
    free(l->t);
    l->t = NULL;
    l->n = 0;
}

/* -------------------------------------------------------------- buffers */

void tb_put(tbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = xrealloc(b->data, b->cap);
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

void tb_u32(tbuf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
    tb_put(b, x, 4);
}

void tb_u64(tbuf *b, uint64_t v)
{
    tb_u32(b, (uint32_t)v);
    tb_u32(b, (uint32_t)(v >> 32));
}

void tb_str(tbuf *b, const char *s)
{
    tb_u64(b, strlen(s));
    tb_put(b, s, strlen(s));
}

/* ---------------------------------------------------------------- files */

char *tdir_new(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/pd-formats-XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    return strdup(dir);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tdir_remove(char *dir)
{
    if (dir) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

void tpath(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < size);
}

void twrite(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void twrite_str(const char *dir, const char *name, const char *text)
{
    char path[1024];
    tpath(path, sizeof path, dir, name);
    twrite(path, text, strlen(text));
}

/* ----------------------------------------------------------- safetensors */

static const char *st_dtype(pdi_dtype dt) { return dt == PD_F32 ? "F32" : dt == PD_F16 ? "F16" : "BF16"; }

char *st_header(ttensor *const *t, size_t n)
{
    tbuf b = {0};
    size_t off = 0;
    char item[512];
    const char *meta = "{\"__metadata__\": {\"format\": \"pt\"}";
    tb_put(&b, meta, strlen(meta));
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(item, sizeof item, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [", t[i]->name,
                           st_dtype(t[i]->dtype));
        for (int d = 0; d < t[i]->n_dims; d++)
            len += snprintf(item + len, sizeof item - (size_t)len, "%s%lld", d ? ", " : "",
                            (long long)t[i]->shape[d]);
        len += snprintf(item + len, sizeof item - (size_t)len, "], \"data_offsets\": [%zu, %zu]}", off,
                        off + t[i]->nbytes);
        tb_put(&b, item, (size_t)len);
        off += t[i]->nbytes;
    }
    tb_put(&b, "}", 2); /* with the NUL */
    return (char *)b.data;
}

void st_write(const char *path, const char *header, const void *data, size_t data_len)
{
    tbuf b = {0};
    size_t hlen = strlen(header), padded = (hlen + 7) / 8 * 8; /* safetensors pads with spaces */
    tb_u64(&b, padded);
    tb_put(&b, header, hlen);
    tb_put(&b, "       ", padded - hlen);
    tb_put(&b, data, data_len);
    twrite(path, b.data, b.len);
    free(b.data);
}

void st_write_tensors(const char *path, ttensor *const *t, size_t n)
{
    tbuf data = {0};
    for (size_t i = 0; i < n; i++) tb_put(&data, t[i]->data, t[i]->nbytes);
    char *header = st_header(t, n);
    st_write(path, header, data.data, data.len);
    free(header);
    free(data.data);
}

/* ----------------------------------------------------------- HF folders */

char *tconfig_json(const tmodel *m, bool tie, const char *extra)
{
    char *s = xrealloc(NULL, 2048);
    snprintf(s, 2048,
             "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"hidden_size\": %d, "
             "\"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"num_key_value_heads\": %d, "
             "\"head_dim\": %d, \"intermediate_size\": %d, \"vocab_size\": %d, \"max_position_embeddings\": 512, "
             "\"rope_theta\": 1000000.0, \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": %s, "
             "\"bos_token_id\": null, \"eos_token_id\": 3, \"rope_scaling\": null, \"attention_bias\": false, "
             "\"hidden_act\": \"silu\", \"torch_dtype\": \"bfloat16\"%s%s}",
             m->hidden, m->layers, m->heads, m->kv_heads, m->head_dim, m->ffn, m->vocab, tie ? "true" : "false",
             extra ? ", " : "", extra ? extra : "");
    return s;
}

static void shard_name(char *buf, size_t size, int shard, int n_shards)
{
    if (n_shards == 1) snprintf(buf, size, "model.safetensors");
    else snprintf(buf, size, "model-%05d-of-%05d.safetensors", shard + 1, n_shards);
}

void hf_write_index(const char *dir, const tlist *l, int n_shards, const char *moved, const char *moved_to)
{
    tbuf index = {0};
    const char *head = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
    tb_put(&index, head, strlen(head));
    for (size_t i = 0; i < l->n; i++) {
        char item[512], file[64];
        shard_name(file, sizeof file, (int)(i % (size_t)n_shards), n_shards);
        bool move = moved && strcmp(l->t[i].name, moved) == 0;
        int len = snprintf(item, sizeof item, "%s\"%s\": \"%s\"", i ? ", " : "", l->t[i].name,
                           move ? moved_to : file);
        tb_put(&index, item, (size_t)len);
    }
    tb_put(&index, "}}", 3);
    twrite_str(dir, "model.safetensors.index.json", (const char *)index.data);
    free(index.data);
}

void hf_write_dir(const char *dir, const tmodel *m, const tlist *l, bool tie, const char *extra,
                  int n_shards)
{
    char path[1024], name[64];
    mkdir(dir, 0700);
    char *config = tconfig_json(m, tie, extra);
    twrite_str(dir, "config.json", config);
    free(config);
    ttensor **pick = xrealloc(NULL, l->n * sizeof *pick);
    for (int s = 0; s < n_shards; s++) {
        size_t n = 0;
        for (size_t i = (size_t)s; i < l->n; i += (size_t)n_shards) pick[n++] = &l->t[i];
        shard_name(name, sizeof name, s, n_shards);
        tpath(path, sizeof path, dir, name);
        st_write_tensors(path, pick, n);
    }
    if (n_shards > 1) hf_write_index(dir, l, n_shards, NULL, NULL);
    free(pick);
}

/* ----------------------------------------------------------------- GGUF */

/* Metadata pairs written to a side buffer, counted as they go. */
typedef struct gmeta {
    tbuf b;
    uint64_t n;
} gmeta;

enum { GT_U32 = 4, GT_I32 = 5, GT_F32 = 6, GT_STRING = 8, GT_ARRAY = 9 };

static void gm_key(gmeta *g, const char *key, uint32_t type)
{
    tb_str(&g->b, key);
    tb_u32(&g->b, type);
    g->n++;
}

static void gm_u32(gmeta *g, const char *key, uint32_t v)
{
    gm_key(g, key, GT_U32);
    tb_u32(&g->b, v);
}

static void gm_f32(gmeta *g, const char *key, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    gm_key(g, key, GT_F32);
    tb_u32(&g->b, bits);
}

static void gm_str(gmeta *g, const char *key, const char *v)
{
    gm_key(g, key, GT_STRING);
    tb_str(&g->b, v);
}

static void gm_array(gmeta *g, const char *key, uint32_t et, uint64_t n)
{
    gm_key(g, key, GT_ARRAY);
    tb_u32(&g->b, et);
    tb_u64(&g->b, n);
}

const char *const tvocab_merges[TVOCAB_N_MERGES] = {"\xc4\xa0 t", "t 1", "\xc4\xa0t 1"};

void tvocab_token(int i, char *buf, size_t size)
{
    if (i == 0) snprintf(buf, size, "\xc4\xa0t"); /* "Ġt": a byte-level space */
    else snprintf(buf, size, "t%d", i);
}

int32_t tvocab_type(int i, int n) { return i == n - 1 ? 3 : 1; }

static void gm_vocab(gmeta *g, int n, int n_types)
{
    char tok[32];
    gm_str(g, "tokenizer.ggml.model", "gpt2");
    gm_str(g, "tokenizer.ggml.pre", "qwen2");
    gm_array(g, "tokenizer.ggml.tokens", GT_STRING, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        tvocab_token(i, tok, sizeof tok);
        tb_str(&g->b, tok);
    }
    gm_array(g, "tokenizer.ggml.token_type", GT_I32, (uint64_t)n_types);
    for (int i = 0; i < n_types; i++) tb_u32(&g->b, (uint32_t)tvocab_type(i, n));
    gm_array(g, "tokenizer.ggml.merges", GT_STRING, TVOCAB_N_MERGES);
    for (int i = 0; i < TVOCAB_N_MERGES; i++) tb_str(&g->b, tvocab_merges[i]);
}

static void tb_align(tbuf *b, size_t a)
{
    const uint8_t zero = 0;
    while (b->len % a) tb_put(b, &zero, 1);
}

tbuf gguf_build(const tmodel *m, const tlist *l, const gguf_opts *o, gguf_layout *lay)
{
    gmeta g = {{0}, 0};
    size_t align = o->alignment ? o->alignment : 32;
    gm_str(&g, "general.architecture", o->arch ? o->arch : "qwen3");
    if (o->alignment) gm_u32(&g, "general.alignment", o->alignment);
    gm_u32(&g, "qwen3.block_count", (uint32_t)m->layers);
    gm_u32(&g, "qwen3.context_length", 512);
    gm_u32(&g, "qwen3.embedding_length", (uint32_t)m->hidden);
    gm_u32(&g, "qwen3.feed_forward_length", (uint32_t)m->ffn);
    gm_u32(&g, "qwen3.attention.head_count", (uint32_t)m->heads);
    gm_u32(&g, "qwen3.attention.head_count_kv", (uint32_t)m->kv_heads);
    gm_u32(&g, "qwen3.attention.key_length", (uint32_t)m->head_dim);
    gm_f32(&g, "qwen3.rope.freq_base", 1e6f);
    gm_f32(&g, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    gm_u32(&g, "tokenizer.ggml.bos_token_id", 1);
    gm_u32(&g, "tokenizer.ggml.eos_token_id", 2);
    if (o->nested) { /* [[1, 2], ["x"]]: an array of arrays */
        gm_array(&g, "test.nested", GT_ARRAY, 2);
        tb_u32(&g.b, GT_U32), tb_u64(&g.b, 2), tb_u32(&g.b, 1), tb_u32(&g.b, 2);
        tb_u32(&g.b, GT_STRING), tb_u64(&g.b, 1), tb_str(&g.b, "x");
    }
    if (o->vocab) gm_vocab(&g, m->vocab, o->short_types ? m->vocab - 1 : m->vocab);

    tbuf b = {0};
    tb_put(&b, "GGUF", 4);
    tb_u32(&b, o->version ? o->version : 3);
    tb_u64(&b, l->n);
    tb_u64(&b, g.n);
    tb_put(&b, g.b.data, g.b.len);
    lay->meta_end = b.len;
    size_t off = 0;
    for (size_t i = 0; i < l->n; i++) {
        const ttensor *t = &l->t[i];
        tb_str(&b, t->gguf_name);
        tb_u32(&b, (uint32_t)t->n_dims);
        for (int d = t->n_dims - 1; d >= 0; d--) tb_u64(&b, (uint64_t)t->shape[d]); /* innermost first */
        tb_u32(&b, o->bad_type == i + 1 ? 12u : (uint32_t)t->dtype);
        tb_u64(&b, off + (o->misalign == i + 1));
        off = (off + t->nbytes + align - 1) / align * align;
    }
    tb_align(&b, align);
    lay->data_start = b.len;
    for (size_t i = 0; i < l->n; i++) {
        tb_put(&b, l->t[i].data, l->t[i].nbytes);
        tb_align(&b, align);
    }
    free(g.b.data);
    return b;
}

/* --------------------------------------------------------------- checks */

void check_store_matches(const pdi_tensor_store *st, const tlist *l)
{
    assert_int_equal(st->n_tensors, l->n);
    for (size_t i = 0; i < l->n; i++) {
        const ttensor *want = &l->t[i];
        const pdi_tensor *t = pdi_store_find(st, want->name);
        if (!t) fail_msg("tensor %s not in the store", want->name);
        assert_int_equal(t->dtype, want->dtype);
        assert_int_equal(t->n_dims, want->n_dims);
        for (int d = 0; d < t->n_dims; d++) assert_int_equal(t->shape[d], want->shape[d]);
        assert_int_equal(t->nbytes, want->nbytes);
        assert_memory_equal(t->data, want->data, want->nbytes);
    }
}

void check_error_(pd_status rc, const pd_error *err, pd_status code, const char *const *needles,
                  const char *file, int line)
{
    bool ok = rc == code && err->code == code;
    for (const char *const *n = needles; ok && *n; n++) ok = strstr(err->message, *n) != NULL;
    if (!ok) {
        print_error("%s:%d: expected status %d, got %d; message: %s\n", file, line, (int)code, (int)rc,
                    err->message);
        for (const char *const *n = needles; *n; n++) print_error("  wanted in message: %s\n", *n);
        _fail(file, line);
    }
    if (getenv("PD_TEST_VERBOSE")) print_message("message: %s\n", err->message);
}
