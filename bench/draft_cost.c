/* draft_cost.c (bench_draft_cost) - what a drafter's pass costs against the
 * target's passes it is meant to save (a benchmark, not a test): on a
 * target and its DFlash / DFlash2 draft, with CONTEXT positions in both
 * caches, the best of R rounds of REPS each of
 *   - a target pass of 1, 2, 4 and 8 rows (every row kept, 8 logits of each
 *     through the sparse head, as extraction verifies), layer states off and
 *     kept for the draft;
 *   - the draft's append of one position's layer states;
 *   - a draft pass of blocks of 2, 4 and the draft's block size.
 * Prints one JSON line per case, microseconds a pass. The speed-up a draft
 * can give follows: a verifying cycle costs a draft pass plus a pass of
 * block rows plus an append a kept token, for the tokens a pass it keeps.
 *
 * Usage: bench_draft_cost TARGET_DIR [ADAPTER_DIR|-] DRAFT_DIR [THREADS=1] [CONTEXT=100] [REPS=500] [R=3] */
#include "pocketdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const pd_error *err)
{
    fprintf(stderr, "bench_draft_cost: %s\n", err->message);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_draft_cost TARGET_DIR ADAPTER_DIR|- DRAFT_DIR [THREADS] [CONTEXT] [REPS] [R]\n");
        return 2;
    }
    int threads = argc > 4 ? atoi(argv[4]) : 1, context = argc > 5 ? atoi(argv[5]) : 100;
    int reps = argc > 6 ? atoi(argv[6]) : 500, rounds = argc > 7 ? atoi(argv[7]) : 3;
    if (threads < 1 || context < 1 || context > 1000 || reps < 1 || rounds < 1) {
        fprintf(stderr, "bench_draft_cost: THREADS, CONTEXT (at most 1000), REPS and R must be positive\n");
        return 2;
    }
    pd_error err;
    pd_model *base = pd_model_load(argv[1], NULL, &err), *m = base;
    if (!base) die(&err);
    if (strcmp(argv[2], "-")) {
        pd_adapter *ad = pd_adapter_load(argv[2], &err);
        if (!ad || !(m = pd_model_apply_adapters(base, (const pd_adapter *const *)&ad, NULL, 1, PD_APPLY_AUTO, &err))) die(&err);
        pd_adapter_free(ad);
    }
    pd_draft *d = pd_draft_load(argv[3], m, &err);
    if (!d) die(&err);
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = context + 64;
    cp.n_threads = threads;
    pd_context *ctx = pd_context_new(m, &cp, &err);
    pd_draft_context *dc = ctx ? pd_draft_context_new(d, cp.n_ctx, threads, &err) : NULL;
    if (!dc) die(&err);
    int32_t n_layers = pd_draft_n_target_layers(d), layers[64], ids[1024 + 16], rows[16], sel[8];
    for (int32_t i = 0; i < n_layers && i < 64; i++) layers[i] = pd_draft_target_layer(d, i);
    int32_t vocab = pd_model_config(m)->vocab;
    for (int i = 0; i < context + 16; i++) ids[i] = (int32_t)((7 + 31 * i) % vocab);
    for (int i = 0; i < 16; i++) rows[i] = i;
    for (int i = 0; i < 8; i++) sel[i] = (int32_t)((13 + 97 * i) % vocab);
    for (int states = 0; states < 2; states++) {
        if (pd_context_keep_layer_states(ctx, layers, states ? n_layers : 0, &err)) die(&err);
        pd_batch prompt = {.tokens = ids, .n_tokens = context};
        if (pd_context_kv_truncate(ctx, 0, &err) || pd_eval(ctx, &prompt, &err)) die(&err);
        for (int n = 1; n <= 8; n *= 2) {
            double best = 1e300;
            for (int r = 0; r < rounds; r++) {
                double t0 = now_us();
                for (int k = 0; k < reps; k++) {
                    pd_batch b = {.tokens = ids + context, .n_tokens = n, .outputs = rows, .n_outputs = n};
                    float out[8];
                    if (pd_eval(ctx, &b, &err)) die(&err);
                    for (int j = 0; j < n; j++)
                        if (pd_context_logits_rows(ctx, j, sel, 8, out, &err)) die(&err);
                    if (pd_context_kv_truncate(ctx, context, &err)) die(&err);
                }
                double us = (now_us() - t0) / reps;
                best = us < best ? us : best;
            }
            printf("{\"case\": \"target pass\", \"rows\": %d, \"layer_states\": %s, \"us\": %.1f}\n", n,
                   states ? "true" : "false", best);
        }
    }
    size_t fs = (size_t)pd_draft_feature_size(d);
    float *features = malloc(fs * (size_t)context * sizeof *features);
    for (size_t i = 0; features && i < fs * (size_t)context; i++) features[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    double best = 1e300;
    for (int r = 0; features && r < rounds; r++) {
        double t0 = now_us();
        for (int k = 0; k < reps / 10 + 1; k++)
            if (pd_draft_context_truncate(dc, 0, &err) || pd_draft_context_append(dc, features, context, &err)) die(&err);
        double us = (now_us() - t0) / (reps / 10 + 1) / context;
        best = us < best ? us : best;
    }
    printf("{\"case\": \"draft append\", \"positions\": 1, \"us\": %.2f}\n", best);
    int32_t size = pd_draft_block_size(d), block[256], tokens[256];
    block[0] = ids[context];
    for (int i = 1; i < size; i++) block[i] = pd_draft_mask_id(d);
    for (int n = 2; n <= size; n = n * 2 <= size || n == size ? n * 2 : size) {
        best = 1e300;
        for (int r = 0; r < rounds; r++) {
            double t0 = now_us();
            for (int k = 0; k < reps; k++)
                if (pd_draft_propose(dc, block, n, tokens, NULL, &err)) die(&err);
            double us = (now_us() - t0) / reps;
            best = us < best ? us : best;
        }
        printf("{\"case\": \"draft pass\", \"block\": %d, \"us\": %.1f}\n", n, best);
    }
    free(features);
    pd_draft_context_free(dc);
    pd_context_free(ctx);
    pd_draft_free(d);
    if (m != base) pd_model_free(m);
    pd_model_free(base);
    return 0;
}
