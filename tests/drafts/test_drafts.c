/* test_drafts.c - DFlash / DFlash2 drafts against the float64 reference of
 * tools/testmodels/draft_reference.py, and the loader's refusals.
 *
 * Usage: test_drafts FIXTURES   (the folder tests/drafts/make_fixtures.py wrote)
 *
 * For each random draft (F32 sharded, BF16, F16) the steps of cases.json run
 * on one draft context: forget positions, append features, propose a block;
 * every logit must be within 1e-4 of the largest |logit| of the reference,
 * and the tokens (argmax, or DFlash2's selector path) identical. Each draft
 * of broken.json must be refused with its status and a message holding its
 * text (the file or the tensor). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"

static const char *fixtures;

static json_t *load_json(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", fixtures, name);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) fail_msg("%s: %s", path, je.text);
    return root;
}

static float *floats_of(const json_t *rows, int64_t *n_rows, int64_t *n_cols)
{
    *n_rows = (int64_t)json_array_size(rows);
    *n_cols = *n_rows ? (int64_t)json_array_size(json_array_get(rows, 0)) : 0;
    float *out = malloc((size_t)(*n_rows * *n_cols + 1) * sizeof *out);
    assert_non_null(out);
    for (int64_t r = 0; r < *n_rows; r++)
        for (int64_t c = 0; c < *n_cols; c++)
            out[r * *n_cols + c] = (float)json_number_value(json_array_get(json_array_get(rows, (size_t)r), (size_t)c));
    return out;
}

/* One step of a case; returns max |C - reference| / max |reference|, which
 * must be within bound; the proposed tokens must be the reference's when
 * exact (a draft quantized at load proposes from other logits). */
static double run_step(pd_draft_context *dc, const pd_draft *d, const json_t *step, const char *name, int s,
                       double bound, bool exact)
{
    pd_error err = {0};
    json_int_t keep = json_integer_value(json_object_get(step, "keep"));
    if (keep >= 0) assert_int_equal(pd_draft_context_truncate(dc, (int32_t)keep, &err), PD_OK);
    int64_t n_new, n_feat;
    float *feat = floats_of(json_object_get(step, "append"), &n_new, &n_feat);
    assert_int_equal(n_feat, pd_draft_feature_size(d));
    int32_t len0 = pd_draft_context_len(dc);
    if (pd_draft_context_append(dc, feat, (int32_t)n_new, &err)) fail_msg("%s: %s", name, err.message);
    assert_int_equal(pd_draft_context_len(dc), len0 + n_new);
    free(feat);

    const json_t *jb = json_object_get(step, "block");
    int32_t n_block = (int32_t)json_array_size(jb), block[64], tokens[64];
    for (int32_t i = 0; i < n_block; i++) block[i] = (int32_t)json_integer_value(json_array_get(jb, (size_t)i));
    int64_t rows, vocab;
    float *want = floats_of(json_object_get(step, "logits"), &rows, &vocab);
    assert_int_equal(rows, n_block - 1);
    float *got = malloc((size_t)(rows * vocab) * sizeof *got);
    assert_non_null(got);
    if (pd_draft_propose(dc, block, n_block, tokens, got, &err)) fail_msg("%s: %s", name, err.message);
    assert_int_equal(pd_draft_context_len(dc), len0 + n_new); /* proposing leaves the context as it was */
    double max_ref = 0, max_diff = 0;
    for (int64_t i = 0; i < rows * vocab; i++) {
        max_ref = fmax(max_ref, fabs(want[i]));
        max_diff = fmax(max_diff, fabs((double)got[i] - want[i]));
    }
    const json_t *jt = json_object_get(step, "tokens");
    for (int32_t p = 0; p < n_block - 1; p++)
        if (exact && tokens[p] != json_integer_value(json_array_get(jt, (size_t)p)))
            fail_msg("%s step %d: token %d is %d, the reference's %lld", name, s, p, tokens[p],
                     (long long)json_integer_value(json_array_get(jt, (size_t)p)));
    free(want);
    free(got);
    double rel = max_diff / max_ref;
    if (!(rel <= bound)) fail_msg("%s step %d: logits differ by %g of the largest (%g)", name, s, rel, max_ref);
    return rel;
}

static void test_reference_cases(void **state)
{
    (void)state;
    json_t *root = load_json("cases.json");
    const json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) > 0);
    pd_error err = {0};
    size_t i;
    const json_t *c;
    /* as stored: the reference's logits within 1e-4 and its tokens; quantized
     * at load, logits near the reference's (the float64 one of the unquantized
     * weights: what Q8_0 and Q4_0 cost on these random drafts, whose matrices
     * are 2-4 blocks wide: at most 0.037 and 0.38 of the largest logit when
     * written), tokens free; a wrong scale, row or block would be off by more
     * than the largest logit */
    const struct {
        pd_weight_quant q;
        const char *what;
        double bound;
    } kinds[] = {{PD_QUANT_NONE, "as stored", 1e-4}, {PD_QUANT_Q8_0, "Q8_0", 0.08}, {PD_QUANT_Q4_0, "Q4_0", 0.5}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        pd_model *target = pd_model_load(json_string_value(json_object_get(c, "target")), NULL, &err);
        if (!target) fail_msg("%s", err.message);
        pd_draft *d = pd_draft_load_quantized(json_string_value(json_object_get(c, "dir")), target, kinds[k].q, &err);
        if (!d) fail_msg("%s: %s", name, err.message);
        assert_int_equal(pd_draft_get_kind(d), strstr(name, "dflash2") ? PD_DRAFT_DFLASH2 : PD_DRAFT_DFLASH);
        assert_ptr_equal(pd_draft_target(d), target);
        assert_int_equal(pd_draft_target_layer(d, pd_draft_n_target_layers(d)), -1);
        pd_draft_context *dc = pd_draft_context_new(d, 64, 2, &err);
        if (!dc) fail_msg("%s: %s", name, err.message);
        const json_t *steps = json_object_get(c, "steps"), *step;
        size_t s;
        double worst = 0;
        json_array_foreach(steps, s, step)
            worst = fmax(worst, run_step(dc, d, step, name, (int)s, kinds[k].bound, kinds[k].q == PD_QUANT_NONE));
        printf("%s, %s: %zu steps, logits within %.3g of the largest%s\n", name, kinds[k].what,
               json_array_size(steps), worst, kinds[k].q == PD_QUANT_NONE ? ", tokens identical" : "");
        pd_draft_context_free(dc);
        pd_draft_free(d);
        pd_model_free(target);
    }
    json_decref(root);
}

/* The calls' own refusals: sizes, ids, a full context. */
static void test_bad_calls(void **state)
{
    (void)state;
    json_t *root = load_json("cases.json");
    const json_t *c = json_array_get(json_object_get(root, "cases"), 0);
    pd_error err = {0};
    pd_model *target = pd_model_load(json_string_value(json_object_get(c, "target")), NULL, &err);
    assert_non_null(target);
    assert_null(pd_draft_load(NULL, target, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    pd_draft *d = pd_draft_load(json_string_value(json_object_get(c, "dir")), target, &err);
    assert_non_null(d);
    assert_null(pd_draft_context_new(d, 0, 1, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_draft_context_new(d, 1 << 30, 1, &err));
    assert_int_equal(err.code, PD_ERR_RANGE);
    pd_draft_context *dc = pd_draft_context_new(d, 4, 1, &err);
    assert_non_null(dc);
    float *feat = calloc((size_t)pd_draft_feature_size(d) * 5, sizeof *feat);
    assert_int_equal(pd_draft_context_append(dc, feat, 5, &err), PD_ERR_CONTEXT);
    assert_int_equal(pd_draft_context_len(dc), 0);
    assert_int_equal(pd_draft_context_append(dc, feat, 4, &err), PD_OK);
    assert_int_equal(pd_draft_context_truncate(dc, 5, &err), PD_ERR_RANGE);
    int32_t block[64] = {1, 2, 3}, tokens[64];
    assert_int_equal(pd_draft_propose(dc, block, 1, tokens, NULL, &err), PD_ERR_ARG);
    assert_int_equal(pd_draft_propose(dc, block, pd_draft_block_size(d) + 1, tokens, NULL, &err), PD_ERR_ARG);
    block[1] = 1 << 20;
    assert_int_equal(pd_draft_propose(dc, block, 3, tokens, NULL, &err), PD_ERR_RANGE);
    assert_non_null(strstr(err.message, "block token"));
    block[1] = pd_draft_mask_id(d);
    assert_int_equal(pd_draft_propose(dc, block, 3, tokens, NULL, &err), PD_OK);
    free(feat);
    pd_draft_context_free(dc);
    pd_draft_free(d);
    pd_model_free(target);
    json_decref(root);
}

static void test_refusals(void **state)
{
    (void)state;
    json_t *root = load_json("broken.json");
    pd_error err = {0};
    pd_model *target = pd_model_load(json_string_value(json_object_get(root, "target")), NULL, &err);
    assert_non_null(target);
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(root, "cases"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *text = json_string_value(json_object_get(c, "text"));
        memset(&err, 0, sizeof err);
        pd_draft *d = pd_draft_load(json_string_value(json_object_get(c, "dir")), target, &err);
        if (d) fail_msg("%s: loaded", name);
        if (err.code != (pd_status)json_integer_value(json_object_get(c, "status")) || !strstr(err.message, text))
            fail_msg("%s: status %d \"%s\", expected status %lld and \"%s\"", name, err.code, err.message,
                     (long long)json_integer_value(json_object_get(c, "status")), text);
    }
    printf("%zu broken drafts refused\n", json_array_size(json_object_get(root, "cases")));
    pd_model_free(target);
    json_decref(root);
}

/* pd_context_keep_layer_states against the reference's residual stream after each layer. */
static void test_layer_states(void **state)
{
    (void)state;
    json_t *root = load_json("states.json");
    pd_error err = {0};
    pd_model *target = pd_model_load(json_string_value(json_object_get(root, "target")), NULL, &err);
    assert_non_null(target);
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 32;
    cp.n_batch = 4; /* the batch in three passes */
    cp.n_threads = 2;
    pd_context *ctx = pd_context_new(target, &cp, &err);
    assert_non_null(ctx);
    const json_t *jl = json_object_get(root, "layers"), *ji = json_object_get(root, "ids");
    int32_t layers[2] = {(int32_t)json_integer_value(json_array_get(jl, 0)), (int32_t)json_integer_value(json_array_get(jl, 1))};
    int32_t bad = 99, ids[16];
    assert_int_equal(pd_context_keep_layer_states(ctx, &bad, 1, &err), PD_ERR_RANGE);
    assert_int_equal(pd_context_keep_layer_states(ctx, layers, 2, &err), PD_OK);
    int32_t n = (int32_t)json_array_size(ji);
    for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(ji, (size_t)i));
    assert_int_equal(pd_eval_tokens(ctx, ids, n, &err), PD_OK); /* keeps the last row only: every row's states all the same */
    int64_t rows, width;
    float *want = floats_of(json_object_get(root, "states"), &rows, &width);
    assert_int_equal(rows, n);
    double max_ref = 0, max_diff = 0;
    for (int32_t r = 0; r < n; r++) {
        const float *got = pd_context_layer_states(ctx, r);
        assert_non_null(got);
        for (int64_t i = 0; i < width; i++) {
            max_ref = fmax(max_ref, fabs(want[r * width + i]));
            max_diff = fmax(max_diff, fabs((double)got[i] - want[r * width + i]));
        }
    }
    assert_null(pd_context_layer_states(ctx, n));
    printf("layer states within %.3g of the largest\n", max_diff / max_ref);
    assert_true(max_diff <= 1e-4 * max_ref);
    assert_int_equal(pd_context_keep_layer_states(ctx, NULL, 0, &err), PD_OK);
    assert_int_equal(pd_eval_tokens(ctx, ids, 1, &err), PD_OK);
    assert_null(pd_context_layer_states(ctx, 0));
    free(want);
    pd_context_free(ctx);
    pd_model_free(target);
    json_decref(root);
}

typedef struct {
    int32_t ids[512];
    int n, stop_after; /* stop_after > 0: the callback stops there */
} collected;

static int collect(int32_t id, const char *piece, size_t len, void *user)
{
    (void)piece;
    (void)len;
    collected *c = user;
    if (c->n < 512) c->ids[c->n++] = id;
    return c->stop_after > 0 && c->n >= c->stop_after;
}

/* pd_draft_generate gives pd_generate's tokens, text and cache on target,
 * for both draft kinds, several prompts, block sizes, limits and stops, and
 * sampling with a seed; adds its counts to total, and the sampled runs'
 * drafted and accepted tokens to sampled. */
static void generate_identical(const json_t *root, const char *path, pd_weight_quant quantize, pd_draft_stats *total,
                               pd_draft_stats *sampled)
{
    pd_error err = {0};
    pd_model *target = pd_model_load(path, NULL, &err);
    if (!target) fail_msg("%s", err.message);
    const int32_t vocab = pd_model_config(target)->vocab;
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 96;
    cp.n_threads = 2;
    size_t di, pi;
    const json_t *jd, *jp;
    json_array_foreach(json_object_get(root, "drafts"), di, jd) {
        pd_draft *d = pd_draft_load_quantized(json_string_value(jd), target, quantize, &err);
        if (!d) fail_msg("%s", err.message);
        pd_draft_context *dc = pd_draft_context_new(d, 64, 2, &err); /* fewer positions than the target: the end decoded a token a pass */
        assert_non_null(dc);
        json_array_foreach(json_object_get(root, "prompts"), pi, jp) {
            for (int v = 0; v < 6; v++) {
                const int32_t blocks[] = {0, 2, 3, 0, 0, 0}, limits[] = {0, 0, 7, 13, 0, 0}, stops[] = {0, 0, 0, 0, 5, 0};
                pd_generate_params gp = {.sampler = pd_sampler_default_params(), .max_tokens = limits[v], .chat = v == 1};
                if (v == 5) {
                    gp.sampler.temperature = 0.8f;
                    gp.sampler.seed = 3;
                    gp.max_tokens = 9;
                }
                collected ca = {.stop_after = stops[v]}, cb = {.stop_after = stops[v]};
                char *ta = NULL, *tb = NULL;
                pd_context *a = pd_context_new(target, &cp, &err), *b = pd_context_new(target, &cp, &err);
                assert_non_null(a);
                assert_non_null(b);
                const char *prompt = json_string_value(jp);
                assert_int_equal(pd_generate(a, prompt, &gp, collect, &ca, &ta, &err), PD_OK);
                pd_draft_stats st;
                if (pd_draft_generate(b, dc, prompt, &gp, blocks[v], collect, &cb, &tb, &st, &err))
                    fail_msg("%s: %s", json_string_value(jd), err.message);
                if (ca.n != cb.n || memcmp(ca.ids, cb.ids, (size_t)ca.n * sizeof(int32_t)) || strcmp(ta, tb))
                    fail_msg("%s on %s, prompt \"%s\", variant %d: %d tokens \"%s\" against pd_generate's %d \"%s\"",
                             json_string_value(jd), path, prompt, v, cb.n, tb, ca.n, ta);
                assert_int_equal(st.produced, cb.n);
                assert_true(st.accepted <= st.drafted);
                if (v == 5) {
                    sampled->drafted += st.drafted;
                    sampled->accepted += st.accepted;
                }
                total->passes += st.passes;
                total->drafted += st.drafted;
                total->accepted += st.accepted;
                total->produced += st.produced;
                assert_int_equal(pd_context_kv_len(a), pd_context_kv_len(b));
                if (pd_context_kv_len(a) < pd_context_n_ctx(a)) { /* the caches: one more token, the same logits */
                    int32_t one = 1;
                    assert_int_equal(pd_eval_tokens(a, &one, 1, &err), PD_OK);
                    assert_int_equal(pd_eval_tokens(b, &one, 1, &err), PD_OK);
                    assert_memory_equal(pd_context_logits(a, 0), pd_context_logits(b, 0), (size_t)vocab * sizeof(float));
                }
                assert_null(pd_context_layer_states(b, 0)); /* turned off again */
                pd_free(ta);
                pd_free(tb);
                pd_context_free(a);
                pd_context_free(b);
            }
        }
        pd_draft_context_free(dc);
        pd_draft_free(d);
    }
    pd_model_free(target);
}

static void test_generate_identical(void **state)
{
    (void)state;
    json_t *root = load_json("generate.json");
    assert_true(json_array_size(json_object_get(root, "targets")) > 0);
    assert_true(json_array_size(json_object_get(root, "drafts")) > 0);
    assert_true(json_array_size(json_object_get(root, "prompts")) > 0);
    size_t i;
    const json_t *jt;
    json_array_foreach(json_object_get(root, "targets"), i, jt) {
        pd_draft_stats total = {0}, sampled = {0};
        generate_identical(root, json_string_value(jt), PD_QUANT_NONE, &total, &sampled);
        printf("%s: %d tokens in %d passes, %d drafted, %d accepted (sampling: %d drafted, %d accepted); text "
               "identical\n",
               json_string_value(jt), total.produced, total.passes, total.drafted, total.accepted, sampled.drafted,
               sampled.accepted);
        assert_true(total.accepted > 0);
        assert_true(sampled.drafted > 0 && sampled.accepted > 0); /* sampling verifies drafts too */
    }
    /* drafts quantized at load propose otherwise; the text is still the target's */
    for (pd_weight_quant q = PD_QUANT_Q8_0; q <= PD_QUANT_Q4_0; q++) {
        pd_draft_stats total = {0}, sampled = {0};
        const char *path = json_string_value(json_array_get(json_object_get(root, "targets"), 0));
        generate_identical(root, path, q, &total, &sampled);
        printf("%s, the drafts quantized (%s): %d tokens in %d passes, %d drafted, %d accepted; text identical\n", path,
               q == PD_QUANT_Q8_0 ? "Q8_0" : "Q4_0", total.produced, total.passes, total.drafted, total.accepted);
        assert_true(total.drafted > 0);
    }
    json_decref(root);
}

/* Quantizing at load: only Q8_0 and Q4_0, and only matrices of whole blocks. */
static void test_quantize_refusals(void **state)
{
    (void)state;
    json_t *root = load_json("generate.json");
    pd_error err = {0};
    pd_model *target = pd_model_load(json_string_value(json_object_get(root, "target")), NULL, &err);
    if (!target) fail_msg("%s", err.message);
    const char *good = json_string_value(json_array_get(json_object_get(root, "drafts"), 0));
    const char *odd = json_string_value(json_object_get(root, "unquantizable"));
    assert_null(pd_draft_load_quantized(good, target, PD_QUANT_Q4_1, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_draft_load_quantized(good, target, (pd_weight_quant)99, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_draft_load_quantized(odd, target, PD_QUANT_Q8_0, &err));
    assert_int_equal(err.code, PD_ERR_SHAPE);
    if (!strstr(err.message, "layers.0.mlp.down_proj.weight has 80 columns, not whole blocks of 32"))
        fail_msg("%s", err.message);
    pd_draft *d = pd_draft_load(odd, target, &err); /* as stored it loads */
    assert_non_null(d);
    pd_draft_free(d);
    pd_model_free(target);
    json_decref(root);
}

int main(int argc, char **argv)
{
    fixtures = argc > 1 ? argv[1] : getenv("PD_DRAFT_FIXTURES");
    if (!fixtures) {
        fprintf(stderr, "usage: test_drafts FIXTURES\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_cases),
        cmocka_unit_test(test_bad_calls),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_layer_states),
        cmocka_unit_test(test_generate_identical),
        cmocka_unit_test(test_quantize_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
