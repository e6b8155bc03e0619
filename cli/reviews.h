/* reviews.h - the one reader of reviews of the commands that read them
 * (extract, summarize): Tianchi CSV `id,Reviews` (by te_csv.h's rule) or
 * JSONL {"id","text"} (by jsonl.h's), a row at a time, a broken row reported
 * with its file and line and reading going on. */
#ifndef PD_CLI_REVIEWS_H
#define PD_CLI_REVIEWS_H

#include "cli.h"
#include "jsonl.h"
#include "te_csv.h"

typedef struct cli_reviews {
    FILE *f;
    const char *name;
    bool jsonl;
    cli_jsonl jl;   /* the JSONL reader (over f) */
    te_csv *csv;    /* the CSV reader (over f): the one tianchi-eval reads with */
    bool first;     /* no record read yet (a CSV header is the first record) */
    bool failed;    /* the input cannot be read further (fail says why) */
    long rows;      /* rows read (a CSV header and broken rows count): where a resume starts */
    char fail[TE_ERROR_MESSAGE_SIZE];
} cli_reviews;

typedef struct cli_review {
    long line;          /* where the row starts */
    long ordinal;       /* the reader's rows up to this one */
    const char *id, *text; /* into the reader's record (CSV) or owned by json (JSONL) */
    size_t text_len;
    char problem[TE_ERROR_MESSAGE_SIZE + 64]; /* non-empty: a broken row, "FILE:LINE: what" */
    bool keep_id;       /* a broken row whose id is still written, with no records */
    bool header;
    json_t *json;
    char id_buf[24];    /* an integer id as text */
} cli_review;

/* Open path ("-": stdin) as reviews: JSONL by format ("jsonl"; "csv"; NULL:
 * by the .jsonl extension), else CSV. 0, or the exit code after the message
 * (1; 2 for a bad format, with a usage message of a). */
int cli_reviews_open(cli_args *a, cli_reviews *r, const char *path, const char *format);
/* The next row; false at the end of input. A broken row comes back with
 * w->problem set; r->failed set: the input cannot be read further
 * (cli_reviews_fail says why). The caller releases w->json. */
bool cli_reviews_next(cli_reviews *r, cli_review *w);
/* Print why the input failed; returns 1. */
int cli_reviews_fail(const cli_reviews *r);
/* Close the file (not stdin) and release the readers. */
void cli_reviews_close(cli_reviews *r);

#endif
