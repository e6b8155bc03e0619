/* calibration.c - the model's measured rates per cell (from labelled reviews
 * and the records the model wrote for them), their file, and the one rule
 * that turns a count into an estimate with an interval. */
#include "pds_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "pocketdec-calibration"
#define FORMAT_VERSION 1
#define Z90 1.6448536269514722 /* the standard normal's 95% quantile: a two-sided 90% interval */

typedef struct cal_cell {
    char *category, *polarity; /* category NULL: a polarity's entry */
    double g, p, t;            /* gold, predicted, correct records */
    double gg, pp, gp;         /* sums over reviews of g_i^2, p_i^2, g_i p_i */
} cal_cell;

struct pds_calibration {
    cal_cell *cells;
    size_t n, cap;
    long reviews;
};

pds_calibration *pds_calibration_new(void)
{
    return calloc(1, sizeof(pds_calibration));
}

void pds_calibration_free(pds_calibration *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->cells[i].category);
        free(c->cells[i].polarity);
    }
    free(c->cells);
    free(c);
}

long pds_calibration_reviews(const pds_calibration *c)
{
    return c->reviews;
}

static cal_cell *find(const pds_calibration *c, const char *category, const char *polarity)
{
    for (size_t i = 0; i < c->n; i++)
        if (pds_same_key(c->cells[i].category, c->cells[i].polarity, category, polarity)) return &c->cells[i];
    return NULL;
}

static cal_cell *get(pds_calibration *c, const char *category, const char *polarity)
{
    cal_cell *x = find(c, category, polarity);
    if (x) return x;
    if (pds_grow((void **)&c->cells, &c->cap, c->n + 1, sizeof *c->cells)) return NULL;
    x = &c->cells[c->n];
    memset(x, 0, sizeof *x);
    bool ok = true;
    x->category = pds_strdup(category, &ok);
    x->polarity = pds_strdup(polarity, &ok);
    if (!ok) {
        free(x->category);
        free(x->polarity);
        return NULL;
    }
    c->n++;
    return x;
}

bool pds_calibration_cell(const pds_calibration *c, size_t i, const char **category, const char **polarity,
                          double *gold)
{
    if (!c || i >= c->n) return false;
    *category = c->cells[i].category, *polarity = c->cells[i].polarity, *gold = c->cells[i].g;
    return true;
}

bool pds_calibration_knows(const pds_calibration *c, bool category, const char *label)
{
    if (c->reviews == 0) return true;
    for (size_t i = 0; i < c->n; i++) {
        const char *l = category ? c->cells[i].category : c->cells[i].polarity;
        if (l && strcmp(l, label) == 0) return true;
    }
    return false;
}

/* One review's counts of a cell, before their squares are added. */
typedef struct tally {
    cal_cell *cell;
    double g, p, t;
} tally;

static bool same_record(const pds_record *a, const pds_record *b)
{
    return strcmp(pds_field(a->aspect), pds_field(b->aspect)) == 0 &&
           strcmp(pds_field(a->opinion), pds_field(b->opinion)) == 0 &&
           strcmp(pds_field(a->category), pds_field(b->category)) == 0 &&
           strcmp(pds_field(a->polarity), pds_field(b->polarity)) == 0;
}

/* The tallies of r's cell and of its polarity's entry, by which (0 gold, 1
 * predicted, 2 correct). */
static int count(pds_calibration *c, tally **ts, size_t *n, size_t *cap, const pds_record *r, int which)
{
    const char *keys[2] = {pds_field(r->category), NULL};
    for (int k = 0; k < 2; k++) {
        cal_cell *cell = get(c, keys[k], pds_field(r->polarity));
        if (!cell) return -1;
        size_t i = 0;
        while (i < *n && (*ts)[i].cell != cell) i++;
        if (i == *n) {
            if (pds_grow((void **)ts, cap, *n + 1, sizeof **ts)) return -1;
            (*ts)[(*n)++] = (tally){cell, 0, 0, 0};
        }
        double *v = which == 0 ? &(*ts)[i].g : which == 1 ? &(*ts)[i].p : &(*ts)[i].t;
        *v += 1;
    }
    return 0;
}

int pds_calibration_add(pds_calibration *c, const pds_record *gold, size_t n_gold, const pds_record *pred,
                        size_t n_pred, pds_error *err)
{
    tally *ts = NULL;
    size_t n = 0, cap = 0;
    bool *used = n_gold ? calloc(n_gold, sizeof *used) : NULL;
    int rc = n_gold && !used;
    for (size_t i = 0; !rc && i < n_gold; i++) rc = count(c, &ts, &n, &cap, &gold[i], 0);
    for (size_t i = 0; !rc && i < n_pred; i++) {
        rc = count(c, &ts, &n, &cap, &pred[i], 1);
        for (size_t j = 0; !rc && j < n_gold; j++)
            if (!used[j] && same_record(&pred[i], &gold[j])) {
                used[j] = true;
                rc = count(c, &ts, &n, &cap, &pred[i], 2);
                break;
            }
    }
    for (size_t i = 0; !rc && i < n; i++) {
        cal_cell *x = ts[i].cell;
        x->g += ts[i].g;
        x->p += ts[i].p;
        x->t += ts[i].t;
        x->gg += ts[i].g * ts[i].g;
        x->pp += ts[i].p * ts[i].p;
        x->gp += ts[i].g * ts[i].p;
    }
    if (!rc) c->reviews++;
    free(ts);
    free(used);
    return rc ? pds_fail(err, PDS_ERR_MEMORY, "out of memory") : 0;
}

int pds_calibration_merge(pds_calibration *dst, const pds_calibration *src, pds_error *err)
{
    for (size_t i = 0; i < src->n; i++) {
        const cal_cell *s = &src->cells[i];
        cal_cell *d = get(dst, s->category, s->polarity);
        if (!d) return pds_fail(err, PDS_ERR_MEMORY, "out of memory");
        d->g += s->g, d->p += s->p, d->t += s->t, d->gg += s->gg, d->pp += s->pp, d->gp += s->gp;
    }
    dst->reviews += src->reviews;
    return 0;
}

/* The counts are whole numbers (held as doubles for their sums). */
static json_int_t whole(double v)
{
    return (json_int_t)llround(v);
}

json_t *pds_calibration_json(const pds_calibration *c, const char *source)
{
    json_t *cells = json_array();
    json_t *root = json_pack("{s:s,s:i,s:s,s:I,s:o}", "format", FORMAT_NAME, "version", FORMAT_VERSION, "source",
                             source ? source : "", "reviews", (json_int_t)c->reviews, "cells", cells);
    if (!root) return NULL;
    for (size_t i = 0; i < c->n; i++) {
        const cal_cell *x = &c->cells[i];
        json_t *e = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "polarity", x->polarity, "gold", whole(x->g), "predicted",
                              whole(x->p), "correct", whole(x->t), "sum_gg", whole(x->gg), "sum_pp", whole(x->pp),
                              "sum_gp", whole(x->gp));
        if (!e || (x->category && json_object_set_new(e, "category", json_string(x->category))) ||
            json_array_append_new(cells, e)) {
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

/* A non-negative number at key of e, else false. */
static bool number(json_t *e, const char *key, double *out)
{
    json_t *v = json_object_get(e, key);
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return *out >= 0 && isfinite(*out);
}

pds_calibration *pds_calibration_load(const char *path, pds_error *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        pds_fail(err, je.line > 0 ? PDS_ERR_FORMAT : PDS_ERR_IO, "%s:%d: cannot read the calibration: %s", path,
                 je.line, je.text);
        return NULL;
    }
    pds_calibration *c = pds_calibration_new();
    json_t *cells = json_object_get(root, "cells"), *e;
    json_t *fmt = json_object_get(root, "format"), *reviews = json_object_get(root, "reviews");
    size_t i;
    if (!c) {
        pds_fail(err, PDS_ERR_MEMORY, "out of memory");
        goto fail;
    }
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), FORMAT_NAME) ||
        json_integer_value(json_object_get(root, "version")) != FORMAT_VERSION || !json_is_array(cells) ||
        !json_is_integer(reviews) || json_integer_value(reviews) < 0) {
        pds_fail(err, PDS_ERR_FORMAT,
                 "%s: not a calibration file (a JSON object with \"format\": \"%s\", \"version\": %d, \"reviews\" "
                 "and \"cells\"; docs/summarize.md)", path, FORMAT_NAME, FORMAT_VERSION);
        goto fail;
    }
    c->reviews = (long)json_integer_value(reviews);
    json_array_foreach(cells, i, e) {
        json_t *cat = json_object_get(e, "category"), *pol = json_object_get(e, "polarity");
        double v[6];
        static const char *const keys[6] = {"gold", "predicted", "correct", "sum_gg", "sum_pp", "sum_gp"};
        int k = 0;
        while (k < 6 && number(e, keys[k], &v[k])) k++;
        if (k < 6 || !json_is_string(pol) || (cat && !json_is_string(cat)) || v[2] > v[0] || v[2] > v[1]) {
            pds_fail(err, PDS_ERR_FORMAT, "%s: cells[%zu]: %s", path, i,
                     k < 6 ? "needs gold, predicted, correct, sum_gg, sum_pp and sum_gp, numbers >= 0"
                           : !json_is_string(pol) || (cat && !json_is_string(cat))
                                 ? "\"polarity\" (and \"category\" when present) must be strings"
                                 : "more correct records than gold or predicted ones");
            goto fail;
        }
        const char *cs = cat ? json_string_value(cat) : NULL;
        if (find(c, cs, json_string_value(pol))) {
            pds_fail(err, PDS_ERR_FORMAT, "%s: cells[%zu]: a second entry for %s%s%s", path, i, cs ? cs : "",
                     cs ? "/" : "", json_string_value(pol));
            goto fail;
        }
        cal_cell *x = get(c, cs, json_string_value(pol));
        if (!x) {
            pds_fail(err, PDS_ERR_MEMORY, "out of memory");
            goto fail;
        }
        x->g = v[0], x->p = v[1], x->t = v[2], x->gg = v[3], x->pp = v[4], x->gp = v[5];
    }
    json_decref(root);
    return c;
fail:
    json_decref(root);
    pds_calibration_free(c);
    return NULL;
}

/* The rates of a cell of the calibration (none when it has no entry). */
static pds_rates rates_of(const cal_cell *x, long reviews)
{
    pds_rates r = {0};
    if (!x) return r;
    r.gold = x->g, r.predicted = x->p, r.correct = x->t;
    r.known = x->g >= 1 && x->p >= 1;
    if (r.known && reviews > 1) {
        /* delta method for log(G / Pr), G and Pr sums over reviews: the
         * variance of sum_i (g_i / G - p_i / Pr), n / (n - 1) as a sample's */
        double s = x->gg / (x->g * x->g) - 2 * x->gp / (x->g * x->p) + x->pp / (x->p * x->p);
        r.var_log_ratio = (s > 0 ? s : 0) * (double)reviews / (double)(reviews - 1);
    }
    return r;
}

/* How far a category's log(G / Pr) strays from its polarity's, beyond its
 * own sampling variance: DerSimonian and Laird's moment estimate of the
 * between-cell variance, over the cells with rates of their own (at least
 * min_support gold records), each against its polarity's weighted mean,
 * pooled over the polarities. 0 when no polarity has two such cells. */
static double between_cells(const pds_calibration *c, int min_support)
{
    double q = 0, df = 0, scale = 0;
    for (size_t i = 0; i < c->n; i++) {
        const cal_cell *pol = &c->cells[i];
        double sw = 0, sw2 = 0, swy = 0, swyy = 0;
        int k = 0;
        for (size_t j = 0; !pol->category && j < c->n; j++) {
            const cal_cell *x = &c->cells[j];
            if (!x->category || strcmp(x->polarity, pol->polarity) || x->g < min_support) continue;
            pds_rates r = rates_of(x, c->reviews);
            if (!r.known || r.var_log_ratio <= 0) continue;
            double w = 1 / r.var_log_ratio, y = log(x->g / x->p);
            sw += w, sw2 += w * w, swy += w * y, swyy += w * y * y, k++;
        }
        if (k < 2) continue;
        q += swyy - swy * swy / sw;
        df += k - 1;
        scale += sw - sw2 / sw;
    }
    return scale > 0 && q > df ? (q - df) / scale : 0;
}

pds_rates pds_calibration_rates(const pds_calibration *c, const char *category, const char *polarity, int min_support,
                                const char **which)
{
    pds_rates r = {0};
    *which = "none";
    if (!c) return r;
    if (category) {
        r = rates_of(find(c, category, polarity), c->reviews);
        if (r.known && r.gold >= min_support) {
            *which = "cell";
            return r;
        }
    }
    r = rates_of(find(c, NULL, polarity), c->reviews);
    if (r.known) *which = "polarity";
    /* a category on its polarity's rates: its own ratio is one cell's of
     * that polarity, not the polarity's, so the spread between cells joins
     * the rates' variance (the polarity's figures claim no cell's precision) */
    if (r.known && category) r.var_log_ratio += between_cells(c, min_support);
    return r;
}

void pds_estimate_count(const pds_rates *r, long records, pds_estimate *out)
{
    double c = (double)records;
    out->support = r->gold;
    if (!r->known) {
        *out = (pds_estimate){c, c, c, -1, -1, r->gold, "none"};
        return;
    }
    double P = r->correct / r->predicted, R = r->correct / r->gold;
    out->precision = P, out->recall = R;
    if (records == 0) {
        /* nothing found: at most N such that missing all N is 5% likely */
        out->estimate = out->low = 0;
        out->high = R <= 0 ? -1 : R >= 1 ? 0 : log(0.05) / log1p(-R);
        return;
    }
    out->estimate = c * r->gold / r->predicted;
    double var = r->var_log_ratio + (1 - P * R) / c;
    double sd = sqrt(var);
    out->low = out->estimate * exp(-Z90 * sd);
    out->high = out->estimate * exp(Z90 * sd);
}
