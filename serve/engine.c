/* engine.c - the jobs of `pocketdec serve` into the pipeline: a job's
 * answer when its last text is done, the queue the engine takes texts from
 * (the oldest job's next text whenever the pipeline has room: texts of every
 * client share its passes, pd_pipeline_extract_stream), score requests run
 * on the way. */
#include "jobs.h"
#include "pocketdec_reviews.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double serve_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void serve_job_unref(job *j)
{
    /* called with the server's mutex held */
    if (--j->refs > 0) return;
    for (size_t i = 0; j->outs && i < j->ex.n; i++) pd_extraction_free(j->outs[i]);
    free(j->outs);
    free(j->errs);
    free(j->tags);
    serve_extract_req_free(&j->ex);
    serve_score_req_free(&j->sc);
    free(j->body);
    if (j->gen) serve_gen_unref(j->gen);
    pthread_cond_destroy(&j->done);
    free(j);
}

char *serve_dump(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

/* The answer is ready: wake the connection (called with the mutex held). */
static void finish(job *j, int status, char *body)
{
    j->status = status;
    j->body = body;
    if (j->state != JOB_ABANDONED) j->state = JOB_DONE;
    pthread_cond_signal(&j->done);
}

/* Take j off the queue, prev the job before it (NULL: j is its head). Mutex held. */
static void pop(server *s, job *prev, job *j)
{
    if (prev) prev->next = j->next;
    else s->head_job = j->next;
    if (s->tail_job == j) s->tail_job = prev;
    j->next = NULL;
    if (j->n_started == 0) s->waiting--;
    serve_job_unref(j); /* the queue's */
}

/* ------------------------------------------------------------ engines */

/* A growing string; failed after an allocation failed. */
typedef struct buf {
    char *s;
    size_t len, cap;
    bool failed;
} buf;

static void put(buf *b, const char *t)
{
    size_t n = strlen(t);
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, t, n + 1);
    b->len += n;
}

/* ,"jsonl":"...","tianchi":"..." for text i under its id: the command's
 * lines in both formats (x NULL: a text that failed, written with no
 * records, as the command does), the row's other columns (extra, or NULL)
 * carried into the JSONL line as the command carries them. */
static void put_lines(buf *b, const server *s, const json_t *id, const char *extra, const pd_extraction *x)
{
    char num[24];
    const char *rid = json_is_string(id) ? json_string_value(id) : num;
    if (!json_is_string(id)) snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
    static const struct { const char *key; pd_record_format fmt; } kinds[] = {{"jsonl", PD_FORMAT_JSONL},
                                                                                {"tianchi", PD_FORMAT_TIANCHI}};
    for (size_t k = 0; k < 2; k++) {
        char *text = NULL, *quoted = NULL;
        size_t len = 0;
        pd_error err;
        bool ok = pd_extraction_format(s->schema, x, rid, kinds[k].fmt, &text, &len, &err) == PD_OK;
        if (ok && extra && kinds[k].fmt == PD_FORMAT_JSONL) {
            char *joined = pd_reviews_join_extra(text, len, extra, &len);
            pd_free(text);
            text = joined;
            ok = joined != NULL;
        }
        json_t *str = ok ? json_stringn(text, len) : NULL;
        quoted = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
        json_decref(str);
        pd_free(text);
        if (!quoted) {
            b->failed = true;
            return;
        }
        put(b, ",\"");
        put(b, kinds[k].key);
        put(b, "\":");
        put(b, quoted);
        free(quoted);
    }
}

/* An extract job's answer from its texts' results, spliced from each text's
 * records as extract writes them (with "ids", the command's lines too);
 * *n_records counts them. */
static int extract_answer(server *s, job *j, char **body, long *n_records)
{
    serve_extract_req *r = &j->ex;
    const char *fail = NULL;
    buf b = {0};
    put(&b, r->many ? "{\"results\":[" : "");
    for (size_t i = 0; i < r->n; i++) {
        char *recs = NULL;
        if (j->outs[i] && pd_extraction_json(s->schema, j->outs[i], -1, &recs, NULL, &j->errs[i]) == PD_OK) {
            *n_records += j->outs[i]->n_records;
            put(&b, i ? ",{\"records\":" : "{\"records\":");
            put(&b, recs);
            if (r->ids) put_lines(&b, s, json_array_get(r->ids, i), r->extras ? r->extras[i] : NULL, j->outs[i]);
            put(&b, "}");
        } else {
            char *e = serve_error_body(j->errs[i].message);
            fail = j->errs[i].message;
            put(&b, i ? "," : "");
            if (e && r->ids) e[strlen(e) - 1] = 0; /* the lines go inside the error's object */
            put(&b, e ? e : "{");
            if (r->ids) put_lines(&b, s, json_array_get(r->ids, i), r->extras ? r->extras[i] : NULL, NULL);
            put(&b, r->ids || !e ? "}" : "");
            free(e);
        }
        pd_free(recs);
    }
    put(&b, r->many ? "]}" : "");
    if (b.failed || (!r->many && fail)) {
        free(b.s);
        *body = serve_error_body(b.failed ? "out of memory" : fail);
        return 500;
    }
    *body = b.s;
    return 200;
}

/* A score request, run at once on the engine's decider (mutex not held). */
static void run_score(engine *w, job *j, int *status, char **body)
{
    serve_score_req *r = &j->sc;
    pd_decision *dec = NULL;
    pd_error err;
    if (pd_decide(w->dec, r->text, r->question, r->cands, (int32_t)r->n, &dec, &err)) {
        *status = err.code == PD_ERR_ARG || err.code == PD_ERR_LIMIT || err.code == PD_ERR_CONTEXT ? 422 : 500;
        *body = serve_error_body(err.message);
        return;
    }
    int32_t n_labels = 0;
    const pd_head *head = w->g->head;
    const char *const *labels = r->n == 0 ? pd_head_labels(head, &n_labels) : r->cands;
    json_t *cands = json_array();
    for (int32_t i = 0; cands && i < dec->n_candidates; i++) {
        const char *label = dec->label_index ? pd_head_labels(head, &n_labels)[dec->label_index[i]] : labels[i];
        json_array_append_new(cands, json_pack("{s:s,s:f,s:f}", "label", label, "prob", (double)dec->probs[i], "score",
                                               (double)dec->scores[i]));
    }
    *body = serve_dump(json_pack("{s:o*,s:i,s:i}", "candidates", cands, "forward_passes", dec->forward_passes,
                           "prompt_tokens", dec->prompt_tokens));
    *status = *body ? 200 : 500;
    if (!*body) *body = serve_error_body("out of memory");
    pd_decision_free(dec);
}

/* A why request, run at once on the engine's own context for it (mutex not
 * held): pd_tag_explain's document, the one `pocketdec tag --html` draws. */
static void run_why(engine *w, job *j, int *status, char **body)
{
    const server *s = w->s;
    pd_error err;
    if (!w->why_ctx) {
        pd_context_params cp = pd_context_default_params();
        cp.n_threads = s->cfg->pipeline.n_threads;
        if (s->cfg->pipeline.n_ctx) cp.n_ctx = s->cfg->pipeline.n_ctx;
        w->why_ctx = pd_context_new(w->g->model, &cp, &err);
    }
    char *json = NULL;
    if (!w->why_ctx || pd_tag_explain(w->why_ctx, w->g->why, j->sc.text, strlen(j->sc.text), &json, NULL, &err)) {
        *status = err.code == PD_ERR_NOMEM || err.code == PD_ERR_INTERNAL ? 500 : 422;
        *body = serve_error_body(err.message);
        return;
    }
    *status = 200;
    *body = strdup(json);
    pd_free(json);
    if (!*body) *status = 500;
}

/* The engine's source: the next text of the oldest request bound to its
 * generation (score and why requests are answered on the way); blocks only
 * when the engine holds no text. A retired generation's engine ends when
 * none is left. */
static int next_text(void *user, int wait, const char **text, size_t *len, void **tag)
{
    engine *w = user;
    server *s = w->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        job *prev = NULL, *j = s->head_job;
        while (j && j->gen != w->g) prev = j, j = j->next;
        if (!j) {
            bool end = s->stopping || w->g->retired;
            if (end || !wait) {
                pthread_mutex_unlock(&s->mu);
                return end ? -1 : 0;
            }
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        if (j->state == JOB_ABANDONED || serve_now() > j->deadline) { /* answered 504: start no more of it */
            pop(s, prev, j);
            continue;
        }
        if (j->endpoint == EP_SCORE || j->endpoint == EP_WHY) {
            j->refs++;
            pop(s, prev, j);
            j->state = JOB_RUNNING;
            s->in_flight++;
            pthread_mutex_unlock(&s->mu);
            int status;
            char *body;
            (j->endpoint == EP_SCORE ? run_score : run_why)(w, j, &status, &body);
            pthread_mutex_lock(&s->mu);
            s->in_flight--;
            finish(j, status, body);
            serve_job_unref(j);
            continue;
        }
        size_t i = j->n_started;
        if (i == 0) {
            s->waiting--;
            j->state = JOB_RUNNING;
        }
        j->n_started++;
        j->refs++; /* the text's */
        if (++s->in_flight > s->peak) s->peak = s->in_flight;
        if (j->n_started == j->ex.n) pop(s, prev, j); /* its last text */
        pthread_mutex_unlock(&s->mu);
        *text = j->ex.texts[i];
        *len = j->ex.lens[i];
        *tag = &j->tags[i];
        return 1;
    }
}

/* A text's result into its job; the job answered when it was its last. */
static void text_done(void *user, void *tag, pd_extraction *x, const pd_error *e)
{
    engine *w = user;
    server *s = w->s;
    text_tag *t = tag;
    job *j = t->job;
    pthread_mutex_lock(&s->mu);
    s->in_flight--;
    s->reviews++;
    bool answer = j->state != JOB_ABANDONED && ++j->n_done == j->ex.n;
    if (j->state == JOB_ABANDONED) pd_extraction_free(x);
    else j->outs[t->i] = x, j->errs[t->i] = *e;
    pthread_mutex_unlock(&s->mu);
    char *body = NULL;
    long n_records = 0;
    int status = answer ? extract_answer(s, j, &body, &n_records) : 0; /* only this engine touches outs now */
    pthread_mutex_lock(&s->mu);
    if (answer) {
        s->records += n_records;
        finish(j, status, body);
    }
    serve_job_unref(j);
    pthread_mutex_unlock(&s->mu);
}

static void *engine_main(void *arg)
{
    engine *w = arg;
    pd_text_source src = {next_text, text_done, w};
    pd_error err;
    if (pd_pipeline_extract_stream(w->pipe, &src, &err))
        fprintf(stderr, "pocketdec serve: an engine stopped: %s\n", err.message);
    pthread_mutex_lock(&w->s->mu);
    w->g->ended = true; /* its generation may be freed once retired (serve_gen_reap) */
    pthread_mutex_unlock(&w->s->mu);
    return NULL;
}

/* The engine: one pipeline keeps --parallel texts in flight, the pipeline's
 * way (generation: in joint passes, the weights read once a pass for all of
 * them; a tagger head: side by side, a context and a thread each). */
int serve_engine_start(server *s, generation *g, char *msg, size_t msg_size)
{
    const serve_config *cfg = s->cfg;
    engine *w = &g->w;
    pd_pipeline_params pp = cfg->pipeline;
    pp.parallel = cfg->parallel;
    pd_error err;
    w->s = s;
    w->g = g;
    if (!(w->pipe = pd_pipeline_new(g->model, s->schema, g->head, &pp, &err))) {
        snprintf(msg, msg_size, "%s", err.message);
        return 1;
    }
    g->slots = pd_pipeline_parallel(w->pipe);
    if (g->can_score) {
        pd_decider_params dp = pd_decider_default_params();
        dp.n_threads = pp.n_threads;
        if (!(w->dec = pd_decider_new(g->model, g->head, &dp, &err))) {
            snprintf(msg, msg_size, "%s", err.message);
            return 1;
        }
    }
    if (pthread_create(&g->thread, NULL, engine_main, w)) {
        snprintf(msg, msg_size, "cannot start an engine thread");
        return 1;
    }
    g->running = true;
    return 0;
}
