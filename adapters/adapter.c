/* adapter.c - PEFT LoRA adapters: the tensors of adapter_model.safetensors
 * paired into (A, B) per projection, checked against a base, and applied
 * through the library's derived-model seam (pdi_model_derive). */
#include "adapter_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One adapted projection. */
typedef struct target {
    char *module;        /* "model.layers.3.self_attn.q_proj" */
    char *a_key, *b_key; /* the tensors' keys in the file, for messages */
    int64_t rank, rows, cols;
    float *A, *B;        /* [rank][cols], [rows][rank] */
} target;

struct pd_adapter {
    char *dir;
    peft_config cfg;
    float scale;
    target *targets;
    size_t n_targets;
};

void pd_adapter_free(pd_adapter *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n_targets; i++) {
        free(a->targets[i].module);
        free(a->targets[i].a_key);
        free(a->targets[i].b_key);
        free(a->targets[i].A);
        free(a->targets[i].B);
    }
    free(a->targets);
    free(a->cfg.base_model);
    free(a->dir);
    free(a);
}

int32_t pd_adapter_rank(const pd_adapter *a) { return a ? (int32_t)a->cfg.r : 0; }
float pd_adapter_scale(const pd_adapter *a) { return a ? a->scale : 0.0f; }
size_t pd_adapter_n_targets(const pd_adapter *a) { return a ? a->n_targets : 0; }
const char *pd_adapter_base_model(const pd_adapter *a) { return a ? a->cfg.base_model : ""; }

/* ------------------------------------------------------------------ keys */

/* The projections that can be adapted, and the dimensions of their [out, in]. */
enum dim { D_HIDDEN, D_Q, D_KV, D_FFN };
static const struct {
    const char *name;
    enum dim out, in;
} projections[] = {
    {"self_attn.q_proj", D_Q, D_HIDDEN},  {"self_attn.k_proj", D_KV, D_HIDDEN}, {"self_attn.v_proj", D_KV, D_HIDDEN},
    {"self_attn.o_proj", D_HIDDEN, D_Q},  {"mlp.gate_proj", D_FFN, D_HIDDEN},   {"mlp.up_proj", D_FFN, D_HIDDEN},
    {"mlp.down_proj", D_HIDDEN, D_FFN},
};
#define N_PROJ (sizeof projections / sizeof projections[0])

/* Index into projections of "model.layers.N.<projection>", -1 if it is not one;
 * *layer receives N. */
static int projection_of(const char *module, size_t len, long *layer)
{
    const char *pre = "model.layers.";
    size_t np = strlen(pre);
    if (len <= np || strncmp(module, pre, np) != 0) return -1;
    const char *p = module + np, *end = module + len;
    if (*p < '0' || *p > '9' || (*p == '0' && p + 1 < end && p[1] != '.')) return -1;
    long l = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (l > 1000000) return -1;
        l = l * 10 + (*p - '0');
    }
    if (p == end || *p++ != '.') return -1;
    for (size_t k = 0; k < N_PROJ; k++)
        if ((size_t)(end - p) == strlen(projections[k].name) && strncmp(p, projections[k].name, (size_t)(end - p)) == 0) {
            *layer = l;
            return (int)k;
        }
    return -1;
}

/* Split a key "[base_model.model.]MODULE.lora_A[.NAME].weight" into the module
 * span, A or B, and the adapter name span (empty when absent). */
typedef struct key_parts {
    const char *module;
    size_t module_len;
    char which; /* 'A' or 'B' */
    const char *name;
    size_t name_len;
} key_parts;

static pd_status refuse_key(const char *key, const char *path, pd_error *err)
{
    if (strstr(key, "lora_magnitude_vector"))
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s is a DoRA magnitude: DoRA is not supported", path,
                             key);
    if (strstr(key, "lora_embedding_") || strstr(key, "embed_tokens") || strstr(key, "lm_head"))
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s adapts the embeddings or the LM head: only the "
                             "q, k, v, o, gate, up and down projections can be adapted", path, key);
    if (strstr(key, ".lora_") && strstr(key, ".bias"))
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s is a LoRA bias: LoRA biases are not supported",
                             path, key);
    return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s is not a LoRA weight of a projection "
                         "(model.layers.N.self_attn|mlp.X_proj.lora_A|lora_B[.NAME].weight)", path, key);
}

static pd_status split_key(const char *key, const char *path, key_parts *k, pd_error *err)
{
    const char *s = key;
    if (strncmp(s, "base_model.model.", 17) == 0) s += 17;
    const char *a = strstr(s, ".lora_A."), *b = strstr(s, ".lora_B.");
    const char *at = a ? a : b;
    if (!at || (a && b)) return refuse_key(key, path, err);
    const char *tail = at + 8; /* after ".lora_X." */
    size_t tl = strlen(tail);
    if (tl < 6 || strcmp(tail + tl - 6, "weight") != 0 || (tl > 6 && tail[tl - 7] != '.'))
        return refuse_key(key, path, err);
    k->module = s;
    k->module_len = (size_t)(at - s);
    k->which = a ? 'A' : 'B';
    k->name = tail;
    k->name_len = tl > 6 ? tl - 7 : 0;
    if (memchr(k->name, '.', k->name_len)) return refuse_key(key, path, err);
    long layer;
    if (projection_of(k->module, k->module_len, &layer) < 0) return refuse_key(key, path, err);
    return PD_OK;
}

/* --------------------------------------------------------------- loading */

static target *find_or_add(pd_adapter *a, const key_parts *k, size_t cap)
{
    for (size_t i = 0; i < a->n_targets; i++)
        if (strlen(a->targets[i].module) == k->module_len && !strncmp(a->targets[i].module, k->module, k->module_len))
            return &a->targets[i];
    if (a->n_targets == cap) return NULL;
    target *t = &a->targets[a->n_targets];
    memset(t, 0, sizeof *t);
    if (!(t->module = strndup(k->module, k->module_len))) return NULL;
    a->n_targets++;
    return t;
}

/* Copy a 2-D tensor to F32 (any safetensors dtype). */
static float *to_f32(const pdi_tensor *t)
{
    size_t n = (size_t)t->shape[0] * (size_t)t->shape[1], bytes;
    if (!pdi_mul_size(n, sizeof(float), &bytes)) return NULL;
    float *d = malloc(bytes ? bytes : 1);
    if (!d) return NULL;
    size_t rb = pdi_dtype_row_bytes(t->dtype, t->shape[1]);
    for (int64_t r = 0; r < t->shape[0]; r++)
        pdi_row_to_f32(t->dtype, t->data + (size_t)r * rb, d + (size_t)r * (size_t)t->shape[1], t->shape[1]);
    return d;
}

static pd_status add_tensor(pd_adapter *a, const pdi_tensor *t, const char *path, size_t cap, const key_parts *first,
                            pd_error *err)
{
    key_parts k;
    pd_status rc = split_key(t->name, path, &k, err);
    if (rc) return rc;
    if (k.name_len != first->name_len || strncmp(k.name, first->name, k.name_len) != 0)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s belongs to another adapter than %s (one adapter "
                             "a directory)", path, t->name, a->n_targets ? a->targets[0].a_key : "the first tensor");
    if (t->n_dims != 2)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has %d dimensions, not 2", path, t->name, t->n_dims);
    int64_t rank = k.which == 'A' ? t->shape[0] : t->shape[1];
    if (rank != a->cfg.r)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s is [%lld, %lld]: rank %lld, but adapter_config.json "
                             "says r = %lld", path, t->name, (long long)t->shape[0], (long long)t->shape[1],
                             (long long)rank, (long long)a->cfg.r);
    target *tg = find_or_add(a, &k, cap);
    if (!tg) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    float **data = k.which == 'A' ? &tg->A : &tg->B;
    char **key = k.which == 'A' ? &tg->a_key : &tg->b_key;
    if (*data) return pdi_set_error(err, PD_ERR_FORMAT, "%s: tensor %s appears twice", path, t->name);
    if (!(*key = strdup(t->name)) || !(*data = to_f32(t)))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for %s", path, t->name);
    tg->rank = rank;
    if (k.which == 'A') tg->cols = t->shape[1];
    else tg->rows = t->shape[0];
    return PD_OK;
}

static pd_status load_tensors(pd_adapter *a, const char *path, pd_error *err)
{
    pdi_tensor_store st;
    pdi_store_init(&st);
    pd_status rc = pdi_safetensors_add(&st, path, err);
    if (!rc && st.n_tensors == 0) rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: holds no tensors", path);
    if (!rc && !(a->targets = calloc(st.n_tensors, sizeof *a->targets)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    key_parts first;
    if (!rc) rc = split_key(st.tensors[0].name, path, &first, err);
    for (size_t i = 0; !rc && i < st.n_tensors; i++) rc = add_tensor(a, &st.tensors[i], path, st.n_tensors, &first, err);
    for (size_t i = 0; !rc && i < a->n_targets; i++) {
        const target *t = &a->targets[i];
        if (!t->A || !t->B)
            rc = pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has no matching lora_%c: both A and B are needed",
                               path, t->A ? t->a_key : t->b_key, t->A ? 'B' : 'A');
    }
    pdi_store_free(&st);
    return rc;
}

pd_adapter *pd_adapter_load(const char *dir, pd_error *err)
{
    pd_error local;
    if (!err) err = &local;
    if (!dir || !*dir) {
        pdi_set_error(err, PD_ERR_ARG, "adapter: no directory given");
        return NULL;
    }
    pd_adapter *a = calloc(1, sizeof *a);
    char *config = pdi_path_join(dir, "adapter_config.json");
    char *tensors = pdi_path_join(dir, "adapter_model.safetensors");
    if (!a || !config || !tensors || !(a->dir = strdup(dir))) {
        free(config);
        free(tensors);
        pd_adapter_free(a);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
        return NULL;
    }
    pd_status rc = peft_config_load(config, &a->cfg, err);
    if (!rc) {
        a->scale = (float)(a->cfg.use_rslora ? a->cfg.lora_alpha / sqrt((double)a->cfg.r)
                                             : a->cfg.lora_alpha / (double)a->cfg.r);
        rc = load_tensors(a, tensors, err);
    }
    free(config);
    free(tensors);
    if (rc) {
        pd_adapter_free(a);
        return NULL;
    }
    return a;
}

/* -------------------------------------------------------------- applying */

static int64_t dim_of(const pd_config *c, enum dim d)
{
    switch (d) {
    case D_HIDDEN: return c->hidden;
    case D_Q: return (int64_t)c->n_heads * c->head_dim;
    case D_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case D_FFN: return c->ffn;
    }
    return 0;
}

/* Does target t fit the base of config c? Names the tensor and both shapes. */
static pd_status check_fit(const pd_adapter *a, const target *t, const pd_config *c, pd_error *err)
{
    long layer;
    int p = projection_of(t->module, strlen(t->module), &layer);
    if (p < 0) return pdi_set_error(err, PD_ERR_INTERNAL, "%s: unparsed module %s", a->dir, t->module);
    if (layer >= c->n_layers)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s adapts layer %ld, the model has %d layers", a->dir,
                             t->a_key, layer, c->n_layers);
    int64_t out = dim_of(c, projections[p].out), in = dim_of(c, projections[p].in);
    if (t->cols != in)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s is [%lld, %lld], but the base's %s.weight is [%lld, %lld]",
                             a->dir, t->a_key, (long long)t->rank, (long long)t->cols, t->module, (long long)out,
                             (long long)in);
    if (t->rows != out)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s is [%lld, %lld], but the base's %s.weight is [%lld, %lld]",
                             a->dir, t->b_key, (long long)t->rows, (long long)t->rank, t->module, (long long)out,
                             (long long)in);
    return PD_OK;
}

/* The hidden size an adapter was made for shows in A of the projections that
 * read the residual stream and in B of those that write it. */
static pd_status check_hidden(const pd_adapter *a, const target *t, const pd_config *c, pd_error *err)
{
    long layer;
    int p = projection_of(t->module, strlen(t->module), &layer);
    bool reads = p >= 0 && projections[p].in == D_HIDDEN, writes = p >= 0 && projections[p].out == D_HIDDEN;
    int64_t h = reads ? t->cols : t->rows;
    if ((reads || writes) && h != c->hidden)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: adapter made for hidden size %lld, the model's is %d (tensor %s "
                             "is [%lld, %lld])", a->dir, (long long)h, c->hidden, reads ? t->a_key : t->b_key,
                             (long long)(reads ? t->rank : t->rows), (long long)(reads ? t->cols : t->rank));
    return PD_OK;
}

pd_model *pd_model_apply_adapters(const pd_model *base, const pd_adapter *const *adapters, const float *weights,
                                  size_t n, pd_apply_mode mode, pd_error *err)
{
    if (!base || (n > 0 && !adapters) || mode < PD_APPLY_AUTO || mode > PD_APPLY_RUNTIME) {
        pdi_set_error(err, PD_ERR_ARG, "applying adapters: no base model, no adapters or an unknown mode");
        return NULL;
    }
    const pd_config *c = pd_model_config(base);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!adapters[i]) {
            pdi_set_error(err, PD_ERR_ARG, "applying adapters: adapter %zu is NULL", i);
            return NULL;
        }
        if (weights && !isfinite(weights[i])) {
            pdi_set_error(err, PD_ERR_ARG, "%s: the weight of the adapter is not finite", adapters[i]->dir);
            return NULL;
        }
        for (size_t k = 0; k < adapters[i]->n_targets; k++)
            if (check_hidden(adapters[i], &adapters[i]->targets[k], c, err)) return NULL;
        for (size_t k = 0; k < adapters[i]->n_targets; k++)
            if (check_fit(adapters[i], &adapters[i]->targets[k], c, err)) return NULL;
        total += adapters[i]->n_targets;
    }
    pdi_lowrank *u = calloc(total ? total : 1, sizeof *u);
    char **names = calloc(total ? total : 1, sizeof *names);
    pd_model *m = NULL;
    if (!u || !names) {
        pdi_set_error(err, PD_ERR_NOMEM, "applying adapters: out of memory");
        goto done;
    }
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        const pd_adapter *a = adapters[i];
        for (size_t k = 0; k < a->n_targets; k++, j++) {
            const target *t = &a->targets[k];
            size_t len = strlen(t->module) + sizeof ".weight";
            if (!(names[j] = malloc(len))) {
                pdi_set_error(err, PD_ERR_NOMEM, "applying adapters: out of memory");
                goto done;
            }
            snprintf(names[j], len, "%s.weight", t->module);
            u[j] = (pdi_lowrank){names[j], t->rows, t->cols, t->rank, a->scale * (weights ? weights[i] : 1.0f),
                                t->A, t->B};
        }
    }
    static const pdi_derive_mode modes[] = {PD_DERIVE_AUTO, PD_DERIVE_MERGE, PD_DERIVE_RUNTIME};
    m = pdi_model_derive(base, u, total, modes[mode], err);
done:
    for (size_t i = 0; names && i < total; i++) free(names[i]);
    free(names);
    free(u);
    return m;
}
