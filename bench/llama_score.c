/* llama_score.c - the llama.cpp side of pocketdec's benchmarks, built against
 * libllama (llama.h) by bench/run.sh.
 *
 *   llama_score MODEL --seqs FILE [--threads N] [--reps N]
 *       Scores candidates the usual way: one sequence per candidate (prompt +
 *       candidate, one line of comma-separated token ids per sequence in FILE),
 *       each evaluated in full with the logits of its last token. Times it
 *       two ways: "serial" (one sequence after another, cache cleared between)
 *       and "batch" (all sequences in one llama_decode call, one sequence id
 *       each). Prints JSON with the best time of N repetitions of each.
 *   llama_score MODEL --logits 1,2,3 [--threads N]
 *       The logits at the last position, one JSON array (interop checks).
 *   llama_score MODEL --bench P,G [--threads N] [--reps N]
 *       What llama-bench's pp P / tg G tests time, without building its tools:
 *       P random tokens in one llama_decode, then G single-token decodes from
 *       an empty cache; medians of tokens/s over N repetitions after a warm-up.
 *   llama_score MODEL --batched N,P,G [--threads N] [--reps N]
 *       Batched decoding, as llama-batched-bench's S_TG: N sequences of P
 *       random prompt tokens (prefilled in one llama_decode), then G steps
 *       that each decode one token of every sequence in one llama_decode;
 *       medians over N repetitions after a warm-up of the generated tokens/s
 *       (N x G over the steps' time). Unconstrained: no grammar, no sampling
 *       beyond the logits, the best a constrained run could reach.
 *   llama_score MODEL --verify C,K [--threads N] [--reps N]
 *       A speculative decoder's verifying pass: after C random tokens in the
 *       cache, one llama_decode of 1, 2, 4, 8 and 16 tokens with the logits
 *       of every token, the cache cut back after each; the best of N rounds
 *       (after a warm-up) of K passes, one JSON line per size, microseconds
 *       a pass (bench_draft_cost's target passes, as llama.cpp runs them).
 *   llama_score MODEL --load
 *       Model load time (mmapped), JSON.
 */
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SEQS 256
#define MAX_TOKENS 8192

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int die(const char *msg)
{
    fprintf(stderr, "llama_score: %s\n", msg);
    return 1;
}

/* "1,2,3" -> ids; returns the count, or -1 when malformed or too long. */
static int parse_ids(const char *s, llama_token *ids, int cap)
{
    int n = 0;
    while (*s && *s != '\n') {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || n == cap) return -1;
        ids[n++] = (llama_token)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

typedef struct seqs {
    llama_token *ids[MAX_SEQS];
    int len[MAX_SEQS];
    int n, total, longest;
} seqs;

static int read_seqs(const char *path, seqs *s)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static char line[1 << 16];
    memset(s, 0, sizeof *s);
    while (s->n < MAX_SEQS && fgets(line, sizeof line, f)) {
        llama_token *ids = malloc(MAX_TOKENS * sizeof *ids);
        int n = ids ? parse_ids(line, ids, MAX_TOKENS) : -1;
        if (n <= 0) {
            free(ids);
            if (n == 0) continue;
            fclose(f);
            return -1;
        }
        s->ids[s->n] = ids;
        s->len[s->n++] = n;
        s->total += n;
        if (n > s->longest) s->longest = n;
    }
    fclose(f);
    return s->n ? 0 : -1;
}

static struct llama_context *new_context(struct llama_model *m, int n_ctx, int n_batch, int n_seq, int threads)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = (uint32_t)(n_batch > 512 ? n_batch : 512);
    cp.n_seq_max = (uint32_t)n_seq;
    cp.kv_unified = true; /* one cache for all sequences: any of them may take any cell */
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    return llama_init_from_model(m, cp);
}

/* Add sequences [first, first+count) to b, each its own sequence id (0 when
 * only one), logits at the last token of each. */
static void fill(struct llama_batch *b, const seqs *s, int first, int count)
{
    b->n_tokens = 0;
    for (int k = first; k < first + count; k++)
        for (int i = 0; i < s->len[k]; i++) {
            int t = b->n_tokens++;
            b->token[t] = s->ids[k][i];
            b->pos[t] = i;
            b->n_seq_id[t] = 1;
            b->seq_id[t][0] = count == 1 ? 0 : k - first;
            b->logits[t] = i == s->len[k] - 1;
        }
}

/* One scoring of every sequence; returns ms, or -1 on failure. */
static double score_once(struct llama_context *ctx, struct llama_batch *b, const seqs *s, int batched)
{
    double t0 = now_ms();
    if (batched) {
        llama_memory_clear(llama_get_memory(ctx), true);
        fill(b, s, 0, s->n);
        if (llama_decode(ctx, *b)) return -1;
    } else {
        for (int k = 0; k < s->n; k++) {
            llama_memory_clear(llama_get_memory(ctx), true);
            fill(b, s, k, 1);
            if (llama_decode(ctx, *b)) return -1;
            (void)llama_get_logits_ith(ctx, -1);
        }
    }
    llama_synchronize(ctx);
    return now_ms() - t0;
}

static int run_seqs(struct llama_model *m, const char *path, int threads, int reps, double load_ms)
{
    seqs s;
    if (read_seqs(path, &s)) return die("cannot read the sequences file (one line of comma-separated ids each)");
    struct llama_context *serial = new_context(m, s.longest, s.longest, 1, threads);
    struct llama_context *batch = new_context(m, s.total, s.total, s.n, threads);
    struct llama_batch b = llama_batch_init(s.total, 0, 1);
    if (!serial || !batch) return die("cannot create a context");
    double best[2] = {INFINITY, INFINITY};
    for (int r = 0; r <= reps; r++) /* round 0 warms up (page faults, thread start) */
        for (int mode = 0; mode < 2; mode++) {
            double ms = score_once(mode ? batch : serial, &b, &s, mode);
            if (ms < 0) return die("llama_decode failed");
            if (r > 0 && ms < best[mode]) best[mode] = ms;
        }
    printf("{\"sequences\": %d, \"tokens\": %d, \"threads\": %d, \"reps\": %d, \"load_ms\": %.3f,"
           " \"serial_ms\": %.3f, \"batch_ms\": %.3f}\n",
           s.n, s.total, threads, reps, load_ms, best[0], best[1]);
    llama_batch_free(b);
    llama_free(serial);
    llama_free(batch);
    for (int k = 0; k < s.n; k++) free(s.ids[k]);
    return 0;
}

static int run_logits(struct llama_model *m, const char *list, int threads)
{
    static llama_token ids[MAX_TOKENS];
    int n = parse_ids(list, ids, MAX_TOKENS);
    if (n <= 0) return die("--logits needs comma-separated ids");
    struct llama_context *ctx = new_context(m, n, n, 1, threads);
    if (!ctx) return die("cannot create a context");
    if (llama_decode(ctx, llama_batch_get_one(ids, n))) return die("llama_decode failed");
    const float *l = llama_get_logits_ith(ctx, -1);
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    putchar('[');
    for (int i = 0; i < nv; i++) printf(i ? ",%.9g" : "%.9g", (double)l[i]);
    puts("]");
    llama_free(ctx);
    return 0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* MAX_TOKENS ids drawn from the model's vocabulary, the same ones every run. */
static void random_ids(const struct llama_model *m, llama_token *ids)
{
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    uint64_t rng = 42;
    for (int i = 0; i < MAX_TOKENS; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (llama_token)((rng >> 33) % (uint64_t)nv);
    }
}

/* One pp (n_p tokens in one batch) and one tg (n_g single tokens) run; tokens/s into pp, tg. */
static int bench_once(struct llama_context *ctx, llama_token *ids, int n_p, int n_g, double *pp, double *tg)
{
    llama_memory_clear(llama_get_memory(ctx), true);
    double t0 = now_ms();
    if (llama_decode(ctx, llama_batch_get_one(ids, n_p))) return -1;
    llama_synchronize(ctx);
    *pp = n_p / ((now_ms() - t0) * 1e-3);
    llama_memory_clear(llama_get_memory(ctx), true);
    t0 = now_ms();
    for (int i = 0; i < n_g; i++)
        if (llama_decode(ctx, llama_batch_get_one(&ids[i], 1))) return -1;
    llama_synchronize(ctx);
    *tg = n_g / ((now_ms() - t0) * 1e-3);
    return 0;
}

static int run_bench(struct llama_model *m, const char *spec, int threads, int reps, double load_ms)
{
    int n_p = 0, n_g = 0;
    if (sscanf(spec, "%d,%d", &n_p, &n_g) != 2 || n_p < 1 || n_g < 1 || n_p > MAX_TOKENS || n_g > MAX_TOKENS)
        return die("--bench needs P,G (prompt and generated tokens)");
    static llama_token ids[MAX_TOKENS];
    random_ids(m, ids);
    struct llama_context *ctx = new_context(m, n_p > n_g ? n_p : n_g, n_p, 1, threads);
    double *pp = calloc((size_t)reps + 1, sizeof *pp), *tg = calloc((size_t)reps + 1, sizeof *tg);
    if (!ctx || !pp || !tg) return die("cannot create a context");
    for (int r = 0; r <= reps; r++) /* run 0 warms up */
        if (bench_once(ctx, ids, n_p, n_g, &pp[r], &tg[r])) return die("llama_decode failed");
    printf("{\"threads\": %d, \"reps\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d, \"prefill_tokens_per_s\": %.2f,"
           " \"decode_tokens_per_s\": %.2f, \"load_ms\": %.3f}\n",
           threads, reps, n_p, n_g, median(pp + 1, reps), median(tg + 1, reps), load_ms);
    free(pp);
    free(tg);
    llama_free(ctx);
    return 0;
}

/* One batched run: n sequences prefilled (p tokens each), then g steps of n
 * tokens; *tg gets the steps' generated tokens/s. */
static int batched_once(struct llama_context *ctx, struct llama_batch *b, const llama_token *ids, int n, int p, int g,
                        double *tg)
{
    llama_memory_clear(llama_get_memory(ctx), true);
    b->n_tokens = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < p; i++) {
            int t = b->n_tokens++;
            b->token[t] = ids[(k * p + i) % MAX_TOKENS];
            b->pos[t] = i;
            b->n_seq_id[t] = 1;
            b->seq_id[t][0] = k;
            b->logits[t] = i == p - 1;
        }
    if (llama_decode(ctx, *b)) return -1;
    llama_synchronize(ctx);
    double t0 = now_ms();
    for (int step = 0; step < g; step++) {
        b->n_tokens = n;
        for (int k = 0; k < n; k++) {
            b->token[k] = ids[(k * 7 + step) % MAX_TOKENS];
            b->pos[k] = p + step;
            b->n_seq_id[k] = 1;
            b->seq_id[k][0] = k;
            b->logits[k] = 1;
        }
        if (llama_decode(ctx, *b)) return -1;
    }
    llama_synchronize(ctx);
    *tg = (double)n * g / ((now_ms() - t0) * 1e-3);
    return 0;
}

static int run_batched(struct llama_model *m, const char *spec, int threads, int reps)
{
    int n = 0, p = 0, g = 0;
    if (sscanf(spec, "%d,%d,%d", &n, &p, &g) != 3 || n < 1 || n > MAX_SEQS || p < 1 || g < 1 || n * p > MAX_TOKENS ||
        p + g > MAX_TOKENS)
        return die("--batched needs N,P,G (sequences, prompt and generated tokens of each)");
    static llama_token ids[MAX_TOKENS];
    random_ids(m, ids);
    struct llama_context *ctx = new_context(m, n * (p + g), n * p, n, threads);
    struct llama_batch b = llama_batch_init(n * p > n ? n * p : n, 0, n);
    double *tg = calloc((size_t)reps + 1, sizeof *tg);
    if (!ctx || !tg) return die("cannot create a context");
    for (int r = 0; r <= reps; r++) /* run 0 warms up */
        if (batched_once(ctx, &b, ids, n, p, g, &tg[r])) return die("llama_decode failed");
    printf("{\"threads\": %d, \"reps\": %d, \"sequences\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d,"
           " \"batched_decode_tokens_per_s\": %.2f}\n",
           threads, reps, n, p, g, median(tg + 1, reps));
    free(tg);
    llama_batch_free(b);
    llama_free(ctx);
    return 0;
}

static int run_verify(struct llama_model *m, const char *spec, int threads, int reps)
{
    int c = 0, k = 0;
    if (sscanf(spec, "%d,%d", &c, &k) != 2 || c < 1 || k < 1 || c + 16 > MAX_TOKENS)
        return die("--verify needs C,K (tokens in the cache, passes a round)");
    static llama_token ids[MAX_TOKENS];
    random_ids(m, ids);
    struct llama_context *ctx = new_context(m, c + 16, c, 1, threads);
    struct llama_batch b = llama_batch_init(16, 0, 1);
    if (!ctx) return die("cannot create a context");
    llama_memory_t mem = llama_get_memory(ctx);
    if (llama_decode(ctx, llama_batch_get_one(ids, c))) return die("llama_decode failed");
    for (int n = 1; n <= 16; n *= 2) {
        b.n_tokens = n;
        for (int i = 0; i < n; i++) {
            b.token[i] = ids[c + i];
            b.pos[i] = c + i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = 1;
        }
        double best = INFINITY;
        for (int r = 0; r <= reps; r++) { /* round 0 warms up */
            double t0 = now_ms();
            for (int j = 0; j < k; j++) {
                if (llama_decode(ctx, b)) return die("llama_decode failed");
                (void)llama_get_logits_ith(ctx, n - 1); /* waits for the pass */
                if (!llama_memory_seq_rm(mem, 0, c, -1)) return die("cannot cut the cache back");
            }
            double us = (now_ms() - t0) * 1e3 / k;
            if (r > 0 && us < best) best = us;
        }
        printf("{\"case\": \"llama.cpp pass\", \"rows\": %d, \"threads\": %d, \"us\": %.1f}\n", n, threads, best);
    }
    llama_batch_free(b);
    llama_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: llama_score MODEL (--seqs FILE | --bench P,G | --batched N,P,G | --verify C,K | --logits IDS | --load) "
              "[--threads N] [--reps N]\n",
              stderr);
        return 2;
    }
    const char *seq_file = NULL, *logit_ids = NULL, *bench = NULL, *batched = NULL, *verify = NULL;
    int threads = 2, reps = 5;
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--seqs") && v) seq_file = argv[++i];
        else if (!strcmp(argv[i], "--logits") && v) logit_ids = argv[++i];
        else if (!strcmp(argv[i], "--bench") && v) bench = argv[++i];
        else if (!strcmp(argv[i], "--batched") && v) batched = argv[++i];
        else if (!strcmp(argv[i], "--verify") && v) verify = argv[++i];
        else if (!strcmp(argv[i], "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && v) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--load") != 0) return die("unknown argument (see the header of llama_score.c)");
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    double t0 = now_ms();
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    double load_ms = now_ms() - t0;
    if (!m) return die("cannot load the model");
    int rc = 0;
    if (seq_file) rc = run_seqs(m, seq_file, threads, reps < 1 ? 1 : reps, load_ms);
    else if (logit_ids) rc = run_logits(m, logit_ids, threads);
    else if (bench) rc = run_bench(m, bench, threads, reps < 1 ? 1 : reps, load_ms);
    else if (batched) rc = run_batched(m, batched, threads, reps < 1 ? 1 : reps);
    else if (verify) rc = run_verify(m, verify, threads, reps < 1 ? 1 : reps);
    else printf("{\"load_ms\": %.3f}\n", load_ms);
    llama_model_free(m);
    llama_backend_free();
    return rc;
}
