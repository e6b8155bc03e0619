/* vocab_export.c - an HF tokenizer.json as the vocabulary parts a GGUF file
 * carries (tokenizer.ggml.*), for the GGUF writer: the reverse of what
 * pdi_tokenizer_from_parts builds a tokenizer from. */
#include "formats.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pd_status nomem(const char *path, pd_error *err)
{
    return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
}

/* Put token s at id (replacing an earlier one: added tokens win). */
static pd_status set_token(pdi_vocab_parts *v, json_int_t id, const char *s, int32_t type, const char *path,
                           pd_error *err)
{
    if (id < 0 || (size_t)id >= v->n_tokens)
        return pdi_set_error(err, PD_ERR_RANGE, "%s: token id %lld is outside the model's vocabulary of %zu rows", path,
                             (long long)id, v->n_tokens);
    char *copy = strdup(s);
    if (!copy) return nomem(path, err);
    free(v->tokens[id]);
    v->tokens[id] = copy;
    v->token_types[id] = type;
    return PD_OK;
}

/* A merge as "a b": tokenizer.json has either that string or ["a", "b"]. */
static char *merge_string(const json_t *m, bool *bad)
{
    *bad = false;
    if (json_is_string(m)) return strdup(json_string_value(m));
    const char *a = json_string_value(json_array_get(m, 0)), *b = json_string_value(json_array_get(m, 1));
    if (!json_is_array(m) || json_array_size(m) != 2 || !a || !b) {
        *bad = true;
        return NULL;
    }
    char *s = malloc(strlen(a) + strlen(b) + 2);
    if (s) sprintf(s, "%s %s", a, b);
    return s;
}

/* model.vocab, then added_tokens (control when special, user defined
 * otherwise), then "[PADn]" for every id still empty. */
static pd_status read_tokens(const json_t *root, const char *path, pdi_vocab_parts *v, pd_error *err)
{
    const json_t *tv = json_object_get(json_object_get(root, "model"), "vocab");
    const json_t *added = json_object_get(root, "added_tokens");
    const char *tok;
    json_t *id;
    pd_status rc = PD_OK;
    json_object_foreach((json_t *)tv, tok, id) {
        if (rc == PD_OK && !json_is_integer(id))
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: model.vocab[\"%s\"] is not an integer id", path, tok);
        if (rc == PD_OK) rc = set_token(v, json_integer_value(id), tok, 1, path, err);
    }
    for (size_t i = 0; rc == PD_OK && i < json_array_size(added); i++) {
        const json_t *a = json_array_get(added, i), *content = json_object_get(a, "content");
        if (!json_is_string(content) || !json_is_integer(json_object_get(a, "id")))
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: added_tokens[%zu] needs \"id\" and \"content\"", path, i);
        else
            rc = set_token(v, json_integer_value(json_object_get(a, "id")), json_string_value(content),
                           json_is_true(json_object_get(a, "special")) ? 3 : 4, path, err);
    }
    for (size_t i = 0; rc == PD_OK && i < v->n_tokens; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%zu]", i);
        if (!v->tokens[i]) rc = set_token(v, (json_int_t)i, pad, 5, path, err);
    }
    return rc;
}

static pd_status read_merges(const json_t *merges, const char *path, pdi_vocab_parts *v, pd_error *err)
{
    size_t n = json_array_size(merges);
    if (n && !(v->merges = calloc(n, sizeof *v->merges))) return nomem(path, err);
    for (v->n_merges = 0; v->n_merges < n; v->n_merges++) {
        bool bad;
        if (!(v->merges[v->n_merges] = merge_string(json_array_get(merges, v->n_merges), &bad)))
            return bad ? pdi_set_error(err, PD_ERR_FORMAT, "%s: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]",
                                       path, v->n_merges)
                       : nomem(path, err);
    }
    return PD_OK;
}

pd_status pdi_vocab_parts_from_json(const char *path, int32_t n_vocab, pdi_vocab_parts *v, pd_error *err)
{
    memset(v, 0, sizeof *v);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    const json_t *model = json_object_get(root, "model");
    const json_t *merges = json_object_get(model, "merges");
    pd_status rc = PD_OK;
    if (!root)
        rc = access(path, F_OK) ? pdi_set_error(err, PD_ERR_IO, "%s: cannot open (a GGUF file carries the tokenizer)", path)
                                : pdi_set_error(err, PD_ERR_FORMAT, "%s: %s", path, jerr.text);
    else if (!json_is_object(json_object_get(model, "vocab")) || !json_is_array(merges))
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: model.vocab and model.merges are required (a byte-level BPE "
                           "tokenizer)", path);
    v->n_tokens = rc ? 0 : (size_t)n_vocab;
    if (rc == PD_OK && (!(v->tokens = calloc(v->n_tokens, sizeof *v->tokens)) ||
                        !(v->token_types = calloc(v->n_tokens, sizeof *v->token_types)) || !(v->pre = strdup("qwen2"))))
        rc = nomem(path, err);
    if (rc == PD_OK) rc = read_tokens(root, path, v, err);
    if (rc == PD_OK) rc = read_merges(merges, path, v, err);
    json_decref(root);
    if (rc) pdi_vocab_parts_free(v);
    return rc;
}
