/* test_train.c - the real training labels scored against submissions built
 * from them: unchanged (F1 = 1), with rows dropped, with rows corrupted, and
 * around the one duplicated gold quadruple. The submissions are written by
 * this test with its own line splitter (the labels hold no quotes), not by
 * the library's CSV reader. Expected figures are worked out in the comments. */
#include "te_test.h"

#ifndef TE_TEST_DATA
#error "TE_TEST_DATA must name tests/tianchi/data"
#endif

#define LABELS TE_TEST_DATA "/train_labels.csv"
#define REVIEWS TE_TEST_DATA "/train_reviews.csv"

/* Figures of train_labels.csv, counted independently (Python csv module). */
#define N_GOLD 5808
#define N_IDS 2829
#define N_OVERALL 2493  /* category 整体 */
#define N_POSITIVE 5193 /* polarity 正面 */
#define N_NEGATIVE 481  /* polarity 负面 */

typedef struct label_row {
    char *f[9]; /* id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities */
    long id;
} label_row;

typedef struct labels {
    label_row *rows;
    size_t n;
    char **lines;
} labels;

static labels read_labels(void)
{
    FILE *f = fopen(LABELS, "r");
    assert_non_null(f);
    labels l = {calloc(N_GOLD + 1, sizeof(label_row)), 0, calloc(N_GOLD + 1, sizeof(char *))};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int header = 1;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (header) {
            header = 0;
            continue;
        }
        assert_true(l.n < N_GOLD);
        line[strcspn(line, "\r\n")] = '\0';
        assert_null(strchr(line, '"'));
        char *copy = strdup(line);
        l.lines[l.n] = copy;
        label_row *r = &l.rows[l.n];
        for (int i = 0; i < 9; i++) {
            r->f[i] = copy;
            char *comma = strchr(copy, ',');
            if (i < 8) {
                assert_non_null(comma);
                *comma = '\0';
                copy = comma + 1;
            } else {
                assert_null(comma);
            }
        }
        r->id = strtol(r->f[0], NULL, 10);
        assert_true(l.n == 0 || r->id >= l.rows[l.n - 1].id); /* grouped by id */
        l.n++;
    }
    free(line);
    fclose(f);
    assert_int_equal(l.n, N_GOLD);
    return l;
}

static void free_labels(labels *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->lines[i]);
    free(l->lines);
    free(l->rows);
}

static int same_quad(const label_row *a, const label_row *b, const char *b_polarity)
{
    return a->id == b->id && !strcmp(a->f[1], b->f[1]) && !strcmp(a->f[4], b->f[4]) &&
           !strcmp(a->f[7], b->f[7]) && !strcmp(a->f[8], b_polarity);
}

/* Rows [*first, *end) of the id of row i. */
static void group_of(const labels *l, size_t i, size_t *first, size_t *end)
{
    *first = i;
    while (*first > 0 && l->rows[*first - 1].id == l->rows[i].id)
        (*first)--;
    *end = i;
    while (*end < l->n && l->rows[*end].id == l->rows[i].id)
        (*end)++;
}

/* Whether some other row of the same id is (a, o, c, polarity). */
static int in_group(const labels *l, size_t i, const char *polarity)
{
    size_t first, end;
    group_of(l, i, &first, &end);
    for (size_t k = first; k < end; k++)
        if (k != i && same_quad(&l->rows[k], &l->rows[i], polarity))
            return 1;
    return 0;
}

/* Per row: 0 keep, 1 drop, 2 turn 正面 into 负面, 3 write twice. */
static void write_submission(char path[64], const labels *l, const unsigned char *what)
{
    size_t cap = l->n * 128 + 1, used = 0;
    char *text = malloc(cap);
    for (size_t i = 0; i < l->n; i++) {
        const label_row *r = &l->rows[i];
        if (what[i] == 1)
            continue;
        for (int times = what[i] == 3 ? 2 : 1; times > 0; times--)
            used += (size_t)snprintf(text + used, cap - used, "%s,%s,%s,%s,%s\n", r->f[0], r->f[1],
                                     r->f[4], r->f[7], what[i] == 2 ? "负面" : r->f[8]);
        assert_true(used < cap);
    }
    write_temp(path, text, used);
    free(text);
}

/* Load the gold, reviews and the submission at path, and score. */
static te_result *score_files(te_eval **ev, const char *path)
{
    *ev = te_eval_new(NULL);
    te_error err;
    if (te_eval_load_file(*ev, TE_INPUT_GOLD, LABELS, &err) != TE_OK ||
        te_eval_load_file(*ev, TE_INPUT_REVIEWS, REVIEWS, &err) != TE_OK ||
        te_eval_load_file(*ev, TE_INPUT_PREDICTIONS, path, &err) != TE_OK)
        fail_msg("%s", err.message);
    return score_ok(*ev);
}

static void test_self(void **state)
{
    (void)state;
    labels l = read_labels();
    unsigned char *what = calloc(l.n, 1);
    char path[64];
    write_submission(path, &l, what);
    te_eval *ev;
    te_result *res = score_files(&ev, path);
    te_score s = te_result_overall(res);
    check_score(s, N_GOLD, N_GOLD, N_GOLD);
    assert_true(s.precision == 1.0 && s.recall == 1.0 && s.f1 == 1.0);
    assert_true(te_result_pairs(res).f1 == 1.0);
    for (int axis = 0; axis < 2; axis++) {
        assert_int_equal(te_result_n_labels(res, (te_axis)axis), axis == 0 ? 13 : 3);
        for (size_t i = 0; i < te_result_n_labels(res, (te_axis)axis); i++) {
            const te_label_score *ls = te_result_label(res, (te_axis)axis, i);
            assert_true(ls->score.gold > 0);
            assert_true(ls->score.f1 == 1.0);
        }
    }
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "整体")->score, N_OVERALL, N_OVERALL,
                N_OVERALL);
    assert_int_equal(te_result_input(res, TE_INPUT_GOLD).ids, N_IDS);
    assert_int_equal(te_result_input(res, TE_INPUT_PREDICTIONS).ids, N_IDS);
    assert_int_equal(te_result_input(res, TE_INPUT_REVIEWS).rows, N_IDS);
    assert_int_equal(te_result_n_mismatches(res), 0);
    /* Clean: no rule broken, gold offsets agree with the reviews. */
    assert_int_equal(te_result_n_issues(res), 0);
    te_span_counts sp = te_result_spans(res);
    assert_int_equal(sp.either_outside, 0);
    assert_int_equal(sp.no_review, 0);
    te_result_free(res);
    te_eval_free(ev);
    unlink(path);
    free(what);
    free_labels(&l);
}

/* Drop one row of each of the first ten ids that have several rows, choosing
 * a quadruple that appears once in its id: S = P = G - 10 = 5798, G = 5808;
 * precision 1, recall 5798/5808, F1 = 2*5798/(5798+5808) = 11596/11606. */
static void test_drop_ten(void **state)
{
    (void)state;
    labels l = read_labels();
    unsigned char *what = calloc(l.n, 1);
    long dropped[10];
    size_t n_dropped = 0;
    for (size_t i = 0; i < l.n && n_dropped < 10; i++) {
        size_t first, end;
        group_of(&l, i, &first, &end);
        if (end - first >= 2 && !in_group(&l, i, l.rows[i].f[8]) &&
            (n_dropped == 0 || dropped[n_dropped - 1] != l.rows[i].id)) {
            what[i] = 1;
            dropped[n_dropped++] = l.rows[i].id;
        }
    }
    assert_int_equal(n_dropped, 10);
    char path[64];
    write_submission(path, &l, what);
    te_eval *ev;
    te_result *res = score_files(&ev, path);
    te_score s = te_result_overall(res);
    check_score(s, 5798, 5798, 5808);
    assert_true(s.precision == 1.0);
    assert_true(s.f1 > 11596.0 / 11606 - 1e-12 && s.f1 < 11596.0 / 11606 + 1e-12);
    /* The ten misses, one per dropped id, nothing else. */
    assert_int_equal(te_result_n_mismatches(res), 10);
    for (size_t i = 0; i < 10; i++) {
        const te_mismatch *m = te_result_mismatch(res, i);
        assert_int_equal(m->kind, TE_MISS);
        assert_int_equal(m->quad.id, dropped[i]);
        assert_non_null(m->review);
    }
    assert_int_equal(te_result_n_issues(res), 0);
    te_result_free(res);
    te_eval_free(ev);
    unlink(path);
    free(what);
    free_labels(&l);
}

/* Turn 正面 into 负面 on one 整体 row of each of the first ten ids that have
 * one whose quadruple is unique and whose corrupted form is not gold:
 * S = 5798, P = G = 5808, precision = recall = F1 = 5798/5808.
 * 整体: S = 2493 - 10, P = G = 2493. 正面: S = P = 5193 - 10, G = 5193.
 * 负面: S = G = 481, P = 491. Pairs ignore labels: S = P = G = 5808. */
static void test_corrupt_ten(void **state)
{
    (void)state;
    labels l = read_labels();
    size_t overall = 0, positive = 0, negative = 0;
    for (size_t i = 0; i < l.n; i++) {
        overall += !strcmp(l.rows[i].f[7], "整体");
        positive += !strcmp(l.rows[i].f[8], "正面");
        negative += !strcmp(l.rows[i].f[8], "负面");
    }
    assert_int_equal(overall, N_OVERALL);
    assert_int_equal(positive, N_POSITIVE);
    assert_int_equal(negative, N_NEGATIVE);

    unsigned char *what = calloc(l.n, 1);
    size_t n = 0;
    long last = -1;
    for (size_t i = 0; i < l.n && n < 10; i++) {
        const label_row *r = &l.rows[i];
        if (r->id != last && !strcmp(r->f[7], "整体") && !strcmp(r->f[8], "正面") &&
            !in_group(&l, i, "正面") && !in_group(&l, i, "负面")) {
            what[i] = 2;
            last = r->id;
            n++;
        }
    }
    assert_int_equal(n, 10);
    char path[64];
    write_submission(path, &l, what);
    te_eval *ev;
    te_result *res = score_files(&ev, path);
    te_score s = te_result_overall(res);
    check_score(s, 5798, 5808, 5808);
    assert_true(s.f1 > 5798.0 / 5808 - 1e-12 && s.f1 < 5798.0 / 5808 + 1e-12);
    check_score(te_result_pairs(res), 5808, 5808, 5808);
    check_score(te_result_find_label(res, TE_AXIS_CATEGORY, "整体")->score, N_OVERALL - 10,
                N_OVERALL, N_OVERALL);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "正面")->score, N_POSITIVE - 10,
                N_POSITIVE - 10, N_POSITIVE);
    check_score(te_result_find_label(res, TE_AXIS_POLARITY, "负面")->score, N_NEGATIVE,
                N_NEGATIVE + 10, N_NEGATIVE);
    assert_true(te_result_find_label(res, TE_AXIS_CATEGORY, "物流")->score.f1 == 1.0);
    assert_int_equal(te_result_n_mismatches(res), 20); /* a miss and a false positive each */
    te_result_free(res);
    te_eval_free(ev);
    unlink(path);
    free(what);
    free_labels(&l);
}

/* Id 1375 holds (物流, 棒棒哒, 物流, 正面) twice in gold. Listing it once:
 * S = P = 5807, G = 5808. Three times: S = 5808, P = 5809, G = 5808. */
static void test_gold_duplicate(void **state)
{
    (void)state;
    labels l = read_labels();
    unsigned char *what = calloc(l.n, 1);
    size_t dup = l.n;
    for (size_t i = 0; i < l.n && dup == l.n; i++)
        if (in_group(&l, i, l.rows[i].f[8]))
            dup = i;
    assert_true(dup < l.n);
    assert_int_equal(l.rows[dup].id, 1375);
    assert_string_equal(l.rows[dup].f[4], "棒棒哒");

    what[dup] = 1;
    char path[64];
    write_submission(path, &l, what);
    te_eval *ev;
    te_result *res = score_files(&ev, path);
    check_score(te_result_overall(res), 5807, 5807, 5808);
    te_result_free(res);
    te_eval_free(ev);
    unlink(path);

    what[dup] = 3;
    write_submission(path, &l, what);
    res = score_files(&ev, path);
    check_score(te_result_overall(res), 5808, 5809, 5808);
    /* Predictions added in memory on top: one more copy is one more false positive. */
    te_quad q = {1375, "物流", "棒棒哒", "物流", "正面"};
    te_error err;
    assert_int_equal(te_eval_add_quad(ev, TE_INPUT_PREDICTIONS, &q, &err), TE_OK);
    te_result *res2 = score_ok(ev);
    check_score(te_result_overall(res2), 5808, 5810, 5808);
    te_result_free(res2);
    te_result_free(res);
    te_eval_free(ev);
    unlink(path);
    free(what);
    free_labels(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_drop_ten),
        cmocka_unit_test(test_corrupt_ten),
        cmocka_unit_test(test_gold_duplicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
