/* te_internal.h - what the files of tianchi-eval share and callers never see. */
#ifndef TE_INTERNAL_H
#define TE_INTERNAL_H

#include "tianchi_eval.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>

#define TE_MEMORY_NAME "<memory>"
#define TE_PLACEHOLDER "_"

/* ------------------------------------------------------------------ errors */

/* Fill err (if not NULL) with "file:line: message" (": line" left out when
 * line <= 0, "file: " left out when file is NULL) and return code. */
te_status te_fail(te_error *err, te_status code, const char *file, long line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Copy at most max bytes of s (cut on a character boundary, "..." added when
 * cut) into buf, for quoting input in messages. */
const char *te_snippet(const char *s, size_t len, char *buf, size_t bufsize, size_t max);

/* ------------------------------------------------------------------ memory */

/* A string pool: many small strings freed at once. */
typedef struct te_pool_block te_pool_block;
typedef struct te_pool {
    te_pool_block *head;
} te_pool;

/* A NUL-terminated copy of s[0..len) that lives as long as the pool, or NULL. */
char *te_pool_strndup(te_pool *pool, const char *s, size_t len);
char *te_pool_printf(te_pool *pool, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void te_pool_free(te_pool *pool);

/* Make room for need elements of size elem in *ptr (capacity *cap): doubles,
 * checks for overflow. Returns 0, or -1 when out of memory (*ptr unchanged). */
int te_grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* ------------------------------------------------------------------- UTF-8 */

/* Length of the longest valid UTF-8 prefix of s[0..len) (strict: no
 * overlongs, no surrogates, nothing past U+10FFFF). */
size_t te_utf8_valid_prefix(const char *s, size_t len);

/* Decode one character of valid UTF-8 at s; returns its byte length. */
size_t te_utf8_next(const char *s, uint32_t *cp);

/* Columns a valid UTF-8 string takes in a terminal (CJK counts 2). */
size_t te_display_width(const char *s);

/* -------------------------------------------------------------------- CSV */

/* The reader and its rule: te_csv.h. */
#include "te_csv.h"

/* Read a whole file ("-" for stdin) into *data (malloc'ed, *len bytes, a NUL
 * appended for convenience). */
te_status te_read_file(const char *path, char **data, size_t *len, te_error *err);

/* ---------------------------------------------------------------- the data */

/* Field indexes of a quadruple. */
enum { TE_ASPECT = 0, TE_OPINION = 1, TE_CATEGORY = 2, TE_POLARITY = 3, TE_N_FIELDS = 4 };

/* One row of gold or predictions as loaded. */
typedef struct te_row {
    long id;
    const char *f[TE_N_FIELDS]; /* pooled strings */
    const char *file;           /* pooled */
    long line;
    long a_start, a_end, o_start, o_end; /* gold character offsets, -1 when blank */
    int placeholder;                     /* all four fields are `_` */
    int jsonl;         /* from a JSONL file: a record, or the placeholder of a line without one */
    int labels;        /* from a JSONL line with the review's "text": a labels file's */
    double confidence; /* a JSONL record's "confidence", -1 when it has none */
} te_row;

typedef struct te_review {
    long id;
    const char *text;
    const char *file;
    long line;
    size_t seq; /* order of arrival, to undo a failed load */
} te_review;

/* A finding of the loaders, turned into an issue by the scorer. */
typedef struct te_note {
    te_issue_kind kind;
    te_input input;
    const char *file;
    long line;
} te_note;

typedef struct te_rows {
    te_row *v;
    size_t n, cap;
} te_rows;

struct te_eval {
    te_pool pool;
    te_rows rows[2]; /* TE_INPUT_GOLD, TE_INPUT_PREDICTIONS */
    te_review *reviews;
    size_t n_reviews, cap_reviews; /* sorted by id between calls */
    size_t next_seq;
    te_note *notes;
    size_t n_notes, cap_notes;
    const char *last_file[TE_N_INPUTS];
    long n_added[TE_N_INPUTS]; /* rows added in memory, for their "line" */
    const char *jsonl_fields[TE_N_FIELDS]; /* JSONL names of the four fields (pooled) */
};

/* Append a row of gold or predictions (strings pooled; offsets -1 when
 * unknown); the new row is ev->rows[kind].v[ev->rows[kind].n - 1]. */
te_status te_eval_add_row(te_eval *ev, te_input kind, long id, const char *const f[TE_N_FIELDS],
                          const long offsets[4], const char *file, long line, te_error *err);
/* Record a loader's finding (a BOM, a header row) for the checks. */
te_status te_eval_add_note(te_eval *ev, te_issue_kind kind, te_input input, const char *file,
                           long line, te_error *err);
/* A non-negative decimal integer, blanks around it allowed. 0 on success, -1
 * when not an integer, -2 when too large. */
int te_parse_id(const char *s, size_t len, long *out);

/* --------------------------------------------------------------- JSONL */

/* Whether predictions are pocketdec's JSONL output: the first byte that is
 * not a blank or a line break (after a BOM) is '{'. A CSV submission starts
 * with an id, so it never does. */
int te_is_jsonl(const char *data, size_t len);
/* Add the records of JSONL text (extraction output or a labels file) as rows of
 * kind (TE_INPUT_GOLD or TE_INPUT_PREDICTIONS) (predictions_jsonl.c); on failure
 * the caller rolls back. */
te_status te_jsonl_parse(te_eval *ev, te_input kind, const char *file, const char *data,
                         size_t len, te_error *err);

/* ------------------------------------------------------------- matching */

/* Match the predictions kept (keep[i] for row i of the predictions, NULL keeps
 * all; placeholders never match) one to one against gold, as the metric does.
 * pred_matched (one byte a prediction row) gets 1 for each matched row, and
 * gold_matched likewise when not NULL. Returns S, or -1 when out of memory. */
long te_match_rows(const te_eval *ev, const unsigned char *keep, unsigned char *pred_matched,
                   unsigned char *gold_matched);

/* The class of each mismatch (taxonomy.c): rows[i] is the row of mm[i]. */
int te_classify(const te_eval *ev, const te_mismatch *mm, const te_row *const *rows, size_t n,
                te_error_class *out);

/* Reviews by id, or NULL. */
const te_review *te_find_review(const te_eval *ev, long id);

/* The plain score a sweep holds (compare.c). */
const te_result *te_sweep_result(const te_sweep *sw);
/* The first prediction row of a CSV submission (or added in memory), which
 * has no confidence: te_eval_sweep refuses such predictions. NULL when every
 * row is from JSONL. */
const te_row *te_first_csv_prediction(const te_eval *ev);
/* The evaluator a result was scored from, or NULL when gold or predictions
 * were added to it since (score.c). */
const te_eval *te_result_eval(const te_result *res);

/* ---------------------------------------------------------------- reports */

/* Rows of the score tables (report.c), for the other reports. */
void te_table_score_header(FILE *out, const char *title, size_t width);
void te_table_score_row(FILE *out, const char *label, size_t width, te_score s);

/* JSON pieces (report.c). A failed allocation sets *bad; te_json_finish
 * dumps root (and frees it) into a malloc'ed string, or NULL. */
void te_json_put(json_t *obj, const char *key, json_t *value, int *bad);
void te_json_push(json_t *arr, json_t *value, int *bad);
json_t *te_json_score(te_score s, int *bad);
json_t *te_json_inputs(const te_result *res, int *bad);
json_t *te_json_mismatch(const te_mismatch *m, int *bad);
char *te_json_finish(json_t *root, int bad, te_error *err);

/* ------------------------------------------------------------------ HTML */

void te_html_esc(FILE *out, const char *s);
/* The page's start (doctype, style, <h1>title</h1>) and end. */
void te_html_begin(FILE *out, const char *title);
void te_html_end(FILE *out);
/* A result's sections (inputs, scores, charts, tables, checks, errors); if
 * with_confidence, a "Confidence" section after the per-label charts: the
 * sweep of its predictions at the default thresholds, or one line saying why
 * there is none (html.c). */
void te_html_result(const te_result *res, FILE *out, int with_confidence);
/* A sweep's charts and tables under <hN> headings of the given level
 * (compare_report.c). Fails only when out of memory, having written the first
 * heading. */
te_status te_html_sweep(const te_sweep *sw, FILE *out, int level, te_error *err);
/* Write a page to path with writer(obj, out, err), naming path in errors. */
typedef te_status (*te_html_writer)(const void *obj, FILE *out, te_error *err);
te_status te_html_save(const char *path, te_html_writer writer, const void *obj, te_error *err);

/* Inline SVG charts (svg.c). Texts from the inputs are escaped there; values
 * that are not finite are left out, and a chart with nothing to draw says
 * "no data". */
typedef struct te_svg_bar {
    const char *label; /* the row's name */
    const char *mark;  /* appended to the label (" *" for a label outside the task's set), or "" */
    double value;      /* the bar's length, in [0, 1] */
    int empty;         /* nothing to draw: "no data" in place of bar and text */
    char text[64];     /* the value shown after the bar */
    char tip[160];     /* the figures of the row's <title>, after "label: " */
} te_svg_bar;
/* The tip of a bar of scores: "S 3, P 4, G 5, precision ..., recall ..., F1 ...". */
void te_svg_score_tip(te_svg_bar *bar, te_score s);
void te_svg_hbars(FILE *out, const char *title, const te_svg_bar *bars, size_t n);
/* Horizontal bars of counts[r * n_parts + p] stacked by part, one a row, the
 * longest total full width; a count <= 0 draws nothing. */
void te_svg_stacked(FILE *out, const char *title, const char *const *parts, size_t n_parts,
                    const char *const *rows, const long *counts, size_t n_rows);
/* A difference with its interval on an axis symmetric around 0. */
void te_svg_interval(FILE *out, const char *title, const char *label, double diff, double low,
                     double high);
/* A plot of [0, 1] x [0, 1]; diagonal names the dashed line y = x, or NULL. */
typedef struct te_svg_plot {
    const char *title, *x_label, *y_label, *diagonal;
} te_svg_plot;
typedef struct te_svg_series {
    const char *name;
    const double *y; /* one a point of x */
} te_svg_series;
void te_svg_lines(FILE *out, const te_svg_plot *p, const double *x, size_t n,
                  const te_svg_series *series, size_t n_series);
/* Columns over [low, high) of height value, the count above each; those of
 * count 0 are left out. */
typedef struct te_svg_column {
    double low, high, value;
    long count;
    char label[32]; /* the bin, for the <title> */
    char tip[96];
} te_svg_column;
void te_svg_columns(FILE *out, const te_svg_plot *p, const te_svg_column *cols, size_t n);

/* The task's label sets. */
extern const char *const te_categories[];
extern const size_t te_n_categories;
extern const char *const te_polarities[];
extern const size_t te_n_polarities;
/* Index of label in the set of the axis, or -1. */
int te_label_index(te_axis axis, const char *label);
/* Whether a result holds a label outside the task's sets (marked "*" in the
 * table and the HTML report, with a footnote only then). */
int te_result_has_unknown_labels(const te_result *res);

#endif /* TE_INTERNAL_H */
