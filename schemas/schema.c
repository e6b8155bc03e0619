/* schema.c - reading extraction schemas (YAML, with libyaml's document API so
 * that every error names the file, line and column of the offending node). */
#include "records.h"
#include "schema_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct reader {
    const char *path;
    yaml_document_t doc;
    pd_error *err;
} reader;

static pd_status fail_at(reader *r, const yaml_node_t *n, pd_status code, const char *fmt, ...) PD_PRINTF(4, 5);

static pd_status fail_at(reader *r, const yaml_node_t *n, pd_status code, const char *fmt, ...)
{
    char msg[PD_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pdi_set_error(r->err, code, "%s:%zu:%zu: %s", r->path, n->start_mark.line + 1, n->start_mark.column + 1,
                         msg);
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value node of key in a mapping, or NULL. */
static yaml_node_t *get(reader *r, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(&r->doc, p->key));
        if (k && strcmp(k, key) == 0) return yaml_document_get_node(&r->doc, p->value);
    }
    return NULL;
}

/* Refuse keys outside `known` (a NULL-terminated list): a typo must not pass silently. */
static pd_status check_keys(reader *r, const yaml_node_t *map, const char *what, const char *const *known)
{
    if (map->type != YAML_MAPPING_NODE) return fail_at(r, map, PD_ERR_FORMAT, "%s must be a mapping", what);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&r->doc, p->key);
        const char *k = scalar(kn);
        if (!k) return fail_at(r, kn, PD_ERR_FORMAT, "%s: keys must be strings", what);
        bool ok = false;
        for (const char *const *q = known; *q && !ok; q++) ok = strcmp(*q, k) == 0;
        if (!ok) return fail_at(r, kn, PD_ERR_FORMAT, "%s: unknown key '%s'", what, k);
    }
    return PD_OK;
}

static pd_status get_string(reader *r, const yaml_node_t *map, const char *key, bool required, bool nonempty,
                            char **out)
{
    yaml_node_t *n = get(r, map, key);
    if (!n) return required ? fail_at(r, map, PD_ERR_FORMAT, "missing '%s'", key) : PD_OK;
    const char *s = scalar(n);
    if (!s) return fail_at(r, n, PD_ERR_FORMAT, "'%s' must be a string", key);
    if (nonempty && !*s) return fail_at(r, n, PD_ERR_FORMAT, "'%s' must not be empty", key);
    free(*out);
    if (!(*out = strdup(s))) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    return PD_OK;
}

static pd_status get_int(reader *r, const yaml_node_t *map, const char *key, int32_t lo, int32_t hi, int32_t *out)
{
    yaml_node_t *n = get(r, map, key);
    if (!n) return PD_OK;
    const char *s = scalar(n);
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi)
        return fail_at(r, n, PD_ERR_FORMAT, "'%s' must be an integer in [%d, %d]", key, lo, hi);
    *out = (int32_t)v;
    return PD_OK;
}

/* An optional true/false; *out is left alone when the key is absent. */
static pd_status get_bool(reader *r, const yaml_node_t *map, const char *key, bool *out)
{
    yaml_node_t *n = get(r, map, key);
    if (!n) return PD_OK;
    const char *v = scalar(n);
    if (!v || (strcmp(v, "true") && strcmp(v, "false")))
        return fail_at(r, n, PD_ERR_FORMAT, "'%s' must be true or false", key);
    *out = strcmp(v, "true") == 0;
    return PD_OK;
}

static pd_status read_enum(reader *r, pd_schema *sc, pdi_schema_field *f, const yaml_node_t *fn)
{
    yaml_node_t *vals = get(r, fn, "values");
    if (!vals || vals->type != YAML_SEQUENCE_NODE || vals->data.sequence.items.top == vals->data.sequence.items.start)
        return fail_at(r, vals ? vals : fn, PD_ERR_FORMAT, "enum field '%s' needs a non-empty list of values", f->name);
    size_t n = (size_t)(vals->data.sequence.items.top - vals->data.sequence.items.start);
    if (!(f->values = calloc(n, sizeof *f->values))) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    pd_status rc = pdi_trie_init(&f->trie, (int32_t)n, r->err);
    for (size_t i = 0; i < n && !rc; i++) {
        yaml_node_t *vn = yaml_document_get_node(&r->doc, vals->data.sequence.items.start[i]);
        const char *v = scalar(vn);
        if (!v || !*v) return fail_at(r, vn, PD_ERR_FORMAT, "enum values of '%s' must be non-empty strings", f->name);
        if ((f->allow_empty && v[0] == '_') || strcmp(v, "_") == 0 || strpbrk(v, sc->separator) ||
            strpbrk(v, sc->record_end))
            return fail_at(r, vn, PD_ERR_FORMAT,
                           "enum value '%s' of '%s' is '_', starts with the empty mark, or holds a separator byte", v,
                           f->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(f->values[j], v) == 0)
                return fail_at(r, vn, PD_ERR_FORMAT, "enum value '%s' of '%s' is repeated", v, f->name);
        if (!(f->values[i] = strdup(v))) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
        f->n_values = (int32_t)i + 1;
        rc = pdi_trie_add(&f->trie, (int32_t)i, (const uint8_t *)v, strlen(v), r->err);
    }
    return rc;
}

static pd_status read_field(reader *r, pd_schema *sc, pdi_schema_field *f, const yaml_node_t *fn)
{
    static const char *const keys[] = {"name", "kind", "empty", "values", "pattern", NULL};
    pd_status rc;
    char *kind = NULL;
    if ((rc = check_keys(r, fn, "a field", keys)) || (rc = get_string(r, fn, "name", true, true, &f->name)) ||
        (rc = get_string(r, fn, "kind", true, true, &kind)))
        goto done;
    static const char *const reserved[] = {"spans", "probs", "confidence", "link", NULL}; /* JSONL record keys */
    for (int32_t i = 0; reserved[i]; i++)
        if (strcmp(f->name, reserved[i]) == 0) {
            rc = fail_at(r, fn, PD_ERR_FORMAT, "field name '%s' is reserved (a key of the JSONL records)", f->name);
            goto done;
        }
    for (int32_t i = 0; sc->fields + i < f; i++)
        if (strcmp(sc->fields[i].name, f->name) == 0) {
            rc = fail_at(r, fn, PD_ERR_FORMAT, "field '%s' is defined twice", f->name);
            goto done;
        }
    if ((rc = get_bool(r, fn, "empty", &f->allow_empty))) goto done;
    yaml_node_t *kn = get(r, fn, "kind");
    if (strcmp(kind, "span") == 0) {
        f->kind = PD_FIELD_SPAN;
    } else if (strcmp(kind, "enum") == 0) {
        f->kind = PD_FIELD_ENUM;
        rc = read_enum(r, sc, f, fn);
    } else if (strcmp(kind, "pattern") == 0) {
        f->kind = PD_FIELD_PATTERN;
        if ((rc = get_string(r, fn, "pattern", true, true, &f->pattern))) goto done;
        int code;
        PCRE2_SIZE off;
        pcre2_code *raw = pcre2_compile((PCRE2_SPTR)f->pattern, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
        if (raw) {
            /* \z rather than PCRE2_ENDANCHORED, which partial matching refuses; \E closes a stray \Q */
            size_t n = strlen(f->pattern);
            char *wrapped = malloc(n + 16);
            if (wrapped) {
                snprintf(wrapped, n + 16, "(?:%s\\E)\\z", f->pattern);
                f->re = pcre2_compile((PCRE2_SPTR)wrapped, PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED, &code, &off, NULL);
            }
            free(wrapped);
            pcre2_code_free(raw);
        }
        if (!f->re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            rc = fail_at(r, get(r, fn, "pattern"), PD_ERR_FORMAT, "bad pattern of '%s' at offset %zu: %s", f->name,
                         (size_t)off, (const char *)msg);
        }
    } else {
        rc = fail_at(r, kn, PD_ERR_FORMAT, "unknown field kind '%s' (span, enum or pattern)", kind);
    }
    if (!rc && f->kind != PD_FIELD_ENUM && get(r, fn, "values"))
        rc = fail_at(r, get(r, fn, "values"), PD_ERR_FORMAT, "'values' belongs to enum fields only");
    if (!rc && f->kind != PD_FIELD_PATTERN && get(r, fn, "pattern"))
        rc = fail_at(r, get(r, fn, "pattern"), PD_ERR_FORMAT, "'pattern' belongs to pattern fields only");
done:
    free(kind);
    return rc;
}

static pd_status read_print(reader *r, pd_schema *sc, const yaml_node_t *root)
{
    static const char *const keys[] = {"csv", NULL};
    yaml_node_t *pn = get(r, root, "print");
    yaml_node_t *cols = NULL;
    pd_status rc;
    if (pn && ((rc = check_keys(r, pn, "'print'", keys)))) return rc;
    if (pn) cols = get(r, pn, "csv");
    if (cols && (cols->type != YAML_SEQUENCE_NODE || cols->data.sequence.items.top == cols->data.sequence.items.start))
        return fail_at(r, cols, PD_ERR_FORMAT, "'print.csv' must be a non-empty list of field names");
    size_t n = cols ? (size_t)(cols->data.sequence.items.top - cols->data.sequence.items.start) : (size_t)sc->n_fields;
    if (!(sc->csv_cols = malloc(sizeof(int32_t) * n))) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    sc->n_csv = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        if (!cols) {
            sc->csv_cols[i] = (int32_t)i;
            continue;
        }
        yaml_node_t *cn = yaml_document_get_node(&r->doc, cols->data.sequence.items.start[i]);
        const char *name = scalar(cn);
        if ((sc->csv_cols[i] = pdi_schema_field_index(sc, name)) < 0)
            return fail_at(r, cn, PD_ERR_FORMAT, "'print.csv' names no field '%s'", name ? name : "?");
    }
    return PD_OK;
}

/* Check a decide template: every {name} names a field; for the candidate
 * template each must be an enum field, named once. */
static pd_status check_template(reader *r, const pd_schema *sc, const yaml_node_t *n, const char *tpl, bool candidate)
{
    int32_t seen[64] = {0}, n_named = 0;
    const char *e;
    for (const char *p = tpl; (p = strchr(p, '{')); p++) {
        int32_t f = pdi_schema_placeholder(sc, p, &e);
        if (f < 0) return fail_at(r, n, PD_ERR_FORMAT, "'{' at byte %td does not start a {field} of the schema", p - tpl);
        if (candidate && (sc->fields[f].kind != PD_FIELD_ENUM || seen[f]))
            return fail_at(r, n, PD_ERR_FORMAT, "'decide.candidate' names '%s': each field once, enum fields only",
                           sc->fields[f].name);
        seen[f] = 1;
        n_named++;
    }
    if (candidate && n_named == 0) return fail_at(r, n, PD_ERR_FORMAT, "'decide.candidate' names no enum field");
    return PD_OK;
}

/* The optional `decide` section: a decision head relabels the enum fields of
 * the candidate template, asked the question template about each record. */
static pd_status read_decide(reader *r, pd_schema *sc, const yaml_node_t *root)
{
    static const char *const keys[] = {"question", "candidate", NULL};
    yaml_node_t *dn = get(r, root, "decide");
    pd_status rc;
    if (!dn) return PD_OK;
    if ((rc = check_keys(r, dn, "'decide'", keys)) ||
        (rc = get_string(r, dn, "question", true, true, &sc->decide_question)) ||
        (rc = get_string(r, dn, "candidate", true, true, &sc->decide_candidate)) ||
        (rc = check_template(r, sc, get(r, dn, "question"), sc->decide_question, false)) ||
        (rc = check_template(r, sc, get(r, dn, "candidate"), sc->decide_candidate, true)))
        return rc;
    int64_t n = 1;
    for (int32_t i = 0; i < sc->n_fields; i++)
        if (pdi_schema_decides(sc, i) && (n *= sc->fields[i].n_values) > PD_SCHEMA_MAX_CANDIDATES)
            return fail_at(r, get(r, dn, "candidate"), PD_ERR_RANGE,
                           "'decide.candidate' makes more than %d candidates", PD_SCHEMA_MAX_CANDIDATES);
    pd_error e;
    if ((rc = pdi_schema_candidates(sc, &sc->decide_cands, &sc->n_decide_cands, &e)))
        return rc == PD_ERR_NOMEM ? pdi_set_error(r->err, rc, "%s: out of memory", r->path)
                                  : fail_at(r, get(r, dn, "candidate"), rc, "%s", e.message);
    return PD_OK;
}

static pd_status read_root(reader *r, pd_schema *sc, yaml_node_t *root)
{
    static const char *const keys[] = {"name", "prompt", "fields", "separator", "record_end", "end", "limits",
                                       "print", "decide", NULL};
    static const char *const limit_keys[] = {"max_records", "max_tokens", "distinct_records", NULL};
    pd_status rc;
    if ((rc = check_keys(r, root, "the schema", keys)) || (rc = get_string(r, root, "name", true, true, &sc->name)) ||
        (rc = get_string(r, root, "prompt", true, true, &sc->prompt)) ||
        (rc = get_string(r, root, "separator", true, true, &sc->separator)) ||
        (rc = get_string(r, root, "record_end", true, true, &sc->record_end)) ||
        (rc = get_string(r, root, "end", true, true, &sc->end_token)))
        return rc;
    const char *t = strstr(sc->prompt, "{text}");
    if (!t || strstr(t + 1, "{text}"))
        return fail_at(r, get(r, root, "prompt"), PD_ERR_FORMAT, "'prompt' must hold {text} exactly once");
    if (sc->separator[0] == sc->record_end[0] || sc->separator[0] == '_' || sc->record_end[0] == '_')
        return fail_at(r, get(r, root, "separator"), PD_ERR_FORMAT,
                       "'separator' and 'record_end' must start with different bytes, neither '_'");
    yaml_node_t *lim = get(r, root, "limits");
    sc->max_records = 16;
    sc->max_tokens = 256;
    if (lim && ((rc = check_keys(r, lim, "'limits'", limit_keys)) ||
                (rc = get_int(r, lim, "max_records", 1, 100000, &sc->max_records)) ||
                (rc = get_int(r, lim, "max_tokens", 1, 1000000, &sc->max_tokens)) ||
                (rc = get_bool(r, lim, "distinct_records", &sc->distinct_records))))
        return rc;
    yaml_node_t *fields = get(r, root, "fields");
    if (!fields || fields->type != YAML_SEQUENCE_NODE ||
        fields->data.sequence.items.top == fields->data.sequence.items.start)
        return fail_at(r, fields ? fields : root, PD_ERR_FORMAT, "'fields' must be a non-empty list");
    size_t n = (size_t)(fields->data.sequence.items.top - fields->data.sequence.items.start);
    if (n > 64) return fail_at(r, fields, PD_ERR_FORMAT, "%zu fields: at most 64", n);
    if (!(sc->fields = calloc(n, sizeof *sc->fields))) return pdi_set_error(r->err, PD_ERR_NOMEM, "%s: out of memory", r->path);
    for (size_t i = 0; i < n; i++) {
        sc->n_fields = (int32_t)i + 1;
        if ((rc = read_field(r, sc, &sc->fields[i], yaml_document_get_node(&r->doc, fields->data.sequence.items.start[i]))))
            return rc;
    }
    if ((rc = read_print(r, sc, root))) return rc;
    return read_decide(r, sc, root);
}

pd_schema *pd_schema_parse(const char *yaml, size_t len, const char *name, pd_error *err)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.path = name ? name : "<memory>";
    r.err = err;
    pd_schema *sc = calloc(1, sizeof *sc);
    if (!sc || !(sc->path = strdup(r.path))) {
        free(sc);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", r.path);
        return NULL;
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    pd_status rc = PD_OK;
    if (!yaml_parser_load(&p, &r.doc)) {
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu:%zu: YAML: %s", r.path, p.problem_mark.line + 1,
                           p.problem_mark.column + 1, p.problem ? p.problem : "syntax error");
        yaml_parser_delete(&p);
        pd_schema_free(sc);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&r.doc);
    if (!root)
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: the schema is empty", r.path);
    else
        rc = read_root(&r, sc, root);
    yaml_document_delete(&r.doc);
    yaml_parser_delete(&p);
    if (rc) {
        pd_schema_free(sc);
        return NULL;
    }
    return sc;
}

pd_schema *pd_schema_load(const char *path, pd_error *err)
{
    char *data = NULL;
    size_t len = 0;
    if (!path) {
        pdi_set_error(err, PD_ERR_ARG, "schema: no path");
        return NULL;
    }
    if (pdi_read_file(path, &data, &len, err)) return NULL;
    pd_schema *sc = pd_schema_parse(data, len, path, err);
    free(data);
    return sc;
}

void pd_schema_free(pd_schema *sc)
{
    if (!sc) return;
    for (int32_t i = 0; i < sc->n_fields; i++) {
        pdi_schema_field *f = &sc->fields[i];
        free(f->name);
        for (int32_t j = 0; j < f->n_values; j++) free(f->values[j]);
        free(f->values);
        pdi_trie_free(&f->trie);
        free(f->pattern);
        pcre2_code_free(f->re);
    }
    free(sc->fields);
    free(sc->path);
    free(sc->name);
    free(sc->separator);
    free(sc->record_end);
    free(sc->end_token);
    free(sc->prompt);
    free(sc->csv_cols);
    free(sc->decide_question);
    free(sc->decide_candidate);
    pdi_schema_free_candidates(sc->decide_cands, sc->n_decide_cands);
    free(sc);
}

int32_t pd_schema_n_fields(const pd_schema *sc) { return sc ? sc->n_fields : 0; }

const char *pd_schema_field_name(const pd_schema *sc, int32_t i)
{
    return sc && i >= 0 && i < sc->n_fields ? sc->fields[i].name : NULL;
}

pd_field_kind pd_schema_field_kind(const pd_schema *sc, int32_t i)
{
    return sc && i >= 0 && i < sc->n_fields ? sc->fields[i].kind : PD_FIELD_SPAN;
}

int pd_schema_field_empty(const pd_schema *sc, int32_t i)
{
    return sc && i >= 0 && i < sc->n_fields && sc->fields[i].allow_empty;
}

int32_t pd_schema_field_n_values(const pd_schema *sc, int32_t i)
{
    return sc && i >= 0 && i < sc->n_fields && sc->fields[i].kind == PD_FIELD_ENUM ? sc->fields[i].n_values : 0;
}

const char *pd_schema_field_value(const pd_schema *sc, int32_t i, int32_t k)
{
    return k >= 0 && k < pd_schema_field_n_values(sc, i) ? sc->fields[i].values[k] : NULL;
}
