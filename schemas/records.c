/* records.c - printing extracted records: Tianchi submission rows (CSV) and JSONL. */
#include "schema_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *data;
    size_t len, cap;
    bool failed;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* RFC 4180: quote a field holding a comma, a quote or a line break; double its quotes. */
static void put_csv(sbuf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        put(b, s, strlen(s));
        return;
    }
    put(b, "\"", 1);
    for (const char *q; (q = strchr(s, '"')); s = q + 1) {
        put(b, s, (size_t)(q - s));
        put(b, "\"\"", 2);
    }
    put(b, s, strlen(s));
    put(b, "\"", 1);
}

static void tianchi_row(sbuf *b, const pd_schema *sc, const char *id, const pd_record *r)
{
    put_csv(b, id);
    for (int32_t c = 0; c < sc->n_csv; c++) {
        put(b, ",", 1);
        put_csv(b, r ? r->values[sc->csv_cols[c]] : "_");
    }
    put(b, "\n", 1);
}

static json_t *jsonl_object(const pd_schema *sc, const pd_extraction *x, const char *id)
{
    json_t *recs = json_array(), *o = json_pack("{s:s, s:o}", "id", id, "records", recs);
    for (int32_t r = 0; x && o && r < x->n_records; r++) {
        json_t *rec = json_object();
        for (int32_t f = 0; f < sc->n_fields; f++)
            json_object_set_new(rec, sc->fields[f].name, json_string(x->records[r].values[f]));
        json_array_append_new(recs, rec);
    }
    return o;
}

pd_status pd_extraction_format(const pd_schema *schema, const pd_extraction *x, const char *id, pd_record_format fmt,
                               char **text, size_t *len, pd_error *err)
{
    if (text) *text = NULL;
    if (!schema || !id || !text) return pd_set_error(err, PD_ERR_ARG, "pd_extraction_format: NULL argument");
    if (x && x->n_fields != schema->n_fields)
        return pd_set_error(err, PD_ERR_ARG, "%s: records of %d fields, the schema has %d", schema->path, x->n_fields,
                            schema->n_fields);
    sbuf b = {0};
    if (fmt == PD_FORMAT_TIANCHI) {
        if (!x || x->n_records == 0) tianchi_row(&b, schema, id, NULL);
        for (int32_t r = 0; x && r < x->n_records; r++) tianchi_row(&b, schema, id, &x->records[r]);
    } else if (fmt == PD_FORMAT_JSONL) {
        json_t *o = jsonl_object(schema, x, id);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s) return pd_set_error(err, PD_ERR_FORMAT, "%s: id or value of '%s' is not valid UTF-8", schema->path, id);
        put(&b, s, strlen(s));
        put(&b, "\n", 1);
        free(s);
    } else {
        return pd_set_error(err, PD_ERR_ARG, "pd_extraction_format: unknown format %d", (int)fmt);
    }
    if (b.failed) {
        free(b.data);
        return pd_set_error(err, PD_ERR_NOMEM, "pd_extraction_format: out of memory");
    }
    *text = b.data;
    if (len) *len = b.len;
    return PD_OK;
}
