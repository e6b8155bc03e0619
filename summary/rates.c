/* rates.c - the rates a summary from files is corrected by (pd_summarize):
 * a calibration file, rates measured on labelled reviews against the
 * model's records over them, or a model folder's calibration.json. */
#include "pd_internal.h"
#include "pds_internal.h"
#include "pds_records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int pds_to_pd_error(pd_error *err, const pds_error *e)
{
    static const pd_status codes[] = {PD_OK, PD_ERR_IO, PD_ERR_FORMAT, PD_ERR_NOMEM, PD_ERR_ARG};
    pd_status code = e->code > 0 && e->code <= PDS_ERR_ARG ? codes[e->code] : PD_ERR_INTERNAL;
    pdi_set_error(err, code, "%s", e->message);
    return 1;
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
    for (size_t i = 0; g && i < n; i++) {
        for (size_t k = 0; g[i].strs && g[i].strs[k]; k++) free(g[i].strs[k]);
        free(g[i].strs);
        free(g[i].recs);
        free(g[i].id);
    }
    free(g);
}

/* r's review copied into g. */
static bool gold_copy(gold *g, const pds_records *r)
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

static int gold_load(const char *path, gold **out, size_t *n, pd_error *err)
{
    pds_records r;
    size_t cap = 0;
    int rc = pds_records_open(&r, path, err), got = 0;
    *out = NULL;
    *n = 0;
    while (rc == 0 && (got = pds_records_next(&r, err)) == 1) {
        if (*n == cap) {
            gold *p = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof *p);
            if (!p) {
                rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
                break;
            }
            *out = p;
        }
        if (!gold_copy(&(*out)[(*n)++], &r)) rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    }
    pds_records_close(&r);
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

/* The rates of the records recs holds (the model's, over the labelled
 * reviews, in any order) against the gold records of labels. A review absent
 * from labels has no gold record (the Tianchi labels CSV lists only reviews
 * with one); a labelled review absent from recs is an error (the model did
 * not see it). */
static int calibrate(const char *labels, const char *recs, pds_calibration *cal, pd_error *err)
{
    gold *g;
    size_t n, cursor = 0;
    int rc = gold_load(labels, &g, &n, err), got = 0;
    pds_records p;
    if (rc || (rc = pds_records_open(&p, recs, err))) {
        gold_free(g, n);
        return rc;
    }
    pds_error e;
    while (rc == 0 && (got = pds_records_next(&p, err)) == 1) {
        gold *x = gold_find(g, n, &cursor, p.id);
        if (x && x->seen)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s:%ld: id %s a second time", recs, p.line, p.id);
        else if (pds_calibration_add(cal, x ? x->recs : NULL, x ? x->n : 0, p.recs, p.n, &e))
            rc = pds_to_pd_error(err, &e);
        if (x) x->seen = true;
    }
    if (rc == 0 && got < 0) rc = 1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!g[i].seen)
            rc = pdi_set_error(err, PD_ERR_FORMAT,
                               "%s:%ld: id %s has no records in %s (they must be the model's records over the "
                               "labelled reviews)", labels, g[i].line, g[i].id, recs);
    if (rc == 0 && pds_calibration_reviews(cal) == 0) rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: no reviews", recs);
    gold_free(g, n);
    pds_records_close(&p);
    return rc;
}

int pds_rates_load(const pd_summarize_params *p, pds_calibration **out, const char **name, pd_error *err)
{
    const char *file = p->calibration, *labels = p->calibrate_labels;
    char bundled[4096];
    struct stat st;
    pds_error e;
    *out = NULL;
    *name = file ? file : labels ? labels : "of the bundle";
    if (!labels && !file && p->bundle) {
        snprintf(bundled, sizeof bundled, "%s/calibration.json", p->bundle);
        if (stat(bundled, &st) == 0) file = bundled;
    }
    if (file) return (*out = pds_calibration_load(file, &e)) ? 0 : pds_to_pd_error(err, &e);
    if (!labels) return 0;
    if (!(*out = pds_calibration_new())) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    int rc = calibrate(labels, p->calibrate_records, *out, err);
    if (rc || !p->save_calibration) return rc;
    json_t *j = pds_calibration_json(*out, labels);
    if (!j || json_dump_file(j, p->save_calibration, JSON_INDENT(1) | JSON_PRESERVE_ORDER))
        rc = pdi_set_error(err, PD_ERR_IO, "%s: cannot write: %s", p->save_calibration, strerror(errno));
    json_decref(j);
    return rc;
}
