/* mnn.c - an MNN LLM export folder into the tensor store (mnn.h): the graph's
 * 4-bit weights checked against llm_config.json and llm.mnn.weight, then
 * repacked once into Q4_64 blocks (the same nibbles and F16 scales: no float
 * copy), the norms read in place. */
#include "mnn.h"

#include "core/threadpool.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct mnn_load {
    const char *graph_path, *weight_path, *config_path;
    pdi_tensor_store *st;
    size_t wi; /* the weight file's mapping in st (st->maps may move as it grows) */
    pd_config *cfg;
    pd_error *err;
    uint8_t *out; /* next free byte of the repacked blocks */
    struct repack_job *jobs; /* the matrices to repack, once all are checked */
    size_t n_jobs, cap_jobs;
} mnn_load;

bool pdi_mnn_dir(const char *dir)
{
    char *p = pdi_path_join(dir, "llm.mnn");
    struct stat sb;
    bool yes = p && stat(p, &sb) == 0;
    free(p);
    return yes;
}

/* ------------------------------------------------------- llm_config.json */

typedef struct mnn_embed {
    bool present;
    int64_t weight_offset, alpha_offset, alpha_size;
} mnn_embed;

static pd_status config_int(const mnn_load *m, const json_t *obj, const char *key, bool required, int64_t def,
                            int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v) return required ? pdi_set_error(m->err, PD_ERR_FORMAT, "%s: missing %s", m->config_path, key) : PD_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return pdi_set_error(m->err, PD_ERR_FORMAT, "%s: %s must be a non-negative integer", m->config_path, key);
    *out = json_integer_value(v);
    return PD_OK;
}

/* Whether obj[key] is absent or the string want; refused naming both otherwise. */
static pd_status config_is(const mnn_load *m, const json_t *obj, const char *key, const char *want, bool required)
{
    const json_t *v = json_object_get(obj, key);
    if (!v && !required) return PD_OK;
    if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)
        return pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: %s is %s%s%s; pocketdec reads %s", m->config_path, key,
                             json_is_string(v) ? "\"" : "", json_is_string(v) ? json_string_value(v) : "not a string",
                             json_is_string(v) ? "\"" : "", want);
    return PD_OK;
}

static pd_status read_config(mnn_load *m, int64_t *hidden, int64_t *layers, mnn_embed *emb)
{
    json_t *root;
    pd_status rc = pdi_json_load_object(m->config_path, &root, m->err);
    if (rc) return rc;
    int64_t max_pos = 0, bits = 0, block = 0;
    rc = config_is(m, root, "model_type", "qwen3", true);
    if (rc == PD_OK) rc = config_int(m, root, "hidden_size", true, 0, hidden);
    if (rc == PD_OK) rc = config_int(m, root, "layer_nums", true, 0, layers);
    if (rc == PD_OK) rc = config_int(m, root, "max_position_embeddings", false, PD_DEFAULT_MAX_POSITIONS, &max_pos);
    if (rc == PD_OK && json_is_true(json_object_get(root, "is_mrope")))
        rc = pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: is_mrope: multimodal RoPE is not supported", m->config_path);
    if (rc == PD_OK) rc = config_is(m, root, "attention_type", "full", false);
    const json_t *tie = json_object_get(root, "tie_embeddings");
    if (rc == PD_OK && !json_is_object(tie))
        rc = pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: no tie_embeddings: embeddings in a separate file are not "
                           "supported (pocketdec reads the int4 table of llm.mnn.weight)", m->config_path);
    if (rc == PD_OK) rc = config_int(m, tie, "weight_offset", true, 0, &emb->weight_offset);
    if (rc == PD_OK) rc = config_int(m, tie, "alpha_offset", true, 0, &emb->alpha_offset);
    if (rc == PD_OK) rc = config_int(m, tie, "alpha_size", true, 0, &emb->alpha_size);
    if (rc == PD_OK) rc = config_int(m, tie, "quant_bit", true, 0, &bits);
    if (rc == PD_OK) rc = config_int(m, tie, "quant_block", true, 0, &block);
    if (rc == PD_OK) rc = config_is(m, tie, "alpha_dtype", "fp16", false);
    if (rc == PD_OK && (bits != 4 || block != 64))
        rc = pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: tie_embeddings has %lld-bit weights in blocks of %lld; "
                           "pocketdec reads 4 bits in blocks of 64", m->config_path, (long long)bits, (long long)block);
    if (rc == PD_OK && (*hidden < 1 || *hidden > PD_MAX_DIM || max_pos < 1 || max_pos > PD_MAX_POSITIONS))
        rc = pdi_set_error(m->err, PD_ERR_FORMAT, "%s: hidden_size %lld or max_position_embeddings %lld out of range",
                           m->config_path, (long long)*hidden, (long long)max_pos);
    m->cfg->max_positions = (int32_t)max_pos;
    emb->present = true;
    json_decref(root);
    return rc;
}

/* ------------------------------------------------------------- weights */

/* The bytes [offset, offset + n) of the weight file, or NULL (error set). */
static const uint8_t *weight_range(mnn_load *m, const char *op, const char *what, int64_t offset, int64_t n)
{
    const pdi_mapping *w = &m->st->maps[m->wi];
    if (offset < 0 || n < 0 || (uint64_t)offset > w->size || (uint64_t)n > w->size - (uint64_t)offset) {
        pdi_set_error(m->err, PD_ERR_FORMAT, "%s: op %s: %s at offset %lld (%lld bytes) run past the end of the file "
                      "(%zu bytes)", m->weight_path, op, what, (long long)offset, (long long)n, w->size);
        return NULL;
    }
    return w->data + offset;
}

/* The eight bytes of v spread to the even bytes of a 64-bit word, low first
 * (byte i to byte 2i), the odd bytes zero: four at a time. */
static uint64_t spread_bytes(uint32_t v)
{
    uint64_t x = v;
    x = (x | x << 16) & 0x0000FFFF0000FFFFull;
    return (x | x << 8) & 0x00FF00FF00FF00FFull;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8) p[i] = (uint8_t)v;
}

/* A block of 64 of MNN's nibbles (element k in byte k/2, the high nibble when
 * k is even) as Q4_64's two halves (byte j of half h: element 32h+j low,
 * 32h+j+16 high). A half's bytes 2i and 2i+1 take the nibbles of MNN's byte
 * i (elements 2i, 2i+1) and byte i+8 (2i+16, 2i+17), so eight bytes at a
 * time: the even output bytes from one word, the odd from another. */
static void repack_nibbles(const uint8_t *src, uint8_t *out)
{
    const uint64_t low = 0x0F0F0F0F0F0F0F0Full;
    for (int h = 0; h < 2; h++) {
        const uint64_t lo = le64(src + 16 * h), hi = le64(src + 16 * h + 8);
        const uint64_t even = (lo >> 4 & low) | (hi & ~low), odd = (lo & low) | (hi << 4 & ~low);
        put_le64(out + 16 * h, spread_bytes((uint32_t)even) | spread_bytes((uint32_t)odd) << 8);
        put_le64(out + 16 * h + 8, spread_bytes((uint32_t)(even >> 32)) | spread_bytes((uint32_t)(odd >> 32)) << 8);
    }
}

/* One matrix to repack: rows of MNN's nibbles (row-major) with their F16
 * (zero, scale) pairs, w = zero + (q - 8) * scale, into Q4_64 blocks at out. */
typedef struct repack_job {
    const uint8_t *nib, *alpha;
    int64_t rows, cols;
    uint8_t *out;
} repack_job;

/* Rows [r0, r1) of a repack_job as Q4_64 blocks: d = scale, m = zero -
 * 8 * scale (rounded to F16, at most half an F16 step of m), the nibbles by
 * repack_nibbles. */
static void repack_rows(const repack_job *j, int64_t r0, int64_t r1)
{
    const int64_t nb = j->cols / PD_QBLOCK_64; /* a block's 64 nibbles are 32 whole bytes */
    for (int64_t g = r0 * nb; g < r1 * nb; g++) {
        const uint8_t *a = j->alpha + 4 * g;
        uint8_t *out = j->out + 36 * g;
        const float zero = pdi_f16_to_f32(pdi_load_u16(a)), scale = pdi_f16_to_f32(pdi_load_u16(a + 2));
        const uint16_t m = pdi_f32_to_f16(zero - 8.0f * scale);
        out[0] = a[2], out[1] = a[3];
        out[2] = (uint8_t)m, out[3] = (uint8_t)(m >> 8);
        repack_nibbles(j->nib + 32 * g, out + 4);
    }
}

/* Give back the whole pages of [p, p + n) of a file mapping once repacked: the
 * peak stays near one copy of the weights. */
static void release_pages(const uint8_t *p, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t mask = ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)p + (uintptr_t)page - 1) & mask, e = ((uintptr_t)p + n) & mask;
    if (b < e) madvise((void *)b, e - b, MADV_DONTNEED);
}

/* A matrix registered at its place in the repacked blocks; the repack itself
 * waits for repack_all, once every matrix is checked. */
static pd_status add_q4(mnn_load *m, const char *name, const uint8_t *nib, const uint8_t *alpha, int64_t rows,
                        int64_t cols)
{
    const int64_t shape[2] = {rows, cols};
    size_t bytes = (size_t)rows * pdi_dtype_row_bytes(PD_Q4_64, cols);
    repack_job *grown = pdi_grow(m->jobs, &m->cap_jobs, m->n_jobs + 1, sizeof *grown);
    if (!grown) return pdi_set_error(m->err, PD_ERR_NOMEM, "%s: out of memory", m->weight_path);
    m->jobs = grown;
    m->jobs[m->n_jobs++] = (repack_job){nib, alpha, rows, cols, m->out};
    pd_status rc = pdi_store_add_tensor(m->st, name, strlen(name), PD_Q4_64, 2, shape, m->out, bytes, m->err);
    m->out += bytes;
    return rc;
}

/* Rows [r0, r1) of jobs[job]: about 1 MiB of blocks, a unit of repack_all. */
typedef struct {
    size_t job;
    int64_t r0, r1;
} repack_slab;

typedef struct {
    const repack_job *jobs;
    const repack_slab *slabs;
} repack_pass;

/* Slabs [begin, end) repacked, and the weight file's pages under each given
 * back at once, so the peak stays near one copy of the weights. */
static void repack_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const repack_pass *p = arg;
    for (int64_t i = begin; i < end; i++) {
        const repack_slab *s = &p->slabs[i];
        const repack_job *j = &p->jobs[s->job];
        const size_t nib_row = (size_t)j->cols / 2, alpha_row = (size_t)(j->cols / PD_QBLOCK_64) * 4;
        repack_rows(j, s->r0, s->r1);
        release_pages(j->nib + (size_t)s->r0 * nib_row, (size_t)(s->r1 - s->r0) * nib_row);
        release_pages(j->alpha + (size_t)s->r0 * alpha_row, (size_t)(s->r1 - s->r0) * alpha_row);
    }
}

/* Rows of a matrix of cols columns in a slab: about 1 MiB of blocks. */
static int64_t slab_rows(int64_t cols) { return (int64_t)((1u << 20) / pdi_dtype_row_bytes(PD_Q4_64, cols)) + 1; }

/* Every recorded matrix repacked in one parallel pass over slabs of rows
 * across the load pool: one loop, so a worker that another process keeps
 * off its core holds up the load once, not once a matrix. */
static pd_status repack_all(mnn_load *m)
{
    size_t n_slabs = 0;
    for (size_t i = 0; i < m->n_jobs; i++) n_slabs += (size_t)((m->jobs[i].rows - 1) / slab_rows(m->jobs[i].cols) + 1);
    repack_slab *slabs = malloc((n_slabs ? n_slabs : 1) * sizeof *slabs);
    if (!slabs) return pdi_set_error(m->err, PD_ERR_NOMEM, "%s: out of memory", m->weight_path);
    size_t k = 0;
    for (size_t i = 0; i < m->n_jobs; i++) {
        const int64_t per = slab_rows(m->jobs[i].cols);
        for (int64_t r = 0; r < m->jobs[i].rows; r += per)
            slabs[k++] = (repack_slab){i, r, m->jobs[i].rows - r < per ? m->jobs[i].rows : r + per};
    }
    repack_pass pass = {m->jobs, slabs};
    pdi_pool *pool = pdi_pool_for_weights();
    if (pool) pdi_pool_for(pool, (int64_t)k, 1, repack_range, &pass);
    else repack_range(&pass, 0, (int64_t)k, 0);
    pdi_pool_free(pool);
    free(slabs);
    return PD_OK;
}

/* A linear of the graph: shape checked against the config, header checked,
 * repacked under its HF name. */
static pd_status add_linear(mnn_load *m, const pdi_mnn_linear *w, const char *name, int64_t rows, int64_t cols)
{
    if (w->rows != rows || w->cols != cols)
        return pdi_set_error(m->err, PD_ERR_SHAPE, "%s: op %s is [%d, %d], expected [%lld, %lld] for %s with this "
                             "config", m->graph_path, w->op, w->rows, w->cols, (long long)rows, (long long)cols, name);
    const uint8_t *p = weight_range(m, w->op, "the weights", w->offset, w->weight_bytes + w->alpha_bytes);
    if (!p) return m->err->code;
    /* header: 2 dims, the dims (16 or 32 bits), then the 16 entries of the
     * value map, which must be -8..7 (the stored nibble minus 8) */
    int64_t d0 = w->dims32 ? (int64_t)pdi_le32(p + 1) : (int64_t)pdi_le16(p + 1);
    int64_t d1 = w->dims32 ? (int64_t)pdi_le32(p + 5) : (int64_t)pdi_le16(p + 3);
    const uint8_t *map = p + 1 + 2 * (w->dims32 ? 4 : 2);
    bool ok = p[0] == 2 && d0 == rows && d1 == cols && map[0] == 16;
    for (int i = 0; ok && i < 16; i++) ok = (int8_t)map[1 + i] == i - 8;
    if (!ok)
        return pdi_set_error(m->err, PD_ERR_FORMAT, "%s: op %s: the weight header at offset %lld is not that of [%lld, "
                             "%lld] 4-bit values -8..7", m->weight_path, w->op, (long long)w->offset, (long long)rows,
                             (long long)cols);
    return add_q4(m, name, p + w->header, p + w->weight_bytes, rows, cols);
}

static pd_status add_norm(mnn_load *m, const pdi_mnn_norm *nm, const char *name, int64_t n)
{
    if (nm->n != n)
        return pdi_set_error(m->err, PD_ERR_SHAPE, "%s: op %s: a norm of %d, expected %lld for %s", m->graph_path,
                             nm->op, nm->n, (long long)n, name);
    const uint8_t *p = nm->at;
    if (!p && !(p = weight_range(m, nm->op, "the norm's gamma bytes", nm->offset, 4 * n))) return m->err->code;
    if (nm->beta_offset >= 0) {
        const uint8_t *beta = weight_range(m, nm->op, "the norm's beta bytes", nm->beta_offset, 4 * n);
        if (!beta) return m->err->code;
        for (int64_t i = 0; i < n; i++)
            if ((pdi_le32(beta + 4 * i) & 0x7fffffffu) != 0) /* +0 or -0 */
                return pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: op %s: the norm has a bias (beta); RMSNorm has "
                                     "none", m->weight_path, nm->op);
    }
    return pdi_store_add_tensor(m->st, name, strlen(name), PD_F32, 1, &n, p, 4 * (size_t)n, m->err);
}

/* Every tensor of the model: the layers' projections and norms, the final
 * norm, the LM head, and the embedding table of tie_embeddings (the LM head's
 * own blocks when it points at them: tied). */
static pd_status add_tensors(mnn_load *m, const pdi_mnn_graph *g, const mnn_embed *emb)
{
    const pd_config *c = m->cfg;
    const int64_t H = c->hidden, Q = (int64_t)c->n_heads * c->head_dim, KV = (int64_t)c->n_kv_heads * c->head_dim,
                  F = c->ffn, V = c->vocab, D = c->head_dim;
    const pdi_mnn_linear *head = &g->lm_head;
    bool tied = emb->weight_offset == head->offset + head->header && emb->alpha_offset == head->offset +
                head->weight_bytes;
    size_t total = 0, per_layer = 0;
    const int64_t dims[][2] = {{Q, H}, {KV, H}, {KV, H}, {H, Q}, {F, H}, {F, H}, {H, F}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        per_layer += (size_t)dims[i][0] * pdi_dtype_row_bytes(PD_Q4_64, dims[i][1]);
    total = (size_t)c->n_layers * per_layer + (size_t)V * pdi_dtype_row_bytes(PD_Q4_64, H) * (tied ? 1 : 2);
    char what[PD_ERROR_MESSAGE_SIZE];
    snprintf(what, sizeof what, "%s: blocks repacked as Q4_64", m->weight_path);
    pd_status rc = pdi_store_map_anonymous(m->st, total, what, &m->out, m->err);
    char name[128];
    for (int l = 0; rc == PD_OK && l < c->n_layers; l++) {
        const pdi_mnn_layer *L = &g->layers[l];
        const struct {
            const pdi_mnn_linear *w;
            const char *suffix;
        } lin[] = {{&L->q, "self_attn.q_proj"}, {&L->k, "self_attn.k_proj"}, {&L->v, "self_attn.v_proj"},
                   {&L->o, "self_attn.o_proj"}, {&L->gate, "mlp.gate_proj"}, {&L->up, "mlp.up_proj"},
                   {&L->down, "mlp.down_proj"}};
        for (size_t i = 0; rc == PD_OK && i < sizeof lin / sizeof lin[0]; i++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, lin[i].suffix);
            rc = add_linear(m, lin[i].w, name, dims[i][0], dims[i][1]);
        }
        const struct {
            const pdi_mnn_norm *n;
            const char *suffix;
            int64_t len;
        } norms[] = {{&L->attn_norm, "input_layernorm", H}, {&L->ffn_norm, "post_attention_layernorm", H},
                     {&L->q_norm, "self_attn.q_norm", D}, {&L->k_norm, "self_attn.k_norm", D}};
        for (size_t i = 0; rc == PD_OK && i < sizeof norms / sizeof norms[0]; i++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, norms[i].suffix);
            rc = add_norm(m, norms[i].n, name, norms[i].len);
        }
    }
    if (rc == PD_OK) rc = add_norm(m, &g->final_norm, "model.norm.weight", H);
    if (rc == PD_OK) rc = add_linear(m, head, tied ? "model.embed_tokens.weight" : "lm_head.weight", V, H);
    if (rc || tied) return rc;
    /* a table of its own: [vocab, hidden] nibbles then its scale pairs */
    const int64_t alpha = V * (H / PD_QBLOCK_64) * 4;
    if (emb->alpha_size != alpha)
        return pdi_set_error(m->err, PD_ERR_FORMAT, "%s: tie_embeddings.alpha_size %lld, expected %lld for [%lld, %lld]",
                             m->config_path, (long long)emb->alpha_size, (long long)alpha, (long long)V, (long long)H);
    const uint8_t *nib = weight_range(m, "tie_embeddings", "the embedding table", emb->weight_offset, V * H / 2);
    const uint8_t *al = nib ? weight_range(m, "tie_embeddings", "the embedding scales", emb->alpha_offset, alpha) : NULL;
    return al ? add_q4(m, "model.embed_tokens.weight", nib, al, V, H) : m->err->code;
}

/* The model's facts: the graph's, checked against llm_config.json's. */
static pd_status make_config(mnn_load *m, const pdi_mnn_graph *g, int64_t hidden, int64_t layers)
{
    pd_config *c = m->cfg;
    if (layers != g->n_layers)
        return pdi_set_error(m->err, PD_ERR_FORMAT, "%s: layer_nums is %lld but %s has %d layers", m->config_path,
                             (long long)layers, m->graph_path, (int)g->n_layers);
    if (g->lm_head.cols != hidden)
        return pdi_set_error(m->err, PD_ERR_FORMAT, "%s: hidden_size is %lld but the LM head of %s (op %s) reads %d",
                             m->config_path, (long long)hidden, m->graph_path, g->lm_head.op, g->lm_head.cols);
    c->n_layers = g->n_layers;
    c->hidden = (int32_t)hidden;
    c->n_heads = g->n_heads;
    c->n_kv_heads = g->n_kv_heads;
    c->head_dim = g->head_dim;
    c->ffn = g->layers[0].gate.rows;
    c->vocab = g->lm_head.rows;
    c->rope_theta = g->rope_theta;
    c->rms_eps = g->final_norm.eps;
    c->bos_id = c->eos_id = -1;
    for (int l = 0; l < g->n_layers; l++) {
        const pdi_mnn_norm *n[] = {&g->layers[l].attn_norm, &g->layers[l].ffn_norm, &g->layers[l].q_norm,
                                   &g->layers[l].k_norm};
        for (size_t i = 0; i < 4; i++)
            if (n[i]->eps != c->rms_eps)
                return pdi_set_error(m->err, PD_ERR_UNSUPPORTED, "%s: op %s: epsilon %g where the final norm has %g",
                                     m->graph_path, n[i]->op, (double)n[i]->eps, (double)c->rms_eps);
    }
    return pdi_config_validate(c, m->graph_path, m->err);
}

/* The file names of config.json ("llm_model", "llm_weight") when it names them. */
static pd_status file_names(const char *dir, char **graph, char **weight, pd_error *err)
{
    char *path = pdi_path_join(dir, "config.json");
    struct stat sb;
    json_t *root = NULL;
    pd_status rc = PD_OK;
    if (path && stat(path, &sb) == 0) rc = pdi_json_load_object(path, &root, err);
    const char *g = root ? json_string_value(json_object_get(root, "llm_model")) : NULL;
    const char *w = root ? json_string_value(json_object_get(root, "llm_weight")) : NULL;
    if (rc == PD_OK && ((g && strchr(g, '/')) || (w && strchr(w, '/'))))
        rc = pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: llm_model and llm_weight must name files of the folder", path);
    if (rc == PD_OK) {
        *graph = pdi_path_join(dir, g ? g : "llm.mnn");
        *weight = pdi_path_join(dir, w ? w : "llm.mnn.weight");
        if (!*graph || !*weight) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    }
    json_decref(root);
    free(path);
    return rc;
}

pd_status pdi_mnn_load(const char *dir, pdi_tensor_store *st, pd_config *cfg, pdi_vocab_parts *vocab, pd_error *err)
{
    size_t n_tensors = st->n_tensors, n_maps = st->n_maps, gi = 0, wi = 0;
    char *graph = NULL, *weight = NULL, *config = pdi_path_join(dir, "llm_config.json"), *tok = pdi_path_join(dir,
                                                                                                         "tokenizer.txt");
    memset(cfg, 0, sizeof *cfg);
    if (vocab) memset(vocab, 0, sizeof *vocab);
    pdi_mnn_graph g;
    memset(&g, 0, sizeof g);
    mnn_embed emb = {0};
    int64_t hidden = 0, layers = 0;
    pd_status rc = config && tok ? file_names(dir, &graph, &weight, err)
                                 : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    if (rc == PD_OK) rc = pdi_store_map_file(st, graph, &gi, err);
    if (rc == PD_OK) rc = pdi_store_map_file(st, weight, &wi, err);
    mnn_load m = {graph, weight, config, st, wi, cfg, err, NULL, NULL, 0, 0};
    if (rc == PD_OK) rc = pdi_mnn_graph_read(st->maps[gi].data, st->maps[gi].size, graph, &g, err);
    if (rc == PD_OK) rc = read_config(&m, &hidden, &layers, &emb);
    if (rc == PD_OK) rc = make_config(&m, &g, hidden, layers);
    if (rc == PD_OK) rc = add_tensors(&m, &g, &emb);
    if (rc == PD_OK) rc = repack_all(&m);
    free(m.jobs);
    if (rc == PD_OK) rc = pdi_store_check_overlaps(st, n_tensors, weight, err);
    if (rc == PD_OK) {
        cfg->tied_embeddings = 1;
        rc = pdi_check_qwen3_tensors(st, cfg, dir, err);
    }
    if (rc == PD_OK && vocab) rc = pdi_mnn_vocab_parts(tok, vocab, &cfg->eos_id, err);
    pdi_mnn_graph_free(&g);
    free(graph);
    free(weight);
    free(config);
    free(tok);
    if (rc) {
        pdi_vocab_parts_free(vocab);
        pdi_store_rollback(st, n_tensors, n_maps);
    }
    return rc;
}
