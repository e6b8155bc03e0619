/* test_metric.c - the metric on hand-worked cases; expected S, P, G are
 * written out next to each case. */
#include "te_test.h"

#define GOLD_HEADER "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"

/* The worked example of docs/tianchi-eval.md. */
static const char example_gold[] = GOLD_HEADER
    "1,_, , ,很好,0,2,整体,正面\n"
    "1,_, , ,超值,3,5,价格,正面\n"
    "2,包装,0,2,好看,2,4,包装,正面\n";
static const char example_pred[] =
    "1,_,很好,整体,正面\n"   /* matches gold row 1 */
    "1,_,超值,价格,负面\n"   /* wrong polarity: false positive, gold row 2 missed */
    "2,包装,好看,包装,正面\n" /* matches gold row 3 */
    "2,物流,快,物流,正面\n"; /* not in gold: false positive */

static void test_worked_example(void **state)
{
    (void)state;
    te_eval *ev = eval_of(example_gold, example_pred, NULL);
    te_result *res = score_ok(ev);
    /* S = 2, P = 4, G = 3: precision 1/2, recall 2/3, F1 = 2*(1/2)(2/3)/(1/2+2/3) = 4/7. */
    te_score s = te_result_overall(res);
    check_score(s, 2, 4, 3);
    assert_true(s.f1 > 4.0 / 7 - 1e-12 && s.f1 < 4.0 / 7 + 1e-12);
    /* Pairs ignore labels: (1,_,超值) now matches too. S = 3, P = 4, G = 3. */
    check_score(te_result_pairs(res), 3, 4, 3);

    /* Categories: precision over the predicted label, recall over the gold label. */
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "整体")->score, 1, 1, 1);
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "价格")->score, 0, 1, 1);
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "包装")->score, 1, 1, 1);
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "物流")->score, 0, 1, 0);
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "气味")->score, 0, 0, 0);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "正面")->score, 2, 3, 3);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "负面")->score, 0, 1, 0);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "中性")->score, 0, 0, 0);
    assert_int_equal(te_result_n_labels(res, TE_AXIS_CATEGORY), 13);
    assert_int_equal(te_result_n_labels(res, TE_AXIS_POLARITY), 3);
    assert_string_equal(te_result_label(res, TE_AXIS_CATEGORY, 0)->label, "包装");
    assert_string_equal(te_result_label(res, TE_AXIS_CATEGORY, 12)->label, "其他");
    assert_null(te_result_label(res, TE_AXIS_CATEGORY, 13));

    /* Errors: id 1 miss (gold line 3), id 1 false positive (pred line 2), id 2 false positive. */
    assert_int_equal(te_result_n_mismatches(res), 3);
    const te_mismatch *m = te_result_mismatch(res, 0);
    assert_int_equal(m->kind, TE_MISS);
    assert_int_equal(m->quad.id, 1);
    assert_string_equal(m->quad.opinion, "超值");
    assert_string_equal(m->quad.polarity, "正面");
    assert_string_equal(m->file, "gold.csv");
    assert_int_equal(m->line, 3);
    m = te_result_mismatch(res, 1);
    assert_int_equal(m->kind, TE_FALSE_POSITIVE);
    assert_string_equal(m->quad.polarity, "负面");
    assert_int_equal(m->line, 2);
    m = te_result_mismatch(res, 2);
    assert_int_equal(m->kind, TE_FALSE_POSITIVE);
    assert_int_equal(m->quad.id, 2);
    assert_string_equal(m->quad.aspect, "物流");
    assert_null(m->review);
    assert_null(te_result_mismatch(res, 3));
    assert_int_equal(te_result_n_violations(res), 0);
    te_result_free(res);
    te_eval_free(ev);
}

/* Score gold against pred and check S, P, G. */
static void case_of(const char *gold, const char *pred, long s, long p, long g)
{
    te_eval *ev = eval_of(gold, pred, NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), s, p, g);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_duplicates_in_gold(void **state)
{
    (void)state;
    /* One quadruple twice in gold (as id 1375 of the real data). */
    const char *gold = GOLD_HEADER "7,物流,0,2,棒棒哒,2,5,物流,正面\n7,物流,0,2,棒棒哒,2,5,物流,正面\n";
    case_of(gold, "7,物流,棒棒哒,物流,正面\n", 1, 1, 2);                           /* S=1 P=1 G=2 */
    case_of(gold, "7,物流,棒棒哒,物流,正面\n7,物流,棒棒哒,物流,正面\n", 2, 2, 2); /* S=2 P=2 G=2 */
    case_of(gold,
            "7,物流,棒棒哒,物流,正面\n7,物流,棒棒哒,物流,正面\n7,物流,棒棒哒,物流,正面\n", 2, 3,
            2); /* S=2 P=3 G=2 */
}

static void test_duplicates_in_predictions(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n1,_, , ,便宜,3,5,价格,正面\n";
    /* A duplicate prediction is matched once per gold copy: S=1 P=2 G=2. */
    case_of(gold, "1,_,很好,整体,正面\n1,_,很好,整体,正面\n", 1, 2, 2);
    /* Order within an id does not matter: S=2 P=3 G=2. */
    case_of(gold, "1,_,便宜,价格,正面\n1,_,很好,整体,正面\n1,_,很好,整体,正面\n", 2, 3, 2);

    /* Pairs are a multiset too: two gold pairs (1,_,好) with different labels,
     * three predicted pairs (1,_,好): S=2 P=3 G=2. */
    te_eval *ev = eval_of(GOLD_HEADER "1,_, , ,好,0,1,整体,正面\n1,_, , ,好,0,1,功效,正面\n",
                          "1,_,好,整体,负面\n1,_,好,整体,负面\n1,_,好,整体,负面\n", NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 0, 3, 2);
    check_score(te_result_pairs(res), 2, 3, 2);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_underscore_fields(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n1,味道,0,2,_, , ,气味,中性\n";
    /* `_` is compared as a string: it matches `_` only. S=2 P=2 G=2. */
    case_of(gold, "1,_,很好,整体,正面\n1,味道,_,气味,中性\n", 2, 2, 2);
    /* Aspect and opinion swapped, or a term given where `_` is gold: S=0 P=2 G=2. */
    case_of(gold, "1,很好,_,整体,正面\n1,味道,味道,气味,中性\n", 0, 2, 2);
    /* Both terms `_` with labels is a real prediction, not a placeholder: S=0 P=1 G=2. */
    case_of(gold, "1,_,_,整体,正面\n", 0, 1, 2);
}

static void test_exact_strings(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n";
    /* No trimming, no normalisation: S=0 P=1 G=1 each time. */
    case_of(gold, "1,_, 很好,整体,正面\n", 0, 1, 1);
    case_of(gold, "1,_,很好 ,整体,正面\n", 0, 1, 1);
    case_of(gold, "1,_,很好,整体 ,正面\n", 0, 1, 1);
    /* Quoting does not change the value: S=1 P=1 G=1. */
    case_of(gold, "\"1\",\"_\",\"很好\",\"整体\",\"正面\"\n", 1, 1, 1);
}

static void test_matching_within_id(void **state)
{
    (void)state;
    /* The same quadruple under another id does not match: S=0 P=1 G=1. */
    case_of(GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n", "2,_,很好,整体,正面\n", 0, 1, 1);
}

static void test_placeholders(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n";
    /* id 2 has no gold; its placeholder is not a prediction: S=1 P=1 G=1. */
    te_eval *ev = eval_of(gold, "1,_,很好,整体,正面\n2,_,_,_,_\n", NULL);
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 1, 1, 1);
    te_input_summary in = te_result_input(res, TE_INPUT_PREDICTIONS);
    assert_int_equal(in.rows, 2);
    assert_int_equal(in.quadruples, 1);
    assert_int_equal(in.placeholders, 1);
    assert_int_equal(in.ids, 2);
    assert_int_equal(te_result_n_mismatches(res), 0);
    te_result_free(res);
    te_eval_free(ev);

    /* A placeholder for an id that has gold quadruples: P=0, the gold is missed. S=0 P=0 G=1. */
    case_of(gold, "1,_,_,_,_\n", 0, 0, 1);
    /* Partly `_` is not a placeholder: it counts in P. S=0 P=1 G=1. */
    case_of(gold, "1,_,_,_,正面\n", 0, 1, 1);
}

static void test_ids_without_gold(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n3,_, , ,快,0,1,物流,正面\n";
    /* Predictions for id 2, absent from gold, are false positives: S=2 P=3 G=2. */
    case_of(gold, "1,_,很好,整体,正面\n2,_,不错,整体,正面\n3,_,快,物流,正面\n", 2, 3, 2);
    /* Gold ids the submission lacks still count in G: S=1 P=1 G=2. */
    case_of(gold, "1,_,很好,整体,正面\n", 1, 1, 2);
    /* Predictions only for ids gold does not have: S=0 P=2 G=2. */
    case_of(gold, "8,_,a,整体,正面\n9,_,b,整体,正面\n", 0, 2, 2);
}

static void test_empty_predictions(void **state)
{
    (void)state;
    const char *gold = GOLD_HEADER "1,_, , ,很好,0,2,整体,正面\n2,_, , ,快,0,1,物流,正面\n";
    /* Only placeholders: S=0 P=0 G=2, every ratio 0. */
    te_eval *ev = eval_of(gold, "1,_,_,_,_\n2,_,_,_,_\n", NULL);
    te_result *res = score_ok(ev);
    te_score s = te_result_overall(res);
    check_score(s, 0, 0, 2);
    assert_true(s.precision == 0.0 && s.recall == 0.0 && s.f1 == 0.0);
    assert_int_equal(te_result_n_mismatches(res), 2);
    te_result_free(res);
    te_eval_free(ev);

    /* No predictions at all (the API allows it): S=0 P=0 G=2. */
    ev = eval_of(gold, NULL, NULL);
    res = score_ok(ev);
    check_score(te_result_overall(res), 0, 0, 2);
    assert_null(te_result_input(res, TE_INPUT_PREDICTIONS).file);
    te_result_free(res);
    te_eval_free(ev);

    /* Nothing at all: S=P=G=0. */
    ev = eval_of(NULL, NULL, NULL);
    res = score_ok(ev);
    check_score(te_result_overall(res), 0, 0, 0);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_score_make(void **state)
{
    (void)state;
    te_score s = te_score_make(0, 0, 0);
    assert_true(s.precision == 0 && s.recall == 0 && s.f1 == 0);
    s = te_score_make(0, 5, 0);
    assert_true(s.precision == 0 && s.recall == 0 && s.f1 == 0);
    s = te_score_make(3, 4, 6);
    assert_true(s.precision == 0.75 && s.recall == 0.5);
    assert_true(s.f1 > 0.6 - 1e-12 && s.f1 < 0.6 + 1e-12); /* 2*3/(4+6) */
    s = te_score_make(5, 5, 5);
    assert_true(s.f1 == 1.0);
}

/* Quadruples added in memory, as the pocketdec command does after extraction. */
static void test_in_memory(void **state)
{
    (void)state;
    te_eval *ev = te_eval_new(NULL);
    load_ok(ev, TE_INPUT_GOLD, "gold.csv", example_gold);
    te_error err = {TE_OK, ""};
    te_quad q = {1, "_", "很好", "整体", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_OK);
    q = (te_quad){2, "包装", "好看", "包装", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_OK);
    q = (te_quad){3, NULL, NULL, NULL, NULL}; /* NULL reads as `_`: a placeholder */
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_OK);
    q = (te_quad){5, "_", "好", "整体", "正面"}; /* gold added in memory too */
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_GOLD, &q, &err), TE_OK);
    assert_int_equal(te_eval_add_review(ev, 5, "好", &err), TE_OK);

    te_result *res = score_ok(ev);
    /* S=2 P=2 G=4 */
    check_score(te_result_overall(res), 2, 2, 4);
    te_input_summary in = te_result_input(res, TE_INPUT_PREDICTIONS);
    assert_string_equal(in.file, "<memory>");
    assert_int_equal(in.placeholders, 1);
    /* The last miss is the gold row added in memory, "<memory>:1". */
    const te_mismatch *m = te_result_mismatch(res, te_result_n_mismatches(res) - 1);
    assert_int_equal(m->quad.id, 5);
    assert_string_equal(m->file, "<memory>");
    assert_int_equal(m->line, 1);
    assert_string_equal(m->review, "好");
    te_result_free(res);

    /* Bad arguments. */
    q = (te_quad){-1, "_", "好", "整体", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_ERR_ARG);
    assert_string_equal(err.message, "<memory>:4: id -1 is negative");
    q = (te_quad){1, "_", "\xC3\x28", "整体", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_ERR_ARG);
    assert_string_equal(err.message, "<memory>:4: opinion is not valid UTF-8");
    q = (te_quad){1, "_", "好", "整体", "正面"};
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_REVIEWS, &q, &err), TE_ERR_ARG);
    assert_int_equal(te_eval_add_quad(NULL, TE_INPUT_GOLD, &q, &err), TE_ERR_ARG);
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_GOLD, NULL, &err), TE_ERR_ARG);
    assert_int_equal(te_eval_add_review(ev, 5, "again", &err), TE_ERR_ARG);
    assert_string_equal(err.message, "<memory>:2: review id 5 appears twice (first at <memory>:1)");
    assert_int_equal(te_eval_add_review(ev, 6, "\xFF", &err), TE_ERR_ARG);
    assert_int_equal(te_eval_add_review(ev, 6, NULL, &err), TE_ERR_ARG);
    /* Failed calls added nothing. */
    res = score_ok(ev);
    check_score(te_result_overall(res), 2, 2, 4);
    assert_int_equal(te_result_input(res, TE_INPUT_REVIEWS).rows, 1);
    te_result_free(res);
    te_eval_free(ev);
}

/* Reviews added out of order stay findable. */
static void test_reviews_any_order(void **state)
{
    (void)state;
    te_eval *ev = te_eval_new(NULL);
    te_error err;
    static const long ids[] = {5, 2, 9, 1, 7};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(te_eval_add_review(ev, ids[i], "好吃", &err), TE_OK);
    load_ok(ev, TE_INPUT_REVIEWS, "more.csv", "id,Reviews\n4,x\n3,y\n");
    for (size_t i = 0; i < 5; i++) {
        te_quad q = {ids[i], "_", "好", "整体", "正面"};
        assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_OK);
        assert_int_equal(te_eval_add_quad(ev, TE_INPUT_GOLD, &q, &err), TE_OK);
    }
    te_result *res = score_ok(ev);
    check_score(te_result_overall(res), 5, 5, 5);
    te_span_counts sp = te_result_spans(res);
    assert_int_equal(sp.available, 1);
    assert_int_equal(sp.no_review, 0);
    assert_int_equal(sp.opinion_outside, 0);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_unknown_labels(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER "1,_, , ,好,0,1,整体,正面\n",
                          "1,_,好,整体,正面\n1,_,好,外观,正面\n1,_,好,包装盒,好评\n", NULL);
    te_result *res = score_ok(ev);
    /* S=1 P=3 G=1; the extra labels get rows of their own after the set, in byte order. */
    check_score(te_result_overall(res), 1, 3, 1);
    assert_int_equal(te_result_n_labels(res, TE_AXIS_CATEGORY), 15);
    const te_label_score *l = te_result_label(res, TE_AXIS_CATEGORY, 13);
    assert_string_equal(l->label, "包装盒"); /* E5 8C 85 < E5 A4 96 */
    assert_int_equal(l->known, 0);
    check_score(l->score, 0, 1, 0);
    assert_string_equal(te_result_label(res, TE_AXIS_CATEGORY, 14)->label, "外观");
    assert_int_equal(te_result_n_labels(res, TE_AXIS_POLARITY), 4);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "好评")->score, 0, 1, 0);
    assert_null(te_result_find_label(res, TE_AXIS_POLARITY, "nothing"));
    assert_int_equal(te_result_n_violations(res), 3); /* 外观, 包装盒, 好评 */
    te_result_free(res);
    te_eval_free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_duplicates_in_gold),
        cmocka_unit_test(test_duplicates_in_predictions),
        cmocka_unit_test(test_underscore_fields),
        cmocka_unit_test(test_exact_strings),
        cmocka_unit_test(test_matching_within_id),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_ids_without_gold),
        cmocka_unit_test(test_empty_predictions),
        cmocka_unit_test(test_score_make),
        cmocka_unit_test(test_in_memory),
        cmocka_unit_test(test_reviews_any_order),
        cmocka_unit_test(test_unknown_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
