/* cmd_serve.c - `pocketdec serve`: the options, the model and schema opened
 * once, then the HTTP server (serve/, pocketdec_serve.h) until SIGTERM or
 * SIGINT. docs/serve.md describes the endpoints. */
#include "cli.h"
#include "pocketdec_serve.h"
#include "reviews.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The key of --api-key-file: its first line, without the line end. */
static int read_key_file(const char *path, char **key)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cli_failf("%s: cannot open: %s", path, strerror(errno));
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    if (!buf[0]) return cli_failf("%s: the API key file is empty", path);
    if (!(*key = strdup(buf))) return cli_failf("out of memory");
    return 0;
}

/* --teach REVIEWS --labels FILE [--order NAME] [--seed N]: the reviews read
 * as extract reads them, into t (t->labels NULL without --teach). */
static int teach_opts(cli_args *a, serve_teach_config *t, cli_review_list *v)
{
    const char *labels = cli_opt(a, "--labels"), *order = cli_opt(a, "--order");
    int32_t seed;
    int rc;
    pd_error err;
    if (!cli_opt(a, "--teach")) {
        if (labels || order || cli_opt(a, "--seed")) return cli_usage(a, "--labels, --order and --seed go with --teach REVIEWS");
        return 0;
    }
    if (!labels) return cli_usage(a, "--teach REVIEWS needs --labels FILE (where the answers are written)");
    if ((rc = cli_int_opt(a, "--seed", 0, 0, INT32_MAX, &seed))) return rc;
    if (order && pd_rank_order_parse(order, &t->order, &err)) return cli_usage(a, err.message);
    if ((rc = cli_review_list_load(a, "--teach", v))) return rc;
    t->n = v->n;
    t->ids = v->ids;
    t->texts = v->texts;
    t->lens = v->lens;
    t->reviews_name = cli_opt(a, "--teach");
    t->labels = labels;
    t->seed = (uint64_t)seed;
    return 0;
}

/* The reload's loader (serve_loader): a bundle opened as --model PATH would
 * be, with the start's other options; PATH NULL: the start's --model. */
typedef struct loader {
    const char *start;
    cli_bundle_params opts;
} loader;

static int load_bundle(void *user, const char *path, const pd_model **model, const pd_head **head, void **owner,
                       char *msg, size_t msg_size)
{
    loader *l = user;
    pd_error err;
    pd_bundle *b = pd_bundle_open(path ? path : l->start, &l->opts.p, &err);
    if (!b) {
        snprintf(msg, msg_size, "%s", err.message);
        return 1;
    }
    *model = pd_bundle_model(b);
    *head = pd_bundle_head(b);
    *owner = b;
    return 0;
}

static void free_bundle(void *user, void *owner)
{
    (void)user;
    pd_bundle_free(owner);
}

int cmd_serve(cli_args *a)
{
    serve_config cfg = {.host = cli_opt(a, "--host") ? cli_opt(a, "--host") : "127.0.0.1"};
    cfg.pipeline = pd_pipeline_default_params();
    const char *schema_path = cli_opt(a, "--schema"), *key = cli_opt(a, "--api-key"),
               *key_file = cli_opt(a, "--api-key-file");
    int32_t port, max_body, max_header, threads;
    int rc;
    if (!schema_path) return cli_usage(a, "--schema FILE is required");
    if (key && key_file) return cli_usage(a, "give --api-key or --api-key-file, not both");
    if (key && !*key) return cli_usage(a, "--api-key must not be empty");
    if ((rc = cli_int_opt(a, "--port", 8080, 0, 65535, &port)) ||
        (rc = cli_int_opt(a, "--parallel", 0, 0, PD_PIPELINE_PARALLEL_MAX, &cfg.parallel)) ||
        (rc = cli_int_opt(a, "--max-connections", 256, 1, 100000, &cfg.max_connections)) ||
        /* by default every connection's request may wait: none is refused for the queue */
        (rc = cli_int_opt(a, "--queue", cfg.max_connections, 0, 1000000, &cfg.queue)) ||
        (rc = cli_int_opt(a, "--max-texts", 64, 1, PD_MAX_CANDIDATES, &cfg.max_texts)) ||
        (rc = cli_int_opt(a, "--max-body", 1 << 20, 1, 1 << 30, &max_body)) ||
        (rc = cli_float_opt(a, "--timeout", 60.0, 0.001, 86400.0, &cfg.timeout_s)) ||
        (rc = cli_int_opt(a, "--max-per-client", 0, 0, 100000, &cfg.max_per_client)) ||
        (rc = cli_int_opt(a, "--idle-timeout", 10, 1, 3600, &cfg.idle_timeout_s)) ||
        (rc = cli_int_opt(a, "--min-rate", 1024, 0, 1 << 30, &cfg.min_rate)) ||
        (rc = cli_int_opt(a, "--max-header", 32768, 4096, 1 << 24, &max_header)) ||
        (rc = cli_pipeline_opts(a, &cfg.pipeline)) ||
        (rc = cli_threads_opt(a, &threads)))
        return rc;
    if (!serve_available())
        return cli_failf("this pocketdec was built without libmicrohttpd, so it cannot serve HTTP; install "
                         "libmicrohttpd-dev (scripts/setup.sh build) and build again");
    cfg.port = port;
    cfg.max_body = (size_t)max_body;
    cfg.max_header = (size_t)max_header;
    cfg.pipeline.n_threads = cli_opt(a, "--threads") ? threads : 0; /* 0: the cores shared among the engines */
    char *key_buf = NULL;
    if (key_file && (rc = read_key_file(key_file, &key_buf))) return rc;
    cfg.api_key = key_buf ? key_buf : key;
    cli_review_list reviews = {0};
    serve_teach_config teach = {0};
    if ((rc = teach_opts(a, &teach, &reviews))) {
        free(key_buf);
        return rc;
    }
    cfg.teach = teach.labels ? &teach : NULL;
    char calibration[4096]; /* the bundle's rates, for /v1/summarize (docs/summarize.md) */
    struct stat cst;
    snprintf(calibration, sizeof calibration, "%s/calibration.json", cli_opt(a, "--model") ? cli_opt(a, "--model") : "");
    cfg.calibration = cli_opt(a, "--model") && stat(calibration, &cst) == 0 ? calibration : NULL;

    /* SIGTERM, SIGINT and SIGHUP are taken by the server's sigwait, in no other thread */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    pd_error err;
    pd_schema *schema = pd_schema_load(schema_path, &err);
    cli_model m = {0};
    loader l = {.start = cli_opt(a, "--model")};
    serve_loader reload = {load_bundle, free_bundle, &l, NULL};
    if (!schema) rc = cli_fail(&err);
    else if ((rc = cli_model_open(a, &m, true)) == 0) rc = cli_bundle_opts(a, true, &l.opts);
    if (rc == 0 && !cli_opt(a, "--order")) teach.order = pd_rank_default_order(m.head);
    if (rc == 0) {
        char msg[512];
        reload.first = m.bundle; /* the server's now: freed when a reload replaces it */
        m.bundle = NULL;
        cfg.loader = &reload;
        if (serve_run(m.model, schema, m.head, &cfg, msg, sizeof msg)) rc = cli_failf("%s", msg);
    }
    cli_bundle_opts_free(&l.opts);
    cli_model_close(&m);
    pd_schema_free(schema);
    cli_review_list_free(&reviews);
    free(key_buf);
    return rc;
}
