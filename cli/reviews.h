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
    /* the columns: --id-column, --text-column (NULL: the defaults); a CSV
     * file's header names and the id's and text's places in them */
    const char *id_name, *text_name;
    char **columns;
    size_t n_columns, id_col, text_col;
    bool keep_extra;    /* set by the caller: each row's other columns into its extra */
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
    char *extra;        /* with keep_extra: the other columns as JSON members ("k":v,...), malloc'ed; else NULL */
    char id_buf[24];    /* an integer id as text */
} cli_review;

/* Open path ("-": stdin) as reviews: JSONL by format ("jsonl"; "csv"; NULL:
 * by the .jsonl extension), else CSV; the id and text by a's --id-column and
 * --text-column. 0, or the exit code after the message (1; 2 for a bad
 * format, with a usage message of a).
 *
 * The columns: JSONL keys "id" and "text" unless named. CSV: `id,Reviews`
 * (the Tianchi file, its header optional); a file with other columns must
 * start with a header, and its id column is --id-column, else "id"; its text
 * --text-column, else the one column named Reviews, text, review, content or
 * comment; when none is found the first row stops the reading with a message
 * listing the columns. Every other column is kept (cli_reviews_column). */
int cli_reviews_open(cli_args *a, cli_reviews *r, const char *path, const char *format);
/* Column name of row w (a CSV header's name, a JSONL key; a number as its
 * text into buf of 32 bytes): NULL when the row has none. */
const char *cli_reviews_column(const cli_reviews *r, const cli_review *w, const char *name, char *buf);
/* The row's columns other than the id and the text, as a JSON object (new
 * reference; NULL when out of memory). */
json_t *cli_reviews_extra(const cli_reviews *r, const cli_review *w);
/* The next row; false at the end of input. A broken row comes back with
 * w->problem set; r->failed set: the input cannot be read further
 * (cli_reviews_fail says why). The caller releases w->json. */
bool cli_reviews_next(cli_reviews *r, cli_review *w);
/* Release what a row holds (its JSON value and extra). */
void cli_review_release(cli_review *w);
/* Print why the input failed; returns 1. */
int cli_reviews_fail(const cli_reviews *r);
/* Close the file (not stdin) and release the readers. */
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
