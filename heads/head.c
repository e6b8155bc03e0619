/* head.c - decision head files: head.json (type, layout, markers, labels) and
 * head.safetensors (pointer q/k projections or classifier weights; tagger
 * heads in tagger.c), checked against the model they will run on. */
#include "heads.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pdi_marker_default_names[PD_MK_COUNT] = {"<|fim_prefix|>", "<|fim_middle|>", "<|box_start|>",
                                                          "<|box_end|>", "<|fim_suffix|>"};
/* Keys of head.json's "markers" object, in enum order. */
static const char *const marker_keys[PD_MK_COUNT] = {"prefix", "middle", "candidate_start", "candidate_end",
                                                     "suffix"};

pd_status pdi_markers_resolve(const pd_model *model, const char *const names[PD_MK_COUNT], int32_t ids[PD_MK_COUNT],
                              const char *src, pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(model);
    if (!tok) return pdi_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to find the marker tokens in", src);
    int32_t vocab = pd_model_config(model)->vocab;
    for (int k = 0; k < PD_MK_COUNT; k++) {
        ids[k] = pd_tokenizer_token_id(tok, names[k]);
        if (ids[k] < 0 || ids[k] >= vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "%s: marker token '%s' (%s) is not in the model's vocabulary", src,
                                 names[k], marker_keys[k]);
    }
    return PD_OK;
}

void pd_head_free(pd_head *h)
{
    if (!h) return;
    for (int32_t i = 0; i < h->n_labels; i++) free(h->labels[i]);
    free(h->labels);
    free(h->wq);
    free(h->bq);
    free(h->wk);
    free(h->bk);
    free(h->w);
    free(h->b);
    pdi_tagger_free(h->tagger);
    free(h->source);
    free(h);
}

const char *pd_head_type_name(pd_head_type type)
{
    switch (type) {
    case PD_HEAD_POINTER: return "pointer";
    case PD_HEAD_CLASSIFIER: return "classifier";
    case PD_HEAD_VERBALIZER: return "verbalizer";
    case PD_HEAD_TAGGER: return "tagger";
    }
    return "unknown";
}

pd_head_type pd_head_get_type(const pd_head *head) { return head->type; }

const char *const *pd_head_labels(const pd_head *head, int32_t *n)
{
    if (n) *n = head->type == PD_HEAD_CLASSIFIER ? head->n_labels : 0;
    return head->type == PD_HEAD_CLASSIFIER ? (const char *const *)head->labels : NULL;
}

/* ------------------------------------------------------------- head.json */

static pd_status parse_layout(pd_head *h, json_t *root, const char *path, pd_error *err)
{
    json_t *v = json_object_get(root, "layout");
    h->layout = PD_LAYOUT_SEQUENTIAL;
    if (!v) return PD_OK;
    const char *s = json_string_value(v);
    if (s && strcmp(s, "sequential") == 0) return PD_OK;
    if (s && strcmp(s, "parallel") == 0) {
        h->layout = PD_LAYOUT_PARALLEL;
        return PD_OK;
    }
    return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: unknown layout %s%s%s (expected \"sequential\" or \"parallel\")",
                         path, s ? "\"" : "", s ? s : "(not a string)", s ? "\"" : "");
}

static pd_status parse_markers(pd_head *h, json_t *root, const pd_model *model, const char *path, pd_error *err)
{
    const char *names[PD_MK_COUNT];
    json_t *m = json_object_get(root, "markers");
    if (m && !json_is_object(m)) return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"markers\" must be an object", path);
    for (int k = 0; k < PD_MK_COUNT; k++) {
        json_t *v = m ? json_object_get(m, marker_keys[k]) : NULL;
        if (v && !json_is_string(v))
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: markers.%s must be a string", path, marker_keys[k]);
        names[k] = v ? json_string_value(v) : pdi_marker_default_names[k];
    }
    return pdi_markers_resolve(model, names, h->markers, path, err);
}

static pd_status parse_labels(pd_head *h, json_t *root, const char *path, pd_error *err)
{
    json_t *labels = json_object_get(root, "labels");
    if (!json_is_array(labels) || json_array_size(labels) == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: a classifier needs a non-empty \"labels\" array", path);
    size_t n = json_array_size(labels);
    if (n > PD_MAX_CANDIDATES)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s: %zu labels, more than the limit of %d (PD_MAX_CANDIDATES)", path, n,
                             PD_MAX_CANDIDATES);
    h->labels = calloc(n, sizeof *h->labels);
    if (!h->labels) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(labels, i));
        if (!s) return pdi_set_error(err, PD_ERR_FORMAT, "%s: label %zu is not a string", path, i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(h->labels[j], s) == 0)
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: label \"%s\" appears twice", path, s);
        if (!(h->labels[i] = strdup(s))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
        h->n_labels = (int32_t)i + 1;
    }
    json_t *pool = json_object_get(root, "pool");
    if (pool && !(json_is_string(pool) && strcmp(json_string_value(pool), "last") == 0))
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: pool must be \"last\" (the query token)", path);
    return PD_OK;
}

static pd_status parse_json(pd_head *h, const char *path, const pd_model *model, pd_error *err)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        FILE *f = fopen(path, "rb");
        if (!f) return pdi_set_error(err, PD_ERR_IO, "%s: cannot open", path);
        fclose(f);
        return pdi_set_error(err, PD_ERR_FORMAT, "%s:%d: not JSON: %s", path, jerr.line, jerr.text);
    }
    pd_status rc = PD_OK;
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *temp = json_object_get(root, "temperature");
    if (!json_is_object(root))
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: expected a JSON object", path);
    else if (!type)
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: \"type\" is missing (\"pointer\", \"classifier\" or \"tagger\")",
                           path);
    else if (strcmp(type, pd_head_type_name(PD_HEAD_POINTER)) == 0)
        h->type = PD_HEAD_POINTER;
    else if (strcmp(type, pd_head_type_name(PD_HEAD_CLASSIFIER)) == 0)
        h->type = PD_HEAD_CLASSIFIER;
    else if (strcmp(type, pd_head_type_name(PD_HEAD_TAGGER)) == 0)
        h->type = PD_HEAD_TAGGER;
    else
        rc = pdi_set_error(err, PD_ERR_UNSUPPORTED,
                           "%s: unknown head type \"%s\" (expected \"pointer\", \"classifier\" or \"tagger\")", path, type);
    if (!rc && h->type == PD_HEAD_TAGGER) { /* its own keys: no markers, layout or temperature */
        rc = pdi_tagger_parse(h, root, path, err);
        json_decref(root);
        return rc;
    }
    h->temperature = 1.0f;
    if (!rc && temp) {
        double t = json_number_value(temp);
        if (!json_is_number(temp) || !(t > 0.0) || !isfinite(t) || t > 1e30)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: temperature must be a positive number", path);
        h->temperature = (float)t;
    }
    h->head_dim = -1;
    json_t *hd = json_object_get(root, "head_dim");
    if (!rc && hd) {
        json_int_t v = json_integer_value(hd);
        if (!json_is_integer(hd) || v <= 0 || v > INT32_MAX)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: head_dim must be a positive integer", path);
        h->head_dim = (int32_t)v;
    }
    if (!rc && h->type == PD_HEAD_POINTER && h->head_dim < 0)
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: a pointer head needs \"head_dim\"", path);
    if (!rc) rc = parse_layout(h, root, path, err);
    if (!rc) rc = parse_markers(h, root, model, path, err);
    if (!rc && h->type == PD_HEAD_CLASSIFIER) rc = parse_labels(h, root, path, err);
    json_decref(root);
    return rc;
}

static pd_status load_tensors(pd_head *h, const char *path, pd_error *err)
{
    pdi_tensor_store st;
    pdi_store_init(&st);
    pd_status rc = pdi_safetensors_add(&st, path, err);
    int64_t H = h->hidden;
    if (!rc && h->type == PD_HEAD_POINTER) {
        const pdi_tensor *q = pdi_store_find(&st, "q.weight");
        if (q && q->n_dims == 2 && q->shape[1] == H && h->head_dim != q->shape[0])
            rc = pdi_set_error(err, PD_ERR_SHAPE, "%s: q.weight has %lld rows but head.json says head_dim %d", path,
                               (long long)q->shape[0], h->head_dim);
        if (!rc) rc = pdi_head_take_tensor(&st, "q.weight", h->head_dim, H, false, &h->wq, path, err);
        if (!rc) rc = pdi_head_take_tensor(&st, "q.bias", h->head_dim, 0, false, &h->bq, path, err);
        if (!rc) rc = pdi_head_take_tensor(&st, "k.weight", h->head_dim, H, false, &h->wk, path, err);
        if (!rc) rc = pdi_head_take_tensor(&st, "k.bias", h->head_dim, 0, false, &h->bk, path, err);
    } else if (!rc && h->type == PD_HEAD_TAGGER) {
        rc = pdi_tagger_tensors(h, &st, path, err);
    } else if (!rc) {
        rc = pdi_head_take_tensor(&st, "weight", h->n_labels, H, false, &h->w, path, err);
        if (!rc) rc = pdi_head_take_tensor(&st, "bias", h->n_labels, 0, false, &h->b, path, err);
    }
    pdi_store_free(&st);
    return rc;
}

pd_head *pd_head_load(const char *dir, const pd_model *model, pd_error *err)
{
    if (!dir || !model) {
        pdi_set_error(err, PD_ERR_ARG, "head: no directory or no model");
        return NULL;
    }
    pd_head *h = calloc(1, sizeof *h);
    char *json = pdi_path_join(dir, "head.json"), *tensors = pdi_path_join(dir, "head.safetensors");
    if (!h || !json || !tensors || !(h->source = strdup(dir))) {
        free(json);
        free(tensors);
        pd_head_free(h);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", dir);
        return NULL;
    }
    h->hidden = pd_model_config(model)->hidden;
    pd_status rc = parse_json(h, json, model, err);
    if (!rc) rc = load_tensors(h, tensors, err);
    free(json);
    free(tensors);
    if (rc) {
        pd_head_free(h);
        return NULL;
    }
    return h;
}
