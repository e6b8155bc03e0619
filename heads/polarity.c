/* polarity.c - a tagger head's polarity table (head.json features.polarity):
 * terms with the log-odds that a review holding them is positive (below 0
 * for the words of complaints), learned by the trainer from reviews outside
 * the task, and negation and degree words; one `term<TAB>value` a line,
 * value a number or the word negation or degree, editable like the lexicon.
 * Also what the polarity atoms read of one text: every term found in it,
 * each character's strongest covering term, the negation and degree words
 * (docs/extraction-by-decisions.md, "Sparse features"). */
#include "sparse_features.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POL_VALUE = 1, POL_NEGATION = 2, POL_DEGREE = 4 };

static int compare_terms(const void *a, const void *b)
{
    const pol_term *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

void pdi_polarity_free(pdi_polarity *p)
{
    if (!p) return;
    free(p->data);
    free(p->terms);
    free(p);
}

/* One line `term<TAB>value` (s[0..n)) into p->terms. */
static pd_status parse_line(pdi_polarity *p, char *s, size_t n, size_t line, const char *file, pd_error *err)
{
    char *tab = memchr(s, '\t', n);
    if (!tab) return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: expected term<TAB>value", file, line);
    size_t len = (size_t)(tab - s), vlen = n - len - 1;
    int32_t chars = pdi_text_chars(s, len);
    if (len == 0 || chars < 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: the term is empty, not UTF-8 or holds a control character",
                             file, line);
    if (chars > PD_POLARITY_MAX_CHARS)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s:%zu: a term of %d characters, more than %d", file, line, chars,
                             PD_POLARITY_MAX_CHARS);
    pol_term t = {s, (uint32_t)len, 0, 0.0, line};
    char *v = tab + 1, *end = NULL;
    if (vlen == 8 && memcmp(v, "negation", 8) == 0) t.kinds = POL_NEGATION;
    else if (vlen == 6 && memcmp(v, "degree", 6) == 0) t.kinds = POL_DEGREE;
    else {
        v[vlen] = '\0'; /* the line's \n or \r (or the data's NUL) */
        /* a decimal number: strtod alone would take hex, inf, nan and leading spaces too */
        t.value = vlen && strspn(v, "0123456789+-.eE") == vlen ? strtod(v, &end) : NAN;
        if (end != v + vlen || !isfinite(t.value))
            return pdi_set_error(err, PD_ERR_FORMAT,
                                 "%s:%zu: the value '%.40s' is neither a finite number nor `negation` or `degree`", file,
                                 line, v);
        t.kinds = POL_VALUE;
    }
    p->terms[p->n_terms++] = t;
    if (chars > p->longest) p->longest = chars;
    return PD_OK;
}

pd_status pdi_polarity_load(const pd_head *h, const char *name, pdi_polarity **out, pd_error *err)
{
    pdi_polarity *p = *out = calloc(1, sizeof *p);
    char *file = pdi_head_path(h, name), *s;
    size_t len = 0, lines = 0, pos = 0, n;
    pd_status rc = p && file ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", h->source);
    if (!rc) rc = pdi_head_text_read(file, &p->data, &len, &lines, err);
    if (!rc && !(p->terms = malloc(sizeof *p->terms * lines))) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", file);
    for (size_t line = 1; !rc && pdi_head_text_line(p->data, len, &pos, &s, &n); line++)
        if (n > 0 && *s != '#') rc = parse_line(p, s, n, line, file, err);
    if (!rc) qsort(p->terms, (size_t)p->n_terms, sizeof *p->terms, compare_terms);
    int32_t kept = 0; /* a term once a kind: its kinds merged */
    for (int32_t i = 0; !rc && i < p->n_terms; i++) {
        pol_term *a = kept ? &p->terms[kept - 1] : NULL, *b = &p->terms[i];
        if (!a || compare_terms(a, b) != 0) {
            p->terms[kept++] = *b;
            continue;
        }
        if (a->kinds & b->kinds)
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: the term of line %zu given again as %s", file,
                               a->line > b->line ? a->line : b->line, a->line < b->line ? a->line : b->line,
                               b->kinds == POL_VALUE ? "a value" : b->kinds == POL_NEGATION ? "negation" : "degree");
        a->kinds |= b->kinds;
        if (b->kinds == POL_VALUE) a->value = b->value;
    }
    if (!rc) p->n_terms = kept;
    free(file);
    return rc;
}

/* ------------------------------------------------------------ one text */

static const pol_term *lookup(const pdi_polarity *p, const char *s, size_t n)
{
    pol_term key = {s, (uint32_t)n, 0, 0.0, 0};
    return bsearch(&key, p->terms, (size_t)p->n_terms, sizeof key, compare_terms);
}

void pdi_pol_text_free(pdi_pol_text *t)
{
    if (!t) return;
    free(t->values);
    free(t->words[0]);
    free(t->words[1]);
    free(t->best);
    free(t);
}

pd_status pdi_pol_text_init(pdi_pol_text **out, const pdi_polarity *p, const pdi_feat_text *x, pd_error *err)
{
    pdi_pol_text *t = *out = calloc(1, sizeof *t);
    if (!t) return pdi_set_error(err, PD_ERR_NOMEM, "features: out of memory");
    int32_t counts[3] = {0, 0, 0}; /* values, negation, degree: counted, then filled */
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t s = 0; s < x->n; s++)
            for (int32_t e = s + 1; e <= x->n && e - s <= p->longest; e++) {
                const pol_term *hit = lookup(p, x->bytes + x->start[s], x->start[e] - x->start[s]);
                if (!hit) continue;
                if (hit->kinds & POL_VALUE) {
                    if (pass) t->values[t->n_values] = (pol_match){s, e, hit->value};
                    t->n_values += pass;
                    counts[0] += !pass;
                }
                for (int k = 0; k < 2; k++)
                    if (hit->kinds & (k ? POL_DEGREE : POL_NEGATION)) {
                        if (pass) t->words[k][t->n_words[k]] = (pdi_feat_span){s, e};
                        t->n_words[k] += pass;
                        counts[1 + k] += !pass;
                    }
            }
        if (pass) break;
        t->values = malloc(sizeof *t->values * ((size_t)counts[0] + 1));
        t->words[0] = malloc(sizeof *t->words[0] * ((size_t)counts[1] + 1));
        t->words[1] = malloc(sizeof *t->words[1] * ((size_t)counts[2] + 1));
        t->best = malloc(sizeof *t->best * ((size_t)x->n + 1));
        if (!t->values || !t->words[0] || !t->words[1] || !t->best)
            return pdi_set_error(err, PD_ERR_NOMEM, "features: out of memory for a text of %zu bytes", x->len);
    }
    /* each character's strongest covering term: the largest |value|, ties to
     * the longer, then the earlier (matches come by start, then length) */
    for (int32_t c = 0; c < x->n; c++) t->best[c] = -1;
    for (int32_t m = 0; m < t->n_values; m++) {
        const pol_match *v = &t->values[m];
        for (int32_t c = v->start; c < v->end; c++) {
            const pol_match *b = t->best[c] >= 0 ? &t->values[t->best[c]] : NULL;
            if (!b || fabs(v->value) > fabs(b->value) ||
                (fabs(v->value) == fabs(b->value) && v->end - v->start > b->end - b->start))
                t->best[c] = m;
        }
    }
    return PD_OK;
}

const char *pdi_pol_bucket(double v)
{
    static const char *const neg[] = {"-0.5", "-1", "-2", "-4", "-8"}, *const pos[] = {"+0.5", "+1", "+2", "+4", "+8"};
    static const double at[] = {0.5, 1, 2, 4, 8};
    if (v > -0.5 && v < 0.5) return "0";
    int k = 0;
    while (k < 4 && fabs(v) >= at[k + 1]) k++;
    return v < 0 ? neg[k] : pos[k];
}

const char *pdi_pol_place(const pdi_pol_text *t, int32_t c)
{
    if (t->best[c] < 0) return "-";
    const pol_match *b = &t->values[t->best[c]];
    return b->end - b->start == 1 ? "S" : c == b->start ? "B" : c == b->end - 1 ? "E" : "I";
}

const char *pdi_pol_strongest(const pdi_pol_text *t, int32_t c)
{
    return t->best[c] < 0 ? "0" : pdi_pol_bucket(t->values[t->best[c]].value);
}

bool pdi_pol_stats(const pdi_pol_text *t, int32_t a, int32_t b, double stats[3])
{
    bool any = false;
    stats[0] = 0.0;
    for (int32_t m = 0; m < t->n_values; m++) {
        const pol_match *v = &t->values[m];
        if (v->start < a || v->end > b) continue;
        stats[0] += v->value;
        if (!any || v->value < stats[1]) stats[1] = v->value;
        if (!any || v->value > stats[2]) stats[2] = v->value;
        any = true;
    }
    return any;
}

/* Whether characters [a, b) hold no clause punctuation. */
static bool same_clause(const pdi_feat_text *x, int32_t a, int32_t b)
{
    while (a < b && !x->punct[a]) a++;
    return a == b;
}

const char *pdi_pol_negated(const pdi_pol_text *t, const pdi_feat_text *x, int32_t c)
{
    for (int32_t k = 0; k < t->n_words[0]; k++)
        if (t->words[0][k].start <= c && c < t->words[0][k].end) return "n";
    for (int32_t k = 0; k < t->n_words[0]; k++) {
        int32_t e = t->words[0][k].end;
        if (e <= c && c <= e + 2 && same_clause(x, e, c)) return "1";
    }
    return "0";
}

const char *pdi_pol_before(const pdi_pol_text *t, const pdi_feat_text *x, int which, pdi_feat_span s)
{
    const pdi_feat_span *w = t->words[which];
    for (int32_t k = 0; k < t->n_words[which]; k++)
        if (w[k].start == s.start && w[k].end <= s.end) return "in";
    for (int32_t k = 0; k < t->n_words[which]; k++)
        if (w[k].end <= s.start && s.start <= w[k].end + 2 && same_clause(x, w[k].end, s.start)) return "1";
    return "0";
}
