/* hf.c - HF model directories: config.json and (sharded) safetensors. */
#include "formats.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------- config.json */

typedef struct cfg_reader {
    const json_t *root;
    const char *path;
    pd_error *err;
} cfg_reader;

/* HF writes null for "use the default": treat it as absent. */
static const json_t *get(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static pd_status read_int(const cfg_reader *r, const char *key, bool required, int32_t def, int32_t *out)
{
    const json_t *v = get(r->root, key);
    if (!v) {
        *out = def;
        return required ? pdi_set_error(r->err, PD_ERR_FORMAT, "%s: missing %s", r->path, key) : PD_OK;
    }
    if (!json_is_integer(v))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be an integer", r->path, key);
    json_int_t x = json_integer_value(v);
    if (x < INT32_MIN || x > INT32_MAX)
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s = %lld is out of range", r->path, key, (long long)x);
    *out = (int32_t)x;
    return PD_OK;
}

static pd_status read_float(const cfg_reader *r, const json_t *obj, const char *key, float def, float *out)
{
    const json_t *v = get(obj, key);
    if (v && !json_is_number(v))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be a number", r->path, key);
    *out = v ? (float)json_number_value(v) : def;
    return PD_OK;
}

static pd_status read_bool(const cfg_reader *r, const char *key, bool *out)
{
    const json_t *v = get(r->root, key);
    if (v && !json_is_boolean(v))
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be true or false", r->path, key);
    *out = v && json_is_true(v);
    return PD_OK;
}

/* bos_token_id / eos_token_id: null, an id, or a list of ids (the first counts). */
static pd_status read_token_id(const cfg_reader *r, const char *key, int32_t *out)
{
    const json_t *v = get(r->root, key);
    if (json_is_array(v)) v = json_array_get(v, 0);
    *out = -1;
    if (!v || json_is_null(v)) return PD_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return pdi_set_error(r->err, PD_ERR_FORMAT, "%s: %s must be null, a token id or a list of ids",
                             r->path, key);
    *out = (int32_t)json_integer_value(v);
    return PD_OK;
}

static pd_status check_architecture(const cfg_reader *r)
{
    const json_t *archs = get(r->root, "architectures"), *mt = get(r->root, "model_type");
    const char *first = json_string_value(json_array_get(archs, 0)); /* NULL when absent */
    for (size_t i = 0; i < json_array_size(archs); i++)
        if (json_is_string(json_array_get(archs, i)) &&
            strcmp(json_string_value(json_array_get(archs, i)), "Qwen3ForCausalLM") == 0)
            return PD_OK;
    if (json_is_string(mt) && strcmp(json_string_value(mt), "qwen3") == 0) return PD_OK;
    return pdi_set_error(r->err, PD_ERR_UNSUPPORTED,
                         "%s: architecture %s (model_type %s) is not supported; pocketdec runs "
                         "Qwen3ForCausalLM", r->path, first ? first : "(none)",
                         json_is_string(mt) ? json_string_value(mt) : "(none)");
}

/* RoPE: plain rotation only. Newer transformers write {"rope_type": "default",
 * "rope_theta": ...} in rope_scaling or rope_parameters; that is no scaling. */
static pd_status read_rope(const cfg_reader *r, float *theta)
{
    const char *keys[] = {"rope_scaling", "rope_parameters"};
    const json_t *params = NULL;
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = get(r->root, keys[i]);
        if (!v) continue;
        const json_t *type = json_is_object(v) ? get(v, "rope_type") : NULL;
        if (!type && json_is_object(v)) type = get(v, "type");
        const char *t = json_string_value(type);
        if (!t || strcmp(t, "default") != 0)
            return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: %s of type %s is not supported (plain RoPE "
                                 "only)", r->path, keys[i], t ? t : "(unknown)");
        if (get(v, "rope_theta")) params = v;
    }
    /* A top-level rope_theta wins; HF's Qwen3Config defaults it to 10000. */
    const json_t *src = (get(r->root, "rope_theta") || !params) ? r->root : params;
    return read_float(r, src, "rope_theta", PD_DEFAULT_ROPE_THETA, theta);
}

/* Features of the HF Qwen3 code that our forward pass does not implement. */
static pd_status check_features(const cfg_reader *r)
{
    bool bias = false, sliding = false;
    pd_status rc = read_bool(r, "attention_bias", &bias);
    if (rc == PD_OK) rc = read_bool(r, "use_sliding_window", &sliding);
    if (rc) return rc;
    if (bias || sliding)
        return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: %s is true; pocketdec does not support it",
                             r->path, bias ? "attention_bias" : "use_sliding_window");
    const json_t *act = get(r->root, "hidden_act");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "silu") != 0))
        return pdi_set_error(r->err, PD_ERR_UNSUPPORTED, "%s: hidden_act %s is not supported (silu only)",
                             r->path, json_is_string(act) ? json_string_value(act) : "(not a string)");
    return PD_OK;
}

static pd_status read_config(const cfg_reader *r, pd_config *cfg)
{
    pd_status rc = check_architecture(r);
    if (rc == PD_OK) rc = check_features(r);
    if (rc == PD_OK) rc = read_int(r, "num_hidden_layers", true, 0, &cfg->n_layers);
    if (rc == PD_OK) rc = read_int(r, "hidden_size", true, 0, &cfg->hidden);
    if (rc == PD_OK) rc = read_int(r, "num_attention_heads", true, 0, &cfg->n_heads);
    if (rc == PD_OK) rc = read_int(r, "num_key_value_heads", false, cfg->n_heads, &cfg->n_kv_heads);
    if (rc == PD_OK)
        rc = read_int(r, "head_dim", false, cfg->n_heads > 0 ? cfg->hidden / cfg->n_heads : 0, &cfg->head_dim);
    if (rc == PD_OK) rc = read_int(r, "intermediate_size", true, 0, &cfg->ffn);
    if (rc == PD_OK) rc = read_int(r, "vocab_size", true, 0, &cfg->vocab);
    if (rc == PD_OK)
        rc = read_int(r, "max_position_embeddings", false, PD_DEFAULT_MAX_POSITIONS, &cfg->max_positions);
    if (rc == PD_OK) rc = read_rope(r, &cfg->rope_theta);
    if (rc == PD_OK) rc = read_float(r, r->root, "rms_norm_eps", PD_DEFAULT_RMS_EPS, &cfg->rms_eps);
    bool tied = false; /* HF's Qwen3Config default */
    if (rc == PD_OK) rc = read_bool(r, "tie_word_embeddings", &tied);
    cfg->tied_embeddings = tied;
    if (rc == PD_OK) rc = read_token_id(r, "bos_token_id", &cfg->bos_id);
    if (rc == PD_OK) rc = read_token_id(r, "eos_token_id", &cfg->eos_id);
    if (rc == PD_OK) rc = pdi_config_validate(cfg, r->path, r->err);
    return rc;
}

pd_status pdi_json_load_object(const char *path, json_t **root, pd_error *err)
{
    char *text;
    size_t len;
    pd_status rc = pdi_read_file(path, &text, &len, err);
    if (rc) return rc;
    json_error_t je;
    *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!*root)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
    if (!json_is_object(*root)) {
        json_decref(*root);
        *root = NULL;
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: the top level is not a JSON object", path);
    }
    return PD_OK;
}

pd_status pdi_hf_config_load(const char *path, pd_config *cfg, pd_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bos_id = cfg->eos_id = -1;
    json_t *root;
    pd_status rc = pdi_json_load_object(path, &root, err);
    if (rc) return rc;
    cfg_reader r = {root, path, err};
    rc = read_config(&r, cfg);
    json_decref(root);
    return rc;
}

/* --------------------------------------------------------- model directory */

/* A shard named by the index, and the mapping it was loaded into. */
typedef struct shard {
    const char *file;
    size_t map;
} shard;

/* Load the shard `file` unless already loaded; *which receives its slot. */
static pd_status load_shard(pdi_tensor_store *st, const char *dir, const char *index, const char *file,
                            shard *shards, size_t *n_shards, size_t *which, pd_error *err)
{
    for (size_t i = 0; i < *n_shards; i++)
        if (strcmp(shards[i].file, file) == 0) return *which = i, PD_OK;
    /* Shards live next to the index: a path there could reach any file. */
    if (!*file || strchr(file, '/') || strcmp(file, ".") == 0 || strcmp(file, "..") == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: shard name \"%s\" is not a plain file name", index, file);
    char *path = pdi_path_join(dir, file);
    if (!path) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", index);
    pd_status rc = pdi_safetensors_add(st, path, err);
    free(path);
    if (rc) return rc;
    shards[*n_shards] = (shard){file, st->n_maps - 1};
    *which = (*n_shards)++;
    return PD_OK;
}

static pd_status load_index(pdi_tensor_store *st, const char *dir, const char *index, pd_error *err)
{
    json_t *root;
    pd_status rc = pdi_json_load_object(index, &root, err);
    if (rc) return rc;
    const json_t *map = json_object_get(root, "weight_map");
    shard *shards = NULL;
    size_t n_shards = 0, which = 0;
    if (!json_is_object(map))
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: no weight_map object", index);
    else if (!(shards = malloc((json_object_size(map) + 1) * sizeof *shards)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", index);
    const char *name;
    const json_t *file;
    if (rc == PD_OK) {
        json_object_foreach((json_t *)map, name, file) {
            if (!json_is_string(file))
                rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: weight_map entry %s is not a file name", index, name);
            else
                rc = load_shard(st, dir, index, json_string_value(file), shards, &n_shards, &which, err);
            if (rc) break;
            const pdi_tensor *t = pdi_store_find(st, name);
            if (!t || !pdi_mapping_holds(&st->maps[shards[which].map], t)) {
                rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: weight_map puts %s in %s, which does not hold it",
                                   index, name, json_string_value(file));
                break;
            }
        }
    }
    free(shards);
    json_decref(root);
    return rc;
}

pd_status pdi_hf_dir_check(const char *dir, pd_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) return pdi_set_error(err, PD_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return pdi_set_error(err, PD_ERR_IO, "%s: not a directory", dir);
    return PD_OK;
}

pd_status pdi_hf_tensors_load(const char *dir, pdi_tensor_store *st, pd_error *err)
{
    char *single = pdi_path_join(dir, "model.safetensors"), *index = pdi_path_join(dir, "model.safetensors.index.json");
    pd_status rc;
    if (!single || !index) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    else if (access(single, F_OK) == 0) rc = pdi_safetensors_add(st, single, err);
    else if (access(index, F_OK) == 0) rc = load_index(st, dir, index, err);
    else rc = pdi_set_error(err, PD_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir);
    free(single);
    free(index);
    return rc;
}

pd_status pdi_hf_dir_load(const char *dir, pdi_tensor_store *st, pd_config *cfg, pd_error *err)
{
    pd_status rc = pdi_hf_dir_check(dir, err);
    if (rc) return rc;
    size_t n_tensors = st->n_tensors, n_maps = st->n_maps;
    char *config = pdi_path_join(dir, "config.json");
    rc = config ? pdi_hf_config_load(config, cfg, err) : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
    if (rc == PD_OK) rc = pdi_hf_tensors_load(dir, st, err);
    if (rc == PD_OK) rc = pdi_check_qwen3_tensors(st, cfg, dir, err);
    if (rc) pdi_store_rollback(st, n_tensors, n_maps);
    free(config);
    return rc;
}
