/* test_labels.c - a labels file (train/dataset.py's JSONL: the review's text,
 * records with {text, start, end} spans or null) as gold and as predictions:
 * hand-worked S, P, G against the same gold in CSV, two people's labels scored
 * against each other (agreement), and each malformed line refused with its
 * FILE:LINE and nothing kept. */
#include "te_test.h"

#include "te_hand_case.h"

#define SPAN(t, s, e) "{\"text\": \"" t "\", \"start\": " #s ", \"end\": " #e "}"
#define LREC(a, o, c, p) \
    "{\"aspect\": " a ", \"opinion\": " o ", \"category\": \"" c "\", \"polarity\": \"" p "\"}"

/* HAND_GOLD as a labels file, in another order than by id, with a key of the
 * user's own ("shop") that must be ignored. */
static const char labels_gold[] =
    "{\"id\": 3, \"text\": \"颜色好看，质地细腻\", \"records\": ["
    LREC(SPAN("颜色", 0, 2), SPAN("好看", 2, 4), "整体", "正面") ", "
    LREC(SPAN("质地", 5, 7), SPAN("细腻", 7, 9), "使用体验", "正面") "]}\n"
    "{\"id\": 1, \"text\": \"包装很好，价格便宜\", \"shop\": \"a\", \"records\": ["
    LREC(SPAN("包装", 0, 2), SPAN("很好", 2, 4), "包装", "正面") ", "
    LREC(SPAN("价格", 5, 7), SPAN("便宜", 7, 9), "价格", "正面") "]}\n"
    "\n"
    "{\"id\": \"2\", \"text\": \"物流很快，味道好闻\", \"records\": ["
    LREC(SPAN("物流", 0, 2), SPAN("很快", 2, 4), "物流", "正面") ", "
    LREC(SPAN("味道", 5, 7), SPAN("好闻", 7, 9), "气味", "正面") "]}\n";

/* A second person's labels of the same reviews: review 1 the same; review 2
 * 好闻 as 使用体验 and 物流 left out; review 3 "nothing to label". */
static const char labels_other[] =
    "{\"id\": 2, \"text\": \"物流很快，味道好闻\", \"records\": ["
    LREC(SPAN("味道", 5, 7), SPAN("好闻", 7, 9), "使用体验", "正面") "]}\n"
    "{\"id\": 3, \"text\": \"颜色好看，质地细腻\", \"records\": []}\n"
    "{\"id\": 1, \"text\": \"包装很好，价格便宜\", \"records\": ["
    LREC(SPAN("包装", 0, 2), SPAN("很好", 2, 4), "包装", "正面") ", "
    LREC(SPAN("价格", 5, 7), SPAN("便宜", 7, 9), "价格", "正面") "]}\n";

/* pocketdec's extraction output for the three reviews: three of four right. */
static const char extracted[] =
    "{\"id\": \"1\", \"records\": [{\"aspect\": \"包装\", \"opinion\": \"很好\", \"category\": \"包装\", "
    "\"polarity\": \"正面\", \"spans\": {\"aspect\": [0, 2], \"opinion\": [2, 4]}, \"confidence\": 0.9}]}\n"
    "{\"id\": \"2\", \"records\": [{\"aspect\": \"物流\", \"opinion\": \"很快\", \"category\": \"物流\", "
    "\"polarity\": \"正面\"}, {\"aspect\": \"_\", \"opinion\": \"好闻\", \"category\": \"气味\", "
    "\"polarity\": \"正面\"}]}\n"
    "{\"id\": \"3\", \"records\": [{\"aspect\": \"质地\", \"opinion\": \"细腻\", \"category\": "
    "\"使用体验\", \"polarity\": \"正面\"}]}\n";

static te_eval *labels_eval(const char *gold, const char *pred, const char *reviews)
{
    te_eval *ev = te_eval_new(NULL);
    assert_non_null(ev);
    load_ok(ev, TE_INPUT_GOLD, "gold.jsonl", gold);
    load_ok(ev, TE_INPUT_PREDICTIONS, "pred.jsonl", pred);
    if (reviews)
        load_ok(ev, TE_INPUT_REVIEWS, "reviews.csv", reviews);
    return ev;
}

/* The labels file gives the same score as the same gold in CSV: S 3 (包装/很好,
 * 物流/很快, 质地/细腻), P 4, G 6, pairs S 3; no check fires with the reviews
 * (the offsets agree with the text, every id is present). */
static void test_labels_as_gold(void **state)
{
    (void)state;
    for (int csv = 0; csv < 2; csv++) {
        te_eval *ev = te_eval_new(NULL);
        load_ok(ev, TE_INPUT_GOLD, csv ? "gold.csv" : "gold.jsonl", csv ? HAND_GOLD : labels_gold);
        load_ok(ev, TE_INPUT_PREDICTIONS, "pred.jsonl", extracted);
        load_ok(ev, TE_INPUT_REVIEWS, "reviews.csv", HAND_REVIEWS);
        te_result *res = score_ok(ev);
        check_score(te_result_overall(res), 3, 4, 6);
        check_score(te_result_pairs(res), 3, 4, 6);
        assert_int_equal(te_result_n_issues(res), 0);
        te_input_summary in = te_result_input(res, TE_INPUT_GOLD);
        assert_int_equal(in.quadruples, 6);
        assert_int_equal(in.ids, 3);
        te_result_free(res);
        te_eval_free(ev);
    }
}

/* Agreement: labels_other against labels_gold matches 包装/很好 and 价格/便宜
 * (S 2) of P 3 and G 6; the other way round P and G swap, S and F1 stay
 * (F1 = 2S / (P + G) = 4/9 both ways). Review 3's "nothing to label" is a
 * placeholder: it counts as present (no missing id) and not in P. Neither file
 * is in id order, and a labels file breaks no order rule for it. */
static void test_agreement(void **state)
{
    (void)state;
    te_eval *ev = labels_eval(labels_gold, labels_other, NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 2, 3, 6);
    check_score(te_result_pairs(res), 3, 3, 6); /* 味道/好闻 too */
    assert_int_equal(te_result_input(res, TE_INPUT_PREDICTIONS).placeholders, 1);
    assert_int_equal(te_result_n_issues(res), 0);
    double f1 = te_result_overall(res).f1;
    assert_true(f1 > 4.0 / 9 - 1e-12 && f1 < 4.0 / 9 + 1e-12);
    te_result_free(res);
    te_eval_free(ev);

    ev = labels_eval(labels_other, labels_gold, NULL);
    res = score_ok(ev);
    check_score(te_result_overall(res), 2, 6, 3);
    assert_true(te_result_overall(res).f1 == f1);
    /* gold's placeholder of review 3 is not a quadruple, but its id is gold's */
    te_input_summary in = te_result_input(res, TE_INPUT_GOLD);
    assert_int_equal(in.quadruples, 3);
    assert_int_equal(in.placeholders, 1);
    assert_int_equal(in.ids, 3);
    assert_int_equal(te_result_n_issues(res), 0);
    te_result_free(res);
    te_eval_free(ev);
}

/* A labels file as predictions against CSV gold; an implicit term (null) is
 * the "_" of the metric; a review the second person did not label is a
 * missing id. */
static void test_labels_as_predictions(void **state)
{
    (void)state;
    static const char pred[] =
        "{\"id\": 2, \"text\": \"物流很快，味道好闻\", \"records\": ["
        LREC(SPAN("物流", 0, 2), SPAN("很快", 2, 4), "物流", "正面") ", "
        LREC("null", SPAN("好闻", 7, 9), "气味", "正面") "]}\n"
        "{\"id\": 1, \"text\": \"包装很好，价格便宜\", \"records\": ["
        LREC(SPAN("包装", 0, 2), SPAN("很好", 2, 4), "包装", "正面") "]}\n";
    te_eval *ev = eval_of(HAND_GOLD, NULL, NULL);
    load_ok(ev, TE_INPUT_PREDICTIONS, "pred.jsonl", pred);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 2, 3, 6);
    check_score(te_result_pairs(res), 2, 3, 6);
    assert_int_equal(te_result_n_violations(res), 1);
    const te_issue *is = issue_of(res, TE_ISSUE_MISSING_ID);
    assert_int_equal(is->id, 3);
    assert_int_equal(count_issues(res, TE_ISSUE_ORDER), 0);
    /* the false positive is the implicit-aspect one, read as "_" */
    for (size_t i = 0; te_result_mismatch(res, i); i++) {
        const te_mismatch *m = te_result_mismatch(res, i);
        if (m->kind == TE_FALSE_POSITIVE)
            assert_string_equal(m->quad.aspect, "_");
    }
    te_result_free(res);
    te_eval_free(ev);
}

/* Each malformed labels line, as gold and as predictions, with its message;
 * a failed load keeps nothing of the file. */
static void test_labels_errors(void **state)
{
    (void)state;
    static const struct { const char *text; const char *message; } cases[] = {
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC("null", SPAN("很好", 0, 3), "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"opinion\" [0, 3] runs past the text"},
        {"{\"id\": 1, \"text\": \"很好吧\", \"records\": []}\n"
         "{\"id\": 2, \"text\": \"很好吧\", \"records\": [" LREC("null", SPAN("很好", 1, 3), "整体", "正面") "]}\n",
         "x.jsonl:2: record 1: \"opinion\" [1, 3] is \"好吧\" in the text, not \"很好\""},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC("null", SPAN("很", 3, 4), "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"opinion\" [3, 4] runs past the text"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": []}\n{\"id\": \"1\", \"text\": \"很好\", \"records\": []}\n",
         "x.jsonl:2: id 1 appears twice (first at line 1): one line a review"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC("[0, 2]", "null", "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"aspect\" must be a string (\"_\" for an implicit term), null or "
         "{\"text\", \"start\", \"end\"}"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [{\"aspect\": null, \"opinion\": null, "
         "\"category\": null, \"polarity\": \"正面\"}]}\n",
         "x.jsonl:1: record 1: \"category\" must be a string"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC("{\"text\": \"很好\", \"start\": 0}", "null", "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"aspect\" must be {\"text\": a string, \"start\", \"end\": integers, "
         "0 <= start <= end}"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC(SPAN("很好", 2, 0), "null", "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"aspect\" must be {\"text\": a string, \"start\", \"end\": integers, "
         "0 <= start <= end}"},
        {"{\"id\": 1, \"text\": 7, \"records\": []}\n", "x.jsonl:1: \"text\" must be a string (the review)"},
        {"{\"id\": 1, \"records\": [" LREC("null", SPAN("很好", 0, 2), "整体", "正面") "]}\n",
         "x.jsonl:1: record 1: \"opinion\" has offsets but the line has no \"text\" to read them in"},
        {"{\"id\": 1, \"text\": \"很好\", \"records\": [" LREC("null", "null", "整体", "正面") "]}\n"
         "{\"id\": 2, \"text\": \"好\", \"records\": [\n",
         "x.jsonl:2: not JSON: "},
    };
    for (int kind = TE_INPUT_GOLD; kind <= TE_INPUT_PREDICTIONS; kind++) {
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            te_eval *ev = te_eval_new(NULL);
            te_error err = {TE_OK, ""};
            const char *text = cases[i].text;
            load_fails(ev, (te_input)kind, "x.jsonl", text, strlen(text), TE_ERR_FORMAT, &err);
            int json_text = strstr(cases[i].message, "not JSON: ") != NULL;
            if (json_text ? strncmp(err.message, cases[i].message, strlen(cases[i].message)) != 0
                          : strcmp(err.message, cases[i].message) != 0)
                fail_msg("kind %d case %zu: \"%s\", expected \"%s\"", kind, i, err.message,
                         cases[i].message);
            /* nothing of the refused file is kept: the other side alone scores */
            load_ok(ev, kind == TE_INPUT_GOLD ? TE_INPUT_PREDICTIONS : TE_INPUT_GOLD, "other.jsonl",
                    labels_gold);
            te_result *res = score_ok(ev);
            assert_int_equal(te_result_input(res, (te_input)kind).rows, 0);
            te_result_free(res);
            te_eval_free(ev);
        }
    }
}

/* Offsets count characters, not bytes: a span after a four-byte character
 * (U+1F600) and after ASCII. */
static void test_character_offsets(void **state)
{
    (void)state;
    static const char gold[] =
        "{\"id\": 5, \"text\": \"\xF0\x9F\x98\x80 ok包装很好\", \"records\": ["
        LREC(SPAN("包装", 4, 6), SPAN("很好", 6, 8), "包装", "正面") "]}\n";
    te_eval *ev = labels_eval(gold, gold, NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    te_result_free(res);
    te_eval_free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels_as_gold),
        cmocka_unit_test(test_agreement),
        cmocka_unit_test(test_labels_as_predictions),
        cmocka_unit_test(test_labels_errors),
        cmocka_unit_test(test_character_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
