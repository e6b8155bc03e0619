/* peft_config.c - adapter_config.json: the LoRA numbers, and refusal of every
 * PEFT setting that would make the applied adapter differ from PEFT's. */
#include "adapter_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A member that is absent, null, false, 0, "" or an empty array/object: a
 * setting left at PEFT's default. */
static bool unset(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v)) return true;
    if (json_is_string(v)) return json_string_length(v) == 0;
    if (json_is_array(v)) return json_array_size(v) == 0;
    if (json_is_object(v)) return json_object_size(v) == 0;
    if (json_is_integer(v)) return json_integer_value(v) == 0;
    return false;
}

/* Settings PEFT may write that change what the adapter computes. */
static const struct {
    const char *key, *what;
} refused[] = {
    {"use_dora", "DoRA (weight-decomposed LoRA)"},
    {"lora_bias", "LoRA biases (lora_bias)"},
    {"modules_to_save", "modules_to_save (fully trained copies of modules)"},
    {"rank_pattern", "rank_pattern (per-module ranks)"},
    {"alpha_pattern", "alpha_pattern (per-module alphas)"},
    {"fan_in_fan_out", "fan_in_fan_out (transposed Conv1D weights)"},
    {"layer_replication", "layer_replication"},
    {"trainable_token_indices", "trainable_token_indices (embedding updates)"},
    {"target_parameters", "target_parameters"},
    {"use_qalora", "QALoRA"},
};

/* target_modules must not reach the embeddings or the LM head. */
static bool reaches_embeddings(const char *name)
{
    return strstr(name, "embed_tokens") || strstr(name, "lm_head");
}

static pd_status check_targets(const json_t *t, const char *path, pd_error *err)
{
    if (json_is_string(t) && reaches_embeddings(json_string_value(t)))
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: target_modules \"%s\" reaches the embeddings or lm_head: "
                             "only the q, k, v, o, gate, up and down projections can be adapted", path,
                             json_string_value(t));
    if (json_is_array(t)) {
        size_t i;
        json_t *v;
        json_array_foreach(t, i, v) {
            if (!json_is_string(v))
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: target_modules[%zu] is not a string", path, i);
            if (reaches_embeddings(json_string_value(v)))
                return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: target module %s is an embedding or the LM head: "
                                     "only the q, k, v, o, gate, up and down projections can be adapted", path,
                                     json_string_value(v));
        }
    } else if (t && !json_is_string(t) && !json_is_null(t)) {
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: target_modules must be a list of names or a string", path);
    }
    return PD_OK;
}

static pd_status parse(const json_t *root, const char *path, peft_config *cfg, pd_error *err)
{
    if (!json_is_object(root)) return pdi_set_error(err, PD_ERR_FORMAT, "%s: not a JSON object", path);
    const char *type = json_string_value(json_object_get(root, "peft_type"));
    if (!type) return pdi_set_error(err, PD_ERR_FORMAT, "%s: peft_type is missing", path);
    if (strcmp(type, "LORA") != 0)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: peft_type %s is not supported (only LORA)", path, type);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!unset(json_object_get(root, refused[i].key)))
            return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: %s: not supported (%s is set)", path, refused[i].what,
                                 refused[i].key);
    const char *bias = json_string_value(json_object_get(root, "bias"));
    if (bias && strcmp(bias, "none") != 0)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: LoRA bias \"%s\" is not supported (only \"none\")", path,
                             bias);
    pd_status rc = check_targets(json_object_get(root, "target_modules"), path, err);
    if (rc) return rc;

    const json_t *r = json_object_get(root, "r");
    if (!json_is_integer(r) || json_integer_value(r) < 1)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: r must be a positive integer", path);
    cfg->r = (int64_t)json_integer_value(r);
    const json_t *alpha = json_object_get(root, "lora_alpha");
    cfg->lora_alpha = 8.0; /* PEFT's default */
    if (alpha && !json_is_number(alpha))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: lora_alpha must be a number", path);
    if (alpha) cfg->lora_alpha = json_number_value(alpha);
    const json_t *rs = json_object_get(root, "use_rslora");
    if (rs && !json_is_boolean(rs) && !json_is_null(rs))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: use_rslora must be true or false", path);
    cfg->use_rslora = json_is_true(rs);
    const char *base = json_string_value(json_object_get(root, "base_model_name_or_path"));
    if (!(cfg->base_model = strdup(base ? base : "")))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    return PD_OK;
}

pd_status peft_config_load(const char *path, peft_config *cfg, pd_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    char *text;
    size_t len;
    pd_status rc = pdi_read_file(path, &text, &len, err);
    if (rc) return rc;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root) return pdi_set_error(err, PD_ERR_FORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    rc = parse(root, path, cfg, err);
    json_decref(root);
    if (rc) {
        free(cfg->base_model);
        cfg->base_model = NULL;
    }
    return rc;
}
