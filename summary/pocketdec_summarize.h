/*
 * pocketdec_summarize.h - the summary of a corpus from its files (summary/,
 * part of libpocketdec): what `pocketdec summarize` does, for the command,
 * the Python package (pocketdec.summarize, by ctypes) and any other caller.
 *
 * The records `extract` wrote (JSONL {"id","records"} or Tianchi rows
 * id,aspect,opinion,category,polarity), read a review at a time, joined
 * with the reviews they came from by id (in their order; a review with no
 * records line counts with none), or reviews extracted here by a pipeline,
 * or partitions' saved states merged in order; grouped by a column (its
 * values, or the month or ISO week of a date); corrected by the model's
 * rates (a calibration file, rates measured on labelled reviews, or a model
 * folder's calibration.json). The result is the summary's JSON
 * (docs/summarize.md, "The JSON"). Counts, estimates and intervals follow
 * one rule, the summary module's (docs/summarize.md, "Honest counts").
 * Errors (pd_error) name the file and the line.
 */
#ifndef POCKETDEC_SUMMARIZE_H
#define POCKETDEC_SUMMARIZE_H

#include "pocketdec_compose.h"
#include "pocketdec_reviews.h"
#include "pocketdec_runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a summary went past without failing: a broken row of the reviews
 * (message "FILE:LINE: what; not counted"), reviews with no records line
 * ("N reviews of REVIEWS have no line in RECORDS: counted with no records"). */
typedef enum pd_summarize_note {
    PD_SUMMARIZE_NOT_COUNTED = 1,
    PD_SUMMARIZE_UNMATCHED = 2
} pd_summarize_note;

typedef void (*pd_summarize_note_fn)(void *ctx, pd_summarize_note kind, const char *message);

typedef struct pd_summarize_params {
    /* Where the records come from: exactly one of these three. */
    const char *records;               /* what extract wrote (".jsonl": JSONL, else CSV rows) */
    pd_pipeline *pipeline;             /* with schema: the reviews extracted here, pipeline's defaults */
    const pd_schema *schema;           /* the pipeline's schema (its aspect, opinion, category, polarity) */
    const char *const *merge;          /* n_merge saved states (save_state), merged in order */
    size_t n_merge;

    const char *reviews;               /* the reviews the records came from (NULL: none; needed by pipeline) */
    pd_reviews_params reviews_params;  /* how to read them */
    const char *by;                    /* NULL, or group by COLUMN, COLUMN:month or COLUMN:week (a date) */

    /* The rates: a calibration file, or measured on labelled reviews
     * (calibrate_labels with the model's records over them,
     * calibrate_records; written to save_calibration when set), else the
     * bundle folder's calibration.json when it has one, else none. */
    const char *calibration;
    const char *calibrate_labels, *calibrate_records, *save_calibration;
    const char *bundle;

    const char *save_state;            /* write the summary's whole state there (for merge) */
    int min_support;                   /* gold records a cell needs for rates of its own (default 20) */
    int top;                           /* aspects and opinions listed a cell (default 10) */
    int examples;                      /* example reviews a cell (default 3) */
    int listed;                        /* reviews listed a cell: 0 none (default), -1 all */

    pd_summarize_note_fn note;         /* NULL: notes are dropped */
    void *note_ctx;
} pd_summarize_params;

/* No source, no reviews (their default params), no grouping, no rates, the
 * summary's defaults. */
PD_API pd_summarize_params pd_summarize_default_params(void);

/* The summary's JSON text (one space of indent, keys in their order, no
 * line break at the end): a malloc'd string (pd_free). NULL with err:
 * PD_ERR_ARG for params that do not go together (the message names the
 * command's options), PD_ERR_IO for a file that cannot be opened or
 * written, PD_ERR_FORMAT for a file that cannot be read (FILE:LINE: what),
 * a record whose polarity the calibration does not know, a review without
 * its --by column; PD_ERR_NOMEM. */
PD_API char *pd_summarize(const pd_summarize_params *params, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_SUMMARIZE_H */
