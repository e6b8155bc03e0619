/* report.c - the result as a readable table and as JSON. Both use only the
 * public accessors, so a caller can write its own report the same way. */
#include "te_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Issues shown in the table; the JSON lists all. */
#define TE_TABLE_MAX_ISSUES 20

static const char *const input_names[TE_N_INPUTS] = {"gold", "predictions", "reviews"};

/* ----------------------------------------------------------------- table */

/* Print s left-aligned in `width` terminal columns (CJK counts 2). */
static void print_padded(FILE *out, const char *s, size_t width)
{
    size_t w = te_display_width(s);
    fputs(s, out);
    for (; w < width; w++)
        fputc(' ', out);
}

void te_table_score_row(FILE *out, const char *label, size_t width, te_score s)
{
    fputs("  ", out);
    print_padded(out, label, width);
    fprintf(out, " %7ld %7ld %7ld  %9.4f %7.4f %7.4f\n", s.matched, s.predicted, s.gold,
            s.precision, s.recall, s.f1);
}

void te_table_score_header(FILE *out, const char *title, size_t width)
{
    fputs("  ", out);
    print_padded(out, title, width);
    fprintf(out, " %7s %7s %7s  %9s %7s %7s\n", "S", "P", "G", "precision", "recall", "F1");
}

/* Width of the label column: the widest label, at least the overall rows'. */
static size_t label_width(const te_result *res)
{
    size_t width = strlen("aspect-opinion pairs");
    for (int axis = 0; axis < 2; axis++)
        for (size_t i = 0; i < te_result_n_labels(res, (te_axis)axis); i++) {
            size_t w = te_display_width(te_result_label(res, (te_axis)axis, i)->label) + 2;
            if (w > width)
                width = w;
        }
    return width;
}

static void print_inputs(const te_result *res, FILE *out)
{
    for (int k = 0; k < TE_N_INPUTS; k++) {
        te_input_summary in = te_result_input(res, (te_input)k);
        if (!in.file)
            continue;
        fprintf(out, "%-12s %s: ", input_names[k], in.file);
        if (k == TE_INPUT_REVIEWS)
            fprintf(out, "%ld reviews\n", in.rows);
        else
            fprintf(out, "%ld quadruples, %ld placeholder rows, %ld ids\n", in.quadruples,
                    in.placeholders, in.ids);
    }
}

static void print_labels(const te_result *res, FILE *out, te_axis axis, size_t width)
{
    te_table_score_header(out, axis == TE_AXIS_CATEGORY ? "category" : "polarity", width);
    for (size_t i = 0; i < te_result_n_labels(res, axis); i++) {
        const te_label_score *l = te_result_label(res, axis, i);
        char label[256];
        snprintf(label, sizeof label, "%s%s", l->label, l->known ? "" : " *");
        /* An over-long unknown label was cut by snprintf: keep valid UTF-8. */
        label[te_utf8_valid_prefix(label, strlen(label))] = '\0';
        te_table_score_row(out, label, width, l->score);
    }
}

static void print_issues(const te_result *res, FILE *out)
{
    size_t n = te_result_n_issues(res), rules = te_result_n_violations(res);
    fprintf(out, "checks: %zu rule violation%s, %zu note%s\n", rules, rules == 1 ? "" : "s",
            n - rules, n - rules == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < TE_TABLE_MAX_ISSUES; i++) {
        const te_issue *is = te_result_issue(res, i);
        fprintf(out, "  %-4s ", is->rule ? "rule" : "note");
        if (is->file && is->line > 0)
            fprintf(out, "%s:%ld: ", is->file, is->line);
        else if (is->file)
            fprintf(out, "%s: ", is->file);
        fprintf(out, "%s\n", is->message);
    }
    if (n > TE_TABLE_MAX_ISSUES)
        fprintf(out, "  ... and %zu more (--json lists them all)\n", n - TE_TABLE_MAX_ISSUES);
}

static void print_mismatches(const te_result *res, FILE *out)
{
    size_t n = te_result_n_mismatches(res), misses = 0;
    for (size_t i = 0; i < n; i++)
        misses += te_result_mismatch(res, i)->kind == TE_MISS;
    fprintf(out, "errors: %zu misses, %zu false positives\n", misses, n - misses);
    for (size_t i = 0; i < n; i++) {
        const te_mismatch *m = te_result_mismatch(res, i);
        fprintf(out, "  %-4s id %ld (%s:%ld)  %s%s | %s%s | %s | %s\n",
                m->kind == TE_MISS ? "miss" : "fp", m->quad.id, m->file, m->line, m->quad.aspect,
                m->aspect_outside ? " [not in review]" : "", m->quad.opinion,
                m->opinion_outside ? " [not in review]" : "", m->quad.category,
                m->quad.polarity);
        if (m->review)
            fprintf(out, "       review: %s\n", m->review);
    }
}

te_status te_result_print_table(const te_result *res, FILE *out, unsigned flags, te_error *err)
{
    if (!res || !out)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no result or no stream");
    size_t width = label_width(res);
    print_inputs(res, out);
    fputc('\n', out);
    te_table_score_header(out, "", width);
    te_table_score_row(out, "quadruples", width, te_result_overall(res));
    te_table_score_row(out, "aspect-opinion pairs", width, te_result_pairs(res));
    fputc('\n', out);
    print_labels(res, out, TE_AXIS_CATEGORY, width);
    fputc('\n', out);
    print_labels(res, out, TE_AXIS_POLARITY, width);
    if (te_result_has_unknown_labels(res))
        fputs("  * not a label of the task\n", out);
    fputc('\n', out);
    te_span_counts sp = te_result_spans(res);
    if (sp.available)
        fprintf(out,
                "spans: %ld predictions with a term that is not in their review "
                "(aspect %ld, opinion %ld); %ld predictions for ids without a review\n",
                sp.either_outside, sp.aspect_outside, sp.opinion_outside, sp.no_review);
    else
        fputs("spans: not checked (no --reviews)\n", out);
    print_issues(res, out);
    if (flags & TE_REPORT_ERRORS)
        print_mismatches(res, out);
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the table");
    return TE_OK;
}

/* ------------------------------------------------------------------ JSON */

/* json_object_set_new and json_array_append_new take NULL values and fail,
 * so a missing allocation shows up once, in *bad. */
void te_json_put(json_t *obj, const char *key, json_t *value, int *bad)
{
    if (json_object_set_new(obj, key, value) != 0)
        *bad = 1;
}

void te_json_push(json_t *arr, json_t *value, int *bad)
{
    if (json_array_append_new(arr, value) != 0)
        *bad = 1;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *int_or_null(long v, long none)
{
    return v == none ? json_null() : json_integer(v);
}

json_t *te_json_score(te_score s, int *bad)
{
    json_t *o = json_object();
    te_json_put(o, "matched", json_integer(s.matched), bad);
    te_json_put(o, "predicted", json_integer(s.predicted), bad);
    te_json_put(o, "gold", json_integer(s.gold), bad);
    te_json_put(o, "precision", json_real(s.precision), bad);
    te_json_put(o, "recall", json_real(s.recall), bad);
    te_json_put(o, "f1", json_real(s.f1), bad);
    return o;
}

json_t *te_json_inputs(const te_result *res, int *bad)
{
    json_t *o = json_object();
    for (int k = 0; k < TE_N_INPUTS; k++) {
        te_input_summary in = te_result_input(res, (te_input)k);
        if (!in.file) {
            te_json_put(o, input_names[k], json_null(), bad);
            continue;
        }
        json_t *i = json_object();
        te_json_put(i, "file", json_string(in.file), bad);
        te_json_put(i, "rows", json_integer(in.rows), bad);
        if (k != TE_INPUT_REVIEWS) {
            te_json_put(i, "quadruples", json_integer(in.quadruples), bad);
            te_json_put(i, "placeholders", json_integer(in.placeholders), bad);
            te_json_put(i, "ids", json_integer(in.ids), bad);
        }
        te_json_put(o, input_names[k], i, bad);
    }
    return o;
}

static json_t *labels_json(const te_result *res, te_axis axis, int *bad)
{
    json_t *a = json_array();
    for (size_t i = 0; i < te_result_n_labels(res, axis); i++) {
        const te_label_score *l = te_result_label(res, axis, i);
        json_t *o = te_json_score(l->score, bad);
        te_json_put(o, "label", json_string(l->label), bad);
        te_json_put(o, "known", json_boolean(l->known), bad);
        te_json_push(a, o, bad);
    }
    return a;
}

static json_t *spans_json(const te_result *res, int *bad)
{
    te_span_counts sp = te_result_spans(res);
    if (!sp.available)
        return json_null();
    json_t *o = json_object();
    te_json_put(o, "aspect_outside", json_integer(sp.aspect_outside), bad);
    te_json_put(o, "opinion_outside", json_integer(sp.opinion_outside), bad);
    te_json_put(o, "either_outside", json_integer(sp.either_outside), bad);
    te_json_put(o, "no_review", json_integer(sp.no_review), bad);
    return o;
}

static json_t *checks_json(const te_result *res, int *bad)
{
    json_t *o = json_object(), *a = json_array();
    size_t n = te_result_n_issues(res), rules = te_result_n_violations(res);
    te_json_put(o, "violations", json_integer((json_int_t)rules), bad);
    te_json_put(o, "notes", json_integer((json_int_t)(n - rules)), bad);
    for (size_t i = 0; i < n; i++) {
        const te_issue *is = te_result_issue(res, i);
        json_t *j = json_object();
        te_json_put(j, "kind", json_string(te_issue_kind_name(is->kind)), bad);
        te_json_put(j, "rule", json_boolean(is->rule), bad);
        te_json_put(j, "file", str_or_null(is->file), bad);
        te_json_put(j, "line", int_or_null(is->line, 0), bad);
        te_json_put(j, "id", int_or_null(is->id, -1), bad);
        te_json_put(j, "message", json_string(is->message), bad);
        te_json_push(a, j, bad);
    }
    te_json_put(o, "issues", a, bad);
    return o;
}

json_t *te_json_mismatch(const te_mismatch *m, int *bad)
{
    json_t *j = json_object();
    te_json_put(j, "kind", json_string(m->kind == TE_MISS ? "miss" : "false_positive"), bad);
    te_json_put(j, "id", json_integer(m->quad.id), bad);
    te_json_put(j, "aspect", json_string(m->quad.aspect), bad);
    te_json_put(j, "opinion", json_string(m->quad.opinion), bad);
    te_json_put(j, "category", json_string(m->quad.category), bad);
    te_json_put(j, "polarity", json_string(m->quad.polarity), bad);
    te_json_put(j, "file", str_or_null(m->file), bad);
    te_json_put(j, "line", int_or_null(m->line, 0), bad);
    te_json_put(j, "review", str_or_null(m->review), bad);
    te_json_put(j, "aspect_outside", json_boolean(m->aspect_outside), bad);
    te_json_put(j, "opinion_outside", json_boolean(m->opinion_outside), bad);
    return j;
}

static json_t *errors_json(const te_result *res, int *bad)
{
    json_t *a = json_array();
    for (size_t i = 0; i < te_result_n_mismatches(res); i++)
        te_json_push(a, te_json_mismatch(te_result_mismatch(res, i), bad), bad);
    return a;
}

char *te_result_json(const te_result *res, unsigned flags, te_error *err)
{
    if (!res) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no result");
        return NULL;
    }
    int bad = 0;
    json_t *root = json_object();
    if (!root) {
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory writing JSON");
        return NULL;
    }
    te_json_put(root, "version", json_string(TE_VERSION), &bad);
    te_json_put(root, "inputs", te_json_inputs(res, &bad), &bad);
    te_json_put(root, "overall", te_json_score(te_result_overall(res), &bad), &bad);
    te_json_put(root, "pairs", te_json_score(te_result_pairs(res), &bad), &bad);
    te_json_put(root, "categories", labels_json(res, TE_AXIS_CATEGORY, &bad), &bad);
    te_json_put(root, "polarities", labels_json(res, TE_AXIS_POLARITY, &bad), &bad);
    te_json_put(root, "spans", spans_json(res, &bad), &bad);
    te_json_put(root, "checks", checks_json(res, &bad), &bad);
    if (flags & TE_REPORT_ERRORS)
        te_json_put(root, "errors", errors_json(res, &bad), &bad);
    return te_json_finish(root, bad, err);
}

char *te_json_finish(json_t *root, int bad, te_error *err)
{
    char *text = bad ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) {
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory writing JSON");
        return NULL;
    }
    /* Hand back a malloc'ed copy so that te_free() is right even when the
     * process gave jansson its own allocator. */
    char *copy = strdup(text);
    json_free_t jfree;
    json_get_alloc_funcs(NULL, &jfree);
    jfree(text);
    if (!copy)
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory writing JSON");
    return copy;
}
