/* compare.c - two runs against the same gold (a paired bootstrap of the F1
 * difference over reviews) and the confidence sweep of a JSONL run. */
#include "te_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TE_DEFAULT_RESAMPLES 1000
#define TE_N_BINS 10

struct te_compare {
    te_result *res[2];
    te_interval iv;
};

struct te_sweep {
    te_result *res; /* the plain score, for the inputs */
    te_sweep_row *rows;
    size_t n_rows;
    te_reliability_bin bins[TE_N_BINS];
};

static const double default_thresholds[] = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5,
                                            0.6, 0.7, 0.8, 0.9, 0.95};

/* ------------------------------------------------------------- ids, gold */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The distinct ids of a kind's rows (placeholders included), sorted, or NULL. */
static long *ids_of(const te_eval *ev, te_input kind, size_t *n)
{
    const te_rows *rows = &ev->rows[kind];
    long *v = malloc((rows->n + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < rows->n; i++)
        v[i] = rows->v[i].id;
    qsort(v, rows->n, sizeof *v, cmp_long);
    *n = 0;
    for (size_t i = 0; i < rows->n; i++)
        if (*n == 0 || v[*n - 1] != v[i])
            v[(*n)++] = v[i];
    return v;
}

/* The first row of an id, for naming where it is. */
static const te_row *row_with_id(const te_eval *ev, long id)
{
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    for (size_t i = 0; i < rows->n; i++)
        if (rows->v[i].id == id)
            return &rows->v[i];
    return NULL;
}

/* Both runs must have rows for the same ids: the bootstrap pairs reviews. */
static te_status same_ids(const te_eval *const ev[2], te_error *err)
{
    size_t n[2];
    long *ids[2] = {ids_of(ev[0], TE_INPUT_PREDICTIONS, &n[0]),
                    ids_of(ev[1], TE_INPUT_PREDICTIONS, &n[1])};
    te_status st = TE_OK;
    if (!ids[0] || !ids[1])
        st = te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory comparing");
    for (size_t i = 0, j = 0; st == TE_OK && (i < n[0] || j < n[1]);) {
        if (i < n[0] && j < n[1] && ids[0][i] == ids[1][j]) {
            i++, j++;
            continue;
        }
        int has = i < n[0] && (j == n[1] || ids[0][i] < ids[1][j]) ? 0 : 1;
        long id = has == 0 ? ids[0][i] : ids[1][j];
        const te_row *r = row_with_id(ev[has], id);
        st = te_fail(err, TE_ERR_FORMAT, ev[!has]->last_file[TE_INPUT_PREDICTIONS], 0,
                     "id %ld has no row here but has one in %s:%ld; the runs compared must "
                     "cover the same reviews", id, r->file, r->line);
    }
    free(ids[0]);
    free(ids[1]);
    return st;
}

static int same_gold(const te_eval *a, const te_eval *b)
{
    const te_rows *x = &a->rows[TE_INPUT_GOLD], *y = &b->rows[TE_INPUT_GOLD];
    if (x->n != y->n)
        return 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->v[i].id != y->v[i].id)
            return 0;
        for (int f = 0; f < TE_N_FIELDS; f++)
            if (strcmp(x->v[i].f[f], y->v[i].f[f]) != 0)
                return 0;
    }
    return 1;
}

/* ------------------------------------------------------------- bootstrap */

/* Counts of one review: gold, and predicted and matched of each run. */
typedef struct review_counts {
    long g, p[2], s[2];
} review_counts;

static size_t index_of(const long *ids, size_t n, long id)
{
    const long *hit = bsearch(&id, ids, n, sizeof *ids, cmp_long);
    return (size_t)(hit - ids);
}

/* The counts of each review id of gold or of the runs (ids sorted in *ids). */
static review_counts *count_reviews(const te_eval *const ev[2], long **ids, size_t *n)
{
    size_t ng, np;
    long *g = ids_of(ev[0], TE_INPUT_GOLD, &ng), *p = ids_of(ev[0], TE_INPUT_PREDICTIONS, &np);
    long *all = g && p ? malloc((ng + np + 1) * sizeof *all) : NULL;
    review_counts *c = NULL;
    unsigned char *matched = NULL;
    if (all) {
        memcpy(all, g, ng * sizeof *g);
        memcpy(all + ng, p, np * sizeof *p);
        qsort(all, ng + np, sizeof *all, cmp_long);
        *n = 0;
        for (size_t i = 0; i < ng + np; i++)
            if (*n == 0 || all[*n - 1] != all[i])
                all[(*n)++] = all[i];
        c = calloc(*n + 1, sizeof *c);
    }
    for (int k = 0; c && k < 2; k++) {
        const te_rows *rows = &ev[k]->rows[TE_INPUT_PREDICTIONS];
        free(matched);
        matched = calloc(rows->n + 1, 1);
        if (!matched || te_match_rows(ev[k], NULL, matched, NULL) < 0) {
            free(c);
            c = NULL;
            break;
        }
        for (size_t i = 0; i < rows->n; i++) {
            if (rows->v[i].placeholder)
                continue;
            review_counts *rc = &c[index_of(all, *n, rows->v[i].id)];
            rc->p[k]++;
            rc->s[k] += matched[i];
        }
    }
    const te_rows *gold = &ev[0]->rows[TE_INPUT_GOLD];
    for (size_t i = 0; c && i < gold->n; i++)
        if (!gold->v[i].placeholder)
            c[index_of(all, *n, gold->v[i].id)].g++;
    free(matched);
    free(g);
    free(p);
    if (!c) {
        free(all);
        all = NULL;
    }
    *ids = all;
    return c;
}

/* splitmix64: small, and the same numbers on every platform. (lib/core has
 * one too, for sampling; tianchi-eval depends on nothing else of pocketdec.) */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), without modulo bias. */
static size_t below(uint64_t *state, size_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do
        x = next_random(state);
    while (x >= limit);
    return (size_t)(x % n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The k-th smallest of sorted d[0..n), k = ceil(q n) at least 1 (nearest rank). */
static double nearest_rank(const double *d, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n - 1e-9);
    return d[(k ? k : 1) - 1];
}

static te_status bootstrap(const review_counts *c, size_t n, te_interval *iv, te_error *err)
{
    iv->low = iv->high = iv->diff;
    if (n == 0)
        return TE_OK;
    double *d = malloc(iv->resamples * sizeof *d);
    if (!d)
        return te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory for the bootstrap");
    uint64_t state = iv->seed;
    for (unsigned long b = 0; b < iv->resamples; b++) {
        long g = 0, p[2] = {0, 0}, s[2] = {0, 0};
        for (size_t j = 0; j < n; j++) {
            const review_counts *r = &c[below(&state, n)];
            g += r->g;
            p[0] += r->p[0], p[1] += r->p[1];
            s[0] += r->s[0], s[1] += r->s[1];
        }
        d[b] = te_score_make(s[1], p[1], g).f1 - te_score_make(s[0], p[0], g).f1;
    }
    qsort(d, iv->resamples, sizeof *d, cmp_double);
    iv->low = nearest_rank(d, iv->resamples, 0.025);
    iv->high = nearest_rank(d, iv->resamples, 0.975);
    free(d);
    return TE_OK;
}

te_compare *te_compare_new(const te_eval *a, const te_eval *b, const te_compare_params *params,
                           te_error *err)
{
    if (!a || !b) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: two evaluators are compared");
        return NULL;
    }
    if (!same_gold(a, b)) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "the runs compared were loaded with different gold");
        return NULL;
    }
    const te_eval *ev[2] = {a, b};
    te_error local;
    if (!err)
        err = &local;
    if (same_ids(ev, err) != TE_OK)
        return NULL;
    te_compare *cmp = calloc(1, sizeof *cmp);
    if (!cmp) {
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory comparing");
        return NULL;
    }
    cmp->iv.resamples = params && params->resamples ? params->resamples : TE_DEFAULT_RESAMPLES;
    cmp->iv.seed = params ? params->seed : 0;
    long *ids = NULL;
    review_counts *counts = NULL;
    te_status st = TE_OK;
    if (!(cmp->res[0] = te_eval_score(a, err)) || !(cmp->res[1] = te_eval_score(b, err)))
        st = err->code;
    else if (!(counts = count_reviews(ev, &ids, &cmp->iv.reviews)))
        st = te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory comparing");
    if (st == TE_OK) {
        cmp->iv.diff = te_result_overall(cmp->res[1]).f1 - te_result_overall(cmp->res[0]).f1;
        st = bootstrap(counts, cmp->iv.reviews, &cmp->iv, err);
    }
    free(ids);
    free(counts);
    if (st != TE_OK) {
        te_compare_free(cmp);
        return NULL;
    }
    return cmp;
}

void te_compare_free(te_compare *cmp)
{
    if (!cmp)
        return;
    te_result_free(cmp->res[0]);
    te_result_free(cmp->res[1]);
    free(cmp);
}

const te_result *te_compare_result(const te_compare *cmp, int run)
{
    return cmp && (run == 0 || run == 1) ? cmp->res[run] : NULL;
}

te_interval te_compare_interval(const te_compare *cmp)
{
    return cmp->iv;
}

/* ----------------------------------------------------------------- sweep */

const te_row *te_first_csv_prediction(const te_eval *ev)
{
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    for (size_t i = 0; i < rows->n; i++)
        if (!rows->v[i].jsonl)
            return &rows->v[i];
    return NULL;
}

/* Every record must carry a confidence. */
static te_status check_confidences(const te_eval *ev, te_error *err)
{
    const te_row *csv = te_first_csv_prediction(ev);
    if (csv)
        return te_fail(err, TE_ERR_FORMAT, csv->file, 0,
                       "the sweep needs pocketdec's JSONL output with confidences, "
                       "not a CSV submission");
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    for (size_t i = 0; i < rows->n; i++) {
        const te_row *r = &rows->v[i];
        if (!r->placeholder && r->confidence < 0)
            return te_fail(err, TE_ERR_FORMAT, r->file, r->line,
                           "a record without \"confidence\" (an older output?); the sweep "
                           "needs each record's confidence");
    }
    return TE_OK;
}

/* The precision, recall and F1 of the records kept at each threshold. */
static te_status sweep_rows(te_sweep *sw, const te_eval *ev, const double *t, size_t n,
                            te_error *err)
{
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    unsigned char *keep = malloc(rows->n + 1), *matched = malloc(rows->n + 1);
    sw->rows = calloc(n + 1, sizeof *sw->rows);
    te_status st = TE_OK;
    long gold = te_result_overall(sw->res).gold;
    for (size_t k = 0; k < n && keep && matched && sw->rows; k++) {
        long kept = 0;
        for (size_t i = 0; i < rows->n; i++) {
            keep[i] = !rows->v[i].placeholder && rows->v[i].confidence >= t[k];
            kept += keep[i];
        }
        memset(matched, 0, rows->n + 1);
        long s = te_match_rows(ev, keep, matched, NULL);
        if (s < 0)
            break;
        sw->rows[sw->n_rows++] = (te_sweep_row){t[k], te_score_make(s, kept, gold)};
    }
    if (sw->n_rows < n)
        st = te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory in the sweep");
    free(keep);
    free(matched);
    return st;
}

/* Records binned by confidence, with the fraction matched. */
static te_status reliability(te_sweep *sw, const te_eval *ev, te_error *err)
{
    const te_rows *rows = &ev->rows[TE_INPUT_PREDICTIONS];
    unsigned char *matched = calloc(rows->n + 1, 1);
    if (!matched || te_match_rows(ev, NULL, matched, NULL) < 0) {
        free(matched);
        return te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory in the sweep");
    }
    for (int b = 0; b < TE_N_BINS; b++)
        sw->bins[b] = (te_reliability_bin){b / 10.0, (b + 1) / 10.0, 0, 0, 0.0};
    for (size_t i = 0; i < rows->n; i++) {
        if (rows->v[i].placeholder)
            continue;
        int b = (int)floor(rows->v[i].confidence * TE_N_BINS);
        te_reliability_bin *bin = &sw->bins[b < TE_N_BINS ? b : TE_N_BINS - 1];
        bin->count++;
        bin->correct += matched[i];
    }
    for (int b = 0; b < TE_N_BINS; b++)
        if (sw->bins[b].count)
            sw->bins[b].accuracy = (double)sw->bins[b].correct / (double)sw->bins[b].count;
    free(matched);
    return TE_OK;
}

te_sweep *te_eval_sweep(const te_eval *ev, const double *thresholds, size_t n, te_error *err)
{
    te_error local;
    if (!err)
        err = &local;
    if (!ev || (n && !thresholds)) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no evaluator or no thresholds");
        return NULL;
    }
    if (!thresholds) {
        thresholds = default_thresholds;
        n = sizeof default_thresholds / sizeof *default_thresholds;
    }
    for (size_t i = 0; i < n; i++)
        if (!(thresholds[i] >= 0.0 && thresholds[i] <= 1.0)) {
            te_fail(err, TE_ERR_ARG, NULL, 0, "threshold %g is outside [0, 1]", thresholds[i]);
            return NULL;
        }
    if (check_confidences(ev, err) != TE_OK)
        return NULL;
    te_sweep *sw = calloc(1, sizeof *sw);
    if (!sw) {
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory in the sweep");
        return NULL;
    }
    if (!(sw->res = te_eval_score(ev, err)) || sweep_rows(sw, ev, thresholds, n, err) != TE_OK ||
        reliability(sw, ev, err) != TE_OK) {
        te_sweep_free(sw);
        return NULL;
    }
    return sw;
}

void te_sweep_free(te_sweep *sw)
{
    if (!sw)
        return;
    te_result_free(sw->res);
    free(sw->rows);
    free(sw);
}

size_t te_sweep_n_rows(const te_sweep *sw)
{
    return sw->n_rows;
}

const te_sweep_row *te_sweep_row_at(const te_sweep *sw, size_t i)
{
    return i < sw->n_rows ? &sw->rows[i] : NULL;
}

size_t te_sweep_n_bins(const te_sweep *sw)
{
    (void)sw;
    return TE_N_BINS;
}

const te_reliability_bin *te_sweep_bin(const te_sweep *sw, size_t i)
{
    return i < TE_N_BINS ? &sw->bins[i] : NULL;
}

const te_result *te_sweep_result(const te_sweep *sw)
{
    return sw->res;
}

te_input_summary te_sweep_input(const te_sweep *sw, te_input kind)
{
    return te_result_input(sw->res, kind);
}
