/* pipeline.c - the one entry point of extraction: a model, a schema and an
 * optional head, and the path they call for (tagging, generation, or
 * generation relabelled by a decision head) chosen once; the contexts, the
 * reviews in flight and the limits are the pipeline's own. The command,
 * Python and the bench call it and hold no policy of their own. */
#include "pocketdec_compose.h"
#include "heads.h"
#include "records.h"
#include "side_by_side.h"
#include "tag_extract.h"
#include "windows.h"

#include <stdlib.h>
#include <string.h>

/* Reviews in flight in generation, by default 2 a thread: enough rows a pass
 * to read the weights once for several reviews, few enough that the passes
 * stay short of the cores' arithmetic roof (2 threads: 4 in flight measured
 * best, with or without speculation; bench/run.sh --extract). */
#define PARALLEL_DEFAULT_MAX 16
/* Reviews gathered a context at a time by a caller of extract_many. */
#define READ_AHEAD_PER_SLOT 32
/* A tagger head's texts side by side by default: a context of one thread a
 * thread (2 x 1 read the 2,237 test reviews 1.45 times as fast as 1 x 2 on 2
 * cores: a pass of one short text keeps one core busy better than two). */
#define TAG_PARALLEL_DEFAULT(threads) ((threads) < PARALLEL_DEFAULT_MAX ? (threads) : PARALLEL_DEFAULT_MAX)

_Static_assert(PD_PIPELINE_MIN_WINDOW == PDI_MIN_WINDOW, "heads/ and compose/ agree on the fewest characters of a window");

struct pd_pipeline {
    const pd_schema *schema;
    const pd_head *head;
    pd_pipeline_path path;
    pd_extract_params extract;
    pd_tag_extractor *tx;  /* PD_PIPELINE_TAG */
    pd_extractor *ex;      /* generation */
    pd_decider *decider;   /* PD_PIPELINE_RELABEL */
    pd_extract_drafter *drafter; /* generation with a draft: extract.drafter */
    pd_context **slots;    /* [parallel]: slots[0] runs the passes with the threads, the others hold a cache each */
    const pd_model *model;
    pd_context *aside;     /* a stream's long texts, read in windows while others are in flight; made when needed */
    pd_context_params aside_params;
    int32_t parallel;
    float min_confidence;  /* records below it are dropped */
    int32_t max_chars;     /* longer texts are read in windows; 0: only those the context cannot hold */
};

pd_pipeline_params pd_pipeline_default_params(void)
{
    return (pd_pipeline_params){.extract = pd_extract_default_params(), .n_threads = 0,
                                .min_confidence = PD_PIPELINE_HEAD_DEFAULT, .max_chars = PD_PIPELINE_HEAD_DEFAULT};
}

void pd_pipeline_free(pd_pipeline *p)
{
    if (!p) return;
    for (int32_t k = 0; p->slots && k < p->parallel; k++) pd_context_free(p->slots[k]);
    free(p->slots);
    pd_context_free(p->aside);
    pd_decider_free(p->decider);
    pd_extract_drafter_free(p->drafter);
    pd_extractor_free(p->ex);
    pd_tag_extractor_free(p->tx);
    free(p);
}

pd_pipeline_path pd_pipeline_get_path(const pd_pipeline *p) { return p->path; }
int32_t pd_pipeline_parallel(const pd_pipeline *p) { return p->parallel; }
int32_t pd_pipeline_read_ahead(const pd_pipeline *p)
{
    return p->path == PD_PIPELINE_TAG && p->parallel == 1 ? 1 : READ_AHEAD_PER_SLOT * p->parallel;
}

/* The generation options a tagger head cannot honour, named; NULL when none is set. */
static const char *generation_option(const pd_pipeline_params *pp)
{
    pd_extract_params d = pd_extract_default_params();
    const pd_extract_params *e = &pp->extract;
    if (e->max_records != d.max_records) return "max_records";
    if (e->max_tokens != d.max_tokens) return "max_tokens";
    if (e->sampler.temperature != d.sampler.temperature) return "temperature";
    if (e->sampler.seed != d.sampler.seed) return "seed";
    if (e->speculate != d.speculate) return "speculate";
    if (e->drafter) return "drafter";
    if (pp->draft) return "draft";
    return NULL;
}

/* The path the head calls for, and whether the schema and params allow it. */
static pd_status choose_path(pd_pipeline *p, const pd_pipeline_params *pp, pd_error *err)
{
    const pd_head *h = p->head;
    const char *src = pdi_schema_source(p->schema);
    if (h && pd_head_get_type(h) == PD_HEAD_TAGGER) {
        const char *opt = generation_option(pp);
        if (opt)
            return pdi_set_error(err, PD_ERR_ARG, "%s does not apply to the tagger head %s (no generation)", opt,
                                 h->source);
        p->path = PD_PIPELINE_TAG;
        return PD_OK;
    }
    if (h && pd_schema_n_candidates(p->schema) == 0)
        return pdi_set_error(err, PD_ERR_ARG, "%s: a decision head (%s) needs a 'decide' section in the schema (or a tagger head)",
                             src, h->source);
    p->path = h ? PD_PIPELINE_RELABEL : PD_PIPELINE_GENERATE;
    return PD_OK;
}

/* The contexts: slots[0] with the threads, and for generation parallel - 1
 * more with a cache each (one thread, a batch of a draft's rows: the passes
 * run on slots[0]'s scratch and threads). */
static pd_status open_slots(pd_pipeline *p, const pd_model *model, const pd_pipeline_params *pp, pd_error *err)
{
    int32_t threads = pp->n_threads > 0 ? pp->n_threads : pd_cpu_count();
    bool tag = p->path == PD_PIPELINE_TAG;
    p->parallel = pp->parallel > 0                ? pp->parallel
                  : tag                           ? TAG_PARALLEL_DEFAULT(threads)
                  : 2 * threads < PARALLEL_DEFAULT_MAX ? 2 * threads
                                                       : PARALLEL_DEFAULT_MAX;
    if (p->parallel > PD_PIPELINE_PARALLEL_MAX)
        return pdi_set_error(err, PD_ERR_LIMIT, "parallel %d: at most %d reviews in flight", p->parallel,
                             PD_PIPELINE_PARALLEL_MAX);
    if (!(p->slots = calloc((size_t)p->parallel, sizeof *p->slots)))
        return pdi_set_error(err, PD_ERR_NOMEM, "out of memory for %d contexts", p->parallel);
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = pp->n_ctx;
    cp.max_bytes = pp->max_bytes;
    if (tag) { /* texts side by side: the threads split among the contexts, each a whole one */
        for (int32_t k = 0; k < p->parallel; k++) {
            cp.n_threads = threads / p->parallel + (k < threads % p->parallel);
            if (cp.n_threads < 1) cp.n_threads = 1;
            if (!(p->slots[k] = pd_context_new(model, &cp, err))) return err->code;
        }
        return PD_OK;
    }
    cp.n_threads = threads;
    if (!(p->slots[0] = pd_context_new(model, &cp, err))) return err->code;
    p->aside_params = cp;
    p->aside_params.n_ctx = pd_context_n_ctx(p->slots[0]);
    cp.n_threads = 1;
    cp.n_ctx = pd_context_n_ctx(p->slots[0]);
    cp.n_batch = 1 + PD_SPECULATE_MAX;
    for (int32_t k = 1; k < p->parallel; k++)
        if (!(p->slots[k] = pd_context_new(model, &cp, err))) return err->code;
    return PD_OK;
}

/* The extractors of the path; for generation the limits of max_records and
 * max_tokens checked once (an empty text runs no model). */
static pd_status bind(pd_pipeline *p, const pd_model *model, const pd_pipeline_params *pp, pd_error *err)
{
    if (p->path == PD_PIPELINE_TAG)
        return (p->tx = pd_tag_extractor_new(model, p->schema, p->head, err)) ? PD_OK : err->code;
    if (!(p->ex = pd_extractor_new(model, p->schema, err))) return err->code;
    if (pp->extract.drafter) /* one door: the pipeline makes and owns its drafter */
        return pdi_set_error(err, PD_ERR_ARG, "pipeline params: a draft enters by .draft (a pd_draft), not by "
                                              "extract.drafter (pd_extract's own)");
    if (pp->draft) {
        if (pd_draft_target(pp->draft) != model)
            return pdi_set_error(err, PD_ERR_ARG, "the draft was loaded for another model than the pipeline's");
        if (!(p->drafter = pd_extract_drafter_new(pp->draft, pp->draft_block, pp->n_threads, err))) return err->code;
        p->extract.drafter = p->drafter;
    }
    if (p->path == PD_PIPELINE_RELABEL) {
        pd_decider_params dp = pd_decider_default_params();
        dp.n_threads = pp->n_threads;
        dp.n_ctx = pp->n_ctx;
        if (!(p->decider = pd_decider_new(model, p->head, &dp, err))) return err->code;
    }
    pd_extraction *probe = NULL;
    pd_status rc = pd_extract(p->slots[0], p->ex, "", 0, &p->extract, &probe, err);
    pd_extraction_free(probe);
    return rc;
}

pd_status pd_pipeline_params_check(const pd_pipeline_params *pp, pd_error *err)
{
    if (!pp) return pdi_set_error(err, PD_ERR_ARG, "pipeline params: NULL");
    if (pp->n_threads < 0 || pp->n_ctx < 0 || pp->parallel < 0)
        return pdi_set_error(err, PD_ERR_ARG, "pipeline params: n_threads, n_ctx and parallel must not be negative");
    if (!(pp->min_confidence >= 0 && pp->min_confidence <= 1) && pp->min_confidence != PD_PIPELINE_HEAD_DEFAULT)
        return pdi_set_error(err, PD_ERR_ARG, "min_confidence %g is not within [0, 1]", (double)pp->min_confidence);
    if (pp->max_chars != 0 && pp->max_chars < PD_PIPELINE_MIN_WINDOW && pp->max_chars != PD_PIPELINE_HEAD_DEFAULT)
        return pdi_set_error(err, PD_ERR_ARG, "max_chars %d: 0, or at least %d characters", pp->max_chars,
                             PD_PIPELINE_MIN_WINDOW);
    return PD_OK;
}

pd_pipeline *pd_pipeline_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                             const pd_pipeline_params *params, pd_error *err)
{
    pd_pipeline_params pp = params ? *params : pd_pipeline_default_params();
    pd_error local;
    if (!err) err = &local; /* the callees' codes are read back */
    if (!model || !schema) {
        pdi_set_error(err, PD_ERR_ARG, "an extraction pipeline needs a model and a schema");
        return NULL;
    }
    if (pd_pipeline_params_check(&pp, err)) return NULL;
    pd_pipeline *p = calloc(1, sizeof *p);
    if (!p) {
        pdi_set_error(err, PD_ERR_NOMEM, "out of memory for an extraction pipeline");
        return NULL;
    }
    *p = (pd_pipeline){.schema = schema, .head = head, .model = model, .extract = pp.extract, .min_confidence = pp.min_confidence,
                       .max_chars = pp.max_chars};
    pd_status rc = choose_path(p, &pp, err);
    /* the head's floor and window are defaults; what the caller gives replaces them */
    bool tag = !rc && p->path == PD_PIPELINE_TAG;
    if (p->min_confidence == PD_PIPELINE_HEAD_DEFAULT) p->min_confidence = tag ? (float)head->tagger->min_confidence : 0;
    if (p->max_chars == PD_PIPELINE_HEAD_DEFAULT) p->max_chars = tag ? head->tagger->max_chars : 0;
    if (!rc) rc = open_slots(p, model, &pp, err);
    if (!rc) rc = bind(p, model, &pp, err);
    if (tag && !rc) pdi_tag_extractor_set_floor(p->tx, p->min_confidence);
    if (rc) {
        pd_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* Relabel x, extracted from text[0..len), with the decision head (the decider
 * reads a NUL-terminated text). */
static pd_status relabel(pd_pipeline *p, const char *text, size_t len, pd_extraction *x, pd_error *err)
{
    char *copy = malloc(len + 1);
    if (!copy) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory relabelling a text of %zu bytes", len);
    if (len) memcpy(copy, text, len);
    copy[len] = '\0';
    pd_status rc = pd_extraction_decide(p->decider, p->schema, copy, x, err);
    free(copy);
    return rc;
}

/* The path's records of one text (or window) read whole. */
static pd_status extract_whole(pd_pipeline *p, pd_context *ctx, const char *text, size_t len, pd_extraction **x,
                               pd_error *err)
{
    *x = NULL;
    pd_status rc = p->path == PD_PIPELINE_TAG ? pd_tag_extract(ctx, p->tx, text, len, x, err)
                                              : pd_extract(ctx, p->ex, text, len, &p->extract, x, err);
    if (!rc && p->decider) rc = relabel(p, text, len, *x, err);
    if (rc) {
        pd_extraction_free(*x);
        *x = NULL;
    }
    return rc;
}

/* Whether a read failed for want of context: the prompt, or generation's output, did not fit. */
static bool too_long(pd_status rc, const pd_extraction *x)
{
    return rc == PD_ERR_CONTEXT || (!rc && x && x->stop == PD_STOP_CONTEXT);
}

/* The text read in windows of at most max_chars characters into *out; *fits
 * false (nothing in *out) when a window was too long for the context. */
static pd_status read_windows(pd_pipeline *p, pd_context *ctx, const char *text, size_t len, int32_t max_chars,
                              pd_extraction **out, bool *fits, pd_error *err)
{
    pdi_window *w = NULL;
    int32_t n = 0;
    pd_extraction *x = pdi_extraction_new_empty(p->schema);
    pd_status rc = x ? pdi_windows_split(text, len, max_chars, &w, &n) : PD_ERR_NOMEM;
    if (rc) rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory reading a text of %zu bytes in windows", len);
    *fits = true;
    for (int32_t k = 0; !rc && *fits && k < n; k++) {
        pd_extraction *part = NULL;
        rc = extract_whole(p, ctx, text + w[k].begin, w[k].end - w[k].begin, &part, err);
        if (too_long(rc, part)) {
            *fits = false;
            rc = PD_OK;
        } else if (!rc && pdi_windows_merge(x, part, &w[k], k + 1 == n)) {
            rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory merging the records of %d windows", n);
        }
        pd_extraction_free(part);
    }
    free(w);
    if (!rc && *fits) {
        pdi_windows_order(x);
        if (pdi_schema_distinct_records(p->schema)) pdi_extraction_drop_repeats(x);
        *out = x;
        return PD_OK;
    }
    pd_extraction_free(x);
    return rc;
}

/* A text the context cannot hold (or longer than max_chars), in windows:
 * max_chars, or half the text and halves again until every window fits. */
static pd_status extract_windows(pd_pipeline *p, pd_context *ctx, const char *text, size_t len, pd_extraction **out,
                                 pd_error *err)
{
    int32_t chars = pdi_utf8_count(text, len);
    int32_t max_chars = p->max_chars > 0 && p->max_chars < chars ? p->max_chars : chars / 2;
    for (;;) {
        if (max_chars < PD_PIPELINE_MIN_WINDOW)
            return pdi_set_error(err, PD_ERR_CONTEXT,
                                 "a text of %d characters: windows of %d characters (the fewest) do not fit the context of %d tokens",
                                 chars, PD_PIPELINE_MIN_WINDOW, pd_context_n_ctx(ctx));
        bool fits;
        pd_status rc = read_windows(p, ctx, text, len, max_chars, out, &fits, err);
        if (rc || fits) return rc;
        max_chars /= 2;
    }
}

/* One text's records on ctx: read whole when it fits (and max_chars allows),
 * else in windows; then the floor. */
static pd_status extract_on(pd_pipeline *p, pd_context *ctx, const char *text, size_t len, pd_extraction **out,
                            pd_error *err)
{
    pd_status rc = PD_ERR_CONTEXT;
    *out = NULL;
    if (p->max_chars == 0 || pdi_utf8_count(text, len) <= p->max_chars) {
        rc = extract_whole(p, ctx, text, len, out, err);
        if (too_long(rc, *out)) {
            pd_extraction_free(*out);
            *out = NULL;
            rc = PD_ERR_CONTEXT;
        }
    }
    if (rc == PD_ERR_CONTEXT) rc = extract_windows(p, ctx, text, len, out, err);
    if (!rc) pdi_extraction_drop_below(*out, p->min_confidence);
    return rc;
}

pd_status pd_pipeline_extract(pd_pipeline *p, const char *text, size_t len, pd_extraction **out, pd_error *err)
{
    if (out) *out = NULL;
    if (!p || !out || (!text && len)) return pdi_set_error(err, PD_ERR_ARG, "no pipeline, text or output to extract with");
    return extract_on(p, p->slots[0], text, len, out, err);
}

/* ------------------------------------------------------------- streams */

/* A text of a stream in flight in joint passes: what its completion needs. */
typedef struct pending {
    void *tag;
    const char *text;
    size_t len;
} pending;

typedef struct stream {
    pd_pipeline *p;
    const pd_text_source *src;
} stream;

/* The context a stream reads a long text's windows on while others are in flight. */
static pd_context *aside_context(pd_pipeline *p, pd_error *err)
{
    if (!p->aside) p->aside = pd_context_new(p->model, &p->aside_params, err);
    return p->aside;
}

/* A text's records as the joint passes left them, completed: read in
 * windows when it did not fit the context, else relabelled; then the floor. */
static pd_status complete(pd_pipeline *p, const char *text, size_t len, pd_status rc, pd_extraction **x, pd_error *err)
{
    pd_context *ctx;
    if (too_long(rc, *x)) {
        pd_extraction_free(*x);
        *x = NULL;
        rc = (ctx = aside_context(p, err)) ? extract_windows(p, ctx, text, len, x, err) : err->code;
    } else if (!rc && p->decider) {
        rc = relabel(p, text, len, *x, err);
    }
    if (!rc) {
        pdi_extraction_drop_below(*x, p->min_confidence);
        return PD_OK;
    }
    pd_extraction_free(*x);
    *x = NULL;
    return rc;
}

static void deliver(const stream *s, void *tag, pd_status rc, pd_extraction *x, pd_error *e)
{
    if (!rc) *e = (pd_error){.code = PD_OK};
    s->src->done(s->src->user, tag, rc ? NULL : x, e);
}

/* The engine's source: the caller's texts, the long ones read at once in windows. */
static int stream_next(void *user, int wait, const char **text, size_t *len, void **tag)
{
    stream *s = user;
    for (;;) {
        const char *t = NULL;
        size_t n = 0;
        void *outer = NULL;
        int r = s->src->next(s->src->user, wait, &t, &n, &outer);
        if (r <= 0) return r;
        pd_error e = {0};
        pd_extraction *x = NULL;
        pd_status rc;
        if (!t && n) {
            rc = pdi_set_error(&e, PD_ERR_ARG, "no text to extract from (NULL with a length of %zu)", n);
        } else if (s->p->max_chars == 0 || pdi_utf8_count(t, n) <= s->p->max_chars) {
            pending *q = malloc(sizeof *q);
            if (q) {
                *q = (pending){outer, t, n};
                *text = t;
                *len = n;
                *tag = q;
                return 1;
            }
            rc = pdi_set_error(&e, PD_ERR_NOMEM, "out of memory for a text in flight");
        } else { /* a long text: read at once, in windows */
            rc = complete(s->p, t, n, PD_ERR_CONTEXT, &x, &e);
        }
        deliver(s, outer, rc, x, &e);
    }
}

static void stream_done(void *user, void *tag, pd_extraction *x, const pd_error *e)
{
    stream *s = user;
    pending q = *(pending *)tag;
    free(tag);
    pd_error own = *e;
    pd_status rc = complete(s->p, q.text, q.len, x ? PD_OK : e->code, &x, &own);
    deliver(s, q.tag, rc, x, &own);
}

/* Worker k's text, on the pipeline's context k (side_by_side.c). */
static pd_status extract_slot(void *user, int32_t k, const char *text, size_t len, pd_extraction **out, pd_error *err)
{
    pd_pipeline *p = user;
    return extract_on(p, p->slots[k], text, len, out, err);
}

pd_status pd_pipeline_extract_stream(pd_pipeline *p, const pd_text_source *src, pd_error *err)
{
    if (!p || !src || !src->next || !src->done)
        return pdi_set_error(err, PD_ERR_ARG, "no pipeline or text source to extract from");
    if (p->path != PD_PIPELINE_TAG && p->parallel > 1) {
        stream s = {p, src};
        pd_text_source inner = {stream_next, stream_done, &s};
        return pd_extract_stream(p->slots, p->parallel, p->ex, &p->extract, &inner, err);
    }
    if (p->parallel > 1 && pdi_side_by_side(p->parallel, extract_slot, p, src)) return PD_OK;
    for (;;) { /* one text at a time */
        const char *text = NULL;
        size_t len = 0;
        void *tag = NULL;
        int r = src->next(src->user, 1, &text, &len, &tag);
        if (r < 0) return PD_OK;
        if (r == 0) continue;
        pd_extraction *x = NULL;
        pd_error e = {0};
        pd_status rc = pd_pipeline_extract(p, text, len, &x, &e);
        if (!rc) e = (pd_error){.code = PD_OK};
        src->done(src->user, tag, x, &e);
    }
}

pd_status pd_pipeline_extract_many(pd_pipeline *p, const char *const *texts, const size_t *lens, int32_t n,
                                   pd_extraction **outs, pd_error *errs, pd_error *err)
{
    if (!p || n < 0 || (n && (!texts || !lens || !outs)))
        return pdi_set_error(err, PD_ERR_ARG, "no pipeline, texts, lengths or outputs to extract with");
    pdi_text_array a = pdi_text_array_init(texts, lens, n, outs, errs);
    pd_text_source src = pdi_text_array_source(&a);
    pd_status rc = pd_pipeline_extract_stream(p, &src, err);
    return rc ? rc : pdi_text_array_status(&a, "", err);
}
