/* te_test.h - helpers shared by the cmocka tests of tianchi-eval. */
#ifndef TE_TEST_H
#define TE_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tianchi_eval.h"

/* Load CSV text of a kind, asserting success. */
static inline void load_ok(te_eval *ev, te_input kind, const char *name, const char *text)
{
    te_error err = {TE_OK, ""};
    te_status st = te_eval_load_buffer(ev, kind, name, text, strlen(text), &err);
    if (st != TE_OK)
        fail_msg("loading %s: %s", name, err.message);
}

/* Load CSV text that must fail with `code`; err gets the message. */
static inline void load_fails(te_eval *ev, te_input kind, const char *name, const char *text,
                              size_t len, te_status code, te_error *err)
{
    te_status st = te_eval_load_buffer(ev, kind, name, text, len, err);
    assert_int_equal(st, code);
    assert_int_equal(err->code, code);
}

/* An evaluator with gold and predictions (and reviews unless NULL). */
static inline te_eval *eval_of(const char *gold, const char *pred, const char *reviews)
{
    te_eval *ev = te_eval_new(NULL);
    assert_non_null(ev);
    if (gold)
        load_ok(ev, TE_INPUT_GOLD, "gold.csv", gold);
    if (pred)
        load_ok(ev, TE_INPUT_PREDICTIONS, "pred.csv", pred);
    if (reviews)
        load_ok(ev, TE_INPUT_REVIEWS, "reviews.csv", reviews);
    return ev;
}

static inline te_result *score_ok(const te_eval *ev)
{
    te_error err = {TE_OK, ""};
    te_result *res = te_eval_score(ev, &err);
    if (!res)
        fail_msg("scoring: %s", err.message);
    return res;
}

/* The HTML page of a result, malloc'ed (te_result_write_html on an in-memory
 * stream). */
static inline char *html_text(const te_result *res)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    te_error err;
    assert_int_equal(te_result_write_html(res, f, &err), TE_OK);
    fclose(f);
    return text;
}

static inline void check_score(te_score s, long matched, long predicted, long gold)
{
    assert_int_equal(s.matched, matched);
    assert_int_equal(s.predicted, predicted);
    assert_int_equal(s.gold, gold);
    double p = predicted ? (double)matched / predicted : 0.0;
    double r = gold ? (double)matched / gold : 0.0;
    double f = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
    assert_true(s.precision == p);
    assert_true(s.recall == r);
    assert_true(s.f1 > f - 1e-12 && s.f1 < f + 1e-12);
}

/* Number of issues of a kind. */
static inline size_t count_issues(const te_result *res, te_issue_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < te_result_n_issues(res); i++)
        n += te_result_issue(res, i)->kind == kind;
    return n;
}

/* The first issue of a kind, or fail. */
static inline const te_issue *issue_of(const te_result *res, te_issue_kind kind)
{
    for (size_t i = 0; i < te_result_n_issues(res); i++)
        if (te_result_issue(res, i)->kind == kind)
            return te_result_issue(res, i);
    fail_msg("no issue of kind %s", te_issue_kind_name(kind));
    return NULL;
}

/* Write text to a new temporary file; path gets its name (unlink it). */
static inline void write_temp(char path[64], const void *data, size_t len)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, 64, "%s/te_test_XXXXXX", dir && strlen(dir) < 40 ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

#define assert_contains(haystack, needle)                                                     \
    do {                                                                                      \
        if (!strstr((haystack), (needle)))                                                    \
            fail_msg("\"%s\" does not contain \"%s\"", (haystack), (needle));                 \
    } while (0)

#endif /* TE_TEST_H */
