/* svg.c - the charts of the HTML reports as inline SVG: no script, no outside
 * asset. Every figure a chart draws is also written as text (a <title> on each
 * mark, value and tick labels), so that a screen reader, a search of the page
 * and the tests read the numbers the chart shows. Values that are not finite
 * are left out; a chart left with nothing to draw says "no data", so a page of
 * degenerate input is still well-formed. */
#include "te_internal.h"

#include <math.h>

/* Geometry of the bar charts, in SVG user units. */
#define BAR_LABEL_W 150
#define BAR_W 440
#define BAR_VALUE_W 200
#define BAR_ROW_H 24
#define BAR_TOP 24
/* The frame of the [0, 1] x [0, 1] plots. */
#define PLOT_LEFT 60
#define PLOT_TOP 16
#define PLOT_W 440
#define PLOT_H 260
#define PLOT_LEGEND_W 200
#define PLOT_BOTTOM 48
/* The stacked bars: the legend's rows above them. */
#define STACK_LEGEND_H 20

/* Colours that stay apart for the common kinds of colour blindness (Okabe-Ito). */
static const char *const palette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                      "#56b4e9", "#d55e00", "#f0e442", "#000000"};
#define N_PALETTE (sizeof palette / sizeof palette[0])
/* The text that reads on each colour of the palette. */
static const char *const ink[N_PALETTE] = {"#fff", "#000", "#fff", "#000",
                                           "#000", "#fff", "#000", "#fff"};

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

static void svg_open(FILE *out, int width, int height, const char *title)
{
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\">\n<title>", width, height, width, height);
    te_html_esc(out, title);
    fputs("</title>\n", out);
}

static void no_data(FILE *out, int x, int y)
{
    fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"#777\">no data</text>\n", x, y);
}

/* A mark's tooltip: "<title>label: text</title>", the label escaped. */
static void mark_title(FILE *out, const char *label, const char *text)
{
    fputs("<title>", out);
    te_html_esc(out, label);
    fputs(": ", out);
    te_html_esc(out, text);
    fputs("</title>", out);
}

/* --------------------------------------------------------- horizontal bars */

void te_svg_score_tip(te_svg_bar *bar, te_score s)
{
    snprintf(bar->tip, sizeof bar->tip, "S %ld, P %ld, G %ld, precision %.4f, recall %.4f, F1 %.4f",
             s.matched, s.predicted, s.gold, s.precision, s.recall, s.f1);
}

void te_svg_hbars(FILE *out, const char *title, const te_svg_bar *bars, size_t n)
{
    int width = BAR_LABEL_W + BAR_W + BAR_VALUE_W;
    int height = BAR_TOP + (int)(n ? n : 1) * BAR_ROW_H + 8;
    svg_open(out, width, height, title);
    if (!n)
        no_data(out, BAR_LABEL_W, BAR_TOP + BAR_ROW_H - 8);
    for (size_t i = 0; i < n; i++) {
        const te_svg_bar *b = &bars[i];
        int y = BAR_TOP + (int)i * BAR_ROW_H;
        int empty = b->empty || !isfinite(b->value);
        double v = empty ? 0 : clamp01(b->value);
        fputs("<g>", out);
        mark_title(out, b->label, b->tip);
        fprintf(out, "\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", BAR_LABEL_W - 8,
                y + BAR_ROW_H - 8);
        te_html_esc(out, b->label);
        te_html_esc(out, b->mark);
        fprintf(out, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>",
                BAR_LABEL_W, y + 3, BAR_W, BAR_ROW_H - 6);
        /* Hue from red (0) to green (1): a bad label stands out before its number is read. */
        if (!empty)
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                         "fill=\"hsl(%d,65%%,45%%)\"/>",
                    BAR_LABEL_W, y + 3, v * BAR_W, BAR_ROW_H - 6, (int)(v * 120 + 0.5));
        fprintf(out, "<text x=\"%d\" y=\"%d\">", BAR_LABEL_W + BAR_W + 8, y + BAR_ROW_H - 8);
        te_html_esc(out, empty ? "no data" : b->text);
        fputs("</text></g>\n", out);
    }
    /* Grid last, translucent, so that it shows over the bars. */
    for (int t = 0; t <= 4; t++) {
        int x = BAR_LABEL_W + BAR_W * t / 4;
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\" "
                     "stroke-opacity=\"0.15\"/><text x=\"%d\" y=\"16\" text-anchor=\"middle\" "
                     "fill=\"#777\">%.2f</text>\n",
                x, BAR_TOP - 4, x, height - 8, x, t / 4.0);
    }
    fputs("</svg>\n", out);
}

/* ------------------------------------------------------------ stacked bars */

void te_svg_stacked(FILE *out, const char *title, const char *const *parts, size_t n_parts,
                    const char *const *rows, const long *counts, size_t n_rows)
{
    long max = 0;
    for (size_t r = 0; r < n_rows; r++) {
        long total = 0;
        for (size_t p = 0; p < n_parts; p++)
            total += counts[r * n_parts + p] > 0 ? counts[r * n_parts + p] : 0;
        max = total > max ? total : max;
    }
    int legend_rows = (int)((n_parts + 3) / 4);
    int top = legend_rows * STACK_LEGEND_H + 8;
    int width = BAR_LABEL_W + BAR_W + BAR_VALUE_W;
    int height = top + (int)(n_rows ? n_rows : 1) * BAR_ROW_H + 8;
    svg_open(out, width, height, title);
    for (size_t p = 0; p < n_parts; p++) {
        int x = BAR_LABEL_W + (int)(p % 4) * 150, y = (int)(p / 4) * STACK_LEGEND_H + 4;
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                     "<text x=\"%d\" y=\"%d\">", x, y, palette[p % N_PALETTE], x + 16, y + 11);
        te_html_esc(out, parts[p]);
        fputs("</text>\n", out);
    }
    if (!n_rows)
        no_data(out, BAR_LABEL_W, top + BAR_ROW_H - 8);
    for (size_t r = 0; r < n_rows; r++) {
        int y = top + (int)r * BAR_ROW_H;
        double x = BAR_LABEL_W;
        long total = 0;
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", BAR_LABEL_W - 8,
                y + BAR_ROW_H - 8);
        te_html_esc(out, rows[r]);
        fputs("</text>\n", out);
        for (size_t p = 0; p < n_parts; p++) {
            long c = counts[r * n_parts + p];
            if (c <= 0) /* nothing to draw; a negative count is one a row never has */
                continue;
            double w = (double)c / (double)max * BAR_W;
            fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">",
                    x, y + 3, w, BAR_ROW_H - 6, palette[p % N_PALETTE]);
            char text[32];
            snprintf(text, sizeof text, "%s %ld", parts[p], c);
            mark_title(out, rows[r], text);
            fputs("</rect>\n", out);
            if (w >= 22) /* the count inside its part where it fits */
                fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%ld</text>\n",
                        x + w / 2, y + BAR_ROW_H - 8, ink[p % N_PALETTE], c);
            x += w;
            total += c;
        }
        fprintf(out, "<text x=\"%.1f\" y=\"%d\">%ld</text>\n", x + 6, y + BAR_ROW_H - 8, total);
    }
    fputs("</svg>\n", out);
}

/* --------------------------------------------------------------- interval */

void te_svg_interval(FILE *out, const char *title, const char *label, double diff, double low,
                     double high)
{
    int width = BAR_LABEL_W + BAR_W + BAR_VALUE_W, height = 64, y = 30;
    svg_open(out, width, height, title);
    if (!isfinite(diff) || !isfinite(low) || !isfinite(high)) {
        no_data(out, BAR_LABEL_W, y);
        fputs("</svg>\n", out);
        return;
    }
    /* A symmetric axis around 0 to the next 0.05 past the farthest end, so
     * that whether the interval holds 0 is seen at a glance. */
    double far = fmax(fabs(diff), fmax(fabs(low), fabs(high)));
    double half = fmax(0.05, ceil(far / 0.05 - 1e-9) * 0.05);
    double mid = BAR_LABEL_W + BAR_W / 2.0, k = BAR_W / (2 * half);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", BAR_LABEL_W - 8, y + 4);
    te_html_esc(out, label);
    fputs("</text>\n", out);
    for (int t = -2; t <= 2; t++) {
        double x = mid + t * BAR_W / 4.0;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" "
                     "stroke-opacity=\"%s\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
                     "fill=\"#777\">%+.3f</text>\n",
                x, y - 14, x, y + 14, t ? "0.15" : "0.6", x, y + 28, t * half / 2);
    }
    char text[96];
    snprintf(text, sizeof text, "%+.4f, 95%% interval [%+.4f, %+.4f]", diff, low, high);
    fprintf(out, "<g><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
                 "stroke-width=\"3\"/><circle cx=\"%.1f\" cy=\"%d\" r=\"5\" fill=\"%s\"/>",
            mid + low * k, y, mid + high * k, y, palette[0], mid + diff * k, y, palette[5]);
    mark_title(out, label, text);
    fprintf(out, "</g>\n<text x=\"%d\" y=\"%d\">%+.4f [%+.4f, %+.4f]</text>\n",
            BAR_LABEL_W + BAR_W + 8, y + 4, diff, low, high);
    fputs("</svg>\n", out);
}

/* ------------------------------------------------------------------ plots */

static double plot_x(double v)
{
    return PLOT_LEFT + clamp01(v) * PLOT_W;
}

static double plot_y(double v)
{
    return PLOT_TOP + (1 - clamp01(v)) * PLOT_H;
}

/* The frame of a [0, 1] x [0, 1] plot: grid, ticks, axis labels; the
 * reference diagonal y = x when one is named. */
static void plot_open(FILE *out, const te_svg_plot *p)
{
    svg_open(out, PLOT_LEFT + PLOT_W + PLOT_LEGEND_W, PLOT_TOP + PLOT_H + PLOT_BOTTOM, p->title);
    for (int t = 0; t <= 5; t++) {
        double v = t / 5.0;
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" "
                     "stroke-opacity=\"0.12\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
                     "fill=\"#777\">%.1f</text>\n",
                PLOT_LEFT, plot_y(v), PLOT_LEFT + PLOT_W, plot_y(v), PLOT_LEFT - 6, plot_y(v) + 4, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" "
                     "stroke-opacity=\"0.12\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
                     "fill=\"#777\">%.1f</text>\n",
                plot_x(v), PLOT_TOP, plot_x(v), PLOT_TOP + PLOT_H, plot_x(v), PLOT_TOP + PLOT_H + 16, v);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", PLOT_LEFT + PLOT_W / 2,
            PLOT_TOP + PLOT_H + 38);
    te_html_esc(out, p->x_label);
    fprintf(out, "</text>\n<text transform=\"translate(16,%d) rotate(-90)\" text-anchor=\"middle\">",
            PLOT_TOP + PLOT_H / 2);
    te_html_esc(out, p->y_label);
    fputs("</text>\n", out);
    if (p->diagonal) {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\" "
                     "stroke-dasharray=\"4 4\"/>\n", plot_x(0), plot_y(0), plot_x(1), plot_y(1));
    }
}

/* One row of the legend, right of the plot. */
static void legend(FILE *out, int row, const char *colour, int dashed, const char *name)
{
    int x = PLOT_LEFT + PLOT_W + 16, y = PLOT_TOP + 8 + row * 20;
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                 "<text x=\"%d\" y=\"%d\">", x, y, x + 20, y, colour,
            dashed ? " stroke-dasharray=\"4 4\"" : "", x + 26, y + 4);
    te_html_esc(out, name);
    fputs("</text>\n", out);
}

void te_svg_lines(FILE *out, const te_svg_plot *p, const double *x, size_t n,
                  const te_svg_series *series, size_t n_series)
{
    plot_open(out, p);
    size_t drawn = 0;
    for (size_t s = 0; s < n_series; s++) {
        const char *colour = palette[s % N_PALETTE];
        legend(out, (int)s, colour, 0, series[s].name);
        /* The line breaks where a value is not finite. */
        fprintf(out, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"", colour);
        int pen = 0;
        for (size_t i = 0; i < n; i++) {
            int ok = isfinite(x[i]) && isfinite(series[s].y[i]);
            if (ok)
                fprintf(out, "%c%.1f %.1f ", pen ? 'L' : 'M', plot_x(x[i]), plot_y(series[s].y[i]));
            pen = ok;
        }
        fputs("\"/>\n", out);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(x[i]) || !isfinite(series[s].y[i]))
                continue;
            char text[96];
            snprintf(text, sizeof text, "%s %.2f: %.4f", p->x_label, x[i], series[s].y[i]);
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">", plot_x(x[i]),
                    plot_y(series[s].y[i]), colour);
            mark_title(out, series[s].name, text);
            fputs("</circle>\n", out);
            drawn++;
        }
    }
    if (!drawn)
        no_data(out, PLOT_LEFT + 12, PLOT_TOP + 20);
    fputs("</svg>\n", out);
}

void te_svg_columns(FILE *out, const te_svg_plot *p, const te_svg_column *cols, size_t n)
{
    plot_open(out, p);
    size_t drawn = 0;
    legend(out, 0, palette[0], 0, p->y_label);
    if (p->diagonal)
        legend(out, 1, "#777", 1, p->diagonal);
    for (size_t i = 0; i < n; i++) {
        const te_svg_column *c = &cols[i];
        if (c->count <= 0 || !isfinite(c->value) || !isfinite(c->low) || !isfinite(c->high))
            continue; /* an empty bin has no fraction to draw */
        double x0 = plot_x(c->low), x1 = plot_x(c->high), y = plot_y(c->value);
        fprintf(out, "<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                     "fill-opacity=\"0.75\" stroke=\"#fff\"/>",
                x0, y, x1 - x0, plot_y(0) - y, palette[0]);
        mark_title(out, c->label, c->tip);
        /* The bin's count above it: a tall bar of three predictions says little. */
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#333\">%ld</text></g>\n",
                (x0 + x1) / 2, y - 4, c->count);
        drawn++;
    }
    if (!drawn)
        no_data(out, PLOT_LEFT + 12, PLOT_TOP + 20);
    fputs("</svg>\n", out);
}
