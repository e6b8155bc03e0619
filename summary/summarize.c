/* summarize.c - the summary of a corpus from its files (pocketdec_summarize.h):
 * the records read a review at a time, beside the reviews they came from,
 * in their order, or extracted here, or partitions' states merged; grouped
 * by a column or a date's period. */
#include "pd_internal.h"
#include "pds_internal.h"
#include "pds_records.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM(err) pdi_set_error(err, PD_ERR_NOMEM, "out of memory")

pd_summarize_params pd_summarize_default_params(void)
{
    pds_params d = pds_default_params();
    return (pd_summarize_params){.reviews_params = pd_reviews_default_params(), .min_support = d.min_support,
                                 .top = d.top, .examples = d.examples, .listed = d.listed};
}

/* A group of by: its value (a period for a date) and its summary. */
typedef struct group {
    char *value;
    pds_summary *sum;
} group;

typedef struct run {
    const pd_summarize_params *p;
    pd_error *err;
    pds_summary *sum;
    pds_params params;
    const pds_calibration *cal;
    const char *cal_name;
    long unmatched;   /* reviews with no line in the records */
    pd_reviews *in;   /* the reviews (NULL without) */
    char by[256];     /* the column grouped by ("" without) */
    int period;       /* 0: its values; 1: by month; 2: by ISO week */
    group *groups;
    size_t n_groups, cap_groups;
} run;

/* by's column and period into by[256] and *period: false when it names none. */
static bool parse_by(const char *by, char out[256], int *period)
{
    const char *colon = strrchr(by, ':');
    *period = colon && strcmp(colon, ":month") == 0 ? 1 : colon && strcmp(colon, ":week") == 0 ? 2 : 0;
    size_t n = *period ? (size_t)(colon - by) : strlen(by);
    if (n == 0 || n >= 256) return false;
    memcpy(out, by, n);
    out[n] = 0;
    return true;
}

int pds_summarize_check(const pd_summarize_params *p, bool extracting, pd_error *err)
{
    char by[256];
    int period;
    bool merge = p->n_merge > 0;
    if (!!p->records + extracting + merge != 1)
        return pdi_set_error(err, PD_ERR_ARG, "--records FILE (what pocketdec extract wrote), --model and --schema to "
                                              "extract here, or --merge STATE ...: one of them");
    if ((merge || p->save_state) && p->by) return pdi_set_error(err, PD_ERR_ARG, "--by does not go with --merge or --save-state");
    if (merge && p->reviews) return pdi_set_error(err, PD_ERR_ARG, "--input goes with --records or --schema, not --merge");
    if (extracting && !p->reviews)
        return pdi_set_error(err, PD_ERR_ARG, "--schema extracts the reviews of --input with --model: give both");
    if (p->by && !parse_by(p->by, by, &period))
        return pdi_set_error(err, PD_ERR_ARG, "--by COLUMN[:month|:week] names a column");
    if (!p->calibrate_labels != !p->calibrate_records)
        return pdi_set_error(err, PD_ERR_ARG, "--calibrate LABELS and --calibrate-records RECORDS go together");
    if (p->calibrate_labels && p->calibration)
        return pdi_set_error(err, PD_ERR_ARG, "--calibrate measures the rates; --calibration reads them: one of them");
    if (p->save_calibration && !p->calibrate_labels)
        return pdi_set_error(err, PD_ERR_ARG, "--save-calibration FILE needs --calibrate");
    if (p->min_support < 1 || p->top < 0 || p->examples < 0 || p->listed < -1)
        return pdi_set_error(err, PD_ERR_ARG, "min_support must be at least 1; top, examples and listed not negative");
    return 0;
}

/* Every record's polarity among the calibration's (a category it never saw
 * has its polarity's rates; a polarity it never saw: rates of another schema). */
static int check_labels(run *s, const pds_records *r)
{
    for (size_t i = 0; s->cal && i < r->n; i++)
        if (strcmp(r->recs[i].polarity, "_") && !pds_calibration_knows(s->cal, false, r->recs[i].polarity))
            return pdi_set_error(s->err, PD_ERR_FORMAT,
                                 "%s:%ld: id %s: polarity '%s' is not among the labels of the calibration %s (rates "
                                 "measured for another schema?)", r->name, r->line, r->id, r->recs[i].polarity,
                                 s->cal_name);
    return 0;
}

static int64_t days_from_civil(int y, int m, int d) /* days since 1970-01-01 (proleptic Gregorian) */
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400, doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* The period of a date (YYYY-MM-DD, / or . between, a time after a space
 * or T allowed): "YYYY-MM", or the ISO week "YYYY-Www"; false when it does
 * not parse. */
static bool period_of(const char *date, int period, char out[16])
{
    int y, m, d, n = 0;
    char s1, s2;
    if (sscanf(date, "%4d%c%2d%c%2d%n", &y, &s1, &m, &s2, &d, &n) != 5 || s1 != s2 || !strchr("-/.", s1) ||
        (date[n] && date[n] != ' ' && date[n] != 'T') || y < 1000 || m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100) || y % 400 == 0;
    if (d > mdays[m - 1] || (m == 2 && d == 29 && !leap)) return false;
    if (period == 1) {
        snprintf(out, 16, "%04d-%02d", y, m);
        return true;
    }
    int64_t days = days_from_civil(y, m, d), wd = ((days % 7) + 7 + 3) % 7; /* 0: Monday */
    int64_t thursday = days - wd + 3;
    int wy = y + 1;
    while (days_from_civil(wy, 1, 1) > thursday) wy--;
    snprintf(out, 16, "%04d-W%02d", wy, (int)((thursday - days_from_civil(wy, 1, 1)) / 7 + 1));
    return true;
}

/* The summary of a group value, made when new (NULL: out of memory). */
static pds_summary *group_of(run *s, const char *value)
{
    for (size_t i = 0; i < s->n_groups; i++)
        if (strcmp(s->groups[i].value, value) == 0) return s->groups[i].sum;
    if (s->n_groups == s->cap_groups) {
        group *g = realloc(s->groups, (s->cap_groups = s->cap_groups ? 2 * s->cap_groups : 16) * sizeof *g);
        if (!g) return NULL;
        s->groups = g;
    }
    group *g = &s->groups[s->n_groups];
    g->value = strdup(value);
    g->sum = pds_summary_new(&s->params);
    if (!g->value || !g->sum) {
        free(g->value);
        pds_summary_free(g->sum);
        return NULL;
    }
    s->n_groups++;
    return g->sum;
}

/* A review into the whole and, when grouping, its group: value is its by
 * column (NULL when it has none: an error naming file and line). */
static int add(run *s, const char *file, long line, const char *id, const char *text, const pds_record *recs, size_t n,
               const char *value)
{
    pds_error e;
    pds_summary *g = NULL;
    char period[16];
    if (s->by[0] && !value)
        return pdi_set_error(s->err, PD_ERR_FORMAT, "%s:%ld: id %s has no column '%s' (--by)", file, line, id, s->by);
    if (s->by[0] && s->period && !period_of(value, s->period, period))
        return pdi_set_error(s->err, PD_ERR_FORMAT, "%s:%ld: id %s: '%s' in column %s is not a date (YYYY-MM-DD)", file,
                             line, id, value, s->by);
    if (s->by[0] && !(g = group_of(s, s->period ? period : value))) return OOM(s->err);
    if (pds_summary_add(s->sum, id, text, recs, n, &e) || (g && pds_summary_add(g, id, text, recs, n, &e)))
        return pds_to_pd_error(s->err, &e);
    return 0;
}

/* The next row of the reviews: 1, 0 at the end, -1 with err when they
 * cannot be read further. A broken row is noted (not counted) unless its
 * id is kept; *keep false for rows that are no review. */
static int next_review(run *s, pd_review *w, bool *keep)
{
    int got = pd_reviews_next(s->in, w, s->err);
    if (got <= 0) return got;
    /* extracting, no broken row is counted; with records, one whose id is known still is */
    if (w->problem && (!w->keep_id || !s->p->records) && s->p->note) {
        char msg[PD_ERROR_MESSAGE_SIZE + 64];
        snprintf(msg, sizeof msg, "%s; not counted", w->problem);
        s->p->note(s->p->note_ctx, PD_SUMMARIZE_NOT_COUNTED, msg);
    }
    *keep = !w->header && (!w->problem || w->keep_id);
    return 1;
}

/* The by value of the row just read (NULL when not grouping or it has none). */
static const char *by_value(run *s, char *buf)
{
    return s->by[0] ? pd_reviews_column(s->in, s->by, buf) : NULL;
}

/* A review with no records line: counted with none. */
static int review_alone(run *s, const pd_review *w)
{
    char buf[32];
    s->unmatched++;
    return add(s, pd_reviews_name(s->in), w->line, w->id, NULL, NULL, 0, by_value(s, buf));
}

/* The review whose id is the records' r->id (the reviews before it have no
 * records), added with its text and group. */
static int find_review(run *s, const pds_records *r)
{
    pd_review w;
    bool keep;
    int got;
    while ((got = next_review(s, &w, &keep)) == 1) {
        if (!keep) continue;
        if (strcmp(w.id, r->id)) {
            int rc = review_alone(s, &w);
            if (rc) return rc;
            continue;
        }
        char buf[32], *text = w.problem ? NULL : strndup(w.text, w.text_len);
        if (!w.problem && !text) return OOM(s->err);
        int rc = add(s, pd_reviews_name(s->in), w.line, r->id, text, r->recs, r->n, by_value(s, buf));
        free(text);
        return rc;
    }
    if (got < 0) return 1;
    return pdi_set_error(s->err, PD_ERR_FORMAT,
                         "%s:%ld: id %s is not among the reviews of %s (or not in their order: the records must come "
                         "in the reviews' order, as extract writes them)", r->name, r->line, r->id,
                         pd_reviews_name(s->in));
}

/* A records line's by value: a column extract carried into its JSONL. */
static const char *record_value(run *s, const pds_records *r, char *buf)
{
    json_t *v = json_object_get(r->value, s->by);
    if (json_is_integer(v)) snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
    return json_is_string(v) ? json_string_value(v) : json_is_integer(v) ? buf : NULL;
}

static int gather(run *s, const char *records)
{
    pds_records r;
    int rc = pds_records_open(&r, records, s->err), got = 0;
    if (rc) return rc;
    if (s->by[0] && !s->in && !r.jsonl)
        rc = pdi_set_error(s->err, PD_ERR_ARG, "%s: --by %s needs --input REVIEWS (Tianchi rows carry no other column)",
                           records, s->by);
    while (rc == 0 && (got = pds_records_next(&r, s->err)) == 1) {
        char buf[32];
        if (!(rc = check_labels(s, &r)))
            rc = s->in ? find_review(s, &r) : add(s, r.name, r.line, r.id, r.text, r.recs, r.n, record_value(s, &r, buf));
    }
    if (rc == 0 && got < 0) rc = 1;
    pd_review w;
    bool keep;
    while (rc == 0 && s->in && (got = next_review(s, &w, &keep)) != 0)
        rc = got < 0 ? 1 : keep ? review_alone(s, &w) : 0;
    if (rc == 0 && pds_summary_reviews(s->sum) == 0) rc = pdi_set_error(s->err, PD_ERR_FORMAT, "%s: no reviews", records);
    if (rc == 0 && s->unmatched && s->p->note) {
        char msg[PD_ERROR_MESSAGE_SIZE + 64];
        snprintf(msg, sizeof msg, "%ld reviews of %s have no line in %s: counted with no records", s->unmatched,
                 pd_reviews_name(s->in), records);
        s->p->note(s->p->note_ctx, PD_SUMMARIZE_UNMATCHED, msg);
    }
    pds_records_close(&r);
    return rc;
}

/* The pipeline's records of a review as summary records (the schema's
 * aspect, opinion, category and polarity fields at col, -1 when absent). */
static int to_records(const pd_extraction *x, const int32_t col[4], pds_record **recs, size_t *cap)
{
    size_t n = (size_t)x->n_records;
    if (n > *cap) {
        pds_record *p = realloc(*recs, n * sizeof *p);
        if (!p) return -1;
        *recs = p;
        *cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        const pd_record *r = &x->records[i];
        const char *v[4];
        for (int k = 0; k < 4; k++) v[k] = col[k] >= 0 ? r->values[col[k]] : "_";
        (*recs)[i] = (pds_record){v[0], v[1], v[2], v[3], col[0] >= 0 ? r->start[col[0]] : -1,
                                  col[0] >= 0 ? r->end[col[0]] : -1, col[1] >= 0 ? r->start[col[1]] : -1,
                                  col[1] >= 0 ? r->end[col[1]] : -1};
    }
    return 0;
}

/* Each review extracted by the pipeline (its head and defaults, as
 * extract's) and added. */
static int extract_all(run *s)
{
    static const char *const names[4] = {"aspect", "opinion", "category", "polarity"};
    const pd_schema *schema = s->p->schema;
    int32_t col[4];
    for (int k = 0; k < 4; k++) {
        col[k] = -1;
        for (int32_t i = 0; i < pd_schema_n_fields(schema); i++)
            if (strcmp(pd_schema_field_name(schema, i), names[k]) == 0) col[k] = i;
    }
    if (col[3] < 0) return pdi_set_error(s->err, PD_ERR_ARG, "--schema: the schema has no field 'polarity' to summarize by");
    pds_record *recs = NULL;
    size_t cap = 0;
    pd_review w;
    bool keep;
    int rc = 0, got;
    while (rc == 0 && (got = next_review(s, &w, &keep)) != 0) {
        pd_extraction *x = NULL;
        pd_error e;
        char buf[32];
        if (got < 0) {
            rc = 1;
        } else if (w.problem || w.header) {
            /* noted, or no review */
        } else if (pd_pipeline_extract(s->p->pipeline, w.text, w.text_len, &x, &e)) {
            rc = pdi_set_error(s->err, e.code, "%s:%ld: id %s: %s", pd_reviews_name(s->in), w.line, w.id, e.message);
        } else if (to_records(x, col, &recs, &cap)) {
            rc = OOM(s->err);
        } else {
            rc = add(s, pd_reviews_name(s->in), w.line, w.id, w.text, recs, (size_t)x->n_records, by_value(s, buf));
        }
        pd_extraction_free(x);
    }
    free(recs);
    if (rc == 0 && pds_summary_reviews(s->sum) == 0)
        rc = pdi_set_error(s->err, PD_ERR_FORMAT, "%s: no reviews", pd_reviews_name(s->in));
    return rc;
}

/* The saved states, merged in order: the summary of one pass over them. */
static int merge_states(run *s)
{
    for (size_t i = 0; i < s->p->n_merge; i++) {
        const char *path = s->p->merge[i];
        json_error_t je;
        pds_error e;
        json_t *j = json_load_file(path, 0, &je);
        if (!j) return pdi_set_error(s->err, PD_ERR_FORMAT, "%s:%d: cannot read the summary state: %s", path, je.line, je.text);
        pds_summary *part = pds_summary_from_state(j, &s->params, path, &e);
        json_decref(j);
        int rc = !part || pds_summary_merge(s->sum, part, &e) ? pds_to_pd_error(s->err, &e) : 0;
        pds_summary_free(part);
        if (rc) return rc;
    }
    return 0;
}

static int save_state(run *s, const char *path)
{
    json_t *j = pds_summary_state(s->sum);
    int rc = !j ? OOM(s->err)
                : json_dump_file(j, path, JSON_COMPACT)
                      ? pdi_set_error(s->err, PD_ERR_IO, "%s: cannot write: %s", path, strerror(errno)) : 0;
    json_decref(j);
    return rc;
}

static int group_order(const void *a, const void *b)
{
    return strcmp(((const group *)a)->value, ((const group *)b)->value);
}

/* "groups" and "by" of j: each group's summary by value, and with a
 * period the largest changes between the last two. */
static int add_groups(run *s, json_t *j)
{
    json_t *groups = json_array(), *by = json_pack("{s:s,s:s*}", "column", s->by, "period",
                                                   s->period == 1 ? "month" : s->period == 2 ? "week" : NULL);
    if (json_object_set_new(j, "groups", groups) || json_object_set_new(j, "by", by)) return OOM(s->err);
    qsort(s->groups, s->n_groups, sizeof *s->groups, group_order);
    for (size_t i = 0; i < s->n_groups; i++) {
        json_t *g = pds_summary_json(s->groups[i].sum, s->cal), *e = json_pack("{s:s}", "group", s->groups[i].value);
        if (!g || !e || json_object_update(e, g) || json_array_append_new(groups, e)) {
            json_decref(g);
            return OOM(s->err);
        }
        json_decref(g);
    }
    if (s->period && s->n_groups >= 2) {
        json_t *c = pds_summary_changes(json_array_get(groups, s->n_groups - 2), json_array_get(groups, s->n_groups - 1), 5);
        if (!c || json_object_set_new(by, "changes", c)) return OOM(s->err);
    }
    return 0;
}

/* The summary of s's source into *out. */
static int summarize(run *s, json_t **out)
{
    const pd_summarize_params *p = s->p;
    pds_calibration *cal = NULL;
    int rc = pds_rates_load(p, &cal, &s->cal_name, s->err);
    s->cal = cal;
    if (rc == 0 && p->reviews && !(s->in = pd_reviews_open(p->reviews, &p->reviews_params, s->err))) rc = 1;
    if (rc == 0 && !(s->sum = pds_summary_new(&s->params))) rc = OOM(s->err);
    if (rc == 0) rc = p->records ? gather(s, p->records) : p->pipeline ? extract_all(s) : merge_states(s);
    if (rc == 0 && p->save_state) rc = save_state(s, p->save_state);
    if (rc == 0 && !(*out = pds_summary_json(s->sum, cal))) rc = OOM(s->err);
    if (rc == 0 && s->by[0] && (rc = add_groups(s, *out))) {
        json_decref(*out);
        *out = NULL;
    }
    pds_calibration_free(cal);
    return rc;
}

json_t *pds_summarize_json(const pd_summarize_params *p, pd_error *err)
{
    if (!p) return pdi_set_error(err, PD_ERR_ARG, "params is NULL"), NULL;
    if (pds_summarize_check(p, p->pipeline != NULL, err)) return NULL;
    if (p->pipeline && !p->schema) return pdi_set_error(err, PD_ERR_ARG, "a pipeline needs its schema"), NULL;
    for (size_t i = 0; i < p->n_merge; i++)
        if (!p->merge || !p->merge[i]) return pdi_set_error(err, PD_ERR_ARG, "merge[%zu] is NULL", i), NULL;
    run s = {.p = p, .err = err,
             .params = {.top = p->top, .examples = p->examples, .min_support = p->min_support, .listed = p->listed}};
    json_t *j = NULL;
    if (p->by) parse_by(p->by, s.by, &s.period);
    summarize(&s, &j);
    pd_reviews_free(s.in);
    pds_summary_free(s.sum);
    for (size_t i = 0; i < s.n_groups; i++) {
        free(s.groups[i].value);
        pds_summary_free(s.groups[i].sum);
    }
    free(s.groups);
    return j;
}

char *pd_summarize(const pd_summarize_params *p, pd_error *err)
{
    json_t *j = pds_summarize_json(p, err);
    if (!j) return NULL;
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text) OOM(err);
    return text;
}
