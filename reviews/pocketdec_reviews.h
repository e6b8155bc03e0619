/*
 * pocketdec_reviews.h - files of reviews (reviews/, part of libpocketdec):
 * the one reader that `pocketdec extract`, `summarize`, `rank`, `serve
 * --teach`, the Python package and the server read reviews with.
 *
 * A file is CSV or JSONL, read a row at a time (memory holds one row):
 *   - CSV by tianchi-eval's rule (te_csv.h: quoting, line breaks, a broken
 *     record costing that record only). The Tianchi file `id,Reviews`, with
 *     or without its header. Any other file starts with a header: its id
 *     column is id_column, else "id"; its text column text_column, else the
 *     one column named Reviews, text, review, content or comment; when none
 *     is found the first row fails the reading with a message listing the
 *     header's columns. Every other column is kept (pd_reviews_column, and
 *     with keep_extra each row's extra).
 *   - JSONL: one object a line, its id (string or integer) under id_column,
 *     else "id", its text under text_column, else "text".
 *   - Text is UTF-8. With an encoding (an iconv name: gb18030, gbk, utf-16
 *     with its byte order mark) the bytes are decoded first; without one, a
 *     file that starts with UTF-16's byte order mark, or is not UTF-8 but
 *     reads cleanly as GB18030, is refused with a message naming --encoding.
 * A broken row (a CSV record te_csv.h calls broken, a wrong number of
 * fields, an empty id; a JSONL line that is not an object with an id and a
 * text) is a row with its problem, "FILE:LINE: what", and reading goes on.
 * Errors (pd_error, pocketdec_runtime.h) name the file and the line.
 */
#ifndef POCKETDEC_REVIEWS_H
#define POCKETDEC_REVIEWS_H

#include "pocketdec_runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pd_reviews pd_reviews;

typedef enum pd_reviews_format {
    PD_REVIEWS_AUTO = 0,  /* JSONL when the name ends in ".jsonl", else CSV */
    PD_REVIEWS_CSV = 1,
    PD_REVIEWS_JSONL = 2
} pd_reviews_format;

typedef struct pd_reviews_params {
    pd_reviews_format format;
    const char *id_column;   /* NULL: "id" */
    const char *text_column; /* NULL: the usual names (CSV), "text" (JSONL) */
    const char *encoding;    /* NULL: UTF-8 (see above) */
    int keep_extra;          /* CSV: each row's other columns into its extra */
    long first_line;         /* 0: the input is a whole file. Above 0 (JSONL, no
                              * encoding): the input is a piece of a JSONL file
                              * whose first line is the file's line first_line,
                              * as a process reads a block of a file it shares
                              * (pocketdec.dask): lines are numbered from there,
                              * a byte order mark is dropped only on line 1, and
                              * the encoding is not sniffed (a line that is not
                              * UTF-8 is a broken row, as deep in a file). */
} pd_reviews_params;

/* One row, valid until the next pd_reviews_next or pd_reviews_free. */
typedef struct pd_review {
    long line;         /* where the row starts (from 1) */
    long ordinal;      /* rows read up to this one (a CSV header and broken rows count) */
    int header;        /* the CSV header: no review */
    const char *id;    /* NULL for a broken row without one */
    const char *text;  /* NULL for a broken row */
    size_t text_len;
    const char *problem; /* NULL, or a broken row: "FILE:LINE: what is wrong" */
    int keep_id;       /* a broken row whose id is known (an output may still list it) */
    const char *extra; /* with keep_extra: the other columns as JSON members, "rating":"5","sku":"A1"; else NULL */
} pd_review;

/* format AUTO, the default columns, UTF-8, no extra. */
PD_API pd_reviews_params pd_reviews_default_params(void);

/* Open the file at path ("-": standard input, named "stdin" in messages;
 * params NULL: the defaults). NULL with err: PD_ERR_IO when it cannot be
 * opened, PD_ERR_ARG for an encoding iconv does not know or a bad format,
 * PD_ERR_FORMAT for a file in another encoding than the one expected. */
PD_API pd_reviews *pd_reviews_open(const char *path, const pd_reviews_params *params, pd_error *err);
/* The same over data[0..len), which must outlive the reader; name is used
 * in messages and, with format AUTO, for its extension. PD_ERR_ARG also for
 * a first_line below 0, or above 0 with CSV or an encoding. */
PD_API pd_reviews *pd_reviews_open_memory(const char *data, size_t len, const char *name,
                                          const pd_reviews_params *params, pd_error *err);
PD_API void pd_reviews_free(pd_reviews *r);

/* The next row into *row: 1; 0 at the end of the input; -1 when the input
 * cannot be read further (err: PD_ERR_FORMAT for a CSV header whose id or
 * text column is not found, PD_ERR_IO for a read error or a line too long,
 * PD_ERR_NOMEM), and every later call fails the same way. */
PD_API int pd_reviews_next(pd_reviews *r, pd_review *row, pd_error *err);

/* Column name of the row just read (a CSV header's name, a JSONL key; a
 * JSONL number as its text, written into buf of 32 bytes): NULL when the
 * row has none or is broken. */
PD_API const char *pd_reviews_column(const pd_reviews *r, const char *name, char *buf);

/* The format read (CSV or JSONL), the name used in messages, the rows read. */
PD_API pd_reviews_format pd_reviews_get_format(const pd_reviews *r);
PD_API const char *pd_reviews_name(const pd_reviews *r);
PD_API long pd_reviews_rows(const pd_reviews *r);
/* Bytes read so far into *pos and the file's size into *size (-1 each when
 * not known: a pipe, a decoded stream). */
PD_API void pd_reviews_position(const pd_reviews *r, long *pos, long *size);

/* A JSONL output line (line[0..len), a JSON object and its line break) with
 * a row's extra members added before its closing brace:
 * {"id":"1","records":[]}\n and "rating":"5" give
 * {"id":"1","records":[],"rating":"5"}\n. A malloc'd copy (pd_free), its
 * length in *out_len; NULL when out of memory. */
PD_API char *pd_reviews_join_extra(const char *line, size_t len, const char *extra, size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_REVIEWS_H */
