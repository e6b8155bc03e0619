/* pd_summarize (summary/pocketdec_summarize.h) through the shared library,
 * as a C program calls it: hand-counted summaries of small files, groups,
 * a saved state merged back, its notes, and bad input named by file and line. */
#include "pocketdec.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[] = "/tmp/pd_summarize_XXXXXX";

/* dir/name holding text; the path in a static buffer of 4 (round robin). */
static const char *file(const char *name, const char *text)
{
    static char paths[4][512];
    static int k;
    char *p = paths[k++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    if (text) {
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
    return p;
}

#define NEG "{\"aspect\":\"_\",\"opinion\":\"差\",\"category\":\"整体\",\"polarity\":\"负面\"}"
#define POS "{\"aspect\":\"_\",\"opinion\":\"快\",\"category\":\"物流\",\"polarity\":\"正面\"}"
/* 3 reviews: 负面 in 2 of them (3 records), 正面 in 1; two months. */
static const char *RECORDS = "{\"id\":1,\"date\":\"2026-01-05\",\"records\":[" NEG "," NEG "]}\n"
                             "{\"id\":2,\"date\":\"2026-01-20\",\"records\":[" POS "]}\n"
                             "{\"id\":3,\"date\":\"2026-02-01\",\"records\":[" NEG "]}\n";

static json_t *summarize(const pd_summarize_params *p)
{
    pd_error err;
    char *text = pd_summarize(p, &err);
    if (!text) fail_msg("%s", err.message);
    json_t *j = json_loads(text, 0, NULL);
    pd_free(text);
    assert_non_null(j);
    return j;
}

static long entry(const json_t *j, const char *polarity, const char *key)
{
    return (long)json_integer_value(json_object_get(json_object_get(json_object_get(j, "polarity"), polarity), key));
}

static void test_counts_and_groups(void **state)
{
    (void)state;
    pd_summarize_params p = pd_summarize_default_params();
    p.records = file("records.jsonl", RECORDS);
    json_t *j = summarize(&p);
    assert_int_equal(json_integer_value(json_object_get(j, "reviews")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "records")), 4);
    assert_int_equal(entry(j, "负面", "records"), 3);
    assert_int_equal(entry(j, "负面", "reviews"), 2);
    assert_int_equal(entry(j, "正面", "reviews"), 1);
    /* no rates: the estimate is the count */
    assert_true(json_real_value(json_object_get(json_object_get(json_object_get(j, "polarity"), "负面"), "estimate")) == 3.0);
    assert_null(json_object_get(j, "groups"));
    json_decref(j);

    p.by = "date:month";
    j = summarize(&p);
    json_t *g = json_object_get(j, "groups");
    assert_int_equal(json_array_size(g), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(g, 0), "group")), "2026-01");
    assert_int_equal(entry(json_array_get(g, 0), "负面", "records"), 2);
    assert_int_equal(entry(json_array_get(g, 1), "负面", "records"), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "by"), "period")), "month");
    json_decref(j);
}

static void test_state_merged(void **state)
{
    (void)state;
    pd_summarize_params p = pd_summarize_default_params();
    p.records = file("records.jsonl", RECORDS);
    json_t *whole = summarize(&p);
    p.records = file("a.jsonl", "{\"id\":1,\"records\":[" NEG "," NEG "]}\n{\"id\":2,\"records\":[" POS "]}\n");
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", file("a.state", NULL));
    p.save_state = a;
    json_decref(summarize(&p));
    p.records = file("b.jsonl", "{\"id\":3,\"records\":[" NEG "]}\n");
    snprintf(b, sizeof b, "%s", file("b.state", NULL));
    p.save_state = b;
    json_decref(summarize(&p));
    const char *states[2] = {a, b};
    p = pd_summarize_default_params();
    p.merge = states;
    p.n_merge = 2;
    json_t *merged = summarize(&p);
    assert_true(json_equal(whole, merged));
    json_decref(whole);
    json_decref(merged);
}

typedef struct notes {
    int n;
    pd_summarize_note kind[4];
    char text[4][1024];
} notes;

static void note(void *ctx, pd_summarize_note kind, const char *message)
{
    notes *n = ctx;
    if (n->n < 4) {
        n->kind[n->n] = kind;
        snprintf(n->text[n->n++], 1024, "%s", message);
    }
}

static void test_reviews_and_notes(void **state)
{
    (void)state;
    notes n = {0};
    char reviews[512], want[1100];
    pd_summarize_params p = pd_summarize_default_params();
    snprintf(reviews, sizeof reviews, "%s", file("reviews.csv", "id,text\n1,很差\n2,不错\n,坏\n3,差\n4,一般\n"));
    p.reviews = reviews;
    p.records = file("r.jsonl", "{\"id\":1,\"records\":[" NEG "]}\n{\"id\":3,\"records\":[" NEG "]}\n");
    p.note = note;
    p.note_ctx = &n;
    json_t *j = summarize(&p);
    assert_int_equal(json_integer_value(json_object_get(j, "reviews")), 4); /* 2 and 4 with none */
    assert_int_equal(entry(j, "负面", "reviews"), 2);
    json_decref(j);
    assert_int_equal(n.n, 2);
    assert_int_equal(n.kind[0], PD_SUMMARIZE_NOT_COUNTED);
    snprintf(want, sizeof want, "%s:4: ", reviews);
    assert_memory_equal(n.text[0], want, strlen(want));
    assert_non_null(strstr(n.text[0], "; not counted"));
    assert_int_equal(n.kind[1], PD_SUMMARIZE_UNMATCHED);
    snprintf(want, sizeof want, "2 reviews of %s have no line in %s: counted with no records", reviews, p.records);
    assert_string_equal(n.text[1], want);
}

static void test_errors(void **state)
{
    (void)state;
    pd_error err;
    char want[1100];
    pd_summarize_params p = pd_summarize_default_params();
    assert_null(pd_summarize(NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_summarize(&p, &err)); /* no source */
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "one of them"));
    p.n_merge = 1; /* and no paths */
    assert_null(pd_summarize(&p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_string_equal(err.message, "merge[0] is NULL");
    p.n_merge = 0;
    p.records = file("bad.jsonl", "{\"id\":1,\"records\":[]}\n{\"id\":2,\"records\":{}}\n");
    assert_null(pd_summarize(&p, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    snprintf(want, sizeof want, "%s:2: \"records\" must be a list", p.records);
    assert_memory_equal(err.message, want, strlen(want));
    p.records = file("records.jsonl", RECORDS);
    p.by = "nope";
    assert_null(pd_summarize(&p, &err));
    snprintf(want, sizeof want, "%s:1: id 1 has no column 'nope' (--by)", p.records);
    assert_string_equal(err.message, want);
    p.by = "date:week";
    p.calibration = file("none.json", NULL);
    assert_null(pd_summarize(&p, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    p.calibration = NULL;
    p.records = file("missing.jsonl", NULL);
    assert_null(pd_summarize(&p, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, "missing.jsonl: cannot open"));
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    static const char *const names[] = {"records.jsonl", "a.jsonl", "b.jsonl", "a.state", "b.state", "reviews.csv",
                                        "r.jsonl", "bad.jsonl"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(file(names[i], NULL));
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_groups),
        cmocka_unit_test(test_state_merged),
        cmocka_unit_test(test_reviews_and_notes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
