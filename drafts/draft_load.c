/* draft_load.c - a DFlash or DFlash2 draft from an HF directory: config.json
 * (the Qwen3 dimensions, layer_types, and dflash_config), the safetensors
 * under the z-lab release's names, each checked against the target; the
 * weight matrices kept in the file's float type or quantized (Q8_0, Q4_0),
 * the norms, convolution kernels and codebooks converted to F32. */
#include "drafts.h"

#include "core/kernels.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ config.json */

typedef struct reader {
    const json_t *root, *dflash; /* dflash_config (may be NULL) */
    const char *path;
    pd_error *err;
} reader;

/* A key; null counts as absent. */
static const json_t *member(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* A dflash_config key, else the same key at the top level (as the release's
 * own loader looks them up). */
static const json_t *draft_member(const reader *r, const char *key)
{
    const json_t *v = member(r->dflash, key);
    return v ? v : member(r->root, key);
}

static pd_status int_value(const reader *r, const json_t *v, const char *key, bool required, int32_t def,
                           int32_t *out)
{
    *out = def;
    if (!v) return required ? pdi_set_error(r->err, PD_ERR_FORMAT, "%s: missing %s", r->path, key) : PD_OK;
    if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be an integer", r->path, key);
    *out = (int32_t)json_integer_value(v);
    return PD_OK;
}

static pd_status float_value(const reader *r, const json_t *v, const char *key, float def, float *out)
{
    *out = def;
    if (v && !json_is_number(v)) return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be a number", r->path, key);
    if (v) *out = (float)json_number_value(v);
    return PD_OK;
}

static pd_status top_int(const reader *r, const char *key, bool required, int32_t def, int32_t *out)
{
    return int_value(r, member(r->root, key), key, required, def, out);
}

static pd_status draft_int(const reader *r, const char *key, bool required, int32_t def, int32_t *out)
{
    return int_value(r, draft_member(r, key), key, required, def, out);
}

static pd_status check_architecture(const reader *r, pd_draft *d)
{
    const json_t *archs = member(r->root, "architectures");
    for (size_t i = 0; i < json_array_size(archs); i++) {
        const char *a = json_string_value(json_array_get(archs, i));
        if (a && strcmp(a, "DFlashDraftModel") == 0) d->kind = PD_DRAFT_DFLASH;
        if (a && strcmp(a, "DFlash2DraftModel") == 0) d->kind = PD_DRAFT_DFLASH2;
    }
    if (d->kind) return PD_OK;
    const char *first = json_string_value(json_array_get(archs, 0));
    return pdi_set_error(r->err, PD_ERR_UNSUPPORTED,
                         "%s: architecture %s is not a draft pocketdec runs (DFlashDraftModel or DFlash2DraftModel)",
                         r->path, first ? first : "(none)");
}

/* Plain RoPE only; theta from rope_theta, or from rope_parameters / rope_scaling. */
static pd_status read_rope(const reader *r, float *theta)
{
    const char *keys[] = {"rope_parameters", "rope_scaling"};
    const json_t *src = r->root;
    for (int i = 0; i < 2; i++) {
        const json_t *v = member(r->root, keys[i]);
        if (!v) continue;
        const char *type = json_string_value(member(v, "rope_type"));
        if (!type) type = json_string_value(member(v, "type"));
        if (!type || strcmp(type, "default") != 0)
            return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: %s of type %s is not supported (plain RoPE only)",
                                 r->path, keys[i], type ? type : "(unknown)");
        if (member(v, "rope_theta") && !member(r->root, "rope_theta")) src = v;
    }
    return float_value(r, member(src, "rope_theta"), "rope_theta", 10000.0f, theta);
}

static pd_status check_features(const reader *r)
{
    const json_t *bias = member(r->root, "attention_bias"), *act = member(r->root, "hidden_act");
    if (bias && !json_is_false(bias))
        return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: attention_bias is not supported", r->path);
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu") != 0))
        return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: hidden_act %s is not supported (silu only)", r->path,
                             json_is_string(act) ? json_string_value(act) : "(not a string)");
    return PD_OK;
}

/* layer_types ("full_attention" / "sliding_attention", one a layer; absent:
 * all full), sliding_window, and is_causal: when the config does not say,
 * a sliding layer is causal and a full one is not (the release's rule). */
static pd_status read_layer_types(const reader *r, pd_draft *d)
{
    const json_t *types = member(r->root, "layer_types"), *causal = member(r->root, "is_causal");
    if (causal && !json_is_boolean(causal))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: is_causal must be true or false", r->path);
    if (types && (!json_is_array(types) || json_array_size(types) != (size_t)d->n_layers))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: layer_types must list one type for each of the %d layers",
                             r->path, d->n_layers);
    for (int32_t l = 0; l < d->n_layers; l++) {
        const char *t = types ? json_string_value(json_array_get(types, (size_t)l)) : "full_attention";
        bool sliding = t && strcmp(t, "sliding_attention") == 0;
        if (!t || (!sliding && strcmp(t, "full_attention") != 0))
            return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: layer_types[%d] is %s (full_attention or "
                                 "sliding_attention)", r->path, l, t ? t : "not a string");
        d->layers[l].causal = causal ? json_is_true(causal) : sliding;
        if (!sliding) continue;
        pd_status rc = top_int(r, "sliding_window", true, 0, &d->layers[l].window);
        if (rc) return rc;
        if (d->layers[l].window < 1)
            return pdi_set_error(r->err, PD_ERR_RANGE, "%s: sliding_window %d must be at least 1", r->path,
                                 d->layers[l].window);
    }
    return PD_OK;
}

static pd_status read_target_layers(const reader *r, pd_draft *d)
{
    const json_t *ids = draft_member(r, "target_layer_ids");
    if (!json_is_array(ids) || json_array_size(ids) == 0 || json_array_size(ids) > 1024)
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: dflash_config.target_layer_ids must be a list of layer ids",
                             r->path);
    d->n_targets = (int32_t)json_array_size(ids);
    if (!(d->target_layers = malloc((size_t)d->n_targets * sizeof *d->target_layers)))
        return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    const pd_config *tc = pd_model_config(d->target);
    for (int32_t i = 0; i < d->n_targets; i++) {
        pd_status rc = int_value(r, json_array_get(ids, (size_t)i), "target_layer_ids[]", true, 0, &d->target_layers[i]);
        if (rc) return rc;
        if (d->target_layers[i] < 0 || d->target_layers[i] >= tc->n_layers)
            return pdi_set_error(r->err, PD_ERR_RANGE, "%s: target_layer_ids[%d] = %d is outside the target's %d layers",
                                 r->path, i, d->target_layers[i], tc->n_layers);
    }
    return PD_OK;
}

/* The dimensions, each in range and consistent with the target. */
static pd_status check_dims(const reader *r, const pd_draft *d)
{
    const pd_config *tc = pd_model_config(d->target);
    const int32_t *dims[] = {&d->n_layers, &d->hidden, &d->n_heads, &d->n_kv_heads, &d->head_dim, &d->ffn};
    const char *names[] = {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
                           "head_dim", "intermediate_size"};
    for (int i = 0; i < 6; i++)
        if (*dims[i] < 1 || *dims[i] > (i == 0 ? 1024 : 1 << 20))
            return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s = %d is out of range", r->path, names[i], *dims[i]);
    if (d->n_heads % d->n_kv_heads || d->head_dim % 2)
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %d heads over %d KV heads of dimension %d (heads must be a "
                             "multiple of KV heads, head_dim even)", r->path, d->n_heads, d->n_kv_heads, d->head_dim);
    if (d->hidden != tc->hidden || d->vocab != tc->vocab)
        return pdi_set_error(r->err, PD_ERR_SHAPE, "%s: the draft's hidden size %d and vocabulary %d differ from the "
                             "target's %d and %d", r->path, d->hidden, d->vocab, tc->hidden, tc->vocab);
    if (d->mask_id < 0 || d->mask_id >= tc->vocab)
        return pdi_set_error(r->err, PD_ERR_RANGE, "%s: mask_token_id %d is outside the target's vocabulary of %d",
                             r->path, d->mask_id, tc->vocab);
    if (d->block_size < 2 || d->block_size > 256)
        return pdi_set_error(r->err, PD_ERR_RANGE, "%s: block_size %d is outside [2, 256]", r->path, d->block_size);
    if (!(d->rms_eps > 0) || !(d->rope_theta > 0) || !isfinite(d->output_multiplier) || !(d->softcap >= 0) ||
        !isfinite(d->embed_scale))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: rms_norm_eps, rope_theta, output_multiplier, "
                             "final_logit_softcapping or input_embedding_scale is not a valid number", r->path);
    if (d->kind != PD_DRAFT_DFLASH2) return PD_OK;
    if (d->taps < 1 || d->taps > d->block_size || d->group_size < 1 || d->hidden % d->group_size)
        return pdi_set_error(r->err, PD_ERR_RANGE, "%s: conv_kernel_size %d must be in [1, block_size] and "
                             "conv_group_size %d must divide hidden_size %d", r->path, d->taps, d->group_size,
                             d->hidden);
    if (d->rank < 1 || d->rank > 1 << 16 || d->top_k < 1 || d->top_k > d->vocab || d->top_k > 1024)
        return pdi_set_error(r->err, PD_ERR_RANGE, "%s: selector_rank %d or selector_top_k %d is out of range",
                             r->path, d->rank, d->top_k);
    return PD_OK;
}

static pd_status read_config(const reader *r, pd_draft *d)
{
    const pd_config *tc = pd_model_config(d->target);
    pd_status rc = check_architecture(r, d);
    if (rc == PD_OK) rc = check_features(r);
    if (rc == PD_OK) rc = top_int(r, "num_hidden_layers", true, 0, &d->n_layers);
    if (rc == PD_OK) rc = top_int(r, "hidden_size", true, 0, &d->hidden);
    if (rc == PD_OK) rc = top_int(r, "num_attention_heads", true, 0, &d->n_heads);
    if (rc == PD_OK) rc = top_int(r, "num_key_value_heads", false, d->n_heads, &d->n_kv_heads);
    if (rc == PD_OK) rc = top_int(r, "head_dim", false, d->n_heads > 0 ? d->hidden / d->n_heads : 0, &d->head_dim);
    if (rc == PD_OK) rc = top_int(r, "intermediate_size", true, 0, &d->ffn);
    if (rc == PD_OK) rc = top_int(r, "vocab_size", false, tc->vocab, &d->vocab);
    if (rc == PD_OK) rc = float_value(r, member(r->root, "rms_norm_eps"), "rms_norm_eps", 1e-6f, &d->rms_eps);
    if (rc == PD_OK) rc = read_rope(r, &d->rope_theta);
    if (rc == PD_OK) rc = draft_int(r, "block_size", false, 16, &d->block_size);
    if (rc == PD_OK) rc = draft_int(r, "mask_token_id", true, 0, &d->mask_id);
    if (rc == PD_OK)
        rc = float_value(r, draft_member(r, "output_multiplier"), "output_multiplier", 1.0f, &d->output_multiplier);
    if (rc == PD_OK)
        rc = float_value(r, draft_member(r, "final_logit_softcapping"), "final_logit_softcapping", 0.0f, &d->softcap);
    if (rc == PD_OK)
        rc = float_value(r, draft_member(r, "input_embedding_scale"), "input_embedding_scale", 1.0f, &d->embed_scale);
    if (rc == PD_OK && d->kind == PD_DRAFT_DFLASH2) {
        rc = draft_int(r, "conv_kernel_size", true, 0, &d->taps);
        if (rc == PD_OK) rc = draft_int(r, "conv_group_size", true, 0, &d->group_size);
        if (rc == PD_OK) rc = draft_int(r, "selector_rank", true, 0, &d->rank);
        if (rc == PD_OK) rc = draft_int(r, "selector_top_k", true, 0, &d->top_k);
    }
    if (rc == PD_OK) rc = check_dims(r, d);
    if (rc == PD_OK && !(d->layers = calloc((size_t)d->n_layers, sizeof *d->layers)))
        rc = pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    if (rc == PD_OK) rc = read_layer_types(r, d);
    if (rc == PD_OK) rc = read_target_layers(r, d);
    return rc;
}

/* ----------------------------------------------------------------- tensors */

typedef struct taker {
    const pdi_tensor_store *st;
    pd_draft *d;
    pd_error *err;
    int group; /* rows a group of the kernels' interleaved layout (0: none) */
} taker;

/* Tensor name checked to have shape [d0] (d1 == 0), [d0, d1] or [d0, d1, d2]
 * (d2 > 0); NULL (err set) when it is missing or differs. */
static const pdi_tensor *expect(const taker *k, const char *name, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t shape[3] = {d0, d1, d2};
    int n_dims = d2 ? 3 : d1 ? 2 : 1;
    if (pdi_store_expect(k->st, name, n_dims, shape, false, NULL, k->d->source, k->err)) return NULL;
    return pdi_store_find(k->st, name);
}

/* bytes of memory the draft owns (freed with it); NULL (err set) when out of memory */
static void *own(const taker *k, size_t bytes, const char *name)
{
    void *copy = malloc(bytes ? bytes : 1);
    void **owned = pdi_grow(k->d->owned, &k->d->cap_owned, k->d->n_owned + 1, sizeof *owned);
    if (!copy || !owned) {
        free(copy);
        pdi_set_error(k->err, PD_ERR_NOMEM, "%s: out of memory for tensor %s", k->d->source, name);
        return NULL;
    }
    k->d->owned = owned;
    owned[k->d->n_owned++] = copy;
    return copy;
}

/* An F32 copy of tensor name of the shape expect() checks. */
static const float *take(const taker *k, const char *name, int64_t d0, int64_t d1, int64_t d2)
{
    const pdi_tensor *t = expect(k, name, d0, d1, d2);
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1) * (size_t)(d2 ? d2 : 1);
    float *copy = t ? own(k, n * sizeof *copy, name) : NULL;
    if (copy) pdi_row_to_f32(t->dtype, t->data, copy, (int64_t)n);
    return copy;
}

/* Weight matrix name [rows][cols]: a copy in the file's float type, or
 * quantized as the draft's quantize asks (whole blocks of columns only). */
static bool take_matrix(const taker *k, const char *name, int64_t rows, int64_t cols, pdi_draft_matrix *m)
{
    static const pdi_dtype quant_types[] = {[PD_QUANT_Q8_0] = PD_Q8_0, [PD_QUANT_Q4_0] = PD_Q4_0};
    const pdi_tensor *t = expect(k, name, rows, cols, 0);
    if (!t) return false;
    bool quantize = k->d->quantize != PD_QUANT_NONE;
    pdi_dtype type = quantize ? quant_types[k->d->quantize]
                     : t->dtype == PD_F16 || t->dtype == PD_BF16 ? t->dtype : PD_F32;
    if (quantize && cols % pdi_dtype_block_len(type)) {
        pdi_set_error(k->err, PD_ERR_SHAPE, "%s: %s has %lld columns, not whole blocks of %d: it cannot be quantized",
                      k->d->source, name, (long long)cols, pdi_dtype_block_len(type));
        return false;
    }
    *m = (pdi_draft_matrix){.dtype = type, .rows = rows, .cols = cols, .row_bytes = pdi_dtype_row_bytes(type, cols)};
    /* quantized rows in whole groups are packed as the kernels read them, from a plain copy */
    m->interleave = quantize && k->group && rows % k->group == 0 ? k->group : 0;
    size_t bytes = (size_t)rows * m->row_bytes;
    uint8_t *data = own(k, bytes, name);
    if (!data) return false;
    uint8_t *plain = m->interleave ? malloc(bytes) : data;
    float *row = plain ? malloc((size_t)cols * sizeof *row) : NULL;
    if (!row) {
        if (plain != data) free(plain);
        pdi_set_error(k->err, PD_ERR_NOMEM, "%s: out of memory for tensor %s", k->d->source, name);
        return false;
    }
    const size_t file_row = pdi_dtype_row_bytes(t->dtype, cols);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *src = (const uint8_t *)t->data + (size_t)r * file_row;
        if (type == t->dtype) {
            memcpy(plain + (size_t)r * m->row_bytes, src, m->row_bytes);
            continue;
        }
        pdi_row_to_f32(t->dtype, src, row, cols);
        if (quantize) pdi_quantize_row(type, row, cols, plain + (size_t)r * m->row_bytes);
        else memcpy(plain + (size_t)r * m->row_bytes, row, m->row_bytes);
    }
    if (m->interleave) {
        pdi_x_pack(type, m->interleave, plain, m->row_bytes, rows, data);
        free(plain);
    }
    free(row);
    m->data = data;
    return true;
}

/* The release names its codebooks without ".weight"; a file written through
 * nn.Embedding has it. */
static const float *take_codebook(const taker *k, const char *name, int64_t rows, int64_t cols)
{
    char with[96];
    snprintf(with, sizeof with, "%s.weight", name);
    return take(k, pdi_store_find(k->st, name) || !pdi_store_find(k->st, with) ? name : with, rows, cols, 0);
}

static bool take_conv(const taker *k, int32_t l, const char *which, pdi_draft_conv *c)
{
    const pd_draft *d = k->d;
    char name[96];
    snprintf(name, sizeof name, "layers.%d.%s.base_kernel", l, which);
    c->base = take(k, name, 2, d->taps, d->hidden);
    snprintf(name, sizeof name, "layers.%d.%s.kernel_projection.weight", l, which);
    return c->base && take_matrix(k, name, 2 * (int64_t)d->taps * (d->hidden / d->group_size), d->hidden, &c->proj);
}

static bool take_layer(const taker *k, int32_t l)
{
    const pd_draft *d = k->d;
    pdi_draft_layer *L = &d->layers[l];
    int64_t H = d->hidden, Q = (int64_t)d->n_heads * d->head_dim, KV = (int64_t)d->n_kv_heads * d->head_dim;
    const struct {
        const float **dst;
        const char *name;
        int64_t n;
    } norms[] = {
        {&L->attn_norm, "input_layernorm.weight", H},
        {&L->ffn_norm, "post_attention_layernorm.weight", H},
        {&L->q_norm, "self_attn.q_norm.weight", d->head_dim},
        {&L->k_norm, "self_attn.k_norm.weight", d->head_dim},
    };
    const struct {
        pdi_draft_matrix *dst;
        const char *name;
        int64_t rows, cols;
    } matrices[] = {
        {&L->wq, "self_attn.q_proj.weight", Q, H},
        {&L->wk, "self_attn.k_proj.weight", KV, H},
        {&L->wv, "self_attn.v_proj.weight", KV, H},
        {&L->wo, "self_attn.o_proj.weight", H, Q},
        {&L->w_gate, "mlp.gate_proj.weight", d->ffn, H},
        {&L->w_up, "mlp.up_proj.weight", d->ffn, H},
        {&L->w_down, "mlp.down_proj.weight", H, d->ffn},
    };
    char name[128];
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        snprintf(name, sizeof name, "layers.%d.%s", l, norms[i].name);
        if (!(*norms[i].dst = take(k, name, norms[i].n, 0, 0))) return false;
    }
    for (size_t i = 0; i < sizeof matrices / sizeof matrices[0]; i++) {
        snprintf(name, sizeof name, "layers.%d.%s", l, matrices[i].name);
        if (!take_matrix(k, name, matrices[i].rows, matrices[i].cols, matrices[i].dst)) return false;
    }
    if (d->kind != PD_DRAFT_DFLASH2) return true;
    return take_conv(k, l, "attention_conv", &L->attn_conv) && take_conv(k, l, "mlp_conv", &L->mlp_conv);
}

static pd_status take_tensors(const pdi_tensor_store *st, pd_draft *d, pd_error *err)
{
    taker k = {st, d, err, pdi_kernels_select()->interleave};
    int64_t H = d->hidden;
    if (!take_matrix(&k, "fc.weight", H, (int64_t)d->n_targets * H, &d->fc) ||
        !(d->hidden_norm = take(&k, "hidden_norm.weight", H, 0, 0)) || !(d->final_norm = take(&k, "norm.weight", H, 0, 0)))
        return err ? err->code : PD_ERR_SHAPE;
    for (int32_t l = 0; l < d->n_layers; l++)
        if (!take_layer(&k, l)) return err ? err->code : PD_ERR_SHAPE;
    if (d->kind == PD_DRAFT_DFLASH2 &&
        (!take_matrix(&k, "candidate_selector.hidden_projection.weight", d->rank, H, &d->sel_proj) ||
         !(d->sel_pred = take_codebook(&k, "candidate_selector.predecessor_codebook", d->vocab, d->rank)) ||
         !(d->sel_succ = take_codebook(&k, "candidate_selector.successor_codebook", d->vocab, d->rank))))
        return err ? err->code : PD_ERR_SHAPE;
    return PD_OK;
}

/* ------------------------------------------------------------------- load */

pd_draft *pd_draft_load(const char *dir, const pd_model *target, pd_error *err)
{
    return pd_draft_load_quantized(dir, target, PD_QUANT_NONE, err);
}

pd_draft *pd_draft_load_quantized(const char *dir, const pd_model *target, pd_weight_quant quantize, pd_error *err)
{
    if (!dir || !target) {
        pdi_set_error(err, PD_ERR_ARG, "draft: no directory or no target model");
        return NULL;
    }
    if (quantize != PD_QUANT_NONE && quantize != PD_QUANT_Q8_0 && quantize != PD_QUANT_Q4_0) {
        const char *name = pd_quant_type_name(quantize);
        pdi_set_error(err, PD_ERR_ARG, "%s: a draft is quantized at load as q8_0 or q4_0, not as %s", dir,
                      name ? name : "an unknown type");
        return NULL;
    }
    pd_status rc = pdi_hf_dir_check(dir, err);
    if (rc) return NULL;
    pd_draft *d = calloc(1, sizeof *d);
    char *config = pdi_path_join(dir, "config.json");
    json_t *root = NULL;
    pdi_tensor_store st;
    pdi_store_init(&st);
    if (!d || !config || !(d->source = strdup(dir))) {
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    } else {
        d->target = target;
        d->quantize = quantize;
        rc = pdi_json_load_object(config, &root, err);
    }
    if (rc == PD_OK) {
        reader r = {root, member(root, "dflash_config"), config, err};
        if (r.dflash && !json_is_object(r.dflash))
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: dflash_config is not an object", config);
        else
            rc = read_config(&r, d);
    }
    if (rc == PD_OK) rc = pdi_hf_tensors_load(dir, &st, err);
    if (rc == PD_OK) rc = take_tensors(&st, d, err);
    json_decref(root);
    pdi_store_free(&st); /* the weights are copies: the files are closed */
    free(config);
    if (rc) {
        pd_draft_free(d);
        return NULL;
    }
    return d;
}

void pd_draft_free(pd_draft *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->n_owned; i++) free(d->owned[i]);
    free(d->owned);
    free(d->layers);
    free(d->target_layers);
    free(d->source);
    free(d);
}

pd_draft_kind pd_draft_get_kind(const pd_draft *d) { return d->kind; }
int32_t pd_draft_block_size(const pd_draft *d) { return d->block_size; }
int32_t pd_draft_mask_id(const pd_draft *d) { return d->mask_id; }
int32_t pd_draft_n_target_layers(const pd_draft *d) { return d->n_targets; }
int32_t pd_draft_target_layer(const pd_draft *d, int32_t i) { return i >= 0 && i < d->n_targets ? d->target_layers[i] : -1; }
int32_t pd_draft_feature_size(const pd_draft *d) { return d->n_targets * d->hidden; }
const pd_model *pd_draft_target(const pd_draft *d) { return d->target; }
