/* test_compare.c - two runs compared on hand-worked cases: the F1 of each,
 * every class of the error taxonomy with its counts, and the paired bootstrap
 * where its interval is known (identical runs, a run better on every review). */
#include "te_test.h"

#include "te_hand_case.h"

#define GOLD_HEADER HAND_GOLD_HEADER

static const char gold[] = HAND_GOLD;
static const char reviews[] = HAND_REVIEWS;

/* Run A: S = 2, P = 6, G = 6, F1 = 2S/(P+G) = 4/12 = 1/3. */
static const char run_a[] =
    "1,包装,很好,包装,正面\n"     /* match */
    "1,价格,便宜,价格,负面\n"     /* wrong polarity (and its gold, line 3) */
    "2,物流,很快,物流,正面\n"     /* match */
    "2,味道,好闻,整体,正面\n"     /* wrong category (and its gold, line 5) */
    "3,颜色,细腻,整体,正面\n"     /* wrong link: both terms in gold, never together */
    "3,质地,好看,使用体验,正面\n"; /* wrong link; gold lines 6 and 7 too */

/* Run B: S = 4, P = 7, G = 6, F1 = 8/13. */
static const char run_b[] =
    "1,包装,很好,包装,正面\n"   /* match */
    "1,价格,便宜,价格,正面\n"   /* match */
    "1,价格,便宜,价格,正面\n"   /* repeated: gold has it once */
    "2,物流,很,物流,正面\n"     /* span boundary off: 很 inside 很快 (and gold line 4) */
    "2,_,好闻,气味,正面\n"      /* extra span: no gold aspect is _ */
    "3,颜色,好看,整体,正面\n"   /* match */
    "3,质地,细腻,使用体验,正面\n"; /* match; gold line 5 (味道) is a missed span */

static te_eval *run_of(const char *pred)
{
    return eval_of(gold, pred, reviews);
}

static te_compare *compare_ok(const te_eval *a, const te_eval *b, unsigned long n,
                              unsigned long long seed)
{
    te_error err = {TE_OK, ""};
    te_compare_params params = {n, seed};
    te_compare *cmp = te_compare_new(a, b, &params, &err);
    if (!cmp)
        fail_msg("comparing: %s", err.message);
    return cmp;
}

/* Two runs loaded and compared; pair_free() frees the three. */
typedef struct pair {
    te_eval *a, *b;
    te_compare *cmp;
} pair;

static pair pair_of(const char *pred_a, const char *pred_b, unsigned long n, unsigned long long seed)
{
    pair p = {run_of(pred_a), run_of(pred_b), NULL};
    p.cmp = compare_ok(p.a, p.b, n, seed);
    return p;
}

static void pair_free(pair *p)
{
    te_compare_free(p->cmp);
    te_eval_free(p->a);
    te_eval_free(p->b);
}

static void check_f1(double got, double want)
{
    assert_true(got > want - 1e-12 && got < want + 1e-12);
}

static void test_f1_of_each_run(void **state)
{
    (void)state;
    pair p = pair_of(run_a, run_b, 200, 7);
    const te_compare *cmp = p.cmp;
    check_score(te_result_overall(te_compare_result(cmp, 0)), 2, 6, 6);
    check_score(te_result_overall(te_compare_result(cmp, 1)), 4, 7, 6);
    check_f1(te_result_overall(te_compare_result(cmp, 0)).f1, 1.0 / 3);
    check_f1(te_result_overall(te_compare_result(cmp, 1)).f1, 8.0 / 13);
    te_interval iv = te_compare_interval(cmp);
    check_f1(iv.diff, 8.0 / 13 - 1.0 / 3); /* 11/39 */
    assert_int_equal(iv.resamples, 200);
    assert_int_equal(iv.reviews, 3);
    assert_true(iv.low <= iv.high);
    assert_null(te_compare_result(cmp, 2));
    pair_free(&p);
}

/* Counts of a result by class: gold side then prediction side. */
static void check_class(const te_result *res, te_error_class c, long gold_side, long pred_side)
{
    if (te_result_class_count(res, c, TE_MISS) != gold_side ||
        te_result_class_count(res, c, TE_FALSE_POSITIVE) != pred_side)
        fail_msg("%s: %ld gold, %ld predicted; expected %ld, %ld", te_error_class_name(c),
                 te_result_class_count(res, c, TE_MISS),
                 te_result_class_count(res, c, TE_FALSE_POSITIVE), gold_side, pred_side);
}

/* Every mismatch has one class, and the classes add up to G - S and P - S. */
static void check_totals(const te_result *res)
{
    te_score s = te_result_overall(res);
    long sides[2] = {0, 0};
    for (int c = 0; c < TE_N_CLASSES; c++)
        for (int k = 0; k < 2; k++)
            sides[k] += te_result_class_count(res, (te_error_class)c, (te_mismatch_kind)k);
    assert_int_equal(sides[0], s.gold - s.matched);
    assert_int_equal(sides[1], s.predicted - s.matched);
    for (size_t i = 0; i < te_result_n_mismatches(res); i++)
        assert_true(te_result_mismatch_class(res, i) < TE_N_CLASSES);
    assert_int_equal(te_result_mismatch_class(res, te_result_n_mismatches(res)), TE_N_CLASSES);
}

static void test_taxonomy(void **state)
{
    (void)state;
    te_eval *a = run_of(run_a), *b = run_of(run_b);
    te_result *ra = score_ok(a), *rb = score_ok(b);
    check_class(ra, TE_CLASS_MISSED_SPAN, 0, 0);
    check_class(ra, TE_CLASS_EXTRA_SPAN, 0, 0);
    check_class(ra, TE_CLASS_BOUNDARY, 0, 0);
    check_class(ra, TE_CLASS_LINK, 2, 2);
    check_class(ra, TE_CLASS_CATEGORY, 1, 1);
    check_class(ra, TE_CLASS_POLARITY, 1, 1);
    check_class(ra, TE_CLASS_REPEATED, 0, 0);
    check_totals(ra);
    check_class(rb, TE_CLASS_MISSED_SPAN, 1, 0);
    check_class(rb, TE_CLASS_EXTRA_SPAN, 0, 1);
    check_class(rb, TE_CLASS_BOUNDARY, 1, 1);
    check_class(rb, TE_CLASS_LINK, 0, 0);
    check_class(rb, TE_CLASS_CATEGORY, 0, 0);
    check_class(rb, TE_CLASS_POLARITY, 0, 0);
    check_class(rb, TE_CLASS_REPEATED, 0, 1);
    check_totals(rb);
    /* B's mismatches in order: id 1 fp (repeated); id 2 misses, gold lines 4
     * (boundary) and 5 (missed span), then fps lines 4 (boundary), 5 (extra). */
    static const te_error_class want[] = {TE_CLASS_REPEATED, TE_CLASS_BOUNDARY,
                                          TE_CLASS_MISSED_SPAN, TE_CLASS_BOUNDARY,
                                          TE_CLASS_EXTRA_SPAN};
    assert_int_equal(te_result_n_mismatches(rb), 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(te_result_mismatch_class(rb, i), want[i]);
    assert_string_equal(te_error_class_name(TE_CLASS_BOUNDARY), "span boundary off");
    te_result_free(ra);
    te_result_free(rb);
    te_eval_free(a);
    te_eval_free(b);
}

/* A gold quadruple listed twice and predicted once: the gold copy left is
 * "repeated"; a prediction whose term touches gold only by offsets (装很 at
 * 1..3 against 很好 at 2..4, neither inside the other) is a boundary error
 * with spans, an extra span without. */
static void test_taxonomy_repeated_gold_and_offsets(void **state)
{
    (void)state;
    te_eval *ev = eval_of(GOLD_HEADER "1,包装,0,2,很好,2,4,包装,正面\n1,包装,0,2,很好,2,4,包装,正面\n",
                          "1,包装,很好,包装,正面\n1,包装,装很,包装,正面\n", NULL);
    te_result *res = score_ok(ev);
    check_class(res, TE_CLASS_REPEATED, 1, 0);
    check_class(res, TE_CLASS_EXTRA_SPAN, 0, 1);
    check_totals(res);
    te_result_free(res);
    te_eval_free(ev);

    static const char jsonl[] =
        "{\"id\": 1, \"records\": [{\"aspect\": \"包装\", \"opinion\": \"装很\", \"category\": \"包装\","
        " \"polarity\": \"正面\", \"spans\": {\"aspect\": [0, 2], \"opinion\": [1, 3]}}]}\n";
    ev = eval_of(GOLD_HEADER "1,包装,0,2,很好,2,4,包装,正面\n", jsonl, NULL);
    res = score_ok(ev);
    check_class(res, TE_CLASS_BOUNDARY, 1, 1);
    check_totals(res);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_bootstrap_identical_runs(void **state)
{
    (void)state;
    pair p = pair_of(run_a, run_a, 1000, 1);
    te_interval iv = te_compare_interval(p.cmp);
    assert_true(iv.diff == 0.0 && iv.low == 0.0 && iv.high == 0.0);
    pair_free(&p);
}

/* B (gold itself) matches 2 of 2 predictions on each review, A 1, 1 and 0
 * with as many predictions: on any resample S_B > S_A with P and G the same,
 * so every resampled difference, and the interval, is above 0. */
static void test_bootstrap_dominating_run(void **state)
{
    (void)state;
    static const char run_gold[] =
        "1,包装,很好,包装,正面\n1,价格,便宜,价格,正面\n2,物流,很快,物流,正面\n"
        "2,味道,好闻,气味,正面\n3,颜色,好看,整体,正面\n3,质地,细腻,使用体验,正面\n";
    pair p = pair_of(run_a, run_gold, 1000, 3);
    te_interval iv = te_compare_interval(p.cmp);
    check_f1(iv.diff, 1.0 - 1.0 / 3);
    assert_true(iv.low > 0.0);
    assert_true(iv.high >= iv.low && iv.high <= 1.0);
    /* The same seed gives the same interval; another seed may not. */
    te_compare *again = compare_ok(p.a, p.b, 1000, 3);
    assert_true(te_compare_interval(again).low == iv.low);
    assert_true(te_compare_interval(again).high == iv.high);
    te_compare_free(again);
    pair_free(&p);
}

static void test_compare_refusals(void **state)
{
    (void)state;
    te_eval *a = run_of(run_a);
    te_eval *b = eval_of(gold, "1,包装,很好,包装,正面\n3,颜色,好看,整体,正面\n", NULL);
    te_error err = {TE_OK, ""};
    assert_null(te_compare_new(a, b, NULL, &err));
    assert_int_equal(err.code, TE_ERR_FORMAT);
    assert_string_equal(err.message, "pred.csv: id 2 has no row here but has one in pred.csv:3; "
                                     "the runs compared must cover the same reviews");
    te_eval *c = eval_of(GOLD_HEADER "1,包装,0,2,很好,2,4,包装,正面\n", run_a, NULL);
    assert_null(te_compare_new(a, c, NULL, &err));
    assert_int_equal(err.code, TE_ERR_ARG);
    assert_contains(err.message, "different gold");
    te_eval_free(a);
    te_eval_free(b);
    te_eval_free(c);
}

static void test_compare_reports(void **state)
{
    (void)state;
    pair p = pair_of(run_a, run_b, 100, 0);
    const te_compare *cmp = p.cmp;
    te_error err = {TE_OK, ""};
    char *json = te_compare_json(cmp, 2, &err);
    assert_non_null(json);
    assert_contains(json, "\"class\": \"wrong link\"");
    assert_contains(json, "\"resamples\": 100");
    te_free(json);
    char path[64];
    write_temp(path, "", 0);
    FILE *out = fopen(path, "w+");
    assert_non_null(out);
    assert_int_equal(te_compare_print_table(cmp, out, 1, &err), TE_OK);
    rewind(out);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    unlink(path);
    assert_contains(text, "F1(B) - F1(A) = +0.2821");
    assert_contains(text, "  wrong link               2       2       0       0\n");
    assert_contains(text, "  unmatched                4       4       2       3\n");
    pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f1_of_each_run),
        cmocka_unit_test(test_taxonomy),
        cmocka_unit_test(test_taxonomy_repeated_gold_and_offsets),
        cmocka_unit_test(test_bootstrap_identical_runs),
        cmocka_unit_test(test_bootstrap_dominating_run),
        cmocka_unit_test(test_compare_refusals),
        cmocka_unit_test(test_compare_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
