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
#include <microhttpd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdbool.h>

/* The endpoints, by path (server.c ep_names); EP_TEACH: /v1/teach/... (teach.c);
 * EP_PAGE: the playground's files (page.c). */
enum { EP_EXTRACT, EP_SCORE, EP_WHY, EP_INFO, EP_HEALTH, EP_METRICS, EP_RELOAD, EP_SUMMARIZE, EP_READ, EP_TEACH, EP_PAGE, EP_OTHER,
       N_EP };
#define N_STATUS 12 /* the statuses /metrics counts (server.c) */
#define N_BUCKET 13 /* the latency histogram's bounds (server.c) */

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_ABANDONED };

struct job;
typedef struct text_tag { /* one text of an extract job, as the engine's tag */
    struct job *job;
    size_t i;
} text_tag;

struct generation;
typedef struct job {
    int endpoint;
    struct generation *gen; /* the model it runs on, bound when queued (a reference) */
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
    bool attached;  /* the library has taken it (its notice came: on_connection) */
    struct sockaddr_storage addr; /* its client, for --max-per-client */
    double since;   /* the phase's start */
    size_t bytes;   /* CONN_BODY: the body's bytes so far; CONN_SENDING: the answer's */
    struct conn *prev, *next;
} conn;

/* A connection refused over --max-per-client, held a second, answered 503,
 * and kept until its client has read it (listen.c). */
typedef struct lingering {
    int fd;
    double since;  /* its refusal; once answered, its answer */
    bool answered;
} lingering;
#define SERVE_MAX_LINGERING 1024 /* past it a refused connection is closed at once */

typedef struct server {
    const pd_schema *schema;
    const serve_config *cfg;
    struct generation *gen;   /* the model new requests run on (reload.c) */
    struct generation *gens;  /* every generation not yet freed: the current, and those retired
                                 whose requests are not all answered */
    bool reloading;           /* a reload is loading: another is refused (409) */
    long reloads, reload_failures;
    struct teach *teach;      /* --teach: the annotation queue (teach.c; NULL: none) */

    pthread_mutex_t mu;
    pthread_cond_t work;
    job *head_job, *tail_job; /* requests with texts not yet started (a score request: not yet run) */
    int32_t waiting;          /* of those, the ones nothing of which has started */
    int32_t in_flight;        /* texts in the engines (and score requests running) */
    int32_t peak;             /* the most in_flight has been */
    bool stopping;

    /* accepted requests not yet answered and sent, and connections accepted
     * whose first request has not come yet (shutdown waits for both to be 0:
     * a client that connected before the signal is answered too) */
    long active, fresh;
    conn *conns;   /* every open connection (guard.c) */
    long n_conns, peak_conns, accepted, dropped;
    bool draining; /* after the signal: answers close their connection */
    struct MHD_Daemon *daemon;
    int listen_fd;            /* the server's own (listen.c), -1 once closed */
    pthread_t acceptor;
    bool acceptor_running;
    pthread_cond_t conn_freed; /* a connection closed: the acceptor may take the next */
    long refused;             /* connections answered 503 over --max-per-client */
    lingering lingering[SERVE_MAX_LINGERING];
    size_t n_lingering;
    /* metrics */
    long requests[N_EP][N_STATUS];
    long hist[N_BUCKET + 1];
    double latency_sum;
    long latency_count, reviews, records;
} server;

/* The engine: a thread with the pipeline (and a decider for a decision head)
 * over its generation's model, taking texts of any request bound to it as
 * the pipeline frees a slot for one (pd_pipeline_extract_stream: continuous
 * batching). */
typedef struct engine {
    server *s;
    struct generation *g;
    pd_pipeline *pipe;
    pd_decider *dec;
    pd_context *why_ctx;      /* /v1/why's context, made on its first request */
} engine;

/* A model the server runs, and its engine (reload.c). A reload makes a new
 * one current; the old one's engine answers the requests bound to it, then
 * ends, and the old one is freed: a request runs on one model, whole. */
typedef struct generation {
    int refs;                 /* the server's while current, and each job's bound to it */
    long id;                  /* 1: the model started with; one more each reload */
    const pd_model *model;
    const pd_head *head;      /* NULL: none */
    void *owner;              /* what serve_loader.close frees (NULL: nothing) */
    char *path;               /* the bundle it was loaded from (NULL: the start's) */
    pds_calibration *rates;   /* what /v1/summarize estimates with (NULL: none): the bundle's calibration.json */
    char *rates_path;         /* its file, for messages */
    pd_tag_extractor *why;    /* a tagger head's: what /v1/why explains with (NULL: no tagger head) */
    bool can_score;           /* a decision head */
    int32_t slots;            /* texts its engine holds at once */
    engine w;
    pthread_t thread;
    bool running, ended;      /* its engine's thread started; and returned */
    bool retired;             /* no longer current: its engine ends when its jobs are done */
    struct generation *next;
} generation;

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
conn *serve_conn_open(server *s, int fd, const struct sockaddr_storage *addr);
void serve_conn_close(server *s, conn *k);
void serve_sweep(server *s);
/* The library's notice of the connection on fd: its record (NULL: none). */
conn *serve_conn_attach(server *s, int fd);

/* The listening socket (listen.c): opened on cfg's host and port (*port: the
 * one taken), or -1 with msg saying why. */
int serve_listen_open(const serve_config *cfg, int *port, char *msg, size_t msg_size);
/* The acceptor thread, which takes connections within --max-connections and
 * refuses those over --max-per-client with a 503: started (0, or 1 when no
 * thread could be made); stopped, and the listening socket closed. */
int serve_acceptor_start(server *s);
void serve_acceptor_stop(server *s);
/* Answer the refused connections held a second, and close those whose client
 * has read its 503 (all: answer and close every one). Mutex held. */
void serve_linger_sweep(server *s, bool all);

/* g's engine: its pipeline (and decider) made and its thread started: 0, or
 * 1 with msg saying why (what was made is g's, freed by serve_gen_free). */
int serve_engine_start(server *s, generation *g, char *msg, size_t msg_size);

/* Generations (reload.c). A new one over model and head (owner: freed with
 * the loader's close), its engine started, or NULL with msg saying why. */
generation *serve_gen_new(server *s, const pd_model *model, const pd_head *head, void *owner, const char *path,
                          char *msg, size_t msg_size);
/* Its engine stopped and joined (the server stopping, or it ended), and all of it freed. */
void serve_gen_free(server *s, generation *g);
/* Drop a job's or the server's reference to g (mutex held). */
void serve_gen_unref(generation *g);
/* Free the retired generations whose engine has ended (mutex not held). */
void serve_gen_reap(server *s);
/* Load the bundle at path (NULL: the one started with) and make it current:
 * 200 and /v1/info's document of it, or 409 (a reload already loading),
 * 422 (the bundle refused: the old one keeps serving) or 500, with
 * {"error": ...}; *body malloc'ed. */
int serve_reload(server *s, const char *path, char **body);
/* /v1/info's document of g (malloc'ed; NULL when out of memory). */
char *serve_info_text(const server *s, const generation *g);

#endif
