/* test_adapters.c - PEFT LoRA adapters against the independent numpy merge
 * (tools/testmodels/make_adapter.py reference): merged and runtime logits and
 * hidden states for plain and rsLoRA adapters, all seven targets and a layer
 * subset, 16-bit and quantized bases, stacks with weights; unmerge restores
 * the base bitwise; switching adapters on one loaded base; every refusal. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"  /* pdi_matrix: how a derived model holds an update */
#include "pd_internal.h" /* pdi_model_derive: the library seam under the adapters */
#include "pocketdec.h"

/* max |got - want| over all positions, relative to the largest |want|: the
 * float64 reference against float32 arithmetic (as in test_forward). */
#define TOL 1e-5
/* Block-quantized bases (Q8_0, Q4_0, Q4_1) multiply int8-quantized activations,
 * as llama.cpp does: within 3% (tests/model/test_forward.c says why). */
#define QUANT_TOL 3e-2
/* an adapter must move the logits by far more than TOL, or the test could not fail */
#define MIN_EFFECT 1e-2

static const char *fixture_dir;
static json_t *manifest;

static pd_model *load_model(const char *path)
{
    pd_error err;
    pd_model *m = pd_model_load(path, NULL, &err);
    if (!m) fail_msg("%s", err.message);
    return m;
}

/* Logits (want_logits) or hidden states of every position, malloc'd [n][cols]. */
static float *eval_rows(const pd_model *m, const int32_t *ids, int n, bool logits, int threads)
{
    pd_error err;
    pd_context_params p = {64, threads, 0, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(m, &p, &err);
    if (!ctx) fail_msg("%s", err.message);
    int32_t rows[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) rows[i] = i;
    pd_batch b = {ids, n, NULL, NULL, rows, n, 1};
    if (pd_eval(ctx, &b, &err)) fail_msg("%s", err.message);
    const pd_config *c = pd_model_config(m);
    int cols = logits ? c->vocab : c->hidden;
    float *out = malloc((size_t)n * (size_t)cols * sizeof(float));
    assert_non_null(out);
    for (int i = 0; i < n; i++)
        memcpy(out + (size_t)i * cols, logits ? pd_context_logits(ctx, i) : pd_context_hidden(ctx, i),
               (size_t)cols * sizeof(float));
    pd_context_free(ctx);
    return out;
}

static double rel_diff(const float *got, const float *want, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)got[i] - want[i]));
        s = fmax(s, fabs((double)want[i]));
    }
    return d / s;
}

/* Largest |got - want| relative to the largest |want| over the JSON rows. */
static double rel_diff_json(const float *got, json_t *want, int cols)
{
    double d = 0, s = 0;
    for (size_t r = 0; r < json_array_size(want); r++)
        for (int k = 0; k < cols; k++) {
            double w = json_real_value(json_array_get(json_array_get(want, r), (size_t)k));
            d = fmax(d, fabs(got[r * (size_t)cols + (size_t)k] - w));
            s = fmax(s, fabs(w));
        }
    return d / s;
}

static pd_apply_mode mode_of(const char *s)
{
    return !strcmp(s, "merge") ? PD_APPLY_MERGE : !strcmp(s, "runtime") ? PD_APPLY_RUNTIME : PD_APPLY_AUTO;
}

static pd_model *apply_case(const pd_model *base, json_t *adapters, pd_apply_mode mode)
{
    size_t n = json_array_size(adapters);
    pd_adapter *list[8];
    float weights[8];
    assert_true(n <= 8);
    pd_error err;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(adapters, i);
        list[i] = pd_adapter_load(json_string_value(json_object_get(a, "dir")), &err);
        if (!list[i]) fail_msg("%s", err.message);
        weights[i] = (float)json_number_value(json_object_get(a, "weight"));
    }
    pd_model *m = pd_model_apply_adapters(base, (const pd_adapter *const *)list, weights, n, mode, &err);
    for (size_t i = 0; i < n; i++) pd_adapter_free(list[i]); /* the model keeps copies */
    if (!m) fail_msg("%s", err.message);
    return m;
}

/* The expected outputs of a case, and its ids (at most 64). */
static json_t *load_expected(json_t *c, int32_t *ids, int *n)
{
    json_error_t jerr;
    const char *path = json_string_value(json_object_get(c, "expected"));
    json_t *exp = json_load_file(path, 0, &jerr);
    if (!exp) fail_msg("%s: %s", path, jerr.text);
    json_t *arr = json_object_get(exp, "ids");
    *n = (int)json_array_size(arr);
    assert_true(*n <= 64);
    for (int k = 0; k < *n; k++) ids[k] = (int32_t)json_integer_value(json_array_get(arr, (size_t)k));
    return exp;
}

/* Every case and mode against the reference. Cases on one model share one
 * loaded base: applying another set is switching adapters without a reload. */
static void test_against_reference(void **state)
{
    (void)state;
    json_t *cases = json_object_get(manifest, "cases");
    pd_model *base = NULL;
    const char *base_path = "";
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *path = json_string_value(json_object_get(c, "model"));
        if (strcmp(path, base_path) != 0) {
            pd_model_free(base);
            base = load_model(path);
            base_path = path;
        }
        int32_t ids[64];
        int n;
        json_t *exp = load_expected(c, ids, &n);
        const pd_config *cfg = pd_model_config(base);
        float *base_logits = eval_rows(base, ids, n, true, 1), *first = NULL;
        char *info = pd_model_info_json(base);
        double tol = strstr(info, "\"Q8_0\"") || strstr(info, "\"Q4_0\"") || strstr(info, "\"Q4_1\"") ? QUANT_TOL : TOL;
        free(info);
        json_t *modes = json_object_get(c, "modes");
        for (size_t k = 0; k < json_array_size(modes); k++) {
            const char *mode = json_string_value(json_array_get(modes, k));
            pd_model *m = apply_case(base, json_object_get(c, "adapters"), mode_of(mode));
            float *logits = eval_rows(m, ids, n, true, 2), *hidden = eval_rows(m, ids, n, false, 1);
            size_t nl = (size_t)n * (size_t)cfg->vocab;
            double dl = rel_diff_json(logits, json_object_get(exp, "logits"), cfg->vocab);
            double dh = rel_diff_json(hidden, json_object_get(exp, "hidden"), cfg->hidden);
            double effect = rel_diff(base_logits, logits, nl);
            printf("%-14s %-8s logits %.2e hidden %.2e (adapter effect %.2f)\n", name, mode, dl, dh, effect);
            assert_true(dl <= tol);
            assert_true(dh <= tol);
            assert_true(effect >= MIN_EFFECT);
            if (first) assert_true(rel_diff(logits, first, nl) <= tol); /* runtime == merged */
            free(hidden);
            if (first) free(logits);
            else first = logits;
            pd_model_free(m);
        }
        free(first);
        free(base_logits);
        json_decref(exp);
    }
    pd_model_free(base);
}

/* Unmerge: the base gives bitwise the logits it gave before, while an adapted
 * model exists and after it is freed. */
static void test_unmerge_restores_base(void **state)
{
    (void)state;
    json_t *cases = json_object_get(manifest, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        pd_model *base = load_model(json_string_value(json_object_get(c, "model")));
        const pd_config *cfg = pd_model_config(base);
        int32_t ids[6] = {1, 5, 9, 2, 7, 3};
        size_t nl = 6 * (size_t)cfg->vocab;
        float *before = eval_rows(base, ids, 6, true, 1);
        for (int mode = PD_APPLY_MERGE; mode <= PD_APPLY_RUNTIME; mode++) {
            pd_model *m = apply_case(base, json_object_get(c, "adapters"), (pd_apply_mode)mode);
            float *adapted = eval_rows(m, ids, 6, true, 1), *during = eval_rows(base, ids, 6, true, 1);
            assert_true(rel_diff(adapted, before, nl) >= MIN_EFFECT);
            assert_memory_equal(during, before, nl * sizeof(float));
            pd_model_free(m);
            float *after = eval_rows(base, ids, 6, true, 1);
            assert_memory_equal(after, before, nl * sizeof(float));
            free(adapted);
            free(during);
            free(after);
        }
        free(before);
        pd_model_free(base);
    }
}

/* Adapters applied on an adapted model (a chain of derived models) add up
 * like a stack: the stack case in two steps, both modes, matches the
 * reference; freeing the outer model leaves the inner one intact. */
static void test_chained(void **state)
{
    (void)state;
    json_t *cases = json_object_get(manifest, "cases"), *c = NULL;
    for (size_t i = 0; i < json_array_size(cases); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(cases, i), "name")), "stack"))
            c = json_array_get(cases, i);
    assert_non_null(c);
    json_t *all = json_object_get(c, "adapters"), *first = json_array(), *rest = json_array();
    for (size_t i = 0; i < json_array_size(all); i++) json_array_append(i ? rest : first, json_array_get(all, i));
    int32_t ids[64];
    int n;
    json_t *exp = load_expected(c, ids, &n);
    pd_model *base = load_model(json_string_value(json_object_get(c, "model")));
    int vocab = pd_model_config(base)->vocab;
    for (int mode = PD_APPLY_MERGE; mode <= PD_APPLY_RUNTIME; mode++) {
        pd_model *inner = apply_case(base, first, (pd_apply_mode)mode);
        float *inner_before = eval_rows(inner, ids, n, true, 1);
        pd_model *outer = apply_case(inner, rest, (pd_apply_mode)mode);
        float *got = eval_rows(outer, ids, n, true, 1);
        assert_true(rel_diff_json(got, json_object_get(exp, "logits"), vocab) <= TOL);
        pd_model_free(outer);
        float *inner_after = eval_rows(inner, ids, n, true, 1);
        assert_memory_equal(inner_after, inner_before, (size_t)n * (size_t)vocab * sizeof(float));
        free(got);
        free(inner_before);
        free(inner_after);
        pd_model_free(inner);
    }
    pd_model_free(base);
    json_decref(exp);
    json_decref(first);
    json_decref(rest);
}

/* The runtime path splits tokens over threads: 1 and 3 threads agree bitwise. */
static void test_runtime_threads(void **state)
{
    (void)state;
    json_t *c = json_array_get(json_object_get(manifest, "cases"), 3); /* q8_0 base */
    pd_model *base = load_model(json_string_value(json_object_get(c, "model")));
    pd_model *m = apply_case(base, json_object_get(c, "adapters"), PD_APPLY_RUNTIME);
    int32_t ids[9] = {4, 8, 15, 16, 23, 42, 1, 2, 3};
    float *a = eval_rows(m, ids, 9, true, 1), *b = eval_rows(m, ids, 9, true, 3);
    assert_memory_equal(a, b, 9 * (size_t)pd_model_config(m)->vocab * sizeof(float));
    free(a);
    free(b);
    pd_model_free(m);
    pd_model_free(base);
}

static pd_status status_of(const char *s)
{
    return !strcmp(s, "unsupported") ? PD_ERR_UNSUPPORTED : !strcmp(s, "shape") ? PD_ERR_SHAPE : PD_ERR_FORMAT;
}

/* Each refusal: the right status, a message naming the directory and the problem. */
static void test_refusals(void **state)
{
    (void)state;
    json_t *list = json_object_get(manifest, "refusals");
    assert_true(json_array_size(list) >= 17);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *r = json_array_get(list, i);
        const char *dir = json_string_value(json_object_get(r, "dir"));
        const char *want = json_string_value(json_object_get(r, "message"));
        pd_error err = {PD_OK, ""};
        pd_adapter *a = pd_adapter_load(dir, &err);
        if (a) { /* found only against a model */
            pd_model *base = load_model(json_string_value(json_object_get(r, "model")));
            const pd_adapter *list1[1] = {a};
            pd_model *m = pd_model_apply_adapters(base, list1, NULL, 1, PD_APPLY_AUTO, &err);
            assert_null(m);
            pd_model_free(base);
            pd_adapter_free(a);
        }
        printf("%-18s %s\n", json_string_value(json_object_get(r, "name")), err.message);
        assert_int_equal(err.code, status_of(json_string_value(json_object_get(r, "status"))));
        assert_non_null(strstr(err.message, want));
        assert_non_null(strstr(err.message, dir));
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Missing and malformed files, bad arguments, the accessors. */
static void test_files_and_arguments(void **state)
{
    (void)state;
    pd_error err;
    assert_null(pd_adapter_load(NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_int_equal(pd_adapter_rank(NULL), 0);
    assert_int_equal(pd_adapter_n_targets(NULL), 0);
    assert_string_equal(pd_adapter_base_model(NULL), "");
    pd_adapter_free(NULL);
    char dir[] = "/tmp/pd-adapter-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    assert_null(pd_adapter_load(dir, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, "adapter_config.json"));
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    write_text(path, "{\"peft_type\": \"LORA\", \"r\": ");
    assert_null(pd_adapter_load(dir, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    write_text(path, "{\"peft_type\": \"LORA\", \"r\": 0}");
    assert_null(pd_adapter_load(dir, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    assert_non_null(strstr(err.message, "r must be a positive integer"));
    write_text(path, "{\"peft_type\": \"LORA\", \"r\": 2}");
    assert_null(pd_adapter_load(dir, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, "adapter_model.safetensors"));
    unlink(path);
    rmdir(dir);

    json_t *c0 = json_array_get(json_object_get(manifest, "cases"), 0);
    json_t *c2 = json_array_get(json_object_get(manifest, "cases"), 2);
    const char *d0 = json_string_value(json_object_get(json_array_get(json_object_get(c0, "adapters"), 0), "dir"));
    const char *d2 = json_string_value(json_object_get(json_array_get(json_object_get(c2, "adapters"), 0), "dir"));
    pd_adapter *a = pd_adapter_load(d0, &err), *b = pd_adapter_load(d2, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(pd_adapter_rank(a), 4);
    assert_true(pd_adapter_scale(a) == 2.0f); /* 8 / 4 */
    assert_int_equal(pd_adapter_n_targets(a), 14); /* 7 projections x 2 layers */
    assert_string_equal(pd_adapter_base_model(a), "pocketdec/random-qwen3");
    assert_int_equal(pd_adapter_rank(b), 8);
    assert_true(fabsf(pd_adapter_scale(b) - 16.0f / sqrtf(8.0f)) < 1e-6f); /* rsLoRA */
    assert_int_equal(pd_adapter_n_targets(b), 8); /* q, v, gate, down x layers 0, 2 */

    pd_model *base = load_model(json_string_value(json_object_get(c0, "model")));
    const pd_adapter *one[1] = {a}, *none[1] = {NULL};
    float inf = INFINITY;
    assert_null(pd_model_apply_adapters(NULL, one, NULL, 1, PD_APPLY_AUTO, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_model_apply_adapters(base, one, NULL, 1, (pd_apply_mode)7, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_model_apply_adapters(base, none, NULL, 1, PD_APPLY_AUTO, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_model_apply_adapters(base, one, &inf, 1, PD_APPLY_AUTO, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    /* an adapter for the gqa shape on the tiny model: refused, naming the tensor */
    const pd_adapter *wrong[1] = {b};
    assert_null(pd_model_apply_adapters(base, wrong, NULL, 1, PD_APPLY_AUTO, &err));
    assert_int_equal(err.code, PD_ERR_SHAPE);
    /* no adapters: a derived model equal to the base */
    pd_model *same = pd_model_apply_adapters(base, NULL, NULL, 0, PD_APPLY_AUTO, &err);
    assert_non_null(same);
    int32_t ids[3] = {1, 2, 3};
    float *x = eval_rows(base, ids, 3, true, 1), *y = eval_rows(same, ids, 3, true, 1);
    assert_memory_equal(x, y, 3 * (size_t)pd_model_config(base)->vocab * sizeof(float));
    free(x);
    free(y);
    pd_model_free(same);
    pd_model_free(base);
    pd_adapter_free(a);
    pd_adapter_free(b);
}

/* The seam itself: unknown matrices, shapes that do not fit, ranks too large
 * for the runtime path, and what the lib accepts (a rank-1 merge by hand). */
static void test_derive_seam(void **state)
{
    (void)state;
    json_t *c0 = json_array_get(json_object_get(manifest, "cases"), 0);
    pd_model *base = load_model(json_string_value(json_object_get(c0, "model")));
    const pd_config *c = pd_model_config(base);
    int64_t H = c->hidden, r = PD_LOWRANK_MAX_RANK + 1;
    float *A = calloc((size_t)(r * H), sizeof(float)), *B = calloc((size_t)(r * H), sizeof(float));
    assert_non_null(A);
    assert_non_null(B);
    pd_error err;
    pdi_lowrank u = {"model.layers.0.self_attn.o_proj.weight", H, H, r, 1.0f, A, B};
    assert_null(pdi_model_derive(base, &u, 1, PD_DERIVE_RUNTIME, &err));
    assert_int_equal(err.code, PD_ERR_UNSUPPORTED);
    pd_model *m = pdi_model_derive(base, &u, 1, PD_DERIVE_MERGE, &err); /* any rank merges */
    assert_non_null(m);
    pd_model_free(m);
    const char *bad[] = {"model.layers.9.self_attn.o_proj.weight", "model.layers.00.self_attn.o_proj.weight",
                         "model.embed_tokens.weight", "lm_head.weight", "model.layers.0.self_attn.q_norm.weight"};
    u.rank = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        u.matrix = bad[i];
        assert_null(pdi_model_derive(base, &u, 1, PD_DERIVE_AUTO, &err));
        assert_int_equal(err.code, PD_ERR_SHAPE);
        assert_non_null(strstr(err.message, bad[i]));
    }
    u.matrix = "model.layers.1.mlp.down_proj.weight"; /* [H, ffn], not [H, H] */
    assert_null(pdi_model_derive(base, &u, 1, PD_DERIVE_AUTO, &err));
    assert_int_equal(err.code, PD_ERR_SHAPE);
    assert_non_null(strstr(err.message, "the matrix is"));

    /* a rank-1 update that moves one weight, W[0][1] += 2: merged and runtime
     * agree, and the logits move */
    u.matrix = "model.layers.0.self_attn.o_proj.weight";
    u.scale = 2.0f;
    memset(A, 0, (size_t)H * sizeof(float));
    memset(B, 0, (size_t)H * sizeof(float));
    A[1] = 1.0f;
    B[0] = 1.0f;
    pd_model *mm = pdi_model_derive(base, &u, 1, PD_DERIVE_MERGE, &err);
    pd_model *mr = pdi_model_derive(base, &u, 1, PD_DERIVE_RUNTIME, &err);
    assert_non_null(mm);
    assert_non_null(mr);
    int32_t ids[4] = {3, 1, 4, 1};
    size_t nl = 4 * (size_t)c->vocab;
    float *lb = eval_rows(base, ids, 4, true, 1), *lm = eval_rows(mm, ids, 4, true, 1);
    float *lr = eval_rows(mr, ids, 4, true, 1);
    assert_true(rel_diff(lm, lr, nl) <= TOL);
    assert_true(rel_diff(lm, lb, nl) >= 1e-4);
    free(lb);
    free(lm);
    free(lr);
    pd_model_free(mm);
    pd_model_free(mr);
    free(A);
    free(B);
    pd_model_free(base);
}

/* The model file of the manifest case `name`. */
static const char *case_model(const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(manifest, "cases"), i, c) if (strcmp(json_string_value(json_object_get(c, "name")),
                                                                            name) == 0) return json_string_value(json_object_get(c, "model"));
    fail_msg("no case %s in the manifest", name);
    return NULL;
}

/* PD_DERIVE_AUTO: a 16-bit matrix is merged into an F32 copy only when the
 * update is large for it (rank x (rows + cols) > rows x cols / 8); a
 * quantized one keeps its blocks whatever the rank. */
static void test_auto_merges_large_updates(void **state)
{
    (void)state;
    const char *bases[] = {case_model("bf16-base"), case_model("q8_0-base")};
    for (int b = 0; b < 2; b++) {
        pd_model *base = load_model(bases[b]);
        int64_t rows = base->layers[0].wo.rows, cols = base->layers[0].wo.cols;
        /* the largest rank still applied at runtime */
        int64_t edge = (int64_t)floor((double)rows * (double)cols / 8.0 / (double)(rows + cols));
        float *A = calloc((size_t)((edge + 1) * cols), sizeof(float)), *B = calloc((size_t)((edge + 1) * rows), sizeof(float));
        assert_non_null(A);
        assert_non_null(B);
        for (int64_t r = edge; r <= edge + 1; r++) {
            pd_error err;
            pdi_lowrank u = {"model.layers.0.self_attn.o_proj.weight", rows, cols, r, 1.0f, A, B};
            pd_model *m = pdi_model_derive(base, &u, 1, PD_DERIVE_AUTO, &err);
            assert_non_null(m);
            const pdi_matrix *w = &m->layers[0].wo;
            bool merged = b == 0 && r > edge;
            printf("%s rank %lld: %s\n", bases[b], (long long)r, merged ? "merged" : "at runtime");
            assert_int_equal(w->dtype == PD_F32, merged);
            assert_int_equal(w->delta == NULL, merged);
            assert_int_equal(m->layers[0].wq.delta == NULL, 1); /* untouched matrices stay as stored */
            pd_model_free(m);
        }
        free(A);
        free(B);
        pd_model_free(base);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_adapters FIXTURE_DIR\n");
        return 2;
    }
    fixture_dir = argv[1];
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.json", fixture_dir);
    json_error_t jerr;
    manifest = json_load_file(path, 0, &jerr);
    if (!manifest) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),   cmocka_unit_test(test_unmerge_restores_base),
        cmocka_unit_test(test_runtime_threads),     cmocka_unit_test(test_chained),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_files_and_arguments), cmocka_unit_test(test_derive_seam),
        cmocka_unit_test(test_auto_merges_large_updates),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(manifest);
    return rc;
}
