/* predictions_jsonl.c - JSONL input, one line a review, in either of two forms:
 *   pocketdec's extraction output (predictions): {"id": "3", "records": [{"aspect":
 *     "包装", ..., "spans": {"aspect": [0, 2]}, "probs": {...}, "confidence": 0.81}]}
 *   a labels file (gold or predictions), as train/dataset.py reads it: {"id": 3,
 *     "text": "包装很好", "records": [{"aspect": {"text": "包装", "start": 0, "end": 2},
 *     "opinion": ..., "category": ..., "polarity": ...}]}, null for an implicit term.
 * The forms and their errors: docs/tianchi-eval.md. */
#include "te_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_fields[TE_N_FIELDS] = {"aspect", "opinion", "category", "polarity"};

int te_is_jsonl(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    return i < len && data[i] == '{';
}

/* Where one line is read: its file, number and the record being read. */
typedef struct line_ctx {
    te_eval *ev;
    te_input kind; /* TE_INPUT_GOLD or TE_INPUT_PREDICTIONS */
    const char *file;
    long line;
    const char *text; /* the line's review text ("text"), NULL when it has none */
    size_t text_len;
    const char *const *fields;
    te_error *err;
} line_ctx;

static te_status bad(const line_ctx *c, size_t record, const char *what)
{
    if (record)
        return te_fail(c->err, TE_ERR_FORMAT, c->file, c->line, "record %zu: %s", record, what);
    return te_fail(c->err, TE_ERR_FORMAT, c->file, c->line, "%s", what);
}

/* The review id: a non-negative integer, or a string holding one. */
static te_status read_id(const line_ctx *c, json_t *obj, long *id)
{
    json_t *v = json_object_get(obj, "id");
    if (!v)
        return bad(c, 0, "no \"id\"");
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *id = (long)json_integer_value(v);
        return TE_OK;
    }
    if (json_is_string(v) && te_parse_id(json_string_value(v), json_string_length(v), id) == 0)
        return TE_OK;
    return bad(c, 0, "\"id\" must be a non-negative integer or a string holding one");
}

/* spans.<name>: [start, end] character offsets, end exclusive. */
static te_status read_span(const line_ctx *c, size_t k, json_t *spans, const char *name,
                           long out[2])
{
    json_t *v = json_object_get(spans, name);
    if (!v)
        return TE_OK;
    json_t *s = json_array_get(v, 0), *e = json_array_get(v, 1);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(s) ||
        !json_is_integer(e) || json_integer_value(s) < 0 ||
        json_integer_value(e) < json_integer_value(s)) {
        char what[160];
        snprintf(what, sizeof what, "\"spans\".\"%.60s\" must be [start, end], 0 <= start <= end",
                 name);
        return bad(c, k, what);
    }
    out[0] = (long)json_integer_value(s);
    out[1] = (long)json_integer_value(e);
    return TE_OK;
}

/* A probability: a number in [0, 1]. */
static int is_probability(json_t *v)
{
    return json_is_number(v) && json_number_value(v) >= 0.0 && json_number_value(v) <= 1.0;
}

/* Append a row read from the line; rows of a labels line (one with "text") are
 * marked so, for the checks a submission's order does not bind them to. */
static te_status add_row(const line_ctx *c, long id, const char *const f[TE_N_FIELDS],
                         const long offsets[4])
{
    te_status st = te_eval_add_row(c->ev, c->kind, id, f, offsets, c->file, c->line, c->err);
    if (st == TE_OK) {
        te_row *r = &c->ev->rows[c->kind].v[c->ev->rows[c->kind].n - 1];
        r->jsonl = 1;
        r->labels = c->text != NULL;
    }
    return st;
}

/* The byte offset of character `chars` of the line's text, or -1 past its end. */
static long byte_of_char(const line_ctx *c, long chars)
{
    size_t b = 0;
    for (long i = 0; i < chars; i++) {
        if (b >= c->text_len)
            return -1;
        uint32_t cp;
        b += te_utf8_next(c->text + b, &cp);
    }
    return (long)b;
}

/* A labels file's term: null (an implicit term, "_") or {"text", "start",
 * "end"}, whose characters [start, end) of the line's text must be its text. */
static te_status read_term(const line_ctx *c, size_t k, const char *name, json_t *v,
                           const char **term, long offsets[2])
{
    char what[320];
    if (json_is_null(v)) {
        *term = TE_PLACEHOLDER;
        return TE_OK;
    }
    json_t *t = json_object_get(v, "text"), *s = json_object_get(v, "start"),
           *e = json_object_get(v, "end");
    if (!json_is_string(t) || !json_is_integer(s) || !json_is_integer(e) ||
        json_integer_value(s) < 0 || json_integer_value(e) < json_integer_value(s)) {
        snprintf(what, sizeof what,
                 "\"%.60s\" must be {\"text\": a string, \"start\", \"end\": integers, "
                 "0 <= start <= end}", name);
        return bad(c, k, what);
    }
    *term = json_string_value(t);
    if (strlen(*term) != json_string_length(t))
        return bad(c, k, "a NUL character in a field");
    long start = (long)json_integer_value(s), end = (long)json_integer_value(e);
    if (!c->text) {
        snprintf(what, sizeof what,
                 "\"%.60s\" has offsets but the line has no \"text\" to read them in", name);
        return bad(c, k, what);
    }
    long bs = byte_of_char(c, start), be = bs < 0 ? -1 : byte_of_char(c, end);
    if (be < 0) {
        snprintf(what, sizeof what, "\"%.60s\" [%ld, %ld] runs past the text", name, start, end);
        return bad(c, k, what);
    }
    size_t n = (size_t)(be - bs);
    if (n != json_string_length(t) || memcmp(c->text + bs, *term, n) != 0) {
        char got[64], want[64];
        te_snippet(c->text + bs, n, got, sizeof got, 40);
        te_snippet(*term, json_string_length(t), want, sizeof want, 40);
        snprintf(what, sizeof what, "\"%.60s\" [%ld, %ld] is \"%s\" in the text, not \"%s\"",
                 name, start, end, got, want);
        return bad(c, k, what);
    }
    offsets[0] = start;
    offsets[1] = end;
    return TE_OK;
}

static te_status read_record(const line_ctx *c, long id, size_t k, json_t *rec)
{
    if (!json_is_object(rec))
        return bad(c, k, "a record must be a JSON object");
    const char *f[TE_N_FIELDS];
    char what[160];
    long offsets[4] = {-1, -1, -1, -1};
    json_t *spans = json_object_get(rec, "spans");
    if (spans && !json_is_object(spans))
        return bad(c, k, "\"spans\" must be an object");
    te_status st;
    if (spans && ((st = read_span(c, k, spans, c->fields[TE_ASPECT], offsets)) != TE_OK ||
                  (st = read_span(c, k, spans, c->fields[TE_OPINION], offsets + 2)) != TE_OK))
        return st;
    for (int i = 0; i < TE_N_FIELDS; i++) {
        json_t *v = json_object_get(rec, c->fields[i]);
        int is_term = i == TE_ASPECT || i == TE_OPINION;
        if (is_term && (json_is_null(v) || json_is_object(v))) {
            if ((st = read_term(c, k, c->fields[i], v, &f[i], offsets + 2 * i)) != TE_OK)
                return st;
            continue;
        }
        if (!json_is_string(v)) {
            snprintf(what, sizeof what, "\"%.60s\" %s", c->fields[i],
                     !v       ? "is missing"
                     : is_term ? "must be a string (\"_\" for an implicit term), null or "
                                 "{\"text\", \"start\", \"end\"}"
                               : "must be a string");
            return bad(c, k, what);
        }
        f[i] = json_string_value(v);
        if (strlen(f[i]) != json_string_length(v))
            return bad(c, k, "a NUL character in a field");
    }
    json_t *probs = json_object_get(rec, "probs"), *v;
    const char *key;
    if (probs && !json_is_object(probs))
        return bad(c, k, "\"probs\" must be an object");
    json_object_foreach(probs, key, v) {
        if (!is_probability(v)) {
            snprintf(what, sizeof what, "\"probs\".\"%.60s\" must be a number in [0, 1]", key);
            return bad(c, k, what);
        }
    }
    json_t *conf = json_object_get(rec, "confidence");
    if (conf && !is_probability(conf))
        return bad(c, k, "\"confidence\" must be a number in [0, 1]");
    if ((st = add_row(c, id, f, offsets)) != TE_OK)
        return st;
    c->ev->rows[c->kind].v[c->ev->rows[c->kind].n - 1].confidence =
        conf ? json_number_value(conf) : -1;
    return TE_OK;
}

/* One non-blank line: a review and its records (a placeholder row when it has
 * none, so that the id counts as present). */
static te_status read_line(const line_ctx *c, const char *text, size_t len, long *id)
{
    size_t valid = te_utf8_valid_prefix(text, len);
    const char *nul = memchr(text, '\0', len);
    if (nul || valid < len)
        return te_fail(c->err, TE_ERR_FORMAT, c->file, c->line,
                       "%s at byte %zu of the line; the file must be UTF-8",
                       nul && (size_t)(nul - text) <= valid ? "NUL byte" : "invalid UTF-8",
                       (nul && (size_t)(nul - text) <= valid ? (size_t)(nul - text) : valid) + 1);
    json_error_t jerr;
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return te_fail(c->err, TE_ERR_FORMAT, c->file, c->line, "not JSON: %s (column %d)",
                       jerr.text, jerr.column);
    json_t *records = json_object_get(obj, "records"), *review = json_object_get(obj, "text");
    line_ctx lc = *c;
    lc.text = json_is_string(review) ? json_string_value(review) : NULL;
    lc.text_len = lc.text ? json_string_length(review) : 0;
    c = &lc;
    te_status st = json_is_object(obj) ? read_id(c, obj, id)
                                       : bad(c, 0, "a line must be a JSON object");
    if (st == TE_OK && review && !json_is_string(review))
        st = bad(c, 0, "\"text\" must be a string (the review)");
    if (st == TE_OK && !records)
        st = bad(c, 0, "no \"records\" ([] for a review without quadruples)");
    else if (st == TE_OK && !json_is_array(records))
        st = bad(c, 0, "\"records\" must be an array");
    for (size_t k = 0; st == TE_OK && k < json_array_size(records); k++)
        st = read_record(c, *id, k + 1, json_array_get(records, k));
    if (st == TE_OK && json_array_size(records) == 0) {
        static const char *const none[TE_N_FIELDS] = {TE_PLACEHOLDER, TE_PLACEHOLDER,
                                                      TE_PLACEHOLDER, TE_PLACEHOLDER};
        static const long no_offsets[4] = {-1, -1, -1, -1};
        st = add_row(c, *id, none, no_offsets);
    }
    json_decref(obj);
    return st;
}

typedef struct seen_id {
    long id, line;
} seen_id;

static int cmp_seen(const void *a, const void *b)
{
    const seen_id *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* One line a review: an id on two lines is an error, reported at the later. */
static te_status check_ids(seen_id *seen, size_t n, const char *file, te_error *err)
{
    qsort(seen, n, sizeof *seen, cmp_seen);
    for (size_t i = 1; i < n; i++)
        if (seen[i].id == seen[i - 1].id)
            return te_fail(err, TE_ERR_FORMAT, file, seen[i].line,
                           "id %ld appears twice (first at line %ld): one line a review",
                           seen[i].id, seen[i - 1].line);
    return TE_OK;
}

te_status te_jsonl_parse(te_eval *ev, te_input kind, const char *file, const char *data,
                         size_t len, te_error *err)
{
    line_ctx c = {ev,   kind, file, 0, NULL, 0, ev->jsonl_fields[0] ? ev->jsonl_fields : default_fields,
                  err};
    te_status st = TE_OK;
    size_t pos = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        pos = 3;
        if ((st = te_eval_add_note(ev, TE_ISSUE_BOM, kind, file, 1, err)) != TE_OK)
            return st;
    }
    seen_id *seen = NULL;
    size_t n_seen = 0, cap_seen = 0;
    while (st == TE_OK && pos < len) {
        c.line++;
        const char *text = data + pos, *nl = memchr(text, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - text) : len - pos;
        pos += n + (nl != NULL);
        size_t end = n;
        while (end && (text[end - 1] == '\r' || text[end - 1] == ' ' || text[end - 1] == '\t'))
            end--;
        size_t start = 0;
        while (start < end && (text[start] == ' ' || text[start] == '\t'))
            start++;
        if (start == end)
            continue;
        long id = -1;
        st = read_line(&c, text + start, end - start, &id);
        if (st == TE_OK && te_grow((void **)&seen, &cap_seen, n_seen + 1, sizeof *seen) != 0)
            st = te_fail(err, TE_ERR_NOMEM, file, c.line, "out of memory");
        if (st == TE_OK)
            seen[n_seen++] = (seen_id){id, c.line};
    }
    if (st == TE_OK && n_seen == 0)
        st = te_fail(err, TE_ERR_FORMAT, file, 0, "empty file");
    if (st == TE_OK)
        st = check_ids(seen, n_seen, file, err);
    free(seen);
    return st;
}
