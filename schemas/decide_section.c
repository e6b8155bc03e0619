/* decide_section.c - a schema's `decide` section: the question and candidate
 * templates filled from a record, the candidates (every combination of the
 * enum fields the candidate template names), and a chosen candidate applied
 * to a record. Pure helpers: asking a decision head is the composer's job
 * (compose/relabel.c). */
#include "schema_internal.h"

#include <stdlib.h>
#include <string.h>

int32_t pdi_schema_placeholder(const pd_schema *sc, const char *p, const char **end)
{
    const char *e = strchr(p, '}');
    *end = e;
    for (int32_t i = 0; e && i < sc->n_fields; i++)
        if (strlen(sc->fields[i].name) == (size_t)(e - p - 1) && !memcmp(sc->fields[i].name, p + 1, (size_t)(e - p - 1)))
            return i;
    return -1;
}

bool pdi_schema_decides(const pd_schema *sc, int32_t f)
{
    const char *e;
    if (!sc->decide_candidate) return false;
    for (const char *p = sc->decide_candidate; (p = strchr(p, '{')); p++)
        if (pdi_schema_placeholder(sc, p, &e) == f) return true;
    return false;
}

char *pdi_schema_render(const pd_schema *sc, const char *tpl, char *const *values)
{
    size_t n = 0;
    const char *e;
    for (int pass = 0; pass < 2; pass++) { /* measure, then write */
        char *out = pass ? malloc(n + 1) : NULL;
        if (pass && !out) return NULL;
        size_t k = 0;
        for (const char *p = tpl; *p;) {
            int32_t f = *p == '{' ? pdi_schema_placeholder(sc, p, &e) : -1;
            size_t len = f >= 0 ? strlen(values[f]) : 1;
            if (out) memcpy(out + k, f >= 0 ? values[f] : p, len);
            k += len;
            p = f >= 0 ? e + 1 : p + 1;
        }
        if (out) {
            out[k] = '\0';
            return out;
        }
        n = k;
    }
    return NULL;
}

/* The enum fields of the candidate template in the order they appear. */
static int32_t candidate_fields(const pd_schema *sc, int32_t fields[64])
{
    int32_t n = 0;
    const char *e;
    for (const char *p = sc->decide_candidate; (p = strchr(p, '{')); p++) {
        int32_t f = pdi_schema_placeholder(sc, p, &e);
        if (f >= 0 && n < 64) fields[n++] = f;
    }
    return n;
}

/* Candidate k's value indices (mixed radix, the first field slowest) written
 * into values[]. */
static void candidate_values(const pd_schema *sc, const int32_t *fields, int32_t nf, int32_t k, char **values)
{
    for (int32_t j = nf - 1; j >= 0; j--) {
        const pdi_schema_field *f = &sc->fields[fields[j]];
        values[fields[j]] = f->values[k % f->n_values];
        k /= f->n_values;
    }
}

int32_t pd_schema_n_candidates(const pd_schema *sc) { return sc ? sc->n_decide_cands : 0; }

void pdi_schema_free_candidates(char **cands, int32_t n)
{
    for (int32_t i = 0; cands && i < n; i++) free(cands[i]);
    free(cands);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

pd_status pdi_schema_candidates(const pd_schema *sc, char ***out, int32_t *n, pd_error *err)
{
    int32_t fields[64], nf = candidate_fields(sc, fields), total = 1;
    for (int32_t j = 0; j < nf; j++) total *= sc->fields[fields[j]].n_values; /* bounded when the schema is read */
    char **cands = calloc((size_t)total, sizeof *cands), **sorted = calloc((size_t)total, sizeof *sorted);
    char **values = calloc((size_t)sc->n_fields, sizeof *values);
    pd_status rc = PD_OK;
    if (!cands || !sorted || !values) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", sc->path);
    for (int32_t k = 0; !rc && k < total; k++) {
        candidate_values(sc, fields, nf, k, values);
        if (!(cands[k] = sorted[k] = pdi_schema_render(sc, sc->decide_candidate, values)))
            rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", sc->path);
    }
    if (!rc) {
        qsort(sorted, (size_t)total, sizeof *sorted, compare_strings);
        for (int32_t k = 1; !rc && k < total; k++)
            if (strcmp(sorted[k - 1], sorted[k]) == 0)
                rc = pdi_set_error(err, PD_ERR_FORMAT, "'decide.candidate' gives '%s' for two label combinations",
                                   sorted[k]);
    }
    free(sorted);
    free(values);
    if (rc) {
        pdi_schema_free_candidates(cands, total);
        return rc;
    }
    *out = cands;
    *n = total;
    return PD_OK;
}

bool pdi_schema_has_decide(const pd_schema *sc) { return sc->decide_question != NULL; }

char *pdi_schema_decide_question(const pd_schema *sc, const pd_record *rec)
{
    return sc->decide_question ? pdi_schema_render(sc, sc->decide_question, rec->values) : NULL;
}

const char *const *pdi_schema_decide_candidates(const pd_schema *sc, int32_t *n)
{
    *n = sc->n_decide_cands;
    return (const char *const *)sc->decide_cands;
}

/* Index among its field's values of decided field j's value in candidate k. */
static int32_t candidate_digit(const pd_schema *sc, const int32_t *fields, int32_t nf, int32_t k, int32_t j)
{
    for (int32_t i = nf - 1; i > j; i--) k /= sc->fields[fields[i]].n_values;
    return k % sc->fields[fields[j]].n_values;
}

/* Each decided field's probability, the marginal of its value over the
 * candidates; the record's confidence, its other fields' times candidate k's. */
static void candidate_probs(const pd_schema *sc, const int32_t *fields, int32_t nf, const float *probs, int32_t k,
                            pd_record *rec)
{
    double confidence = probs[k];
    if (!rec->prob) return; /* a record built by hand, without probabilities */
    for (int32_t f = 0; f < sc->n_fields; f++) {
        bool decided = false;
        for (int32_t j = 0; j < nf; j++) decided |= fields[j] == f;
        if (!decided) confidence *= rec->prob[f];
    }
    for (int32_t j = 0; j < nf; j++) {
        int32_t mine = candidate_digit(sc, fields, nf, k, j);
        double p = 0;
        for (int32_t c = 0; c < sc->n_decide_cands; c++)
            if (candidate_digit(sc, fields, nf, c, j) == mine) p += probs[c];
        rec->prob[fields[j]] = (float)p;
    }
    rec->confidence = (float)confidence;
}

pd_status pdi_schema_apply_candidate(const pd_schema *sc, int32_t k, const float *probs, pd_record *rec)
{
    int32_t fields[64], nf = candidate_fields(sc, fields);
    char **values = malloc(sizeof *values * (size_t)sc->n_fields);
    if (!values) return PD_ERR_NOMEM;
    memcpy(values, rec->values, sizeof *values * (size_t)sc->n_fields);
    candidate_values(sc, fields, nf, k, values);
    pd_status rc = PD_OK;
    for (int32_t j = 0; !rc && j < nf; j++) {
        int32_t f = fields[j];
        char *v = strdup(values[f]);
        if (!v) {
            rc = PD_ERR_NOMEM;
        } else {
            free(rec->values[f]);
            rec->values[f] = v;
        }
    }
    free(values);
    if (!rc && probs) candidate_probs(sc, fields, nf, probs, k, rec);
    return rc;
}
