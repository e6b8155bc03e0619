/* html.c - the summary as one self-contained HTML page: tables, a chart of
 * estimates with their intervals (inline SVG), the complaints page, the
 * groups and their trend; nothing asked of any other host. */
#include "pds_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    char *s;
    size_t n, cap;
    bool oom;
} out;

static void add(out *o, const char *s, size_t n)
{
    if (o->oom || pds_grow((void **)&o->s, &o->cap, o->n + n + 1, 1)) {
        o->oom = true;
        return;
    }
    memcpy(o->s + o->n, s, n);
    o->n += n;
    o->s[o->n] = 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void addf(out *o, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) add(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Text escaped for HTML, n bytes of it. */
/* A string literal, its length known at compile time. */
#define lit(o, s) add(o, s, sizeof(s) - 1)

static void esc_n(out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *r = s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;" : s[i] == '&' ? "&amp;" : s[i] == '"' ? "&quot;" : NULL;
        if (r) add(o, r, strlen(r));
        else add(o, &s[i], 1);
    }
}

static void esc(out *o, const char *s)
{
    esc_n(o, s ? s : "", s ? strlen(s) : 0);
}

static const char *str(const json_t *e, const char *key)
{
    const char *s = json_string_value(json_object_get(e, key));
    return s ? s : "";
}

static double num(const json_t *e, const char *key)
{
    return json_number_value(json_object_get(e, key));
}

/* A number as the JSON has it: an integer plainly, else 2 decimals; "-" for null. */
static void number(out *o, const json_t *e, const char *key)
{
    json_t *v = json_object_get(e, key);
    if (json_is_integer(v)) addf(o, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) addf(o, "%.2f", json_real_value(v));
    else lit(o, "-");
}

/* The byte offset of code point cp in s (its length when past the end). */
static size_t byte_of(const char *s, long cp)
{
    size_t i = 0;
    for (long k = 0; s[i] && k < cp; k++)
        do i++;
        while ((s[i] & 0xC0) == 0x80);
    return i;
}

/* An example: its text with the cell's spans in <mark>. */
static void example(out *o, const json_t *ex)
{
    const char *text = str(ex, "text");
    addf(o, "<li><span class=\"id\">");
    esc(o, str(ex, "id"));
    lit(o, "</span> ");
    /* the marks by start; one that overlaps the one before is shown unmarked */
    json_t *marks = json_object_get(ex, "marks");
    size_t n = json_array_size(marks), order[64], k = 0, at = 0;
    for (size_t i = 0; i < n && k < 64; i++) {
        size_t j = k++;
        for (; j > 0 && num(json_array_get(marks, order[j - 1]), "start") > num(json_array_get(marks, i), "start"); j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (size_t i = 0; i < k; i++) {
        json_t *m = json_array_get(marks, order[i]);
        size_t a = byte_of(text, (long)num(m, "start")), b = byte_of(text, (long)num(m, "end"));
        if (a < at || b <= a) continue;
        esc_n(o, text + at, a - at);
        addf(o, "<mark class=\"%s\">", strcmp(str(m, "field"), "aspect") ? "opinion" : "aspect");
        esc_n(o, text + a, b - a);
        lit(o, "</mark>");
        at = b;
    }
    esc(o, text + at);
    lit(o, "</li>");
}

static void top_list(out *o, const json_t *list)
{
    json_t *t;
    size_t i;
    json_array_foreach(list, i, t) {
        addf(o, "%s", i ? ", " : "");
        esc(o, str(t, "value"));
        addf(o, " (%lld)", (long long)json_integer_value(json_object_get(t, "count")));
    }
}

static const char *const entry_columns = "<tr><th>category</th><th>polarity</th><th>records</th><th>reviews</th>"
                                         "<th>share</th><th>estimate</th><th>90% interval</th><th>support</th>"
                                         "<th>rates</th></tr>";

/* An entry as a table row; its cells carry their JSON key (data-key). A
 * cell's row (anchor "cell-K") links to its examples, and its count of
 * reviews to all of them when the JSON lists them ("reviews-K"). */
static void entry_row(out *o, const json_t *e, const char *anchor)
{
    bool listed = anchor && json_is_array(json_object_get(e, "listed"));
    lit(o, "<tr class=\"entry\"><td data-key=\"category\">");
    if (anchor) addf(o, "<a href=\"#%s\">", anchor);
    esc(o, json_object_get(e, "category") ? str(e, "category") : "(all)");
    if (anchor) lit(o, "</a>");
    lit(o, "</td><td data-key=\"polarity\">");
    esc(o, str(e, "polarity"));
    static const char *const keys[] = {"records", "reviews", "share", "estimate", NULL};
    for (int k = 0; keys[k]; k++) {
        addf(o, "</td><td class=\"num\" data-key=\"%s\">", keys[k]);
        bool link = listed && strcmp(keys[k], "reviews") == 0;
        if (link) addf(o, "<a class=\"all\" href=\"#reviews-%s\">", anchor + strlen("cell-"));
        number(o, e, keys[k]);
        if (link) lit(o, "</a>");
    }
    lit(o, "</td><td class=\"num\"><span data-key=\"low\">");
    number(o, e, "low");
    lit(o, "</span> - <span data-key=\"high\">");
    number(o, e, "high");
    lit(o, "</span></td><td class=\"num\" data-key=\"support\">");
    number(o, e, "support");
    lit(o, "</td><td data-key=\"rates\">");
    esc(o, str(e, "rates"));
    lit(o, "</td></tr>\n");
}

/* Bars of the cells' estimates (raw count darker inside) with their 90%
 * intervals as whiskers. */
static void chart(out *o, const json_t *cells, int max_rows)
{
    size_t n = json_array_size(cells) < (size_t)max_rows ? json_array_size(cells) : (size_t)max_rows;
    double top = 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(cells, i);
        double h = json_is_number(json_object_get(e, "high")) ? num(e, "high") : num(e, "estimate");
        top = fmax(top, fmax(h, num(e, "records")));
    }
    const int row = 22, left = 150, width = 420;
    addf(o, "<svg class=\"chart\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\" role=\"img\">", left + width + 80,
         n * row + 10, left + width + 80, n * row + 10);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(cells, i);
        double y = (double)i * row + 5, x = (double)left, k = width / top;
        bool neg = strcmp(str(e, "polarity"), "负面") == 0;
        lit(o, "<g class=\"bar\"><text x=\"0\" y=\"");
        addf(o, "%.1f\" font-size=\"12\">", y + 14);
        esc(o, str(e, "category"));
        lit(o, "/");
        esc(o, str(e, "polarity"));
        addf(o, "</text><rect class=\"estimate\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>", x, y,
             num(e, "estimate") * k, neg ? "#e6a0a0" : "#a0c4e6");
        addf(o, "<rect class=\"raw\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>", x, y + 4,
             num(e, "records") * k, neg ? "#b03030" : "#3070b0");
        if (json_is_number(json_object_get(e, "high")))
            addf(o, "<line class=\"interval\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>",
                 x + num(e, "low") * k, x + num(e, "high") * k, y + 8, y + 8);
        addf(o, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + width + 6, y + 13);
        number(o, e, "estimate");
        lit(o, "</text></g>");
    }
    lit(o, "</svg>\n");
}

/* Lines of each polarity's share of reviews over the groups (periods). */
static void trend(out *o, const json_t *groups)
{
    size_t n = json_array_size(groups);
    static const char *const pols[3] = {"负面", "正面", "中性"}, *const colors[3] = {"#b03030", "#3070b0", "#888"};
    const int w = 560, h = 160;
    addf(o, "<svg class=\"trend\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">", w + 60, h + 30,
         w + 60, h + 30);
    for (int p = 0; p < 3; p++) {
        lit(o, "<polyline class=\"line\" fill=\"none\" stroke-width=\"2\" points=\"");
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_object_get(json_object_get(json_array_get(groups, i), "polarity"), pols[p]);
            double share = e ? num(e, "share") : 0;
            addf(o, "%.1f,%.1f ", 30 + (n > 1 ? (double)i * w / (double)(n - 1) : 0), 10 + h * (1 - share));
        }
        addf(o, "\" stroke=\"%s\"><title>%s</title></polyline>", colors[p], pols[p]);
    }
    json_t *g;
    size_t i;
    json_array_foreach(groups, i, g) {
        addf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">", 30 + (n > 1 ? (double)i * w / (double)(n - 1) : 0),
             h + 25);
        esc(o, str(g, "group"));
        lit(o, "</text>");
    }
    lit(o, "</svg>\n");
}

static void cell_section(out *o, const json_t *e, int k)
{
    addf(o, "<section class=\"cell\" id=\"cell-%d\"><h3>", k);
    esc(o, str(e, "category"));
    lit(o, " / ");
    esc(o, str(e, "polarity"));
    lit(o, "</h3><p>aspects: ");
    top_list(o, json_object_get(e, "top_aspects"));
    lit(o, "</p><p>opinions: ");
    top_list(o, json_object_get(e, "top_opinions"));
    lit(o, "</p><ul class=\"examples\">");
    json_t *x, *listed = json_object_get(e, "listed");
    size_t i;
    json_array_foreach(json_object_get(e, "examples"), i, x) example(o, x);
    lit(o, "</ul>");
    if (json_is_array(listed))
        addf(o, "<p><a class=\"all\" href=\"#reviews-%d\">all %zu reviews</a></p>", k, json_array_size(listed));
    lit(o, "</section>\n");
}

/* A cell's listed reviews: a section hidden until its link opens it. */
static void listed_section(out *o, const json_t *e, int k)
{
    json_t *x, *listed = json_object_get(e, "listed");
    size_t i;
    if (!json_is_array(listed)) return;
    addf(o, "<section class=\"listed\" id=\"reviews-%d\"><h3>", k);
    esc(o, str(e, "category"));
    lit(o, " / ");
    esc(o, str(e, "polarity"));
    addf(o, ": %zu reviews</h3><ul class=\"listed\">", json_array_size(listed));
    json_array_foreach(listed, i, x) example(o, x);
    lit(o, "</ul></section>\n");
}

static void polarity_table(out *o, const json_t *s)
{
    const char *key;
    json_t *e;
    lit(o, "<table class=\"polarity\">");
    add(o, entry_columns, strlen(entry_columns));
    json_object_foreach(json_object_get(s, "polarity"), key, e) entry_row(o, e, NULL);
    lit(o, "</table>\n");
}

char *pds_summary_html(const json_t *s, const char *title)
{
    out o = {0};
    lit(&o, "<!DOCTYPE html>\n<html lang=\"zh\"><head><meta charset=\"utf-8\"><title>");
    esc(&o, title);
    lit(&o, "</title><style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse;"
            "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}td.num{text-align:right}"
            "mark.aspect{background:#cde}mark.opinion{background:#fd9}.id{color:#888}"
            "section.listed{display:none}section.listed:target{display:block}</style></head><body>\n");
    lit(&o, "<h1>");
    esc(&o, title);
    addf(&o, "</h1><p id=\"totals\"><span data-key=\"reviews\">%lld</span> reviews, <span data-key=\"records\">%lld"
             "</span> records. Estimates: counts corrected by the model's measured precision and recall, with 90%% "
             "intervals (docs/summarize.md).</p>\n",
         (long long)json_integer_value(json_object_get(s, "reviews")),
         (long long)json_integer_value(json_object_get(s, "records")));
    lit(&o, "<h2>By polarity</h2>\n");
    polarity_table(&o, s);
    json_t *cells = json_object_get(s, "cells"), *e;
    size_t i;
    lit(&o, "<h2>By category and polarity</h2>\n");
    chart(&o, cells, 40);
    lit(&o, "<table class=\"cells\">");
    add(&o, entry_columns, strlen(entry_columns));
    json_array_foreach(cells, i, e) {
        char anchor[32];
        snprintf(anchor, sizeof anchor, "cell-%zu", i);
        entry_row(&o, e, anchor);
    }
    lit(&o, "</table>\n<h2 id=\"complaints\">Complaints</h2>\n");
    /* the negative cells by estimate: the cells list is by records; reorder */
    size_t n = json_array_size(cells), m = 0;
    size_t *neg = n ? malloc(n * sizeof *neg) : NULL;
    for (i = 0; neg && i < n; i++)
        if (strcmp(str(json_array_get(cells, i), "polarity"), "负面") == 0) {
            size_t j = m++;
            for (; j > 0 && num(json_array_get(cells, neg[j - 1]), "estimate") < num(json_array_get(cells, i), "estimate");
                 j--)
                neg[j] = neg[j - 1];
            neg[j] = i;
        }
    lit(&o, "<table class=\"complaints\">");
    add(&o, entry_columns, strlen(entry_columns));
    for (i = 0; i < m; i++) {
        char anchor[32];
        snprintf(anchor, sizeof anchor, "cell-%zu", neg[i]);
        entry_row(&o, json_array_get(cells, neg[i]), anchor);
    }
    lit(&o, "</table>\n");
    free(neg);
    if (n && !neg) o.oom = true;
    json_t *groups = json_object_get(s, "groups"), *by = json_object_get(s, "by");
    if (groups) {
        lit(&o, "<h2 id=\"groups\">By ");
        esc(&o, str(by, "column"));
        lit(&o, "</h2>\n");
        if (json_is_string(json_object_get(by, "period"))) trend(&o, groups);
        json_t *c;
        if (json_array_size(json_object_get(by, "changes"))) lit(&o, "<p>Largest changes of share, last two periods:</p><ul class=\"changes\">");
        json_array_foreach(json_object_get(by, "changes"), i, c) {
            lit(&o, "<li>");
            esc(&o, json_object_get(c, "category") ? str(c, "category") : "(all)");
            lit(&o, "/");
            esc(&o, str(c, "polarity"));
            addf(&o, ": %.1f%% to %.1f%%</li>", 100 * num(c, "before"), 100 * num(c, "after"));
        }
        if (json_array_size(json_object_get(by, "changes"))) lit(&o, "</ul>\n");
        json_array_foreach(groups, i, e) {
            lit(&o, "<h3 class=\"group\">");
            esc(&o, str(e, "group"));
            addf(&o, " (%lld reviews)</h3>", (long long)json_integer_value(json_object_get(e, "reviews")));
            polarity_table(&o, e);
        }
    }
    lit(&o, "<h2>Examples</h2>\n");
    json_array_foreach(cells, i, e) cell_section(&o, e, (int)i);
    json_array_foreach(cells, i, e) listed_section(&o, e, (int)i);
    lit(&o, "</body></html>\n");
    if (o.oom) {
        free(o.s);
        return NULL;
    }
    return o.s;
}
