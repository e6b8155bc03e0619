/* reviews.h - the command's side of the one reader of reviews
 * (pocketdec_reviews.h, in the library): --input-format, --id-column,
 * --text-column and --encoding given to it, its rows and failures printed as
 * the commands (extract, summarize, rank, serve --teach) print them. */
#ifndef PD_CLI_REVIEWS_H
#define PD_CLI_REVIEWS_H

#include "cli.h"

typedef struct cli_reviews {
    pd_reviews *h;
    const char *name;   /* "stdin" or the path, for messages */
    bool jsonl;
    bool failed;        /* the input cannot be read further (err says why) */
    long rows;          /* rows read (a CSV header and broken rows count): where a resume starts */
    bool keep_extra;    /* set by the caller before opening: each CSV row's other columns into its extra */
    pd_error err;
} cli_reviews;

typedef struct cli_review {
    long line;          /* where the row starts */
    long ordinal;       /* the reader's rows up to this one */
    const char *id, *text; /* the reader's, valid until the next row */
    size_t text_len;
    char problem[PD_ERROR_MESSAGE_SIZE + 64]; /* non-empty: a broken row, "FILE:LINE: what" */
    bool keep_id;       /* a broken row whose id is still written, with no records */
    bool header;
    char *extra;        /* with keep_extra: the other columns as JSON members ("k":v,...), malloc'ed; else NULL */
} cli_review;

/* Open path ("-": stdin) as reviews, by a's --id-column, --text-column and
 * --encoding and format (--input-format: "csv", "jsonl"; NULL: by the
 * extension): 0, or the exit code after the message (1; 2 for a bad format,
 * with a usage message of a). */
int cli_reviews_open(cli_args *a, cli_reviews *r, const char *path, const char *format);
/* The reader's params from a's --id-column, --text-column, --encoding and
 * format (as cli_reviews_open): 0, or 2 after a usage message. */
int cli_reviews_params(cli_args *a, const char *format, pd_reviews_params *p);
/* Column name of the row just read (pd_reviews_column). */
const char *cli_reviews_column(const cli_reviews *r, const char *name, char *buf);
/* The next row; false at the end of input. A broken row comes back with
 * w->problem set; r->failed set: the input cannot be read further
 * (cli_reviews_fail says why). */
bool cli_reviews_next(cli_reviews *r, cli_review *w);
/* Release what a row holds (its extra). */
void cli_review_release(cli_review *w);
/* Print why the input failed; returns 1. */
int cli_reviews_fail(const cli_reviews *r);
/* Close the input. */
void cli_reviews_close(cli_reviews *r);

/* Every review of option's file in memory, for the commands that order them
 * before running any (rank, serve --teach): ids and texts (NUL-terminated
 * copies), in file order. */
typedef struct cli_review_list {
    size_t n;
    char **ids, **texts;
    size_t *lens;
} cli_review_list;

/* Read them all (review_list.c), as cli_reviews_open reads option's file:
 * 0, or the exit code after the message (a broken row, a repeated id, no
 * review at all: named by file and line). */
int cli_review_list_load(cli_args *a, const char *option, cli_review_list *out);
void cli_review_list_free(cli_review_list *v);

#endif
