/* tok_json.c - reading an HF tokenizer.json (byte-level BPE). Every error
 * names the file and the JSON path of the offending value. */
#include "tok_internal.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jctx {
    const char *path;
    pd_error *err;
} jctx;

static pd_status fail(const jctx *c, pd_status code, const char *where, const char *fmt, ...) PD_PRINTF(4, 5);

static pd_status fail(const jctx *c, pd_status code, const char *where, const char *fmt, ...)
{
    char msg[PD_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pdi_set_error(c->err, code, "%s: %s: %s", c->path, where, msg);
}

/* Put "<file>: <where>: " (where may be NULL) before a message set by a tok_* builder. */
static pd_status located(const jctx *c, pd_status st, const char *where)
{
    if (st != PD_OK && c->err) pdi_error_prefix(c->err, "%s%s%s", c->path, where ? ": " : "", where ? where : "");
    return st;
}

static pd_status get_bool(const jctx *c, const json_t *obj, const char *key, bool dflt, bool *out,
                          const char *where)
{
    const json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (!v || json_is_null(v)) return PD_OK;
    if (!json_is_boolean(v)) return fail(c, PD_ERR_FORMAT, where, "\"%s\" is not a boolean", key);
    *out = json_is_true(v);
    return PD_OK;
}

/* A string member; absent or null gives NULL unless required. */
static pd_status get_string(const jctx *c, const json_t *obj, const char *key, bool required,
                            const char **out, const char *where)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required) return fail(c, PD_ERR_FORMAT, where, "\"%s\" is missing", key);
        return PD_OK;
    }
    if (!json_is_string(v)) return fail(c, PD_ERR_FORMAT, where, "\"%s\" is not a string", key);
    *out = json_string_value(v);
    return PD_OK;
}

static pd_status get_id(const jctx *c, const json_t *v, int32_t *id, const char *where)
{
    *id = -1;
    if (!json_is_integer(v)) return fail(c, PD_ERR_FORMAT, where, "the id is not an integer");
    json_int_t x = json_integer_value(v);
    if (x < 0 || x >= TOK_MAX_IDS)
        return fail(c, PD_ERR_FORMAT, where, "id %lld is out of range (0 to %d)", (long long)x,
                    TOK_MAX_IDS - 1);
    *id = (int32_t)x;
    return PD_OK;
}

/* ------------------------------------------------------------ normalizer */

static pd_status read_normalizer(const jctx *c, pd_tokenizer *tok, const json_t *n, const char *where)
{
    if (!n || json_is_null(n)) return PD_OK;
    const char *type;
    pd_status st = json_is_object(n) ? get_string(c, n, "type", true, &type, where)
                                     : fail(c, PD_ERR_FORMAT, where, "not an object");
    if (st != PD_OK) return st;
    if (strcmp(type, "Sequence") == 0) {
        const json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list)) return fail(c, PD_ERR_FORMAT, where, "\"normalizers\" is not an array");
        for (size_t i = 0; i < json_array_size(list); i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", where, i);
            if ((st = read_normalizer(c, tok, json_array_get(list, i), sub)) != PD_OK) return st;
        }
        return PD_OK;
    }
    static const struct {
        const char *name;
        int options;
    } forms[] = {{"NFC", TOK_NFC}, {"NFD", TOK_NFD}, {"NFKC", TOK_NFKC}, {"NFKD", TOK_NFKD}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (strcmp(type, forms[i].name) != 0) continue;
        if (tok->n_norm == TOK_MAX_NORM) return fail(c, PD_ERR_UNSUPPORTED, where, "too many normalizers");
        tok->norm[tok->n_norm++] = forms[i].options;
        return PD_OK;
    }
    return fail(c, PD_ERR_UNSUPPORTED, where, "normalizer type \"%s\" is not supported", type);
}

/* --------------------------------------------------------- pre-tokenizer */

static pd_status read_split(const jctx *c, pd_tokenizer *tok, const json_t *p, const char *where)
{
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext",
                                        "Contiguous"};
    if (tok->byte_level)
        return fail(c, PD_ERR_UNSUPPORTED, where, "a Split after ByteLevel is not supported");
    const json_t *pat = json_object_get(p, "pattern");
    const char *regex = NULL, *literal = NULL, *behavior;
    pd_status st = PD_OK;
    char sub[256];
    snprintf(sub, sizeof sub, "%s.pattern", where);
    if (!json_is_object(pat)) return fail(c, PD_ERR_FORMAT, sub, "missing or not an object");
    if ((st = get_string(c, pat, "Regex", false, &regex, sub)) != PD_OK ||
        (st = get_string(c, pat, "String", false, &literal, sub)) != PD_OK)
        return st;
    if (!regex && !literal) return fail(c, PD_ERR_FORMAT, sub, "neither \"Regex\" nor \"String\"");
    if ((st = get_string(c, p, "behavior", true, &behavior, where)) != PD_OK) return st;
    size_t b = 0;
    while (b < sizeof names / sizeof names[0] && strcmp(behavior, names[b]) != 0) b++;
    if (b == sizeof names / sizeof names[0])
        return fail(c, PD_ERR_UNSUPPORTED, where, "split behavior \"%s\" is not supported", behavior);
    bool invert;
    if ((st = get_bool(c, p, "invert", false, &invert, where)) != PD_OK) return st;
    const char *text = regex ? regex : literal;
    snprintf(sub, sizeof sub, "%s.pattern.%s", where, regex ? "Regex" : "String");
    return located(c, tok_add_split(tok, text, strlen(text), !regex, (tok_behavior)b, invert, c->err), sub);
}

static pd_status read_byte_level(const jctx *c, pd_tokenizer *tok, const json_t *p, const char *where)
{
    bool prefix, use_regex;
    pd_status st;
    if (tok->byte_level) return fail(c, PD_ERR_UNSUPPORTED, where, "a second ByteLevel step");
    /* HF's defaults when the fields are absent */
    if ((st = get_bool(c, p, "add_prefix_space", true, &prefix, where)) != PD_OK ||
        (st = get_bool(c, p, "use_regex", true, &use_regex, where)) != PD_OK)
        return st;
    if (prefix && (st = located(c, tok_add_prefix_space(tok, c->err), where)) != PD_OK) return st;
    if (use_regex &&
        (st = located(c, tok_add_split(tok, tok_gpt2_regex, strlen(tok_gpt2_regex), false, TOK_ISOLATED,
                                       false, c->err),
                      where)) != PD_OK)
        return st;
    tok->byte_level = true;
    return PD_OK;
}

static pd_status read_pre_tokenizer(const jctx *c, pd_tokenizer *tok, const json_t *p, const char *where)
{
    if (!p || json_is_null(p)) return PD_OK;
    const char *type;
    pd_status st = json_is_object(p) ? get_string(c, p, "type", true, &type, where)
                                     : fail(c, PD_ERR_FORMAT, where, "not an object");
    if (st != PD_OK) return st;
    if (strcmp(type, "Split") == 0) return read_split(c, tok, p, where);
    if (strcmp(type, "ByteLevel") == 0) return read_byte_level(c, tok, p, where);
    if (strcmp(type, "Sequence") != 0)
        return fail(c, PD_ERR_UNSUPPORTED, where, "pre-tokenizer type \"%s\" is not supported", type);
    const json_t *list = json_object_get(p, "pretokenizers");
    if (!json_is_array(list)) return fail(c, PD_ERR_FORMAT, where, "\"pretokenizers\" is not an array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", where, i);
        if ((st = read_pre_tokenizer(c, tok, json_array_get(list, i), sub)) != PD_OK) return st;
    }
    return PD_OK;
}

/* ----------------------------------------------------------------- model */

static bool added_before(const pd_tokenizer *tok, const char *s, size_t len)
{
    for (size_t i = 0; i < tok->n_added; i++)
        if (tok->added[i].content.len == len && memcmp(tok_arena_at(tok, tok->added[i].content), s, len) == 0)
            return true;
    return false;
}

/* Ids as HF's AddedVocabulary gives them (the "id" in the file is only checked
 * for type): a token already in the vocabulary keeps its id, a new one takes
 * the next id after the vocabulary and the added tokens before it. */
static pd_status read_added(const jctx *c, pd_tokenizer *tok, const json_t *list, size_t vocab_size)
{
    int32_t max_added = -1;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *t = json_array_get(list, i);
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%zu]", i);
        tok_added a = {0};
        const char *content;
        pd_status st;
        if ((st = get_string(c, t, "content", true, &content, where)) != PD_OK ||
            (st = get_bool(c, t, "special", false, &a.special, where)) != PD_OK ||
            (st = get_bool(c, t, "lstrip", false, &a.lstrip, where)) != PD_OK ||
            (st = get_bool(c, t, "rstrip", false, &a.rstrip, where)) != PD_OK ||
            (st = get_bool(c, t, "single_word", false, &a.single_word, where)) != PD_OK ||
            (st = get_bool(c, t, "normalized", !a.special, &a.normalized, where)) != PD_OK)
            return st;
        size_t len = json_string_length(json_object_get(t, "content"));
        if (added_before(tok, content, len)) continue; /* the same content twice: HF keeps one */
        a.id = tok_vocab_get(tok, content, len);
        if (a.id < 0) a.id = max_added >= (int32_t)vocab_size ? max_added + 1 : (int32_t)vocab_size;
        if (a.id > max_added) max_added = a.id;
        if ((tok->flags[a.id] & TOK_VOCAB) && tok_vocab_get(tok, content, len) != a.id)
            return fail(c, PD_ERR_FORMAT, where,
                        "\"%s\" takes id %ld, which the vocabulary gives to \"%s\" (vocabulary ids have gaps)",
                        content, (long)a.id, tok_arena_at(tok, tok->text[a.id]));
        if ((st = tok_add_added(tok, &a, content, len, c->err)) != PD_OK) return located(c, st, where);
    }
    return PD_OK;
}

static pd_status read_merges(const jctx *c, pd_tokenizer *tok, const json_t *merges)
{
    pd_status st = located(c, tok_pairs_init(tok, json_array_size(merges), c->err), "model.merges");
    for (size_t i = 0; st == PD_OK && i < json_array_size(merges); i++) {
        const json_t *m = json_array_get(merges, i), *a = json_array_get(m, 0), *b = json_array_get(m, 1);
        if (json_is_string(m))
            st = tok_add_merge_string(tok, (uint32_t)i, json_string_value(m), c->err);
        else if (json_array_size(m) == 2 && json_is_string(a) && json_is_string(b))
            st = tok_add_merge(tok, (uint32_t)i, json_string_value(a), json_string_length(a), json_string_value(b),
                               json_string_length(b), c->err);
        else
            st = pdi_set_error(c->err, PD_ERR_FORMAT, "expected \"left right\" or [\"left\", \"right\"]");
        if (st != PD_OK) { /* the location is only worth formatting on failure */
            char where[64];
            snprintf(where, sizeof where, "model.merges[%zu]", i);
            located(c, st, where);
        }
    }
    return st;
}

static pd_status read_model_options(const jctx *c, pd_tokenizer *tok, const json_t *model)
{
    const char *unk, *prefix, *suffix;
    pd_status st;
    if ((st = get_string(c, model, "unk_token", false, &unk, "model")) != PD_OK ||
        (st = get_string(c, model, "continuing_subword_prefix", false, &prefix, "model")) != PD_OK ||
        (st = get_string(c, model, "end_of_word_suffix", false, &suffix, "model")) != PD_OK ||
        (st = get_bool(c, model, "fuse_unk", false, &tok->fuse_unk, "model")) != PD_OK ||
        (st = get_bool(c, model, "ignore_merges", false, &tok->ignore_merges, "model")) != PD_OK)
        return st;
    if ((prefix && *prefix) || (suffix && *suffix))
        return fail(c, PD_ERR_UNSUPPORTED, "model", "subword prefixes and suffixes are not supported");
    const json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) && (!json_is_number(dropout) || json_number_value(dropout) != 0))
        return fail(c, PD_ERR_UNSUPPORTED, "model", "BPE dropout is not supported");
    tok->unk_id = unk ? tok_vocab_get(tok, unk, strlen(unk)) : -1;
    return PD_OK;
}

/* Largest vocabulary id, with the types of all ids checked. */
static pd_status max_id(const jctx *c, const json_t *vocab, const json_t *added, int32_t *max)
{
    const char *key;
    const json_t *v;
    pd_status st;
    *max = -1;
    json_object_foreach((json_t *)vocab, key, v) {
        int32_t id;
        char where[300];
        snprintf(where, sizeof where, "model.vocab[\"%.200s\"]", key);
        if ((st = get_id(c, v, &id, where)) != PD_OK) return st;
        if (id > *max) *max = id;
    }
    for (size_t i = 0; i < json_array_size(added); i++) {
        int32_t id;
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%zu]", i);
        const json_t *t = json_array_get(added, i);
        if (!json_is_object(t)) return fail(c, PD_ERR_FORMAT, where, "not an object");
        if ((st = get_id(c, json_object_get(t, "id"), &id, where)) != PD_OK) return st;
    }
    return PD_OK;
}

static pd_tokenizer *read_root(const jctx *c, const json_t *root)
{
    const json_t *model = json_object_get(root, "model");
    if (!json_is_object(root)) return fail(c, PD_ERR_FORMAT, "(root)", "not an object"), NULL;
    if (!json_is_object(model)) return fail(c, PD_ERR_FORMAT, "model", "missing or not an object"), NULL;
    const char *type;
    if (get_string(c, model, "type", false, &type, "model") != PD_OK) return NULL;
    if (type && strcmp(type, "BPE") != 0) {
        fail(c, PD_ERR_UNSUPPORTED, "model.type", "\"%s\" is not supported (only byte-level BPE)", type);
        return NULL;
    }
    const json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    const json_t *added = json_object_get(root, "added_tokens");
    if (!json_is_object(vocab)) return fail(c, PD_ERR_FORMAT, "model.vocab", "missing or not an object"), NULL;
    if (!json_is_array(merges)) return fail(c, PD_ERR_FORMAT, "model.merges", "missing or not an array"), NULL;
    if (added && !json_is_null(added) && !json_is_array(added))
        return fail(c, PD_ERR_FORMAT, "added_tokens", "not an array"), NULL;
    int32_t max;
    if (max_id(c, vocab, added, &max) != PD_OK) return NULL;
    if (max < 0) return fail(c, PD_ERR_FORMAT, "model.vocab", "no tokens"), NULL;
    size_t n_vocab = json_object_size(vocab), n_added = json_array_size(added);
    if (n_added > TOK_MAX_IDS) return fail(c, PD_ERR_FORMAT, "added_tokens", "too many tokens"), NULL;
    /* room for every id an added token can take */
    size_t bound = ((size_t)max > n_vocab ? (size_t)max : n_vocab) + n_added + 1;

    pd_tokenizer *tok = tok_new(c->path, bound > TOK_MAX_IDS ? TOK_MAX_IDS + 1 : (int32_t)bound, n_vocab, c->err);
    if (!tok) return NULL;
    pd_status st = PD_OK;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)vocab, key, v) {
        if (st != PD_OK) break;
        st = located(c, tok_set_vocab(tok, (int32_t)json_integer_value(v), key, strlen(key), c->err),
                     "model.vocab");
    }
    if (st == PD_OK) st = read_added(c, tok, added, n_vocab);
    if (st == PD_OK) st = read_model_options(c, tok, model);
    if (st == PD_OK) st = read_merges(c, tok, merges);
    if (st == PD_OK) st = read_normalizer(c, tok, json_object_get(root, "normalizer"), "normalizer");
    if (st == PD_OK) st = read_pre_tokenizer(c, tok, json_object_get(root, "pre_tokenizer"), "pre_tokenizer");
    if (st == PD_OK) st = located(c, tok_finish(tok, c->err), NULL);
    if (st != PD_OK) {
        pd_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}

pd_tokenizer *pd_tokenizer_load(const char *path, pd_error *err)
{
    if (!path) {
        pdi_set_error(err, PD_ERR_ARG, "tokenizer: path is NULL");
        return NULL;
    }
    char *data;
    size_t len;
    if (pdi_read_file(path, &data, &len, err) != PD_OK) return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(data, len, 0, &jerr);
    free(data);
    if (!root) {
        pdi_set_error(err, PD_ERR_FORMAT, "%s: line %d column %d: %s", path, jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    jctx c = {path, err};
    pd_tokenizer *tok = read_root(&c, root);
    json_decref(root);
    return tok;
}
