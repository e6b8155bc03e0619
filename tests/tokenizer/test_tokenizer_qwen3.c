/* test_tokenizer_qwen3.c - the real Qwen3 tokenizer.json against reference
 * ids (tests/fixtures/qwen3/expected_ids.jsonl, made by
 * tools/tokenizer/make_fixture.mjs), decoding, errors, special tokens, the
 * GGUF parts path and concurrent use.
 *
 * Usage: test_tokenizer_qwen3 TOKENIZER_JSON EXPECTED_IDS_JSONL */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <utf8proc.h>

#include "tok_test_util.h"

static const char *json_path, *ids_path;

typedef struct line {
    char *text;
    size_t len;
    int32_t *ids;
    size_t n_ids;
} line;

typedef struct fixture {
    pd_tokenizer *tok;
    line *lines;
    size_t n_lines;
} fixture;

static void read_lines(fixture *f)
{
    FILE *in = fopen(ids_path, "r");
    if (!in) fail_msg("cannot open %s", ids_path);
    char *buf = NULL;
    size_t cap = 0, cap_lines = 0;
    while (getline(&buf, &cap, in) > 0) {
        json_error_t jerr;
        json_t *o = json_loads(buf, JSON_ALLOW_NUL, &jerr);
        if (!o) fail_msg("%s:%d: %s", ids_path, (int)f->n_lines + 1, jerr.text);
        if (f->n_lines == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 1024;
            f->lines = realloc(f->lines, cap_lines * sizeof *f->lines);
        }
        line *l = &f->lines[f->n_lines++];
        const json_t *text = json_object_get(o, "text"), *ids = json_object_get(o, "ids");
        l->len = json_string_length(text);
        l->text = malloc(l->len + 1);
        memcpy(l->text, json_string_value(text), l->len + 1);
        l->n_ids = json_array_size(ids);
        l->ids = malloc((l->n_ids + 1) * sizeof *l->ids);
        for (size_t i = 0; i < l->n_ids; i++) l->ids[i] = (int32_t)json_integer_value(json_array_get(ids, i));
        json_decref(o);
    }
    free(buf);
    fclose(in);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    pd_error err = {0};
    f->tok = pd_tokenizer_load(json_path, &err);
    if (!f->tok) {
        print_error("%s\n", err.message);
        return -1;
    }
    read_lines(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < f->n_lines; i++) {
        free(f->lines[i].text);
        free(f->lines[i].ids);
    }
    free(f->lines);
    pd_tokenizer_free(f->tok);
    free(f);
    return 0;
}

/* Every line encodes to the reference ids; returns the number of ids. */
static size_t check_all_lines(const pd_tokenizer *tok, const fixture *f)
{
    size_t total = 0;
    for (size_t i = 0; i < f->n_lines; i++) {
        const line *l = &f->lines[i];
        check_encode(tok, l->text, l->len, l->ids, l->n_ids);
        total += l->n_ids;
    }
    return total;
}

static void test_reference_ids(void **state)
{
    fixture *f = *state;
    assert_true(f->n_lines > 5000);
    clock_t t0 = clock();
    size_t total = check_all_lines(f->tok, f);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    print_message("%zu texts, %zu ids, %.0f ids/s (comparison included)\n", f->n_lines, total,
                  secs > 0 ? total / secs : 0.0);
}

/* decode(encode(text)) gives the text back, in NFC. */
static void test_round_trip(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < f->n_lines; i++) {
        const line *l = &f->lines[i];
        char *text;
        size_t len;
        pd_error err = {0};
        assert_int_equal(pd_tokenizer_decode(f->tok, l->ids, l->n_ids, &text, &len, &err), PD_OK);
        utf8proc_uint8_t *nfc;
        utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)l->text, (utf8proc_ssize_t)l->len, &nfc,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        assert_true(n >= 0);
        if ((size_t)n != len || memcmp(nfc, text, len) != 0) fail_msg("round trip of line %zu: \"%s\"", i + 1, l->text);
        assert_int_equal(text[len], '\0');
        free(nfc);
        pd_free(text);
    }
}

static void test_special_tokens(void **state)
{
    const pd_tokenizer *tok = ((fixture *)*state)->tok;
    assert_int_equal(pd_tokenizer_n_vocab(tok), 151669);
    const int32_t im_end = pd_tokenizer_token_id(tok, "<|im_end|>");
    assert_int_equal(im_end, 151645);
    assert_int_equal(pd_tokenizer_token_id(tok, "<|im_start|>"), 151644);
    assert_int_equal(pd_tokenizer_token_id(tok, "<|endoftext|>"), 151643);
    assert_true(pd_tokenizer_is_special(tok, im_end));
    assert_true(pd_tokenizer_is_special(tok, 151643));
    /* the FIM and box markers are added tokens, special only for some */
    assert_int_equal(pd_tokenizer_token_id(tok, "<|fim_prefix|>"), 151659);
    assert_false(pd_tokenizer_is_special(tok, 151659));
    assert_true(pd_tokenizer_is_special(tok, pd_tokenizer_token_id(tok, "<|box_start|>")));
    assert_false(pd_tokenizer_is_special(tok, 279));
    assert_false(pd_tokenizer_is_special(tok, -1));
    assert_false(pd_tokenizer_is_special(tok, 151669));
    size_t len;
    const char *b = pd_tokenizer_token_bytes(tok, im_end, &len);
    assert_int_equal(len, 10);
    assert_memory_equal(b, "<|im_end|>", 10);
    /* vocabulary tokens are looked up as written (byte-level) */
    assert_int_equal(pd_tokenizer_token_id(tok, "\xc4\xa0the"), 279); /* "Ġthe" */
    b = pd_tokenizer_token_bytes(tok, 279, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(b, " the", 4);
    assert_int_equal(pd_tokenizer_token_id(tok, " the"), -1);
    assert_int_equal(pd_tokenizer_token_id(tok, "<|no_such_token|>"), -1);
    assert_null(pd_tokenizer_token_bytes(tok, 151669, &len));
    assert_int_equal(len, 0);
    assert_null(pd_tokenizer_token_bytes(tok, -5, NULL));
    assert_encodes(tok, "<|im_start|>user\n\xe4\xbd\xa0\xe5\xa5\xbd<|im_end|>", 151644, 872, 198, 108386, 151645);
}

static void test_decode_partial_characters(void **state)
{
    const pd_tokenizer *tok = ((fixture *)*state)->tok;
    /* U+20000 is F0 A0 80 80: the reference splits it as F0 | A0 80 | 80 */
    assert_encodes(tok, "\xf0\xa0\x80\x80", 172, 63219, 222);
    const int32_t ids[] = {172, 63219, 222};
    const char *want[] = {"\xf0", "\xf0\xa0\x80", "\xf0\xa0\x80\x80"};
    for (size_t n = 1; n <= 3; n++) {
        char *text;
        size_t len;
        assert_int_equal(pd_tokenizer_decode(tok, ids, n, &text, &len, NULL), PD_OK);
        assert_int_equal(len, strlen(want[n - 1]));
        assert_memory_equal(text, want[n - 1], len);
        pd_free(text);
    }
    /* "你" alone and its first two bytes: 56568 is the whole character */
    char *text;
    size_t len;
    const int32_t ni[] = {56568, 56568};
    assert_int_equal(pd_tokenizer_decode(tok, ni, 2, &text, &len, NULL), PD_OK);
    assert_string_equal(text, "\xe4\xbd\xa0\xe4\xbd\xa0");
    pd_free(text);
    assert_int_equal(pd_tokenizer_decode(tok, ni, 0, &text, &len, NULL), PD_OK);
    assert_int_equal(len, 0);
    assert_string_equal(text, "");
    pd_free(text);
}

static void test_decode_out_of_range(void **state)
{
    const pd_tokenizer *tok = ((fixture *)*state)->tok;
    const int32_t bad[][2] = {{279, -1}, {279, 151669}, {INT32_MAX, 0}, {INT32_MIN, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pd_error err = {0};
        char *text = (char *)"unchanged?";
        size_t len = 7;
        assert_int_equal(pd_tokenizer_decode(tok, bad[i], 2, &text, &len, &err), PD_ERR_RANGE);
        assert_int_equal(err.code, PD_ERR_RANGE);
        assert_non_null(strstr(err.message, json_path));
        assert_null(text);
    }
    assert_int_equal(pd_tokenizer_decode(tok, NULL, 1, NULL, NULL, NULL), PD_ERR_ARG);
}

static void test_invalid_utf8(void **state)
{
    const pd_tokenizer *tok = ((fixture *)*state)->tok;
    static const struct {
        const char *text;
        size_t offset;
    } cases[] = {
        {"ab\xff", 2},          {"\xc3", 0},           {"ok\xc3(", 2},          {"\xed\xa0\x80", 0}, /* surrogate */
        {"x\xc0\xaf", 1},       /* overlong */         {"\xf4\x90\x80\x80", 0}, /* > U+10FFFF */
        {"\xe4\xbd", 0},        {"\xe4\xbd\xa0\x80", 3}, {"<|im_end|>\xfe", 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pd_error err = {0};
        int32_t *ids = (int32_t *)&err;
        size_t n = 9;
        assert_int_equal(pd_tokenizer_encode(tok, cases[i].text, strlen(cases[i].text), &ids, &n, &err),
                         PD_ERR_FORMAT);
        char where[64];
        snprintf(where, sizeof where, "byte offset %zu", cases[i].offset);
        if (!strstr(err.message, where)) fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.message, where);
        assert_null(ids);
        assert_int_equal(n, 0);
    }
}

static void test_encode_edges(void **state)
{
    const pd_tokenizer *tok = ((fixture *)*state)->tok;
    int32_t *ids;
    size_t n;
    assert_int_equal(pd_tokenizer_encode(tok, "", 0, &ids, &n, NULL), PD_OK);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    pd_free(ids);
    assert_int_equal(pd_tokenizer_encode(tok, NULL, 0, &ids, &n, NULL), PD_OK);
    pd_free(ids);
    /* a NUL byte is a character like any other: "a\0b" */
    check_encode(tok, "a\0b", 3, (const int32_t[]){64, 188, 65}, 3);
    /* only the given length is read */
    check_encode(tok, "abc", 1, (const int32_t[]){64}, 1);
    pd_error err = {0};
    assert_int_equal(pd_tokenizer_encode(NULL, "a", 1, &ids, &n, &err), PD_ERR_ARG);
    assert_int_equal(pd_tokenizer_encode(tok, NULL, 3, &ids, &n, &err), PD_ERR_ARG);
    assert_int_equal(pd_tokenizer_encode(tok, "a", 1, NULL, &n, &err), PD_ERR_ARG);
    assert_int_equal(pd_tokenizer_n_vocab(NULL), 0);
    assert_int_equal(pd_tokenizer_token_id(NULL, "a"), -1);
}

static void free_parts(pdi_vocab_parts *p)
{
    for (size_t i = 0; i < p->n_tokens; i++) free(p->tokens[i]);
    for (size_t i = 0; i < p->n_merges; i++) free(p->merges[i]);
    free(p->tokens);
    free(p->token_types);
    free(p->merges);
    free(p->pre);
}

/* The vocabulary as a GGUF file carries it, taken from the same JSON. */
static void test_from_parts(void **state)
{
    fixture *f = *state;
    json_error_t jerr;
    json_t *root = json_load_file(json_path, 0, &jerr);
    assert_non_null(root);
    const json_t *model = json_object_get(root, "model"), *added = json_object_get(root, "added_tokens");
    const json_t *vocab = json_object_get(model, "vocab"), *merges = json_object_get(model, "merges");
    pdi_vocab_parts parts = {0};
    parts.n_tokens = (size_t)pd_tokenizer_n_vocab(f->tok);
    parts.tokens = calloc(parts.n_tokens, sizeof *parts.tokens);
    parts.token_types = calloc(parts.n_tokens, sizeof *parts.token_types);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)vocab, key, v) {
        parts.tokens[json_integer_value(v)] = strdup(key);
        parts.token_types[json_integer_value(v)] = 1;
    }
    for (size_t i = 0; i < json_array_size(added); i++) {
        const json_t *t = json_array_get(added, i);
        size_t id = (size_t)json_integer_value(json_object_get(t, "id"));
        parts.tokens[id] = strdup(json_string_value(json_object_get(t, "content")));
        parts.token_types[id] = json_is_true(json_object_get(t, "special")) ? 3 : 4;
    }
    parts.n_merges = json_array_size(merges);
    parts.merges = calloc(parts.n_merges, sizeof *parts.merges);
    for (size_t i = 0; i < parts.n_merges; i++) {
        const json_t *m = json_array_get(merges, i);
        const char *a = json_string_value(json_array_get(m, 0)), *b = json_string_value(json_array_get(m, 1));
        parts.merges[i] = malloc(strlen(a) + strlen(b) + 2);
        sprintf(parts.merges[i], "%s %s", a, b);
    }
    parts.pre = strdup("qwen2");
    json_decref(root);

    pd_error err = {0};
    pd_tokenizer *tok = pdi_tokenizer_from_parts(&parts, "model.gguf", &err);
    if (!tok) fail_msg("%s", err.message);
    assert_int_equal(pd_tokenizer_n_vocab(tok), pd_tokenizer_n_vocab(f->tok));
    check_all_lines(tok, f);
    assert_int_equal(pd_tokenizer_token_id(tok, "<|im_end|>"), 151645);
    assert_true(pd_tokenizer_is_special(tok, 151645));

    /* a merge naming an unknown token, and another pre-tokenizer */
    free(parts.merges[3]);
    parts.merges[3] = strdup("\xc4\xa0 nosuchtoken");
    assert_null(pdi_tokenizer_from_parts(&parts, "model.gguf", &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    assert_non_null(strstr(err.message, "model.gguf: tokenizer.ggml.merges[3]: unknown token"));
    free(parts.pre);
    parts.pre = strdup("llama-bpe");
    assert_null(pdi_tokenizer_from_parts(&parts, "model.gguf", &err));
    assert_int_equal(err.code, PD_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.message, "llama-bpe"));
    pdi_vocab_parts none = {0};
    assert_null(pdi_tokenizer_from_parts(&none, NULL, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);

    pd_tokenizer_free(tok);
    free_parts(&parts);
}

static void *encode_all(void *arg)
{
    fixture *f = arg;
    for (size_t i = 0; i < f->n_lines; i++) {
        int32_t *ids;
        size_t n;
        const line *l = &f->lines[i];
        if (pd_tokenizer_encode(f->tok, l->text, l->len, &ids, &n, NULL) != PD_OK) return (void *)1;
        int same = n == l->n_ids && memcmp(ids, l->ids, n * sizeof *ids) == 0;
        pd_free(ids);
        if (!same) return (void *)1;
    }
    return NULL;
}

/* One tokenizer, several threads at once. */
static void test_threads(void **state)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, encode_all, *state), 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER_JSON EXPECTED_IDS_JSONL\n", argv[0]);
        return 2;
    }
    json_path = argv[1];
    ids_path = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_ids),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_special_tokens),
        cmocka_unit_test(test_decode_partial_characters),
        cmocka_unit_test(test_decode_out_of_range),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_encode_edges),
        cmocka_unit_test(test_from_parts),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("tokenizer_qwen3", tests, setup, teardown);
}
