/* decider.c - decision prompts (sequential and parallel layouts), one forward
 * pass per decision, and the pointer / classifier / LM-verbalizer scores. */
#include "heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pd_decider {
    const pd_model *model;
    const pd_head *head;   /* NULL: LM verbalizer */
    pd_head_type type;
    pd_layout layout;
    int32_t markers[PD_MK_COUNT];
    pd_context *ctx;
    int32_t *doc;          /* the document's tokens (in ctx's cache from 0), NULL when none */
    int32_t doc_len;
    int64_t passes;
};

pd_decider_params pd_decider_default_params(void)
{
    pd_decider_params p = {.layout = PD_LAYOUT_DEFAULT, .n_threads = 0};
    return p;
}

pd_decider *pd_decider_new(const pd_model *model, const pd_head *head, const pd_decider_params *params,
                           pd_error *err)
{
    if (!model) {
        pdi_set_error(err, PD_ERR_ARG, "decider: no model");
        return NULL;
    }
    pd_decider_params p = params ? *params : pd_decider_default_params();
    if (p.layout < PD_LAYOUT_DEFAULT || p.layout > PD_LAYOUT_PARALLEL) {
        pdi_set_error(err, PD_ERR_ARG, "decider: unknown layout %d", (int)p.layout);
        return NULL;
    }
    if (head && head->type == PD_HEAD_TAGGER) {
        pdi_set_error(err, PD_ERR_ARG,
                      "%s: a tagger head extracts records (pd_tag_extractor_new); it does not score candidates",
                      head->source);
        return NULL;
    }
    if (head && head->hidden != pd_model_config(model)->hidden) {
        pdi_set_error(err, PD_ERR_SHAPE, "%s: the head is for hidden size %d, the model has %d", head->source,
                      head->hidden, pd_model_config(model)->hidden);
        return NULL;
    }
    pd_decider *d = calloc(1, sizeof *d);
    if (!d) {
        pdi_set_error(err, PD_ERR_NOMEM, "decider: out of memory");
        return NULL;
    }
    d->model = model;
    d->head = head;
    d->type = head ? head->type : PD_HEAD_VERBALIZER;
    /* The verbalizer's candidates never see each other unless asked to. */
    d->layout = p.layout != PD_LAYOUT_DEFAULT ? p.layout : head ? head->layout : PD_LAYOUT_PARALLEL;
    if (head)
        memcpy(d->markers, head->markers, sizeof d->markers);
    else if (pdi_markers_resolve(model, pdi_marker_default_names, d->markers, "pd_decider_new", err)) {
        free(d);
        return NULL;
    }
    pd_context_params cp = {.n_ctx = p.n_ctx, .n_threads = p.n_threads, .max_bytes = p.max_bytes, .kv_type = PD_KV_AUTO};
    if (!(d->ctx = pd_context_new(model, &cp, err))) {
        free(d);
        return NULL;
    }
    return d;
}

void pd_decider_free(pd_decider *d)
{
    if (!d) return;
    pd_context_free(d->ctx);
    free(d->doc);
    free(d);
}

int64_t pd_decider_forward_passes(const pd_decider *d) { return d->passes; }

/* -------------------------------------------------------------- prompts */

typedef struct ivec {
    int32_t *v;
    size_t n, cap;
} ivec;

static bool ivec_append(ivec *a, const int32_t *src, size_t n)
{
    int32_t *v = pdi_grow(a->v, &a->cap, a->n + n, sizeof *v);
    if (!v) return false;
    a->v = v;
    if (n) memcpy(a->v + a->n, src, n * sizeof *src);
    a->n += n;
    return true;
}

static bool ivec_push(ivec *a, int32_t x) { return ivec_append(a, &x, 1); }

static pd_status append_text(ivec *a, const pd_tokenizer *tok, const char *text, const char *what, pd_error *err)
{
    int32_t *ids = NULL;
    size_t n = 0;
    pd_status rc = pd_tokenizer_encode(tok, text, strlen(text), &ids, &n, err);
    if (rc) {
        pdi_error_prefix(err, "%s", what);
        return rc;
    }
    bool ok = ivec_append(a, ids, n);
    pd_free(ids);
    return ok ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", what);
}

/* The prompt of one decision: tokens (document included), and where the
 * candidate blocks and the query token are. */
typedef struct prompt {
    ivec tok;
    int32_t *pos;       /* [tok.n] */
    int32_t n_blocks;   /* candidate blocks in the prompt (0 for a classifier) */
    int32_t *block;     /* [n_blocks + 1] start of each block; block[n_blocks] = end of the last */
    int32_t doc_len;    /* tokens of the document part: prefix marker, text, middle marker */
    int32_t prefix_len; /* tokens before the first block */
    int32_t query;      /* index of the query token, -1 if none */
} prompt;

static void prompt_free(prompt *p)
{
    free(p->tok.v);
    free(p->pos);
    free(p->block);
}

static pd_status build_prompt(const pd_decider *d, const char *text, const char *question,
                              const char *const *cands, int32_t n_cands, prompt *p, pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(d->model);
    const int32_t *mk = d->markers;
    pd_status rc = PD_OK;
    memset(p, 0, sizeof *p);
    p->query = -1;
    if (text) {
        if (!ivec_push(&p->tok, mk[PD_MK_PREFIX])) goto nomem;
        if ((rc = append_text(&p->tok, tok, text, "text", err))) return rc;
        if (!ivec_push(&p->tok, mk[PD_MK_MIDDLE])) goto nomem;
    } else if (!ivec_append(&p->tok, d->doc, (size_t)d->doc_len)) {
        goto nomem;
    }
    p->doc_len = (int32_t)p->tok.n;
    if ((rc = append_text(&p->tok, tok, question, "question", err))) return rc;
    p->prefix_len = (int32_t)p->tok.n;
    p->n_blocks = d->type == PD_HEAD_CLASSIFIER ? 0 : n_cands;
    if (!(p->block = calloc((size_t)p->n_blocks + 1, sizeof *p->block))) goto nomem;
    for (int32_t i = 0; i < p->n_blocks; i++) {
        p->block[i] = (int32_t)p->tok.n;
        if (!ivec_push(&p->tok, mk[PD_MK_CAND_START])) goto nomem;
        size_t before = p->tok.n;
        if ((rc = append_text(&p->tok, tok, cands[i], "candidate", err))) return rc;
        if (d->type == PD_HEAD_VERBALIZER && p->tok.n == before)
            return pdi_set_error(err, PD_ERR_ARG, "decision: candidate %d is empty (nothing to score)", i);
        if (d->type == PD_HEAD_POINTER && !ivec_push(&p->tok, mk[PD_MK_CAND_END])) goto nomem;
    }
    p->block[p->n_blocks] = (int32_t)p->tok.n;
    if (d->type != PD_HEAD_VERBALIZER) {
        p->query = (int32_t)p->tok.n;
        if (!ivec_push(&p->tok, mk[PD_MK_SUFFIX])) goto nomem;
    }
    if (p->tok.n > INT32_MAX / 2) return pdi_set_error(err, PD_ERR_CONTEXT, "decision: the prompt is too long");
    if (!(p->pos = malloc(p->tok.n * sizeof *p->pos))) goto nomem;
    /* Parallel: every block starts right after the prefix; the query keeps
     * its index (prefix + all candidate tokens), which no order changes. */
    for (size_t i = 0; i < p->tok.n; i++) p->pos[i] = (int32_t)i;
    if (d->layout == PD_LAYOUT_PARALLEL)
        for (int32_t b = 0; b < p->n_blocks; b++)
            for (int32_t i = p->block[b]; i < p->block[b + 1]; i++) p->pos[i] = p->prefix_len + i - p->block[b];
    return PD_OK;
nomem:
    return pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory");
}

/* The tree mask of the batch that starts at prompt index b0: prefix and
 * query tokens are causal over everything, a block token sees the prefix and
 * its own block. NULL (causal) for the sequential layout. */
static uint8_t *parallel_mask(const prompt *p, int32_t b0, pd_error *err)
{
    size_t n = p->tok.n - (size_t)b0, bytes;
    int32_t *group = malloc(p->tok.n * sizeof *group);
    uint8_t *vis = pdi_mul_size(n, n, &bytes) ? calloc(bytes, 1) : NULL;
    if (!group || !vis) {
        free(group);
        free(vis);
        pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory for a mask of %zu tokens", n);
        return NULL;
    }
    for (size_t i = 0; i < p->tok.n; i++) group[i] = -1;
    for (int32_t b = 0; b < p->n_blocks; b++)
        for (int32_t i = p->block[b]; i < p->block[b + 1]; i++) group[i] = b;
    for (size_t r = 0; r < n; r++) {
        int32_t gi = group[(size_t)b0 + r];
        for (size_t c = 0; c <= r; c++) {
            int32_t gc = group[(size_t)b0 + c];
            vis[r * n + c] = gi < 0 || gc < 0 || gi == gc;
        }
    }
    free(group);
    return vis;
}

/* ------------------------------------------------------------- scoring */

static pd_status score_pointer(pd_decider *d, const prompt *p, pd_decision *dec, pd_error *err)
{
    const pd_head *h = d->head;
    double *q = malloc((size_t)h->head_dim * 2 * sizeof *q);
    if (!q) return pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory");
    double *k = q + h->head_dim;
    /* kept rows: the end marker of each candidate, then the query */
    pdi_head_affine(h->wq, h->bq, pd_context_hidden(d->ctx, p->n_blocks), h->head_dim, h->hidden, q);
    double scale = 1.0 / (sqrt((double)h->head_dim) * (double)h->temperature);
    for (int32_t i = 0; i < p->n_blocks; i++) {
        pdi_head_affine(h->wk, h->bk, pd_context_hidden(d->ctx, i), h->head_dim, h->hidden, k);
        double s = 0.0;
        for (int32_t j = 0; j < h->head_dim; j++) s += q[j] * k[j];
        dec->scores[i] = (float)(s * scale);
        dec->key_index[i] = p->block[i + 1] - 1;
    }
    free(q);
    return PD_OK;
}

static pd_status score_classifier(pd_decider *d, pd_decision *dec, pd_error *err)
{
    const pd_head *h = d->head;
    const float *x = pd_context_hidden(d->ctx, 0);
    (void)err;
    for (int32_t i = 0; i < dec->n_candidates; i++) {
        int32_t l = dec->label_index[i];
        double y = pdi_head_dot(h->w + (int64_t)l * h->hidden, x, h->hidden) + (double)h->b[l];
        dec->scores[i] = (float)(y / (double)h->temperature);
    }
    return PD_OK;
}

static double log_softmax_at(const float *logits, int32_t n, int32_t target)
{
    float m = logits[0];
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > m) m = logits[i];
    double s = 0.0;
    for (int32_t i = 0; i < n; i++) s += exp((double)logits[i] - (double)m);
    return (double)logits[target] - (double)m - log(s);
}

static void score_verbalizer(pd_decider *d, const prompt *p, pd_decision *dec)
{
    int32_t vocab = pd_model_config(d->model)->vocab, row = 0;
    for (int32_t i = 0; i < p->n_blocks; i++) {
        double sum = 0.0;
        int32_t n = 0;
        /* the row of each block token but the last predicts the next one */
        for (int32_t t = p->block[i]; t + 1 < p->block[i + 1]; t++, n++)
            sum += log_softmax_at(pd_context_logits(d->ctx, row++), vocab, p->tok.v[t + 1]);
        dec->scores[i] = (float)sum;
        dec->mean_logprob[i] = (float)(sum / n);
        dec->key_index[i] = p->block[i] + 1;
    }
}

static void softmax(pd_decision *dec)
{
    double m = -INFINITY, s = 0.0;
    for (int32_t i = 0; i < dec->n_candidates; i++)
        if (dec->scores[i] > m) m = dec->scores[i];
    for (int32_t i = 0; i < dec->n_candidates; i++) s += exp((double)dec->scores[i] - m);
    for (int32_t i = 0; i < dec->n_candidates; i++) dec->probs[i] = (float)(exp((double)dec->scores[i] - m) / s);
}

/* ------------------------------------------------------------ decisions */

void pd_decision_free(pd_decision *dec)
{
    if (!dec) return;
    free(dec->probs);
    free(dec->scores);
    free(dec->mean_logprob);
    free(dec->label_index);
    free(dec->tokens);
    free(dec->positions);
    free(dec->key_index);
    free(dec);
}

static pd_decision *decision_new(pd_head_type type, int32_t n)
{
    pd_decision *dec = calloc(1, sizeof *dec);
    if (!dec) return NULL;
    size_t fn = (size_t)n * sizeof(float), in = (size_t)n * sizeof(int32_t);
    dec->n_candidates = n;
    dec->probs = malloc(fn);
    dec->scores = malloc(fn);
    bool ok = dec->probs && dec->scores;
    if (type == PD_HEAD_VERBALIZER) ok = ok && (dec->mean_logprob = malloc(fn));
    if (type == PD_HEAD_CLASSIFIER) ok = ok && (dec->label_index = malloc(in));
    if (type != PD_HEAD_CLASSIFIER) ok = ok && (dec->key_index = malloc(in));
    if (!ok) {
        pd_decision_free(dec);
        return NULL;
    }
    return dec;
}

/* A classifier's candidates are some of its labels (all when none given). */
static pd_status map_labels(const pd_head *h, const char *const *cands, int32_t n, pd_decision *dec, pd_error *err)
{
    for (int32_t i = 0; i < dec->n_candidates; i++) {
        if (n == 0) {
            dec->label_index[i] = i;
            continue;
        }
        dec->label_index[i] = -1;
        for (int32_t l = 0; l < h->n_labels; l++)
            if (strcmp(cands[i], h->labels[l]) == 0) dec->label_index[i] = l;
        if (dec->label_index[i] < 0)
            return pdi_set_error(err, PD_ERR_ARG, "%s: \"%s\" is not one of the classifier's %d labels", h->source,
                                 cands[i], h->n_labels);
    }
    return PD_OK;
}

/* Batch rows (relative to b0) whose hidden states the scores need. */
static int32_t *kept_rows(const pd_decider *d, const prompt *p, int32_t b0, int32_t *n_out)
{
    int32_t n = d->type == PD_HEAD_VERBALIZER ? p->block[p->n_blocks] - p->prefix_len - p->n_blocks : p->n_blocks + 1;
    int32_t *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows), k = 0;
    if (!rows) return NULL;
    if (d->type == PD_HEAD_VERBALIZER) {
        for (int32_t i = 0; i < p->n_blocks; i++)
            for (int32_t t = p->block[i]; t + 1 < p->block[i + 1]; t++) rows[k++] = t - b0;
    } else {
        for (int32_t i = 0; i < p->n_blocks; i++) rows[k++] = p->block[i + 1] - 1 - b0;
        rows[k++] = p->query - b0;
    }
    *n_out = k;
    return rows;
}

static pd_status run_decision(pd_decider *d, const prompt *p, int32_t b0, pd_decision *dec, pd_error *err)
{
    /* before the mask (tokens squared bytes) is made */
    if (p->tok.n > (size_t)pd_context_n_ctx(d->ctx))
        return pdi_set_error(err, PD_ERR_CONTEXT, "decision: the prompt's %zu tokens do not fit the context of %d",
                             p->tok.n, pd_context_n_ctx(d->ctx));
    uint8_t *vis = NULL;
    int32_t n_rows = 0, *rows = kept_rows(d, p, b0, &n_rows);
    if (!rows) return pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory");
    pd_status rc = PD_OK;
    if (d->layout == PD_LAYOUT_PARALLEL && !(vis = parallel_mask(p, b0, err))) rc = err ? err->code : PD_ERR_NOMEM;
    if (!rc) rc = pd_context_kv_truncate(d->ctx, b0, err);
    if (!rc) {
        pd_batch b = {.tokens = p->tok.v + b0, .n_tokens = (int32_t)p->tok.n - b0, .positions = p->pos + b0,
                      .visible = vis, .outputs = rows, .n_outputs = n_rows,
                      .want_logits = d->type == PD_HEAD_VERBALIZER};
        d->passes++;
        dec->forward_passes++;
        rc = pd_eval(d->ctx, &b, err);
    }
    if (!rc && d->type == PD_HEAD_POINTER) rc = score_pointer(d, p, dec, err);
    if (!rc && d->type == PD_HEAD_CLASSIFIER) rc = score_classifier(d, dec, err);
    if (!rc && d->type == PD_HEAD_VERBALIZER) score_verbalizer(d, p, dec);
    free(vis);
    free(rows);
    return rc;
}

pd_status pd_decide(pd_decider *d, const char *text, const char *question, const char *const *candidates,
                    int32_t n_candidates, pd_decision **out, pd_error *err)
{
    if (out) *out = NULL;
    if (!d || !question || !out || n_candidates < 0 || (n_candidates > 0 && !candidates))
        return pdi_set_error(err, PD_ERR_ARG, "decision: missing decider, question, candidates or output");
    if (n_candidates == 0 && d->type != PD_HEAD_CLASSIFIER)
        return pdi_set_error(err, PD_ERR_ARG, "decision: no candidates to score");
    if (n_candidates > PD_MAX_CANDIDATES)
        return pdi_set_error(err, PD_ERR_LIMIT, "decision: %d candidates, more than the limit of %d (PD_MAX_CANDIDATES)",
                             n_candidates, PD_MAX_CANDIDATES);
    for (int32_t i = 0; i < n_candidates; i++)
        if (!candidates[i]) return pdi_set_error(err, PD_ERR_ARG, "decision: candidate %d is NULL", i);
    if (!text && !d->doc)
        return pdi_set_error(err, PD_ERR_ARG, "decision: no text and no document (see pd_decider_set_text)");
    if (text) pd_decider_set_text(d, NULL, NULL); /* the prompt overwrites the document's cache */
    int32_t n = d->type == PD_HEAD_CLASSIFIER && n_candidates == 0 ? d->head->n_labels : n_candidates;
    pd_decision *dec = decision_new(d->type, n);
    if (!dec) return pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory");
    prompt p;
    pd_status rc = PD_OK;
    if (d->type == PD_HEAD_CLASSIFIER) rc = map_labels(d->head, candidates, n_candidates, dec, err);
    if (!rc) rc = build_prompt(d, text, question, candidates, n_candidates, &p, err);
    else memset(&p, 0, sizeof p);
    if (!rc) rc = run_decision(d, &p, text ? 0 : d->doc_len, dec, err);
    /* the cache now starts with the text's document: keep it for text NULL
     * (failing here rather than leaving a later call without its document) */
    if (!rc && text && !(d->doc = malloc((size_t)p.doc_len * sizeof *d->doc)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "decision: out of memory");
    if (!rc) {
        softmax(dec);
        dec->prompt_tokens = (int32_t)p.tok.n;
        dec->query_index = p.query;
        if (text) {
            memcpy(d->doc, p.tok.v, (size_t)p.doc_len * sizeof *d->doc);
            d->doc_len = p.doc_len;
        }
        dec->tokens = p.tok.v;
        dec->positions = p.pos;
        p.tok.v = NULL;
        p.pos = NULL;
        *out = dec;
    } else {
        pd_decision_free(dec);
    }
    prompt_free(&p);
    return rc;
}

/* ------------------------------------------------------------ documents */

pd_status pd_decider_set_text(pd_decider *d, const char *text, pd_error *err)
{
    if (!d) return pdi_set_error(err, PD_ERR_ARG, "decider text: no decider");
    free(d->doc);
    d->doc = NULL;
    d->doc_len = 0;
    if (!text) return PD_OK;
    ivec v = {NULL, 0, 0};
    pd_status rc = ivec_push(&v, d->markers[PD_MK_PREFIX]) ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    if (!rc) rc = append_text(&v, pd_model_tokenizer(d->model), text, "text", err);
    if (!rc && !ivec_push(&v, d->markers[PD_MK_MIDDLE])) rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    if (!rc) rc = pd_context_kv_truncate(d->ctx, 0, err);
    if (!rc) {
        pd_batch b = {.tokens = v.v, .n_tokens = (int32_t)v.n};
        d->passes++;
        rc = pd_eval(d->ctx, &b, err);
    }
    if (rc) {
        free(v.v);
        return rc;
    }
    d->doc = v.v;
    d->doc_len = (int32_t)v.n;
    return PD_OK;
}

pd_decider *pd_decider_fork(const pd_decider *d, pd_error *err)
{
    if (!d) {
        pdi_set_error(err, PD_ERR_ARG, "forking a decider: no decider");
        return NULL;
    }
    pd_decider *f = malloc(sizeof *f);
    if (!f) {
        pdi_set_error(err, PD_ERR_NOMEM, "forking a decider: out of memory");
        return NULL;
    }
    *f = *d;
    f->passes = 0;
    f->doc = NULL;
    if (d->doc && !(f->doc = malloc((size_t)d->doc_len * sizeof *f->doc))) {
        free(f);
        pdi_set_error(err, PD_ERR_NOMEM, "forking a decider: out of memory");
        return NULL;
    }
    if (d->doc) memcpy(f->doc, d->doc, (size_t)d->doc_len * sizeof *f->doc);
    if (!(f->ctx = pd_context_fork(d->ctx, err))) {
        free(f->doc);
        free(f);
        return NULL;
    }
    return f;
}
