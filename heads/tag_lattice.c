/* tag_lattice.c - the tagger head's CRF as a distribution over tag
 * sequences: forward and backward tables under the constraints of the
 * Viterbi (heads/tagger.c), the marginal probability of a span, and the
 * posterior span rule (head.json "span_decoding": "posterior"): every span
 * more likely than the threshold is kept, most likely first. */
#include "heads.h"

#include <math.h>
#include <stdlib.h>

/* log(exp(a) + exp(b)) without overflow; -inf stays -inf. */
static double log_add(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* Transition score of prev -> next at token i (prev -1: the start), -inf where not allowed. */
static double step(const pdi_tag_lattice *L, int32_t prev, int32_t next, int32_t i)
{
    if (!pdi_tagger_allowed(prev, next, L->boundary[i])) return -INFINITY;
    return prev < 0 ? (double)L->t->start[next] : (double)L->t->trans[prev * L->t->n_tags + next];
}

pd_status pdi_tag_lattice_init(pdi_tag_lattice *L, const pdi_tagger *t, const float *emissions, const uint8_t *boundary,
                               int32_t n, pd_error *err)
{
    *L = (pdi_tag_lattice){.t = t, .emissions = emissions, .boundary = boundary, .n = n, .log_z = -INFINITY};
    if (n <= 0) return PD_OK;
    int32_t T = t->n_tags;
    L->alpha = malloc(sizeof *L->alpha * (size_t)n * (size_t)T * 2);
    if (!L->alpha) return pdi_set_error(err, PD_ERR_NOMEM, "tagger: out of memory for %d tokens", n);
    L->beta = L->alpha + (size_t)n * (size_t)T;
    double *alpha = L->alpha, *beta = L->beta;
    for (int32_t k = 0; k < T; k++) alpha[k] = step(L, -1, k, 0) + (double)emissions[k];
    for (int32_t i = 1; i < n; i++)
        for (int32_t k = 0; k < T; k++) {
            double s = -INFINITY;
            for (int32_t p = 0; p < T; p++) s = log_add(s, alpha[(i - 1) * T + p] + step(L, p, k, i));
            alpha[i * T + k] = s + (double)emissions[(int64_t)i * T + k];
        }
    for (int32_t k = 0; k < T; k++) beta[(n - 1) * T + k] = (double)t->end[k];
    for (int32_t i = n - 2; i >= 0; i--)
        for (int32_t p = 0; p < T; p++) {
            double s = -INFINITY;
            for (int32_t k = 0; k < T; k++)
                s = log_add(s, step(L, p, k, i + 1) + (double)emissions[(int64_t)(i + 1) * T + k] + beta[(i + 1) * T + k]);
            beta[i * T + p] = s;
        }
    for (int32_t k = 0; k < T; k++) L->log_z = log_add(L->log_z, alpha[(n - 1) * T + k] + beta[(n - 1) * T + k]);
    return PD_OK;
}

void pdi_tag_lattice_free(pdi_tag_lattice *L)
{
    free(L->alpha);
    L->alpha = L->beta = NULL;
}

/* log of the summed scores of the sequences whose tags end at token i with
 * `prev` and then do not continue with I-f (`in`): the span ends at i. */
static double span_end(const pdi_tag_lattice *L, int32_t prev, int32_t in, int32_t i)
{
    int32_t T = L->t->n_tags;
    if (i == L->n - 1) return (double)L->t->end[prev];
    double s = -INFINITY;
    for (int32_t k = 0; k < T; k++)
        if (k != in) s = log_add(s, step(L, prev, k, i + 1) + (double)L->emissions[(int64_t)(i + 1) * T + k] +
                                        L->beta[(i + 1) * T + k]);
    return s;
}

/* A span being walked from its first token: the log-sum of the scores of
 * the sequence prefixes whose tags first..i are B-f I-f ... I-f. */
typedef struct span_walk {
    int32_t prev, in, i; /* the tag at i (B-f or I-f), I-f, the token reached */
    double head;
} span_walk;

static span_walk walk_start(const pdi_tag_lattice *L, int32_t field, int32_t first)
{
    int32_t b = 1 + 2 * field;
    return (span_walk){b, b + 1, first, L->alpha[first * L->t->n_tags + b]};
}

static void walk_next(const pdi_tag_lattice *L, span_walk *w)
{
    w->i++;
    w->head += step(L, w->prev, w->in, w->i) + (double)L->emissions[(int64_t)w->i * L->t->n_tags + w->in];
    w->prev = w->in;
}

double pdi_tag_lattice_span_logprob(const pdi_tag_lattice *L, int32_t field, int32_t first, int32_t last)
{
    if (first < 0 || last < first || last >= L->n || field < 0 || 1 + 2 * field >= L->t->n_tags) return -INFINITY;
    span_walk w = walk_start(L, field, first);
    while (w.i < last) walk_next(L, &w);
    return w.head + span_end(L, w.prev, w.in, w.i) - L->log_z;
}

void pdi_tag_lattice_tag_marginals(const pdi_tag_lattice *L, float *out)
{
    size_t cells = (size_t)L->n * (size_t)L->t->n_tags;
    for (size_t c = 0; c < cells; c++) out[c] = (float)exp(L->alpha[c] + L->beta[c] - L->log_z);
}

typedef struct span_candidate {
    double logp;
    int32_t field, first, last;
} span_candidate;

/* Most probable first; then earlier, the smaller field, shorter: a total order. */
static int by_probability(const void *a, const void *b)
{
    const span_candidate *x = a, *y = b;
    if (x->logp != y->logp) return x->logp > y->logp ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->field != y->field) return x->field < y->field ? -1 : 1;
    return (x->last > y->last) - (x->last < y->last);
}

pd_status pdi_tag_lattice_posterior_tags(const pdi_tag_lattice *L, double threshold, int32_t *tags, pd_error *err)
{
    int32_t n = L->n, fields = (L->t->n_tags - 1) / 2;
    if (n <= 0) return PD_OK;
    double floor = log(threshold) + L->log_z;
    size_t cap = 16, count = 0;
    span_candidate *c = malloc(sizeof *c * cap);
    uint8_t *taken = calloc((size_t)n, 1);
    if (!c || !taken) goto nomem;
    for (int32_t f = 0; f < fields; f++)
        for (int32_t first = 0; first < n; first++) {
            /* the tags first..i fixed is an event that holds every longer
             * span from first: once it is less likely than the threshold,
             * no longer span can be kept */
            for (span_walk w = walk_start(L, f, first);; walk_next(L, &w)) {
                if (w.head + L->beta[w.i * L->t->n_tags + w.prev] < floor) break;
                double s = w.head + span_end(L, w.prev, w.in, w.i);
                if (s >= floor) {
                    if (count == cap) {
                        span_candidate *more = realloc(c, sizeof *c * (cap *= 2));
                        if (!more) goto nomem;
                        c = more;
                    }
                    c[count++] = (span_candidate){s - L->log_z, f, first, w.i};
                }
                if (w.i + 1 >= n) break;
            }
        }
    qsort(c, count, sizeof *c, by_probability);
    for (int32_t i = 0; i < n; i++) tags[i] = 0;
    for (size_t k = 0; k < count; k++) {
        int32_t i = c[k].first;
        while (i <= c[k].last && !taken[i]) i++;
        if (i <= c[k].last) continue; /* overlaps a span kept before */
        for (i = c[k].first; i <= c[k].last; i++) {
            taken[i] = 1;
            tags[i] = (i == c[k].first ? 1 : 2) + 2 * c[k].field;
        }
    }
    free(c);
    free(taken);
    return PD_OK;
nomem:
    free(c);
    free(taken);
    return pdi_set_error(err, PD_ERR_NOMEM, "tagger: out of memory for the spans of %d tokens", n);
}
