/* compare_report.c - the comparison of two runs and the confidence sweep as
 * a table, as JSON and as an HTML page with their charts. */
#include "te_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const run_names[2] = {"A", "B"};

/* The file a run's predictions came from. */
static const char *run_file(const te_compare *cmp, int run)
{
    return te_result_input(te_compare_result(cmp, run), TE_INPUT_PREDICTIONS).file;
}

/* Mismatches of a class on both sides, the examples shown: the first ones in
 * the result's order (by id, misses first). */
static size_t class_examples(const te_result *res, te_error_class c, size_t max,
                             const te_mismatch **out)
{
    size_t n = 0;
    for (size_t i = 0; n < max && i < te_result_n_mismatches(res); i++)
        if (te_result_mismatch_class(res, i) == c)
            out[n++] = te_result_mismatch(res, i);
    return n;
}

/* At most this many examples a class. */
#define TE_MAX_EXAMPLES 100

static size_t clamp_examples(size_t examples)
{
    return examples < TE_MAX_EXAMPLES ? examples : TE_MAX_EXAMPLES;
}

/* Missed spans are misses only, extra spans false positives only. */
static int never_counts(te_error_class c, te_mismatch_kind side)
{
    return (c == TE_CLASS_MISSED_SPAN && side == TE_FALSE_POSITIVE) ||
           (c == TE_CLASS_EXTRA_SPAN && side == TE_MISS);
}

/* A count, or "-" on the side a class never counts. */
static void print_count(FILE *out, te_error_class c, te_mismatch_kind side, long n)
{
    if (never_counts(c, side))
        fprintf(out, " %7s", "-");
    else
        fprintf(out, " %7ld", n);
}

/* ----------------------------------------------------------------- table */

static void print_intro(const te_compare *cmp, FILE *out)
{
    const te_result *a = te_compare_result(cmp, 0);
    te_input_summary g = te_result_input(a, TE_INPUT_GOLD), r = te_result_input(a, TE_INPUT_REVIEWS);
    fprintf(out, "%-12s %s: %ld quadruples, %ld ids\n", "gold", g.file, g.quadruples, g.ids);
    for (int k = 0; k < 2; k++) {
        te_input_summary p = te_result_input(te_compare_result(cmp, k), TE_INPUT_PREDICTIONS);
        fprintf(out, "run %-8s %s: %ld quadruples, %ld placeholder rows, %ld ids\n", run_names[k],
                p.file, p.quadruples, p.placeholders, p.ids);
    }
    if (r.file)
        fprintf(out, "%-12s %s: %ld reviews\n", "reviews", r.file, r.rows);
    fputc('\n', out);
    te_table_score_header(out, "", 12);
    for (int k = 0; k < 2; k++)
        te_table_score_row(out, run_names[k], 12, te_result_overall(te_compare_result(cmp, k)));
    te_interval iv = te_compare_interval(cmp);
    fprintf(out, "\nF1(B) - F1(A) = %+.4f, 95%% interval [%+.4f, %+.4f]\n", iv.diff, iv.low,
            iv.high);
    fprintf(out, "  paired bootstrap over %zu reviews: %lu resamples, seed %llu, percentile "
                 "interval\n\n", iv.reviews, iv.resamples, iv.seed);
}

static void print_classes(const te_compare *cmp, FILE *out)
{
    fprintf(out, "  %-18s %7s %7s %7s %7s\n", "errors", "A gold", "A pred", "B gold", "B pred");
    for (int c = 0; c < TE_N_CLASSES; c++) {
        fprintf(out, "  %-18s", te_error_class_name((te_error_class)c));
        for (int k = 0; k < 2; k++)
            for (int side = 0; side < 2; side++)
                print_count(out, (te_error_class)c, (te_mismatch_kind)side,
                            te_result_class_count(te_compare_result(cmp, k), (te_error_class)c,
                                                  (te_mismatch_kind)side));
        fputc('\n', out);
    }
    fprintf(out, "  %-18s", "unmatched");
    for (int k = 0; k < 2; k++) {
        te_score s = te_result_overall(te_compare_result(cmp, k));
        fprintf(out, " %7ld %7ld", s.gold - s.matched, s.predicted - s.matched);
    }
    fputs("\n  (gold: misses, G - S; pred: false positives, P - S)\n", out);
}

static void print_examples(const te_compare *cmp, FILE *out, size_t examples)
{
    const te_mismatch *ex[TE_MAX_EXAMPLES];
    for (int k = 0; k < 2 && examples; k++) {
        const te_result *res = te_compare_result(cmp, k);
        fprintf(out, "\nexamples of %s (%s)\n", run_names[k], run_file(cmp, k));
        for (int c = 0; c < TE_N_CLASSES; c++) {
            size_t n = class_examples(res, (te_error_class)c, examples, ex);
            for (size_t i = 0; i < n; i++) {
                const te_mismatch *m = ex[i];
                fprintf(out, "  %-18s %-4s id %ld (%s:%ld)  %s | %s | %s | %s\n",
                        te_error_class_name((te_error_class)c), m->kind == TE_MISS ? "gold" : "pred",
                        m->quad.id, m->file, m->line, m->quad.aspect, m->quad.opinion,
                        m->quad.category, m->quad.polarity);
                if (m->review)
                    fprintf(out, "  %-18s review: %s\n", "", m->review);
            }
        }
    }
}

te_status te_compare_print_table(const te_compare *cmp, FILE *out, size_t examples, te_error *err)
{
    if (!cmp || !out)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no comparison or no stream");
    print_intro(cmp, out);
    print_classes(cmp, out);
    print_examples(cmp, out, clamp_examples(examples));
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the table");
    return TE_OK;
}

/* ------------------------------------------------------------------ JSON */

static json_t *classes_json(const te_result *res, size_t examples, int *bad)
{
    const te_mismatch *ex[TE_MAX_EXAMPLES];
    json_t *a = json_array();
    for (int c = 0; c < TE_N_CLASSES; c++) {
        json_t *o = json_object(), *list = json_array();
        te_json_put(o, "class", json_string(te_error_class_name((te_error_class)c)), bad);
        te_json_put(o, "gold", json_integer(te_result_class_count(res, (te_error_class)c, TE_MISS)), bad);
        te_json_put(o, "predicted",
                    json_integer(te_result_class_count(res, (te_error_class)c, TE_FALSE_POSITIVE)), bad);
        size_t n = class_examples(res, (te_error_class)c, examples, ex);
        for (size_t i = 0; i < n; i++)
            te_json_push(list, te_json_mismatch(ex[i], bad), bad);
        te_json_put(o, "examples", list, bad);
        te_json_push(a, o, bad);
    }
    return a;
}

char *te_compare_json(const te_compare *cmp, size_t examples, te_error *err)
{
    if (!cmp) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no comparison");
        return NULL;
    }
    examples = clamp_examples(examples);
    int bad = 0;
    json_t *root = json_object(), *runs = json_array(), *d = json_object();
    te_json_put(root, "version", json_string(TE_VERSION), &bad);
    for (int k = 0; k < 2; k++) {
        const te_result *res = te_compare_result(cmp, k);
        json_t *o = json_object();
        te_json_put(o, "run", json_string(run_names[k]), &bad);
        te_json_put(o, "inputs", te_json_inputs(res, &bad), &bad);
        te_json_put(o, "overall", te_json_score(te_result_overall(res), &bad), &bad);
        te_json_put(o, "pairs", te_json_score(te_result_pairs(res), &bad), &bad);
        te_json_put(o, "violations", json_integer((json_int_t)te_result_n_violations(res)), &bad);
        te_json_put(o, "error_classes", classes_json(res, examples, &bad), &bad);
        te_json_push(runs, o, &bad);
    }
    te_json_put(root, "runs", runs, &bad);
    te_interval iv = te_compare_interval(cmp);
    te_json_put(d, "f1", json_real(iv.diff), &bad);
    te_json_put(d, "low", json_real(iv.low), &bad);
    te_json_put(d, "high", json_real(iv.high), &bad);
    te_json_put(d, "level", json_real(0.95), &bad);
    te_json_put(d, "resamples", json_integer((json_int_t)iv.resamples), &bad);
    te_json_put(d, "seed", json_integer((json_int_t)iv.seed), &bad);
    te_json_put(d, "reviews", json_integer((json_int_t)iv.reviews), &bad);
    te_json_put(root, "difference", d, &bad);
    if (!root || !runs || !d)
        bad = 1;
    return te_json_finish(root, bad, err);
}

/* ------------------------------------------------------------------ HTML */

typedef struct html_job {
    const te_compare *cmp;
    size_t examples;
} html_job;

static void html_example(FILE *out, const te_mismatch *m, te_error_class c)
{
    fprintf(out, "<tr><td class=\"t\">%s</td><td class=\"t\">%s</td><td>%ld</td>",
            te_error_class_name(c), m->kind == TE_MISS ? "gold" : "pred", m->quad.id);
    const char *cells[6] = {m->quad.aspect, m->quad.opinion, m->quad.category, m->quad.polarity,
                            m->file, m->review ? m->review : ""};
    for (int i = 0; i < 6; i++) {
        fputs("<td class=\"t\">", out);
        te_html_esc(out, cells[i]);
        if (i == 4)
            fprintf(out, ":%ld", m->line);
        fputs("</td>", out);
    }
    fputs("</tr>\n", out);
}

/* Each run's misses and false positives by class, as stacked bars. */
static void html_class_chart(const te_compare *cmp, FILE *out)
{
    static const char *const rows[4] = {"A misses", "A false positives", "B misses",
                                        "B false positives"};
    const char *parts[TE_N_CLASSES];
    long counts[4 * TE_N_CLASSES];
    for (int c = 0; c < TE_N_CLASSES; c++) {
        parts[c] = te_error_class_name((te_error_class)c);
        for (int r = 0; r < 4; r++) {
            te_mismatch_kind side = (te_mismatch_kind)(r % 2);
            counts[r * TE_N_CLASSES + c] =
                never_counts((te_error_class)c, side)
                    ? -1
                    : te_result_class_count(te_compare_result(cmp, r / 2), (te_error_class)c, side);
        }
    }
    te_svg_stacked(out, "Unmatched quadruples of each run by error class", parts, TE_N_CLASSES,
                   rows, counts, 4);
}

static void html_classes(const te_compare *cmp, FILE *out, size_t examples)
{
    html_class_chart(cmp, out);
    fputs("<table><tr><th class=\"t\">class</th><th>A gold</th><th>A pred</th><th>B gold</th>"
          "<th>B pred</th></tr>\n", out);
    for (int c = 0; c < TE_N_CLASSES; c++) {
        fprintf(out, "<tr><td class=\"t\">%s</td>", te_error_class_name((te_error_class)c));
        for (int k = 0; k < 4; k++) {
            long n = te_result_class_count(te_compare_result(cmp, k / 2), (te_error_class)c,
                                           (te_mismatch_kind)(k % 2));
            if (never_counts((te_error_class)c, (te_mismatch_kind)(k % 2)))
                fputs("<td>-</td>", out);
            else
                fprintf(out, "<td>%ld</td>", n);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    const te_mismatch *ex[TE_MAX_EXAMPLES];
    for (int k = 0; k < 2 && examples; k++) {
        fprintf(out, "<h3>Examples of %s</h3>\n<table><tr><th class=\"t\">class</th>"
                     "<th class=\"t\">side</th><th>id</th><th class=\"t\">aspect</th>"
                     "<th class=\"t\">opinion</th><th class=\"t\">category</th>"
                     "<th class=\"t\">polarity</th><th class=\"t\">line</th>"
                     "<th class=\"t\">review</th></tr>\n", run_names[k]);
        for (int c = 0; c < TE_N_CLASSES; c++) {
            size_t n = class_examples(te_compare_result(cmp, k), (te_error_class)c, examples, ex);
            for (size_t i = 0; i < n; i++)
                html_example(out, ex[i], (te_error_class)c);
        }
        fputs("</table>\n", out);
    }
}

static te_status write_compare(const void *obj, FILE *out, te_error *err)
{
    const html_job *job = obj;
    const te_compare *cmp = job->cmp;
    te_html_begin(out, "Tianchi opinion mining: two runs compared");
    fputs("<h2>Comparison</h2>\n<table><tr><th class=\"t\">run</th><th class=\"t\">file</th>"
          "<th>S</th><th>P</th><th>G</th><th>precision</th><th>recall</th><th>F1</th></tr>\n", out);
    for (int k = 0; k < 2; k++) {
        te_score s = te_result_overall(te_compare_result(cmp, k));
        fprintf(out, "<tr><td class=\"t\">%s</td><td class=\"t\">", run_names[k]);
        te_html_esc(out, run_file(cmp, k));
        fprintf(out, "</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%.4f</td><td>%.4f</td>"
                     "<td>%.4f</td></tr>\n", s.matched, s.predicted, s.gold, s.precision,
                s.recall, s.f1);
    }
    te_svg_bar bars[2];
    for (int k = 0; k < 2; k++) {
        te_score s = te_result_overall(te_compare_result(cmp, k));
        bars[k] = (te_svg_bar){.label = run_names[k], .mark = "", .value = s.f1};
        snprintf(bars[k].text, sizeof bars[k].text, "%.4f", s.f1);
        te_svg_score_tip(&bars[k], s);
    }
    te_interval iv = te_compare_interval(cmp);
    fputs("</table>\n", out);
    te_svg_hbars(out, "F1 of runs A and B", bars, 2);
    te_svg_interval(out, "F1(B) - F1(A) with its 95% paired bootstrap interval", "F1(B) - F1(A)",
                    iv.diff, iv.low, iv.high);
    fprintf(out, "<p class=\"big\">F1(B) - F1(A) = %+.4f, 95%% interval [%+.4f, "
                 "%+.4f]</p>\n<p>Paired bootstrap over %zu reviews: %lu resamples, seed %llu, "
                 "percentile interval.</p>\n<h2>Errors by class</h2>\n",
            iv.diff, iv.low, iv.high, iv.reviews, iv.resamples, iv.seed);
    html_classes(cmp, out, job->examples);
    for (int k = 0; k < 2; k++) {
        fprintf(out, "<h2>Run %s: ", run_names[k]);
        te_html_esc(out, run_file(cmp, k));
        fputs("</h2>\n", out);
        te_html_result(te_compare_result(cmp, k), out, 0);
    }
    te_html_end(out);
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the HTML report");
    return TE_OK;
}

te_status te_compare_save_html(const te_compare *cmp, const char *path, size_t examples,
                               te_error *err)
{
    if (!cmp)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no comparison");
    html_job job = {cmp, clamp_examples(examples)};
    return te_html_save(path, write_compare, &job, err);
}

/* ----------------------------------------------------------------- sweep */

/* P, R and F1 by threshold as lines, then the table of the figures. */
static te_status html_thresholds(const te_sweep *sw, FILE *out, te_error *err)
{
    size_t n = te_sweep_n_rows(sw);
    double *v = malloc((n ? n : 1) * 4 * sizeof *v);
    if (!v)
        return te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const te_sweep_row *r = te_sweep_row_at(sw, i);
        v[i] = r->threshold;
        v[n + i] = r->score.precision;
        v[2 * n + i] = r->score.recall;
        v[3 * n + i] = r->score.f1;
    }
    const te_svg_series series[3] = {{"precision", v + n}, {"recall", v + 2 * n}, {"F1", v + 3 * n}};
    const te_svg_plot plot = {"Precision, recall and F1 of the predictions kept by confidence threshold",
                              "confidence threshold", "score", NULL};
    te_svg_lines(out, &plot, v, n, series, 3);
    free(v);
    fputs("<table><tr><th>confidence &gt;=</th><th>kept</th><th>S</th><th>G</th>"
          "<th>precision</th><th>recall</th><th>F1</th></tr>\n", out);
    for (size_t i = 0; i < n; i++) {
        const te_sweep_row *r = te_sweep_row_at(sw, i);
        fprintf(out, "<tr><td>%.2f</td><td>%ld</td><td>%ld</td><td>%ld</td><td>%.4f</td>"
                     "<td>%.4f</td><td>%.4f</td></tr>\n", r->threshold, r->score.predicted,
                r->score.matched, r->score.gold, r->score.precision, r->score.recall, r->score.f1);
    }
    fputs("</table>\n", out);
    return TE_OK;
}

/* The reliability diagram: the fraction correct of each bin of confidence
 * against the diagonal of a calibrated model, then the table. */
static void html_reliability(const te_sweep *sw, FILE *out)
{
    te_svg_column cols[16];
    size_t n = te_sweep_n_bins(sw);
    n = n < 16 ? n : 16;
    for (size_t i = 0; i < n; i++) {
        const te_reliability_bin *b = te_sweep_bin(sw, i);
        cols[i] = (te_svg_column){.low = b->low, .high = b->high, .value = b->accuracy,
                                  .count = b->count};
        snprintf(cols[i].label, sizeof cols[i].label, "[%.1f, %.1f%c", b->low, b->high,
                 i + 1 == n ? ']' : ')');
        snprintf(cols[i].tip, sizeof cols[i].tip, "%ld predictions, %ld correct, fraction correct %.4f",
                 b->count, b->correct, b->accuracy);
    }
    const te_svg_plot plot = {"Reliability: fraction of the predictions correct by confidence",
                              "confidence", "fraction correct", "calibrated (y = x)"};
    te_svg_columns(out, &plot, cols, n);
    fputs("<table><tr><th class=\"t\">confidence</th><th>count</th><th>correct</th>"
          "<th>fraction correct</th></tr>\n", out);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "<tr><td class=\"t\">%s</td><td>%ld</td><td>%ld</td><td>%.4f</td></tr>\n",
                cols[i].label, cols[i].count, te_sweep_bin(sw, i)->correct, cols[i].value);
    fputs("</table>\n", out);
}

te_status te_html_sweep(const te_sweep *sw, FILE *out, int level, te_error *err)
{
    fprintf(out, "<h%d>Precision and recall by confidence threshold</h%d>\n", level, level);
    te_status st = html_thresholds(sw, out, err);
    if (st != TE_OK)
        return st;
    fprintf(out, "<h%d>Reliability</h%d>\n", level, level);
    html_reliability(sw, out);
    return TE_OK;
}

static te_status write_sweep(const void *obj, FILE *out, te_error *err)
{
    const te_sweep *sw = obj;
    te_html_begin(out, "Tianchi opinion mining: confidence sweep");
    te_status st = te_html_sweep(sw, out, 2, err);
    if (st != TE_OK)
        return st;
    fputs("<h2>All predictions</h2>\n", out);
    te_html_result(te_sweep_result(sw), out, 0);
    te_html_end(out);
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the HTML report");
    return TE_OK;
}

te_status te_sweep_write_html(const te_sweep *sw, FILE *out, te_error *err)
{
    if (!sw || !out)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no sweep or no stream");
    return write_sweep(sw, out, err);
}

te_status te_sweep_save_html(const te_sweep *sw, const char *path, te_error *err)
{
    if (!sw)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no sweep");
    return te_html_save(path, write_sweep, sw, err);
}

te_status te_sweep_print_table(const te_sweep *sw, FILE *out, te_error *err)
{
    if (!sw || !out)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no sweep or no stream");
    te_input_summary g = te_sweep_input(sw, TE_INPUT_GOLD), p = te_sweep_input(sw, TE_INPUT_PREDICTIONS);
    fprintf(out, "%-12s %s: %ld quadruples, %ld ids\n", "gold", g.file, g.quadruples, g.ids);
    fprintf(out, "%-12s %s: %ld records, %ld ids\n\n", "predictions", p.file, p.quadruples, p.ids);
    fputs("  confidence >=    kept       S       G  precision  recall      F1\n", out);
    for (size_t i = 0; i < te_sweep_n_rows(sw); i++) {
        const te_sweep_row *r = te_sweep_row_at(sw, i);
        fprintf(out, "  %13.2f %7ld %7ld %7ld  %9.4f %7.4f %7.4f\n", r->threshold,
                r->score.predicted, r->score.matched, r->score.gold, r->score.precision,
                r->score.recall, r->score.f1);
    }
    fputs("\n  confidence       count correct  fraction correct\n", out);
    for (size_t i = 0; i < te_sweep_n_bins(sw); i++) {
        const te_reliability_bin *b = te_sweep_bin(sw, i);
        fprintf(out, "  [%.1f, %.1f%c   %7ld %7ld  %16.4f\n", b->low, b->high,
                i + 1 == te_sweep_n_bins(sw) ? ']' : ')', b->count, b->correct, b->accuracy);
    }
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the table");
    return TE_OK;
}

char *te_sweep_json(const te_sweep *sw, te_error *err)
{
    if (!sw) {
        te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no sweep");
        return NULL;
    }
    int bad = 0;
    json_t *root = json_object(), *rows = json_array(), *bins = json_array();
    te_json_put(root, "version", json_string(TE_VERSION), &bad);
    te_json_put(root, "inputs", te_json_inputs(te_sweep_result(sw), &bad), &bad);
    for (size_t i = 0; i < te_sweep_n_rows(sw); i++) {
        const te_sweep_row *r = te_sweep_row_at(sw, i);
        json_t *o = json_object();
        te_json_put(o, "threshold", json_real(r->threshold), &bad);
        te_json_put(o, "kept", json_integer(r->score.predicted), &bad);
        te_json_put(o, "score", te_json_score(r->score, &bad), &bad);
        te_json_push(rows, o, &bad);
    }
    for (size_t i = 0; i < te_sweep_n_bins(sw); i++) {
        const te_reliability_bin *b = te_sweep_bin(sw, i);
        json_t *o = json_object();
        te_json_put(o, "low", json_real(b->low), &bad);
        te_json_put(o, "high", json_real(b->high), &bad);
        te_json_put(o, "count", json_integer(b->count), &bad);
        te_json_put(o, "correct", json_integer(b->correct), &bad);
        te_json_put(o, "fraction_correct", json_real(b->accuracy), &bad);
        te_json_push(bins, o, &bad);
    }
    te_json_put(root, "thresholds", rows, &bad);
    te_json_put(root, "reliability", bins, &bad);
    if (!root || !rows || !bins)
        bad = 1;
    return te_json_finish(root, bad, err);
}
