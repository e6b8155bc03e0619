/* The schema reader: the shipped Tianchi schema, and one malformed schema per
 * error kind, each refused with PD_ERR_FORMAT and a message naming the file,
 * line and column of the offending node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_shipped;

static void test_shipped(void **state)
{
    (void)state;
    pd_error err;
    pd_schema *sc = pd_schema_load(g_shipped, &err);
    if (!sc) fprintf(stderr, "%s\n", err.message);
    assert_non_null(sc);
    assert_int_equal(pd_schema_n_fields(sc), 4);
    assert_string_equal(pd_schema_field_name(sc, 0), "aspect");
    assert_null(pd_schema_field_name(sc, 4));
    assert_int_equal(sc->fields[0].kind, PD_FIELD_SPAN);
    assert_true(sc->fields[0].allow_empty && sc->fields[1].allow_empty);
    assert_int_equal(sc->fields[2].n_values, 13);
    assert_string_equal(sc->fields[2].values[7], "使用体验");
    assert_int_equal(sc->fields[3].n_values, 3);
    assert_string_equal(sc->fields[3].values[2], "负面");
    assert_string_equal(sc->separator, ",");
    assert_string_equal(sc->record_end, "\n");
    assert_string_equal(sc->end_token, "<|im_end|>");
    assert_non_null(strstr(sc->prompt, "{text}"));
    assert_int_equal(sc->n_csv, 4);
    pd_schema_free(sc);
}

#define BASE_HEAD "name: t\nprompt: \"{text}\"\nseparator: \",\"\nrecord_end: \"\\n\"\nend: \"<e>\"\n"
#define FIELDS "fields:\n  - {name: a, kind: span}\n"

typedef struct bad_case {
    const char *yaml;
    const char *where;   /* "t.yaml:LINE:COL" expected at the start of the message */
    const char *problem; /* a piece of the message */
} bad_case;

static const bad_case BAD[] = {
    {"name: [unclosed\n", "t.yaml:2:1", "YAML"},
    {"- a\n- b\n", "t.yaml:1:1", "must be a mapping"},
    {BASE_HEAD FIELDS "colour: red\n", "t.yaml:8:1", "unknown key 'colour'"},
    {"prompt: \"{text}\"\nseparator: \",\"\nrecord_end: \"\\n\"\nend: e\n" FIELDS, "t.yaml:1:1", "missing 'name'"},
    {BASE_HEAD, "t.yaml:1:1", "'fields' must be a non-empty list"},
    {BASE_HEAD "fields:\n  - {name: a, kind: blob}\n", "t.yaml:7:21", "unknown field kind 'blob'"},
    {BASE_HEAD "fields:\n  - {name: a, kind: enum}\n", "t.yaml:7:5", "needs a non-empty list of values"},
    {BASE_HEAD "fields:\n  - {name: a, kind: enum, values: [x, \"y,z\"]}\n", "t.yaml:7:39", "separator byte"},
    {BASE_HEAD "fields:\n  - {name: a, kind: enum, empty: true, values: [x, _y]}\n", "t.yaml:7:52", "empty mark"},
    {BASE_HEAD "fields:\n  - {name: a, kind: enum, values: [x, x]}\n", "t.yaml:7:39", "repeated"},
    {BASE_HEAD "fields:\n  - {name: a, kind: pattern, pattern: \"[0-9\"}\n", "t.yaml:7:39", "bad pattern"},
    {BASE_HEAD "fields:\n  - {name: a, kind: span}\n  - {name: a, kind: span}\n", "t.yaml:8:5", "defined twice"},
    {BASE_HEAD "fields:\n  - {name: a, kind: span, empty: maybe}\n", "t.yaml:7:34", "true or false"},
    {BASE_HEAD FIELDS "limits: {max_records: -3}\n", "t.yaml:8:23", "integer in [1, 100000]"},
    {BASE_HEAD FIELDS "limits: {max_tokes: 3}\n", "t.yaml:8:10", "unknown key 'max_tokes'"},
    {"name: t\nprompt: \"no slot\"\nseparator: \",\"\nrecord_end: \"\\n\"\nend: e\n" FIELDS, "t.yaml:2:9",
     "{text} exactly once"},
    {"name: t\nprompt: \"{text}\"\nseparator: \"\\n\"\nrecord_end: \"\\n\"\nend: e\n" FIELDS, "t.yaml:3:12",
     "different bytes"},
    {BASE_HEAD FIELDS "print: {csv: [a, b]}\n", "t.yaml:8:18", "names no field 'b'"},
    {"name: t\nprompt: \"{text}\"\nseparator: \"\"\nrecord_end: \"\\n\"\nend: e\n" FIELDS, "t.yaml:3:12",
     "must not be empty"},
    {"", "t.yaml", "empty"},
    {BASE_HEAD FIELDS "limits: {distinct_records: 2}\n", "t.yaml:8:28", "true or false"},
#define ENUMS FIELDS "  - {name: c, kind: enum, values: [x, y]}\n  - {name: p, kind: enum, values: [ab, b]}\n"
    {BASE_HEAD ENUMS "decide: {question: \"{a}\"}\n", "t.yaml:10:9", "missing 'candidate'"},
    {BASE_HEAD ENUMS "decide: {question: \"{a}\", candidate: \"{c}\", why: 1}\n", "t.yaml:10:45", "unknown key 'why'"},
    {BASE_HEAD ENUMS "decide: {question: \"{z}\", candidate: \"{c}\"}\n", "t.yaml:10:20", "does not start a {field}"},
    {BASE_HEAD ENUMS "decide: {question: \"{a\", candidate: \"{c}\"}\n", "t.yaml:10:20", "does not start a {field}"},
    {BASE_HEAD ENUMS "decide: {question: \"{a}\", candidate: \"{a}/{c}\"}\n", "t.yaml:10:38", "enum fields only"},
    {BASE_HEAD ENUMS "decide: {question: \"{a}\", candidate: \"{c}{c}\"}\n", "t.yaml:10:38", "each field once"},
    {BASE_HEAD ENUMS "decide: {question: \"{a}\", candidate: \"none\"}\n", "t.yaml:10:38", "names no enum field"},
    /* "a" + "bc" and "ab" + "c" read the same */
    {BASE_HEAD FIELDS "  - {name: c, kind: enum, values: [a, ab]}\n  - {name: p, kind: enum, values: [bc, c]}\n"
     "decide: {question: \"{a}\", candidate: \"{c}{p}\"}\n", "t.yaml:10:38", "for two label combinations"},
};

static void test_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        pd_error err = {0};
        pd_schema *sc = pd_schema_parse(BAD[i].yaml, strlen(BAD[i].yaml), "t.yaml", &err);
        if (sc || strncmp(err.message, BAD[i].where, strlen(BAD[i].where)) || !strstr(err.message, BAD[i].problem))
            fprintf(stderr, "case %zu: got '%s', want '%s ... %s'\n", i, sc ? "(accepted)" : err.message,
                    BAD[i].where, BAD[i].problem);
        assert_null(sc);
        assert_int_equal(err.code, PD_ERR_FORMAT);
        assert_int_equal(strncmp(err.message, BAD[i].where, strlen(BAD[i].where)), 0);
        assert_non_null(strstr(err.message, BAD[i].problem));
    }
}

/* Mutated copies of the shipped schema (bytes flipped, cut short): each is
 * refused with a message or accepted, never a crash or a leak (the sanitizer
 * build checks the memory side). */
static void test_mutations(void **state)
{
    (void)state;
    pd_error err;
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(pdi_read_file(g_shipped, &data, &len, &err), PD_OK);
    static const char pool[] = "_:,-[]{}\"'\n #|>&*!%@`\\";
    uint32_t x = 12345;
    int refused = 0;
    for (int it = 0; it < 3000; it++) {
        char *m = malloc(len + 1);
        memcpy(m, data, len + 1);
        size_t n = len;
        for (int k = 0; k < 1 + it % 4; k++) {
            x = x * 1103515245u + 12345u;
            size_t at = (x >> 8) % n;
            m[at] = pool[(x >> 3) % (sizeof pool - 1)];
        }
        if (it % 7 == 0) n = (x >> 4) % n; /* truncated */
        pd_schema *sc = pd_schema_parse(m, n, "m.yaml", &err);
        if (!sc) {
            refused++;
            assert_true(err.code == PD_ERR_FORMAT && strncmp(err.message, "m.yaml", 6) == 0);
        }
        pd_schema_free(sc);
        free(m);
    }
    assert_true(refused > 1000);
    pd_free(data);
}

/* The shipped schema's decide section: 13 x 3 joint labels, distinct records. */
static void test_decide_section(void **state)
{
    (void)state;
    pd_error err;
    pd_schema *sc = pd_schema_load(g_shipped, &err);
    assert_non_null(sc);
    assert_true(sc->distinct_records);
    assert_int_equal(pd_schema_n_candidates(sc), 39);
    char **c = NULL;
    int32_t n = 0;
    assert_int_equal(pdi_schema_candidates(sc, &c, &n, &err), PD_OK);
    assert_int_equal(n, 39);
    assert_string_equal(c[0], "包装/正面");
    assert_string_equal(c[1], "包装/中性");
    assert_string_equal(c[3], "成分/正面");
    assert_string_equal(c[38], "其他/负面");
    char *values[4] = {"眼霜", "好用", "功效", "正面"};
    char *q = pdi_schema_render(sc, sc->decide_question, values);
    assert_string_equal(q, "属性：眼霜；观点：好用");
    free(q);
    pdi_schema_free_candidates(c, n);
    pd_schema_free(sc);
    /* more joint labels than the limit */
    char yaml[8192];
    int k = snprintf(yaml, sizeof yaml, BASE_HEAD FIELDS "  - name: c\n    kind: enum\n    values: [");
    for (int i = 0; i < 70; i++) k += snprintf(yaml + k, sizeof yaml - (size_t)k, "%sv%d", i ? ", " : "", i);
    k += snprintf(yaml + k, sizeof yaml - (size_t)k, "]\n  - name: p\n    kind: enum\n    values: [");
    for (int i = 0; i < 70; i++) k += snprintf(yaml + k, sizeof yaml - (size_t)k, "%sw%d", i ? ", " : "", i);
    snprintf(yaml + k, sizeof yaml - (size_t)k, "]\ndecide: {question: \"{a}\", candidate: \"{c}{p}\"}\n");
    assert_null(pd_schema_parse(yaml, strlen(yaml), "big.yaml", &err));
    assert_int_equal(err.code, PD_ERR_RANGE);
    assert_non_null(strstr(err.message, "more than 4096 candidates"));
}

static void test_missing_file(void **state)
{
    (void)state;
    pd_error err;
    assert_null(pd_schema_load("/nonexistent/schema.yaml", &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent/schema.yaml"));
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    g_shipped = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_decide_section),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
