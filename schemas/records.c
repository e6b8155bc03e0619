/* records.c - building records value by value (for composers), the
 * distinct-record rule, and printing them: Tianchi submission rows (CSV) and JSONL. */
#include "schema_internal.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- building */

const char *pdi_schema_source(const pd_schema *sc) { return sc->path; }

int32_t pdi_schema_field_index(const pd_schema *sc, const char *name)
{
    for (int32_t f = 0; name && f < sc->n_fields; f++)
        if (strcmp(sc->fields[f].name, name) == 0) return f;
    return -1;
}

bool pdi_schema_field_is_span(const pd_schema *sc, int32_t f) { return sc->fields[f].kind == PD_FIELD_SPAN; }
bool pdi_schema_field_is_enum(const pd_schema *sc, int32_t f) { return sc->fields[f].kind == PD_FIELD_ENUM; }
bool pdi_schema_distinct_records(const pd_schema *sc) { return sc->distinct_records; }

bool pdi_schema_enum_has(const pd_schema *sc, int32_t f, const char *value)
{
    const pdi_schema_field *fd = &sc->fields[f];
    for (int32_t i = 0; fd->kind == PD_FIELD_ENUM && i < fd->n_values; i++)
        if (strcmp(fd->values[i], value) == 0) return true;
    return false;
}

pd_extraction *pdi_extraction_new_empty(const pd_schema *sc)
{
    pd_extraction *x = calloc(1, sizeof *x);
    if (x) x->n_fields = sc->n_fields;
    return x;
}

void pdi_record_free(pd_record *r, int32_t n_fields)
{
    for (int32_t f = 0; r->values && f < n_fields; f++) free(r->values[f]);
    free(r->values);
    free(r->start);
    free(r->end);
    free(r->prob);
    *r = (pd_record){0};
}

pd_status pdi_extraction_append(pd_extraction *x, const char *const *values)
{
    pd_record *recs = realloc(x->records, sizeof *recs * (size_t)(x->n_records + 1));
    if (!recs) return PD_ERR_NOMEM;
    x->records = recs;
    size_t n = (size_t)x->n_fields + 1; /* + 1: no zero-size allocations */
    pd_record r = {.values = calloc(n, sizeof *r.values), .start = malloc(n * sizeof *r.start),
                   .end = malloc(n * sizeof *r.end), .prob = malloc(n * sizeof *r.prob), .link = 1, .confidence = 1};
    bool ok = r.values && r.start && r.end && r.prob;
    for (int32_t f = 0; ok && f < x->n_fields; f++) {
        ok = (r.values[f] = strdup(values[f] ? values[f] : "_")) != NULL;
        r.start[f] = r.end[f] = -1;
        r.prob[f] = 1;
    }
    if (!ok) {
        pdi_record_free(&r, x->n_fields);
        return PD_ERR_NOMEM;
    }
    recs[x->n_records++] = r;
    return PD_OK;
}

/* ---------------------------------------------------------- offsets */

/* Byte offset of value in text: the occurrence at byte `from` or the first
 * after it, else the first; SIZE_MAX when the text does not hold it. */
static size_t find_value(const char *text, size_t len, const char *value, size_t from)
{
    size_t n = strlen(value);
    if (n == 0 || n > len) return SIZE_MAX;
    for (int round = 0; round < 2; round++) {
        for (size_t b = round ? 0 : from; b + n <= len; b++)
            if (text[b] == value[0] && memcmp(text + b, value, n) == 0 && !pdi_utf8_is_continuation((uint8_t)text[b])) return b;
        if (from == 0) break;
    }
    return SIZE_MAX;
}

size_t pdi_record_place(pd_record *r, int32_t f, const char *text, size_t len, size_t from)
{
    size_t b = strcmp(r->values[f], "_") ? find_value(text, len, r->values[f], from) : SIZE_MAX;
    if (b == SIZE_MAX) {
        r->start[f] = r->end[f] = -1;
        return SIZE_MAX;
    }
    r->start[f] = pdi_utf8_count(text, b);
    r->end[f] = r->start[f] + pdi_utf8_count(r->values[f], strlen(r->values[f]));
    return b;
}

pd_status pdi_extraction_locate(pd_extraction *x, const pd_schema *sc, const char *text, size_t len)
{
    size_t *from = calloc((size_t)sc->n_fields + 1, sizeof *from); /* each field's previous span, in bytes */
    if (!from) return PD_ERR_NOMEM;
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t f = 0; f < sc->n_fields; f++) {
            if (sc->fields[f].kind != PD_FIELD_SPAN) continue;
            size_t b = pdi_record_place(&x->records[r], f, text, len, from[f]);
            if (b != SIZE_MAX) from[f] = b;
        }
    free(from);
    return PD_OK;
}

static bool same_record(const pd_record *a, const pd_record *b, int32_t n_fields)
{
    for (int32_t f = 0; f < n_fields; f++)
        if (strcmp(a->values[f], b->values[f])) return false;
    return true;
}

void pdi_extraction_drop_below(pd_extraction *x, float min)
{
    int32_t kept = 0;
    for (int32_t r = 0; r < x->n_records; r++) {
        if (x->records[r].confidence < min) pdi_record_free(&x->records[r], x->n_fields);
        else x->records[kept++] = x->records[r];
    }
    x->n_records = kept;
}

void pdi_extraction_drop_repeats(pd_extraction *x)
{
    int32_t kept = 0;
    for (int32_t r = 0; r < x->n_records; r++) {
        bool seen = false;
        for (int32_t q = 0; q < kept && !seen; q++) seen = same_record(&x->records[q], &x->records[r], x->n_fields);
        if (seen) {
            pdi_record_free(&x->records[r], x->n_fields);
        } else {
            x->records[kept++] = x->records[r];
        }
    }
    x->n_records = kept;
}

bool pdi_extraction_last_repeats(const pd_extraction *x)
{
    for (int32_t q = 0; q + 1 < x->n_records; q++)
        if (same_record(&x->records[q], &x->records[x->n_records - 1], x->n_fields)) return true;
    return false;
}

void pdi_extraction_drop_last(pd_extraction *x)
{
    pdi_record_free(&x->records[--x->n_records], x->n_fields);
}

/* ---------------------------------------------------------- printing */

static void tianchi_row(pdi_buf *b, const pd_schema *sc, const char *id, const pd_record *r)
{
    pdi_buf_csv_field(b, id);
    for (int32_t c = 0; c < sc->n_csv; c++) {
        pdi_buf_append(b, ",", 1);
        pdi_buf_csv_field(b, r ? r->values[sc->csv_cols[c]] : "_");
    }
    pdi_buf_append(b, "\n", 1);
}

/* {field: value, ..., "spans": {span field: [start, end]}, "probs": {field:
 * p, ..., "link": p}, "confidence": p}: spans only for the values placed in
 * the text. A record built by hand without offsets or probabilities (NULL
 * arrays) has no "spans", or no "probs" and "confidence". */
static json_t *jsonl_record(const pd_schema *sc, const pd_record *r)
{
    json_t *rec = json_object(), *spans = r->start && r->end ? json_object() : NULL;
    json_t *probs = r->prob ? json_object() : NULL;
    for (int32_t f = 0; f < sc->n_fields; f++) {
        const char *name = sc->fields[f].name;
        if (json_object_set_new(rec, name, json_string(r->values[f]))) { /* not UTF-8: no record, not one short */
            json_decref(rec);
            json_decref(spans);
            json_decref(probs);
            return NULL;
        }
        if (spans && r->start[f] >= 0) json_object_set_new(spans, name, json_pack("[i, i]", r->start[f], r->end[f]));
        if (probs) json_object_set_new(probs, name, json_real(r->prob[f]));
    }
    if (spans) json_object_set_new(rec, "spans", spans);
    if (probs) {
        json_object_set_new(probs, "link", json_real(r->link));
        json_object_set_new(rec, "probs", probs);
        json_object_set_new(rec, "confidence", json_real(r->confidence));
    }
    return rec;
}

/* [record, ...] of x (NULL: none), or NULL when one cannot be written. */
static json_t *jsonl_records(const pd_schema *sc, const pd_extraction *x)
{
    json_t *recs = json_array();
    for (int32_t r = 0; x && recs && r < x->n_records; r++)
        if (json_array_append_new(recs, jsonl_record(sc, &x->records[r]))) {
            json_decref(recs);
            return NULL;
        }
    return recs;
}

static json_t *jsonl_object(const pd_schema *sc, const pd_extraction *x, const char *id)
{
    json_t *recs = jsonl_records(sc, x);
    return recs ? json_pack("{s:s, s:o}", "id", id, "records", recs) : NULL;
}

static pd_status check_records(const pd_schema *schema, const pd_extraction *x, pd_error *err)
{
    if (x && x->n_fields != schema->n_fields)
        return pdi_set_error(err, PD_ERR_ARG, "%s: records of %d fields, the schema has %d", schema->path, x->n_fields,
                             schema->n_fields);
    return PD_OK;
}

/* o as compact JSON with reals to 4 significant digits into *out
 * (malloc'ed; o's reference is taken); PD_ERR_FORMAT when a string is not UTF-8. */
static pd_status dump_json(json_t *o, const pd_schema *schema, const char *what, char **out, pd_error *err)
{
    *out = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(4)) : NULL;
    json_decref(o);
    return *out ? PD_OK : pdi_set_error(err, PD_ERR_FORMAT, "%s: %s is not valid UTF-8", schema->path, what);
}

pd_status pd_extraction_json(const pd_schema *schema, const pd_extraction *x, int32_t record, char **text,
                             size_t *len, pd_error *err)
{
    if (text) *text = NULL;
    if (!schema || !text) return pdi_set_error(err, PD_ERR_ARG, "writing records: NULL argument");
    pd_status st = check_records(schema, x, err);
    if (st) return st;
    int32_t n = x ? x->n_records : 0;
    if (record < -1 || record >= n)
        return pdi_set_error(err, PD_ERR_ARG, "writing records: no record %d (the extraction has %d)", record, n);
    json_t *o = record >= 0 ? jsonl_record(schema, &x->records[record]) : jsonl_records(schema, x);
    if ((st = dump_json(o, schema, "a value", text, err))) return st;
    if (len) *len = strlen(*text);
    return PD_OK;
}

pd_status pd_extraction_format(const pd_schema *schema, const pd_extraction *x, const char *id, pd_record_format fmt,
                               char **text, size_t *len, pd_error *err)
{
    if (text) *text = NULL;
    if (!schema || !id || !text) return pdi_set_error(err, PD_ERR_ARG, "writing records: NULL argument");
    pd_status st = check_records(schema, x, err);
    if (st) return st;
    pdi_buf b = {0};
    if (fmt == PD_FORMAT_TIANCHI) {
        if (!x || x->n_records == 0) tianchi_row(&b, schema, id, NULL);
        for (int32_t r = 0; x && r < x->n_records; r++) tianchi_row(&b, schema, id, &x->records[r]);
    } else if (fmt == PD_FORMAT_JSONL) {
        char what[96], *line;
        snprintf(what, sizeof what, "the id or a value of '%.60s'", id);
        if ((st = dump_json(jsonl_object(schema, x, id), schema, what, &line, err))) return st;
        pdi_buf_append(&b, line, strlen(line));
        pdi_buf_append(&b, "\n", 1);
        free(line);
    } else {
        return pdi_set_error(err, PD_ERR_ARG, "writing records: unknown format %d", (int)fmt);
    }
    if (b.failed) {
        free(b.data);
        return pdi_set_error(err, PD_ERR_NOMEM, "writing records: out of memory");
    }
    *text = b.data;
    if (len) *len = b.len;
    return PD_OK;
}

/* ------------------------------------------------ an array as a stream */

pdi_text_array pdi_text_array_init(const char *const *texts, const size_t *lens, int32_t n, pd_extraction **outs,
                                   pd_error *errs)
{
    for (int32_t i = 0; i < n; i++) {
        outs[i] = NULL;
        if (errs) errs[i] = (pd_error){.code = PD_ERR_INTERNAL};
    }
    return (pdi_text_array){texts, lens, n, 0, outs, errs, .first_failed = -1};
}

static int array_next(void *user, int wait, const char **text, size_t *len, void **tag)
{
    (void)wait;
    pdi_text_array *a = user;
    if (a->next >= a->n) return -1;
    *text = a->texts[a->next];
    *len = a->lens[a->next];
    *tag = (void *)(intptr_t)a->next++;
    return 1;
}

static void array_done(void *user, void *tag, pd_extraction *x, const pd_error *e)
{
    pdi_text_array *a = user;
    int32_t i = (int32_t)(intptr_t)tag;
    a->outs[i] = x;
    if (a->errs) a->errs[i] = x ? (pd_error){.code = PD_OK} : *e;
    if (!x && (a->first_failed < 0 || i < a->first_failed)) {
        a->first_failed = i;
        a->first_err = *e;
    }
}

pd_text_source pdi_text_array_source(pdi_text_array *a)
{
    return (pd_text_source){array_next, array_done, a};
}

pd_status pdi_text_array_status(pdi_text_array *a, const char *what, pd_error *err)
{
    for (int32_t i = a->next; i < a->n && a->first_failed < 0; i++) { /* never started */
        pdi_set_error(&a->first_err, PD_ERR_INTERNAL, "the text was not read");
        a->first_failed = i;
    }
    if (a->first_failed < 0) return PD_OK;
    if (err) {
        *err = a->first_err;
        pdi_error_prefix(err, "%stext %d", what, a->first_failed);
    }
    return a->first_err.code;
}
