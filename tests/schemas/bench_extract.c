/* bench_extract - the extraction benchmark (not a test): mask time per token,
 * decode tokens/s constrained (sparse head auto, and full head forced)
 * against unconstrained greedy decoding of as many tokens after the same
 * prompt, and the vocabulary trie build time. Prints one JSON object.
 *
 * Usage: bench_extract MODEL SCHEMA REVIEWS.csv [N_REVIEWS=10] [THREADS=2] [MAX_TOKENS=64] */
#include "schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Simple "id,text" lines (the train reviews have no quoted line breaks). */
static int read_reviews(const char *path, char ***texts, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[8192];
    int n = 0;
    *texts = calloc((size_t)max, sizeof **texts);
    while (n < max && fgets(line, sizeof line, f)) {
        char *comma = strchr(line, ',');
        if (!comma || strncmp(line, "id,", 3) == 0) continue;
        line[strcspn(line, "\r\n")] = '\0';
        (*texts)[n++] = strdup(comma + 1);
    }
    fclose(f);
    return n;
}

typedef struct totals {
    double seconds, prefill;
    long tokens;
} totals;

static int prompt(const pd_model *m, const pd_schema *sc, const char *text, int32_t **ids, size_t *n)
{
    const char *at = strstr(sc->prompt, "{text}");
    size_t len = strlen(sc->prompt) + strlen(text);
    char *full = malloc(len + 1);
    snprintf(full, len + 1, "%.*s%s%s", (int)(at - sc->prompt), sc->prompt, text, at + 6);
    pd_error err;
    int rc = pd_tokenizer_encode(pd_model_tokenizer(m), full, strlen(full), ids, n, &err);
    free(full);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_extract MODEL SCHEMA REVIEWS.csv [N] [THREADS] [MAX_TOKENS]\n");
        return 2;
    }
    int n_rev = argc > 4 ? atoi(argv[4]) : 10, threads = argc > 5 ? atoi(argv[5]) : 2;
    int max_tokens = argc > 6 ? atoi(argv[6]) : 64;
    pd_error err;
    pd_model *m = pd_model_load(argv[1], NULL, &err);
    pd_schema *sc = m ? pd_schema_load(argv[2], &err) : NULL;
    double t0 = now_s();
    pd_extractor *ex = sc ? pd_extractor_new(m, sc, &err) : NULL;
    double trie_s = now_s() - t0;
    pd_context_params cp = pd_context_default_params();
    cp.n_threads = threads;
    pd_context *ctx = ex ? pd_context_new(m, &cp, &err) : NULL;
    char **texts = NULL;
    int n = ctx ? read_reviews(argv[3], &texts, n_rev) : -1;
    if (n <= 0) {
        fprintf(stderr, "bench_extract: %s\n", ctx ? "no reviews" : err.message);
        return 1;
    }
    size_t cap = (size_t)n * (size_t)(max_tokens + 1), n_mask = 0;
    double *mask = malloc(sizeof(double) * cap);
    totals mode[3] = {{0}}; /* sparse auto, full head, unconstrained */
    long sparse_steps = 0, steps = 0;
    int32_t vocab = pd_model_config(m)->vocab;
    for (int i = 0; i < n; i++) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        prompt(m, sc, texts[i], &ids, &n_ids);
        /* prefill alone, to take it out of the decode rates */
        pd_context_kv_truncate(ctx, 0, &err);
        double p0 = now_s();
        pd_eval_tokens(ctx, ids, (int32_t)n_ids, &err);
        double prefill = now_s() - p0;
        long gen = 0;
        for (int k = 0; k < 2; k++) {
            pd_extract_params p = pd_extract_default_params();
            p.max_tokens = max_tokens;
            p.sparse_head = k == 0 ? -1 : 0;
            pd_extraction *x = NULL;
            double s0 = now_s();
            if (pd_extract(ctx, ex, texts[i], strlen(texts[i]), &p, &x, &err)) {
                fprintf(stderr, "bench_extract: %s\n", err.message);
                return 1;
            }
            mode[k].seconds += now_s() - s0;
            mode[k].prefill += prefill;
            mode[k].tokens += x->stats.n_tokens;
            if (k == 0) {
                for (int32_t t = 0; t <= x->stats.n_tokens && t < max_tokens; t++) mask[n_mask++] = x->stats.mask_us[t];
                sparse_steps += x->stats.n_sparse;
                steps += x->stats.n_tokens;
                gen = x->stats.n_tokens;
            }
            pd_extraction_free(x);
        }
        /* unconstrained greedy decoding of as many tokens, full head */
        pd_context_kv_truncate(ctx, 0, &err);
        double u0 = now_s();
        pd_eval_tokens(ctx, ids, (int32_t)n_ids, &err);
        for (long t = 0; t < gen; t++) {
            int32_t id = pd_sample(pd_context_logits(ctx, 0), vocab, NULL, NULL, NULL);
            pd_eval_tokens(ctx, &id, 1, &err);
        }
        mode[2].seconds += now_s() - u0;
        mode[2].prefill += prefill;
        mode[2].tokens += gen;
        free(ids);
    }
    qsort(mask, n_mask, sizeof *mask, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n_mask; i++) sum += mask[i];
    double rate[3];
    for (int k = 0; k < 3; k++) rate[k] = (double)mode[k].tokens / (mode[k].seconds - mode[k].prefill);
    printf("{\"reviews\": %d, \"threads\": %d, \"vocab_trie_build_s\": %.3f, \"mask_steps\": %zu,"
           " \"mask_us_mean\": %.1f, \"mask_us_p50\": %.1f, \"mask_us_p99\": %.1f, \"mask_us_max\": %.1f,"
           " \"tokens\": %ld, \"sparse_steps\": %ld, \"decode_tok_s_constrained_sparse\": %.2f,"
           " \"decode_tok_s_constrained_full_head\": %.2f, \"decode_tok_s_unconstrained\": %.2f,"
           " \"sparse_head_gain\": %.3f, \"constrained_vs_unconstrained\": %.3f}\n",
           n, threads, trie_s, n_mask, sum / (double)n_mask, mask[n_mask / 2], mask[(size_t)(0.99 * (double)(n_mask - 1))],
           mask[n_mask - 1], steps, sparse_steps, rate[0], rate[1], rate[2], rate[0] / rate[1], rate[0] / rate[2]);
    for (int i = 0; i < n; i++) free(texts[i]);
    free(texts);
    free(mask);
    pd_context_free(ctx);
    pd_extractor_free(ex);
    pd_schema_free(sc);
    pd_model_free(m);
    return 0;
}
