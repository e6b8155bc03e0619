/* html.c - the result as one self-contained HTML page: no scripts, no
 * external resources, every text of the inputs escaped. */
#include "te_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void te_html_esc(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* The CJK families of the common systems before the generic one, so that
 * Chinese labels and reviews render wherever one of them is installed
 * (Debian: fonts-noto-cjk) instead of as empty boxes. */
#define FONTS                                                                                                  \
    "system-ui,'Noto Sans CJK SC','Noto Sans SC','Source Han Sans SC','PingFang SC','Hiragino Sans GB',"        \
    "'Microsoft YaHei','WenQuanYi Micro Hei','WenQuanYi Zen Hei',sans-serif"

static const char style[] =
    "body{font-family:" FONTS ";margin:2em;color:#222;max-width:72em}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em;margin-top:1.2em}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right;vertical-align:top}"
    "th{background:#f3f3f3}th.t,td.t{text-align:left}"
    ".big{font-size:1.3em;font-weight:bold}.miss{color:#a40000}.fp{color:#7a4a00}"
    ".rule{color:#a40000}.note{color:#555}.out{background:#ffe0e0}"
    "svg text{font-size:13px;font-family:" FONTS "}";

static void score_cells(FILE *out, te_score s)
{
    fprintf(out, "<td>%ld</td><td>%ld</td><td>%ld</td><td>%.4f</td><td>%.4f</td><td>%.4f</td>",
            s.matched, s.predicted, s.gold, s.precision, s.recall, s.f1);
}

static void score_table_head(FILE *out, const char *first)
{
    fprintf(out, "<table><tr><th class=\"t\">%s</th><th>S</th><th>P</th><th>G</th><th>precision</th>"
                 "<th>recall</th><th>F1</th></tr>\n", first);
}

static void inputs(const te_result *res, FILE *out)
{
    static const char *const names[TE_N_INPUTS] = {"gold", "predictions", "reviews"};
    fputs("<ul>\n", out);
    for (int k = 0; k < TE_N_INPUTS; k++) {
        te_input_summary in = te_result_input(res, (te_input)k);
        if (!in.file)
            continue;
        fprintf(out, "<li>%s: <code>", names[k]);
        te_html_esc(out, in.file);
        if (k == TE_INPUT_REVIEWS)
            fprintf(out, "</code>, %ld reviews</li>\n", in.rows);
        else
            fprintf(out, "</code>, %ld quadruples, %ld placeholder rows, %ld ids</li>\n",
                    in.quadruples, in.placeholders, in.ids);
    }
    fputs("</ul>\n", out);
}

static void overall(const te_result *res, FILE *out)
{
    te_score s = te_result_overall(res);
    fprintf(out, "<p class=\"big\">F1 %.4f (precision %.4f, recall %.4f)</p>\n", s.f1,
            s.precision, s.recall);
    score_table_head(out, "");
    fputs("<tr><td class=\"t\">quadruples</td>", out);
    score_cells(out, s);
    fputs("</tr>\n<tr><td class=\"t\">aspect-opinion pairs</td>", out);
    score_cells(out, te_result_pairs(res));
    fputs("</tr></table>\n", out);
}

/* Horizontal bars of F1 per label; labels with neither gold nor predictions
 * have no bar. */
static void chart(const te_result *res, FILE *out, te_axis axis)
{
    size_t n = te_result_n_labels(res, axis);
    te_svg_bar *bars = calloc(n ? n : 1, sizeof *bars);
    if (!bars) { /* the tables below still hold the figures */
        fputs("<p class=\"note\">Chart left out: out of memory.</p>\n", out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const te_label_score *l = te_result_label(res, axis, i);
        te_score s = l->score;
        bars[i] = (te_svg_bar){.label = l->label, .mark = l->known ? "" : " *", .value = s.f1,
                               .empty = s.gold == 0 && s.predicted == 0};
        snprintf(bars[i].text, sizeof bars[i].text, "%.3f (G %ld, P %ld)", s.f1, s.gold, s.predicted);
        te_svg_score_tip(&bars[i], s);
    }
    te_svg_hbars(out, axis == TE_AXIS_CATEGORY ? "F1 per category" : "F1 per polarity", bars, n);
    free(bars);
}

static void labels(const te_result *res, FILE *out, te_axis axis)
{
    score_table_head(out, axis == TE_AXIS_CATEGORY ? "category" : "polarity");
    for (size_t i = 0; i < te_result_n_labels(res, axis); i++) {
        const te_label_score *l = te_result_label(res, axis, i);
        fputs("<tr><td class=\"t\">", out);
        te_html_esc(out, l->label);
        fprintf(out, "%s</td>", l->known ? "" : " *");
        score_cells(out, l->score);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void spans(const te_result *res, FILE *out)
{
    te_span_counts sp = te_result_spans(res);
    if (!sp.available) {
        fputs("<p>Spans not checked: no reviews file.</p>\n", out);
        return;
    }
    fprintf(out,
            "<p>%ld predictions have a term that is not in their review (aspect %ld, opinion "
            "%ld); %ld predictions are for ids without a review.</p>\n",
            sp.either_outside, sp.aspect_outside, sp.opinion_outside, sp.no_review);
}

static void issues(const te_result *res, FILE *out)
{
    size_t n = te_result_n_issues(res), rules = te_result_n_violations(res);
    fprintf(out, "<p>%zu rule violations, %zu notes.</p>\n", rules, n - rules);
    if (!n)
        return;
    fputs("<table><tr><th class=\"t\">kind</th><th class=\"t\">where</th><th class=\"t\">what</th></tr>\n", out);
    for (size_t i = 0; i < n; i++) {
        const te_issue *is = te_result_issue(res, i);
        fprintf(out, "<tr class=\"%s\"><td class=\"t\">%s %s</td><td class=\"t\">",
                is->rule ? "rule" : "note", is->rule ? "rule" : "note",
                te_issue_kind_name(is->kind));
        te_html_esc(out, is->file);
        if (is->line > 0)
            fprintf(out, ":%ld", is->line);
        fputs("</td><td class=\"t\">", out);
        te_html_esc(out, is->message);
        fputs("</td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void term_cell(FILE *out, const char *term, int outside)
{
    fprintf(out, "<td class=\"t%s\">", outside ? " out" : "");
    te_html_esc(out, term);
    if (outside)
        fputs(" (not in review)", out);
    fputs("</td>", out);
}

static void mismatches(const te_result *res, FILE *out)
{
    size_t n = te_result_n_mismatches(res), misses = 0;
    for (size_t i = 0; i < n; i++)
        misses += te_result_mismatch(res, i)->kind == TE_MISS;
    fprintf(out, "<p>%zu misses (gold quadruples not predicted), %zu false positives "
                 "(predictions not in gold).</p>\n", misses, n - misses);
    if (!n)
        return;
    fputs("<table><tr><th>id</th><th class=\"t\">kind</th><th class=\"t\">aspect</th><th class=\"t\">opinion</th>"
          "<th class=\"t\">category</th><th class=\"t\">polarity</th><th class=\"t\">line</th>"
          "<th class=\"t\">review</th></tr>\n", out);
    for (size_t i = 0; i < n; i++) {
        const te_mismatch *m = te_result_mismatch(res, i);
        int miss = m->kind == TE_MISS;
        fprintf(out, "<tr><td>%ld</td><td class=\"t %s\">%s</td>", m->quad.id,
                miss ? "miss" : "fp", miss ? "miss" : "false positive");
        term_cell(out, m->quad.aspect, m->aspect_outside);
        term_cell(out, m->quad.opinion, m->opinion_outside);
        term_cell(out, m->quad.category, 0);
        term_cell(out, m->quad.polarity, 0);
        fputs("<td class=\"t\">", out);
        te_html_esc(out, m->file);
        fprintf(out, ":%ld</td>", m->line);
        term_cell(out, m->review ? m->review : "", 0);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

void te_html_begin(FILE *out, const char *title)
{
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"zh\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<title>tianchi-eval report</title>\n<style>%s</style>\n</head>\n<body>\n"
                 "<h1>%s</h1>\n", style, title);
}

void te_html_end(FILE *out)
{
    fprintf(out, "<p class=\"note\">tianchi-eval %s</p>\n</body>\n</html>\n", TE_VERSION);
}

/* The sweep of --sweep at its default thresholds: its figures are those
 * `--sweep --json` prints. Where there is none, one line says why. */
static void confidence(const te_result *res, FILE *out)
{
    fputs("<h2>Confidence</h2>\n", out);
    const te_eval *ev = te_result_eval(res);
    if (!ev) {
        fputs("<p class=\"note\">gold or predictions were added after scoring: no sweep</p>\n", out);
        return;
    }
    if (te_first_csv_prediction(ev)) {
        fputs("<p class=\"note\">no record confidences in PRED (a CSV submission): no sweep</p>\n",
              out);
        return;
    }
    te_error err = {TE_OK, "the sweep failed"};
    te_sweep *sw = te_eval_sweep(ev, NULL, 0, &err);
    if (sw)
        fputs("<p>The records kept at each threshold of their confidence, and the fraction "
              "correct by confidence: <code>--sweep</code> at its default thresholds.</p>\n", out);
    if (!sw || te_html_sweep(sw, out, 3, &err) != TE_OK) { /* the rest of the report stands */
        fputs("<p class=\"note\">no sweep: ", out);
        te_html_esc(out, err.message);
        fputs("</p>\n", out);
    }
    te_sweep_free(sw);
}

void te_html_result(const te_result *res, FILE *out, int with_confidence)
{
    inputs(res, out);
    overall(res, out);
    fputs("<h2>F1 per category</h2>\n", out);
    chart(res, out, TE_AXIS_CATEGORY);
    fputs("<h2>F1 per polarity</h2>\n", out);
    chart(res, out, TE_AXIS_POLARITY);
    if (with_confidence)
        confidence(res, out);
    fputs("<h2>Categories</h2>\n", out);
    labels(res, out, TE_AXIS_CATEGORY);
    fputs("<h2>Polarities</h2>\n", out);
    labels(res, out, TE_AXIS_POLARITY);
    if (te_result_has_unknown_labels(res)) /* only when a row has the asterisk */
        fputs("<p>* not a label of the task.</p>\n", out);
    fputs("<h2>Spans</h2>\n", out);
    spans(res, out);
    fputs("<h2>Checks of the submission</h2>\n", out);
    issues(res, out);
    fputs("<h2>Errors</h2>\n", out);
    mismatches(res, out);
}

te_status te_result_write_html(const te_result *res, FILE *out, te_error *err)
{
    if (!res || !out)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no result or no stream");
    te_html_begin(out, "Tianchi opinion mining: evaluation");
    te_html_result(res, out, 1);
    te_html_end(out);
    if (ferror(out))
        return te_fail(err, TE_ERR_IO, NULL, 0, "cannot write the HTML report");
    return TE_OK;
}

te_status te_html_save(const char *path, te_html_writer writer, const void *obj, te_error *err)
{
    if (!path)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no path");
    FILE *out = fopen(path, "w");
    if (!out)
        return te_fail(err, TE_ERR_IO, path, 0, "cannot write: %s", strerror(errno));
    te_status st = writer(obj, out, err);
    if (fclose(out) != 0 && st == TE_OK)
        st = te_fail(err, TE_ERR_IO, path, 0, "cannot write: %s", strerror(errno));
    else if (st == TE_ERR_IO)
        st = te_fail(err, TE_ERR_IO, path, 0, "cannot write the HTML report");
    return st;
}

static te_status write_result(const void *res, FILE *out, te_error *err)
{
    return te_result_write_html(res, out, err);
}

te_status te_result_save_html(const te_result *res, const char *path, te_error *err)
{
    return te_html_save(path, write_result, res, err);
}
