/* test_prefix.c - what evaluates less with the same bits. Prefix reuse
 * (pd_context_kv_match): what the cache is known
 * to hold after plain, masked, positioned, truncated and forked evaluations,
 * and that evaluating a sequence after a reused prefix gives the bits of a
 * whole evaluation, at every split point (or every SPLIT_STRIDE-th), for float, F16, BF16 and
 * block-quantized weights, with one, two and three threads. Masked key
 * blocks skipped, and the last layer carrying the kept rows only. Several
 * contexts evaluated in joint passes (pd_eval_many) as each alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"

static const char *fixture_dir;
static int g_stride = 1; /* split points tried: 1, 1 + stride, ... */

static pd_model *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", fixture_dir, name, strstr(name, "gguf") ? ".gguf" : "");
    pd_error err;
    pd_model *m = pd_model_load(path, NULL, &err);
    if (!m) fail_msg("%s", err.message);
    return m;
}

static pd_context *new_ctx(const pd_model *m, int n_ctx, int threads, int n_batch)
{
    pd_error err;
    pd_context_params p = {n_ctx, threads, n_batch, 0, PD_KV_AUTO};
    pd_context *c = pd_context_new(m, &p, &err);
    if (!c) fail_msg("%s", err.message);
    return c;
}

static void eval(pd_context *ctx, const int32_t *ids, int n)
{
    pd_error err;
    if (pd_eval_tokens(ctx, ids, n, &err)) fail_msg("%s", err.message);
}

/* What the cache is known to hold, through each kind of batch and call. */
static void test_match_rules(void **state)
{
    (void)state;
    pd_model *m = load("gqa-hf-f32");
    pd_context *ctx = new_ctx(m, 64, 1, 16);
    int32_t ids[12] = {5, 9, 17, 33, 2, 8, 41, 7, 3, 11, 19, 23}, other[12];
    memcpy(other, ids, sizeof ids);
    other[6] = 100;
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 0); /* empty cache */
    eval(ctx, ids, 4);
    eval(ctx, ids + 4, 4); /* a causal continuation extends the run */
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 8);
    assert_int_equal(pd_context_kv_match(ctx, ids, 5), 5);
    assert_int_equal(pd_context_kv_match(ctx, other, 12), 6);
    assert_int_equal(pd_context_kv_match(ctx, ids + 1, 11), 0);
    assert_int_equal(pd_context_kv_match(NULL, ids, 12), 0);
    assert_int_equal(pd_context_kv_match(ctx, NULL, 12), 0);
    assert_int_equal(pd_context_kv_match(ctx, ids, 0), 0);
    assert_int_equal(pd_context_kv_match(ctx, ids, -3), 0);

    pd_error err;
    /* explicit positions equal to the causal ones still extend it */
    int32_t pos[2] = {8, 9};
    pd_batch b = {ids + 8, 2, pos, NULL, NULL, 0, 0};
    assert_int_equal(pd_eval(ctx, &b, &err), PD_OK);
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 10);
    /* truncation keeps what it keeps; a fork copies it */
    assert_int_equal(pd_context_kv_truncate(ctx, 7, &err), PD_OK);
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 7);
    pd_context *fork = pd_context_fork(ctx, &err);
    assert_non_null(fork);
    assert_int_equal(pd_context_kv_match(fork, ids, 12), 7);
    /* other positions, or a mask, end the run where the batch starts */
    pos[0] = 20;
    pos[1] = 21;
    b = (pd_batch){ids + 7, 2, pos, NULL, NULL, 0, 0};
    assert_int_equal(pd_eval(ctx, &b, &err), PD_OK);
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 7);
    eval(ctx, ids + 9, 1); /* not after the run's end: nothing added */
    assert_int_equal(pd_context_kv_match(ctx, ids, 12), 7);
    const uint8_t vis[4] = {1, 0, 1, 1};
    b = (pd_batch){ids + 7, 2, NULL, vis, NULL, 0, 0};
    assert_int_equal(pd_eval(fork, &b, &err), PD_OK);
    assert_int_equal(pd_context_kv_match(fork, ids, 12), 7);
    /* a refused batch changes nothing */
    int32_t bad = 1 << 30;
    assert_int_equal(pd_context_kv_truncate(fork, 7, &err), PD_OK);
    assert_int_equal(pd_eval_tokens(fork, &bad, 1, &err), PD_ERR_RANGE);
    eval(fork, ids + 7, 5);
    assert_int_equal(pd_context_kv_match(fork, ids, 12), 12);
    pd_context_free(fork);
    pd_context_free(ctx);
    pd_model_free(m);
}

/* ids evaluated whole, and after each prefix the cache keeps (the prefix
 * evaluated once, truncated back to after every other use): the same last
 * hidden state and logits, bit for bit. */
static void test_split_bitwise(void **state)
{
    (void)state;
    static const char *const models[] = {"gqa-hf-f32", "gqa-gguf-f16", "gqa-gguf-bf16", "gqa-gguf-q8_0",
                                         "gqa-gguf-q4_0", "gqa-gguf-q4_1", "tiny-hf-bf16-untied"};
    enum { N = 40 };
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        pd_model *m = load(models[mi]);
        const pd_config *c = pd_model_config(m);
        int32_t ids[N], other[N];
        for (int i = 0; i < N; i++) {
            ids[i] = (int32_t)((i * 37 + 11) % c->vocab);
            other[i] = (int32_t)((i * 53 + 5) % c->vocab);
        }
        for (int threads = 1; threads <= 3; threads++) {
            /* n_batch 16: whole evaluations take several chunks, reuse starts mid-chunk */
            pd_context *whole = new_ctx(m, 64, threads, 16), *reuse = new_ctx(m, 64, threads, 16);
            eval(whole, ids, N);
            const float *want = pd_context_logits(whole, 0);
            float *want_h = malloc(sizeof(float) * (size_t)c->hidden);
            memcpy(want_h, pd_context_hidden(whole, 0), sizeof(float) * (size_t)c->hidden);
            pd_error err;
            for (int k = 1; k < N; k += g_stride) {
                /* the cache holds ids[0..k) then something else */
                assert_int_equal(pd_context_kv_truncate(reuse, 0, &err), PD_OK);
                eval(reuse, ids, k);
                eval(reuse, other, N - k);
                int32_t keep = pd_context_kv_match(reuse, ids, N), expect = k;
                while (expect < N && other[expect - k] == ids[expect]) expect++;
                assert_int_equal(keep, expect);
                if (keep == N) keep--;
                assert_int_equal(pd_context_kv_truncate(reuse, keep, &err), PD_OK);
                eval(reuse, ids + keep, N - keep);
                assert_memory_equal(pd_context_hidden(reuse, 0), want_h, sizeof(float) * (size_t)c->hidden);
                assert_memory_equal(pd_context_logits(reuse, 0), want, sizeof(float) * (size_t)c->vocab);
            }
            free(want_h);
            pd_context_free(whole);
            pd_context_free(reuse);
        }
        printf("  %s: %d split points x 1, 2, 3 threads: bitwise equal to the whole evaluation\n", models[mi],
               (N - 2) / g_stride + 1);
        pd_model_free(m);
    }
}

/* Masked batches skip the blocks of keys a token cannot see (attention in
 * blocks of 64): a prefix, then 128 tokens that the last ones do not see,
 * then those tokens (positions following the prefix) give the bits of the
 * prefix and the last tokens alone, 128 positions earlier in the cache (a
 * whole number of blocks, so the sums keep their order). */
static void test_hidden_blocks(void **state)
{
    (void)state;
    static const char *const models[] = {"gqa-hf-f32", "gqa-gguf-q4_0"};
    enum { P = 40, F = 128, T = 9, N = P + F + T };
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        pd_model *m = load(models[mi]);
        const pd_config *c = pd_model_config(m);
        int32_t ids[N], pos[N], plain[P + T], rows[T];
        uint8_t *vis = calloc((size_t)N * N, 1);
        for (int i = 0; i < N; i++) {
            ids[i] = (int32_t)((i * 29 + 3) % c->vocab);
            pos[i] = i < P + F ? i : i - F;
            for (int j = 0; j <= i; j++) vis[i * N + j] = i < P + F || j < P || j >= P + F;
        }
        for (int i = 0; i < P; i++) plain[i] = ids[i];
        for (int i = 0; i < T; i++) {
            plain[P + i] = ids[P + F + i];
            rows[i] = P + F + i;
        }
        for (int threads = 1; threads <= 2; threads++) {
            pd_context *masked = new_ctx(m, 256, threads, 256), *alone = new_ctx(m, 256, threads, 256);
            pd_batch b = {ids, N, pos, vis, rows, T, 0};
            pd_error err;
            assert_int_equal(pd_eval(masked, &b, &err), PD_OK);
            int32_t plain_rows[T];
            for (int i = 0; i < T; i++) plain_rows[i] = P + i;
            pd_batch pb = {plain, P + T, NULL, NULL, plain_rows, T, 0};
            assert_int_equal(pd_eval(alone, &pb, &err), PD_OK);
            for (int i = 0; i < T; i++)
                assert_memory_equal(pd_context_hidden(masked, i), pd_context_hidden(alone, i),
                                    sizeof(float) * (size_t)c->hidden);
            pd_context_free(masked);
            pd_context_free(alone);
        }
        printf("  %s: %d tokens behind %d hidden ones: bitwise those evaluated without them\n", models[mi], T, F);
        free(vis);
        pd_model_free(m);
    }
}

/* The last layer carries only the rows a batch keeps: any subset of rows
 * (in any order, repeated, none in some chunks), causal or under a mask,
 * gives the bits those rows have when every row is kept. */
static void test_kept_rows(void **state)
{
    (void)state;
    static const char *const models[] = {"gqa-hf-f32", "gqa-gguf-bf16", "gqa-gguf-q4_0", "gqa-gguf-q8_0"};
    enum { N = 40 };
    const int32_t some[] = {39, 3, 17, 17, 20, 0};
    int32_t all[N];
    uint8_t vis[N * N];
    for (int i = 0; i < N; i++) {
        all[i] = i;
        for (int j = 0; j < N; j++) vis[i * N + j] = j <= i && (j < 10 || (i - j) % 3 == 0);
    }
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        pd_model *m = load(models[mi]);
        const pd_config *c = pd_model_config(m);
        int32_t ids[N];
        for (int i = 0; i < N; i++) ids[i] = (int32_t)((i * 41 + 7) % c->vocab);
        for (int threads = 1; threads <= 3; threads++)
            for (int masked = 0; masked < 2; masked++) {
                pd_context *whole = new_ctx(m, 64, threads, 8), *part = new_ctx(m, 64, threads, 8); /* 5 chunks, 2 with no kept row */
                pd_batch b = {ids, N, NULL, masked ? vis : NULL, all, N, 1};
                pd_error err;
                assert_int_equal(pd_eval(whole, &b, &err), PD_OK);
                b.outputs = some;
                b.n_outputs = 6;
                assert_int_equal(pd_eval(part, &b, &err), PD_OK);
                for (int k = 0; k < 6; k++) {
                    assert_memory_equal(pd_context_hidden(part, k), pd_context_hidden(whole, some[k]),
                                        sizeof(float) * (size_t)c->hidden);
                    assert_memory_equal(pd_context_logits(part, k), pd_context_logits(whole, some[k]),
                                        sizeof(float) * (size_t)c->vocab);
                }
                /* the cache got every row's keys and values: a continuation agrees too */
                assert_int_equal(pd_eval_tokens(whole, ids, 3, &err), PD_OK);
                assert_int_equal(pd_eval_tokens(part, ids, 3, &err), PD_OK);
                assert_memory_equal(pd_context_logits(part, 0), pd_context_logits(whole, 0),
                                    sizeof(float) * (size_t)c->vocab);
                pd_context_free(whole);
                pd_context_free(part);
            }
        printf("  %s: 6 kept rows of 40, causal and masked, 1-3 threads: bitwise those of all rows kept\n",
               models[mi]);
        pd_model_free(m);
    }
}

/* pd_eval_many: five contexts, each with a prefix of its own, then one
 * batch each in joint passes (one token; three with every row kept; a
 * masked pair; explicit positions; twenty tokens, which n_batch 8 splits
 * across passes), on a pass context that is one of them or none of them:
 * every context's outputs and a continuation's logits are those of pd_eval
 * on its own, bit for bit for block-quantized weights and within 1e-5 of
 * the largest logit for float ones (whose products may round in another
 * order when a pass has more rows). */
static void test_eval_many(void **state)
{
    (void)state;
    static const char *const models[] = {"gqa-hf-f32", "gqa-gguf-bf16", "gqa-gguf-f16", "gqa-gguf-q8_0",
                                         "gqa-gguf-q4_0", "gqa-gguf-q4_1"};
    enum { S = 5 };
    static const int prefix[S] = {3, 11, 1, 7, 16}, len[S] = {1, 3, 2, 2, 20};
    static const int32_t all[3] = {0, 1, 2};
    static const uint8_t vis[4] = {1, 0, 1, 1};
    static const int32_t pos[2] = {30, 31};
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
        pd_model *m = load(models[mi]);
        const pd_config *c = pd_model_config(m);
        int exact = strstr(models[mi], "q4") || strstr(models[mi], "q8");
        int32_t ids[S][40];
        pd_batch b[S];
        for (int s = 0; s < S; s++) {
            for (int i = 0; i < 40; i++) ids[s][i] = (int32_t)((i * 31 + s * 7 + 1) % c->vocab);
            b[s] = (pd_batch){ids[s] + prefix[s], len[s], NULL, NULL, NULL, 0, 1};
        }
        b[1].outputs = all;
        b[1].n_outputs = 3;
        b[2].visible = vis;
        b[3].positions = pos;
        for (int threads = 1; threads <= 3; threads++)
            for (int lead_in = 0; lead_in < 2; lead_in++) {
                pd_context *alone[S], *joint[S], *pass = new_ctx(m, 64, threads, 8);
                pd_error err;
                for (int s = 0; s < S; s++) {
                    alone[s] = new_ctx(m, 64, 1, 64);
                    joint[s] = lead_in && s == 2 ? pass : new_ctx(m, 48, 1, 1);
                    eval(alone[s], ids[s], prefix[s]);
                    eval(joint[s], ids[s], prefix[s]);
                    assert_int_equal(pd_eval(alone[s], &b[s], &err), PD_OK);
                }
                assert_int_equal(pd_eval_many(pass, joint, b, S, &err), PD_OK);
                for (int s = 0; s < S; s++) {
                    assert_int_equal(pd_context_kv_len(joint[s]), pd_context_kv_len(alone[s]));
                    assert_int_equal(pd_context_n_outputs(joint[s]), pd_context_n_outputs(alone[s]));
                    for (int k = 0; k < pd_context_n_outputs(alone[s]); k++) {
                        const float *want = pd_context_logits(alone[s], k), *got = pd_context_logits(joint[s], k);
                        float top = 0;
                        for (int v = 0; v < c->vocab; v++) top = fabsf(want[v]) > top ? fabsf(want[v]) : top;
                        if (exact) assert_memory_equal(got, want, sizeof(float) * (size_t)c->vocab);
                        for (int v = 0; v < c->vocab; v++) assert_true(fabsf(got[v] - want[v]) <= 1e-5f * top);
                    }
                    /* the caches agree: so does a continuation */
                    eval(alone[s], ids[s] + 30, 2);
                    eval(joint[s], ids[s] + 30, 2);
                    const float *want = pd_context_logits(alone[s], 0), *got = pd_context_logits(joint[s], 0);
                    for (int v = 0; v < c->vocab; v++)
                        assert_true(fabsf(got[v] - want[v]) <= 1e-5f * (fabsf(want[v]) + 1.0f));
                    if (exact) assert_memory_equal(got, want, sizeof(float) * (size_t)c->vocab);
                }
                for (int s = 0; s < S; s++) {
                    pd_context_free(alone[s]);
                    if (joint[s] != pass) pd_context_free(joint[s]);
                }
                pd_context_free(pass);
            }
        printf("  %s: 5 contexts in joint passes, 1-3 threads: %s those of each alone\n", models[mi],
               exact ? "bitwise" : "within 1e-5 of");
        pd_model_free(m);
    }
}

/* pd_eval_many's refusals, each before anything is evaluated. */
static void test_eval_many_errors(void **state)
{
    (void)state;
    pd_model *m = load("gqa-gguf-q8_0"), *other = load("gqa-hf-f32");
    pd_context *pass = new_ctx(m, 32, 2, 8), *a = new_ctx(m, 32, 1, 1), *b = new_ctx(m, 32, 1, 1);
    pd_context *longer = new_ctx(m, 40, 1, 1), *foreign = new_ctx(other, 32, 1, 1);
    int32_t ids[3] = {1, 2, 3}, bad = 1 << 20;
    eval(a, ids, 2);
    eval(b, ids, 3);
    pd_batch ok = {ids, 1, NULL, NULL, NULL, 0, 1}, wrong = {&bad, 1, NULL, NULL, NULL, 0, 1};
    pd_batch two[2] = {ok, wrong};
    pd_error err;
    pd_context *ab[2] = {a, b}, *aa[2] = {a, a}, *al[2] = {a, longer}, *af[2] = {a, foreign};
    assert_int_equal(pd_eval_many(pass, ab, two, 2, &err), PD_ERR_RANGE);
    assert_non_null(strstr(err.message, "context 1"));
    assert_int_equal(pd_context_kv_len(a), 2); /* nothing evaluated: a's batch was fine */
    assert_int_equal(pd_context_kv_len(b), 3);
    two[1] = ok;
    assert_int_equal(pd_eval_many(pass, aa, two, 2, &err), PD_ERR_ARG);
    assert_non_null(strstr(err.message, "the same context"));
    assert_int_equal(pd_eval_many(pass, al, two, 2, &err), PD_ERR_ARG);
    assert_non_null(strstr(err.message, "more than the pass context"));
    assert_int_equal(pd_eval_many(pass, af, two, 2, &err), PD_ERR_ARG);
    assert_non_null(strstr(err.message, "another model"));
    assert_int_equal(pd_eval_many(NULL, ab, two, 2, &err), PD_ERR_ARG);
    assert_int_equal(pd_eval_many(pass, ab, two, 0, &err), PD_ERR_ARG);
    assert_int_equal(pd_context_kv_len(a), 2);
    assert_int_equal(pd_eval_many(pass, ab, two, 2, &err), PD_OK);
    assert_int_equal(pd_context_kv_len(a), 3);
    assert_int_equal(pd_context_kv_len(b), 4);
    pd_context_free(pass);
    pd_context_free(a);
    pd_context_free(b);
    pd_context_free(longer);
    pd_context_free(foreign);
    pd_model_free(m);
    pd_model_free(other);
}

int main(int argc, char **argv)
{
    fixture_dir = argc > 1 ? argv[1] : getenv("PD_MODEL_FIXTURES");
    if (!fixture_dir) {
        fprintf(stderr, "usage: test_prefix FIXTURE_DIR [SPLIT_STRIDE]\n");
        return 2;
    }
    if (argc > 2 && atoi(argv[2]) > 0) g_stride = atoi(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_rules),
        cmocka_unit_test(test_split_bitwise),
        cmocka_unit_test(test_hidden_blocks),
        cmocka_unit_test(test_kept_rows),
        cmocka_unit_test(test_eval_many),
        cmocka_unit_test(test_eval_many_errors),
    };
    return cmocka_run_group_tests_name("prefix", tests, NULL, NULL);
}
