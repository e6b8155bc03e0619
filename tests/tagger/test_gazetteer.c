/* The gazetteer's matching rule on hand-worked texts: the longest term at
 * each character, longer matches first, then earlier, no overlaps, a term
 * under two fields marked for both, lengths in characters, CRLF lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "heads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { A = 1, O = 2 }; /* field bits: aspect, opinion */

static char g_dir[64];
static char *g_spans[] = {"aspect", "opinion"};

/* A head whose gazetteer file holds body; the parse status. */
static pd_status load(pd_head *h, pdi_tagger *t, const char *body, const char *marks_json, pd_error *err)
{
    char path[128];
    snprintf(path, sizeof path, "%s/gazetteer.tsv", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(body, 1, strlen(body), f);
    fclose(f);
    *t = (pdi_tagger){.prompt = "<|fim_prefix|>{marked}<|fim_middle|>{text}<|fim_suffix|>", .n_spans = 2,
                     .spans = g_spans};
    *h = (pd_head){.source = g_dir, .tagger = t};
    char doc[512];
    snprintf(doc, sizeof doc, "{\"gazetteer\": {\"file\": \"gazetteer.tsv\", \"marks\": %s}}",
             marks_json ? marks_json : "{\"aspect\": [\"<a>\", \"</a>\"], \"opinion\": [\"<o>\", \"</o>\"]}");
    json_t *root = json_loads(doc, 0, NULL);
    assert_non_null(root);
    pd_status rc = pdi_gazetteer_parse(h, root, "head.json", err);
    json_decref(root);
    return rc;
}

static const char TERMS[] = "# field<TAB>term\n"
                            "aspect\t包装\n"
                            "aspect\t包装盒\n"
                            "opinion\t很好\n"
                            "opinion\t好用\n"
                            "opinion\t不错\n"
                            "aspect\t不错\n"
                            "\n"
                            "opinion\t快\r\n"
                            "opinion\tok\n"
                            "opinion\t很好\n";

static void expect(const pdi_tagger *t, const char *text, const pdi_gaz_match *want, int32_t n_want)
{
    pdi_gaz_match *m = NULL;
    int32_t n = -1;
    pd_error err = {0};
    assert_int_equal(pdi_gazetteer_match(t->gazetteer, ~0u, text, strlen(text), &m, &n, &err), PD_OK);
    assert_int_equal(n, n_want);
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(m[i].start, want[i].start);
        assert_int_equal(m[i].end, want[i].end);
        assert_int_equal(m[i].fields, want[i].fields);
    }
    free(m);
}

static void test_matches(void **state)
{
    (void)state;
    pd_head h;
    pdi_tagger t;
    pd_error err = {0};
    assert_int_equal(load(&h, &t, TERMS, NULL, &err), PD_OK);
    assert_string_equal(pdi_gazetteer_mark(t.gazetteer, 1, true), "</o>");
    assert_null(pdi_gazetteer_mark(t.gazetteer, 2, false));
    /* 包装盒 beats 包装 (longest at 0); 很好 (3-4) and 好用 (4-5) are as long:
     * the earlier wins; 不错 is both fields; 快 from a CRLF line. Bytes: 3 a character. */
    const pdi_gaz_match want[] = {{0, 9, A}, {9, 15, O}, {21, 27, A | O}, {30, 33, O}};
    expect(&t, "包装盒很好用，不错，快", want, 4);
    /* ASCII and CJK mixed: lengths in characters, offsets in bytes */
    const pdi_gaz_match mixed[] = {{1, 3, O}, {3, 9, O}};
    expect(&t, "xok很好", mixed, 2);
    /* a term never matches across its own end: 不错不 has one match */
    const pdi_gaz_match repeat[] = {{0, 6, A | O}};
    expect(&t, "不错不", repeat, 1);
    expect(&t, "", NULL, 0);
    expect(&t, "没有", NULL, 0);
    pdi_gazetteer_free(t.gazetteer);
}

/* Overlaps resolved longest first even when the longer match starts later. */
static void test_longer_later_wins(void **state)
{
    (void)state;
    pd_head h;
    pdi_tagger t;
    pd_error err = {0};
    assert_int_equal(load(&h, &t, "aspect\tab\nopinion\tbcd\n", NULL, &err), PD_OK);
    const pdi_gaz_match want[] = {{1, 4, O}};
    expect(&t, "abcd", want, 1);
    const pdi_gaz_match both[] = {{0, 2, A}, {2, 5, O}};
    expect(&t, "abbcd", both, 2);
    pdi_gazetteer_free(t.gazetteer);
}

static void refuse(const char *body, const char *marks, pd_status status, const char *word)
{
    pd_head h;
    pdi_tagger t;
    pd_error err = {0};
    assert_int_equal(load(&h, &t, body, marks, &err), status);
    if (!strstr(err.message, word)) fail_msg("'%s' not in: %s", word, err.message);
    pdi_gazetteer_free(t.gazetteer);
}

static void test_refusals(void **state)
{
    (void)state;
    refuse("aspect\t包装\nopinion 很好\n", NULL, PD_ERR_FORMAT, "gazetteer.tsv:2");
    refuse("polarity\t好\n", NULL, PD_ERR_FORMAT, "polarity");
    refuse("opinion\t好\n", "{\"aspect\": [\"<a>\", \"</a>\"]}", PD_ERR_FORMAT, "opinion");
    refuse("opinion\t\n", NULL, PD_ERR_FORMAT, "empty");
    refuse("opinion\t\xff\n", NULL, PD_ERR_FORMAT, "UTF-8");
    refuse("opinion\ta\x01z\n", NULL, PD_ERR_FORMAT, "control");
    char longterm[16 + 3 * 65] = "opinion\t";
    for (int i = 0; i < 65; i++) strcat(longterm, "好");
    refuse(longterm, NULL, PD_ERR_LIMIT, "65 characters");
    refuse("opinion\t好\n", "{\"aspect\": [\"<a>\", \"<a>\"]}", PD_ERR_FORMAT, "two different");
    refuse("opinion\t好\n", "[]", PD_ERR_FORMAT, "marks");
    refuse("opinion\t好\n", "{\"polarity\": [\"<a>\", \"</a>\"]}", PD_ERR_FORMAT, "polarity");
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/pd-gazetteer-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_longer_later_wins),
        cmocka_unit_test(test_refusals),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/gazetteer.tsv", g_dir);
    unlink(path);
    rmdir(g_dir);
    return failed;
}
