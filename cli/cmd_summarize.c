/* cmd_summarize.c - `pocketdec summarize`: the summary of a corpus's records
 * (summary/pocketdec_summary.h holds the rule), read a review at a time:
 * the records `extract` wrote, beside the reviews they came from, in their
 * order; the rates from a calibration file, or measured on labelled reviews. */
#include "cli.h"
#include "pocketdec_summary.h"
#include "records.h"
#include "reviews.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int summary_fail(const pds_error *err)
{
    return cli_failf("%s", err->message);
}

/* The labelled reviews of a file, in memory (a calibration's few thousand):
 * each one's id, line, records and whether the model's records met it. */
typedef struct gold {
    char *id;
    long line;
    pds_record *recs;
    size_t n;
    char **strs; /* the records' strings */
    bool seen;
} gold;

static void gold_free(gold *g, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; g[i].strs && g[i].strs[k]; k++) free(g[i].strs[k]);
        free(g[i].strs);
        free(g[i].recs);
        free(g[i].id);
    }
    free(g);
}

/* r's review copied into g. */
static bool gold_copy(gold *g, const cli_records *r)
{
    memset(g, 0, sizeof *g);
    g->line = r->line;
    g->id = strdup(r->id);
    g->recs = malloc((r->n ? r->n : 1) * sizeof *g->recs);
    g->strs = calloc(4 * r->n + 1, sizeof *g->strs);
    if (!g->id || !g->recs || !g->strs) return false;
    for (size_t i = 0; i < r->n; i++) {
        const pds_record *x = &r->recs[i];
        char **s = &g->strs[4 * i];
        if (!(s[0] = strdup(x->aspect)) || !(s[1] = strdup(x->opinion)) || !(s[2] = strdup(x->category)) ||
            !(s[3] = strdup(x->polarity)))
            return false;
        g->recs[i] = *x;
        g->recs[i].aspect = s[0], g->recs[i].opinion = s[1], g->recs[i].category = s[2], g->recs[i].polarity = s[3];
    }
    g->n = r->n;
    return true;
}

static int gold_load(const char *path, gold **out, size_t *n)
{
    cli_records r;
    size_t cap = 0;
    int rc = cli_records_open(&r, path), got = 0;
    *out = NULL;
    *n = 0;
    while (rc == 0 && (got = cli_records_next(&r)) == 1) {
        if (*n == cap) {
            gold *p = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof *p);
            if (!p) {
                rc = cli_failf("out of memory");
                break;
            }
            *out = p;
        }
        if (!gold_copy(&(*out)[(*n)++], &r)) rc = cli_failf("out of memory");
    }
    cli_records_close(&r);
    return rc ? rc : got < 0 ? 1 : 0;
}

/* The labelled review of id, looked for from *cursor on (the files are
 * usually in one order); NULL when the labels do not have it. */
static gold *gold_find(gold *g, size_t n, size_t *cursor, const char *id)
{
    for (size_t k = 0; k < n; k++) {
        size_t i = (*cursor + k) % n;
        if (strcmp(g[i].id, id) == 0) {
            *cursor = i + 1;
            return &g[i];
        }
    }
    return NULL;
}

/* --calibrate LABELS with --calibrate-records RECS: the rates of the records
 * RECS holds (the model's, over the labelled reviews, in any order) against
 * the gold records of LABELS. A review absent from LABELS has no gold record
 * (the Tianchi labels CSV lists only reviews with one); a labelled review
 * absent from RECS is an error (the model did not see it). */
static int calibrate(const char *labels, const char *recs, pds_calibration *cal)
{
    gold *g;
    size_t n, cursor = 0;
    int rc = gold_load(labels, &g, &n), got = 0;
    cli_records p;
    if (rc || (rc = cli_records_open(&p, recs))) {
        gold_free(g, n);
        return rc;
    }
    pds_error err;
    while (rc == 0 && (got = cli_records_next(&p)) == 1) {
        gold *x = gold_find(g, n, &cursor, p.id);
        if (x && x->seen)
            rc = cli_failf("%s:%ld: id %s a second time", recs, p.line, p.id);
        else if (pds_calibration_add(cal, x ? x->recs : NULL, x ? x->n : 0, p.recs, p.n, &err))
            rc = summary_fail(&err);
        if (x) x->seen = true;
    }
    if (rc == 0 && got < 0) rc = 1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!g[i].seen)
            rc = cli_failf("%s:%ld: id %s has no records in %s (they must be the model's records over the labelled "
                           "reviews)", labels, g[i].line, g[i].id, recs);
    if (rc == 0 && pds_calibration_reviews(cal) == 0) rc = cli_failf("%s: no reviews", recs);
    gold_free(g, n);
    cli_records_close(&p);
    return rc;
}

/* The rates: measured (--calibrate), a file (--calibration), or the bundle's
 * (--model DIR's calibration.json); NULL in *out when none. */
static int rates(cli_args *a, pds_calibration **out)
{
    const char *labels = cli_opt(a, "--calibrate"), *recs = cli_opt(a, "--calibrate-records");
    const char *file = cli_opt(a, "--calibration"), *save = cli_opt(a, "--save-calibration"), *model = cli_opt(a, "--model");
    pds_error err;
    *out = NULL;
    if (!labels != !recs) return cli_usage(a, "--calibrate LABELS and --calibrate-records RECORDS go together");
    if (labels && file) return cli_usage(a, "--calibrate measures the rates; --calibration reads them: one of them");
    if (save && !labels) return cli_usage(a, "--save-calibration FILE needs --calibrate");
    char bundled[4096];
    struct stat st;
    if (!labels && !file && model) {
        snprintf(bundled, sizeof bundled, "%s/calibration.json", model);
        if (stat(bundled, &st) == 0) file = bundled;
    }
    if (file) {
        if (!(*out = pds_calibration_load(file, &err))) return summary_fail(&err);
        return 0;
    }
    if (!labels) return 0;
    if (!(*out = pds_calibration_new())) return cli_failf("out of memory");
    int rc = calibrate(labels, recs, *out);
    if (rc || !save) return rc;
    json_t *j = pds_calibration_json(*out, labels);
    if (!j || json_dump_file(j, save, JSON_INDENT(1) | JSON_PRESERVE_ORDER))
        rc = cli_failf("%s: cannot write: %s", save, strerror(errno));
    json_decref(j);
    return rc;
}

/* Every record's polarity among the calibration's (a category it never saw
 * has its polarity's rates; a polarity it never saw: rates of another schema). */
static int check_labels(const pds_calibration *cal, const char *cal_name, const cli_records *r)
{
    for (size_t i = 0; cal && i < r->n; i++)
        if (strcmp(r->recs[i].polarity, "_") && !pds_calibration_knows(cal, false, r->recs[i].polarity))
            return cli_failf("%s:%ld: id %s: polarity '%s' is not among the labels of the calibration %s (rates "
                             "measured for another schema?)", r->name, r->line, r->id, r->recs[i].polarity, cal_name);
    return 0;
}

/* A group of --by: its value (a period for a date) and its summary. */
typedef struct group {
    char *value;
    pds_summary *sum;
} group;

typedef struct run {
    pds_summary *sum;
    pds_params params;
    const pds_calibration *cal;
    const char *cal_name;
    long unmatched;   /* reviews of --input with no line in the records */
    cli_reviews in;
    bool has_input;
    char by[256];     /* --by COLUMN ("" without) */
    int period;       /* 0: its values; 1: by month; 2: by ISO week */
    group *groups;
    size_t n_groups, cap_groups;
} run;

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

/* The summary of a --by group value, made when new (NULL: out of memory). */
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

/* A review into the whole and, with --by, its group: value is its --by
 * column (NULL when it has none: an error naming file and line). */
static int add(run *s, const char *file, long line, const char *id, const char *text, const pds_record *recs, size_t n,
               const char *value)
{
    pds_error err;
    pds_summary *g = NULL;
    char period[16];
    if (s->by[0] && !value)
        return cli_failf("%s:%ld: id %s has no column '%s' (--by)", file, line, id, s->by);
    if (s->by[0] && s->period && !period_of(value, s->period, period))
        return cli_failf("%s:%ld: id %s: '%s' in column %s is not a date (YYYY-MM-DD)", file, line, id, value, s->by);
    if (s->by[0] && !(g = group_of(s, s->period ? period : value))) return cli_failf("out of memory");
    if (pds_summary_add(s->sum, id, text, recs, n, &err) || (g && pds_summary_add(g, id, text, recs, n, &err)))
        return summary_fail(&err);
    return 0;
}

/* The --by value of the row just read (NULL without --by or when it has none). */
static const char *by_value(run *s, char *buf)
{
    return s->by[0] ? cli_reviews_column(&s->in, s->by, buf) : NULL;
}

/* A review of --input with no records line: counted with none. */
static int review_alone(run *s, const cli_review *w)
{
    char buf[32];
    s->unmatched++;
    return add(s, s->in.name, w->line, w->id, NULL, NULL, 0, by_value(s, buf));
}

/* The review of --input whose id is the records' r->id (the reviews before
 * it have no records), added with its text and group. */
static int find_review(run *s, const cli_records *r)
{
    cli_review w;
    while (cli_reviews_next(&s->in, &w)) {
        int rc = 0;
        bool found = false;
        char buf[32];
        if (s->in.failed) rc = cli_reviews_fail(&s->in);
        else if (w.problem[0] && !w.keep_id) fprintf(stderr, "pocketdec: %s; not counted\n", w.problem);
        else if (!w.header && strcmp(w.id, r->id) == 0) {
            found = true;
            char *text = w.problem[0] ? NULL : strndup(w.text, w.text_len);
            if (!w.problem[0] && !text) rc = cli_failf("out of memory");
            else rc = add(s, s->in.name, w.line, r->id, text, r->recs, r->n, by_value(s, buf));
            free(text);
        } else if (!w.header) {
            rc = review_alone(s, &w);
        }
        cli_review_release(&w);
        if (rc || found) return rc;
    }
    return cli_failf("%s:%ld: id %s is not among the reviews of %s (or not in their order: the records must come in "
                     "the reviews' order, as extract writes them)", r->name, r->line, r->id, s->in.name);
}

/* A records line's --by value: a column extract carried into its JSONL. */
static const char *record_value(run *s, const cli_records *r, char *buf)
{
    json_t *v = json_object_get(r->value, s->by);
    if (json_is_integer(v)) snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
    return json_is_string(v) ? json_string_value(v) : json_is_integer(v) ? buf : NULL;
}

static int gather(run *s, const char *records)
{
    cli_records r;
    int rc = cli_records_open(&r, records), got = 0;
    if (rc == 0 && s->by[0] && !s->has_input && !r.jsonl)
        rc = cli_failf("%s: --by %s needs --input REVIEWS (Tianchi rows carry no other column)", records, s->by);
    while (rc == 0 && (got = cli_records_next(&r)) == 1) {
        char buf[32];
        if (!(rc = check_labels(s->cal, s->cal_name, &r)))
            rc = s->has_input ? find_review(s, &r) : add(s, r.name, r.line, r.id, r.text, r.recs, r.n, record_value(s, &r, buf));
    }
    if (rc == 0 && got < 0) rc = 1;
    cli_review w;
    while (rc == 0 && s->has_input && cli_reviews_next(&s->in, &w)) {
        if (s->in.failed) rc = cli_reviews_fail(&s->in);
        else if (!w.header && (!w.problem[0] || w.keep_id)) rc = review_alone(s, &w);
        cli_review_release(&w);
    }
    if (rc == 0 && pds_summary_reviews(s->sum) == 0) rc = cli_failf("%s: no reviews", records);
    if (rc == 0 && s->unmatched)
        fprintf(stderr, "pocketdec summarize: %ld reviews of %s have no line in %s: counted with no records\n",
                s->unmatched, s->in.name, records);
    cli_records_close(&r);
    return rc;
}

static int grow_records(pds_record **recs, size_t *cap, size_t n);

/* --model with --schema and no --records: each review of --input extracted
 * here (the bundle's head and defaults, as extract's) and added. */
static int extract_all(run *s, pd_pipeline *pipe, const pd_schema *schema)
{
    static const char *const names[4] = {"aspect", "opinion", "category", "polarity"};
    int32_t col[4];
    for (int k = 0; k < 4; k++) {
        col[k] = -1;
        for (int32_t i = 0; i < pd_schema_n_fields(schema); i++)
            if (strcmp(pd_schema_field_name(schema, i), names[k]) == 0) col[k] = i;
    }
    if (col[3] < 0) return cli_failf("%s: the schema has no field 'polarity' to summarize by", "--schema");
    pds_record *recs = NULL;
    size_t cap = 0;
    cli_review w;
    int rc = 0;
    while (rc == 0 && cli_reviews_next(&s->in, &w)) {
        pd_extraction *x = NULL;
        pd_error err;
        char buf[32];
        if (s->in.failed) {
            rc = cli_reviews_fail(&s->in);
        } else if (w.problem[0]) {
            fprintf(stderr, "pocketdec: %s; not counted\n", w.problem);
        } else if (!w.header && pd_pipeline_extract(pipe, w.text, w.text_len, &x, &err)) {
            rc = cli_failf("%s:%ld: id %s: %s", s->in.name, w.line, w.id, err.message);
        } else if (!w.header) {
            size_t n = (size_t)x->n_records;
            if (n > cap && grow_records(&recs, &cap, n)) rc = cli_failf("out of memory");
            for (size_t i = 0; rc == 0 && i < n; i++) {
                const pd_record *r = &x->records[i];
                const char *v[4];
                for (int k = 0; k < 4; k++) v[k] = col[k] >= 0 ? r->values[col[k]] : "_";
                recs[i] = (pds_record){v[0], v[1], v[2], v[3], col[0] >= 0 ? r->start[col[0]] : -1,
                                       col[0] >= 0 ? r->end[col[0]] : -1, col[1] >= 0 ? r->start[col[1]] : -1,
                                       col[1] >= 0 ? r->end[col[1]] : -1};
            }
            if (rc == 0) rc = add(s, s->in.name, w.line, w.id, w.text, recs, n, by_value(s, buf));
        }
        pd_extraction_free(x);
        cli_review_release(&w);
    }
    free(recs);
    if (rc == 0 && pds_summary_reviews(s->sum) == 0) rc = cli_failf("%s: no reviews", s->in.name);
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
    if (json_object_set_new(j, "groups", groups) || json_object_set_new(j, "by", by)) return cli_failf("out of memory");
    qsort(s->groups, s->n_groups, sizeof *s->groups, group_order);
    for (size_t i = 0; i < s->n_groups; i++) {
        json_t *g = pds_summary_json(s->groups[i].sum, s->cal), *e = json_pack("{s:s}", "group", s->groups[i].value);
        if (!g || !e || json_object_update(e, g) || json_array_append_new(groups, e)) {
            json_decref(g);
            return cli_failf("out of memory");
        }
        json_decref(g);
    }
    if (s->period && s->n_groups >= 2) {
        json_t *c = pds_summary_changes(json_array_get(groups, s->n_groups - 2), json_array_get(groups, s->n_groups - 1), 5);
        if (!c || json_object_set_new(by, "changes", c)) return cli_failf("out of memory");
    }
    return 0;
}

/* The model (--model, its head, --threads) and schema_path's schema over
 * --input, then extract_all. */
static int extract_here(cli_args *a, run *s, const char *schema_path)
{
    pd_pipeline_params pp = pd_pipeline_default_params();
    int rc = cli_threads_opt(a, &pp.n_threads);
    if (rc) return rc;
    pd_error err;
    pd_schema *schema = pd_schema_load(schema_path, &err);
    if (!schema) return cli_fail(&err);
    cli_model m;
    pd_pipeline *pipe = NULL;
    if ((rc = cli_model_open(a, &m, true)) == 0) {
        if (!(pipe = pd_pipeline_new(m.model, schema, m.head, &pp, &err))) rc = cli_fail(&err);
        else rc = extract_all(s, pipe, schema);
        pd_pipeline_free(pipe);
        cli_model_close(&m);
    }
    pd_schema_free(schema);
    return rc;
}

/* --merge STATE (repeated): partitions summarized apart (--save-state),
 * merged in order: the summary of one pass over them. */
static int merge_states(cli_args *a, run *s)
{
    const char *path;
    for (int n = 0; (path = cli_opt_nth(a, "--merge", n)); n++) {
        json_error_t je;
        pds_error err;
        json_t *j = json_load_file(path, 0, &je);
        if (!j) return cli_failf("%s:%d: cannot read the summary state: %s", path, je.line, je.text);
        pds_summary *part = pds_summary_from_state(j, &s->params, path, &err);
        json_decref(j);
        int rc = !part || pds_summary_merge(s->sum, part, &err) ? summary_fail(&err) : 0;
        pds_summary_free(part);
        if (rc) return rc;
    }
    return 0;
}

static int save_state(const pds_summary *sum, const char *path)
{
    json_t *j = pds_summary_state(sum);
    int rc = !j ? cli_failf("out of memory")
                : json_dump_file(j, path, JSON_COMPACT) ? cli_failf("%s: cannot write: %s", path, strerror(errno)) : 0;
    json_decref(j);
    return rc;
}

/* Room for n records in *recs. */
static int grow_records(pds_record **recs, size_t *cap, size_t n)
{
    pds_record *p = realloc(*recs, n * sizeof *p);
    if (!p) return -1;
    *recs = p;
    *cap = n;
    return 0;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        int e = errno;
        return cli_failf("%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

static int write_outputs(cli_args *a, const json_t *j)
{
    const char *json = cli_opt(a, "--json"), *dir = cli_opt(a, "--csv"), *html = cli_opt(a, "--html");
    size_t flags = JSON_INDENT(1) | JSON_PRESERVE_ORDER;
    int rc = 0;
    if (!dir && !json && !html) json = "-";
    if (html) {
        char *page = pds_summary_html(j, cli_opt(a, "--records"));
        rc = page ? write_text(html, page) : cli_failf("out of memory");
        free(page);
        if (rc) return rc;
    }
    if (json && strcmp(json, "-") == 0) {
        if (json_dumpf(j, stdout, flags) || fputc('\n', stdout) == EOF) rc = cli_failf("stdout: cannot write");
    } else if (json && json_dump_file(j, json, flags)) {
        rc = cli_failf("%s: cannot write: %s", json, strerror(errno));
    }
    if (rc || !dir) return rc;
    if (mkdir(dir, 0777) && errno != EEXIST) return cli_failf("%s: cannot make the folder: %s", dir, strerror(errno));
    static const char *const names[2] = {"polarity.csv", "cells.csv"};
    for (int k = 0; k < 2 && !rc; k++) {
        char path[4096], *text = pds_summary_csv(j, k == 1);
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        rc = text ? write_text(path, text) : cli_failf("out of memory");
        free(text);
    }
    return rc;
}

int cmd_summarize(cli_args *a)
{
    pds_params pp = pds_default_params();
    const char *records = cli_opt(a, "--records"), *input = cli_opt(a, "--input");
    int rc;
    const char *schema_path = cli_opt(a, "--schema"), *merge = cli_opt(a, "--merge"), *save = cli_opt(a, "--save-state");
    if (!!records + !!schema_path + !!merge != 1)
        return cli_usage(a, "--records FILE (what pocketdec extract wrote), --model and --schema to extract here, or "
                            "--merge STATE ...: one of them");
    if ((merge || save) && cli_opt(a, "--by")) return cli_usage(a, "--by does not go with --merge or --save-state");
    if (merge && input) return cli_usage(a, "--input goes with --records or --schema, not --merge");
    if (schema_path && (!input || !cli_opt(a, "--model")))
        return cli_usage(a, "--schema extracts the reviews of --input with --model: give both");
    if ((rc = cli_int_opt(a, "--min-support", pp.min_support, 1, 1000000, &pp.min_support)) ||
        (rc = cli_int_opt(a, "--top", pp.top, 0, 1000, &pp.top)) ||
        (rc = cli_int_opt(a, "--examples", pp.examples, 0, 100, &pp.examples)) ||
        (rc = cli_int_opt(a, "--list-reviews", cli_opt(a, "--html") ? -1 : 0, -1, INT_MAX, &pp.listed)))
        return rc;
    run s = {.params = pp};
    const char *by = cli_opt(a, "--by"), *colon = by ? strrchr(by, ':') : NULL;
    if (by) {
        s.period = colon && strcmp(colon, ":month") == 0 ? 1 : colon && strcmp(colon, ":week") == 0 ? 2 : 0;
        size_t n = s.period ? (size_t)(colon - by) : strlen(by);
        if (n == 0 || n >= sizeof s.by) return cli_usage(a, "--by COLUMN[:month|:week] names a column");
        memcpy(s.by, by, n);
    }
    pds_calibration *cal = NULL;
    if ((rc = rates(a, &cal))) goto done;
    s.cal = cal;
    s.cal_name = cli_opt(a, "--calibration") ? cli_opt(a, "--calibration") : cli_opt(a, "--calibrate");
    if (!s.cal_name) s.cal_name = "of the bundle";
    if (input && (rc = cli_reviews_open(a, &s.in, input, cli_opt(a, "--input-format")))) goto done;
    s.has_input = input != NULL;
    if (!(s.sum = pds_summary_new(&pp))) {
        rc = cli_failf("out of memory");
        goto done;
    }
    if ((rc = records ? gather(&s, records) : schema_path ? extract_here(a, &s, schema_path) : merge_states(a, &s)))
        goto done;
    if (save && (rc = save_state(s.sum, save))) goto done;
    json_t *j = pds_summary_json(s.sum, cal);
    rc = !j ? cli_failf("out of memory") : s.by[0] ? add_groups(&s, j) : 0;
    if (rc == 0) rc = write_outputs(a, j);
    json_decref(j);
done:
    cli_reviews_close(&s.in);
    pds_summary_free(s.sum);
    for (size_t i = 0; i < s.n_groups; i++) {
        free(s.groups[i].value);
        pds_summary_free(s.groups[i].sum);
    }
    free(s.groups);
    pds_calibration_free(cal);
    return rc;
}
