/*
 * jobs.h - what the server's parts share: a request queued as a job, the
 * server's state under its one mutex, and an engine (engine.c takes the
 * jobs' texts into the pipeline; server.c the connections). Not installed.
 */
#ifndef PD_SERVE_JOBS_H
#define PD_SERVE_JOBS_H

#include "pocketdec_serve.h"
#include "request.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

/* The endpoints, by path (server.c ep_names); EP_TEACH: /v1/teach/... (teach.c);
 * EP_PAGE: the playground's files (page.c). */
enum { EP_EXTRACT, EP_SCORE, EP_WHY, EP_INFO, EP_HEALTH, EP_METRICS, EP_TEACH, EP_PAGE, EP_OTHER, N_EP };
#define N_STATUS 12 /* the statuses /metrics counts (server.c) */
#define N_BUCKET 13 /* the latency histogram's bounds (server.c) */

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_ABANDONED };

struct job;
typedef struct text_tag { /* one text of an extract job, as the engine's tag */
    struct job *job;
    size_t i;
} text_tag;

typedef struct job {
    int endpoint;
    serve_extract_req ex;
    serve_score_req sc;
    double deadline;
    int state;
    int refs;            /* the connection's, the queue's and each text's in flight */
    int status;          /* the answer */
    char *body;
    pthread_cond_t done;
    struct job *next;
    /* an extract job's texts: started, answered, and their results */
    size_t n_started, n_done;
    text_tag *tags;
    pd_extraction **outs;
    pd_error *errs;
} job;

/* A connection as the guard (guard.c) sees it: which part of a request it is
 * in, since when, and how many bytes of it have come or are to go. */
enum { CONN_HEADERS, CONN_BODY, CONN_ANSWER, CONN_SENDING };
typedef struct conn {
    int fd;
    int phase;
    bool fresh;     /* no request yet (the drain waits for it) */
    bool dropped;   /* the guard has shut it */
    double since;   /* the phase's start */
    size_t bytes;   /* CONN_BODY: the body's bytes so far; CONN_SENDING: the answer's */
    struct conn *prev, *next;
} conn;

typedef struct server {
    const pd_model *model;
    const pd_schema *schema;
    const pd_head *head;
    const serve_config *cfg;
    bool can_score;
    pd_tag_extractor *why;    /* a tagger head's: what /v1/why explains with (NULL: no tagger head) */
    struct teach *teach;      /* --teach: the annotation queue (teach.c; NULL: none) */

    pthread_mutex_t mu;
    pthread_cond_t work;
    job *head_job, *tail_job; /* requests with texts not yet started (a score request: not yet run) */
    int32_t waiting;          /* of those, the ones nothing of which has started */
    int32_t in_flight;        /* texts in the engines (and score requests running) */
    int32_t peak;             /* the most in_flight has been */
    int32_t slots;            /* texts the engines hold at once */
    bool stopping;
    pthread_t thread;         /* the engine's */
    bool engine_running;

    /* accepted requests not yet answered and sent, and connections accepted
     * whose first request has not come yet (shutdown waits for both to be 0:
     * a client that connected before the signal is answered too) */
    long active, fresh;
    conn *conns;   /* every open connection (guard.c) */
    long n_conns, peak_conns, accepted, dropped;
    bool draining; /* after the signal: answers close their connection */
    /* metrics */
    long requests[N_EP][N_STATUS];
    long hist[N_BUCKET + 1];
    double latency_sum;
    long latency_count, reviews, records;
} server;

/* The engine: a thread with the pipeline (and a decider for a decision head)
 * over the shared model, taking texts of any request as the pipeline frees a
 * slot for one (pd_pipeline_extract_stream: continuous batching). */
typedef struct engine {
    server *s;
    pd_pipeline *pipe;
    pd_decider *dec;
    pd_context *why_ctx;      /* /v1/why's context, made on its first request */
} engine;

/* Seconds on the monotonic clock. */
double serve_now(void);
/* Drop a reference to j, freed with the last (mutex held). */
void serve_job_unref(job *j);
/* o as compact JSON (malloc'ed; o's reference taken), NULL when out of memory. */
char *serve_dump(json_t *o);
/* Count an answer of status on endpoint, dt seconds after its request came
 * (mutex held; server.c). */
void serve_count(server *s, int endpoint, int status, double dt);
/* The guard (guard.c), mutex held: a connection opened (NULL when out of
 * memory) or closed; and the sweep, which shuts the connections too slow for
 * --idle-timeout and --min-rate (408 where nothing of an answer was sent). */
conn *serve_conn_open(server *s, int fd);
void serve_conn_close(server *s, conn *k);
void serve_sweep(server *s);

/* The engine's pipeline (and decider) made and its thread started: 0, or 1
 * with msg saying why (what was made is w's, freed by the caller). */
int serve_engine_start(server *s, engine *w, char *msg, size_t msg_size);

#endif
