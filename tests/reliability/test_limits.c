/* test_limits.c - every limit is checked before the work starts, with its
 * own error code and a message that names the sizes: the context's memory
 * budget, kept outputs per batch, context length, candidates per decision,
 * labels of a classifier head, and the records and tokens of an extraction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pocketdec.h"

static const char *model_dir, *pointer_dir, *classifier_dir, *schema_path;
static pd_model *model;

static void expect_message(const pd_error *err, const char *needle)
{
    if (!strstr(err->message, needle)) fail_msg("\"%s\" does not mention \"%s\"", err->message, needle);
}

/* model-a: 2 layers, 2 KV heads of 16, hidden 64, vocab 300 */
static void test_context_budget(void **state)
{
    (void)state;
    pd_error err = {PD_OK, ""};
    pd_context_params p = {64, 1, 16, 0, PD_KV_AUTO};
    size_t bytes = pd_context_bytes(model, &p), kv = 2 * 2 * 64 * 32 * sizeof(float);
    assert_true(bytes > kv);
    char need[64];
    snprintf(need, sizeof need, "needs %zu bytes (KV cache %zu", bytes, kv);

    p.max_bytes = bytes - 1;
    assert_null(pd_context_new(model, &p, &err));
    assert_int_equal(err.code, PD_ERR_LIMIT);
    expect_message(&err, need);
    snprintf(need, sizeof need, "budget of %zu bytes", bytes - 1);
    expect_message(&err, need);

    /* room for the context and one hidden row, not for its logits */
    p.max_bytes = bytes + 64 * sizeof(float);
    pd_context *ctx = pd_context_new(model, &p, &err);
    assert_non_null(ctx);
    int32_t ids[4] = {5, 6, 7, 8};
    assert_int_equal(pd_eval_tokens(ctx, ids, 4, &err), PD_ERR_LIMIT);
    expect_message(&err, "over its budget");
    assert_int_equal(pd_context_kv_len(ctx), 0); /* refused before evaluating */
    pd_batch hidden_only = {ids, 4, NULL, NULL, NULL, 0, 0};
    assert_int_equal(pd_eval(ctx, &hidden_only, &err), PD_OK);
    assert_int_equal(pd_context_kv_len(ctx), 4);
    pd_context *fork = pd_context_fork(ctx, &err); /* same parameters, same budget */
    assert_non_null(fork);
    assert_int_equal(pd_eval_tokens(fork, ids, 1, &err), PD_ERR_LIMIT);
    pd_context_free(fork);
    pd_context_free(ctx);

    /* enough for the logits of one row */
    p.max_bytes = bytes + (64 + 300) * sizeof(float);
    ctx = pd_context_new(model, &p, &err);
    assert_non_null(ctx);
    assert_int_equal(pd_eval_tokens(ctx, ids, 4, &err), PD_OK);
    assert_non_null(pd_context_logits(ctx, 0));
    pd_context_free(ctx);

    /* invalid parameters have no size */
    pd_context_params bad = {1 << 30, 1, 0, 0, PD_KV_AUTO};
    assert_int_equal(pd_context_bytes(model, &bad), 0);
}

static void test_context_length_and_batch(void **state)
{
    (void)state;
    pd_error err = {PD_OK, ""};
    pd_context_params p = {40961, 1, 0, 0, PD_KV_AUTO}; /* one more than the model's positions */
    assert_null(pd_context_new(model, &p, &err));
    assert_int_equal(err.code, PD_ERR_RANGE);
    expect_message(&err, "40960");

    pd_context_params small = {8, 1, 4, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(model, &small, &err);
    assert_non_null(ctx);
    int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, rows[3] = {0, 1, 1};
    assert_int_equal(pd_eval_tokens(ctx, ids, 6, &err), PD_OK);
    assert_int_equal(pd_eval_tokens(ctx, ids, 3, &err), PD_ERR_CONTEXT); /* 6 + 3 > 8 */
    expect_message(&err, "do not fit");
    assert_int_equal(pd_context_kv_len(ctx), 6);
    pd_context_kv_truncate(ctx, 0, NULL);
    pd_batch b = {ids, 2, NULL, NULL, rows, 3, 0}; /* more kept rows than tokens */
    assert_int_equal(pd_eval(ctx, &b, &err), PD_ERR_LIMIT);
    expect_message(&err, "3 outputs asked for a batch of 2 tokens");
    assert_int_equal(pd_context_kv_len(ctx), 0);
    pd_context_free(ctx);
}

static void test_candidates(void **state)
{
    (void)state;
    pd_error err = {PD_OK, ""};
    pd_head *head = pd_head_load(pointer_dir, model, &err);
    assert_non_null(head);
    pd_decider *d = pd_decider_new(model, head, NULL, &err);
    assert_non_null(d);
    /* refused on the count alone: nothing is read or tokenized */
    const char **many = calloc(PD_MAX_CANDIDATES + 1, sizeof *many);
    assert_non_null(many);
    pd_decision *dec = NULL;
    assert_int_equal(pd_decide(d, "text", "?", many, PD_MAX_CANDIDATES + 1, &dec, &err), PD_ERR_LIMIT);
    assert_null(dec);
    expect_message(&err, "4097 candidates, more than the limit of 4096");
    for (int i = 0; i < 40; i++) many[i] = "12";
    /* a prompt longer than the decider's context: refused before the model runs */
    pd_decider_params dp = pd_decider_default_params();
    dp.n_ctx = 32;
    pd_decider *small = pd_decider_new(model, head, &dp, &err);
    assert_non_null(small);
    assert_int_equal(pd_decide(small, "text", "?", many, 40, &dec, &err), PD_ERR_CONTEXT);
    expect_message(&err, "do not fit the context of 32");
    assert_int_equal(pd_decider_forward_passes(small), 0);
    free(many);
    pd_decider_free(small);
    pd_decider_free(d);
    pd_head_free(head);
}

static void test_decider_budget(void **state)
{
    (void)state;
    pd_error err = {PD_OK, ""};
    pd_decider_params dp = pd_decider_default_params();
    dp.n_ctx = 64;
    dp.n_threads = 1; /* the scratch grows with the threads: the budget below is one thread's */
    pd_context_params cp = {64, 1, 0, 0, PD_KV_AUTO};
    size_t bytes = pd_context_bytes(model, &cp);
    dp.max_bytes = bytes - 1;
    assert_null(pd_decider_new(model, NULL, &dp, &err));
    assert_int_equal(err.code, PD_ERR_LIMIT);
    /* the verbalizer keeps logits of every candidate token: over a tight budget */
    dp.max_bytes = bytes + 64 * sizeof(float);
    pd_decider *d = pd_decider_new(model, NULL, &dp, &err);
    assert_non_null(d);
    static const char *const cands[2] = {"12", "345"};
    pd_decision *dec = NULL;
    assert_int_equal(pd_decide(d, "1, 2; 3!", "?", cands, 2, &dec, &err), PD_ERR_LIMIT);
    assert_null(dec);
    expect_message(&err, "budget");
    pd_decider_free(d);
}

static void test_classifier_labels(void **state)
{
    (void)state;
    char dir[] = "/tmp/pocketdec-limits-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/head.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"type\": \"classifier\", \"labels\": [", f);
    for (int i = 0; i <= PD_MAX_CANDIDATES; i++) fprintf(f, "%s\"l%d\"", i ? ", " : "", i);
    fputs("]}\n", f);
    fclose(f);
    pd_error err = {PD_OK, ""};
    assert_null(pd_head_load(dir, model, &err));
    assert_int_equal(err.code, PD_ERR_LIMIT);
    expect_message(&err, "4097 labels");
    unlink(path);
    rmdir(dir);
    pd_head *ok = pd_head_load(classifier_dir, model, &err);
    assert_non_null(ok);
    pd_head_free(ok);
}

static void test_extraction_limits(void **state)
{
    (void)state;
    pd_error err = {PD_OK, ""};
    pd_schema *schema = pd_schema_load(schema_path, &err);
    assert_non_null(schema);
    pd_extractor *ex = pd_extractor_new(model, schema, &err);
    assert_non_null(ex);
    pd_context_params cp = {256, 1, 64, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(model, &cp, &err);
    assert_non_null(ctx);
    static const char review[] = "很好，超值";
    pd_extract_params xp = pd_extract_default_params();
    pd_extraction *x = NULL;
    /* the shipped schema allows 16 records and 256 tokens */
    xp.max_records = 17;
    assert_int_equal(pd_extract(ctx, ex, review, sizeof review - 1, &xp, &x, &err), PD_ERR_LIMIT);
    expect_message(&err, "max_records 17 is over the schema's limit of 16");
    xp.max_records = 16;
    xp.max_tokens = 257;
    assert_int_equal(pd_extract(ctx, ex, "", 0, &xp, &x, &err), PD_ERR_LIMIT); /* checked for an empty text too */
    expect_message(&err, "max_tokens 257 is over the schema's limit of 256");
    xp.max_tokens = -1;
    assert_int_equal(pd_extract(ctx, ex, "", 0, &xp, &x, &err), PD_ERR_ARG);
    assert_null(x);
    assert_int_equal(pd_context_kv_len(ctx), 0); /* nothing ran */
    xp.max_tokens = 0;
    xp.speculate = PD_SPECULATE_MAX + 1;
    assert_int_equal(pd_extract(ctx, ex, "", 0, &xp, &x, &err), PD_ERR_ARG);
    expect_message(&err, "speculate 17 is not within 0..16");
    xp.speculate = -1;
    assert_int_equal(pd_extract(ctx, ex, review, sizeof review - 1, &xp, &x, &err), PD_ERR_ARG);
    assert_null(x);
    xp.max_tokens = 4;
    for (int k = 0; k <= PD_SPECULATE_MAX; k += PD_SPECULATE_MAX) { /* drafts stop at max_tokens too */
        xp.speculate = k;
        assert_int_equal(pd_extract(ctx, ex, review, sizeof review - 1, &xp, &x, &err), PD_OK);
        assert_true(x->stats.n_tokens <= 4);
        assert_true(pd_context_kv_len(ctx) <= x->stats.n_prompt_tokens + 4);
        pd_extraction_free(x);
    }
    pd_context_free(ctx);
    pd_extractor_free(ex);
    pd_schema_free(schema);
    /* the schema's own limits are bounded where it is read */
    static const char yaml[] = "name: t\nprompt: \"{text}\"\nfields:\n  - {name: a, kind: span}\n"
                               "separator: \",\"\nrecord_end: \"\\n\"\nend: \"<|im_end|>\"\n"
                               "limits: {max_records: 100001}\n";
    assert_null(pd_schema_parse(yaml, sizeof yaml - 1, "t.yaml", &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    expect_message(&err, "t.yaml:8:");
    expect_message(&err, "[1, 100000]");
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test_limits MODEL POINTER_HEAD CLASSIFIER_HEAD SCHEMA\n");
        return 2;
    }
    model_dir = argv[1];
    pointer_dir = argv[2];
    classifier_dir = argv[3];
    schema_path = argv[4];
    pd_error err;
    if (!(model = pd_model_load(model_dir, NULL, &err))) {
        fprintf(stderr, "test_limits: %s\n", err.message);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_budget),
        cmocka_unit_test(test_context_length_and_batch),
        cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_decider_budget),
        cmocka_unit_test(test_classifier_labels),
        cmocka_unit_test(test_extraction_limits),
    };
    int rc = cmocka_run_group_tests_name("limits", tests, NULL, NULL);
    pd_model_free(model);
    return rc;
}
