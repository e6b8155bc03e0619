/* summary.c - the summary of a corpus: counts per polarity and per
 * (category, polarity), their top aspects, opinions and examples, gathered a
 * review at a time, merged exactly, written as JSON with the estimates of a
 * calibration. */
#include "pds_internal.h"
#include "pd_internal.h" /* pdi_buf, and the CSV field rule shared with extract's rows */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell {
    char *category, *polarity; /* category NULL: a polarity's entry */
    long records, reviews;
    pds_counts aspects, opinions;
    json_t *examples; /* [{"id","text","marks"}], at most params.examples */
    json_t *listed;   /* the same, at most params.listed (-1: all) */
} cell;

struct pds_summary {
    pds_params params;
    cell *cells;
    size_t n, cap;
    long reviews, records;
};

pds_params pds_default_params(void)
{
    return (pds_params){.top = 10, .examples = 3, .min_support = 20, .listed = 0};
}

pds_summary *pds_summary_new(const pds_params *p)
{
    pds_summary *s = calloc(1, sizeof *s);
    if (s) s->params = p ? *p : pds_default_params();
    return s;
}

void pds_summary_free(pds_summary *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->cells[i].category);
        free(s->cells[i].polarity);
        pds_counts_free(&s->cells[i].aspects);
        pds_counts_free(&s->cells[i].opinions);
        json_decref(s->cells[i].examples);
        json_decref(s->cells[i].listed);
    }
    free(s->cells);
    free(s);
}

long pds_summary_reviews(const pds_summary *s)
{
    return s->reviews;
}

/* The cell of a key (its index), made when new; -1 when out of memory. */
static long cell_index(pds_summary *s, const char *category, const char *polarity)
{
    for (size_t i = 0; i < s->n; i++)
        if (pds_same_key(s->cells[i].category, s->cells[i].polarity, category, polarity)) return (long)i;
    if (pds_grow((void **)&s->cells, &s->cap, s->n + 1, sizeof *s->cells)) return -1;
    cell *c = &s->cells[s->n];
    memset(c, 0, sizeof *c);
    bool ok = true;
    c->category = pds_strdup(category, &ok);
    c->polarity = pds_strdup(polarity, &ok);
    c->examples = json_array();
    c->listed = json_array();
    if (!ok || !c->examples || !c->listed) {
        free(c->category);
        free(c->polarity);
        json_decref(c->examples);
        json_decref(c->listed);
        return -1;
    }
    return (long)s->n++;
}

/* A review into a cell's list of at most cap (-1: no limit): 0 when kept or
 * not wanted, -1 when out of memory (or e NULL). */
static int keep(json_t *list, int cap, json_t *e)
{
    if (cap >= 0 && json_array_size(list) >= (size_t)cap) return 0;
    return json_array_append(list, e);
}

/* Copies of src's reviews after those of list (at most cap, -1: all). */
static int keep_copies(json_t *list, int cap, const json_t *src)
{
    for (size_t j = 0; j < json_array_size(src) && (cap < 0 || json_array_size(list) < (size_t)cap); j++)
        if (json_array_append_new(list, json_deep_copy(json_array_get(src, j)))) return -1;
    return 0;
}

/* Another summary's examples and listed reviews after those of dst. */
static int keep_all(cell *dst, const json_t *examples, const json_t *listed, const pds_params *p)
{
    return keep_copies(dst->examples, p->examples, examples) || (p->listed && keep_copies(dst->listed, p->listed, listed));
}

/* A review as an example of cell k: its id, text and the spans of the cell's
 * records (recs[i] belongs to it when key[2 i] or key[2 i + 1] is k). */
static json_t *example(const char *id, const char *text, const pds_record *recs, size_t n, const long *key, long k)
{
    json_t *marks = json_array();
    json_t *e = json_pack("{s:s,s:o}", "id", id, "marks", marks);
    if (!e) return NULL;
    if (text && json_object_set_new(e, "text", json_string(text))) goto fail;
    for (size_t i = 0; i < n; i++) {
        if (key[2 * i] != k && key[2 * i + 1] != k) continue;
        const long span[2][2] = {{recs[i].a_start, recs[i].a_end}, {recs[i].o_start, recs[i].o_end}};
        for (int f = 0; f < 2; f++)
            if (span[f][0] >= 0 && span[f][1] > span[f][0] &&
                json_array_append_new(marks, json_pack("{s:I,s:I,s:s}", "start", (json_int_t)span[f][0], "end",
                                                       (json_int_t)span[f][1], "field", f ? "opinion" : "aspect")))
                goto fail;
    }
    return e;
fail:
    json_decref(e);
    return NULL;
}

int pds_summary_add(pds_summary *s, const char *id, const char *text, const pds_record *recs, size_t n,
                    pds_error *err)
{
    long *key = n ? malloc(2 * n * sizeof *key) : NULL; /* each record's cell and polarity entry */
    if (n && !key) return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *pol = pds_field(recs[i].polarity);
        key[2 * i] = cell_index(s, pds_field(recs[i].category), pol);
        key[2 * i + 1] = key[2 * i] < 0 ? -1 : cell_index(s, NULL, pol);
        if (key[2 * i + 1] < 0) {
            rc = -1;
            break;
        }
        for (int k = 0; k < 2 && !rc; k++) {
            cell *c = &s->cells[key[2 * i + k]];
            c->records++;
            rc = pds_counts_add(&c->aspects, pds_field(recs[i].aspect), 1) ||
                 pds_counts_add(&c->opinions, pds_field(recs[i].opinion), 1);
        }
    }
    /* each cell the review touches, once: its reviews, maybe an example */
    for (size_t i = 0; !rc && i < 2 * n; i++) {
        bool first = true;
        for (size_t j = 0; j < i && first; j++) first = key[j] != key[i];
        cell *c = &s->cells[key[i]];
        if (!first) continue;
        c->reviews++;
        bool want = (int)json_array_size(c->examples) < s->params.examples ||
                    (s->params.listed && (s->params.listed < 0 || (int)json_array_size(c->listed) < s->params.listed));
        if (!want) continue;
        json_t *e = example(id, text, recs, n, key, key[i]);
        rc = keep(c->examples, s->params.examples, e) || (s->params.listed && keep(c->listed, s->params.listed, e));
        json_decref(e);
    }
    free(key);
    if (rc) return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
    s->reviews++;
    s->records += (long)n;
    return 0;
}

static int merge_counts(pds_counts *dst, const pds_counts *src)
{
    for (size_t i = 0; i < src->cap; i++)
        if (src->keys[i] && pds_counts_add(dst, src->keys[i], src->counts[i])) return -1;
    return 0;
}

int pds_summary_merge(pds_summary *dst, const pds_summary *src, pds_error *err)
{
    for (size_t i = 0; i < src->n; i++) {
        const cell *a = &src->cells[i];
        long k = cell_index(dst, a->category, a->polarity);
        if (k < 0) return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
        cell *d = &dst->cells[k];
        d->records += a->records;
        d->reviews += a->reviews;
        if (merge_counts(&d->aspects, &a->aspects) || merge_counts(&d->opinions, &a->opinions))
            return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
        if (keep_all(d, a->examples, a->listed, &dst->params)) return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
    }
    dst->reviews += src->reviews;
    dst->records += src->records;
    return 0;
}

/* ------------------------------------------------------------ state */

static json_t *counts_object(const pds_counts *c)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < c->cap; i++)
        if (c->keys[i] && json_object_set_new(o, c->keys[i], json_integer(c->counts[i]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

json_t *pds_summary_state(const pds_summary *s)
{
    json_t *cells = json_array();
    json_t *root = json_pack("{s:s,s:i,s:I,s:I,s:o}", "format", "pocketdec-summary-state", "version", 1, "reviews",
                             (json_int_t)s->reviews, "records", (json_int_t)s->records, "cells", cells);
    for (size_t i = 0; root && i < s->n; i++) {
        const cell *c = &s->cells[i];
        json_t *e = json_pack("{s:s,s:I,s:I,s:o,s:o,s:O}", "polarity", c->polarity, "records", (json_int_t)c->records,
                              "reviews", (json_int_t)c->reviews, "aspects", counts_object(&c->aspects), "opinions",
                              counts_object(&c->opinions), "examples", c->examples);
        if (!e || (c->category && json_object_set_new(e, "category", json_string(c->category))) ||
            (s->params.listed && json_object_set(e, "listed", c->listed)) || json_array_append_new(cells, e)) {
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

/* obj's {value: count} into c; false when it is not one. */
static bool counts_from(pds_counts *c, const json_t *obj, bool *oom)
{
    const char *key;
    json_t *v;
    if (!json_is_object(obj)) return false;
    json_object_foreach((json_t *)obj, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
        if (pds_counts_add(c, key, (long)json_integer_value(v))) return !(*oom = true);
    }
    return true;
}

static bool whole_number(const json_t *e, const char *key, long *out)
{
    json_t *v = json_object_get(e, key);
    *out = (long)json_integer_value(v);
    return json_is_integer(v) && *out >= 0;
}

pds_summary *pds_summary_from_state(const json_t *state, const pds_params *p, const char *path, pds_error *err)
{
    pds_summary *s = pds_summary_new(p);
    json_t *cells = json_object_get(state, "cells"), *e;
    const char *fmt = json_string_value(json_object_get(state, "format"));
    size_t i;
    bool oom = !s;
    if (oom) goto fail;
    if (!fmt || strcmp(fmt, "pocketdec-summary-state") || json_integer_value(json_object_get(state, "version")) != 1 ||
        !whole_number(state, "reviews", &s->reviews) || !whole_number(state, "records", &s->records) ||
        !json_is_array(cells)) {
        pds_fail(err, PDS_ERR_FORMAT, "%s: not a summary state (pocketdec summarize --save-state writes one)", path);
        goto fail;
    }
    json_array_foreach(cells, i, e) {
        json_t *cat = json_object_get(e, "category"), *pol = json_object_get(e, "polarity");
        json_t *ex = json_object_get(e, "examples"), *listed = json_object_get(e, "listed");
        long records, reviews;
        if (!json_is_string(pol) || (cat && !json_is_string(cat)) || !whole_number(e, "records", &records) ||
            !whole_number(e, "reviews", &reviews) || !json_is_array(ex) || (listed && !json_is_array(listed))) {
            pds_fail(err, PDS_ERR_FORMAT, "%s: cells[%zu]: needs polarity, records, reviews, aspects, opinions and "
                     "examples", path, i);
            goto fail;
        }
        long want = s->params.listed < 0 || reviews < s->params.listed ? reviews : s->params.listed;
        if ((long)json_array_size(listed) < want) { /* a partial list would pass for the cell's reviews */
            pds_fail(err, PDS_ERR_FORMAT, "%s: cells[%zu]: the state lists %zu of the %ld reviews to list (saved "
                     "listing fewer): cannot list them", path, i, json_array_size(listed), want);
            goto fail;
        }
        long k = cell_index(s, cat ? json_string_value(cat) : NULL, json_string_value(pol));
        if (k < 0) {
            oom = true;
            goto fail;
        }
        cell *c = &s->cells[k];
        c->records += records;
        c->reviews += reviews;
        if (!counts_from(&c->aspects, json_object_get(e, "aspects"), &oom) ||
            !counts_from(&c->opinions, json_object_get(e, "opinions"), &oom)) {
            if (!oom) pds_fail(err, PDS_ERR_FORMAT, "%s: cells[%zu]: aspects and opinions are {value: count}", path, i);
            goto fail;
        }
        if (keep_all(c, ex, listed, &s->params)) {
            oom = true;
            goto fail;
        }
    }
    return s;
fail:
    if (oom) pds_fail(err, PDS_ERR_MEMORY, "out of memory");
    pds_summary_free(s);
    return NULL;
}

/* Cells by records found, then by name: the same order however they came. */
static int cell_order(const void *a, const void *b)
{
    const cell *x = *(const cell *const *)a, *y = *(const cell *const *)b;
    if (x->records != y->records) return x->records > y->records ? -1 : 1;
    int c = strcmp(x->category ? x->category : "", y->category ? y->category : "");
    return c ? c : strcmp(x->polarity, y->polarity);
}

/* A count as the JSON holds it: 2 decimals. */
static json_t *amount(double v)
{
    return v < 0 ? json_null() : json_real(round(v * 100) / 100);
}

/* A rate: 4 decimals; null when unknown. */
static json_t *rate(double v)
{
    return v < 0 ? json_null() : json_real(round(v * 1e4) / 1e4);
}

static json_t *entry(const pds_summary *s, const cell *c, const pds_calibration *cal)
{
    const char *which;
    pds_rates r = pds_calibration_rates(cal, c->category, c->polarity, s->params.min_support, &which);
    pds_estimate e;
    pds_estimate_count(&r, c->records, &e);
    json_t *o = json_pack("{s:s,s:I,s:I,s:f,s:o,s:o,s:o,s:I,s:s,s:o,s:o,s:o,s:o,s:o}", "polarity", c->polarity,
                          "records", (json_int_t)c->records, "reviews", (json_int_t)c->reviews, "share",
                          s->reviews ? round(1e4 * (double)c->reviews / (double)s->reviews) / 1e4 : 0.0, "estimate",
                          amount(e.estimate), "low", amount(e.low), "high", amount(e.high), "support", (json_int_t)llround(e.support),
                          "rates", which, "precision", rate(e.precision), "recall", rate(e.recall), "top_aspects", pds_counts_top(&c->aspects, s->params.top),
                          "top_opinions", pds_counts_top(&c->opinions, s->params.top), "examples", json_deep_copy(c->examples));
    json_t *out = c->category ? json_pack("{s:s}", "category", c->category) : json_object(); /* category first */
    if (!o || !out || json_object_update(out, o) ||
        (s->params.listed && json_object_set_new(out, "listed", json_deep_copy(c->listed)))) {
        json_decref(out);
        out = NULL;
    }
    json_decref(o);
    return out;
}

/* The calibration's cells with gold records that the summary found nothing
 * of, as empty cells: their entry says so with the interval of nothing found
 * (a complaint the model never wrote may still be in the corpus). NULL with
 * *n 0 when there are none; -1 in *n when out of memory. */
static cell *not_found(const pds_summary *s, const pds_calibration *cal, long *n)
{
    const char *category, *polarity;
    double gold;
    cell *out = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t i = 0; pds_calibration_cell(cal, i, &category, &polarity, &gold); i++) {
        bool found = gold <= 0;
        for (size_t j = 0; j < s->n && !found; j++)
            found = pds_same_key(s->cells[j].category, s->cells[j].polarity, category, polarity);
        if (found) continue;
        if (pds_grow((void **)&out, &cap, (size_t)*n + 1, sizeof *out)) {
            free(out);
            *n = -1;
            return NULL;
        }
        /* the strings stay the calibration's: the cell lives only while the JSON is written */
        out[(*n)++] = (cell){.category = (char *)category, .polarity = (char *)polarity};
    }
    return out;
}

json_t *pds_summary_json(const pds_summary *s, const pds_calibration *cal)
{
    json_t *pol = json_object(), *cells = json_array(), *none = json_array();
    json_t *root = json_pack("{s:I,s:I,s:o,s:o}", "reviews", (json_int_t)s->reviews, "records",
                             (json_int_t)s->records, "polarity", pol, "cells", cells);
    long n_empty;
    cell *empty = not_found(s, cal, &n_empty);
    size_t n = s->n + (size_t)(n_empty > 0 ? n_empty : 0);
    const cell **order = n ? malloc(n * sizeof *order) : NULL;
    if (!root || !none || n_empty < 0 || (n && !order)) goto fail;
    for (size_t i = 0; i < s->n; i++) order[i] = &s->cells[i];
    for (long i = 0; i < n_empty; i++) {
        empty[i].examples = empty[i].listed = none; /* borrowed: copied into each entry */
        order[s->n + (size_t)i] = &empty[i];
    }
    if (n) qsort(order, n, sizeof *order, cell_order); /* no cells: order is NULL */
    for (size_t i = 0; i < n; i++) {
        json_t *e = entry(s, order[i], cal);
        if (!e || (order[i]->category ? json_array_append_new(cells, e)
                                      : json_object_set_new(pol, order[i]->polarity, e)))
            goto fail;
    }
    free(order);
    free(empty);
    json_decref(none);
    return root;
fail:
    free(order);
    free(empty);
    json_decref(none);
    json_decref(root);
    return NULL;
}

/* ------------------------------------------------------------ changes */

/* The entry of the same key in a summary's JSON (NULL: none). */
static json_t *same_entry(const json_t *s, json_t *e)
{
    json_t *cat = json_object_get(e, "category"), *x;
    const char *pol = json_string_value(json_object_get(e, "polarity"));
    size_t i;
    if (!cat) return json_object_get(json_object_get(s, "polarity"), pol);
    json_array_foreach(json_object_get(s, "cells"), i, x) {
        if (json_equal(json_object_get(x, "category"), cat) &&
            strcmp(json_string_value(json_object_get(x, "polarity")), pol) == 0)
            return x;
    }
    return NULL;
}

static double change_of(json_t *c)
{
    return fabs(json_real_value(json_object_get(c, "change")));
}

/* e's change from before to after (either may be NULL: none), into list. */
static int add_change(json_t *list, json_t *e, json_t *before, json_t *after)
{
    double b = before ? json_number_value(json_object_get(before, "share")) : 0;
    double a = after ? json_number_value(json_object_get(after, "share")) : 0;
    json_t *c = json_pack("{s:O,s:f,s:f,s:f,s:f,s:f}", "polarity", json_object_get(e, "polarity"), "before", b, "after",
                          a, "change", round((a - b) * 1e4) / 1e4, "estimate_before",
                          before ? json_number_value(json_object_get(before, "estimate")) : 0.0, "estimate_after",
                          after ? json_number_value(json_object_get(after, "estimate")) : 0.0);
    if (c && json_object_get(e, "category") && json_object_set(c, "category", json_object_get(e, "category"))) {
        json_decref(c);
        c = NULL;
    }
    return json_array_append_new(list, c);
}

json_t *pds_summary_changes(const json_t *before, const json_t *after, int top)
{
    json_t *all = json_array(), *e, *out = json_array();
    const json_t *side[2] = {after, before};
    size_t i;
    const char *key;
    int rc = !all || !out;
    for (int k = 0; k < 2 && !rc; k++) { /* after's entries, then before's that after lacks */
        json_object_foreach(json_object_get(side[k], "polarity"), key, e) {
            json_t *other = same_entry(side[1 - k], e);
            if (k == 0 || !other) rc |= add_change(all, e, k ? e : other, k ? other : e);
        }
        json_array_foreach(json_object_get(side[k], "cells"), i, e) {
            json_t *other = same_entry(side[1 - k], e);
            if (k == 0 || !other) rc |= add_change(all, e, k ? e : other, k ? other : e);
        }
    }
    size_t n = json_array_size(all);
    json_t **v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) rc = 1;
    for (i = 0; !rc && i < n; i++) v[i] = json_array_get(all, i);
    for (i = 1; !rc && i < n; i++) /* by |change|, ties in the order above (stable) */
        for (size_t j = i; j > 0 && change_of(v[j]) > change_of(v[j - 1]); j--) {
            json_t *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    for (i = 0; !rc && i < n && (int)i < top; i++) rc = json_array_append(out, v[i]);
    free(v);
    json_decref(all);
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------ CSV tables */

/* A CSV field (the rule of every CSV pocketdec writes: pdi_buf_csv_field), then a comma or the line's end. */
static void field(pdi_buf *t, const char *s, bool last)
{
    pdi_buf_csv_field(t, s);
    pdi_buf_append(t, last ? "\n" : ",", 1);
}

static const char *const columns[] = {"category", "polarity", "records", "reviews", "share", "estimate",
                                      "low", "high", "support", "rates", "precision", "recall", NULL};

static void csv_row(pdi_buf *t, json_t *e, bool cells)
{
    for (int k = cells ? 0 : 1; columns[k]; k++) {
        json_t *v = json_object_get(e, columns[k]);
        char buf[64] = "";
        if (json_is_integer(v)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) snprintf(buf, sizeof buf, "%.10g", json_real_value(v));
        field(t, json_is_string(v) ? json_string_value(v) : buf, !columns[k + 1]);
    }
}

char *pds_summary_csv(const json_t *summary, bool cells)
{
    pdi_buf t = {0};
    for (int k = cells ? 0 : 1; columns[k]; k++) field(&t, columns[k], !columns[k + 1]);
    json_t *e;
    size_t i;
    const char *key;
    if (cells) {
        json_array_foreach(json_object_get(summary, "cells"), i, e) csv_row(&t, e, true);
    } else {
        json_object_foreach(json_object_get(summary, "polarity"), key, e) csv_row(&t, e, false);
    }
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    return t.data ? t.data : strdup("");
}
