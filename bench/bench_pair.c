/* bench_pair.c - two models of the same shape timed against each other in
 * one process (a benchmark, not a test): the MNN export against its Q4_1
 * GGUF, or any two files pocketdec loads. On a shared machine whose speed
 * drifts from one second to the next, the figures of separate runs of
 * `pocketdec bench` move by 2x; here each round runs A's and B's prefill
 * (and then decode) back to back, in alternating order, and the rounds'
 * ratios B / A are summarised (median, quartiles, range), with each model's
 * median tokens/s. Loads alternate the same way (load, free), LOADS each.
 *
 * Usage: bench_pair A B [ROUNDS=20] [THREADS=1] [PROMPT=128] [GEN=32] [LOADS=4]
 * Prints one JSON object. */
#define _POSIX_C_SOURCE 200809L
#include "pocketdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The value at fraction q of v's sorted copy (linear between neighbours). */
static double quantile(const double *v, int n, double q)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return 0.0;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double at = q * (n - 1), r = s[(int)at];
    if ((int)at + 1 < n) r += (at - (int)at) * (s[(int)at + 1] - s[(int)at]);
    free(s);
    return r;
}

static void print_stats(const char *name, const double *a, const double *b, int n, const char *tail)
{
    double *ratio = malloc((size_t)n * sizeof *ratio);
    if (!ratio) return;
    for (int i = 0; i < n; i++) ratio[i] = b[i] / a[i];
    printf(" \"%s\": {\"a_median\": %.3f, \"b_median\": %.3f, \"b_over_a\": {\"median\": %.3f, \"q1\": %.3f, "
           "\"q3\": %.3f, \"min\": %.3f, \"max\": %.3f}}%s\n",
           name, quantile(a, n, 0.5), quantile(b, n, 0.5), quantile(ratio, n, 0.5), quantile(ratio, n, 0.25),
           quantile(ratio, n, 0.75), quantile(ratio, n, 0.0), quantile(ratio, n, 1.0), tail);
    free(ratio);
}

static void die(const char *what, const pd_error *err)
{
    fprintf(stderr, "bench_pair: %s: %s\n", what, err->message);
    exit(1);
}

/* Prefill of ids and n_gen greedy decode steps on ctx, from an empty cache:
 * tokens/s of each into *pre and *dec. */
static void run_once(pd_context *ctx, int32_t vocab, const int32_t *ids, int n_prompt, int n_gen, double *pre,
                     double *dec)
{
    pd_error err;
    pd_context_kv_truncate(ctx, 0, NULL);
    double s = now_s();
    if (pd_eval_tokens(ctx, ids, n_prompt, &err)) die("prefill", &err);
    *pre = n_prompt / (now_s() - s);
    s = now_s();
    for (int g = 0; g < n_gen; g++) {
        int32_t next = pd_sample(pd_context_logits(ctx, 0), vocab, NULL, NULL, NULL);
        if (pd_eval_tokens(ctx, &next, 1, &err)) die("decode", &err);
    }
    *dec = n_gen / (now_s() - s);
}

static int arg(int argc, char **argv, int i, int def, int lo, int hi)
{
    if (argc <= i) return def;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (end == argv[i] || *end || v < lo || v > hi) {
        fprintf(stderr, "bench_pair: argument %d (%s) must be an integer in %d..%d\n", i, argv[i], lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_pair A B [ROUNDS=20] [THREADS=1] [PROMPT=128] [GEN=32] [LOADS=4]\n");
        return 2;
    }
    const char *path[2] = {argv[1], argv[2]};
    int rounds = arg(argc, argv, 3, 20, 1, 1000), threads = arg(argc, argv, 4, 1, 1, 64);
    int n_prompt = arg(argc, argv, 5, 128, 1, 4096), n_gen = arg(argc, argv, 6, 32, 1, 4096);
    int loads = arg(argc, argv, 7, 4, 0, 100);
    pd_error err;
    pd_model_params mp = {0};
    double *t = calloc((size_t)(6 * rounds + 2 * loads + 2), sizeof *t);
    if (!t) return 1;
    double *pre[2] = {t, t + rounds}, *dec[2] = {t + 2 * rounds, t + 3 * rounds};
    double *load[2] = {t + 4 * rounds, t + 4 * rounds + loads + 1};
    for (int i = 0; i < loads; i++)
        for (int k = 0; k < 2; k++) {
            int w = (i + k) % 2; /* A B, then B A */
            double s = now_s();
            pd_model *m = pd_model_load(path[w], &mp, &err);
            if (!m) die(path[w], &err);
            load[w][i] = now_s() - s;
            pd_model_free(m);
        }
    pd_model *model[2];
    pd_context *ctx[2];
    pd_context_params cp = {.n_ctx = n_prompt + n_gen, .n_threads = threads, .n_batch = 512, .kv_type = PD_KV_F16};
    for (int w = 0; w < 2; w++) {
        if (!(model[w] = pd_model_load(path[w], &mp, &err))) die(path[w], &err);
        if (!(ctx[w] = pd_context_new(model[w], &cp, &err))) die(path[w], &err);
    }
    const int32_t vocab = pd_model_config(model[0])->vocab;
    if (pd_model_config(model[1])->vocab != vocab) {
        fprintf(stderr, "bench_pair: the two models' vocabularies differ\n");
        return 1;
    }
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    if (!ids) return 1;
    uint64_t rng = 42;
    for (int i = 0; i < n_prompt; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((rng >> 33) % (uint64_t)vocab);
    }
    double warm_p, warm_d; /* each context's first pass touches its buffers */
    for (int w = 0; w < 2; w++) run_once(ctx[w], vocab, ids, n_prompt, n_gen, &warm_p, &warm_d);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int w = (r + k) % 2;
            run_once(ctx[w], vocab, ids, n_prompt, n_gen, &pre[w][r], &dec[w][r]);
        }
    printf("{\"a\": \"%s\", \"b\": \"%s\", \"rounds\": %d, \"threads\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d,"
           " \"loads\": %d,\n",
           path[0], path[1], rounds, threads, n_prompt, n_gen, loads);
    print_stats("prefill_tok_s", pre[0], pre[1], rounds, ",");
    print_stats("decode_tok_s", dec[0], dec[1], rounds, loads ? "," : "}");
    if (loads) print_stats("load_s", load[0], load[1], loads, "}");
    for (int w = 0; w < 2; w++) {
        pd_context_free(ctx[w]);
        pd_model_free(model[w]);
    }
    free(ids);
    free(t);
    return 0;
}
