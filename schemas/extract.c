/* extract.c - generation under the schema's token mask, with the sparse LM
 * head when the allowed set is small, and the record writers. */
#include "schema_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pd_extractor {
    const pd_model *model;
    const pd_schema *schema;
    pd_trie vocab;   /* bytes of every ordinary token the model can emit */
    int32_t n_vocab; /* ids below this are rows of the LM head */
    int32_t end_id;
};

pd_extractor *pd_extractor_new(const pd_model *model, const pd_schema *schema, pd_error *err)
{
    if (!model || !schema) {
        pd_set_error(err, PD_ERR_ARG, "pd_extractor_new: no model or no schema");
        return NULL;
    }
    const pd_tokenizer *tok = pd_model_tokenizer(model);
    if (!tok) {
        pd_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to extract with", schema->path);
        return NULL;
    }
    pd_extractor *ex = calloc(1, sizeof *ex);
    if (!ex) {
        pd_set_error(err, PD_ERR_NOMEM, "pd_extractor_new: out of memory");
        return NULL;
    }
    ex->model = model;
    ex->schema = schema;
    int32_t nt = pd_tokenizer_n_vocab(tok), nm = pd_model_config(model)->vocab;
    ex->n_vocab = nt < nm ? nt : nm;
    ex->end_id = pd_tokenizer_token_id(tok, schema->end_token);
    if (ex->end_id < 0 || ex->end_id >= ex->n_vocab) {
        pd_set_error(err, PD_ERR_FORMAT, "%s: the end token '%s' is not in the model's vocabulary", schema->path,
                     schema->end_token);
        goto fail;
    }
    if (pd_trie_init(&ex->vocab, ex->n_vocab, err)) goto fail;
    for (int32_t id = 0; id < ex->n_vocab; id++) {
        size_t len = 0;
        const char *b = pd_tokenizer_token_bytes(tok, id, &len);
        /* special tokens are control, not text: only the end token may appear */
        if (!b || len == 0 || pd_tokenizer_is_special(tok, id)) continue;
        if (pd_trie_add(&ex->vocab, id, (const uint8_t *)b, len, err)) goto fail;
    }
    return ex;
fail:
    pd_extractor_free(ex);
    return NULL;
}

void pd_extractor_free(pd_extractor *ex)
{
    if (!ex) return;
    pd_trie_free(&ex->vocab);
    free(ex);
}

pd_extract_params pd_extract_default_params(void)
{
    pd_extract_params p = {pd_sampler_default_params(), 0, 0, -1};
    return p;
}

void pd_extraction_free(pd_extraction *x)
{
    if (!x) return;
    for (int32_t r = 0; r < x->n_records; r++) {
        for (int32_t f = 0; f < x->n_fields; f++) free(x->records[r].values[f]);
        free(x->records[r].values);
    }
    free(x->records);
    free(x->mask_us);
    free(x);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Split the bytes of complete records into values (the grammar guarantees the
 * separators are where the schema puts them). */
static pd_status add_records(pd_extraction *x, const pd_schema *sc, const char *out, size_t len)
{
    size_t sep_len = strlen(sc->separator), end_len = strlen(sc->record_end);
    const char *p = out, *stop = out + len;
    char **values = calloc((size_t)sc->n_fields, sizeof *values);
    pd_status rc = values ? PD_OK : PD_ERR_NOMEM;
    while (rc == PD_OK && p < stop) {
        for (int32_t f = 0; rc == PD_OK && f < sc->n_fields; f++) {
            const char *term = f + 1 < sc->n_fields ? sc->separator : sc->record_end;
            const char *e = memchr(p, term[0], (size_t)(stop - p));
            if (!e) rc = PD_ERR_INTERNAL;
            else if (!(values[f] = strndup(p, (size_t)(e - p)))) rc = PD_ERR_NOMEM;
            else p = e + (f + 1 < sc->n_fields ? sep_len : end_len);
        }
        if (rc == PD_OK) rc = pd_extraction_append(x, (const char *const *)values);
        for (int32_t f = 0; f < sc->n_fields; f++) {
            free(values[f]);
            values[f] = NULL;
        }
    }
    free(values);
    return rc;
}

/* The decoding loop's working set. */
typedef struct decoder {
    pd_context *ctx;
    const pd_extractor *ex;
    pd_extract_params p;
    pd_constraint con;
    int32_t *allowed; /* [n_vocab + 1]: the step's candidates (the end token last) */
    float *cand;      /* their logits */
    uint64_t rng;
} decoder;

/* Candidates for the next token in state s: allowed text tokens, then the end
 * token when the output may end here. */
static int32_t candidates(decoder *d, const pd_cstate *s, double *us)
{
    double t0 = now_us();
    int32_t n = pd_constraint_allowed(&d->con, s, &d->ex->vocab, d->allowed);
    if (pd_cstate_can_end(&d->con, s)) d->allowed[n++] = d->ex->end_id;
    *us = now_us() - t0;
    return n;
}

static bool use_sparse(const decoder *d, int32_t n)
{
    if (d->p.sparse_head >= 0) return d->p.sparse_head == 1;
    return (int64_t)n * 8 < d->ex->n_vocab; /* the head's cost is linear in the rows it reads */
}

/* Evaluate tokens; keep full logits only when the next step needs them. */
static pd_status eval(decoder *d, const int32_t *ids, int32_t n, bool full, pd_error *err)
{
    pd_batch b = {ids, n, NULL, NULL, NULL, 0, full};
    return pd_eval(d->ctx, &b, err);
}

/* Pick among d->allowed[0..n): the same logits reach pd_sample whichever head
 * computed them, so sparse and full heads choose the same token. */
static pd_status choose(decoder *d, int32_t n, bool sparse, int32_t *id, pd_error *err)
{
    if (n == 1) {
        *id = d->allowed[0];
        return PD_OK;
    }
    if (sparse) {
        pd_status rc = pd_context_logits_rows(d->ctx, 0, d->allowed, n, d->cand, err);
        if (rc) return rc;
    } else {
        const float *logits = pd_context_logits(d->ctx, 0);
        for (int32_t k = 0; k < n; k++) d->cand[k] = logits[d->allowed[k]];
    }
    int32_t k = pd_sample(d->cand, n, NULL, &d->p.sampler, &d->rng);
    if (k < 0) return pd_set_error(err, PD_ERR_INTERNAL, "pd_extract: no token to sample");
    *id = d->allowed[k];
    return PD_OK;
}

static pd_status prompt_ids(const pd_extractor *ex, const char *text, size_t len, int32_t **ids, size_t *n,
                            pd_error *err)
{
    const char *tpl = ex->schema->prompt, *at = strstr(tpl, "{text}");
    size_t pre = (size_t)(at - tpl), post = strlen(at + 6);
    char *full = malloc(pre + len + post + 1);
    if (!full) return pd_set_error(err, PD_ERR_NOMEM, "pd_extract: out of memory");
    memcpy(full, tpl, pre);
    memcpy(full + pre, text, len);
    memcpy(full + pre + len, at + 6, post + 1);
    pd_status rc = pd_tokenizer_encode(pd_model_tokenizer(ex->model), full, pre + len + post, ids, n, err);
    free(full);
    return rc;
}

/* Whether the record in buf[start, end) equals one in buf[0, start) (records
 * end with record_end, whose first byte no value holds). */
static bool repeats(const pd_schema *sc, const uint8_t *buf, size_t start, size_t end)
{
    size_t end_len = strlen(sc->record_end);
    for (size_t q = 0; q < start;) {
        const uint8_t *e = memchr(buf + q, (uint8_t)sc->record_end[0], start - q);
        size_t next = e ? (size_t)(e - buf) + end_len : start;
        if (next - q == end - start && !memcmp(buf + q, buf + start, end - start)) return true;
        q = next;
    }
    return false;
}

/* A record just ended at s->pos: keep it (true), or, under distinct_records,
 * end the output before it when it repeats an earlier one. */
static bool keep_record(decoder *d, pd_extraction *x, const pd_cstate *s, size_t *complete)
{
    if (d->ex->schema->distinct_records && repeats(d->ex->schema, d->con.buf, *complete, (size_t)s->pos)) {
        x->stop = PD_STOP_REPEAT;
        return false;
    }
    *complete = (size_t)s->pos;
    return true;
}

static pd_status run(decoder *d, pd_extraction *x, const int32_t *ids, int32_t n_ids, size_t *complete,
                     pd_error *err)
{
    pd_cstate s = pd_cstate_initial();
    int32_t n = candidates(d, &s, &x->mask_us[0]);
    bool sparse = use_sparse(d, n);
    pd_status rc = eval(d, ids, n_ids, !sparse, err);
    x->stop = PD_STOP_END;
    while (!rc) {
        int32_t id;
        if (n == 0 || (n == 1 && d->allowed[0] == d->ex->end_id)) break; /* nothing but the end */
        if ((rc = choose(d, n, sparse, &id, err))) break;
        x->n_sparse += sparse && n > 1;
        if (id == d->ex->end_id) break;
        size_t blen = 0;
        const char *bytes = pd_tokenizer_token_bytes(pd_model_tokenizer(d->ex->model), id, &blen);
        bool repeated = false;
        for (size_t i = 0; i < blen && !repeated; i++) {
            if (!pd_cstate_step(&d->con, &s, (uint8_t)bytes[i]))
                return pd_set_error(err, PD_ERR_INTERNAL, "pd_extract: token %d left the schema", id);
            /* a token may end one record and start the next: check at each boundary */
            if ((s.phase == PD_PH_START && s.field == 0) || s.phase == PD_PH_DONE)
                repeated = !keep_record(d, x, &s, complete);
        }
        x->n_tokens++;
        if (repeated) break;
        if (s.phase == PD_PH_DONE) {
            x->stop = PD_STOP_RECORDS;
            break;
        }
        if (x->n_tokens >= d->p.max_tokens) {
            x->stop = PD_STOP_TOKENS;
            break;
        }
        if (pd_context_kv_len(d->ctx) >= pd_context_n_ctx(d->ctx)) {
            x->stop = PD_STOP_CONTEXT;
            break;
        }
        n = candidates(d, &s, &x->mask_us[x->n_tokens]);
        sparse = use_sparse(d, n);
        rc = eval(d, &id, 1, !sparse, err);
    }
    return rc;
}

pd_status pd_extract(pd_context *ctx, const pd_extractor *ex, const char *text, size_t len,
                     const pd_extract_params *params, pd_extraction **out, pd_error *err)
{
    if (out) *out = NULL;
    if (!ctx || !ex || (!text && len) || !out) return pd_set_error(err, PD_ERR_ARG, "pd_extract: NULL argument");
    const pd_schema *sc = ex->schema;
    decoder d = {ctx, ex, params ? *params : pd_extract_default_params(), {0}, NULL, NULL, 0};
    /* checked before anything is allocated or evaluated (an empty text too) */
    if (d.p.max_records < 0 || d.p.max_tokens < 0)
        return pd_set_error(err, PD_ERR_ARG, "pd_extract: max_records %d or max_tokens %d is negative", d.p.max_records,
                            d.p.max_tokens);
    if (d.p.max_records > sc->max_records)
        return pd_set_error(err, PD_ERR_LIMIT, "%s: max_records %d is over the schema's limit of %d (limits.max_records)",
                            sc->path, d.p.max_records, sc->max_records);
    if (d.p.max_tokens > sc->max_tokens)
        return pd_set_error(err, PD_ERR_LIMIT, "%s: max_tokens %d is over the schema's limit of %d (limits.max_tokens)",
                            sc->path, d.p.max_tokens, sc->max_tokens);
    if (d.p.max_records == 0) d.p.max_records = sc->max_records;
    if (d.p.max_tokens == 0) d.p.max_tokens = sc->max_tokens;
    d.rng = d.p.sampler.seed;
    pd_extraction *x = calloc(1, sizeof *x);
    if (!x) return pd_set_error(err, PD_ERR_NOMEM, "pd_extract: out of memory");
    x->n_fields = sc->n_fields;
    int32_t *ids = NULL;
    size_t n_ids = 0, complete = 0;
    pd_status rc = PD_OK;
    if (len == 0) goto done; /* nothing to extract from: no records, no model call */
    if ((rc = prompt_ids(ex, text, len, &ids, &n_ids, err))) goto done;
    if (n_ids >= (size_t)pd_context_n_ctx(ctx)) {
        rc = pd_set_error(err, PD_ERR_CONTEXT, "%s: the prompt for a text of %zu bytes has %zu tokens, the context %d",
                          sc->path, len, n_ids, pd_context_n_ctx(ctx));
        goto done;
    }
    d.allowed = malloc(sizeof(int32_t) * ((size_t)ex->n_vocab + 1));
    d.cand = malloc(sizeof(float) * ((size_t)ex->n_vocab + 1));
    x->mask_us = calloc((size_t)d.p.max_tokens + 1, sizeof *x->mask_us);
    if (!d.allowed || !d.cand || !x->mask_us) {
        rc = pd_set_error(err, PD_ERR_NOMEM, "pd_extract: out of memory");
        goto done;
    }
    if ((rc = pd_constraint_init(&d.con, sc, text, len, d.p.max_records, err))) goto done;
    x->n_prompt_tokens = (int32_t)n_ids;
    if (!(rc = pd_context_kv_truncate(ctx, 0, err)) && !(rc = run(&d, x, ids, (int32_t)n_ids, &complete, err)) &&
        add_records(x, sc, (const char *)d.con.buf, complete))
        rc = pd_set_error(err, PD_ERR_NOMEM, "pd_extract: out of memory");
done:
    pd_constraint_free(&d.con);
    free(ids);
    free(d.allowed);
    free(d.cand);
    if (rc) {
        pd_extraction_free(x);
        return rc;
    }
    *out = x;
    return PD_OK;
}
