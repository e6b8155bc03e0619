/* test_alloc_fail.c - every allocation of a load, a context and an evaluation
 * fails in turn (malloc, calloc and realloc are wrapped at link time): each
 * run must end in a clean error, never a crash, and free everything (ASan's
 * leak check runs at exit in CI). */
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

static const char *fixtures, *tokenizer_path;

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
    }
    printf("  %s: %ld allocations, each failed once, all handled\n", name, k - 1);
}

static pd_status load_eval_generate(const char *path, pd_error *err)
{
    pd_model *m = pd_model_load(path, NULL, err);
    if (!m) return err->code;
    pd_context_params cp = {32, 2, 4};
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
    return load_eval_generate(path_buf, err);
}
static pd_status sharded_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/gqa-hf-sharded-f32", fixtures);
    return load_eval_generate(path_buf, err);
}
static pd_status gguf_scenario(pd_error *err)
{
    snprintf(path_buf, sizeof path_buf, "%s/gqa-gguf-q8_0.gguf", fixtures);
    return load_eval_generate(path_buf, err);
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

static void test_hf(void **state) { (void)state; fail_each_allocation(hf_scenario, "HF model"); }
static void test_sharded(void **state) { (void)state; fail_each_allocation(sharded_scenario, "sharded HF model"); }
static void test_gguf(void **state) { (void)state; fail_each_allocation(gguf_scenario, "GGUF model"); }
static void test_tokenizer(void **state) { (void)state; fail_each_allocation(tokenizer_scenario, "tokenizer"); }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_alloc_fail MODEL_FIXTURE_DIR TOKENIZER_JSON\n");
        return 2;
    }
    fixtures = argv[1];
    tokenizer_path = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_gguf),
        cmocka_unit_test(test_tokenizer),
    };
    return cmocka_run_group_tests_name("alloc_fail", tests, NULL, NULL);
}
