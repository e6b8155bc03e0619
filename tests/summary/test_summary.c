/* The summary module (summary/pocketdec_summary.h) against counts,
 * estimates and intervals worked by hand, and merges against one pass. */
#include "pocketdec_summary.h"
#include "pd_internal.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define REC(a, o, c, p) {a, o, c, p, -1, -1, -1, -1}

/* Four labelled reviews of one cell (价格/负面), gold g_i, predicted p_i and
 * correct t_i records each:
 *   review 1: g 2, p 1, t 1     review 2: g 1, p 2, t 1
 *   review 3: g 2, p 0, t 0     review 4: g 0, p 1, t 0
 * G = 5, Pr = 4, TP = 2: P = 0.5, R = 0.4;
 * sum g^2 = 9, sum p^2 = 6, sum g p = 4. */
static pds_calibration *hand_calibration(void)
{
    static const pds_record g1[] = {REC("价格", "贵", "价格", "负面"), REC("_", "太贵", "价格", "负面")};
    static const pds_record p1[] = {REC("价格", "贵", "价格", "负面")};
    static const pds_record g2[] = {REC("_", "不值", "价格", "负面")};
    static const pds_record p2[] = {REC("_", "不值", "价格", "负面"), REC("_", "贵", "价格", "负面")};
    static const pds_record g3[] = {REC("价格", "高", "价格", "负面"), REC("_", "坑", "价格", "负面")};
    static const pds_record p4[] = {REC("_", "小贵", "价格", "负面")};
    pds_calibration *c = pds_calibration_new();
    pds_error err;
    assert_non_null(c);
    assert_int_equal(pds_calibration_add(c, g1, 2, p1, 1, &err), 0);
    assert_int_equal(pds_calibration_add(c, g2, 1, p2, 2, &err), 0);
    assert_int_equal(pds_calibration_add(c, g3, 2, NULL, 0, &err), 0);
    assert_int_equal(pds_calibration_add(c, NULL, 0, p4, 1, &err), 0);
    return c;
}

static json_t *find_cell(json_t *s, const char *category, const char *polarity)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(s, "cells"), i, e) {
        if (strcmp(json_string_value(json_object_get(e, "category")), category) == 0 &&
            strcmp(json_string_value(json_object_get(e, "polarity")), polarity) == 0)
            return e;
    }
    return NULL;
}

static double num(json_t *e, const char *key)
{
    json_t *v = json_object_get(e, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* 8 records found in a corpus: estimate = 8 x G / Pr = 8 x 5 / 4 = 10.
 * The rates' variance of log(G / Pr): sum_i (g_i / G - p_i / Pr)^2 =
 * 9/25 - 2 x 4/20 + 6/16 = 0.335, x n / (n - 1) = 4/3: 0.446667; finding:
 * (1 - P R) / 8 = 0.8 / 8 = 0.1. sd = sqrt(0.546667) = 0.739369;
 * 90%: 10 x exp(-+1.644854 x 0.739369) = [2.96, 33.74]. */
static void test_hand_estimate(void **state)
{
    (void)state;
    pds_calibration *c = hand_calibration();
    pds_params p = pds_default_params();
    p.min_support = 5;
    pds_summary *s = pds_summary_new(&p);
    pds_error err;
    static const pds_record r[] = {REC("价格", "贵", "价格", "负面"), REC("价格", "贵", "价格", "负面"),
                                   REC("_", "不值", "价格", "负面"), REC("价格", "贵", "价格", "负面")};
    /* 3 reviews with records (3 + 1 + 4 = 8), 1 without */
    assert_int_equal(pds_summary_add(s, "1", "价格贵贵", r, 3, &err), 0);
    assert_int_equal(pds_summary_add(s, "2", NULL, r + 3, 1, &err), 0);
    assert_int_equal(pds_summary_add(s, "3", NULL, r, 4, &err), 0);
    assert_int_equal(pds_summary_add(s, "4", "好", NULL, 0, &err), 0);
    json_t *j = pds_summary_json(s, c);
    json_t *e = find_cell(j, "价格", "负面");
    assert_non_null(e);
    assert_int_equal(num(j, "reviews"), 4);
    assert_int_equal(num(e, "records"), 8);
    assert_int_equal(num(e, "reviews"), 3);
    assert_true(fabs(num(e, "share") - 0.75) < 1e-9);
    assert_true(fabs(num(e, "estimate") - 10.0) < 1e-9);
    assert_true(fabs(num(e, "low") - 2.96) < 1e-9);
    assert_true(fabs(num(e, "high") - 33.74) < 1e-9);
    assert_true(fabs(num(e, "support") - 5) < 1e-9);
    assert_true(fabs(num(e, "precision") - 0.5) < 1e-9);
    assert_true(fabs(num(e, "recall") - 0.4) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(e, "rates")), "cell");
    /* top aspects: 价格 6, _ 2 */
    json_t *top = json_object_get(e, "top_aspects");
    assert_int_equal(json_array_size(top), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(top, 0), "value")), "价格");
    assert_int_equal(num(json_array_get(top, 0), "count"), 6);
    /* the first example: review 1, no spans known, its text */
    json_t *ex = json_array_get(json_object_get(e, "examples"), 0);
    assert_string_equal(json_string_value(json_object_get(ex, "id")), "1");
    assert_string_equal(json_string_value(json_object_get(ex, "text")), "价格贵贵");
    /* the polarity's entry has the same rates (one cell) */
    json_t *pol = json_object_get(json_object_get(j, "polarity"), "负面");
    assert_null(json_object_get(pol, "category"));
    assert_true(fabs(num(pol, "estimate") - 10.0) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(pol, "rates")), "polarity");
    json_decref(j);

    /* too little support for the cell (5 < 6): its polarity's rates, said so */
    p.min_support = 6;
    pds_summary *s2 = pds_summary_new(&p);
    assert_int_equal(pds_summary_merge(s2, s, &err), 0);
    j = pds_summary_json(s2, c);
    assert_string_equal(json_string_value(json_object_get(find_cell(j, "价格", "负面"), "rates")), "polarity");
    json_decref(j);
    pds_summary_free(s2);
    pds_summary_free(s);
    pds_calibration_free(c);
}

/* A category too little supported for rates of its own takes its polarity's,
 * plus the spread between that polarity's categories (DerSimonian-Laird).
 * 11 labelled reviews (n / (n - 1) = 1.1); polarity 负面: G 45, Pr 35, TP 21,
 * sums 90, 70, 50; its cells:
 *   A: G 20, Pr 10, sums 40, 20, 20: 0.1 - 0.2 + 0.2 = 0.1, v 0.11, y ln 2
 *   B: G 20, Pr 20, sums 40, 40, 20: 0.1 - 0.1 + 0.1 = 0.1, v 0.11, y 0
 *   C: G 5, Pr 5 (under min_support 20: the polarity's rates)
 * w = 1 / 0.11 each; Q = w (2 (ln 2 / 2)^2) = 2.183877, df 1;
 * tau^2 = (Q - 1) / (2w - 2w^2 / 2w) = 1.183877 / 9.090909 = 0.130227.
 * The polarity's variance: (90/2025 - 100/1575 + 70/1225) x 1.1 = 0.041905.
 * 7 records of C: estimate 7 x 45 / 35 = 9, P 0.6, R 21/45; var = 0.041905
 * + 0.130227 + (1 - 0.28) / 7 = 0.274988, sd 0.524393: [3.80, 21.32].
 * Without the spread (min_support 21: no category has rates of its own, so
 * none to measure it by): var 0.144762: [4.81, 16.83]. A's 5 records on its
 * own rates (P 0.8, R 0.4): 10, var 0.11 + 0.68 / 5: [4.42, 22.61]. */
static void test_fallback_spread(void **state)
{
    (void)state;
    static const char text[] =
        "{\"format\": \"pocketdec-calibration\", \"version\": 1, \"reviews\": 11, \"cells\": ["
        "{\"polarity\": \"负面\", \"gold\": 45, \"predicted\": 35, \"correct\": 21, \"sum_gg\": 90, \"sum_pp\": 70, "
        "\"sum_gp\": 50},"
        "{\"category\": \"A\", \"polarity\": \"负面\", \"gold\": 20, \"predicted\": 10, \"correct\": 8, \"sum_gg\": 40, "
        "\"sum_pp\": 20, \"sum_gp\": 20},"
        "{\"category\": \"B\", \"polarity\": \"负面\", \"gold\": 20, \"predicted\": 20, \"correct\": 12, \"sum_gg\": 40, "
        "\"sum_pp\": 40, \"sum_gp\": 20},"
        "{\"category\": \"C\", \"polarity\": \"负面\", \"gold\": 5, \"predicted\": 5, \"correct\": 1, \"sum_gg\": 5, "
        "\"sum_pp\": 5, \"sum_gp\": 5}]}";
    char path[] = "/tmp/pds-spread-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    pds_error err;
    pds_calibration *c = pds_calibration_load(path, &err);
    unlink(path);
    assert_non_null(c);
    static const pds_record r[] = {REC("_", "差", "C", "负面"), REC("_", "差", "A", "负面")};
    pds_params p = pds_default_params();
    assert_int_equal(p.min_support, 20);
    for (int pass = 0; pass < 2; pass++) {
        p.min_support = pass ? 21 : 20;
        pds_summary *s = pds_summary_new(&p);
        for (int i = 0; i < 7; i++) assert_int_equal(pds_summary_add(s, "1", NULL, r, 1, &err), 0);
        for (int i = 0; i < 5; i++) assert_int_equal(pds_summary_add(s, "2", NULL, r + 1, 1, &err), 0);
        json_t *j = pds_summary_json(s, c);
        json_t *e = find_cell(j, "C", "负面");
        assert_string_equal(json_string_value(json_object_get(e, "rates")), "polarity");
        assert_true(fabs(num(e, "estimate") - 9.0) < 1e-9);
        assert_true(fabs(num(e, "low") - (pass ? 4.81 : 3.80)) < 1e-9);
        assert_true(fabs(num(e, "high") - (pass ? 16.83 : 21.32)) < 1e-9);
        if (!pass) {
            e = find_cell(j, "A", "负面");
            assert_string_equal(json_string_value(json_object_get(e, "rates")), "cell");
            assert_true(fabs(num(e, "estimate") - 10.0) < 1e-9);
            assert_true(fabs(num(e, "low") - 4.42) < 1e-9);
            assert_true(fabs(num(e, "high") - 22.61) < 1e-9);
        }
        json_decref(j);
        pds_summary_free(s);
    }
    pds_calibration_free(c);
}

/* Nothing found: estimate 0, interval [0, N] with (1 - R)^N = 0.05:
 * ln 0.05 / ln 0.6 = 5.86. No rates: the count itself, no interval claimed. */
static void test_none_found(void **state)
{
    (void)state;
    pds_calibration *c = hand_calibration();
    pds_rates r = {.gold = 5, .predicted = 4, .correct = 2, .var_log_ratio = 0.1, .known = true};
    pds_estimate e;
    pds_estimate_count(&r, 0, &e);
    assert_true(e.estimate == 0 && e.low == 0);
    assert_true(fabs(e.high - 5.864491) < 1e-6);
    pds_rates none = {0};
    pds_estimate_count(&none, 7, &e);
    assert_true(e.estimate == 7 && e.precision < 0);
    assert_string_equal(e.rates, "none");
    /* a corpus of two reviews with none of the calibration's records: each
     * cell it knows still has an entry, nothing found, with the interval
     * above (R 0.4: [0, 5.86]); the cell found comes first */
    pds_params p = pds_default_params();
    p.min_support = 5;
    pds_summary *s = pds_summary_new(&p);
    pds_error err;
    static const pds_record other[] = {REC("包装", "好看", "包装", "正面")};
    assert_int_equal(pds_summary_add(s, "1", "包装好看", other, 1, &err), 0);
    assert_int_equal(pds_summary_add(s, "2", "还行", NULL, 0, &err), 0);
    json_t *j = pds_summary_json(s, c);
    assert_int_equal(json_array_size(json_object_get(j, "cells")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "cells"), 0), "category")),
                        "包装");
    json_t *entries[] = {find_cell(j, "价格", "负面"), json_object_get(json_object_get(j, "polarity"), "负面")};
    for (int k = 0; k < 2; k++) {
        assert_non_null(entries[k]);
        assert_int_equal(num(entries[k], "records"), 0);
        assert_int_equal(num(entries[k], "reviews"), 0);
        assert_true(num(entries[k], "estimate") == 0 && num(entries[k], "low") == 0);
        assert_true(fabs(num(entries[k], "high") - 5.86) < 1e-9);
        assert_int_equal(num(entries[k], "support"), 5);
        assert_int_equal(json_array_size(json_object_get(entries[k], "examples")), 0);
        assert_int_equal(json_array_size(json_object_get(entries[k], "top_aspects")), 0);
    }
    assert_string_equal(json_string_value(json_object_get(entries[0], "rates")), "cell");
    json_decref(j);
    /* without a calibration nothing is known to be missing: only the cell found */
    j = pds_summary_json(s, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "cells")), 1);
    assert_null(json_object_get(json_object_get(j, "polarity"), "负面"));
    json_decref(j);
    pds_summary_free(s);
    /* a label the calibration never saw: another schema */
    assert_true(pds_calibration_knows(c, true, "价格"));
    assert_false(pds_calibration_knows(c, true, "Price"));
    assert_false(pds_calibration_knows(c, false, "negative"));
    pds_calibration_free(c);
}

/* Six reviews, review i holding the first i % 4 + 1 records of r: each into
 * every summary of all[n], and into a (reviews 0-2) or b (3-5). */
static void add_six(pds_summary *const *all, size_t n_all, pds_summary *a, pds_summary *b, const char *text,
                    const pds_record *r)
{
    pds_error err;
    for (int i = 0; i < 6; i++) {
        char id[8];
        snprintf(id, sizeof id, "%d", i);
        size_t n = (size_t)(i % 4) + 1;
        for (size_t k = 0; k < n_all; k++) assert_int_equal(pds_summary_add(all[k], id, text, r, n, &err), 0);
        assert_int_equal(pds_summary_add(i < 3 ? a : b, id, text, r, n, &err), 0);
    }
}

/* Partitions merged equal one pass: summaries and calibrations. */
static void test_merge_exact(void **state)
{
    (void)state;
    static const pds_record r[] = {REC("味道", "香", "气味", "正面"), REC("_", "差", "整体", "负面"),
                                   REC("包装", "破", "包装", "负面"), REC("味道", "香", "气味", "正面")};
    pds_params p = pds_default_params();
    p.examples = 2;
    pds_summary *one = pds_summary_new(&p), *a = pds_summary_new(&p), *b = pds_summary_new(&p);
    pds_error err;
    add_six(&one, 1, a, b, "t", r);
    assert_int_equal(pds_summary_merge(a, b, &err), 0);
    pds_calibration *c1 = hand_calibration(), *c2 = hand_calibration(), *c12 = hand_calibration();
    assert_int_equal(pds_calibration_merge(c12, c2, &err), 0);
    json_t *x = pds_summary_json(one, c12), *y = pds_summary_json(a, c12);
    assert_true(json_equal(x, y));
    /* a calibration saved and loaded gives the same estimates */
    json_t *cj = pds_calibration_json(c12, "test");
    char path[] = "/tmp/pds-cal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(json_dump_file(cj, path, 0), 0);
    pds_calibration *loaded = pds_calibration_load(path, &err);
    assert_non_null(loaded);
    json_t *z = pds_summary_json(one, loaded);
    assert_true(json_equal(x, z));
    remove(path);
    json_decref(cj);
    json_decref(x);
    json_decref(y);
    json_decref(z);
    pds_calibration_free(loaded);
    pds_calibration_free(c1);
    pds_calibration_free(c2);
    pds_calibration_free(c12);
    pds_summary_free(one);
    pds_summary_free(a);
    pds_summary_free(b);
}

/* The ids of an entry's "listed" reviews, joined by spaces. */
static void listed_ids(json_t *e, char *buf, size_t cap)
{
    json_t *x;
    size_t i;
    buf[0] = 0;
    assert_true(json_is_array(json_object_get(e, "listed")));
    json_array_foreach(json_object_get(e, "listed"), i, x) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s%s", i ? " " : "", json_string_value(json_object_get(x, "id")));
    }
}

/* Every review of a cell listed, in order (by hand: review i holds the
 * first i % 4 + 1 records of r): 气味/正面 all six, 整体/负面 1 2 3 5,
 * 包装/负面 2 3, 负面 1 2 3 5; capped at 2, the first two; the same after
 * two partitions pass through their states and merge; a state saved
 * without its lists refuses to stand for them. */
static void test_listed(void **state)
{
    (void)state;
    static const pds_record r[] = {REC("味道", "香", "气味", "正面"), REC("_", "差", "整体", "负面"),
                                   {"包装", "破", "包装", "负面", 0, 2, 2, 3}, REC("味道", "香", "气味", "正面")};
    pds_params p = pds_default_params(), capped = p, none = p;
    p.listed = -1;
    capped.listed = 2;
    pds_summary *one = pds_summary_new(&p), *a = pds_summary_new(&p), *b = pds_summary_new(&p);
    pds_summary *two = pds_summary_new(&capped), *plain = pds_summary_new(&none);
    pds_error err;
    pds_summary *const all[3] = {one, two, plain};
    add_six(all, 3, a, b, "包装破了", r);
    json_t *x = pds_summary_json(one, NULL), *y = pds_summary_json(two, NULL);
    char ids[64];
    listed_ids(find_cell(x, "气味", "正面"), ids, sizeof ids);
    assert_string_equal(ids, "0 1 2 3 4 5");
    listed_ids(find_cell(x, "整体", "负面"), ids, sizeof ids);
    assert_string_equal(ids, "1 2 3 5");
    listed_ids(find_cell(x, "包装", "负面"), ids, sizeof ids);
    assert_string_equal(ids, "2 3");
    listed_ids(json_object_get(json_object_get(x, "polarity"), "负面"), ids, sizeof ids);
    assert_string_equal(ids, "1 2 3 5");
    listed_ids(find_cell(y, "整体", "负面"), ids, sizeof ids);
    assert_string_equal(ids, "1 2");
    /* a listed review has the cell's spans: 包装 [0, 2), 破 [2, 3) */
    json_t *marks = json_object_get(json_array_get(json_object_get(find_cell(x, "包装", "负面"), "listed"), 0), "marks");
    assert_int_equal(json_array_size(marks), 2);
    assert_int_equal(num(json_array_get(marks, 1), "start"), 2);
    /* partitions through their states, merged */
    json_t *sa = pds_summary_state(a), *sb = pds_summary_state(b), *sp = pds_summary_state(plain);
    pds_summary *ma = pds_summary_from_state(sa, &p, "a", &err), *mb = pds_summary_from_state(sb, &p, "b", &err);
    assert_non_null(ma);
    assert_non_null(mb);
    assert_int_equal(pds_summary_merge(ma, mb, &err), 0);
    json_t *z = pds_summary_json(ma, NULL);
    assert_true(json_equal(x, z));
    assert_null(pds_summary_from_state(sp, &p, "plain.state", &err));
    assert_int_equal(err.code, PDS_ERR_FORMAT);
    assert_non_null(strstr(err.message, "plain.state: cells["));
    /* without listing, no "listed" key */
    json_t *w = pds_summary_json(plain, NULL);
    assert_null(json_object_get(find_cell(w, "整体", "负面"), "listed"));
    json_decref(w);
    json_decref(x);
    json_decref(y);
    json_decref(z);
    json_decref(sa);
    json_decref(sb);
    json_decref(sp);
    pds_summary_free(ma);
    pds_summary_free(mb);
    pds_summary_free(one);
    pds_summary_free(two);
    pds_summary_free(plain);
    pds_summary_free(a);
    pds_summary_free(b);
}

/* The CSV field rule (pdi_buf_csv_field, the one extract's Tianchi rows use
 * too) by hand, and through the summary's cells table: a category holding a
 * comma and quotes is quoted, its quotes doubled. */
static void test_csv(void **state)
{
    (void)state;
    static const char *const cases[][2] = {{"plain", "plain"}, {"a,b", "\"a,b\""}, {"say \"hi\"", "\"say \"\"hi\"\"\""},
                                           {"two\nlines", "\"two\nlines\""}, {"cr\r", "\"cr\r\""}, {"", ""}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pdi_buf b = {0};
        pdi_buf_csv_field(&b, cases[i][0]);
        assert_false(b.failed);
        assert_string_equal(b.data ? b.data : "", cases[i][1]);
        free(b.data);
    }
    static const pds_record r[] = {REC("_", "差", "a,\"b\"", "负面")};
    pds_summary *s = pds_summary_new(NULL);
    pds_error err;
    assert_int_equal(pds_summary_add(s, "1", NULL, r, 1, &err), 0);
    json_t *j = pds_summary_json(s, NULL);
    char *csv = pds_summary_csv(j, true);
    assert_non_null(csv);
    assert_non_null(strstr(csv, "\n\"a,\"\"b\"\"\",负面,1,1,1,1,"));
    free(csv);
    json_decref(j);
    pds_summary_free(s);
}

/* Two periods: January 4 reviews, 1 with a complaint about 价格 (share
 * 0.25) and 3 with praise of 整体 (0.75); February 2 reviews, both with a
 * complaint about 价格 (1.0) and no praise (0). By |change|, ties in the
 * order of the later period's polarities, its cells, then what only the
 * earlier one has: 负面 +0.75, 价格/负面 +0.75, 正面 -0.75. */
static void test_changes(void **state)
{
    (void)state;
    static const pds_record neg = REC("价格", "贵", "价格", "负面"), pos = REC("_", "好", "整体", "正面");
    pds_summary *jan = pds_summary_new(NULL), *feb = pds_summary_new(NULL);
    pds_error err;
    assert_int_equal(pds_summary_add(jan, "1", NULL, &neg, 1, &err), 0);
    for (int i = 0; i < 3; i++) assert_int_equal(pds_summary_add(jan, "2", NULL, &pos, 1, &err), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pds_summary_add(feb, "3", NULL, &neg, 1, &err), 0);
    json_t *a = pds_summary_json(jan, NULL), *b = pds_summary_json(feb, NULL);
    json_t *c = pds_summary_changes(a, b, 3);
    assert_int_equal(json_array_size(c), 3);
    json_t *first = json_array_get(c, 0), *third = json_array_get(c, 2);
    /* 负面 (the polarity entry of February, listed first), +0.75: 0.25 -> 1 */
    assert_null(json_object_get(first, "category"));
    assert_string_equal(json_string_value(json_object_get(first, "polarity")), "负面");
    assert_true(fabs(json_real_value(json_object_get(first, "before")) - 0.25) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(first, "after")) - 1.0) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(first, "change")) - 0.75) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "category")), "价格");
    /* then 正面, in January only: 0.75 -> 0 */
    assert_string_equal(json_string_value(json_object_get(third, "polarity")), "正面");
    assert_true(fabs(json_real_value(json_object_get(third, "change")) + 0.75) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(third, "estimate_before")) - 3) < 1e-9);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    pds_summary_free(jan);
    pds_summary_free(feb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_estimate),
        cmocka_unit_test(test_fallback_spread),
        cmocka_unit_test(test_none_found),
        cmocka_unit_test(test_merge_exact),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_listed),
        cmocka_unit_test(test_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
