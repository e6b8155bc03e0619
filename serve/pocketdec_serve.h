/* pocketdec_serve.h - `pocketdec serve`: extraction and decisions over
 * HTTP/1.1 + JSON (libmicrohttpd). Engines, each a thread with its own
 * pd_pipeline (and pd_decider for a decision head) over the one shared model,
 * take the texts of every request from a bounded queue as their pipelines
 * free a slot (continuous batching). docs/serve.md describes the endpoints. */
#ifndef PD_SERVE_H
#define PD_SERVE_H

#include "pocketdec.h"

#include <stdbool.h>
#include <stddef.h>

/* --teach: the reviews a person labels in the playground (serve/teach.c). */
typedef struct serve_teach_config {
    size_t n;                  /* reviews, each id unique */
    char *const *ids, *const *texts;
    const size_t *lens;
    const char *reviews_name;  /* the file they came from, for messages */
    const char *labels;        /* the labels file: JSONL as train/dataset.py reads it, resumed */
    pd_rank_order order;       /* the order they are asked in (pd_ranker) */
    uint64_t seed;             /* random's */
} serve_teach_config;

/* How the server loads a bundle on POST /v1/reload or SIGHUP (docs/serve.md,
 * "Reloading"): open the bundle at path (NULL: the path it was started
 * with) into *model and *head (may be NULL) with *owner what close frees;
 * 0, or non-zero with msg saying why. Called from any of the server's
 * threads, one call at a time. */
typedef struct serve_loader {
    int (*open)(void *user, const char *path, const pd_model **model, const pd_head **head, void **owner,
                char *msg, size_t msg_size);
    void (*close)(void *user, void *owner);
    void *user;
    void *first;  /* the owner of the model serve_run is given: freed with close once it is
                     replaced and its requests answered, or when serve_run returns */
} serve_loader;

typedef struct serve_config {
    const char *host;      /* address to listen on: IPv4 or IPv6 literal */
    int port;              /* 0: any free port (the one taken is printed) */
    int32_t parallel;      /* texts in flight: a tagger head's engines (one text a pass each), or the
                              texts one generation engine keeps in its joint passes; 0: one tagger
                              engine, or the pipeline's default for generation */
    int32_t queue;         /* requests waiting for a worker; more are answered 503 */
    int32_t max_texts;     /* texts (or candidates) a request */
    size_t max_body;       /* bytes of a request body */
    double timeout_s;      /* a request not answered by then is answered 504 */
    const char *api_key;   /* NULL: no key; else every endpoint but /health needs "Bearer KEY" */
    /* what a client may hold of the server (docs/reliability.md, "The server") */
    int32_t max_connections;  /* connections at once; more wait in the listen backlog */
    int32_t max_per_client;   /* connections at once from one address (0: no limit); more are
                                 answered 503 with Retry-After, unread (listen.c) */
    int32_t idle_timeout_s;   /* a connection silent this long is closed; a request's headers must be
                                 complete within it (408 when not) */
    int32_t min_rate;         /* bytes/s a body must average after its first second (408 when not),
                                 and an answer be read at; 0: only the idle timeout */
    size_t max_header;        /* bytes of a request's line and headers (431 or 414 past it) */
    const serve_teach_config *teach; /* NULL: no /v1/teach endpoints */
    const char *calibration;      /* the rates /v1/summarize estimates with (a calibration.json; NULL: none) */
    const serve_loader *loader;   /* NULL: no reload (POST /v1/reload answers 422) */
    pd_pipeline_params pipeline;  /* each engine's pipeline (n_threads: each engine's threads, 0 = the
                                     cores shared among the engines; parallel is set from the above) */
} serve_config;

/* Whether this build has the HTTP server (libmicrohttpd was found). */
bool serve_available(void);

/* Serve until SIGTERM or SIGINT: then stop accepting, answer every request
 * already accepted, and return 0. On SIGHUP, reload (cfg->loader, path
 * NULL). The caller blocks SIGTERM, SIGINT and SIGHUP in every thread
 * (pthread_sigmask) before calling. Prints one line on stderr
 * when listening ("pocketdec serve: listening on http://HOST:PORT ...").
 * Returns non-zero with msg filled when it cannot start. model, schema and
 * head (may be NULL) are only read; with cfg->loader, model and head are
 * cfg->loader->first's, which serve_run frees (close) on every return. */
int serve_run(const pd_model *model, const pd_schema *schema, const pd_head *head, const serve_config *cfg, char *msg,
              size_t msg_size);

#endif
