/* test_alloc_fail.c - every allocation of a load, a context and an evaluation,
 * of a head load and its decisions, of an adapter load and application, of
 * a schema load and an extraction, of a tagger head with sparse features
 * and its extraction, of extraction pipelines and of a bundle fails in turn (malloc, calloc and
 * realloc are wrapped at link time): each run must end in a clean error,
 * never a crash, and free everything (ASan's leak check runs at exit in CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static long fail_at = -1; /* the allocation number that fails; -1: none */
static long calls;

static int should_fail(void) { return fail_at >= 0 && ++calls == fail_at; }
void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return should_fail() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }

static const char *fixtures, *tokenizer_path, *heads_dir, *adapters_dir, *schema_path, *tagger_dir;
/* loaded before counting starts: the scenarios below fail what comes after */
static pd_model *head_model, *adapter_base, *tagger_model;

typedef pd_status (*scenario)(pd_error *err);

/* Run s with allocation k failing, for k = 1, 2, ... until a run makes fewer
 * than k allocations (then nothing failed and it must succeed). */
static void fail_each_allocation(scenario s, const char *name)
{
    long k;
    for (k = 1;; k++) {
        pd_error err = {PD_OK, ""};
        calls = 0;
        fail_at = k;
        pd_status rc = s(&err);
        long made = calls;
        fail_at = -1;
        if (made < k) {
            if (rc != PD_OK) fail_msg("%s: no allocation failed, yet: %s", name, err.message);
            break;
        }
        if (rc == PD_OK) continue; /* a failure that was absorbed (a fallback path) is fine */
        if (err.message[0] == '\0') fail_msg("%s: allocation %ld failed with status %d and no message", name, k, rc);
        if (rc != PD_ERR_NOMEM)
            fail_msg("%s: allocation %ld failed, reported as %s: %s", name, k, pd_status_name(rc), err.message);
    }
    printf("  %s: %ld allocations, each failed once, all handled\n", name, k - 1);
}

static pd_status load_eval_generate(const char *path, pd_weight_quant quant, pd_error *err)
{
    pd_model_params mp = {.quantize = quant};
    pd_model *m = pd_model_load(path, &mp, err);
    if (!m) return err->code;
    pd_context_params cp = {32, 2, 4, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(m, &cp, err);
    pd_status rc = ctx ? PD_OK : err->code;
    int32_t ids[6] = {1, 2, 3, 4, 5, 6}, rows[2] = {0, 5};
    pd_batch b = {ids, 6, NULL, NULL, rows, 2, 1};
    if (rc == PD_OK) rc = pd_eval(ctx, &b, err);
    pd_context *fork = rc == PD_OK ? pd_context_fork(ctx, err) : NULL;
    if (rc == PD_OK && !fork) rc = err->code;
    char *text = NULL;
    pd_generate_params gp = {{0.8f, 5, 0.9f, 1}, 3, 0};
    if (rc == PD_OK) rc = pd_generate(fork, "ab", &gp, NULL, NULL, &text, err);
    pd_free(text);
    pd_context_free(fork);
    pd_context_free(ctx);
    pd_model_free(m);
    return rc;
}

static char path_buf[1024];
static pd_status hf_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/tiny-hf-bf16-untied", fixtures);
    return load_eval_generate(path_buf, PD_QUANT_NONE, err);
}
/* the same BF16 model quantized at load to Q4_64, embeddings included */
static pd_status quantize_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/tiny-hf-bf16-untied", fixtures);
    return load_eval_generate(path_buf, PD_QUANT_Q4_64, err);
}
static pd_status sharded_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/gqa-hf-sharded-f32", fixtures);
    return load_eval_generate(path_buf, PD_QUANT_NONE, err);
}
static pd_status gguf_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/gqa-gguf-q8_0.gguf", fixtures);
    return load_eval_generate(path_buf, PD_QUANT_NONE, err);
}

static pd_status tokenizer_scenario(pd_error *err)
{
    pd_tokenizer *tok = pd_tokenizer_load(tokenizer_path, err);
    if (!tok) return err->code;
    static const char text[] = "很好，超值 <|im_end|> don't stop 2024!\n";
    int32_t *ids = NULL;
    size_t n = 0;
    char *back = NULL;
    size_t len = 0;
    pd_status rc = pd_tokenizer_encode(tok, text, sizeof text - 1, &ids, &n, err);
    if (rc == PD_OK) rc = pd_tokenizer_decode(tok, ids, n, &back, &len, err);
    if (rc == PD_OK && (len != sizeof text - 1 || memcmp(back, text, len) != 0)) rc = PD_ERR_INTERNAL;
    pd_free(back);
    pd_free(ids);
    pd_tokenizer_free(tok);
    return rc;
}

/* A pointer head and a classifier head loaded, decisions in both layouts, a
 * reused document, a fork, and the LM verbalizer. */
static pd_status heads_scenario(pd_error *err)
{
    static const char *const cands[3] = {"12", "3", "45"};
    pd_head *ptr = NULL, *cls = NULL;
    pd_decider *d = NULL, *f = NULL, *v = NULL;
    pd_decision *dec = NULL;
    pd_status rc = PD_OK;
    pd_decider_params dp = pd_decider_default_params();
    dp.n_ctx = 64;
    snprintf(path_buf, sizeof path_buf, "%s/head-a-pointer", heads_dir);
    if (!(ptr = pd_head_load(path_buf, head_model, err))) rc = err->code;
    if (!rc && !(d = pd_decider_new(head_model, ptr, &dp, err))) rc = err->code;
    if (!rc) rc = pd_decide(d, "1, 2; 3!", "?", cands, 3, &dec, err);
    pd_decision_free(dec);
    dec = NULL;
    if (!rc) rc = pd_decide(d, NULL, "again?", cands, 2, &dec, err); /* the document's cache reused */
    pd_decision_free(dec);
    dec = NULL;
    if (!rc) rc = pd_decider_set_text(d, "4 5 6", err);
    if (!rc && !(f = pd_decider_fork(d, err))) rc = err->code;
    if (!rc) rc = pd_decide(f, NULL, "?", cands, 3, &dec, err);
    pd_decision_free(dec);
    dec = NULL;
    snprintf(path_buf, sizeof path_buf, "%s/head-a-classifier", heads_dir);
    if (!rc && !(cls = pd_head_load(path_buf, head_model, err))) rc = err->code;
    pd_decider_free(f);
    f = NULL;
    if (!rc && !(f = pd_decider_new(head_model, cls, &dp, err))) rc = err->code;
    if (!rc) rc = pd_decide(f, "1, 2; 3!", "?", NULL, 0, &dec, err); /* all its labels */
    pd_decision_free(dec);
    dec = NULL;
    dp.layout = PD_LAYOUT_PARALLEL;
    if (!rc && !(v = pd_decider_new(head_model, NULL, &dp, err))) rc = err->code;
    if (!rc) rc = pd_decide(v, "1, 2; 3!", "?", cands, 3, &dec, err);
    pd_decision_free(dec);
    pd_decider_free(v);
    pd_decider_free(f);
    pd_decider_free(d);
    pd_head_free(cls);
    pd_head_free(ptr);
    return rc;
}

/* Two adapters loaded and stacked on one base, merged and at runtime, each
 * evaluated. */
static pd_status adapters_scenario(pd_error *err)
{
    static const char *const names[2] = {"adapter-gqa-rslora-subset", "adapter-gqa-all7-r2"};
    pd_adapter *ad[2] = {NULL, NULL};
    pd_status rc = PD_OK;
    for (int i = 0; i < 2 && !rc; i++) {
        snprintf(path_buf, sizeof path_buf, "%s/%s", adapters_dir, names[i]);
        if (!(ad[i] = pd_adapter_load(path_buf, err))) rc = err->code;
    }
    static const float weights[2] = {1.0f, 0.5f};
    static const pd_apply_mode modes[2] = {PD_APPLY_MERGE, PD_APPLY_RUNTIME};
    for (int m = 0; m < 2 && !rc; m++) {
        pd_model *adapted = pd_model_apply_adapters(adapter_base, (const pd_adapter *const *)ad, weights, 2, modes[m], err);
        if (!adapted) {
            rc = err->code;
            break;
        }
        pd_context_params cp = {16, 1, 8, 0, PD_KV_AUTO};
        pd_context *ctx = pd_context_new(adapted, &cp, err);
        int32_t ids[5] = {3, 1, 4, 1, 5};
        rc = ctx ? pd_eval_tokens(ctx, ids, 5, err) : err->code;
        pd_context_free(ctx);
        pd_model_free(adapted);
    }
    pd_adapter_free(ad[1]);
    pd_adapter_free(ad[0]);
    return rc;
}

/* The schema loaded and bound to the model, one review extracted (greedy,
 * then sampled), the records printed both ways. */
static pd_status extract_scenario(pd_error *err)
{
    static const char review[] = "很好，超值，很好用";
    pd_schema *schema = pd_schema_load(schema_path, err);
    pd_extractor *ex = schema ? pd_extractor_new(head_model, schema, err) : NULL;
    pd_context_params cp = {256, 1, 64, 0, PD_KV_AUTO};
    pd_context *ctx = ex ? pd_context_new(head_model, &cp, err) : NULL;
    pd_status rc = ctx ? PD_OK : err->code;
    pd_extract_params xp = pd_extract_default_params();
    xp.max_tokens = 12;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        pd_extraction *x = NULL;
        char *text = NULL;
        xp.sampler.temperature = pass ? 0.9f : 0.0f;
        xp.sampler.seed = 7;
        rc = pd_extract(ctx, ex, review, sizeof review - 1, &xp, &x, err);
        if (!rc) rc = pd_extraction_format(schema, x, "1", pass ? PD_FORMAT_JSONL : PD_FORMAT_TIANCHI, &text, NULL, err);
        pd_free(text);
        pd_extraction_free(x);
    }
    pd_context_free(ctx);
    pd_extractor_free(ex);
    pd_schema_free(schema);
    return rc;
}

/* A tagger head with sparse features (lexicon, memory, every atom) loaded,
 * bound to the schema, and one review extracted with its trace. */
static pd_status tagger_scenario(pd_error *err)
{
    static const char review[] = "包装很好用，味道超值！物流快快快。";
    snprintf(path_buf, sizeof path_buf, "%s/head-pair-features", tagger_dir);
    pd_head *h = pd_head_load(path_buf, tagger_model, err);
    pd_schema *schema = h ? pd_schema_load(schema_path, err) : NULL;
    pd_tag_extractor *tx = schema ? pd_tag_extractor_new(tagger_model, schema, h, err) : NULL;
    pd_context_params cp = {128, 1, 128, 0, PD_KV_AUTO};
    pd_context *ctx = tx ? pd_context_new(tagger_model, &cp, err) : NULL;
    pd_status rc = ctx ? PD_OK : err->code;
    pd_extraction *x = NULL;
    pd_tag_trace *tr = NULL;
    if (!rc) rc = pd_tag_extract_trace(ctx, tx, review, sizeof review - 1, &x, &tr, err);
    pd_tag_trace_free(tr);
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    pd_schema_free(schema);
    pd_head_free(h);
    return rc;
}

/* Extraction pipelines: generation relabelled by a pointer head with two
 * reviews in flight, and a tagger head with sparse features; each extracts
 * two reviews at once. */
static pd_status pipeline_scenario(pd_error *err)
{
    static const char *const reviews[2] = {"很好，超值，很好用", "包装很好用，味道超值！物流快快快。"};
    const size_t lens[2] = {strlen(reviews[0]), strlen(reviews[1])};
    snprintf(path_buf, sizeof path_buf, "%s/head-a-pointer", heads_dir);
    pd_head *pointer = pd_head_load(path_buf, head_model, err);
    snprintf(path_buf, sizeof path_buf, "%s/head-pair-features", tagger_dir);
    pd_head *tagger = pointer ? pd_head_load(path_buf, tagger_model, err) : NULL;
    pd_schema *schema = tagger ? pd_schema_load(schema_path, err) : NULL;
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_ctx = 256;
    pp.parallel = 2;
    pp.extract.max_tokens = 12;
    pp.max_chars = 16; /* the second review is read in windows */
    pd_pipeline *relabel = schema ? pd_pipeline_new(head_model, schema, pointer, &pp, err) : NULL;
    pp = pd_pipeline_default_params();
    pp.n_ctx = 128;
    pp.max_chars = 16;
    pd_pipeline *tag = relabel ? pd_pipeline_new(tagger_model, schema, tagger, &pp, err) : NULL;
    pd_status rc = tag ? PD_OK : err->code;
    pd_pipeline *both[2] = {relabel, tag};
    for (int k = 0; k < 2 && !rc; k++) {
        pd_extraction *outs[2] = {NULL, NULL};
        rc = pd_pipeline_extract_many(both[k], reviews, lens, 2, outs, NULL, err);
        pd_extraction_free(outs[0]);
        pd_extraction_free(outs[1]);
    }
    pd_pipeline_free(tag);
    pd_pipeline_free(relabel);
    pd_schema_free(schema);
    pd_head_free(tagger);
    pd_head_free(pointer);
    return rc;
}

/* A model opened with pd_bundle_open and an adapter applied. */
static pd_status bundle_scenario(pd_error *err)
{
    char model[1024], adapter[1024];
    snprintf(model, sizeof model, "%s/gqa-hf-f32", adapters_dir);
    snprintf(adapter, sizeof adapter, "%s/adapter-gqa-all7-r2", adapters_dir);
    const char *list[1] = {adapter};
    pd_bundle_params p = pd_bundle_default_params();
    p.adapters = list;
    p.n_adapters = 1;
    pd_bundle *b = pd_bundle_open(model, &p, err);
    pd_status rc = b ? PD_OK : err->code;
    pd_bundle_free(b);
    return rc;
}

static void test_pipeline(void **state) { (void)state; fail_each_allocation(pipeline_scenario, "extraction pipelines"); }
static void test_bundle(void **state) { (void)state; fail_each_allocation(bundle_scenario, "bundle with an adapter"); }
static void test_heads(void **state) { (void)state; fail_each_allocation(heads_scenario, "heads and decisions"); }
static void test_tagger(void **state)
{
    (void)state;
    fail_each_allocation(tagger_scenario, "tagger head with sparse features, extraction");
}
static void test_adapters(void **state) { (void)state; fail_each_allocation(adapters_scenario, "adapters"); }
static void test_extract(void **state) { (void)state; fail_each_allocation(extract_scenario, "extraction"); }

static void test_hf(void **state) { (void)state; fail_each_allocation(hf_scenario, "HF model"); }
static void test_quantize(void **state)
{
    (void)state;
    fail_each_allocation(quantize_scenario, "HF model quantized to Q4_64 at load");
}
static void test_sharded(void **state) { (void)state; fail_each_allocation(sharded_scenario, "sharded HF model"); }
static void test_gguf(void **state) { (void)state; fail_each_allocation(gguf_scenario, "GGUF model"); }
static void test_tokenizer(void **state) { (void)state; fail_each_allocation(tokenizer_scenario, "tokenizer"); }

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: test_alloc_fail MODEL_FIXTURE_DIR TOKENIZER_JSON HEAD_FIXTURE_DIR ADAPTER_FIXTURE_DIR SCHEMA "
                        "TAGGER_FIXTURE_DIR\n");
        return 2;
    }
    fixtures = argv[1];
    tokenizer_path = argv[2];
    heads_dir = argv[3];
    adapters_dir = argv[4];
    schema_path = argv[5];
    tagger_dir = argv[6];
    pd_error err;
    snprintf(path_buf, sizeof path_buf, "%s/model-a", heads_dir);
    if (!(head_model = pd_model_load(path_buf, NULL, &err))) {
        fprintf(stderr, "test_alloc_fail: %s\n", err.message);
        return 1;
    }
    snprintf(path_buf, sizeof path_buf, "%s/gqa-hf-f32", adapters_dir);
    if (!(adapter_base = pd_model_load(path_buf, NULL, &err))) {
        fprintf(stderr, "test_alloc_fail: %s\n", err.message);
        return 1;
    }
    snprintf(path_buf, sizeof path_buf, "%s/model", tagger_dir);
    if (!(tagger_model = pd_model_load(path_buf, NULL, &err))) {
        fprintf(stderr, "test_alloc_fail: %s\n", err.message);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf),
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_gguf),
        cmocka_unit_test(test_tokenizer),
        cmocka_unit_test(test_heads),
        cmocka_unit_test(test_adapters),
        cmocka_unit_test(test_extract),
        cmocka_unit_test(test_tagger),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_bundle),
    };
    int rc = cmocka_run_group_tests_name("alloc_fail", tests, NULL, NULL);
    pd_model_free(tagger_model);
    pd_model_free(adapter_base);
    pd_model_free(head_model);
    return rc;
}
