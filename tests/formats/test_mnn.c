/* test_mnn.c - MNN's LLM export (llm.mnn, llm.mnn.weight, llm_config.json,
 * tokenizer.txt) against MNN's own answers on it (../shared/mnn: the export
 * of models/tianchi-gen/base by MNN's exporter and MNN's logits and greedy
 * tokens, expected.json), tokenizer.txt against tokenizer.json, and damaged
 * copies of the export refused with the file and the fault named.
 *
 * The damaged copies are of an export the test model generator writes
 * (tools/testmodels/make_model.py --format mnn, a fixture of tests/model), and
 * so are the graphs differing in one thing the forward cannot honour
 * (--mnn-variant), so they run without ../shared.
 *
 * Usage: test_mnn FIXTURES SHARED_MNN_DIR TOKENIZER_JSON CORPUS... (the
 * tests that need SHARED_MNN_DIR are skipped, with a message, where it is
 * absent). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixtures.h"
#include "pocketdec_compose.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *fixtures, *shared_dir, *tokenizer_json;
static char fixture_dir[1024];
static char **corpus;
static int n_corpus;
static char export_dir[1024];

static const char *const export_files[] = {"llm.mnn", "llm.mnn.weight", "llm_config.json", "config.json",
                                           "tokenizer.txt"};

static bool have_shared(void)
{
    struct stat sb;
    if (stat(export_dir, &sb) == 0) return true;
    printf("  skipped: %s is absent (MNN's export and answers live in ../shared/mnn)\n", export_dir);
    return false;
}

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    pd_error err;
    pd_status rc = pdi_read_file(path, &data, len, &err);
    if (rc != PD_OK) fail_msg("%s", err.message);
    return data;
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* --------------------------------------------------- against MNN itself */

/* For each prompt of expected.json: logits within 0.2 of MNN's `high` ones at
 * every entry, the same argmax, and the same 16 greedy tokens. */
static void test_against_mnn(void **state)
{
    (void)state;
    if (!have_shared()) return;
    char path[1200];
    snprintf(path, sizeof path, "%s/expected.json", shared_dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    assert_non_null(root);
    pd_error err;
    pd_model *m = pd_model_load(export_dir, NULL, &err);
    if (!m) fail_msg("%s", err.message);
    const int vocab = pd_model_config(m)->vocab;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(root, "cases"), i, c) {
        json_t *jids = json_object_get(c, "ids"), *want = json_object_get(c, "logits_high"),
               *greedy = json_object_get(c, "greedy16_high");
        assert_int_equal(json_array_size(want), (size_t)vocab);
        int32_t ids[64];
        int n = (int)json_array_size(jids);
        assert_true(n > 0 && n < 64);
        for (int k = 0; k < n; k++) ids[k] = (int32_t)json_integer_value(json_array_get(jids, (size_t)k));
        pd_context *ctx = pd_context_new(m, NULL, &err);
        assert_non_null(ctx);
        assert_int_equal(pd_eval_tokens(ctx, ids, n, &err), PD_OK);
        const float *got = pd_context_logits(ctx, pd_context_n_outputs(ctx) - 1);
        double worst = 0, sum = 0;
        int want_top = 0;
        for (int v = 0; v < vocab; v++) {
            double w = json_number_value(json_array_get(want, (size_t)v)), d = fabs(got[v] - w);
            worst = d > worst ? d : worst;
            sum += d;
            if (w > json_number_value(json_array_get(want, (size_t)want_top))) want_top = v;
        }
        printf("  case %zu: logits max|diff| %.4f (mean %.4f) from MNN's high\n", i, worst, sum / vocab);
        assert_true(worst <= 0.2);
        assert_int_equal(argmax(got, vocab), want_top);
        for (size_t k = 0; k < json_array_size(greedy); k++) {
            int32_t next = argmax(pd_context_logits(ctx, pd_context_n_outputs(ctx) - 1), vocab);
            assert_int_equal(next, json_integer_value(json_array_get(greedy, k)));
            assert_int_equal(pd_eval_tokens(ctx, &next, 1, &err), PD_OK);
        }
        assert_int_equal(json_array_size(greedy), 16);
        pd_context_free(ctx);
    }
    pd_model_free(m);
    json_decref(root);
}

/* ----------------------------------------------------------- tokenizer */

static void expect_same_ids(const pd_tokenizer *a, const pd_tokenizer *b, const char *text, size_t len)
{
    int32_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    pd_error err;
    pd_status sa = pd_tokenizer_encode(a, text, len, &x, &nx, &err), sb = pd_tokenizer_encode(b, text, len, &y, &ny, &err);
    assert_int_equal(sa, sb);
    assert_int_equal(nx, ny);
    if (nx && memcmp(x, y, nx * sizeof *x) != 0) fail_msg("ids differ for %.*s", (int)len, text);
    pd_free(x);
    pd_free(y);
}

/* tokenizer.txt gives tokenizer.json's ids on every line of the corpus files
 * (the tokenizer tests' texts, every review of data/tianchi) and on chat
 * markup with the special tokens. */
static void test_tokenizer_txt(void **state)
{
    (void)state;
    if (!have_shared()) return;
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer.txt", export_dir);
    pdi_vocab_parts parts;
    int32_t eos;
    pd_error err;
    if (pdi_mnn_vocab_parts(path, &parts, &eos, &err) != PD_OK) fail_msg("%s", err.message);
    pd_tokenizer *mnn = pdi_tokenizer_from_parts(&parts, path, &err), *json = pd_tokenizer_load(tokenizer_json, &err);
    pdi_vocab_parts_free(&parts);
    assert_non_null(mnn);
    assert_non_null(json);
    assert_int_equal(pd_tokenizer_n_vocab(mnn), pd_tokenizer_n_vocab(json));
    assert_int_equal(eos, 4090); /* <|im_end|>, the export's first stop token */
    const char *chat = "<|im_start|>user\n物流很快 <|im_end|>\n<|im_start|>assistant\n";
    expect_same_ids(mnn, json, chat, strlen(chat));
    size_t lines = 0;
    for (int f = 0; f < n_corpus; f++) {
        size_t len;
        char *data = slurp(corpus[f], &len), *p = data, *end = data + len;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
            json_t *o = n && *p == '{' ? json_loadb(p, n, 0, NULL) : NULL; /* a JSON line: its "text" */
            const char *text = o ? json_string_value(json_object_get(o, "text")) : NULL;
            if (text) expect_same_ids(mnn, json, text, strlen(text));
            else expect_same_ids(mnn, json, p, n);
            json_decref(o);
            lines++;
            p += n + 1;
        }
        free(data);
    }
    printf("  %zu lines of %d files: the same ids\n", lines, n_corpus);
    assert_true(lines > 10000);
    pd_tokenizer_free(mnn);
    pd_tokenizer_free(json);
}

/* ----------------------------------------------------------- bad files */

typedef struct bad {
    char *tmp;
} bad;

/* A fresh copy of the export in a temporary folder. */
static int copy_setup(void **state)
{
    bad *b = calloc(1, sizeof *b);
    b->tmp = tdir_new();
    for (size_t i = 0; i < sizeof export_files / sizeof export_files[0]; i++) {
        char from[1200], to[1200];
        size_t len;
        snprintf(from, sizeof from, "%s/%s", fixture_dir, export_files[i]);
        struct stat sb;
        if (stat(from, &sb) != 0) continue;
        char *data = slurp(from, &len);
        tpath(to, sizeof to, b->tmp, export_files[i]);
        twrite(to, data, len);
        free(data);
    }
    *state = b;
    return 0;
}

static int copy_teardown(void **state)
{
    bad *b = *state;
    tdir_remove(b->tmp);
    free(b);
    return 0;
}

#define HALF ((size_t)-2)

/* Rewrite file `name` of the copy: its first `keep` bytes (all when SIZE_MAX,
 * half when HALF), then `len` bytes at `at` replaced by `bytes` (when given). */
static void damage(const bad *b, const char *name, size_t keep, size_t at, const void *bytes, size_t len)
{
    char path[1200];
    size_t n;
    tpath(path, sizeof path, b->tmp, name);
    char *data = slurp(path, &n);
    assert_true(!bytes || at + len <= n);
    if (bytes) memcpy(data + at, bytes, len);
    twrite(path, data, keep == HALF ? n / 2 : keep < n ? keep : n);
    free(data);
}

/* Loading the copy fails with code and a message holding each of the parts. */
static void expect_refused(const bad *b, pd_status code, const char *part1, const char *part2)
{
    pd_error err;
    pd_model *m = pd_model_load(b->tmp, NULL, &err);
    if (m) fail_msg("a damaged export loaded");
    printf("  refused: %s\n", err.message);
    assert_int_equal(err.code, code);
    if (!strstr(err.message, part1) || (part2 && !strstr(err.message, part2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err.message, part1, part2 ? part2 : "");
}

static void test_truncated_graph(void **state)
{
    damage(*state, "llm.mnn", HALF, 0, NULL, 0);
    expect_refused(*state, PD_ERR_FORMAT, "llm.mnn: malformed graph", "past the end");
}

static void test_weight_past_end(void **state)
{
    damage(*state, "llm.mnn.weight", HALF, 0, NULL, 0);
    expect_refused(*state, PD_ERR_FORMAT, "llm.mnn.weight: op ", "run past the end of the file");
}

static void test_offset_out_of_range(void **state)
{
    const uint8_t root[4] = {0x00, 0xff, 0xff, 0x7f};
    damage(*state, "llm.mnn", SIZE_MAX, 0, root, 4);
    expect_refused(*state, PD_ERR_FORMAT, "llm.mnn: malformed graph", "past the end");
}

/* An offset of 0 points at itself: the one way a forward-only offset could loop. */
static void test_offset_cyclic(void **state)
{
    const uint8_t zero[4] = {0};
    damage(*state, "llm.mnn", SIZE_MAX, 0, zero, 4);
    expect_refused(*state, PD_ERR_FORMAT, "llm.mnn: malformed graph", "root offset is 0");
}

/* The root table's vtable says its op list lies far past the table's end. */
static void test_vtable_lies(void **state)
{
    bad *b = *state;
    char path[1200];
    size_t n;
    tpath(path, sizeof path, b->tmp, "llm.mnn");
    uint8_t *d = (uint8_t *)slurp(path, &n);
    uint32_t root = (uint32_t)(d[0] | d[1] << 8 | d[2] << 16 | (uint32_t)d[3] << 24);
    int32_t so = (int32_t)(d[root] | d[root + 1] << 8 | d[root + 2] << 16 | (uint32_t)d[root + 3] << 24);
    size_t vt = (size_t)((int64_t)root - so);
    free(d);
    const uint8_t lie[2] = {0xf0, 0x7f};
    damage(b, "llm.mnn", SIZE_MAX, vt + 4 + 2 * 3, lie, 2); /* field 3: oplists */
    expect_refused(b, PD_ERR_FORMAT, "llm.mnn: malformed graph", "a vtable that lies");
}

static void test_config_disagrees(void **state)
{
    bad *b = *state;
    char path[1200];
    size_t n;
    tpath(path, sizeof path, b->tmp, "llm_config.json");
    char *text = slurp(path, &n);
    const char *key = "\"layer_nums\": ";
    size_t at = 0, k = strlen(key);
    while (at + k < n && memcmp(text + at, key, k) != 0) at++;
    assert_true(at + k < n && text[at + k] >= '1' && text[at + k] <= '8');
    text[at + k]++; /* one layer more than the graph has */
    twrite(path, text, n);
    free(text);
    expect_refused(b, PD_ERR_FORMAT, "llm_config.json: layer_nums is ", " layers");
}

static void test_tokenizer_cut_short(void **state)
{
    damage(*state, "tokenizer.txt", HALF, 0, NULL, 0);
    expect_refused(*state, PD_ERR_FORMAT, "tokenizer.txt: the file ends at line", "before token");
}

/* ------------------------------------------------------------ the bundle */

/* pd_bundle_open (what every command, Python and serve call) takes an export
 * folder, and a bundle folder whose base/ is one, through pd_model_load. */
static void test_bundle(void **state)
{
    (void)state;
    char *tmp = tdir_new(), base[1200];
    tpath(base, sizeof base, tmp, "base");
    assert_int_equal(symlink(fixture_dir, base), 0);
    const char *paths[] = {fixture_dir, tmp};
    for (size_t i = 0; i < 2; i++) {
        pd_error err;
        pd_bundle *b = pd_bundle_open(paths[i], NULL, &err);
        if (!b) fail_msg("%s", err.message);
        char *info = pd_model_info_json(pd_bundle_base(b));
        assert_non_null(info);
        assert_non_null(strstr(info, "\"format\": \"mnn\""));
        assert_non_null(pd_model_tokenizer(pd_bundle_model(b))); /* tokenizer.txt */
        pd_free(info);
        pd_bundle_free(b);
    }
    unlink(base);
    tdir_remove(tmp);
}

/* ------------------------------------------- what the forward cannot run */

/* The generated export differing in one thing at layer 0's q/k/v op: refused
 * with PD_ERR_UNSUPPORTED, naming the file, the op and what differs. */
static void expect_variant_refused(const char *variant, const char *op, const char *what)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/mnn-%s", fixtures, variant);
    pd_error err;
    pd_model *m = pd_model_load(dir, NULL, &err);
    if (m) fail_msg("the %s variant loaded", variant);
    printf("  %s: %s\n", variant, err.message);
    assert_int_equal(err.code, PD_ERR_UNSUPPORTED);
    if (!strstr(err.message, "llm.mnn: op ") || !strstr(err.message, op) || !strstr(err.message, what))
        fail_msg("message \"%s\" lacks the op %s or \"%s\"", err.message, op, what);
}

static void test_unsupported(void **state)
{
    (void)state;
    const char *qkv = "/layers.0/self_attn/q_proj/Linear";
    expect_variant_refused("sym", qkv, "symmetric scales");
    expect_variant_refused("bits8", qkv, "8-bit weights");
    expect_variant_refused("fp32-scales", qkv, "FP32 scales");
    expect_variant_refused("bias", qkv, "a bias");
    expect_variant_refused("partial-rope", "/layers.0/self_attn/FusedRoPE", "RoPE on 8 of the head's 16");
    expect_variant_refused("unknown-op", "/layers.0/self_attn/MatMul", "op type 39 is not part of");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s FIXTURES SHARED_MNN_DIR TOKENIZER_JSON CORPUS...\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    snprintf(fixture_dir, sizeof fixture_dir, "%s/gqa-mnn-q4_64", fixtures);
    shared_dir = argv[2];
    tokenizer_json = argv[3];
    corpus = argv + 4;
    n_corpus = argc - 4;
    snprintf(export_dir, sizeof export_dir, "%s/tianchi-gen-int4", shared_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_mnn),
        cmocka_unit_test(test_tokenizer_txt),
        cmocka_unit_test_setup_teardown(test_truncated_graph, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_weight_past_end, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_offset_out_of_range, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_offset_cyclic, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_vtable_lies, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_config_disagrees, copy_setup, copy_teardown),
        cmocka_unit_test_setup_teardown(test_tokenizer_cut_short, copy_setup, copy_teardown),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_bundle),
    };
    return cmocka_run_group_tests_name("formats_mnn", tests, NULL, NULL);
}
