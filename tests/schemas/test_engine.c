/* The constraint engine on a hand-made vocabulary: the exact allowed token
 * set at each step (written out by hand for a few steps, and compared with an
 * independent string-level checker of the grammar for every prefix of several
 * outputs), spans, enums, patterns, UTF-8 boundaries and tokens that straddle
 * field and record boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const VOCAB[] = {
    "a", "b", "c", "ab", "bc", "abc", "ca", "_", ",", "\n", "y", "ye", "yes", "no", "n", "yellow", "1", "12",
    "123", "5,", "b,", "b,ye", "s\n", "_,no,1\n", "\xE5", "\xA5\xBD", "\xE5\xA5\xBD", "\xE5\xA5\xBD" "a", "x",
    "_a", ",_", "\n_", "s,4", "1\n_,", "9", "0", "s,", "o,",
};
#define N_VOCAB ((int32_t)(sizeof VOCAB / sizeof *VOCAB))
static const char TEXT[] = "abc\xE5\xA5\xBD" "ab"; /* abc好ab */

static const char SCHEMA[] = "name: t\n"
                             "prompt: \"{text}\"\n"
                             "fields:\n"
                             "  - {name: s, kind: span, empty: true}\n"
                             "  - {name: e, kind: enum, values: [yes, no, yellow]}\n"
                             "  - {name: p, kind: pattern, pattern: '[0-9]{1,2}'}\n"
                             "separator: \",\"\n"
                             "record_end: \"\\n\"\n"
                             "end: \"<end>\"\n"
                             "limits: {max_records: 2}\n";

typedef struct fixture {
    pd_schema *schema;
    pdi_trie vocab;
    pdi_constraint con;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    pd_error err;
    f->schema = pd_schema_parse(SCHEMA, strlen(SCHEMA), "t.yaml", &err);
    if (!f->schema) fprintf(stderr, "%s\n", err.message);
    assert_non_null(f->schema);
    assert_int_equal(pdi_trie_init(&f->vocab, N_VOCAB, &err), PD_OK);
    for (int32_t i = 0; i < N_VOCAB; i++)
        assert_int_equal(pdi_trie_add(&f->vocab, i, (const uint8_t *)VOCAB[i], strlen(VOCAB[i]), &err), PD_OK);
    assert_int_equal(pdi_constraint_init(&f->con, f->schema, TEXT, strlen(TEXT), 2, &err), PD_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pdi_constraint_free(&f->con);
    pdi_trie_free(&f->vocab);
    pd_schema_free(f->schema);
    free(f);
    return 0;
}

/* ------------------------------------------- the independent checker */

static bool utf8_whole(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
        if (k == 0 || i + k > n) return false;
        i += k;
    }
    return true;
}

static bool in_text(const char *s, size_t n)
{
    for (size_t i = 0; i + n <= sizeof TEXT - 1; i++)
        if (memcmp(TEXT + i, s, n) == 0) return true;
    return false;
}

/* Field v of the test schema (complete: followed by its terminator). */
static bool field_ok(int k, const char *v, size_t n, bool complete)
{
    static const char *const E[] = {"yes", "no", "yellow"};
    bool empty = k == 0 && n >= 1 && v[0] == '_';
    if (empty) return n == 1;
    if (n == 0) return !complete;
    if ((unsigned char)v[0] >= 0x80 && (unsigned char)v[0] < 0xC0) return false;
    switch (k) {
    case 0:
        return in_text(v, n) && (!complete || utf8_whole(v, n));
    case 1:
        for (int i = 0; i < 3; i++)
            if (complete ? (strlen(E[i]) == n && !memcmp(E[i], v, n)) : (strlen(E[i]) >= n && !memcmp(E[i], v, n)))
                return true;
        return false;
    default:
        for (size_t i = 0; i < n; i++)
            if (v[i] < '0' || v[i] > '9') return false;
        return n <= 2;
    }
}

/* Whether out is a valid prefix of the output language (records of s,e,p). */
static bool oracle(const char *out, size_t n)
{
    int rec = 0, k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool at_end = i == n;
        char c = at_end ? 0 : out[i];
        char term = k < 2 ? ',' : '\n';
        if (!at_end && c != term && c != ',' && c != '\n') continue;
        if (!at_end && c != term) return false; /* a terminator byte in the wrong place */
        if (!field_ok(k, out + start, i - start, !at_end)) return false;
        if (at_end) break;
        if (rec >= 2) return false;
        start = i + 1;
        if (++k == 3) {
            k = 0;
            if (++rec == 2 && i + 1 < n) return false;
        }
    }
    return true;
}

/* ----------------------------------------------------------- helpers */

static bool commit(fixture *f, pdi_cstate *s, const char *bytes)
{
    for (const char *p = bytes; *p; p++)
        if (!pdi_cstate_step(&f->con, s, (uint8_t)*p)) return false;
    return true;
}

/* Compare the engine's allowed set after prefix with the oracle's. */
static void check_against_oracle(fixture *f, const char *prefix)
{
    pdi_cstate s = pdi_cstate_initial();
    assert_true(commit(f, &s, prefix));
    int32_t ids[N_VOCAB];
    int32_t n = pdi_constraint_allowed(&f->con, &s, &f->vocab, ids);
    int32_t k = 0;
    for (int32_t id = 0; id < N_VOCAB; id++) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s%s", prefix, VOCAB[id]);
        bool want = oracle(buf, strlen(buf));
        bool got = k < n && ids[k] == id;
        if (want != got) fprintf(stderr, "prefix '%s' token '%s': oracle %d engine %d\n", prefix, VOCAB[id], want, got);
        assert_int_equal(want, got);
        k += got;
    }
    assert_int_equal(k, n);
}

static void expect_set(fixture *f, const char *prefix, const char *const *want, int32_t n_want, bool can_end)
{
    pdi_cstate s = pdi_cstate_initial();
    assert_true(commit(f, &s, prefix));
    int32_t ids[N_VOCAB];
    int32_t n = pdi_constraint_allowed(&f->con, &s, &f->vocab, ids);
    for (int32_t i = 0; i < n; i++) fprintf(stderr, "%s'%s'", i ? " " : "allowed: ", VOCAB[ids[i]]);
    fprintf(stderr, "\n");
    assert_int_equal(n, n_want);
    for (int32_t i = 0; i < n; i++) assert_string_equal(VOCAB[ids[i]], want[i]);
    assert_int_equal(pdi_cstate_can_end(&f->con, &s), can_end);
}

/* ------------------------------------------------------------- tests */

static void test_hand_sets(void **state)
{
    fixture *f = *state;
    /* at the start: substrings of abc好ab (never from a continuation byte), `_`,
     * and tokens that finish the span and go on into the enum */
    static const char *const start[] = {"a", "b", "c", "ab", "bc", "abc", "_", "b,", "b,ye", "_,no,1\n",
                                        "\xE5", "\xE5\xA5\xBD", "\xE5\xA5\xBD" "a"};
    expect_set(f, "", start, 13, true);
    /* inside 好: only its remaining bytes */
    static const char *const mid[] = {"\xA5\xBD"};
    expect_set(f, "c\xE5", mid, 1, false);
    /* after `_`: only the separator, alone or leading a token */
    static const char *const empty[] = {","};
    expect_set(f, "_", empty, 1, false);
    /* in the enum after "ye": "s" with or without what follows */
    static const char *const enum_ye[] = {"s,4", "s,"};
    expect_set(f, "ab,ye", enum_ye, 2, false);
    /* pattern: digits up to two, then the record end (alone or straddling) */
    static const char *const pat[] = {"1", "12", "1\n_,", "9", "0"};
    expect_set(f, "a,no,", pat, 5, false);
    static const char *const pat2[] = {"\n", "\n_"};
    expect_set(f, "a,no,12", pat2, 2, false);
    /* after max_records (2): nothing, but the end */
    expect_set(f, "a,no,1\n_,yes,22\n", NULL, 0, true);
}

static void test_oracle_every_prefix(void **state)
{
    fixture *f = *state;
    static const char *const outputs[] = {
        "abc,yes,12\n_,no,1\n",
        "\xE5\xA5\xBD" "a,yellow,3\nbc,no,45\n",
        "_,no,1\nc\xE5\xA5\xBD,yes,0\n",
    };
    for (size_t o = 0; o < sizeof outputs / sizeof *outputs; o++) {
        assert_true(oracle(outputs[o], strlen(outputs[o])));
        char prefix[64];
        for (size_t i = 0; i <= strlen(outputs[o]); i++) {
            memcpy(prefix, outputs[o], i);
            prefix[i] = '\0';
            check_against_oracle(f, prefix);
        }
    }
}

static void test_invalid_steps(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"x", "ca", ",", "_a", "a,ye,", "a,yes,123", "a,yes,\n", "\xA5", "c\xE5,"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pdi_cstate s = pdi_cstate_initial();
        assert_false(commit(f, &s, bad[i]));
        assert_false(oracle(bad[i], strlen(bad[i])));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hand_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oracle_every_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_steps, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
