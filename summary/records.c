/* records.c - records a review at a time (pds_records.h). */
#include "pds_records.h"
#include "pd_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pds_records_open(pds_records *r, const char *path, pd_error *e)
{
    size_t n = strlen(path);
    memset(r, 0, sizeof *r);
    r->name = path;
    r->jsonl = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
    if (!(r->f = fopen(path, "rb"))) return pdi_set_error(e, PD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    te_error err;
    if (r->jsonl) {
        pd_jsonl_init(&r->jl, r->f, path);
    } else if (!(r->csv = te_csv_open(path, r->f, &err))) {
        fclose(r->f);
        r->f = NULL;
        return pdi_set_error(e, PD_ERR_FORMAT, "%s", err.message);
    }
    return 0;
}

static void clear(pds_records *r)
{
    for (size_t i = 0; i < r->n_strs; i++) free(r->strs[i]);
    r->n_strs = r->n = 0;
    json_decref(r->value);
    r->value = NULL;
    r->id = r->text = NULL;
}

void pds_records_close(pds_records *r)
{
    clear(r);
    for (size_t i = 0; i < r->n_pending; i++) free(r->pending[i]);
    free(r->strs);
    free(r->recs);
    te_csv_free(r->csv);
    pd_jsonl_free(&r->jl);
    if (r->f) fclose(r->f);
    memset(r, 0, sizeof *r);
}

static pds_record *new_record(pds_records *r)
{
    size_t cap = r->cap;
    if (r->n == cap) {
        pds_record *p = realloc(r->recs, (cap ? 2 * cap : 8) * sizeof *p);
        if (!p) return NULL;
        r->recs = p;
        r->cap = cap ? 2 * cap : 8;
    }
    pds_record *x = &r->recs[r->n++];
    *x = (pds_record){.a_start = -1, .a_end = -1, .o_start = -1, .o_end = -1};
    return x;
}

/* ---------------------------------------------------------------- JSONL */

/* The reader's complaint as err: -1. */
static int jsonl_fail(const pd_jsonl *j, pd_error *e)
{
    pdi_set_error(e, PD_ERR_FORMAT, "%s:%ld: %s", j->name, j->line, j->what);
    return -1;
}

/* A field of a record: a string, {"text","start","end"} (dataset.py's span)
 * or null / absent ("_"). */
static bool json_field(const json_t *rec, const char *key, const char **s, long *start, long *end)
{
    json_t *v = json_object_get(rec, key);
    *s = "_";
    if (!v || json_is_null(v)) return true;
    if (json_is_string(v)) {
        *s = json_string_value(v);
        return true;
    }
    json_t *t = json_object_get(v, "text"), *a = json_object_get(v, "start"), *b = json_object_get(v, "end");
    if (!json_is_object(v) || !json_is_string(t)) return false;
    *s = json_string_value(t);
    if (start && json_is_integer(a) && json_is_integer(b)) {
        *start = (long)json_integer_value(a);
        *end = (long)json_integer_value(b);
    }
    return true;
}

/* extract's "spans": {"aspect": [start, end], ...}. */
static void json_span(const json_t *rec, const char *key, long *start, long *end)
{
    json_t *sp = json_object_get(json_object_get(rec, "spans"), key);
    if (json_array_size(sp) == 2 && json_is_integer(json_array_get(sp, 0)) && json_is_integer(json_array_get(sp, 1))) {
        *start = (long)json_integer_value(json_array_get(sp, 0));
        *end = (long)json_integer_value(json_array_get(sp, 1));
    }
}

static int jsonl_next(pds_records *r, pd_error *e)
{
    json_t *v;
    pd_jsonl_status st = pd_jsonl_next(&r->jl, &v);
    if (st == PD_JSONL_END) return 0;
    if (st != PD_JSONL_OK) return jsonl_fail(&r->jl, e);
    r->value = v;
    r->line = r->jl.line;
    json_t *recs = json_object_get(v, "records"), *item;
    if (!pd_jsonl_object(&r->jl, v) || !pd_jsonl_id(&r->jl, v, "id", r->id_buf, &r->id) ||
        !pd_jsonl_string(&r->jl, v, "text", false, &r->text, NULL))
        return jsonl_fail(&r->jl, e);
    if (!json_is_array(recs)) {
        pd_jsonl_bad(&r->jl, "\"records\" must be a list (of what extract writes, or dataset.py's records)");
        return jsonl_fail(&r->jl, e);
    }
    size_t i;
    json_array_foreach(recs, i, item) {
        pds_record *x = new_record(r);
        if (!x) return pdi_set_error(e, PD_ERR_NOMEM, "out of memory"), -1;
        if (!json_is_object(item) || !json_field(item, "aspect", &x->aspect, &x->a_start, &x->a_end) ||
            !json_field(item, "opinion", &x->opinion, &x->o_start, &x->o_end) ||
            !json_field(item, "category", &x->category, NULL, NULL) || !json_field(item, "polarity", &x->polarity, NULL, NULL)) {
            pd_jsonl_bad(&r->jl, "records[%zu]: a record is an object whose aspect, opinion, category and polarity "
                                  "are strings, {\"text\",\"start\",\"end\"} or null", i);
            return jsonl_fail(&r->jl, e);
        }
        json_span(item, "aspect", &x->a_start, &x->a_end);
        json_span(item, "opinion", &x->o_start, &x->o_end);
    }
    return 1;
}

/* ---------------------------------------------------------------- CSV */

/* The next CSV row into r->pending (its fields copied): 1, 0 at the end,
 * -1 after the message. The labels' header is skipped. */
static int csv_row(pds_records *r, pd_error *e)
{
    for (;;) {
        te_error err;
        te_csv_result res = te_csv_next(r->csv, &err);
        if (res == TE_CSV_END) return 0;
        if (res != TE_CSV_ROW) return pdi_set_error(e, PD_ERR_FORMAT, "%s", err.message), -1;
        size_t n = te_csv_n_fields(r->csv);
        long line = te_csv_line(r->csv);
        if (n != 5 && n != 9)
            return pdi_set_error(e, PD_ERR_FORMAT, "%s:%ld: expected 5 fields (id,aspect,opinion,category,polarity: what extract writes) or "
                             "9 (the Tianchi labels), got %zu", r->name, line, n), -1;
        if (strcmp(te_csv_field(r->csv, 0, NULL), "id") == 0) continue; /* a header */
        for (size_t i = 0; i < n; i++)
            if (!(r->pending[i] = strdup(te_csv_field(r->csv, i, NULL)))) {
                r->n_pending = i;
                return pdi_set_error(e, PD_ERR_NOMEM, "out of memory"), -1;
            }
        r->n_pending = n;
        r->pending_line = line;
        return 1;
    }
}

/* A span offset of the labels CSV: blank for none. */
static long offset(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s && *s != ' ' && !*end && v >= 0 ? v : -1;
}

/* The pending row as a record of the current review (its strings owned by r). */
static int take_pending(pds_records *r, pd_error *e)
{
    char **f = r->pending;
    size_t n = r->n_pending;
    if (r->n_strs + n > r->cap_strs) {
        char **p = realloc(r->strs, (r->cap_strs + n + 16) * sizeof *p);
        if (!p) return pdi_set_error(e, PD_ERR_NOMEM, "out of memory"), -1;
        r->strs = p;
        r->cap_strs += n + 16;
    }
    memcpy(r->strs + r->n_strs, f, n * sizeof *f);
    r->n_strs += n;
    r->n_pending = 0;
    bool labels = n == 9;
    const char *pol = f[labels ? 8 : 4], *cat = f[labels ? 7 : 3];
    if (strcmp(pol, "_") == 0 && strcmp(cat, "_") == 0) return 0; /* id,_,_,_,_: a review with none */
    pds_record *x = new_record(r);
    if (!x) return pdi_set_error(e, PD_ERR_NOMEM, "out of memory"), -1;
    x->aspect = f[1];
    x->opinion = f[labels ? 4 : 2];
    x->category = cat;
    x->polarity = pol;
    if (labels) {
        x->a_start = offset(f[2]), x->a_end = offset(f[3]);
        x->o_start = offset(f[5]), x->o_end = offset(f[6]);
    }
    return 0;
}

/* The rows of one id, in a row, are one review. */
static int csv_next(pds_records *r, pd_error *e)
{
    int rc = r->n_pending ? 1 : csv_row(r, e);
    if (rc <= 0) return rc;
    r->line = r->pending_line;
    if (take_pending(r, e)) return -1;
    r->id = r->strs[0];
    while ((rc = csv_row(r, e)) == 1 && strcmp(r->pending[0], r->id) == 0)
        if (take_pending(r, e)) return -1;
    return rc < 0 ? -1 : 1;
}

int pds_records_next(pds_records *r, pd_error *e)
{
    clear(r);
    if (r->jsonl) return jsonl_next(r, e);
    return csv_next(r, e);
}
