/* test_bundle.c - pd_bundle_open: a bundle folder (base/, adapter/, head/)
 * gives the same logits, bit for bit, as loading the base and applying the
 * adapter by hand, and its head; params' adapters stack after the bundle's;
 * params' head replaces the bundle's and no_head loads none; plain model
 * paths open as themselves; every broken part is refused with its own code
 * and a message naming it. Fixtures: the adapter tests' random model and
 * adapters, and the bundled default models/tianchi. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pocketdec.h"

static const char *fixture_dir, *source_root;
static char tmp[PATH_MAX];

static const int32_t ids[] = {3, 17, 42, 5, 99, 7};
#define N_IDS 6

/* Logits at every position of ids, malloc'ed [N_IDS][vocab]. */
static float *logits_of(const pd_model *m)
{
    pd_error err;
    pd_context *ctx = pd_context_new(m, NULL, &err);
    if (!ctx) fail_msg("%s", err.message);
    int32_t rows[N_IDS];
    for (int i = 0; i < N_IDS; i++) rows[i] = i;
    pd_batch b = {.tokens = ids, .n_tokens = N_IDS, .outputs = rows, .n_outputs = N_IDS, .want_logits = 1};
    if (pd_eval(ctx, &b, &err)) fail_msg("%s", err.message);
    int vocab = pd_model_config(m)->vocab;
    float *out = malloc(sizeof *out * (size_t)N_IDS * (size_t)vocab);
    assert_non_null(out);
    for (int i = 0; i < N_IDS; i++) memcpy(out + (size_t)i * vocab, pd_context_logits(ctx, i), sizeof *out * (size_t)vocab);
    pd_context_free(ctx);
    return out;
}

static void fixture(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", fixture_dir, name); }

/* tmp/name -> target (a symbolic link; the bundle folder's parts). */
static void link_part(const char *name, const char *target)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    unlink(p);
    assert_int_equal(symlink(target, p), 0);
}

static void unlink_part(const char *name)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    unlink(p);
}

/* The logits of base + adapters applied by hand (merge: as pd_bundle_open with PD_APPLY_MERGE). */
static float *by_hand(const char *base_dir, const char *const *adapters, const float *weights, size_t n)
{
    pd_error err;
    pd_model *base = pd_model_load(base_dir, NULL, &err);
    if (!base) fail_msg("%s", err.message);
    pd_adapter *list[4] = {NULL};
    for (size_t i = 0; i < n; i++)
        if (!(list[i] = pd_adapter_load(adapters[i], &err))) fail_msg("%s", err.message);
    pd_model *m = pd_model_apply_adapters(base, (const pd_adapter *const *)list, weights, n, PD_APPLY_MERGE, &err);
    if (!m) fail_msg("%s", err.message);
    float *out = logits_of(m);
    for (size_t i = 0; i < n; i++) pd_adapter_free(list[i]);
    pd_model_free(m);
    pd_model_free(base);
    return out;
}

static void test_adapter_bundle_matches_by_hand(void **state)
{
    (void)state;
    char base[PATH_MAX], adapter[PATH_MAX], second[PATH_MAX];
    fixture(base, sizeof base, "tiny-hf-f32");
    fixture(adapter, sizeof adapter, "adapter-tiny-all7");
    link_part("base", base);
    link_part("adapter", adapter);
    pd_bundle_params p = pd_bundle_default_params();
    p.adapter_mode = PD_APPLY_MERGE;
    pd_error err;
    pd_bundle *b = pd_bundle_open(tmp, &p, &err);
    if (!b) fail_msg("%s", err.message);
    int vocab = pd_model_config(pd_bundle_model(b))->vocab;
    size_t n = (size_t)N_IDS * (size_t)vocab;
    const char *one[] = {adapter};
    float *got = logits_of(pd_bundle_model(b)), *want = by_hand(base, one, NULL, 1), *plain = logits_of(pd_bundle_base(b));
    assert_memory_equal(got, want, sizeof *got * n);
    assert_memory_not_equal(got, plain, sizeof *got * n); /* the adapter moved them: the check can fail */
    assert_null(pd_bundle_head(b));                       /* this bundle has no head/ */
    assert_null(pd_bundle_head_dir(b));
    pd_bundle_free(b);
    free(got);
    free(want);

    /* params' adapters stack after the bundle's, with their weights */
    fixture(second, sizeof second, "adapter-tiny-all7");
    const char *more[] = {second};
    const float w[] = {-0.5f};
    p.adapters = more;
    p.weights = w;
    p.n_adapters = 1;
    if (!(b = pd_bundle_open(tmp, &p, &err))) fail_msg("%s", err.message);
    const char *both[] = {adapter, second};
    const float both_w[] = {1.0f, -0.5f};
    got = logits_of(pd_bundle_model(b));
    want = by_hand(base, both, both_w, 2);
    assert_memory_equal(got, want, sizeof *got * n);
    pd_bundle_free(b);
    free(got);
    free(want);

    /* a model directory opens as itself: no adapter, no head */
    if (!(b = pd_bundle_open(base, NULL, &err))) fail_msg("%s", err.message);
    assert_ptr_equal(pd_bundle_model(b), pd_bundle_base(b));
    got = logits_of(pd_bundle_model(b));
    assert_memory_equal(got, plain, sizeof *got * n);
    assert_null(pd_bundle_head(b));
    pd_bundle_free(b);
    free(got);
    free(plain);
    char *part = pd_bundle_part(tmp, "adapter");
    assert_non_null(part);
    assert_string_equal(part + strlen(part) - strlen("/adapter"), "/adapter");
    pd_free(part);
    assert_null(pd_bundle_part(tmp, "head"));
    assert_null(pd_bundle_part(base, "base")); /* a model directory is no bundle */
    unlink_part("base");
    unlink_part("adapter");
}

static void test_default_bundle_has_its_head(void **state)
{
    (void)state;
    char dir[PATH_MAX], head_dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/models/tianchi", source_root);
    pd_error err;
    pd_bundle *b = pd_bundle_open(dir, NULL, &err);
    if (!b) fail_msg("%s", err.message);
    assert_non_null(pd_bundle_head(b));
    assert_int_equal(pd_head_get_type(pd_bundle_head(b)), PD_HEAD_TAGGER);
    snprintf(head_dir, sizeof head_dir, "%s/head", dir);
    assert_string_equal(pd_bundle_head_dir(b), head_dir);
    assert_true(pd_bundle_model(b) != pd_bundle_base(b)); /* adapter/ applied */
    pd_bundle_free(b);

    pd_bundle_params p = pd_bundle_default_params();
    p.no_head = 1;
    if (!(b = pd_bundle_open(dir, &p, &err))) fail_msg("%s", err.message);
    assert_null(pd_bundle_head(b));
    pd_bundle_free(b);

    /* params' head replaces the bundle's: a broken one is refused, naming it */
    char broken[PATH_MAX + 16];
    snprintf(broken, sizeof broken, "%s/nohead", tmp);
    mkdir(broken, 0700);
    p = pd_bundle_default_params();
    p.head = broken;
    assert_null(pd_bundle_open(dir, &p, &err));
    assert_non_null(strstr(err.message, "nohead"));
    rmdir(broken);
}

static void test_refusals(void **state)
{
    (void)state;
    pd_error err;
    assert_null(pd_bundle_open(NULL, NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_bundle_open("/nonexistent/model", NULL, NULL)); /* no error object: still NULL */

    char base[PATH_MAX], p_missing[PATH_MAX + 32];
    fixture(base, sizeof base, "tiny-hf-f32");
    pd_bundle_params p = pd_bundle_default_params();
    p.n_adapters = 1; /* and no list */
    assert_null(pd_bundle_open(base, &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);

    snprintf(p_missing, sizeof p_missing, "%s/no-such-adapter", tmp);
    const char *missing[] = {p_missing};
    p.adapters = missing;
    assert_null(pd_bundle_open(base, &p, &err));
    assert_int_not_equal(err.code, PD_OK);
    assert_non_null(strstr(err.message, "no-such-adapter"));

    /* a bundle whose adapter/ is not an adapter: refused, naming it */
    link_part("base", base);
    link_part("adapter", base);
    assert_null(pd_bundle_open(tmp, NULL, &err));
    assert_non_null(strstr(err.message, "adapter"));
    unlink_part("adapter");
    /* a bundle whose head/ is empty: refused, naming it */
    char head[PATH_MAX + 16];
    snprintf(head, sizeof head, "%s/head", tmp);
    mkdir(head, 0700);
    assert_null(pd_bundle_open(tmp, NULL, &err));
    assert_non_null(strstr(err.message, "head"));
    rmdir(head);
    unlink_part("base");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_bundle FIXTURE_DIR SOURCE_ROOT\n");
        return 2;
    }
    fixture_dir = argv[1];
    source_root = argv[2];
    snprintf(tmp, sizeof tmp, "%s/bundle-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        perror(tmp);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adapter_bundle_matches_by_hand),
        cmocka_unit_test(test_default_bundle_has_its_head),
        cmocka_unit_test(test_refusals),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmp);
    return rc;
}
