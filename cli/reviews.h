/* reviews.h - the one reader of the reviews the CLI's commands take
 * (extract, rank, serve --teach): Tianchi CSV `id,Reviews` (read as
 * tianchi-eval reads it) or JSONL {"id","text"}, by the .jsonl extension or
 * --input-format; a broken row comes back with the problem named as
 * "FILE:LINE: what". */
#ifndef PD_CLI_REVIEWS_H
#define PD_CLI_REVIEWS_H

#include "cli.h"
#include "jsonl.h"
#include "te_csv.h"

typedef struct cli_reader {
    FILE *f;
    const char *name;
    bool jsonl;
    cli_jsonl jl;   /* the JSONL reader (over f) */
    te_csv *csv;    /* the CSV reader (over f): the one tianchi-eval reads with */
    bool first;     /* no record read yet (a CSV header is the first record) */
    bool failed;    /* the input cannot be read further (fail says why) */
    long rows;      /* rows read (a CSV header and broken rows count): where a resume starts */
    char fail[TE_ERROR_MESSAGE_SIZE];
} cli_reader;

typedef struct cli_row {
    long line;          /* where the row starts */
    long ordinal;       /* the reader's rows up to this one */
    const char *id, *text; /* into the reader's record (CSV) or owned by json (JSONL) */
    size_t text_len;
    char problem[TE_ERROR_MESSAGE_SIZE + 64]; /* non-empty: a broken row, "FILE:LINE: what" */
    bool keep_id;       /* a broken row whose id is still written, with no records */
    bool header;
    json_t *json;
    char id_buf[24];    /* an integer id as text */
} cli_row;

/* Open the file of option (e.g. --input FILE; '-': stdin) as --input-format
 * csv|jsonl says (else by its extension): 0, or the exit code after the message. */
int cli_reader_open(cli_args *a, const char *option, cli_reader *r);
/* The next row into w (w->json released by the next call or by the caller
 * with json_decref); false at the end of input. A broken row comes back with
 * w->problem set; r->failed: the input cannot be read further. */
bool cli_reader_next(cli_reader *r, cli_row *w);
/* Print why the input cannot be read further (r->failed); returns 1. */
int cli_reader_fail(const cli_reader *r);
void cli_reader_close(cli_reader *r);

/* Every review of option's file in memory, for the commands that order them
 * (rank, serve --teach): ids and texts (NUL-terminated copies). */
typedef struct cli_reviews {
    size_t n;
    char **ids, **texts;
    size_t *lens;
} cli_reviews;

/* Read them all: 0, or the exit code after the message (a broken row, a
 * repeated id, no review at all: named by file and line). */
int cli_reviews_load(cli_args *a, const char *option, cli_reviews *out);
void cli_reviews_free(cli_reviews *v);

#endif
