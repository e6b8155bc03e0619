/* extract_draft.c - the drafter's side of extraction by generation: a
 * learned drafter (pd_extract_params.drafter, e.g. a DFlash draft) fed the
 * target's layer states of every position the output keeps, and its
 * proposals walked through the schema's constraint so that only tokens the
 * schema allows reach the verifying pass (extract.c verifies them as it
 * verifies copy speculation's: the output is that of greedy decoding). */
#include "decoder.h"

pd_status pdi_decoder_draft_open(decoder *d, pd_error *err)
{
    const pd_extract_drafter *dr = d->p.drafter;
    if (!dr) return PD_OK;
    pd_status rc = pd_context_keep_layer_states(d->ctx, dr->layers, dr->n_layers, err);
    if (rc) return rc;
    d->states_on = true;
    int32_t held = 0;
    pd_extraction_stats *st = &d->x->stats;
    if ((rc = dr->begin(dr->user, d->ctx, d->ids, st->n_cached_tokens, &d->dstate, &held, err))) return rc;
    if (held < st->n_cached_tokens) st->n_cached_tokens = held; /* the rest is evaluated again, for its states */
    d->drafting = true;
    return PD_OK;
}

pd_status pdi_decoder_draft_feed(decoder *d, pd_error *err)
{
    if (!d->drafting) return PD_OK;
    /* the prompt's evaluation keeps its last row only: every row of it is the output's */
    int32_t n = d->next.n_outputs > 0 ? d->row + 1 : d->next.n_tokens;
    pd_error e = {0};
    pd_status rc = d->p.drafter->append(d->dstate, d->next.tokens, pd_context_layer_states(d->ctx, 0), n, &e);
    if (rc == PD_ERR_CONTEXT) {
        d->drafting = false; /* its context is full: no more proposals for this text */
        return PD_OK;
    }
    if (rc && err) *err = e;
    return rc;
}

/* Whether token t may follow in state *s (then *s is the state after it):
 * an ordinary token whose bytes the schema allows. The end and every other
 * special token is not (nothing follows the end). */
static bool allows(decoder *d, pdi_cstate *s, int32_t t)
{
    const pd_tokenizer *tok = pd_model_tokenizer(d->ex->model);
    if (t < 0 || t >= d->ex->n_vocab || pd_tokenizer_is_special(tok, t)) return false;
    size_t len = 0;
    const char *b = pd_tokenizer_token_bytes(tok, t, &len);
    pdi_cstate next = *s;
    bool ok = b && len > 0;
    for (size_t i = 0; ok && i < len; i++) ok = pdi_cstate_step(&d->con, &next, (uint8_t)b[i]);
    if (ok) *s = next;
    return ok;
}

/* In place of the forbidden proposal `not` at a position whose drafter
 * scores are row: the best of its next PD_DRAFTER_ALTERNATIVES choices
 * (higher score, then lower id) that state *s allows, or -1. */
static int32_t alternative(decoder *d, pdi_cstate *s, const float *row, int32_t vocab, int32_t not)
{
    int32_t ids[PD_DRAFTER_ALTERNATIVES], n = 0;
    for (int32_t v = 0; v < vocab; v++) {
        if (v == not || (n == PD_DRAFTER_ALTERNATIVES && !(row[v] > row[ids[n - 1]]))) continue;
        int32_t at = n < PD_DRAFTER_ALTERNATIVES ? n++ : n - 1;
        while (at > 0 && row[v] > row[ids[at - 1]]) {
            ids[at] = ids[at - 1];
            at--;
        }
        ids[at] = v;
    }
    for (int32_t i = 0; i < n; i++)
        if (allows(d, s, ids[i])) return ids[i];
    return -1;
}

pd_status pdi_decoder_draft_propose(decoder *d, int32_t last, pdi_cstate s, int32_t k_max, int32_t *k, pd_error *err)
{
    const pd_extract_drafter *dr = d->p.drafter;
    *k = 0;
    if (!d->drafting || k_max < 1 || s.phase == PD_PH_DONE) return PD_OK;
    if (k_max > dr->block - 1) k_max = dr->block - 1;
    const float *logits = NULL;
    pd_status rc = dr->propose(d->dstate, last, k_max + 1, d->proposal, &logits, err);
    if (rc) return rc;
    d->x->stats.n_draft_passes++;
    const int32_t vocab = pd_model_config(d->ex->model)->vocab;
    while (*k < k_max && s.phase != PD_PH_DONE) {
        int32_t t = d->proposal[*k];
        if (!allows(d, &s, t)) { /* the drafter's next choices, else the draft ends here */
            t = logits ? alternative(d, &s, logits + (size_t)*k * (size_t)vocab, vocab, t) : -1;
            if (t < 0) break;
            d->proposal[*k] = t;
        }
        (*k)++;
    }
    return PD_OK;
}

void pdi_decoder_draft_close(decoder *d)
{
    if (d->states_on) pd_context_keep_layer_states(d->ctx, NULL, 0, NULL);
    d->states_on = false;
}
