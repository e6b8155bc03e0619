/* relabel.c - extracted records relabelled by a decision head
 * (pd_extraction_decide): generation copies the spans, then the head picks
 * each record's closed-set labels among all their combinations, one forward
 * pass a record. The schema (schemas/records.h) fills the question and
 * applies the chosen candidate; the head (the public decider API) chooses. */
#include "pocketdec_compose.h"
#include "records.h"

#include <stdlib.h>

static pd_status out_of_memory(pd_error *err)
{
    return pdi_set_error(err, PD_ERR_NOMEM, "relabelling records: out of memory");
}

/* Ask d about record rec and give it the most probable candidate's labels. */
static pd_status relabel(pd_decider *d, const pd_schema *sc, pd_record *rec, pd_error *err)
{
    int32_t n_cands;
    const char *const *cands = pdi_schema_decide_candidates(sc, &n_cands);
    char *question = pdi_schema_decide_question(sc, rec);
    if (!question) return out_of_memory(err);
    pd_decision *dec = NULL;
    pd_status rc = pd_decide(d, NULL, question, cands, n_cands, &dec, err);
    free(question);
    if (rc) return rc;
    int32_t best = 0;
    for (int32_t k = 1; k < n_cands; k++)
        if (dec->probs[k] > dec->probs[best]) best = k;
    rc = pdi_schema_apply_candidate(sc, best, dec->probs, rec) ? out_of_memory(err) : PD_OK;
    pd_decision_free(dec);
    return rc;
}

pd_status pd_extraction_decide(pd_decider *d, const pd_schema *sc, const char *text, pd_extraction *x, pd_error *err)
{
    if (!d || !sc || !text || !x) return pdi_set_error(err, PD_ERR_ARG, "relabelling records: NULL argument");
    if (!pdi_schema_has_decide(sc))
        return pdi_set_error(err, PD_ERR_ARG, "%s: the schema has no 'decide' section to relabel with",
                             pdi_schema_source(sc));
    if (x->n_fields != pd_schema_n_fields(sc))
        return pdi_set_error(err, PD_ERR_ARG, "relabelling records: the extraction has %d fields, %s has %d",
                             x->n_fields, pdi_schema_source(sc), pd_schema_n_fields(sc));
    if (x->n_records == 0) return PD_OK; /* nothing to ask: no model call */
    pd_status rc = pd_decider_set_text(d, text, err);
    for (int32_t r = 0; !rc && r < x->n_records; r++) rc = relabel(d, sc, &x->records[r], err);
    if (!rc && pdi_schema_distinct_records(sc)) pdi_extraction_drop_repeats(x);
    return rc;
}
