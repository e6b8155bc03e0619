/* tag_run.c - one pass of a tagger head: the echo prompt evaluated once, the
 * read copy's hidden states turned into emissions, tags and spans (the CRF
 * of tag_lattice.c), each `from` span's link, and each record's label
 * logits. A head with sparse features adds their sums, over the read copy's
 * characters, to the emissions, link scores and label logits. What the
 * records mean to a schema is compose/'s business. */
#include "heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the trace */

void pd_tag_trace_free(pd_tag_trace *tr)
{
    if (!tr) return;
    for (int32_t k = 0; tr->tag_names && k < tr->n_tags; k++) free(tr->tag_names[k]);
    for (int32_t s = 0; tr->spans && s < tr->n_spans; s++) free(tr->spans[s].text);
    for (int32_t l = 0; tr->links && l < tr->n_links; l++) free(tr->links[l].scores);
    free(tr->tag_names);
    free(tr->spans);
    free(tr->links);
    free(tr->tokens);
    free(tr->emissions);
    free(tr->tags);
    free(tr->label_logits);
    free(tr->candidates);
    free(tr->tag_marginals);
    free(tr);
}

const char *pd_tag_fate_name(pd_tag_fate fate)
{
    switch (fate) {
    case PD_TAG_WRITTEN: return "written";
    case PD_TAG_NO_RECORD: return "no_record";
    case PD_TAG_BELOW_FLOOR: return "below_floor";
    case PD_TAG_REPEAT: return "repeat";
    }
    return NULL;
}

static pd_status tag_names(const pdi_tagger *t, pd_tag_trace *tr)
{
    tr->n_tags = t->n_tags;
    if (!(tr->tag_names = calloc((size_t)t->n_tags, sizeof *tr->tag_names)) || !(tr->tag_names[0] = strdup("O")))
        return PD_ERR_NOMEM;
    for (int32_t k = 0; k < t->n_spans; k++)
        for (int32_t bi = 0; bi < 2; bi++) {
            size_t n = strlen(t->spans[k]) + 3;
            char *s = tr->tag_names[1 + 2 * k + bi] = malloc(n);
            if (!s) return PD_ERR_NOMEM;
            memcpy(s, bi ? "I-" : "B-", 2);
            memcpy(s + 2, t->spans[k], n - 2);
        }
    return PD_OK;
}

/* ----------------------------------------------------------- one pass */

/* The working set of one pass. */
typedef struct pass {
    const pd_head *head;
    const pdi_tagger *t;
    pd_tag_trace *tr;
    const float **rows;   /* [n_read] hidden states of the read copy */
    char *bytes;          /* the read copy's bytes */
    size_t *offset;       /* [n_read + 1] byte offset of each token in bytes */
    uint8_t *boundary;    /* [n_read] whether the token starts a character */
    const pdi_features *features; /* the head's sparse features; NULL without */
    pdi_feat_text text;    /* with them: the read copy's characters */
    pdi_feat_span *chars;  /* [n_spans] each span's characters */
    bool names;            /* traced (pd_tag_extract_trace) */
} pass;

static pd_status nomem(const pass *ps, pd_error *err)
{
    return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory in a tagger pass", ps->head->source);
}

pd_status pdi_tag_read_copy(const pd_tokenizer *tok, const int32_t *ids, int32_t n, char **bytes, size_t **offset,
                            uint8_t **boundary)
{
    size_t *at = *offset = malloc(sizeof *at * ((size_t)n + 1));
    uint8_t *starts = *boundary = malloc((size_t)n + 1);
    *bytes = NULL;
    if (!at || !starts) return PD_ERR_NOMEM;
    at[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *b = pd_tokenizer_token_bytes(tok, ids[i], &len);
        starts[i] = !b || len == 0 || !pdi_utf8_is_continuation((uint8_t)b[0]);
        at[i + 1] = at[i] + (b ? len : 0);
    }
    if (!(*bytes = malloc(at[n] + 1))) return PD_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *b = pd_tokenizer_token_bytes(tok, ids[i], &len);
        if (b) memcpy(*bytes + at[i], b, len);
    }
    (*bytes)[at[n]] = '\0';
    return PD_OK;
}

/* Bytes, offsets and character boundaries of the read copy's tokens. */
static pd_status read_bytes(pass *ps, const pd_tokenizer *tok, pd_error *err)
{
    const pd_tag_trace *tr = ps->tr;
    if (pdi_tag_read_copy(tok, tr->tokens + tr->read_start, tr->n_read, &ps->bytes, &ps->offset, &ps->boundary))
        return nomem(ps, err);
    return PD_OK;
}

/* The emissions, with the sparse features' sums of the tokens that start a
 * character (the others have no features). */
static pd_status emissions(pass *ps, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    int32_t n = tr->n_read, T = ps->t->n_tags;
    double *sparse = NULL;
    if (ps->features) {
        pd_status rc = pdi_feat_text_init(&ps->text, ps->features, ps->bytes, ps->offset[n], err);
        if (rc) return rc;
    }
    if (pdi_features_on(ps->features, PD_FEAT_TAG)) {
        if (!(sparse = calloc((size_t)n * (size_t)T, sizeof *sparse))) return nomem(ps, err);
        for (int32_t i = 0; i < n; i++) {
            int32_t c = pdi_feat_text_char(&ps->text, ps->offset[i]);
            if (ps->offset[i + 1] > ps->offset[i] && c >= 0 && c < ps->text.n)
                pdi_features_tag(&ps->text, c, sparse + (size_t)i * (size_t)T);
        }
    }
    pdi_tagger_emissions(ps->head, ps->rows, n, sparse, tr->emissions);
    free(sparse);
    return PD_OK;
}

/* Each run B-f I-f* of the tags is a span of field f. */
static pd_status find_spans(pass *ps, const pdi_tag_lattice *lattice, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    if (!(tr->spans = calloc((size_t)tr->n_read, sizeof *tr->spans))) return nomem(ps, err);
    for (int32_t i = 0; i < tr->n_read; i++) {
        int32_t tag = tr->tags[i];
        if (tag == 0 || tag % 2 == 0) continue; /* O, or inside a span */
        int32_t f = (tag - 1) / 2, j = i;
        while (j + 1 < tr->n_read && tr->tags[j + 1] == 2 + 2 * f) j++;
        pd_tag_span *s = &tr->spans[tr->n_spans++];
        s->field = f;
        s->name = ps->t->spans[f];
        s->first = i;
        s->last = j;
        s->probability = exp(pdi_tag_lattice_span_logprob(lattice, f, i, j));
        if (!(s->text = strndup(ps->bytes + ps->offset[i], ps->offset[j + 1] - ps->offset[i]))) return nomem(ps, err);
    }
    return PD_OK;
}

/* With sparse features: each span's characters, those its tokens' bytes cover. */
static pd_status span_chars(pass *ps, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    if (!ps->features) return PD_OK;
    if (!(ps->chars = malloc(sizeof *ps->chars * ((size_t)tr->n_spans + 1)))) return nomem(ps, err);
    for (int32_t s = 0; s < tr->n_spans; s++)
        ps->chars[s] = pdi_tag_span_chars(&ps->text, ps->offset, &tr->spans[s]);
    return PD_OK;
}

/* Spans of head field f in text order, into idx; their count. */
static int32_t spans_of(const pd_tag_trace *tr, int32_t f, int32_t *idx)
{
    int32_t n = 0;
    for (int32_t s = 0; s < tr->n_spans; s++)
        if (tr->spans[s].field == f) idx[n++] = s;
    return n;
}

/* Records: one per `from` span with its partner, then the unchosen `to`
 * spans (or one per span with a single span field), in creation order. */
static pd_status link_records(pass *ps, pdi_tag_record *recs, int32_t *n_recs, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    const pdi_tagger *t = ps->t;
    const pdi_tag_record empty = {.span = {-1, -1}, .label = -1, .link = 1, .label_prob = 1};
    *n_recs = 0;
    if (t->link_from < 0) {
        for (int32_t s = 0; s < tr->n_spans; s++) {
            recs[*n_recs] = empty;
            recs[(*n_recs)++].span[0] = s;
        }
        return PD_OK;
    }
    int32_t *from = malloc(sizeof *from * (size_t)(2 * tr->n_spans + 1)), *to = from ? from + tr->n_spans : NULL;
    const float **to_rows = malloc(sizeof *to_rows * (size_t)(tr->n_spans + 1));
    bool *chosen = calloc((size_t)tr->n_spans + 1, sizeof *chosen);
    float *work = malloc(sizeof *work * 2 * (size_t)t->link_dim);
    bool sparse_on = pdi_features_on(ps->features, PD_FEAT_LINK);
    pdi_feat_span *to_chars = malloc(sizeof *to_chars * (size_t)(tr->n_spans + 1));
    double *sparse = malloc(sizeof *sparse * (size_t)(tr->n_spans + 1));
    pd_status rc = from && to_rows && chosen && work && to_chars && sparse ? PD_OK : nomem(ps, err);
    int32_t n_from = rc ? 0 : spans_of(tr, t->link_from, from), n_to = rc ? 0 : spans_of(tr, t->link_to, to);
    if (!rc && n_from && !(tr->links = calloc((size_t)n_from, sizeof *tr->links))) rc = nomem(ps, err);
    for (int32_t a = 0; !rc && a < n_to; a++) {
        to_rows[a] = ps->rows[tr->spans[to[a]].last];
        if (sparse_on) to_chars[a] = ps->chars[to[a]];
    }
    for (int32_t o = 0; !rc && o < n_from; o++) {
        pd_tag_link *l = &tr->links[tr->n_links++];
        l->from = from[o];
        l->n_scores = n_to + 1;
        if (!(l->scores = malloc(sizeof *l->scores * (size_t)(n_to + 1)))) {
            rc = nomem(ps, err);
            break;
        }
        if (sparse_on) {
            memset(sparse, 0, sizeof *sparse * (size_t)(n_to + 1));
            pdi_features_link(&ps->text, ps->chars[from[o]], to_chars, n_to, sparse);
        }
        pdi_tagger_link_scores(ps->head, ps->rows[tr->spans[from[o]].last], to_rows, n_to, sparse_on ? sparse : NULL,
                               work, l->scores);
        int32_t best = pdi_argmax(l->scores, n_to + 1);
        l->choice = best < n_to ? to[best] : -1;
        if (best < n_to) chosen[best] = true;
        pdi_tag_record *r = &recs[(*n_recs)++];
        *r = empty;
        r->span[t->link_from] = from[o];
        r->span[t->link_to] = l->choice;
        r->link = (float)pdi_softmax_at(l->scores, n_to + 1, best);
    }
    for (int32_t a = 0; !rc && a < n_to; a++) {
        if (chosen[a]) continue;
        pdi_tag_record *r = &recs[(*n_recs)++];
        *r = empty;
        r->span[t->link_to] = to[a];
        double taken = 0; /* the likeliest claim on it by a `from` span */
        for (int32_t o = 0; o < tr->n_links; o++) {
            double p = pdi_softmax_at(tr->links[o].scores, n_to + 1, a);
            if (p > taken) taken = p;
        }
        r->link = (float)(1 - taken);
    }
    free(from);
    free(to_rows);
    free(chosen);
    free(work);
    free(to_chars);
    free(sparse);
    return rc;
}

/* Each record's label logits (into the trace) and class. */
static pd_status label_records(pass *ps, pdi_tag_record *recs, int32_t n_recs, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    const pdi_tagger *t = ps->t;
    int32_t classes = t->n_labels + t->no_record; /* the no-record class last */
    tr->n_labels = classes;
    tr->no_record = t->no_record;
    if (!classes) return PD_OK;
    bool sparse_on = pdi_features_on(ps->features, PD_FEAT_LABEL);
    double *sparse = malloc(sizeof *sparse * ((size_t)classes + 1));
    if (!sparse || !(tr->label_logits = malloc(sizeof(float) * (size_t)classes * ((size_t)n_recs + 1)))) {
        free(sparse);
        return nomem(ps, err);
    }
    for (int32_t r = 0; r < n_recs; r++) {
        const float *xs[PD_TAGGER_MAX_SPANS * PD_SPAN_N_STATES] = {NULL};
        pdi_feat_span chars[PD_TAGGER_MAX_SPANS];
        for (int32_t k = 0; k < t->n_spans; k++) {
            int32_t s = recs[r].span[k];
            chars[k] = s >= 0 && sparse_on ? ps->chars[s] : (pdi_feat_span){-1, -1};
            if (s < 0) continue;
            for (int32_t j = 0; j < t->n_label_states; j++)
                xs[k * t->n_label_states + j] =
                    ps->rows[t->label_states[j] == PD_SPAN_FIRST ? tr->spans[s].first : tr->spans[s].last];
        }
        float *logits = tr->label_logits + (size_t)r * (size_t)classes;
        if (sparse_on) {
            memset(sparse, 0, sizeof *sparse * (size_t)classes);
            pdi_features_label(&ps->text, chars, sparse);
        }
        pdi_tagger_label_logits(ps->head, xs, sparse_on ? sparse : NULL, logits);
        recs[r].label = pdi_argmax(logits, classes);
        recs[r].label_prob = (float)pdi_softmax_at(logits, classes, recs[r].label);
        tr->n_label_rows++;
    }
    free(sparse);
    return PD_OK;
}

/* Evaluate the prompt once and decide everything from its hidden states. */
static pd_status run(pass *ps, pd_context *ctx, const pd_tokenizer *tok, pdi_tag_record **recs, int32_t *n_recs,
                     pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    int32_t n = tr->n_read;
    int32_t *outputs = malloc(sizeof *outputs * (size_t)n);
    ps->rows = malloc(sizeof *ps->rows * (size_t)n);
    if (!outputs || !ps->rows) {
        free(outputs);
        return nomem(ps, err);
    }
    for (int32_t i = 0; i < n; i++) outputs[i] = tr->read_start + i;
    pd_batch b = {.tokens = tr->tokens, .n_tokens = tr->n_tokens, .outputs = outputs, .n_outputs = n};
    pd_status rc = pd_context_kv_truncate(ctx, 0, err);
    if (!rc) rc = pd_eval(ctx, &b, err);
    free(outputs);
    if (rc) return rc;
    tr->forward_passes = 1;
    for (int32_t i = 0; i < n; i++) ps->rows[i] = pd_context_hidden(ctx, i);
    if (!(tr->emissions = malloc(sizeof *tr->emissions * (size_t)n * (size_t)ps->t->n_tags)) ||
        !(tr->tags = malloc(sizeof *tr->tags * (size_t)n)))
        return nomem(ps, err);
    if ((rc = read_bytes(ps, tok, err)) || (rc = emissions(ps, err))) return rc;
    pdi_tag_lattice lattice;
    rc = pdi_tag_lattice_init(&lattice, ps->t, tr->emissions, ps->boundary, n, err);
    if (!rc)
        rc = ps->t->posterior_spans ? pdi_tag_lattice_posterior_tags(&lattice, ps->t->span_threshold, tr->tags, err)
                                    : pdi_tagger_viterbi(ps->t, tr->emissions, ps->boundary, n, tr->tags, err);
    if (!rc && ps->names) { /* traced: each token's tag marginals */
        if ((tr->tag_marginals = malloc(sizeof *tr->tag_marginals * (size_t)n * (size_t)ps->t->n_tags)))
            pdi_tag_lattice_tag_marginals(&lattice, tr->tag_marginals);
        else rc = nomem(ps, err);
    }
    if (!rc) rc = find_spans(ps, &lattice, err);
    pdi_tag_lattice_free(&lattice);
    if (!rc) rc = span_chars(ps, err);
    if (rc) return rc;
    if (!(*recs = malloc(sizeof **recs * ((size_t)tr->n_spans + 1)))) return nomem(ps, err);
    if (!(rc = link_records(ps, *recs, n_recs, err))) rc = label_records(ps, *recs, *n_recs, err);
    return rc;
}

pd_status pdi_tag_run(const pdi_tag_runner *r, pd_context *ctx, const char *text, size_t len, bool names,
                      pd_tag_trace *tr, pdi_tag_record **recs, int32_t *n_recs, pd_error *err)
{
    const pd_head *head = pdi_tag_runner_head(r);
    pass ps = {.head = head, .t = head->tagger, .tr = tr, .features = head->tagger->features,
               .names = names};
    *recs = NULL;
    *n_recs = 0;
    pd_status rc = names && tag_names(ps.t, tr) ? nomem(&ps, err) : PD_OK;
    if (!rc && len > 0) { /* an empty text: nothing to decide, no model call */
        rc = pdi_tag_prompt(r, text, len, tr, err);
        if (!rc && tr->n_tokens > pd_context_n_ctx(ctx))
            rc = pdi_set_error(err, PD_ERR_CONTEXT, "%s: the prompt for a text of %zu bytes has %d tokens, the context %d",
                               head->source, len, tr->n_tokens, pd_context_n_ctx(ctx));
        if (!rc) rc = run(&ps, ctx, pd_model_tokenizer(pdi_tag_runner_model(r)), recs, n_recs, err);
    }
    free(ps.rows);
    free(ps.bytes);
    free(ps.offset);
    free(ps.boundary);
    free(ps.chars);
    pdi_feat_text_free(&ps.text);
    if (rc) {
        free(*recs);
        *recs = NULL;
        *n_recs = 0;
    }
    return rc;
}
