/* extract_many.c (bench_extract_many) - batch extraction throughput (a benchmark, not a test):
 * the same reviews extracted by greedy generation under a schema, in turn by
 *   sequential   pd_extract one review at a time, the whole prompt evaluated
 *                each time (the cache cleared first), no speculation;
 *   prefix       the same, the schema's prompt prefix kept in the cache;
 *   many N       an extraction pipeline (pd_pipeline_extract_many: what users
 *                run) with N reviews in flight (N = 1, 4, 8, 16),
 *                no speculation, then with speculation K;
 * best of R runs each; then, as llama_score --batched times llama.cpp, N
 * contexts decoding a token each a pd_eval_many (no schema, full LM head).
 * Prints one JSON line per configuration: reviews/s,
 * generated tokens/s, the speedup over sequential, peak RSS so far, and
 * whether every review's records and tokens are those of sequential (they
 * must be).
 *
 * With PD_BENCH_ROUNDS=R in the environment it runs only sequential and many
 * 8 with speculation, one after the other R times (one run each), so that
 * the ratio of each round is of two runs seconds apart on a machine whose
 * speed drifts; each line then has its "round" and its speedup is over the
 * sequential run of its round. Each round then times the passes alone
 * (joint_passes): 8 contexts at the reviews' mean cache length, passes of the
 * rows N = 8 with speculation evaluated a pass on average, no schema and no
 * LM head. Their rows/s over the rows a review took is about the most
 * reviews/s that N = 8 reaches with these passes, whatever the decoding
 * around them (over the round's sequential reviews/s: the ratio the passes
 * allow; the extraction's mix of prompt passes and decode passes can run a
 * little faster than uniform passes of its mean size).
 *
 * With PD_BENCH_PASSES=ROWS,KV it only times joint passes of ROWS rows on 8
 * contexts holding KV tokens (as the rounds do; SCHEMA, REVIEWS and
 * N_REVIEWS are not read): e.g. the same shape with 2 layers, whose weights
 * stay in the caches, against 28, whose weights stream from memory.
 *
 * Usage: bench_extract_many MODEL SCHEMA REVIEWS.csv [N_REVIEWS=100] [THREADS=2] [RUNS=1] [K=4] [quantize: q4_0|q8_0|-] [ADAPTER] */
#include "pocketdec.h"
#include "te_csv.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The Reviews field of the first max rows of a Tianchi CSV (id,Reviews), read
 * as tianchi-eval reads it. */
static int read_reviews(const char *path, char ***texts, int max)
{
    FILE *f = fopen(path, "rb");
    te_error terr;
    te_csv *csv = f ? te_csv_open(path, f, &terr) : NULL;
    if (!csv) {
        if (f) fclose(f);
        return -1;
    }
    int n = 0;
    *texts = calloc((size_t)max, sizeof **texts);
    bool header = true;
    while (n < max && te_csv_next(csv, &terr) == TE_CSV_ROW) {
        if (!header && te_csv_n_fields(csv) == 2) (*texts)[n++] = strdup(te_csv_field(csv, 1, NULL));
        header = false;
    }
    te_csv_free(csv);
    fclose(f);
    return n;
}

/* A review's outcome as text: records, tokens, stop. */
static char *describe(const pd_extraction *x)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    fprintf(out, "%d %d %d|", x->n_records, x->stats.n_tokens, (int)x->stop);
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t j = 0; j < x->n_fields; j++) fprintf(out, "%s%c", x->records[r].values[j], j + 1 < x->n_fields ? ',' : ';');
    fclose(out);
    return s;
}

typedef struct bench {
    const pd_model *m;
    const pd_schema *schema;
    const pd_extractor *ex;
    const char **texts;
    size_t *lens;
    int n, threads, runs;
    char **want; /* sequential's outcomes */
    double base_s;
    int round; /* PD_BENCH_ROUNDS: the round, from 1 (0: not alternating) */
} bench;

static pd_context *new_ctx(const pd_model *m, int threads, int n_batch)
{
    pd_error err;
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 1024;
    cp.n_threads = threads;
    cp.n_batch = n_batch;
    pd_context *c = pd_context_new(m, &cp, &err);
    if (!c) {
        fprintf(stderr, "bench_extract_many: %s\n", err.message);
        exit(1);
    }
    return c;
}

/* What a configuration's reviews evaluated: rows through the trunk (prompt
 * tokens past the cached ones, then each evaluation's token and its draft),
 * evaluations, and the mean cache length (prompt and half the output). */
typedef struct workload {
    long rows, evaluations;
    double mean_kv;
} workload;

/* One configuration: parallel 0 = pd_extract on one context (clear: the
 * cache cleared before each review); parallel N = what users run, an
 * extraction pipeline with N reviews in flight (pd_pipeline_extract_many). */
static workload run(bench *b, const char *name, int parallel, bool clear, int speculate)
{
    pd_extract_params p = pd_extract_default_params();
    p.speculate = speculate;
    pd_context *ctx = parallel ? NULL : new_ctx(b->m, b->threads, 256);
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.extract = p;
    pp.n_threads = b->threads;
    pp.n_ctx = 1024;
    pp.parallel = parallel;
    pd_error err;
    pd_pipeline *pipe = parallel ? pd_pipeline_new(b->m, b->schema, NULL, &pp, &err) : NULL;
    if (parallel && !pipe) {
        fprintf(stderr, "bench_extract_many: %s\n", err.message);
        exit(1);
    }
    pd_extraction **outs = calloc((size_t)b->n, sizeof *outs);
    double best = 1e30;
    long tokens = 0, passes = 0;
    workload w = {0};
    bool same = true;
    for (int r = 0; r < b->runs; r++) {
        if (ctx) pd_context_kv_truncate(ctx, 0, &err);
        double t0 = now_s();
        if (parallel) {
            if (pd_pipeline_extract_many(pipe, b->texts, b->lens, b->n, outs, NULL, &err)) {
                fprintf(stderr, "bench_extract_many: %s\n", err.message);
                exit(1);
            }
        } else {
            for (int i = 0; i < b->n; i++) {
                if (clear) pd_context_kv_truncate(ctx, 0, &err);
                if (pd_extract(ctx, b->ex, b->texts[i], b->lens[i], &p, &outs[i], &err)) {
                    fprintf(stderr, "bench_extract_many: %s\n", err.message);
                    exit(1);
                }
            }
        }
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
        tokens = passes = 0;
        w = (workload){0};
        for (int i = 0; i < b->n; i++) {
            const pd_extraction *x = outs[i];
            w.rows += x->stats.n_prompt_tokens - x->stats.n_cached_tokens + x->stats.n_forward - 1 + x->stats.n_drafted;
            w.evaluations += x->stats.n_forward;
            w.mean_kv += (x->stats.n_prompt_tokens + x->stats.n_tokens / 2.0) / b->n;
            char *d = describe(outs[i]);
            if (!b->want[i]) b->want[i] = d;
            else {
                same = same && strcmp(d, b->want[i]) == 0;
                free(d);
            }
            tokens += outs[i]->stats.n_tokens;
            passes += outs[i]->stats.n_forward;
            pd_extraction_free(outs[i]);
        }
    }
    if (b->base_s == 0) b->base_s = best;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"config\": \"%s\", \"in_flight\": %d, \"speculate\": %d, \"reviews\": %d, \"threads\": %d, \"seconds\": %.3f,"
           " \"reviews_s\": %.2f, \"gen_tok_s\": %.1f, \"evaluations\": %ld, \"rows\": %ld, \"speedup\": %.2f,"
           " \"peak_rss_mb\": %.1f, \"same_records\": %s, \"round\": %d}\n",
           name, parallel, speculate, b->n, b->threads, best, b->n / best, (double)tokens / best, passes, w.rows,
           b->base_s / best, (double)ru.ru_maxrss / 1024.0, same ? "true" : "false", b->round);
    fflush(stdout);
    pd_context_free(ctx);
    pd_pipeline_free(pipe);
    free(outs);
    return w;
}

/* Joint passes alone: n contexts holding kv ids each, then `passes` passes
 * of `rows` rows (rows >= n, shared out as evenly as the contexts allow, each keeping
 * its last row; logits: the full LM head of each), rewound to kv before each
 * of the bench's runs so that every run sees the same lengths; the best
 * run's seconds. */
static double time_passes(bench *b, int n, int rows, int kv, int passes, int logits)
{
    int32_t vocab = pd_model_config(b->m)->vocab, per = (rows + n - 1) / n, len = kv + passes * per;
    pd_context *pass = new_ctx(b->m, b->threads, 256), **ctxs = calloc((size_t)n, sizeof *ctxs);
    pd_batch *batches = calloc((size_t)n, sizeof *batches);
    int32_t *ids = calloc((size_t)n * (size_t)len, sizeof *ids), *at = calloc((size_t)n, sizeof *at);
    for (int i = 0; i < n * len; i++) ids[i] = (int32_t)(((uint64_t)i * 2654435761u) % (uint64_t)vocab);
    pd_error err;
    double best = 1e30;
    for (int k = 0; k < n; k++) {
        ctxs[k] = new_ctx(b->m, 1, 1 + PD_SPECULATE_MAX); /* as extraction's: the pass runs on `pass` */
        batches[k] = (pd_batch){ids + (size_t)k * len, kv, NULL, NULL, NULL, 0, 0};
    }
    if (pd_eval_many(pass, ctxs, batches, n, &err)) goto fail;
    for (int r = 0; r < b->runs; r++) {
        for (int k = 0; k < n; k++) {
            at[k] = kv;
            if (pd_context_kv_truncate(ctxs[k], kv, &err)) goto fail;
        }
        double t0 = now_s();
        for (int p = 0; p < passes; p++) {
            for (int k = 0, left = rows; k < n; k++) { /* rows >= n: every context gets one */
                int m = left / (n - k);
                left -= m;
                batches[k] = (pd_batch){ids + (size_t)k * len + at[k], m, NULL, NULL, NULL, 0, logits};
                at[k] += m;
            }
            if (pd_eval_many(pass, ctxs, batches, n, &err)) goto fail;
        }
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    for (int k = 0; k < n; k++) pd_context_free(ctxs[k]);
    pd_context_free(pass);
    free(ctxs);
    free(batches);
    free(ids);
    free(at);
    return best;
fail:
    fprintf(stderr, "bench_extract_many: %s\n", err.message);
    exit(1);
}

/* The passes of n reviews in flight alone: passes of `rows` rows on n
 * contexts holding kv tokens, no LM head; rows/s. */
static void joint_passes(bench *b, int n, int rows, int kv)
{
    enum { PASSES = 40 };
    double s = time_passes(b, n, rows, kv, PASSES, 0);
    printf("{\"config\": \"joint passes\", \"in_flight\": %d, \"rows_per_pass\": %d, \"kv\": %d, \"threads\": %d,"
           " \"rows_s\": %.1f, \"round\": %d}\n", n, rows, kv, b->threads, (double)rows * PASSES / s, b->round);
    fflush(stdout);
}

/* What llama_score --batched times, on pocketdec: n contexts with 64 ids each,
 * then 48 steps that each evaluate one id of every context in one
 * pd_eval_many (logits of each: the full LM head); generated tokens/s. */
static void batched_decode(bench *b, int n)
{
    enum { P = 64, G = 48 };
    double s = time_passes(b, n, n, P, G, 1);
    printf("{\"config\": \"batched decode\", \"in_flight\": %d, \"speculate\": 0, \"threads\": %d,"
           " \"gen_tok_s\": %.1f}\n", n, b->threads, (double)n * G / s);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_extract_many MODEL SCHEMA REVIEWS.csv [N] [THREADS] [RUNS] [K] [q4_0|q8_0|-] [ADAPTER]\n");
        return 2;
    }
    int n_rev = argc > 4 ? atoi(argv[4]) : 100, threads = argc > 5 ? atoi(argv[5]) : 2;
    int runs = argc > 6 ? atoi(argv[6]) : 1, k = argc > 7 ? atoi(argv[7]) : 4;
    const char *quant = argc > 8 ? argv[8] : "-";
    pd_error err;
    pd_model_params mp = {0};
    if (strcmp(quant, "-") && pd_quant_type_from_name(quant, &mp.quantize, &err)) {
        fprintf(stderr, "bench_extract_many: QUANT: %s\n", err.message);
        return 2;
    }
    pd_model *base = pd_model_load(argv[1], &mp, &err), *m = base;
    if (base && argc > 9) {
        pd_adapter *ad = pd_adapter_load(argv[9], &err);
        m = ad ? pd_model_apply_adapters(base, (const pd_adapter *const *)&ad, NULL, 1, PD_APPLY_AUTO, &err) : NULL;
        pd_adapter_free(ad);
    }
    const char *passes_env = getenv("PD_BENCH_PASSES");
    if (m && passes_env) { /* the passes alone: SCHEMA, REVIEWS and N are not read */
        int rows = 0, kv = 0;
        if (sscanf(passes_env, "%d,%d", &rows, &kv) != 2 || rows < 8 || kv < 1 || kv > 512) {
            fprintf(stderr, "bench_extract_many: PD_BENCH_PASSES is ROWS,KV (ROWS >= 8, KV in 1..512)\n");
            return 2;
        }
        bench pb = {.m = m, .threads = threads, .runs = runs > 0 ? runs : 1};
        joint_passes(&pb, 8, rows, kv);
        if (m != base) pd_model_free(m);
        pd_model_free(base);
        return 0;
    }
    pd_schema *sc = m ? pd_schema_load(argv[2], &err) : NULL;
    pd_extractor *ex = sc ? pd_extractor_new(m, sc, &err) : NULL;
    char **texts = NULL;
    int n = ex ? read_reviews(argv[3], &texts, n_rev) : -1;
    if (n <= 0) {
        fprintf(stderr, "bench_extract_many: %s\n", ex ? "no reviews" : err.message);
        return 1;
    }
    bench b = {.m = m, .schema = sc, .ex = ex, .texts = (const char **)texts, .lens = calloc((size_t)n, sizeof(size_t)),
               .n = n, .threads = threads, .runs = runs > 0 ? runs : 1, .want = calloc((size_t)n, sizeof(char *))};
    for (int i = 0; i < n; i++) b.lens[i] = strlen(texts[i]);
    const char *rounds_env = getenv("PD_BENCH_ROUNDS");
    int rounds = rounds_env ? atoi(rounds_env) : 0;
    if (rounds > 0) {
        b.runs = 1;
        for (b.round = 1; b.round <= rounds; b.round++) {
            b.base_s = 0;
            run(&b, "sequential", 0, true, 0);
            workload w = run(&b, "many+speculation", 8, false, k);
            /* 8 in flight: each pass carries 8 of the reviews' evaluations */
            int rows = (int)((8.0 * (double)w.rows) / (double)w.evaluations + 0.5);
            joint_passes(&b, 8, rows < 8 ? 8 : rows, (int)(w.mean_kv + 0.5));
        }
    } else {
        run(&b, "sequential", 0, true, 0);
        run(&b, "prefix", 0, false, 0);
        static const int in_flight[] = {1, 4, 8, 16};
        for (int s = 0; s < 2; s++)
            for (size_t j = 0; j < sizeof in_flight / sizeof *in_flight; j++)
                run(&b, s ? "many+speculation" : "many", in_flight[j], false, s ? k : 0);
        for (size_t j = 0; j < sizeof in_flight / sizeof *in_flight; j++) batched_decode(&b, in_flight[j]);
    }
    for (int i = 0; i < n; i++) {
        free(texts[i]);
        free(b.want[i]);
    }
    free(texts);
    free(b.want);
    free(b.lens);
    pd_extractor_free(ex);
    pd_schema_free(sc);
    if (m != base) pd_model_free(m);
    pd_model_free(base);
    return 0;
}
