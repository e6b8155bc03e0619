/* server.c - the socket side of `pocketdec serve` (pocketdec_serve.h):
 * libmicrohttpd with a thread a connection; each request's body gathered,
 * checked by request.c, and queued as a job for the engine (engine.c); the
 * connection's thread waits for its job until the request's deadline (504
 * past it). A thread a connection rather than the library's thread pool: a
 * pool thread would wait for the engine with every other connection it polls
 * (measured: docs/reliability.md, "The server"); the threads are bounded by
 * --max-connections and --max-per-client, and slow clients shut by the guard
 * (guard.c). Counters for /metrics under one mutex; start, and the drain on
 * SIGTERM. */
#include "jobs.h"
#include "page.h"
#include "teach.h"

#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

bool serve_available(void)
{
    return true;
}

/* ------------------------------------------------------------ metrics */

static const char *const ep_names[N_EP] = {"/v1/extract", "/v1/score", "/v1/why", "/v1/info", "/health", "/metrics",
                                           "/v1/reload", "/v1/summarize", "/v1/reviews/read", "/v1/teach", "page",
                                           "other"};
static const int statuses[] = {200, 400, 401, 404, 405, 408, 409, 413, 422, 500, 503, 504};
_Static_assert(sizeof statuses / sizeof statuses[0] == N_STATUS, "a count a status");
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
_Static_assert(sizeof buckets / sizeof buckets[0] == N_BUCKET, "a count a bucket");

/* ------------------------------------------------------------ connections */

typedef struct request {
    int endpoint;
    bool post, started, too_big;
    char *body;
    size_t len, cap;
    double t0;
    const char *page, *page_type; /* EP_PAGE: the file's bytes (static) and type */
    int teach_op;                 /* EP_TEACH: which (teach.h) */
    size_t page_len;
} request;

void serve_count(server *s, int endpoint, int status, double dt)
{
    for (size_t k = 0; k < N_STATUS; k++)
        if (statuses[k] == status) s->requests[endpoint][k]++;
    size_t b = 0;
    while (b < N_BUCKET && dt > buckets[b]) b++;
    s->hist[b]++;
    s->latency_sum += dt;
    s->latency_count++;
}

/* The guard's record of connection c. */
static conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Connection c's request now in phase (mutex held). */
static void conn_phase(struct MHD_Connection *c, int phase, size_t bytes)
{
    conn *k = conn_of(c);
    if (!k) return;
    k->phase = phase;
    k->since = serve_now();
    k->bytes = bytes;
}

static bool wants_post(const request *r)
{
    if (r->endpoint == EP_TEACH) return serve_teach_wants_post(r->teach_op);
    return r->endpoint == EP_EXTRACT || r->endpoint == EP_SCORE || r->endpoint == EP_WHY || r->endpoint == EP_RELOAD ||
           r->endpoint == EP_SUMMARIZE || r->endpoint == EP_READ;
}

/* Queue the answer: body (malloc'ed, taken; NULL: an empty one). */
static enum MHD_Result answer(server *s, struct MHD_Connection *c, request *r, int status, char *body,
                              const char *ctype)
{
    if (!body && status != 204) body = strdup("");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(body ? strlen(body) : 0, body ? body : (void *)"", MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : "application/json");
    if (status == 503) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    pthread_mutex_lock(&s->mu);
    bool closing = s->draining;
    conn_phase(c, CONN_SENDING, body ? strlen(body) : 0);
    serve_count(s, r->endpoint, status, serve_now() - r->t0);
    pthread_mutex_unlock(&s->mu);
    if (closing) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close"); /* no request after it is lost */
    if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == 405) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, wants_post(r) ? "POST" : "GET");
    if (r->endpoint == EP_PAGE) { /* the page reaches this server only, and is not framed elsewhere */
        MHD_add_response_header(resp, "Content-Security-Policy", serve_page_csp);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result fail(server *s, struct MHD_Connection *c, request *r, int status, const char *fmt, ...)
{
    char msg[SERVE_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return answer(s, c, r, status, serve_error_body(msg), NULL);
}

static char *metrics_text(server *s)
{
    size_t cap = 16384, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
#define PUT(...)                                                                                  \
    do {                                                                                          \
        int n_ = snprintf(out + len, cap - len, __VA_ARGS__);                                     \
        if (n_ > 0) len += (size_t)n_ < cap - len ? (size_t)n_ : cap - len - 1;                   \
    } while (0)
    pthread_mutex_lock(&s->mu);
    PUT("# HELP pocketdec_requests_total Requests answered, by endpoint and HTTP status.\n"
        "# TYPE pocketdec_requests_total counter\n");
    for (int e = 0; e < N_EP; e++)
        for (size_t k = 0; k < N_STATUS; k++)
            if (s->requests[e][k])
                PUT("pocketdec_requests_total{endpoint=\"%s\",status=\"%d\"} %ld\n", ep_names[e], statuses[k],
                    s->requests[e][k]);
    PUT("# HELP pocketdec_request_duration_seconds Time from a request's arrival to its answer.\n"
        "# TYPE pocketdec_request_duration_seconds histogram\n");
    long cum = 0;
    for (size_t b = 0; b < N_BUCKET; b++) {
        cum += s->hist[b];
        PUT("pocketdec_request_duration_seconds_bucket{le=\"%g\"} %ld\n", buckets[b], cum);
    }
    cum += s->hist[N_BUCKET];
    PUT("pocketdec_request_duration_seconds_bucket{le=\"+Inf\"} %ld\n", cum);
    PUT("pocketdec_request_duration_seconds_sum %.6f\npocketdec_request_duration_seconds_count %ld\n", s->latency_sum,
        s->latency_count);
    PUT("# HELP pocketdec_reviews_extracted_total Texts extracted.\n# TYPE pocketdec_reviews_extracted_total counter\n"
        "pocketdec_reviews_extracted_total %ld\n",
        s->reviews);
    PUT("# HELP pocketdec_records_extracted_total Records extracted.\n# TYPE pocketdec_records_extracted_total counter\n"
        "pocketdec_records_extracted_total %ld\n",
        s->records);
    int32_t queued = 0;
    for (const job *j = s->head_job; j; j = j->next) queued++;
    PUT("# HELP pocketdec_queue_depth Requests with texts not yet started.\n# TYPE pocketdec_queue_depth gauge\n"
        "pocketdec_queue_depth %d\n",
        queued);
    PUT("# HELP pocketdec_slots_busy Texts in the engines' passes (and score requests running).\n"
        "# TYPE pocketdec_slots_busy gauge\npocketdec_slots_busy %d\n",
        s->in_flight);
    PUT("# HELP pocketdec_slots_busy_peak The most texts the engines have held at once.\n"
        "# TYPE pocketdec_slots_busy_peak gauge\npocketdec_slots_busy_peak %d\n",
        s->peak);
    PUT("# HELP pocketdec_slots Texts the engines hold at once (--parallel).\n# TYPE pocketdec_slots gauge\n"
        "pocketdec_slots %d\n",
        s->gen->slots);
    int engines = 0;
    for (const generation *g = s->gens; g; g = g->next) engines += g->running && !g->ended;
    PUT("# HELP pocketdec_engines Engine threads, each with its own pipeline (an old model's too, after a reload, "
        "until its requests are answered).\n# TYPE pocketdec_engines gauge\n"
        "pocketdec_engines %d\n",
        engines);
    PUT("# HELP pocketdec_model_generation The model serving: 1 the one started with, one more each reload.\n"
        "# TYPE pocketdec_model_generation gauge\npocketdec_model_generation %ld\n"
        "# HELP pocketdec_reloads_total Reloads (POST /v1/reload, SIGHUP), by result.\n"
        "# TYPE pocketdec_reloads_total counter\npocketdec_reloads_total{result=\"loaded\"} %ld\n"
        "pocketdec_reloads_total{result=\"refused\"} %ld\n",
        s->gen->id, s->reloads, s->reload_failures);
    PUT("# HELP pocketdec_connections Connections open.\n# TYPE pocketdec_connections gauge\n"
        "pocketdec_connections %ld\n# HELP pocketdec_connections_accepted_total Connections accepted.\n"
        "# TYPE pocketdec_connections_accepted_total counter\npocketdec_connections_accepted_total %ld\n"
        "# HELP pocketdec_connections_peak The most connections open at once.\n"
        "# TYPE pocketdec_connections_peak gauge\npocketdec_connections_peak %ld\n"
        "# HELP pocketdec_connections_dropped_total Connections shut for --idle-timeout or --min-rate.\n"
        "# TYPE pocketdec_connections_dropped_total counter\npocketdec_connections_dropped_total %ld\n"
        "# HELP pocketdec_connections_refused_total Connections answered 503 over --max-per-client.\n"
        "# TYPE pocketdec_connections_refused_total counter\npocketdec_connections_refused_total %ld\n",
        s->n_conns, s->accepted, s->peak_conns, s->dropped, s->refused);
    PUT("# HELP pocketdec_queue_capacity Requests that may wait (--queue).\n# TYPE pocketdec_queue_capacity gauge\n"
        "pocketdec_queue_capacity %d\n",
        s->cfg->queue);
    pthread_mutex_unlock(&s->mu);
#undef PUT
    return out;
}

/* Free slots: those no text holds, less one for each request partly
 * started (its next text takes the next slot that frees). Mutex held. */
static int32_t free_slots(const server *s)
{
    int32_t partial = 0;
    for (const job *j = s->head_job; j; j = j->next) partial += j->n_started > 0;
    int32_t n = s->gen->slots - s->in_flight - partial;
    return n > 0 ? n : 0;
}

/* Hand the parsed request to the engines and wait for its answer. */
static enum MHD_Result submit(server *s, struct MHD_Connection *c, request *r, job *j)
{
    j->deadline = r->t0 + s->cfg->timeout_s;
    j->refs = 2;
    pthread_cond_init(&j->done, NULL);
    if (j->endpoint == EP_EXTRACT) {
        j->tags = malloc(j->ex.n * sizeof *j->tags);
        j->outs = calloc(j->ex.n, sizeof *j->outs);
        j->errs = calloc(j->ex.n, sizeof *j->errs);
        if (!j->tags || !j->outs || !j->errs) {
            j->refs = 1;
            serve_job_unref(j);
            return fail(s, c, r, 500, "out of memory");
        }
        for (size_t i = 0; i < j->ex.n; i++) j->tags[i] = (text_tag){j, i};
    }
    pthread_mutex_lock(&s->mu);
    generation *g = s->gen; /* the model it runs on, whole, whatever reload comes */
    const char *refusal = j->endpoint == EP_SCORE && !g->can_score
                              ? (g->head ? "/v1/score needs a decision head (pointer or classifier); this server's head "
                                           "is a tagger head, which extracts records (use /v1/extract)"
                                         : "/v1/score needs a decision head (pointer or classifier); this server's "
                                           "model has no head")
                          : j->endpoint == EP_WHY && !g->why
                              ? (g->head ? "/v1/why explains a tagger head's pass; this server's head is a decision "
                                           "head (use /v1/score)"
                                         : "/v1/why explains a tagger head's pass; this server's model has no head")
                              : NULL;
    if (refusal) {
        j->refs = 1;
        serve_job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return fail(s, c, r, 422, "%s", refusal);
    }
    j->gen = g;
    g->refs++;
    /* full: more requests waiting than free slots will take, plus --queue */
    if (s->waiting - free_slots(s) >= s->cfg->queue) {
        j->refs = 1;
        serve_job_unref(j);
        pthread_mutex_unlock(&s->mu);
        return fail(s, c, r, 503, "the server is busy: %d requests are waiting (--queue); retry later", s->cfg->queue);
    }
    j->state = JOB_QUEUED;
    if (s->tail_job) s->tail_job->next = j;
    else s->head_job = j;
    s->tail_job = j;
    s->waiting++;
    pthread_cond_broadcast(&s->work);
    struct timespec until;
    double dl = j->deadline - serve_now() + 0.0, wall;
    clock_gettime(CLOCK_REALTIME, &until);
    wall = (double)until.tv_sec + (double)until.tv_nsec * 1e-9 + (dl > 0 ? dl : 0);
    until.tv_sec = (time_t)wall;
    until.tv_nsec = (long)((wall - (double)until.tv_sec) * 1e9);
    int rc = 0;
    while (j->state != JOB_DONE && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&j->done, &s->mu, &until);
    int status;
    char *body;
    if (j->state != JOB_DONE) {
        j->state = JOB_ABANDONED; /* the engines start no more of it, and drop its answer */
        status = 504;
        body = NULL;
    } else {
        status = j->status;
        body = j->body;
        j->body = NULL;
    }
    serve_job_unref(j);
    pthread_mutex_unlock(&s->mu);
    if (status == 504 && !body)
        return fail(s, c, r, 504, "no answer within %g s (--timeout)", s->cfg->timeout_s);
    return answer(s, c, r, status, body, NULL);
}

/* GET /v1/info: what this server runs, for the playground (and any client):
 * its head, the schema's fields, what it answers and its limits. */
static char *info_text(server *s)
{
    pthread_mutex_lock(&s->mu);
    char *text = serve_info_text(s, s->gen);
    pthread_mutex_unlock(&s->mu);
    return text;
}

/* POST /v1/reload: {"model": DIR} or no body (the path started with). */
static enum MHD_Result reload(server *s, struct MHD_Connection *c, request *r)
{
    char msg[SERVE_MESSAGE_SIZE], *path = NULL, *body = NULL;
    int st = serve_parse_reload(r->body, r->len, &path, msg);
    if (st) return fail(s, c, r, st, "%s", msg);
    st = serve_reload(s, path, &body);
    fprintf(stderr, "pocketdec serve: reload of %s: %s\n", path ? path : "the model started with",
            st == 200 ? "loaded" : body ? body : "failed");
    fflush(stderr);
    free(path);
    return answer(s, c, r, st, body, NULL);
}

/* POST /v1/summarize: a file's results summarized (serve_summarize), under
 * the rates of the bundle serving now (its calibration.json). */
static enum MHD_Result summarize(server *s, struct MHD_Connection *c, request *r)
{
    char msg[SERVE_MESSAGE_SIZE], *body = NULL;
    json_t *root;
    const json_t *reviews;
    int st = serve_parse_summarize(r->body, r->len, &root, &reviews, msg);
    if (st == 0) {
        pthread_mutex_lock(&s->mu);
        generation *g = s->gen; /* its rates, whole, whatever reload comes */
        g->refs++;
        pthread_mutex_unlock(&s->mu);
        st = serve_summarize(reviews, g->rates, g->rates_path, &body, msg);
        pthread_mutex_lock(&s->mu);
        serve_gen_unref(g);
        pthread_mutex_unlock(&s->mu);
    }
    json_decref(root);
    if (st != 200) return fail(s, c, r, st, "%s", msg);
    return answer(s, c, r, st, body, NULL);
}

/* POST /v1/reviews/read: the playground's file read by the library's reader
 * of reviews (serve_read_reviews), its options from the query. */
static enum MHD_Result read_reviews(server *s, struct MHD_Connection *c, request *r)
{
    const char *const keys[] = {"name", "format", "id_column", "text_column", "encoding"};
    const char *v[5];
    for (int k = 0; k < 5; k++) v[k] = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, keys[k]);
    serve_reviews_opts o = {v[0], v[1], v[2], v[3], v[4]};
    char *body = NULL;
    int st = serve_read_reviews(r->body, r->len, &o, &body);
    if (!body) return fail(s, c, r, 500, "out of memory");
    return answer(s, c, r, st, body, NULL);
}

static enum MHD_Result handle(server *s, struct MHD_Connection *c, request *r)
{
    char msg[SERVE_MESSAGE_SIZE];
    if (r->too_big)
        return fail(s, c, r, 413, "the body is larger than %zu bytes (--max-body)", s->cfg->max_body);
    if (r->endpoint == EP_HEALTH) return answer(s, c, r, 200, strdup("{\"status\":\"ok\"}"), NULL);
    if (r->endpoint == EP_METRICS) return answer(s, c, r, 200, metrics_text(s), "text/plain; version=0.0.4");
    if (r->endpoint == EP_INFO) return answer(s, c, r, 200, info_text(s), NULL);
    if (r->endpoint == EP_PAGE) return answer(s, c, r, 200, strndup(r->page, r->page_len), r->page_type);
    if (r->endpoint == EP_RELOAD) return reload(s, c, r);
    if (r->endpoint == EP_SUMMARIZE) return summarize(s, c, r);
    if (r->endpoint == EP_READ) return read_reviews(s, c, r);
    if (r->endpoint == EP_TEACH) {
        char *body = NULL;
        int st = serve_teach_handle(s->teach, r->teach_op, r->body, r->len, &body);
        return answer(s, c, r, st, body, NULL);
    }
    job *j = calloc(1, sizeof *j);
    if (!j) return fail(s, c, r, 500, "out of memory");
    j->endpoint = r->endpoint;
    int st = r->endpoint == EP_EXTRACT ? serve_parse_extract(r->body, r->len, (size_t)s->cfg->max_texts, &j->ex, msg)
             : r->endpoint == EP_WHY   ? serve_parse_why(r->body, r->len, &j->sc, msg)
                                       : serve_parse_score(r->body, r->len, (size_t)s->cfg->max_texts, &j->sc, msg);
    if (st) {
        free(j);
        return fail(s, c, r, st, "%s", msg);
    }
    return submit(s, c, r, j);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    server *s = cls;
    request *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        *con_cls = r;
        r->t0 = serve_now();
        pthread_mutex_lock(&s->mu);
        s->active++;
        conn *k = conn_of(c);
        if (k && k->fresh) k->fresh = false, s->fresh--;
        conn_phase(c, CONN_BODY, 0);
        pthread_mutex_unlock(&s->mu);
        r->endpoint = EP_OTHER;
        for (int e = 0; e < EP_PAGE; e++) /* /v1/teach/... by serve_teach_op, below */
            if (e != EP_TEACH && strcmp(url, ep_names[e]) == 0) r->endpoint = e;
        if (r->endpoint == EP_OTHER && serve_page_find(url, &r->page, &r->page_len, &r->page_type)) r->endpoint = EP_PAGE;
        if (r->endpoint == EP_OTHER && (r->teach_op = serve_teach_op(url)) >= 0) r->endpoint = EP_TEACH;
        r->post = strcmp(method, "POST") == 0;
        bool want_post = wants_post(r);
        /* refusals before the body is read */
        if (r->endpoint == EP_OTHER) return fail(s, c, r, 404, "no such endpoint: %s %s", method, url);
        if (r->endpoint == EP_TEACH && !s->teach)
            return fail(s, c, r, 404, "%s: this server was started without --teach REVIEWS --labels FILE", url);
        if (r->post != want_post && !(strcmp(method, "HEAD") == 0 && !want_post))
            return fail(s, c, r, 405, "%s takes %s, not %s", url, want_post ? "POST" : "GET", method);
        if (s->cfg->api_key && r->endpoint != EP_HEALTH && r->endpoint != EP_PAGE &&
            !serve_auth_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), s->cfg->api_key))
            return fail(s, c, r, 401, "missing or wrong API key: send Authorization: Bearer KEY");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->cfg->max_body)
            return fail(s, c, r, 413, "the body is larger than %zu bytes (--max-body)", s->cfg->max_body);
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->too_big || r->len + n > s->cfg->max_body) {
            r->too_big = true;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + n + 1) cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b) return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload, n);
        r->len += n;
        r->body[r->len] = 0;
        pthread_mutex_lock(&s->mu);
        conn *k = conn_of(c);
        if (k) k->bytes = r->len; /* for --min-rate */
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    if (r->started) return MHD_YES;
    r->started = true;
    pthread_mutex_lock(&s->mu);
    conn_phase(c, CONN_ANSWER, 0);
    pthread_mutex_unlock(&s->mu);
    return handle(s, c, r);
}

/* A connection opened or closed: listed for the guard (guard.c), and counted
 * as fresh until its first request. The library calls this on a close before
 * it closes the socket. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
    server *s = cls;
    pthread_mutex_lock(&s->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? serve_conn_attach(s, ci->connect_fd) : NULL;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        serve_conn_close(s, *socket_context);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->mu);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    server *s = cls;
    request *r = *con_cls;
    if (!r) return;
    free(r->body);
    free(r);
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    s->active--;
    conn_phase(c, CONN_HEADERS, 0); /* the answer is sent: the next request's headers */
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------ the server */

/* libmicrohttpd without a listening socket of its own: the acceptor
 * (listen.c) hands it the connections within the limits. Its own connection
 * limit stays above --max-connections: it closes a connection over it. */
static struct MHD_Daemon *start_daemon(server *s, char *msg, size_t msg_size)
{
    const serve_config *cfg = s->cfg;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_NO_LISTEN_SOCKET;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections * 2 + 16, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        cfg->max_header, MHD_OPTION_END);
    if (!d) snprintf(msg, msg_size, "cannot start the HTTP daemon (libmicrohttpd)");
    return d;
}

/* The signal loop: the guard's sweep and the reaping of old models every
 * tick, a reload on SIGHUP, until SIGTERM or SIGINT (returned). */
static int wait_for_signal(server *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    struct timespec tick = {0, 100 * 1000 * 1000};
    for (;;) {
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) return sig;
        if (sig == SIGHUP) {
            char *body = NULL;
            int st = serve_reload(s, NULL, &body);
            fprintf(stderr, "pocketdec serve: SIGHUP: reload %s: %s\n", st == 200 ? "loaded" : "refused",
                    body ? body : "out of memory");
            fflush(stderr);
            free(body);
        }
        pthread_mutex_lock(&s->mu);
        serve_sweep(s);
        pthread_mutex_unlock(&s->mu);
        serve_gen_reap(s);
    }
}

int serve_run(const pd_model *model, const pd_schema *schema, const pd_head *head, const serve_config *cfg, char *msg,
              size_t msg_size)
{
    void *first = cfg->loader ? cfg->loader->first : NULL;
    server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, msg_size, "out of memory");
        if (first) cfg->loader->close(cfg->loader->user, first);
        return 1;
    }
    s->schema = schema;
    s->cfg = cfg;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->conn_freed, NULL);
    s->listen_fd = -1;
    int rc = 0, port = 0;
    s->gen = s->gens = serve_gen_new(s, model, head, first, NULL, msg, msg_size);
    if (!s->gen) {
        if (first) cfg->loader->close(cfg->loader->user, first);
        rc = 1;
    } else {
        s->gen->id = 1;
    }
    /* the annotation queue ranks and proposes with the current model: it holds
     * a reference on its generation, which a reload moves (reload.c) */
    if (rc == 0 && cfg->teach) {
        if (!(s->teach = serve_teach_open(s->gen, schema, cfg, msg, msg_size))) rc = 1;
        else s->gen->refs++;
    }
    s->listen_fd = rc ? -1 : serve_listen_open(cfg, &port, msg, msg_size);
    struct MHD_Daemon *d = s->listen_fd < 0 ? NULL : start_daemon(s, msg, msg_size);
    s->daemon = d;
    if (d && serve_acceptor_start(s)) {
        snprintf(msg, msg_size, "cannot start the acceptor thread");
        MHD_stop_daemon(d);
        d = NULL;
    }
    if (d) {
        fprintf(stderr, "pocketdec serve: listening on http://%s%s%s:%d (1 engine x %d text%s in flight, queue %d)\n",
                strchr(cfg->host, ':') ? "[" : "", cfg->host, strchr(cfg->host, ':') ? "]" : "", port, s->gen->slots,
                s->gen->slots == 1 ? "" : "s", cfg->queue);
        fflush(stderr);
        int sig = wait_for_signal(s);
        serve_acceptor_stop(s); /* stop accepting; answer what was accepted */
        fprintf(stderr, "pocketdec serve: %s: no new connections; answering the requests accepted\n",
                sig == SIGTERM ? "SIGTERM" : "SIGINT");
        fflush(stderr);
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        for (;;) {
            pthread_mutex_lock(&s->mu);
            serve_sweep(s); /* a fresh connection: its request is on the way (--idle-timeout at most) */
            long active = s->active + s->fresh;
            pthread_mutex_unlock(&s->mu);
            if (active <= 0) break;
            nanosleep(&pause, NULL);
        }
        MHD_stop_daemon(d);
    } else {
        rc = 1;
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    serve_teach_free(s->teach); /* before the generation whose model it holds */
    while (s->gens) { /* every engine ends: no request is left (every connection waited for its job) */
        generation *g = s->gens;
        s->gens = g->next;
        serve_gen_free(s, g);
    }
    while (s->head_job) {
        job *j = s->head_job;
        s->head_job = j->next;
        serve_job_unref(j);
    }
    if (rc == 0) fprintf(stderr, "pocketdec serve: stopped; %ld requests answered\n", s->latency_count);
    if (s->listen_fd >= 0) close(s->listen_fd);
    serve_linger_sweep(s, true);
    pthread_cond_destroy(&s->conn_freed);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return rc;
}
