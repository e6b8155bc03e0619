/* draft_cost.c (bench_draft_cost) - what a drafter's pass costs against the
 * target's passes it is meant to save (a benchmark, not a test): on a
 * target and its DFlash / DFlash2 draft, with CONTEXT positions in both
 * caches, the best of R rounds of REPS each of
 *   - a target pass of 1, 2, 4, 8 and 16 rows, every row kept: with 8 logits
 *     of each through the sparse head (as extraction verifies) and with the
 *     full logits of each (as pd_draft_generate verifies), layer states off
 *     and kept for the draft;
 *   - the draft's append of 1, 4, 8 and 16 positions' layer states in one
 *     call (a verifying cycle appends the tokens it kept), and of CONTEXT
 *     positions (a prompt's);
 *   - a draft pass of blocks of 2, 4, 8, ... up to the draft's block size.
 * Prints one JSON line per case, microseconds a call. The speed-up a draft
 * can give follows: a verifying cycle costs a draft pass plus a pass of
 * block rows plus an append of the tokens it keeps, for the tokens a pass it
 * keeps (bench/report.py draft turns these lines into that prediction).
 *
 * QUANT (none, q8_0 or q4_0) quantizes the draft's matrices at load
 * (pd_draft_load_quantized).
 *
 * Usage: bench_draft_cost TARGET_DIR [ADAPTER_DIR|-] DRAFT_DIR [THREADS=1] [CONTEXT=100] [REPS=500] [R=3] [QUANT=none] */
#include "pocketdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ROWS 16

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

/* What one timed call needs; n: rows, positions or block size. */
typedef struct bench {
    pd_context *ctx;
    pd_draft_context *dc;
    const int32_t *ids, *rows, *sel, *block;
    const float *features;
    int32_t *tokens;
    int context, n, full_logits, keep;
} bench;

/* A target pass of n rows after the context, then the cache cut back. */
static void target_pass(const bench *b)
{
    pd_error err;
    pd_batch batch = {.tokens = b->ids + b->context, .n_tokens = b->n, .outputs = b->rows, .n_outputs = b->n,
                      .want_logits = b->full_logits};
    float out[8];
    if (pd_eval(b->ctx, &batch, &err)) die(&err);
    for (int j = 0; !b->full_logits && j < b->n; j++)
        if (pd_context_logits_rows(b->ctx, j, b->sel, 8, out, &err)) die(&err);
    if (pd_context_kv_truncate(b->ctx, b->context, &err)) die(&err);
}

/* The draft's context cut back to keep positions, then n appended. */
static void draft_append(const bench *b)
{
    pd_error err;
    if (pd_draft_context_truncate(b->dc, b->keep, &err) || pd_draft_context_append(b->dc, b->features, b->n, &err))
        die(&err);
}

static void draft_pass(const bench *b)
{
    pd_error err;
    if (pd_draft_propose(b->dc, b->block, b->n, b->tokens, NULL, &err)) die(&err);
}

/* The best of rounds rounds of reps calls of step, microseconds a call. */
static double best_us(void (*step)(const bench *), const bench *b, int reps, int rounds)
{
    double best = 1e300;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_us();
        for (int k = 0; k < reps; k++) step(b);
        double us = (now_us() - t0) / reps;
        best = us < best ? us : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_draft_cost TARGET_DIR ADAPTER_DIR|- DRAFT_DIR [THREADS] [CONTEXT] [REPS] [R] [QUANT]\n");
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
    const char *quant = argc > 8 ? argv[8] : "none";
    pd_weight_quant q;
    if (pd_quant_type_from_name(quant, &q, &err)) {
        fprintf(stderr, "bench_draft_cost: QUANT: %s\n", err.message);
        return 2;
    }
    pd_draft *d = pd_draft_load_quantized(argv[3], m, q, &err);
    if (!d) die(&err);
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = context + 64;
    cp.n_threads = threads;
    pd_context *ctx = pd_context_new(m, &cp, &err);
    pd_draft_context *dc = ctx ? pd_draft_context_new(d, cp.n_ctx, threads, &err) : NULL;
    if (!dc) die(&err);
    int32_t n_layers = pd_draft_n_target_layers(d), layers[64], ids[1000 + MAX_ROWS], rows[MAX_ROWS], sel[8];
    for (int32_t i = 0; i < n_layers && i < 64; i++) layers[i] = pd_draft_target_layer(d, i);
    int32_t vocab = pd_model_config(m)->vocab;
    for (int i = 0; i < context + MAX_ROWS; i++) ids[i] = (int32_t)((7 + 31 * i) % vocab);
    for (int i = 0; i < MAX_ROWS; i++) rows[i] = i;
    for (int i = 0; i < 8; i++) sel[i] = (int32_t)((13 + 97 * i) % vocab);
    int32_t size = pd_draft_block_size(d), block[256], tokens[256];
    block[0] = ids[context];
    for (int i = 1; i < size; i++) block[i] = pd_draft_mask_id(d);
    size_t fs = (size_t)pd_draft_feature_size(d), nf = fs * (size_t)(context + MAX_ROWS);
    float *features = malloc(nf * sizeof *features);
    if (!features) return 1;
    for (size_t i = 0; i < nf; i++) features[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    bench b = {.ctx = ctx, .dc = dc, .ids = ids, .rows = rows, .sel = sel, .block = block, .features = features,
               .tokens = tokens, .context = context};

    for (b.full_logits = 0; b.full_logits < 2; b.full_logits++)
        for (int states = 0; states < 2; states++) {
            if (pd_context_keep_layer_states(ctx, layers, states ? n_layers : 0, &err)) die(&err);
            pd_batch prompt = {.tokens = ids, .n_tokens = context};
            if (pd_context_kv_truncate(ctx, 0, &err) || pd_eval(ctx, &prompt, &err)) die(&err);
            for (b.n = 1; b.n <= MAX_ROWS; b.n *= 2)
                printf("{\"case\": \"target pass\", \"rows\": %d, \"layer_states\": %s, \"full_logits\": %s, "
                       "\"us\": %.1f}\n",
                       b.n, states ? "true" : "false", b.full_logits ? "true" : "false",
                       best_us(target_pass, &b, reps, rounds));
        }

    /* appends of a cycle's kept tokens after the context, then a prompt's (context positions into an
     * empty context): the draft's context then holds the context for the draft passes */
    static const int appends[] = {1, 4, 8, 16, 0};
    b.n = context, b.keep = 0;
    draft_append(&b);
    for (int i = 0; i < 5; i++) {
        b.n = appends[i] ? appends[i] : context, b.keep = appends[i] ? context : 0;
        double us = best_us(draft_append, &b, appends[i] ? reps : reps / 10 + 1, rounds);
        printf("{\"case\": \"draft append\", \"positions\": %d, \"us\": %.1f, \"us_a_position\": %.2f}\n", b.n, us,
               us / b.n);
    }
    for (b.n = 2; b.n <= size; b.n = b.n * 2 <= size || b.n == size ? b.n * 2 : size)
        printf("{\"case\": \"draft pass\", \"block\": %d, \"us\": %.1f}\n", b.n, best_us(draft_pass, &b, reps, rounds));

    free(features);
    pd_draft_context_free(dc);
    pd_context_free(ctx);
    pd_draft_free(d);
    if (m != base) pd_model_free(m);
    pd_model_free(base);
    return 0;
}
