/* pds_records.h - records a review at a time, for pd_summarize (summarize.c): what `extract`
 * wrote (JSONL {"id","records"} or Tianchi submission rows id,a,o,c,p) and
 * labelled reviews (train/dataset.py's JSONL {"id","text","records"} or the
 * Tianchi labels CSV id,AspectTerms,A_start,...,Polarities). Rows of one id
 * are one review; a row that cannot be read stops the reading with
 * "FILE:LINE: what". */
#ifndef PDS_RECORDS_H
#define PDS_RECORDS_H

#include "pd_jsonl.h"
#include "pocketdec_runtime.h"
#include "pocketdec_summary.h"
#include "te_csv.h"

typedef struct pds_records {
    const char *name;
    FILE *f;
    bool jsonl;
    pd_jsonl jl;
    te_csv *csv;
    /* the review read last */
    const char *id, *text; /* text: a JSONL line's "text", else NULL */
    long line;             /* where it starts */
    pds_record *recs;
    size_t n, cap;
    /* private: the strings of the review (CSV) or its line's value (JSONL) */
    char **strs;
    size_t n_strs, cap_strs;
    json_t *value;
    char id_buf[24];
    char *pending[9]; /* CSV: the row read after the review, the next one's first */
    size_t n_pending;
    long pending_line;
} pds_records;

/* Open path (JSONL by the .jsonl extension, else CSV): 0, or non-zero with err. */
int pds_records_open(pds_records *r, const char *path, pd_error *err);
/* The next review into r: 1, 0 at the end, -1 with err saying why it cannot be read. */
int pds_records_next(pds_records *r, pd_error *err);
void pds_records_close(pds_records *r);

#endif
