/* model.c - load an HF directory, an MNN export folder or a GGUF file into an immutable pd_model
 * (its weights rewritten at load: model_weights.c). */
#include "model.h"

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pd_status matrix_from(pdi_matrix *m, const pdi_tensor_store *st, const char *name, const char *src,
                             pd_error *err)
{
    const pdi_tensor *t = pdi_store_find(st, name);
    if (!t) return pdi_set_error(err, PD_ERR_SHAPE, "%s: missing tensor %s", src, name);
    if (t->n_dims != 2) return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s is not a matrix", src, name);
    m->dtype = t->dtype;
    m->rows = t->shape[0];
    m->cols = t->shape[1];
    m->row_bytes = pdi_dtype_row_bytes(t->dtype, m->cols);
    m->data = t->data;
    if (m->row_bytes == 0 || m->row_bytes * (size_t)m->rows != t->nbytes)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s: %zu bytes do not hold [%lld, %lld] %s", src, name,
                             t->nbytes, (long long)m->rows, (long long)m->cols, pdi_dtype_name(t->dtype));
    return PD_OK;
}

/* Copy a 1-D weight of n elements to F32 (norms are tiny; F32 keeps them exact). */
static pd_status vector_from(float *dst, int64_t n, const pdi_tensor_store *st, const char *name, const char *src,
                             pd_error *err)
{
    const pdi_tensor *t = pdi_store_find(st, name);
    if (!t) return pdi_set_error(err, PD_ERR_SHAPE, "%s: missing tensor %s", src, name);
    if (t->n_dims != 1 || t->shape[0] != n || pdi_dtype_row_bytes(t->dtype, n) != t->nbytes)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s must be a vector of %lld elements", src, name,
                             (long long)n);
    pdi_row_to_f32(t->dtype, t->data, dst, n);
    return PD_OK;
}

static pd_status bind_weights(pd_model *m, pd_error *err)
{
    const pd_config *c = &m->cfg;
    const char *src = m->source;
    const pdi_tensor_store *st = &m->store;
    pd_status rc;
    if ((rc = matrix_from(&m->embed, st, "model.embed_tokens.weight", src, err))) return rc;
    if (pdi_store_find(st, "lm_head.weight")) {
        if ((rc = matrix_from(&m->lm_head, st, "lm_head.weight", src, err))) return rc;
    } else {
        m->lm_head = m->embed;
    }
    m->cfg.tied_embeddings = m->lm_head.data == m->embed.data;

    size_t per_layer = 2 * (size_t)c->hidden + 2 * (size_t)c->head_dim;
    m->norm_storage = malloc(((size_t)c->n_layers * per_layer + (size_t)c->hidden) * sizeof(float));
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->norm_storage || !m->layers) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", src);

    float *norms = m->norm_storage;
    char name[128];
#define LAYER_NAME(fmt) (snprintf(name, sizeof name, "model.layers.%d." fmt, l), name)
    for (int l = 0; l < c->n_layers; l++) {
        pdi_layer *L = &m->layers[l];
        float *an = norms, *fn = an + c->hidden, *qn = fn + c->hidden, *kn = qn + c->head_dim;
        norms = kn + c->head_dim;
        if ((rc = vector_from(an, c->hidden, st, LAYER_NAME("input_layernorm.weight"), src, err)) ||
            (rc = vector_from(fn, c->hidden, st, LAYER_NAME("post_attention_layernorm.weight"), src, err)) ||
            (rc = vector_from(qn, c->head_dim, st, LAYER_NAME("self_attn.q_norm.weight"), src, err)) ||
            (rc = vector_from(kn, c->head_dim, st, LAYER_NAME("self_attn.k_norm.weight"), src, err)) ||
            (rc = matrix_from(&L->wq, st, LAYER_NAME("self_attn.q_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->wk, st, LAYER_NAME("self_attn.k_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->wv, st, LAYER_NAME("self_attn.v_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->wo, st, LAYER_NAME("self_attn.o_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->w_gate, st, LAYER_NAME("mlp.gate_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->w_up, st, LAYER_NAME("mlp.up_proj.weight"), src, err)) ||
            (rc = matrix_from(&L->w_down, st, LAYER_NAME("mlp.down_proj.weight"), src, err)))
            return rc;
        L->attn_norm = an;
        L->ffn_norm = fn;
        L->q_norm = qn;
        L->k_norm = kn;
    }
#undef LAYER_NAME
    m->final_norm = norms;
    return vector_from(norms, c->hidden, st, "model.norm.weight", src, err);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static pd_status load_tokenizer(pd_model *m, const pdi_vocab_parts *vocab, pd_error *err)
{
    /* A tokenizer.json beside the weights wins: it is the full HF description. */
    struct stat sb;
    char *dir = strdup(m->source);
    if (dir && !(stat(m->source, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        char *slash = strrchr(dir, '/'); /* a .gguf file: look in its directory */
        if (slash)
            slash[slash == dir ? 1 : 0] = '\0';
        else
            strcpy(dir, ".");
    }
    char *path = dir ? pdi_path_join(dir, "tokenizer.json") : NULL;
    free(dir);
    if (!path) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", m->source);
    bool beside = stat(path, &sb) == 0;
    if (beside) m->tokenizer = pd_tokenizer_load(path, err);
    free(path);
    if (beside) return m->tokenizer ? PD_OK : err->code;
    if (vocab && vocab->n_tokens > 0) {
        m->tokenizer = pdi_tokenizer_from_parts(vocab, m->source, err);
        return m->tokenizer ? PD_OK : err->code;
    }
    return PD_OK; /* no tokenizer: ids only */
}

pd_model *pd_model_load(const char *path, const pd_model_params *params, pd_error *err)
{
    pd_error local;
    if (!err) err = &local;
    if (!path || !*path) {
        pdi_set_error(err, PD_ERR_ARG, "model: no path given");
        return NULL;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        pdi_set_error(err, PD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    pd_model *m = calloc(1, sizeof *m);
    if (!m || !(m->source = strdup(path))) {
        free(m);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    pdi_store_init(&m->store);
    pdi_vocab_parts vocab;
    memset(&vocab, 0, sizeof vocab);
    pd_status rc;
    if (S_ISDIR(sb.st_mode) && pdi_mnn_dir(path)) {
        m->format = "mnn";
        rc = pdi_mnn_load(path, &m->store, &m->cfg, &vocab, err);
    } else if (S_ISDIR(sb.st_mode)) {
        m->format = "hf";
        rc = pdi_hf_dir_load(path, &m->store, &m->cfg, err);
    } else if (ends_with(path, ".gguf") || S_ISREG(sb.st_mode)) {
        m->format = "gguf";
        rc = pdi_gguf_load(path, &m->store, &m->cfg, &vocab, err);
    } else {
        rc = pdi_set_error(err, PD_ERR_IO, "%s: neither a model directory nor a .gguf file", path);
    }
    if (rc == PD_OK) rc = bind_weights(m, err);
    if (rc == PD_OK) rc = load_tokenizer(m, &vocab, err);
    if (rc == PD_OK && m->tokenizer && pd_tokenizer_n_vocab(m->tokenizer) > m->cfg.vocab)
        rc = pdi_set_error(err, PD_ERR_SHAPE, "%s: the tokenizer has %d ids but the model only %d rows", path,
                           pd_tokenizer_n_vocab(m->tokenizer), m->cfg.vocab);
    pdi_vocab_parts_free(&vocab);
    if (rc != PD_OK) {
        pd_model_free(m);
        return NULL;
    }
    m->kern = pdi_kernels_select();
    if (params && params->quantize != PD_QUANT_NONE && pdi_model_quantize_weights(m, params->quantize, err) != PD_OK) {
        pd_model_free(m);
        return NULL;
    }
    if (!params || params->layout != PD_LAYOUT_FILE) pdi_model_interleave_weights(m);
    return m;
}

void pd_model_free(pd_model *m)
{
    if (!m) return;
    if (m->base) { /* derived: the rest is base's */
        for (size_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
        free(m->owned);
        free(m->layers);
        free(m->source);
        free(m);
        return;
    }
    for (size_t i = 0; i < m->n_owned; i++) free(m->owned[i]);
    free(m->owned);
    pd_tokenizer_free(m->tokenizer);
    pdi_store_free(&m->store);
    free(m->norm_storage);
    free(m->layers);
    free(m->source);
    free(m);
}

const pd_config *pd_model_config(const pd_model *m) { return &m->cfg; }
const pd_tokenizer *pd_model_tokenizer(const pd_model *m) { return m->tokenizer; }

char *pd_model_info_json(const pd_model *m)
{
    const pd_config *c = &m->cfg;
    json_t *dtypes = json_object();
    uint64_t params = 0;
    size_t bytes = 0;
    const pd_model *root = m;
    while (root->base) root = root->base;
    for (size_t i = 0; i < root->store.n_tensors; i++) {
        const pdi_tensor *t = &root->store.tensors[i];
        uint64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= (uint64_t)t->shape[d];
        params += n;
        bytes += t->nbytes;
        const char *dn = pdi_dtype_name(t->dtype);
        json_int_t prev = json_integer_value(json_object_get(dtypes, dn));
        json_object_set_new(dtypes, dn, json_integer(prev + 1));
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:b, s:I, s:I, s:o, s:s}",
                          "architecture", "qwen3", "format", m->format, "source", m->source,
                          "n_layers", c->n_layers, "hidden", c->hidden, "n_heads", c->n_heads,
                          "n_kv_heads", c->n_kv_heads, "head_dim", c->head_dim, "ffn", c->ffn, "vocab", c->vocab,
                          "max_positions", c->max_positions, "rope_theta", (double)c->rope_theta,
                          "rms_eps", (double)c->rms_eps, "tied_embeddings", c->tied_embeddings,
                          "parameters", (json_int_t)params, "weight_bytes", (json_int_t)bytes,
                          "tensor_dtypes", dtypes, "kernels", m->kern->name);
    if (!o) return NULL;
    json_object_set_new(o, "interleaved_matrices", json_integer(m->n_interleaved));
    json_object_set_new(o, "derived", json_boolean(m->base != NULL));
    json_object_set_new(o, "tokenizer_vocab",
                        m->tokenizer ? json_integer(pd_tokenizer_n_vocab(m->tokenizer)) : json_null());
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}
