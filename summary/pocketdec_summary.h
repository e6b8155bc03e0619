/* pocketdec_summary.h - a summary of a whole corpus of extracted records
 * (`pocketdec summarize`): for every polarity and every (category, polarity)
 * the records found, the reviews holding one, the most frequent aspects and
 * opinions, examples, and a count corrected for what the model misses and
 * invents, with a 90% interval (docs/summarize.md, "Honest counts").
 *
 * Part of libpocketdec, internal (its pds_* symbols hidden): the library's
 * one public way in is pd_summarize (pocketdec_summarize.h, summarize.c),
 * which reads the files; this header's calls hold the rule for counts,
 * estimates and intervals, in one place, for it, the command's other
 * outputs and the server.
 *
 *   - Memory does not grow with the number of reviews: a review is added and
 *     forgotten, except its cells' counts, the distinct aspect and opinion
 *     values (for the top lists) and a few examples a cell.
 *   - Summaries of partitions merge exactly (pds_summary_merge): the merged
 *     summary's JSON equals the one of a single pass over the partitions in
 *     order. Calibrations merge the same way.
 *   - Every call that can fail takes a pds_error * and returns non-zero (or
 *     NULL); the message names the file and line where they are known.
 *   - No global mutable state. */
#ifndef POCKETDEC_SUMMARY_H
#define POCKETDEC_SUMMARY_H

#include "pocketdec_summarize.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct pds_error {
    int code; /* 0 ok, else PDS_ERR_* */
    char message[512];
} pds_error;

enum { PDS_OK = 0, PDS_ERR_IO = 1, PDS_ERR_FORMAT = 2, PDS_ERR_MEMORY = 3, PDS_ERR_ARG = 4 };

/* One extracted (or gold) record: strings NUL-terminated, "_" or NULL for
 * none; spans in code points of the review, -1 when unknown. */
typedef struct pds_record {
    const char *aspect, *opinion, *category, *polarity;
    long a_start, a_end, o_start, o_end;
} pds_record;

/* ------------------------------------------------------------ calibration */

/* The model's measured rates: for every cell (and every polarity), over a set
 * of labelled reviews, the gold records G, the records the model wrote Pr,
 * the correct ones TP, and the per-review sums of squares that give the
 * rates' uncertainty (sum g_i^2, p_i^2, g_i p_i). */
typedef struct pds_calibration pds_calibration;

pds_calibration *pds_calibration_new(void);
void pds_calibration_free(pds_calibration *c);
/* One labelled review: its gold records and the records the model wrote for
 * it (a record is correct when aspect, opinion, category and polarity all
 * equal a gold record's, each gold record matched once). */
int pds_calibration_add(pds_calibration *c, const pds_record *gold, size_t n_gold, const pds_record *pred,
                        size_t n_pred, pds_error *err);
/* src's reviews added to dst (exact). */
int pds_calibration_merge(pds_calibration *dst, const pds_calibration *src, pds_error *err);
/* A calibration file (calibration.json, docs/summarize.md) and back; source
 * is a free text saying where the rates came from. */
pds_calibration *pds_calibration_load(const char *path, pds_error *err);
json_t *pds_calibration_json(const pds_calibration *c, const char *source);
long pds_calibration_reviews(const pds_calibration *c);
/* The label a record's category or polarity must have for these rates: false
 * when the calibration has reviews and never saw label (another schema). */
bool pds_calibration_knows(const pds_calibration *c, bool category, const char *label);

/* ------------------------------------------------------------ estimates */

/* A cell's rates, as the estimate uses them. */
typedef struct pds_rates {
    double gold, predicted, correct;  /* G, Pr, TP */
    double var_log_ratio;             /* Var(log(G / Pr)) over the labelled reviews (a category on its
                                         polarity's rates: plus the spread between that polarity's
                                         categories, docs/summarize.md) */
    bool known;                       /* G >= 1 and Pr >= 1 */
} pds_rates;

typedef struct pds_estimate {
    double estimate, low, high; /* high < 0: no upper bound (recall 0) */
    double precision, recall;   /* of the rates used; -1 when none */
    double support;             /* gold records behind the rates */
    const char *rates;          /* "cell", "polarity" or "none" */
} pds_estimate;

/* The corrected count of `records` records found by a model with rates r,
 * and its 90% interval (the rule, docs/summarize.md):
 *   estimate = records x P / R = records x G / Pr;
 *   Var(log estimate) = Var(log(G / Pr)) (the rates' uncertainty: the
 *     delta method over the labelled reviews, records of a review
 *     together, as a bootstrap over reviews estimates it)
 *     + (1 - P R) / records (which of this corpus's records the model finds:
 *     its correct ones binomial, its wrong ones Poisson);
 *   interval = estimate x exp(+-1.645 sd); with no record found, [0, N]
 *   where a model of recall R misses all N with probability 0.05. */
void pds_estimate_count(const pds_rates *r, long records, pds_estimate *out);

/* ------------------------------------------------------------ the summary */

typedef struct pds_params {
    int top;          /* aspects and opinions listed a cell (default 10) */
    int examples;     /* example reviews a cell (default 3) */
    int min_support;  /* gold records a cell needs for rates of its own, else its polarity's (default 20) */
    int listed;       /* reviews listed a cell under "listed" (id, text, marks): 0 none (default), -1 all; a
                         listed review is kept in memory, so memory then grows with the corpus */
} pds_params;

pds_params pds_default_params(void);

typedef struct pds_summary pds_summary;

pds_summary *pds_summary_new(const pds_params *p);
void pds_summary_free(pds_summary *s);
/* One review: its id, its text (NULL when unknown: examples then have none)
 * and the records the model wrote for it. */
int pds_summary_add(pds_summary *s, const char *id, const char *text, const pds_record *recs, size_t n,
                    pds_error *err);
/* src's reviews after dst's (exact: as one pass over both in that order). */
int pds_summary_merge(pds_summary *dst, const pds_summary *src, pds_error *err);
long pds_summary_reviews(const pds_summary *s);

/* The whole state of a summary (every distinct aspect and opinion with its
 * count, not only the top), for partitions summarized apart and merged later
 * (pds_summary_from_state, pds_summary_merge): {"format":
 * "pocketdec-summary-state", "version": 1, "reviews", "records", "cells":
 * [{"category" (absent for a polarity), "polarity", "records", "reviews",
 * "aspects": {value: count}, "opinions": {...}, "examples": [...]}]}. NULL
 * when out of memory. */
json_t *pds_summary_state(const pds_summary *s);
/* A summary from its state (the file path, for messages); NULL with err. */
pds_summary *pds_summary_from_state(const json_t *state, const pds_params *p, const char *path, pds_error *err);

/* The summary as JSON (docs/summarize.md, "The JSON"): "reviews",
 * "records", "polarity" {label: entry}, "cells" [entry], each entry with its
 * estimate under the rates of cal (NULL: none, estimates equal the counts)
 * and, with params.listed, "listed": the cell's reviews in order, as its
 * examples are.
 * NULL when out of memory. */
json_t *pds_summary_json(const pds_summary *s, const pds_calibration *cal);

/* The largest changes from one summary's JSON to the next's (two periods of
 * --by DATE:month): every polarity and cell of either, by the change of its
 * share of reviews, the top largest in absolute value, as [{"category" (a
 * cell's), "polarity", "before", "after" (shares), "change" (after - before),
 * "estimate_before", "estimate_after"}]. NULL when out of memory. */
json_t *pds_summary_changes(const json_t *before, const json_t *after, int top);

/* The summary's JSON (with its groups, if any) as one self-contained HTML
 * page titled title: the polarity and cell tables, a chart of the cells'
 * estimates with their intervals, the complaints (negative cells by
 * estimate), the groups with a trend chart of a period, examples with their
 * spans marked, and each cell's "listed" reviews (when the JSON has them)
 * in a section of their own that the cell's row links to and that shows
 * alone when opened (CSS :target, no script). Every number shown is the JSON's (integers as they are,
 * others with 2 decimals); nothing is loaded from elsewhere. malloc'ed;
 * NULL when out of memory. */
char *pds_summary_html(const json_t *summary, const char *title);

/* The summary's tables as CSV text: polarity (the polarity entries) or
 * cells, one row an entry, header first. malloc'ed; NULL when out of memory. */
char *pds_summary_csv(const json_t *summary, bool cells);

/* ------------------------------------------------ summaries from files */

/* pd_summarize's summary as JSON, for the command's other outputs (HTML,
 * CSV); NULL with err. */
json_t *pds_summarize_json(const pd_summarize_params *p, pd_error *err);
/* The params that go together, as pd_summarize checks them (extracting: a
 * pipeline will be given): 0, or PD_ERR_ARG with the message. */
int pds_summarize_check(const pd_summarize_params *p, bool extracting, pd_error *err);

#endif
