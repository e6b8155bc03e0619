/* test_report.c - the table, the JSON and the HTML report. */
#include "te_test.h"

#include "te_internal.h"

#include <jansson.h>
#include <math.h>

#define GOLD_HEADER "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"

static const char gold[] = GOLD_HEADER
    "1,_, , ,很好,0,2,整体,正面\n"
    "1,_, , ,超值,3,5,价格,正面\n"
    "2,包装,0,2,好看,2,4,包装,正面\n";
static const char pred[] =
    "1,_,很好,整体,正面\n"
    "1,_,超值,价格,负面\n"
    "2,包装,好看,包装,正面\n"
    "2,物流,快,物流,正面\n";
static const char reviews[] = "id,Reviews\n1,\"很好,超值\"\n2,包装好看\n";

/* Run a writer on an in-memory stream; the text is malloc'ed. */
static char *table_text(const te_result *res, unsigned flags)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    te_error err;
    assert_int_equal(te_result_print_table(res, f, flags, &err), TE_OK);
    fclose(f);
    return text;
}


/* Occurrences of what in s. */
static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

static void test_table(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, pred, reviews);
    te_result *res = score_ok(ev);
    char *t = table_text(res, 0);
    assert_contains(t, "gold         gold.csv: 3 quadruples, 0 placeholder rows, 2 ids\n");
    assert_contains(t, "reviews      reviews.csv: 2 reviews\n");
    /* S=2 P=4 G=3: 0.5000, 0.6667, F1 4/7 = 0.5714 */
    assert_contains(t, "  quadruples                 2       4       3     0.5000  0.6667  0.5714\n");
    assert_contains(t, "  aspect-opinion pairs       3       4       3     0.7500  1.0000  0.8571\n");
    /* CJK labels take two columns each: the numbers still line up. */
    assert_contains(t, "  价格                       0       1       1     0.0000  0.0000  0.0000\n");
    assert_contains(t, "  使用体验                   0       0       0     0.0000");
    assert_contains(t, "spans: 1 predictions with a term that is not in their review (aspect 1, opinion 1)");
    assert_contains(t, "checks: 0 rule violations, 0 notes\n");
    assert_null(strstr(t, "errors:"));
    free(t);

    t = table_text(res, TE_REPORT_ERRORS);
    assert_contains(t, "errors: 1 misses, 2 false positives\n");
    assert_contains(t, "  miss id 1 (gold.csv:3)  _ | 超值 | 价格 | 正面\n       review: 很好,超值\n");
    assert_contains(t, "  fp   id 2 (pred.csv:4)  物流 [not in review] | 快 [not in review] | 物流 | 正面\n");
    free(t);
    te_result_free(res);
    te_eval_free(ev);

    /* Many issues: the table shows 20 and says how many more there are. */
    ev = eval_of(gold, "9,_,_,_,_\n8,_,_,_,_\n7,_,_,_,_\n6,_,_,_,_\n5,_,_,_,_\n4,_,_,_,_\n"
                       "3,_,_,_,_\n2,_,_,_,_\n1,_,_,_,_\n0,外,外,外,外\n"
                       "0,外,外,外,外\n0,外,外,外,外\n0,外,外,外,外\n0,外,外,外,外\n",
                 NULL);
    res = score_ok(ev);
    /* 9 out-of-order rows, 5 bad categories, 5 bad polarities. */
    assert_int_equal(te_result_n_issues(res), 19);
    te_result_free(res);
    load_ok(ev, TE_INPUT_PREDICTIONS, "more.csv", "0,a,b,c,d\n0,a,b,c,d\n");
    res = score_ok(ev);
    assert_int_equal(te_result_n_issues(res), 23);
    t = table_text(res, 0);
    assert_contains(t, "checks: 23 rule violations, 0 notes\n");
    assert_contains(t, "  rule pred.csv:2: id 8 comes after id 9: ids must be in order\n");
    assert_contains(t, "  ... and 3 more (--json lists them all)\n");
    assert_contains(t, "  外 *  ");
    assert_contains(t, "  * not a label of the task\n");
    free(t);
    te_result_free(res);
    te_eval_free(ev);
}

static json_t *json_of(const te_result *res, unsigned flags)
{
    te_error err;
    char *text = te_result_json(res, flags, &err);
    assert_non_null(text);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        fail_msg("bad JSON: %s", jerr.text);
    te_free(text);
    return root;
}

static long jint(json_t *obj, const char *path1, const char *path2)
{
    json_t *v = json_object_get(obj, path1);
    if (path2)
        v = json_object_get(v, path2);
    assert_true(json_is_integer(v));
    return (long)json_integer_value(v);
}

static void test_json(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, pred, reviews);
    te_result *res = score_ok(ev);
    json_t *root = json_of(res, 0);
    assert_int_equal(jint(root, "overall", "matched"), 2);
    assert_int_equal(jint(root, "overall", "predicted"), 4);
    assert_int_equal(jint(root, "overall", "gold"), 3);
    double f1 = json_real_value(json_object_get(json_object_get(root, "overall"), "f1"));
    assert_true(f1 > 4.0 / 7 - 1e-12 && f1 < 4.0 / 7 + 1e-12);
    assert_int_equal(jint(root, "pairs", "matched"), 3);
    json_t *cats = json_object_get(root, "categories");
    assert_int_equal(json_array_size(cats), 13);
    json_t *c = json_array_get(cats, 5);
    assert_string_equal(json_string_value(json_object_get(c, "label")), "价格");
    assert_true(json_is_true(json_object_get(c, "known")));
    assert_int_equal(jint(c, "predicted", NULL), 1);
    assert_int_equal(json_array_size(json_object_get(root, "polarities")), 3);
    assert_int_equal(jint(root, "spans", "either_outside"), 1);
    assert_int_equal(jint(root, "checks", "violations"), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(root, "inputs"), "gold"), "file")),
                        "gold.csv");
    assert_null(json_object_get(root, "errors"));
    json_decref(root);

    root = json_of(res, TE_REPORT_ERRORS);
    json_t *errors = json_object_get(root, "errors");
    assert_int_equal(json_array_size(errors), 3);
    json_t *e = json_array_get(errors, 2);
    assert_string_equal(json_string_value(json_object_get(e, "kind")), "false_positive");
    assert_string_equal(json_string_value(json_object_get(e, "review")), "包装好看");
    assert_true(json_is_true(json_object_get(e, "aspect_outside")));
    assert_int_equal(jint(e, "line", NULL), 4);
    json_decref(root);
    te_result_free(res);
    te_eval_free(ev);

    /* Issues carry kind, rule, file, line (null when none) and id. */
    ev = eval_of(gold, "2,包装,好看,包装,正面\n", NULL);
    res = score_ok(ev);
    root = json_of(res, 0);
    assert_true(json_is_null(json_object_get(root, "spans")));
    assert_true(json_is_null(json_object_get(json_object_get(root, "inputs"), "reviews")));
    json_t *issues = json_object_get(json_object_get(root, "checks"), "issues");
    assert_int_equal(json_array_size(issues), 1);
    json_t *is = json_array_get(issues, 0);
    assert_string_equal(json_string_value(json_object_get(is, "kind")), "missing-id");
    assert_true(json_is_true(json_object_get(is, "rule")));
    assert_true(json_is_null(json_object_get(is, "line")));
    assert_int_equal(jint(is, "id", NULL), 1);
    json_decref(root);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_html(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, pred, reviews);
    te_result *res = score_ok(ev);
    char *h = html_text(res);
    assert_contains(h, "<!DOCTYPE html>");
    assert_contains(h, "<svg");
    assert_contains(h, "</svg>");
    assert_contains(h, "</html>");
    assert_null(strstr(h, "<script"));
    /* No external resource: the only URLs are the SVG namespace. */
    size_t urls = 0;
    for (const char *url = h; (url = strstr(url, "http")) != NULL; url++, urls++)
        assert_int_equal(strncmp(url, "http://www.w3.org/2000/svg\"", 27), 0);
    assert_int_equal(urls, 2); /* the category and the polarity charts */
    assert_null(strstr(h, "src="));
    /* One bar row per category, with its label. */
    /* the page title, the two charts' names, a tooltip per category and polarity */
    assert_int_equal(count(h, "<title>"), 1 + 2 + 13 + 3);
    assert_contains(h, ">价格</text>");
    assert_contains(h, "1 misses (gold quadruples not predicted), 2 false positives");
    assert_contains(h, "包装好看");
    /* Chinese renders where a CJK family is installed (Debian: fonts-noto-cjk), in the page and the charts */
    assert_contains(h, "body{font-family:system-ui,'Noto Sans CJK SC',");
    assert_contains(h, "svg text{font-size:13px;font-family:system-ui,'Noto Sans CJK SC',");
    /* text columns are left-aligned, headers included */
    assert_contains(h, "th.t,td.t{text-align:left}");
    assert_contains(h, "<th class=\"t\">category</th><th>S</th>");
    assert_contains(h, "<th class=\"t\">aspect</th><th class=\"t\">opinion</th>");
    /* every label is one of the task's: no asterisk, no footnote */
    assert_null(strstr(h, " *<"));
    assert_null(strstr(h, "not a label of the task"));
    free(h);
    te_result_free(res);
    te_eval_free(ev);
}

/* Everything from the inputs is escaped: terms, labels, reviews, file names. */
static void test_html_escaping(void **state)
{
    (void)state;
    const char *evil_pred = "1,\"<b>&\",\"x\"\"y'\",<script>alert(1)</script>,正面\n";
    te_eval *ev = te_eval_new(NULL);
    load_ok(ev, TE_INPUT_GOLD, "<i>gold</i>.csv", gold);
    load_ok(ev, TE_INPUT_PREDICTIONS, "pred.csv", evil_pred);
    load_ok(ev, TE_INPUT_REVIEWS, "r.csv", "id,Reviews\n1,\"<img src=x onerror=alert(1)>\"\n");
    te_result *res = score_ok(ev);
    char *h = html_text(res);
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "<b>"));
    assert_null(strstr(h, "<img"));
    assert_null(strstr(h, "<i>"));
    assert_contains(h, "&lt;script&gt;alert(1)&lt;/script&gt;");
    assert_contains(h, "&lt;b&gt;&amp;");
    assert_contains(h, "x&quot;y&#39;");
    assert_contains(h, "&lt;img src=x onerror=alert(1)&gt;");
    assert_contains(h, "&lt;i&gt;gold&lt;/i&gt;.csv");
    /* The bad category is in the chart, escaped, marked as outside the set. */
    assert_contains(h, ">&lt;script&gt;alert(1)&lt;/script&gt; *</text>");
    assert_contains(h, "<p>* not a label of the task.</p>");
    free(h);
    te_result_free(res);
    te_eval_free(ev);
}

static void test_save_html(void **state)
{
    (void)state;
    te_eval *ev = eval_of(gold, pred, NULL);
    te_result *res = score_ok(ev);
    char path[64];
    write_temp(path, "", 0);
    te_error err;
    assert_int_equal(te_result_save_html(res, path, &err), TE_OK);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char head[16] = {0};
    assert_int_equal(fread(head, 1, 15, f), 15);
    fclose(f);
    assert_string_equal(head, "<!DOCTYPE html>");
    unlink(path);
    assert_int_equal(te_result_save_html(res, "/nonexistent/dir/r.html", &err), TE_ERR_IO);
    assert_string_equal(err.message, "/nonexistent/dir/r.html: cannot write: No such file or directory");
    assert_int_equal(te_result_save_html(res, NULL, &err), TE_ERR_ARG);
    assert_int_equal(te_result_print_table(NULL, stdout, 0, &err), TE_ERR_ARG);
    assert_null(te_result_json(NULL, 0, &err));
    te_result_free(res);
    te_eval_free(ev);
}

/* Run fn(out) on an in-memory stream; the text is malloc'ed. */
static char *svg_text(void (*fn)(FILE *out))
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fn(f);
    fclose(f);
    return text;
}

static void draw_degenerate(FILE *out)
{
    te_svg_bar bar = {.label = "<a&b>", .mark = "", .value = NAN};
    snprintf(bar.text, sizeof bar.text, "nan");
    te_svg_hbars(out, "nothing", NULL, 0);
    te_svg_hbars(out, "not finite", &bar, 1);
    const char *parts[1] = {"<p>"}, *rows[1] = {"r"};
    const long zero[1] = {0};
    te_svg_stacked(out, "no rows", parts, 1, rows, zero, 0);
    te_svg_interval(out, "not finite", "d", NAN, 0, INFINITY);
    const double x[2] = {0.5, NAN}, y[2] = {NAN, 0.5};
    const te_svg_series series = {"s", y};
    const te_svg_plot plot = {"plot", "x", "y", "y = x"};
    te_svg_lines(out, &plot, x, 2, &series, 1);
    const te_svg_column col = {.low = 0, .high = 0.1, .value = NAN, .count = 3};
    te_svg_columns(out, &plot, &col, 1);
}

/* Nothing finite to draw: each chart says so and stays whole; no "nan" or
 * "inf" reaches the page, texts are escaped. */
static void test_svg_no_data(void **state)
{
    (void)state;
    char *s = svg_text(draw_degenerate);
    assert_int_equal(count(s, "<svg "), 6);
    assert_int_equal(count(s, "</svg>"), 6);
    assert_int_equal(count(s, ">no data</text>"), 6);
    assert_null(strstr(s, "nan"));
    assert_null(strstr(s, "inf"));
    assert_null(strstr(s, "<a&b>"));
    assert_null(strstr(s, "<p>"));
    assert_contains(s, "&lt;a&amp;b&gt;");
    assert_contains(s, "&lt;p&gt;");
    free(s);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(te_status_name(TE_OK), "ok");
    assert_string_equal(te_status_name(TE_ERR_FORMAT), "format error");
    assert_string_equal(te_issue_kind_name(TE_ISSUE_MISSING_ID), "missing-id");
    assert_string_equal(te_issue_kind_name(TE_ISSUE_GOLD_ID_UNKNOWN), "gold-id-unknown");
    te_free(NULL);
    te_eval_free(NULL);
    te_result_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),     cmocka_unit_test(test_json),
        cmocka_unit_test(test_html),      cmocka_unit_test(test_html_escaping),
        cmocka_unit_test(test_save_html), cmocka_unit_test(test_names),
        cmocka_unit_test(test_svg_no_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
