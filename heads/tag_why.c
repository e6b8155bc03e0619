/* tag_why.c - which sparse features weighed most in a traced pass's
 * decisions (pd_tag_explain): the read copy's characters built again from
 * the trace's tokens, and each decision's features named (feature_sums.c's
 * pdi_features_*_named) and weighed as the pass added them. */
#include "heads.h"

#include <stdlib.h>
#include <string.h>

/* The character at byte b of the read copy (the next one when b falls
 * inside one, which the tag constraints rule out at span ends). */
static int32_t char_at(const pdi_feat_text *x, size_t b)
{
    int32_t c;
    while ((c = pdi_feat_text_char(x, b)) < 0 && b < x->len) b++;
    return c < 0 ? x->n : c;
}

pdi_feat_span pdi_tag_span_chars(const pdi_feat_text *x, const size_t *offset, const pd_tag_span *s)
{
    return (pdi_feat_span){char_at(x, offset[s->first]), char_at(x, offset[s->last + 1])};
}

/* The features of one decision as they are visited. */
typedef struct collect {
    pdi_why_feature *v;
    size_t n, cap;
    int32_t which;     /* the link candidate to keep (the others are skipped) */
    int32_t col, base; /* weight = row[col] - row[base] (base -1: row[col]) */
    bool oom;
} collect;

static void visit(void *arg, int32_t which, const char *name, const float *row)
{
    collect *c = arg;
    if (which != c->which || c->oom) return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        pdi_why_feature *more = realloc(c->v, sizeof *more * cap);
        if (!more) {
            c->oom = true;
            return;
        }
        c->v = more;
        c->cap = cap;
    }
    pdi_why_feature *f = &c->v[c->n++];
    f->weight = (double)row[c->col] - (c->base >= 0 ? (double)row[c->base] : 0.0);
    memcpy(f->name, name, strlen(name) + 1);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const pdi_why_feature *)a)->name, ((const pdi_why_feature *)b)->name);
}

static int by_weight(const void *a, const void *b)
{
    double x = ((const pdi_why_feature *)a)->weight, y = ((const pdi_why_feature *)b)->weight;
    x = x < 0 ? -x : x;
    y = y < 0 ? -y : y;
    if (x != y) return x > y ? -1 : 1;
    return by_name(a, b); /* a total order: the same text, the same table */
}

/* The collected features into w (equal names merged, heaviest kept); the
 * collection emptied for the next decision. */
static void settle(collect *c, pdi_why *w)
{
    size_t n = 0;
    qsort(c->v, c->n, sizeof *c->v, by_name);
    for (size_t i = 0; i < c->n; i++) {
        w->sparse += c->v[i].weight;
        if (n && !strcmp(c->v[n - 1].name, c->v[i].name)) c->v[n - 1].weight += c->v[i].weight;
        else c->v[n++] = c->v[i];
    }
    qsort(c->v, n, sizeof *c->v, by_weight);
    w->on = true;
    w->n_features = (int32_t)n;
    w->n_top = n < PDI_WHY_TOP ? (int32_t)n : PDI_WHY_TOP;
    memcpy(w->top, c->v, sizeof *c->v * (size_t)w->n_top);
    c->n = 0;
}

/* Span s: each token that starts a character, weighed for its tag against O. */
static void why_span(const pdi_feat_text *x, const size_t *offset, const uint8_t *starts, const pd_tag_trace *tr,
                     int32_t s, collect *c, pdi_why *w)
{
    const pd_tag_span *sp = &tr->spans[s];
    double *sums = malloc(sizeof *sums * (size_t)tr->n_tags);
    if (!sums) {
        c->oom = true;
        return;
    }
    c->which = 0;
    c->base = 0;
    for (int32_t i = sp->first; i <= sp->last; i++) {
        int32_t ch = pdi_feat_text_char(x, offset[i]);
        if (!starts[i] || offset[i + 1] == offset[i] || ch < 0 || ch >= x->n) continue;
        c->col = tr->tags[i];
        pdi_features_tag_named(x, ch, memset(sums, 0, sizeof *sums * (size_t)tr->n_tags), visit, c);
    }
    free(sums);
    settle(c, w);
}

/* Link l: the chosen candidate's features (its place among the `to` spans, or none). */
static void why_link(const pdi_tagger *t, const pdi_feat_text *x, const pdi_feat_span *chars, const pd_tag_trace *tr,
                     int32_t l, collect *c, pdi_why *w)
{
    const pd_tag_link *ln = &tr->links[l];
    int32_t n_to = 0, chosen = ln->n_scores - 1;
    pdi_feat_span *to = malloc(sizeof *to * ((size_t)tr->n_spans + 1));
    double *sums = calloc((size_t)ln->n_scores, sizeof *sums);
    for (int32_t s = 0; to && s < tr->n_spans; s++)
        if (tr->spans[s].field == t->link_to) {
            if (s == ln->choice) chosen = n_to;
            to[n_to++] = chars[s];
        }
    if (to && sums) {
        *c = (collect){c->v, c->n, c->cap, chosen, 0, -1, false};
        pdi_features_link_named(x, chars[ln->from], to, n_to, sums, visit, c);
        settle(c, w);
    } else c->oom = true;
    free(to);
    free(sums);
}

/* Label row r (candidate r): its argmax class's features. */
static void why_label(const pdi_tagger *t, const pdi_feat_text *x, const pdi_feat_span *chars, const pd_tag_trace *tr,
                      int32_t r, collect *c, pdi_why *w)
{
    pdi_feat_span spans[PD_TAGGER_MAX_SPANS];
    double *sums = calloc((size_t)tr->n_labels, sizeof *sums);
    if (!sums) {
        c->oom = true;
        return;
    }
    for (int32_t k = 0; k < t->n_spans; k++) {
        int32_t s = tr->candidates[r].spans[k];
        spans[k] = s >= 0 ? chars[s] : (pdi_feat_span){-1, -1};
    }
    *c = (collect){c->v, c->n, c->cap, 0, pdi_argmax(tr->label_logits + (size_t)r * (size_t)tr->n_labels, tr->n_labels),
                   -1, false};
    pdi_features_label_named(x, spans, sums, visit, c);
    settle(c, w);
    free(sums);
}

pd_status pdi_tag_why(const pdi_tag_runner *r, const pd_tag_trace *tr, pdi_why **why, pd_error *err)
{
    const pd_head *head = pdi_tag_runner_head(r);
    const pdi_tagger *t = head->tagger;
    const pdi_features *f = t->features;
    int32_t n_spans = tr->n_spans, n = tr->n_spans + tr->n_links + tr->n_label_rows;
    pdi_why *w = *why = calloc((size_t)n + 1, sizeof *w);
    char *bytes = NULL;
    size_t *offset = NULL;
    uint8_t *starts = NULL;
    pdi_feat_text x = {0};
    pdi_feat_span *chars = NULL;
    collect c = {0};
    pd_status rc = w ? PD_OK : PD_ERR_NOMEM;
    if (!rc && f && tr->n_read > 0) {
        const pd_tokenizer *tok = pd_model_tokenizer(pdi_tag_runner_model(r));
        rc = pdi_tag_read_copy(tok, tr->tokens + tr->read_start, tr->n_read, &bytes, &offset, &starts);
        if (!rc && (rc = pdi_feat_text_init(&x, f, bytes, offset[tr->n_read], err))) goto done;
        if (!rc && !(chars = malloc(sizeof *chars * ((size_t)n_spans + 1)))) rc = PD_ERR_NOMEM;
        for (int32_t s = 0; !rc && s < n_spans; s++) chars[s] = pdi_tag_span_chars(&x, offset, &tr->spans[s]);
        for (int32_t s = 0; !rc && !c.oom && pdi_features_on(f, PD_FEAT_TAG) && s < n_spans; s++)
            why_span(&x, offset, starts, tr, s, &c, &w[s]);
        for (int32_t l = 0; !rc && !c.oom && pdi_features_on(f, PD_FEAT_LINK) && l < tr->n_links; l++)
            why_link(t, &x, chars, tr, l, &c, &w[n_spans + l]);
        for (int32_t k = 0; !rc && !c.oom && pdi_features_on(f, PD_FEAT_LABEL) && k < tr->n_label_rows; k++)
            why_label(t, &x, chars, tr, k, &c, &w[n_spans + tr->n_links + k]);
        if (c.oom) rc = PD_ERR_NOMEM;
    }
    if (rc == PD_ERR_NOMEM) pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory naming a pass's features", head->source);
done:
    pdi_feat_text_free(&x);
    free(bytes);
    free(offset);
    free(starts);
    free(chars);
    free(c.v);
    if (rc) {
        free(*why);
        *why = NULL;
    }
    return rc;
}
