/*
 * tianchi_eval.h - the F1 evaluator of the Tianchi e-commerce review
 * opinion-mining task (makeup reviews), as a C library.
 *
 * A submission lists (aspect, opinion, category, polarity) quadruples per
 * review id; it is scored against gold quadruples. The rules of the metric are
 * written out, with a worked example, in docs/tianchi-eval.md.
 *
 * Conventions (as in SQLite and jansson):
 *   - Handles are opaque: a te_eval collects inputs, te_eval_score() turns it
 *     into a te_result, which is read through accessors and printed.
 *   - Every call that can fail takes a te_error * (may be NULL) and returns a
 *     te_status (0 = TE_OK) or NULL. On failure err->code holds the status and
 *     err->message one line, "FILE:LINE: what is wrong" where a file and line
 *     are known.
 *   - Strings handed out (labels, terms, review texts, file names) are owned by
 *     the te_eval and stay valid until te_eval_free(); memory returned to the
 *     caller (JSON text) is released with te_free().
 *   - Inputs must be UTF-8; invalid UTF-8 is refused.
 *   - There is no global mutable state: handles may be used in different
 *     threads, one thread per handle at a time.
 */
#ifndef TIANCHI_EVAL_H
#define TIANCHI_EVAL_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TE_VERSION "0.1.0"

/* ------------------------------------------------------------------ errors */

typedef enum te_status {
    TE_OK = 0,
    TE_ERR_IO = 1,     /* a file is missing or cannot be read or written */
    TE_ERR_FORMAT = 2, /* a file is malformed: CSV syntax, UTF-8, field count, id */
    TE_ERR_NOMEM = 3,  /* an allocation failed */
    TE_ERR_ARG = 4     /* an invalid argument (NULL, bad kind, duplicate review id) */
} te_status;

#define TE_ERROR_MESSAGE_SIZE 512

typedef struct te_error {
    te_status code;
    char message[TE_ERROR_MESSAGE_SIZE];
} te_error;

/* A short constant name for a status ("format error", ...). */
const char *te_status_name(te_status code);

/* Release memory that this library returned to the caller. NULL is fine. */
void te_free(void *ptr);

/* ------------------------------------------------------------------ inputs */

/* The three kinds of input file:
 *   TE_INPUT_GOLD        train_labels.csv form: a header, then 9 fields
 *                        id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities
 *   TE_INPUT_PREDICTIONS Result.csv form: no header, 5 fields
 *                        id,AspectTerm,OpinionTerm,Category,Polarity
 *   TE_INPUT_REVIEWS     a header, then 2 fields id,Reviews
 * Gold and predictions may also be JSONL (recognised by a first byte '{'):
 * pocketdec's extraction output, or a labels file as train/dataset.py reads it
 * ({"id", "text", "records": [{"aspect": {"text", "start", "end"} or null,
 * ...}]}, offsets checked against the text); docs/tianchi-eval.md. */
typedef enum te_input {
    TE_INPUT_GOLD = 0,
    TE_INPUT_PREDICTIONS = 1,
    TE_INPUT_REVIEWS = 2
} te_input;

#define TE_N_INPUTS 3

/* One quadruple. `_` stands for an implicit aspect or opinion. The
 * placeholder id,_,_,_,_ (all four `_`) marks a review without quadruples. */
typedef struct te_quad {
    long id;
    const char *aspect;
    const char *opinion;
    const char *category;
    const char *polarity;
} te_quad;

typedef struct te_eval te_eval;

/* A new, empty evaluator. */
te_eval *te_eval_new(te_error *err);
void te_eval_free(te_eval *ev);

/* Read a CSV file of the given kind and add its rows ("-" reads stdin). May be
 * called several times per kind: rows accumulate. On failure nothing of that
 * file is kept. Beyond hard errors (TE_ERR_IO, TE_ERR_FORMAT) the loader notes
 * what te_eval_score() reports as issues: a UTF-8 BOM, a header row in a
 * submission. */
te_status te_eval_load_file(te_eval *ev, te_input kind, const char *path, te_error *err);

/* Same as te_eval_load_file for CSV text in memory; name is used in messages
 * (NULL: "<memory>"). data need not be NUL-terminated. */
te_status te_eval_load_buffer(te_eval *ev, te_input kind, const char *name,
                              const char *data, size_t len, te_error *err);

/* Add one quadruple in memory, as gold (kind TE_INPUT_GOLD) or as a prediction
 * (TE_INPUT_PREDICTIONS). The strings are copied and must be valid UTF-8; NULL
 * fields read as "_". Predictions keep the order of the calls, which is the
 * order the "ids in order" check sees. Messages call the row "<memory>:N",
 * N counting calls per kind from 1. */
te_status te_eval_add_quad(te_eval *ev, te_input kind, const te_quad *quad, te_error *err);

/* Add the text of one review (copied, valid UTF-8). A second text for the same
 * id is refused with TE_ERR_ARG. */
te_status te_eval_add_review(te_eval *ev, long id, const char *text, te_error *err);

/* ----------------------------------------------------------------- scoring */

typedef struct te_result te_result;

/* Match predictions against gold and run the checks. The te_eval is not
 * changed and may be scored again after more input is added. The result
 * borrows strings from ev: free it before ev. */
te_result *te_eval_score(const te_eval *ev, te_error *err);
void te_result_free(te_result *res);

/* Counts and ratios: matched (S), predicted (P), gold (G); precision S/P,
 * recall S/G, f1 2PR/(P+R); each ratio is 0 where its denominator is 0. */
typedef struct te_score {
    long matched;
    long predicted;
    long gold;
    double precision;
    double recall;
    double f1;
} te_score;

/* The ratios of S, P and G, by the rules above. */
te_score te_score_make(long matched, long predicted, long gold);

/* Quadruples matched on all four fields, one to one within each id. */
te_score te_result_overall(const te_result *res);

/* (aspect, opinion) pairs matched one to one within each id, labels ignored. */
te_score te_result_pairs(const te_result *res);

typedef enum te_axis {
    TE_AXIS_CATEGORY = 0,
    TE_AXIS_POLARITY = 1
} te_axis;

/* The score of one label: predicted counts predictions carrying the label,
 * gold counts gold quadruples carrying it, matched counts matches (which carry
 * it on both sides). */
typedef struct te_label_score {
    const char *label;
    int known; /* 1 for a label of the task's set, 0 for one seen in the inputs only */
    te_score score;
} te_label_score;

/* Labels of an axis: first the task's set in its fixed order (13 categories:
 * 包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他;
 * 3 polarities: 正面 中性 负面), then labels outside the set that appear in the
 * inputs, in byte order. i runs from 0 to te_result_n_labels() - 1; out of
 * range gives NULL. */
size_t te_result_n_labels(const te_result *res, te_axis axis);
const te_label_score *te_result_label(const te_result *res, te_axis axis, size_t i);
/* The entry of a label by name, or NULL. */
const te_label_score *te_result_find_label(const te_result *res, te_axis axis, const char *label);

/* Predictions whose terms are not substrings of their review. `_` is never
 * counted. available is 0 when no review was loaded (then all counts are 0);
 * no_review counts predictions whose id has no review. */
typedef struct te_span_counts {
    int available;
    long aspect_outside;
    long opinion_outside;
    long either_outside;
    long no_review;
} te_span_counts;

te_span_counts te_result_spans(const te_result *res);

/* ----------------------------------------------------- errors of the model */

typedef enum te_mismatch_kind {
    TE_MISS = 0,          /* a gold quadruple no prediction matched */
    TE_FALSE_POSITIVE = 1 /* a prediction that matched no gold quadruple */
} te_mismatch_kind;

typedef struct te_mismatch {
    te_mismatch_kind kind;
    te_quad quad;
    const char *file; /* where the row came from ("<memory>" for added rows) */
    long line;
    const char *review; /* the review text, NULL when unknown */
    int aspect_outside;  /* 1 when the aspect is not `_` and not in the review */
    int opinion_outside; /* same for the opinion */
} te_mismatch;

/* Misses and false positives, ordered by id, misses of an id first, then by
 * line. Out of range gives NULL. */
size_t te_result_n_mismatches(const te_result *res);
const te_mismatch *te_result_mismatch(const te_result *res, size_t i);

/* The class of a mismatch, for telling extraction errors apart. A mismatch of
 * review r is compared with the other side's quadruples of r (all of them,
 * matched or not) and takes the first class that applies, in this order; a
 * term "overlaps" another of its field when the strings differ, neither is
 * `_`, and their character offsets overlap (gold offsets against JSONL spans,
 * where both are known) or else one string contains the other.
 *   missed span / extra span: its aspect or its opinion equals and overlaps
 *       no term of that field on the other side (a miss: missed span; a
 *       false positive: extra span);
 *   boundary: each term equals or overlaps one there, but one equals none;
 *   link: both terms are there, but never in one quadruple together;
 *   category: the (aspect, opinion) pair is there, never with this category;
 *   polarity: pair and category are there, never with this polarity;
 *   repeated: the quadruple is there, fewer times than on this side.
 * Every mismatch has exactly one class (docs/tianchi-eval.md). */
typedef enum te_error_class {
    TE_CLASS_MISSED_SPAN = 0, /* misses only */
    TE_CLASS_EXTRA_SPAN,      /* false positives only */
    TE_CLASS_BOUNDARY,
    TE_CLASS_LINK,
    TE_CLASS_CATEGORY,
    TE_CLASS_POLARITY,
    TE_CLASS_REPEATED,
    TE_N_CLASSES
} te_error_class;

/* A short constant name ("missed span", ...). */
const char *te_error_class_name(te_error_class c);
/* The class of mismatch i (TE_N_CLASSES when out of range). */
te_error_class te_result_mismatch_class(const te_result *res, size_t i);
/* Mismatches of a class on one side (TE_MISS: gold, TE_FALSE_POSITIVE:
 * predictions). Over the classes they add up to G - S and P - S. */
long te_result_class_count(const te_result *res, te_error_class c, te_mismatch_kind side);

/* ------------------------------------------------------------------ checks */

typedef enum te_issue_kind {
    TE_ISSUE_BOM = 0,          /* the file starts with a UTF-8 BOM (rule for a submission) */
    TE_ISSUE_HEADER,           /* a submission has a header row (rule) */
    TE_ISSUE_MISSING_ID,       /* a review id (or gold id without reviews) not in the submission (rule) */
    TE_ISSUE_UNKNOWN_ID,       /* a submission id that is not a review id (rule; needs reviews) */
    TE_ISSUE_ORDER,            /* a submission id smaller than the one before it (rule) */
    TE_ISSUE_CATEGORY,         /* a predicted category outside the set (rule) */
    TE_ISSUE_POLARITY,         /* a predicted polarity outside the set (rule) */
    TE_ISSUE_EMPTY_TERM,       /* an empty predicted aspect or opinion, `_` expected (rule) */
    TE_ISSUE_PLACEHOLDER_MIXED,/* a placeholder row for an id that also has quadruples (note) */
    TE_ISSUE_GOLD_LABEL,       /* a gold category or polarity outside the set (note) */
    TE_ISSUE_GOLD_SPAN,        /* gold offsets that disagree with the review text (note) */
    TE_ISSUE_GOLD_ID_UNKNOWN   /* a gold id that is not a review id (note) */
} te_issue_kind;

/* A finding of the checks. rule is 1 when it breaks a rule of the task's
 * submission format (what --strict fails on), 0 for a note. */
typedef struct te_issue {
    te_issue_kind kind;
    int rule;
    const char *file; /* NULL when the issue is about no single file */
    long line;        /* 0 when about no single line */
    long id;          /* -1 when about no single id */
    const char *message; /* one line, without file and line */
} te_issue;

/* A short constant name of a kind ("missing-id", ...). */
const char *te_issue_kind_name(te_issue_kind kind);

/* Issues in the order: file-level issues, then submission rows in file order,
 * then missing ids, then notes about gold. */
size_t te_result_n_issues(const te_result *res);
const te_issue *te_result_issue(const te_result *res, size_t i);
/* The number of issues with rule == 1. */
size_t te_result_n_violations(const te_result *res);

/* ------------------------------------------------------------ input totals */

typedef struct te_input_summary {
    const char *file; /* the last file loaded of that kind, "<memory>" for added rows, NULL when none */
    long rows;        /* data rows (placeholders included, header excluded) */
    long quadruples;  /* rows that are quadruples (placeholders excluded); reviews for TE_INPUT_REVIEWS */
    long placeholders;
    long ids;         /* distinct ids */
} te_input_summary;

te_input_summary te_result_input(const te_result *res, te_input kind);

/* ----------------------------------------------------------------- reports */

/* Flags of the reports. */
#define TE_REPORT_ERRORS 1u /* list misses and false positives (with review text) */

/* A readable table: inputs, overall and pair scores, per category and per
 * polarity, span counts, the checks; the error list with TE_REPORT_ERRORS. */
te_status te_result_print_table(const te_result *res, FILE *out, unsigned flags, te_error *err);

/* The same as a JSON object (UTF-8 text, te_free() it); the error list with
 * TE_REPORT_ERRORS. The keys are described in docs/tianchi-eval.md. */
char *te_result_json(const te_result *res, unsigned flags, te_error *err);

/* A self-contained HTML page (no scripts, no external resources): scores,
 * inline SVG bar charts of F1 per category and per polarity, a "Confidence"
 * section, the checks and the error list. The Confidence section holds
 * te_eval_sweep's charts and tables at the default thresholds, computed from
 * the te_eval the result was scored from (alive, as for every string of the
 * result), or one line saying why there is none: a CSV submission, the
 * sweep's error, gold or predictions added to that te_eval after scoring.
 * Every text from the inputs is HTML-escaped. */
te_status te_result_write_html(const te_result *res, FILE *out, te_error *err);
/* Same, written to a file. */
te_status te_result_save_html(const te_result *res, const char *path, te_error *err);

/* ------------------------------------------------------------------ JSONL */

/* Predictions may be pocketdec's JSONL extraction output, one line a review:
 * {"id": "3", "records": [{"aspect": ..., "opinion": ..., "category": ...,
 * "polarity": ..., "spans": {...}, "probs": {...}, "confidence": 0.81}]}.
 * te_eval_load_file and te_eval_load_buffer read predictions as JSONL when
 * their first byte other than blanks and line breaks is '{'. This sets the
 * record keys of aspect, opinion, category and polarity, comma-separated
 * ("aspect,opinion,category,polarity" by default), for the loads after it. */
te_status te_eval_set_jsonl_fields(te_eval *ev, const char *names, te_error *err);

/* --------------------------------------------------------------- compare */

typedef struct te_compare te_compare;

typedef struct te_compare_params {
    unsigned long resamples; /* bootstrap resamples; 0 means 1000 */
    unsigned long long seed; /* of the generator (splitmix64): same seed, same interval */
} te_compare_params;

/* Score the predictions of a (run A) and of b (run B), loaded with the same
 * gold, and the paired bootstrap of F1(B) - F1(A) over reviews: the review ids
 * (of gold and of the runs) are resampled with replacement, both runs' micro F1
 * recomputed on each resample. Refused (TE_ERR_FORMAT) when the runs do not
 * have rows for the same ids, TE_ERR_ARG when the gold differs. Scoring errors
 * are te_eval_score's. Free it before a and b. */
te_compare *te_compare_new(const te_eval *a, const te_eval *b, const te_compare_params *params,
                           te_error *err);
void te_compare_free(te_compare *cmp);

/* The result of run 0 (A) or 1 (B); NULL otherwise. */
const te_result *te_compare_result(const te_compare *cmp, int run);

typedef struct te_interval {
    double diff;              /* F1(B) - F1(A) on all reviews */
    double low, high;         /* 95% percentile interval of the resampled differences */
    unsigned long resamples;
    unsigned long long seed;
    size_t reviews;           /* ids resampled */
} te_interval;

te_interval te_compare_interval(const te_compare *cmp);

/* The comparison as a table (F1 of each run, the interval, the error classes
 * with up to `examples` examples each), as JSON (te_free() it), as an HTML
 * page (the comparison with charts of both runs' F1, the interval and the
 * error classes as stacked bars, then each run's report). */
te_status te_compare_print_table(const te_compare *cmp, FILE *out, size_t examples, te_error *err);
char *te_compare_json(const te_compare *cmp, size_t examples, te_error *err);
te_status te_compare_save_html(const te_compare *cmp, const char *path, size_t examples,
                               te_error *err);

/* ------------------------------------------------------------------ sweep */

typedef struct te_sweep te_sweep;

/* Precision, recall and F1 of the predictions with confidence >= each
 * threshold (thresholds in [0, 1]; NULL: 0.0, 0.1, ..., 0.9, 0.95), and a
 * reliability table: the predictions in ten bins of confidence with the
 * fraction matched under the metric's matching of all predictions. Needs JSONL
 * predictions whose every record has a "confidence" (TE_ERR_FORMAT otherwise,
 * naming the first line without one). Free it before ev. */
te_sweep *te_eval_sweep(const te_eval *ev, const double *thresholds, size_t n, te_error *err);
void te_sweep_free(te_sweep *sw);

typedef struct te_sweep_row {
    double threshold;
    te_score score; /* score.predicted: the predictions kept */
} te_sweep_row;

typedef struct te_reliability_bin {
    double low, high; /* confidences in [low, high); the last bin holds 1.0 */
    long count, correct;
    double accuracy;  /* correct / count, 0 when empty */
} te_reliability_bin;

size_t te_sweep_n_rows(const te_sweep *sw);
const te_sweep_row *te_sweep_row_at(const te_sweep *sw, size_t i);
size_t te_sweep_n_bins(const te_sweep *sw);
const te_reliability_bin *te_sweep_bin(const te_sweep *sw, size_t i);
/* The inputs, as te_result_input gives them. */
te_input_summary te_sweep_input(const te_sweep *sw, te_input kind);

te_status te_sweep_print_table(const te_sweep *sw, FILE *out, te_error *err);
char *te_sweep_json(const te_sweep *sw, te_error *err);
/* An HTML page (self-contained, as te_result_write_html's): precision, recall
 * and F1 by threshold as lines, the reliability diagram (fraction correct by
 * bin of confidence), each with its table, then the report of all the
 * predictions. */
te_status te_sweep_write_html(const te_sweep *sw, FILE *out, te_error *err);
te_status te_sweep_save_html(const te_sweep *sw, const char *path, te_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TIANCHI_EVAL_H */
