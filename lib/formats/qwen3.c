/* qwen3.c - checks shared by the HF and GGUF loaders: the dimensions of a
 * Qwen3 config and the tensors such a model needs. */
#include "formats.h"

#include <math.h>
#include <stdio.h>

pd_status pdi_config_validate(const pd_config *cfg, const char *source, pd_error *err)
{
    const struct {
        const char *name;
        int32_t value, max;
    } dims[] = {
        {"num_hidden_layers", cfg->n_layers, PD_MAX_LAYERS},
        {"hidden_size", cfg->hidden, PD_MAX_DIM},
        {"num_attention_heads", cfg->n_heads, PD_MAX_DIM},
        {"num_key_value_heads", cfg->n_kv_heads, PD_MAX_DIM},
        {"head_dim", cfg->head_dim, PD_MAX_DIM},
        {"intermediate_size", cfg->ffn, PD_MAX_DIM},
        {"vocab_size", cfg->vocab, PD_MAX_DIM},
        {"max_position_embeddings", cfg->max_positions, PD_MAX_POSITIONS},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].value < 1 || dims[i].value > dims[i].max)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: %s = %d is out of range (1..%d)", source,
                                 dims[i].name, (int)dims[i].value, (int)dims[i].max);
    if (cfg->n_heads % cfg->n_kv_heads != 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: num_attention_heads %d is not a multiple of "
                             "num_key_value_heads %d", source, (int)cfg->n_heads, (int)cfg->n_kv_heads);
    if (cfg->head_dim % 2 != 0) /* rotate-half RoPE splits each head in two */
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: head_dim %d is odd", source, (int)cfg->head_dim);
    if ((int64_t)cfg->n_heads * cfg->head_dim > PD_MAX_DIM)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: num_attention_heads * head_dim = %lld is out of range "
                             "(limit %d)", source, (long long)cfg->n_heads * cfg->head_dim, PD_MAX_DIM);
    if (!isfinite(cfg->rope_theta) || cfg->rope_theta <= 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: rope_theta %g must be positive", source,
                             (double)cfg->rope_theta);
    if (!isfinite(cfg->rms_eps) || cfg->rms_eps <= 0 || cfg->rms_eps >= 1)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: rms_norm_eps %g must be in (0, 1)", source,
                             (double)cfg->rms_eps);
    if (cfg->bos_id < -1 || cfg->eos_id < -1)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: negative bos/eos token id", source);
    return PD_OK;
}

pd_status pdi_store_expect(const pdi_tensor_store *st, const char *name, int n_dims, const int64_t *shape,
                        bool optional, bool *found, const char *source, pd_error *err)
{
    const pdi_tensor *t = pdi_store_find(st, name);
    char want[96], got[96];
    pdi_shape_str(want, sizeof want, n_dims, shape);
    if (found) *found = t != NULL;
    if (!t) {
        if (optional) return PD_OK;
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: missing tensor %s (expected shape %s)", source, name,
                             want);
    }
    bool same = t->n_dims == n_dims;
    for (int i = 0; same && i < n_dims; i++) same = t->shape[i] == shape[i];
    if (!same) {
        pdi_shape_str(got, sizeof got, t->n_dims, t->shape);
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has shape %s, expected %s for this config",
                             pdi_store_tensor_path(st, t), name, got, want);
    }
    if (!pdi_dtype_known((int)t->dtype) && t->dtype != PD_Q4_64) /* Q4_64: an MNN export's */
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: tensor %s has unsupported type %d",
                             pdi_store_tensor_path(st, t), name, (int)t->dtype);
    return PD_OK;
}

pd_status pdi_check_qwen3_tensors(const pdi_tensor_store *st, pd_config *cfg, const char *source,
                                  pd_error *err)
{
    enum { H, Q, KV, F, V, HD, NONE };
    const int64_t dim[] = {cfg->hidden, (int64_t)cfg->n_heads * cfg->head_dim,
                           (int64_t)cfg->n_kv_heads * cfg->head_dim, cfg->ffn, cfg->vocab, cfg->head_dim};
    /* Per-layer tensors: name after "model.layers.N." and shape [d0] or [d0, d1]. */
    static const struct {
        const char *suffix;
        int d0, d1;
    } layer[] = {
        {"input_layernorm.weight", H, NONE},
        {"self_attn.q_proj.weight", Q, H},
        {"self_attn.k_proj.weight", KV, H},
        {"self_attn.v_proj.weight", KV, H},
        {"self_attn.o_proj.weight", H, Q},
        {"self_attn.q_norm.weight", HD, NONE},
        {"self_attn.k_norm.weight", HD, NONE},
        {"post_attention_layernorm.weight", H, NONE},
        {"mlp.gate_proj.weight", F, H},
        {"mlp.up_proj.weight", F, H},
        {"mlp.down_proj.weight", H, F},
    };
    const int64_t vh[2] = {dim[V], dim[H]};
    pd_status rc = pdi_store_expect(st, "model.embed_tokens.weight", 2, vh, false, NULL, source, err);
    if (rc) return rc;
    char name[128];
    for (int l = 0; l < cfg->n_layers; l++) {
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++) {
            snprintf(name, sizeof name, "model.layers.%d.%s", l, layer[i].suffix);
            int64_t shape[2] = {dim[layer[i].d0], layer[i].d1 == NONE ? 0 : dim[layer[i].d1]};
            rc = pdi_store_expect(st, name, layer[i].d1 == NONE ? 1 : 2, shape, false, NULL, source, err);
            if (rc) return rc;
        }
    }
    rc = pdi_store_expect(st, "model.norm.weight", 1, &dim[H], false, NULL, source, err);
    if (rc) return rc;
    /* An LM head is used when present, even if the config says tied. */
    bool has_head;
    rc = pdi_store_expect(st, "lm_head.weight", 2, vh, cfg->tied_embeddings != 0, &has_head, source, err);
    if (rc) return rc;
    cfg->tied_embeddings = !has_head;
    return PD_OK;
}
