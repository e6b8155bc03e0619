/* test_jsonl.c - predictions from pocketdec's JSONL output: scoring them, the
 * confidence sweep on a hand-made file (kept records, P/R/F1 per threshold,
 * reliability bins written out), and each malformed line refused with its
 * FILE:LINE. */
#include "te_test.h"

#include <math.h>

#include "te_hand_case.h"

static const char gold[] = HAND_GOLD;

#define REC(a, o, c, p, tail) \
    "{\"aspect\": \"" a "\", \"opinion\": \"" o "\", \"category\": \"" c "\", \"polarity\": \"" p "\"" tail "}"

/* Five records, three of them right (confidence 0.95, 0.85, 0.55); G = 6. */
static const char run[] =
    "{\"id\": \"1\", \"records\": [" REC("包装", "很好", "包装", "正面",
        ", \"spans\": {\"aspect\": [0, 2], \"opinion\": [2, 4]}, \"probs\": {\"aspect\": 0.98, "
        "\"opinion\": 0.95, \"link\": 0.99, \"category\": 0.9, \"polarity\": 0.97}, \"confidence\": 0.95")
    ", " REC("价格", "便宜", "价格", "负面", ", \"confidence\": 0.35") "]}\n"
    "{\"id\": 2, \"records\": [" REC("物流", "很快", "物流", "正面", ", \"confidence\": 0.85")
    ", " REC("味道", "好闻", "气味", "正面", ", \"confidence\": 0.55")
    ", " REC("物流", "慢", "物流", "负面", ", \"confidence\": 0.05") "]}\n"
    "\n"
    "{\"id\": \"3\", \"records\": []}\n";

static void test_plain_scoring(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, run, NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 3, 5, 6);
    te_input_summary in = te_result_input(res, TE_INPUT_PREDICTIONS);
    assert_int_equal(in.placeholders, 1); /* review 3, no records */
    assert_int_equal(in.ids, 3);
    assert_int_equal(te_result_n_violations(res), 0);
    /* The record 价格|便宜|负面 is on line 1, the second fp of 物流 on line 2. */
    const te_mismatch *m = te_result_mismatch(res, 1);
    assert_int_equal(m->kind, TE_FALSE_POSITIVE);
    assert_int_equal(m->line, 1);
    te_result_free(res);
    te_eval_free(ev);
}

static te_sweep *sweep_ok(const te_eval *ev, const double *t, size_t n)
{
    te_error err = {TE_OK, ""};
    te_sweep *sw = te_eval_sweep(ev, t, n, &err);
    if (!sw)
        fail_msg("sweep: %s", err.message);
    return sw;
}

static void test_sweep(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, run, NULL);
    te_sweep *sw = sweep_ok(ev, NULL, 0);
    /* threshold: kept, S (G = 6 throughout) */
    static const struct { double t; long kept, s; } want[] = {
        {0.0, 5, 3}, {0.1, 4, 3}, {0.2, 4, 3}, {0.3, 4, 3}, {0.4, 3, 3}, {0.5, 3, 3},
        {0.6, 2, 2}, {0.7, 2, 2}, {0.8, 2, 2}, {0.9, 1, 1}, {0.95, 1, 1},
    };
    assert_int_equal(te_sweep_n_rows(sw), 11);
    for (size_t i = 0; i < 11; i++) {
        const te_sweep_row *r = te_sweep_row_at(sw, i);
        assert_true(r->threshold == want[i].t);
        check_score(r->score, want[i].s, want[i].kept, 6);
    }
    assert_null(te_sweep_row_at(sw, 11));
    /* F1 at 0.0: 2*3/(5+6) = 6/11; at 0.4: 6/9; at 0.9: 2/7. */
    assert_true(fabs(te_sweep_row_at(sw, 0)->score.f1 - 6.0 / 11) < 1e-12);
    assert_true(fabs(te_sweep_row_at(sw, 4)->score.f1 - 6.0 / 9) < 1e-12);
    assert_true(fabs(te_sweep_row_at(sw, 9)->score.f1 - 2.0 / 7) < 1e-12);
    /* Bins: 0.05 wrong, 0.35 wrong, 0.55 right, 0.85 right, 0.95 right. */
    static const long count[10] = {1, 0, 0, 1, 0, 1, 0, 0, 1, 1};
    static const long correct[10] = {0, 0, 0, 0, 0, 1, 0, 0, 1, 1};
    assert_int_equal(te_sweep_n_bins(sw), 10);
    for (size_t i = 0; i < 10; i++) {
        const te_reliability_bin *b = te_sweep_bin(sw, i);
        assert_int_equal(b->count, count[i]);
        assert_int_equal(b->correct, correct[i]);
        assert_true(b->accuracy == (count[i] ? (double)correct[i] / count[i] : 0.0));
        assert_true(fabs(b->low - i / 10.0) < 1e-12 && fabs(b->high - (i + 1) / 10.0) < 1e-12);
    }
    te_sweep_free(sw);

    const double mine[] = {0.55, 1.0};
    sw = sweep_ok(ev, mine, 2);
    assert_int_equal(te_sweep_n_rows(sw), 2);
    check_score(te_sweep_row_at(sw, 0)->score, 3, 3, 6);
    check_score(te_sweep_row_at(sw, 1)->score, 0, 0, 6);
    te_sweep_free(sw);
    te_eval_free(ev);
}

static void sweep_fails(const char *pred, const char *want)
{
    te_eval *ev = eval_of(gold, pred, NULL);
    te_error err = {TE_OK, ""};
    assert_null(te_eval_sweep(ev, NULL, 0, &err));
    assert_int_equal(err.code, TE_ERR_FORMAT);
    assert_string_equal(err.message, want);
    te_eval_free(ev);
}

static void test_sweep_refused(void **state)
{
    (void)state;
    /* An older output without confidences scores, but does not sweep. */
    sweep_fails("{\"id\": 1, \"records\": []}\n{\"id\": 2, \"records\": [" REC("物流", "很快", "物流", "正面", "") "]}\n",
                "pred.csv:2: a record without \"confidence\" (an older output?); the sweep needs "
                "each record's confidence");
    sweep_fails("1,包装,很好,包装,正面\n", "pred.csv: the sweep needs pocketdec's JSONL output "
                                          "with confidences, not a CSV submission");
    te_eval *ev = eval_of(gold, run, NULL);
    te_error err = {TE_OK, ""};
    const double bad[] = {0.5, 1.5};
    assert_null(te_eval_sweep(ev, bad, 2, &err));
    assert_int_equal(err.code, TE_ERR_ARG);
    te_eval_free(ev);
}

/* The plain report's "Confidence" section: the sweep at the default
 * thresholds, or one line saying why there is none. */
static void test_html_confidence(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, run, NULL);
    te_result *res = score_ok(ev);
    char *h = html_text(res);
    assert_contains(h, "<h2>F1 per polarity</h2>");
    assert_true(strstr(h, "<h2>Confidence</h2>") > strstr(h, "<h2>F1 per polarity</h2>"));
    assert_true(strstr(h, "<h2>Categories</h2>") > strstr(h, "<h3>Reliability</h3>"));
    /* 0.40: kept 3, S 3, G 6; the bin [0.9, 1.0]: 1 prediction, 1 correct. */
    assert_contains(h, "<tr><td>0.40</td><td>3</td><td>3</td><td>6</td><td>1.0000</td><td>0.5000</td>"
                       "<td>0.6667</td></tr>");
    assert_contains(h, "<tr><td class=\"t\">[0.9, 1.0]</td><td>1</td><td>1</td><td>1.0000</td></tr>");
    free(h);
    /* A row added after scoring: the result's figures are no longer those of ev. */
    te_quad q = {3, "_", "很好", "整体", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, NULL), TE_OK);
    h = html_text(res);
    assert_contains(h, "<h2>Confidence</h2>\n<p class=\"note\">gold or predictions were added after "
                       "scoring: no sweep</p>\n<h2>Categories</h2>");
    free(h);
    te_result_free(res);
    /* Scored again, a row without confidence (added in memory, as in a submission). */
    res = score_ok(ev);
    h = html_text(res);
    assert_contains(h, "<p class=\"note\">no record confidences in PRED (a CSV submission): no sweep</p>");
    assert_null(strstr(h, "<h3>"));
    free(h);
    te_result_free(res);
    te_eval_free(ev);
    /* Records without confidence: the sweep's message. */
    ev = eval_of(gold, "{\"id\": 1, \"records\": [" REC("物流", "很快", "物流", "正面", "") "]}\n", NULL);
    res = score_ok(ev);
    h = html_text(res);
    assert_contains(h, "<p class=\"note\">no sweep: pred.csv:1: a record without &quot;confidence&quot; "
                       "(an older output?); the sweep needs each record&#39;s confidence</p>");
    free(h);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_fields(void **state)
{
    (void)state;
    te_eval *ev = te_eval_new(NULL);
    te_error err = {TE_OK, ""};
    load_ok(ev, TE_INPUT_GOLD, "gold.csv", gold);
    assert_int_equal(te_eval_set_jsonl_fields(ev, "a,o,c,p", &err), TE_OK);
    load_ok(ev, TE_INPUT_PREDICTIONS, "run.jsonl",
            "{\"id\": 1, \"records\": [{\"a\": \"包装\", \"o\": \"很好\", \"c\": \"包装\", \"p\": \"正面\","
            " \"spans\": {\"a\": [0, 2]}}]}\n");
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 6);
    te_result_free(res);
    assert_int_equal(te_eval_set_jsonl_fields(ev, "a,o,c", &err), TE_ERR_ARG);
    assert_int_equal(te_eval_set_jsonl_fields(ev, "a,,c,p", &err), TE_ERR_ARG);
    assert_int_equal(te_eval_set_jsonl_fields(ev, "a,o,c,p,q", &err), TE_ERR_ARG);
    te_eval_free(ev);
}

/* Each malformed input, with the message it must give (jansson's own words
 * after "not JSON: " vary with its version: only their start is checked). */
static void test_errors(void **state)
{
    (void)state;
    static const struct { const char *text; const char *message; } cases[] = {
        {"{\"id\": 1, \"records\": []}\n{\"id\": 2, \"records\": [\n",
         "x.jsonl:2: not JSON: "},
        {"{\"id\": 1}\n", "x.jsonl:1: no \"records\" ([] for a review without quadruples)"},
        {"\n\n{\"records\": []}\n", "x.jsonl:3: no \"id\""},
        {"{\"id\": 1.5, \"records\": []}\n",
         "x.jsonl:1: \"id\" must be a non-negative integer or a string holding one"},
        {"{\"id\": \"x1\", \"records\": []}\n",
         "x.jsonl:1: \"id\" must be a non-negative integer or a string holding one"},
        {"{\"id\": 1, \"records\": {}}\n", "x.jsonl:1: \"records\" must be an array"},
        {"{\"id\": 1, \"records\": [3]}\n", "x.jsonl:1: record 1: a record must be a JSON object"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", ", \"confidence\": \"high\"") "]}\n",
         "x.jsonl:1: record 1: \"confidence\" must be a number in [0, 1]"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", ", \"confidence\": 1.2") "]}\n",
         "x.jsonl:1: record 1: \"confidence\" must be a number in [0, 1]"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", "") ", {\"aspect\": 3, "
         "\"opinion\": \"b\", \"category\": \"c\", \"polarity\": \"d\"}]}\n",
         "x.jsonl:1: record 2: \"aspect\" must be a string (\"_\" for an implicit term), null or "
         "{\"text\", \"start\", \"end\"}"},
        {"{\"id\": 1, \"records\": [{\"aspect\": \"a\", \"category\": \"c\", \"polarity\": \"d\"}]}\n",
         "x.jsonl:1: record 1: \"opinion\" is missing"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", ", \"spans\": [0, 1]") "]}\n",
         "x.jsonl:1: record 1: \"spans\" must be an object"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", ", \"spans\": {\"opinion\": [2, 1]}") "]}\n",
         "x.jsonl:1: record 1: \"spans\".\"opinion\" must be [start, end], 0 <= start <= end"},
        {"{\"id\": 1, \"records\": [" REC("a", "b", "整体", "正面", ", \"probs\": {\"link\": null}") "]}\n",
         "x.jsonl:1: record 1: \"probs\".\"link\" must be a number in [0, 1]"},
        {"{\"id\": 1, \"records\": []}\n{\"id\": \"1\", \"records\": []}\n",
         "x.jsonl:2: id 1 appears twice (first at line 1): one line a review"},
        {"{\"id\": 1, \"records\": [" REC("\xba", "b", "整体", "正面", "") "]}\n",
         "x.jsonl:1: invalid UTF-8 at byte 35 of the line; the file must be UTF-8"},
        {"{\"id\": 1, \"id\": 2, \"records\": []}\n", "x.jsonl:1: not JSON: duplicate object key"},
        {"[1]\n{\"id\": 1, \"records\": []}\n", "x.jsonl:1: 1 fields, expected 5 for predictions (id,AspectTerm,OpinionTerm,Category,Polarity)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        te_eval *ev = te_eval_new(NULL);
        te_error err = {TE_OK, ""};
        const char *text = cases[i].text;
        /* The last case does not start with '{': it is read, and refused, as CSV. */
        te_status st = te_eval_load_buffer(ev, TE_INPUT_PREDICTIONS, "x.jsonl", text, strlen(text), &err);
        assert_int_equal(st, TE_ERR_FORMAT);
        int json_text = strstr(cases[i].message, "not JSON: ") != NULL;
        if (json_text ? strncmp(err.message, cases[i].message, strlen(cases[i].message)) != 0
                      : strcmp(err.message, cases[i].message) != 0)
            fail_msg("case %zu: \"%s\", expected \"%s\"", i, err.message, cases[i].message);
        /* A failed load leaves nothing behind. */
        load_ok(ev, TE_INPUT_GOLD, "gold.csv", gold);
        te_result *res = score_ok(ev);
        assert_int_equal(te_result_input(res, TE_INPUT_PREDICTIONS).rows, 0);
        te_result_free(res);
        te_eval_free(ev);
    }
}

/* In JSONL an id that is not a review's is an input error, found when scoring. */
static void test_unknown_id(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, "{\"id\": 1, \"records\": []}\n{\"id\": 9, \"records\": []}\n",
                          HAND_REVIEWS);
    te_error err = {TE_OK, ""};
    assert_null(te_eval_score(ev, &err));
    assert_int_equal(err.code, TE_ERR_FORMAT);
    assert_string_equal(err.message, "pred.csv:2: id 9 is not an id of the reviews (reviews.csv)");
    te_eval_free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_scoring),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_sweep_refused),
        cmocka_unit_test(test_html_confidence),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unknown_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
