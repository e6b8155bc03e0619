/* te_csv.h - the one CSV reader of pocketdec: tianchi-eval's three inputs and
 * the reviews that `pocketdec extract` reads. It lives in tianchi-eval, which
 * depends on nothing else of the project; the command links it from there, so
 * the dependency runs from the top (the command) down, never into the library.
 *
 * The rule, the same for every caller (docs/tianchi-eval.md, README "extract"):
 *   - Fields are separated by ',' and records by LF, CRLF or a lone CR; blank
 *     lines are skipped. A UTF-8 byte order mark at the start is skipped and
 *     reported by te_csv_had_bom().
 *   - A field that does not start with a quote is unquoted: it runs to the next
 *     ',' or line break, and a quote inside it is an ordinary character (as
 *     Python's csv module reads it): 1,我买的是"正品"吗 is two fields.
 *   - A field that starts with a quote is quoted: it may hold ',', line breaks
 *     and "" for a quote, and it ends with a quote followed by ',', a line break
 *     or the end of the input.
 *   - A record whose quoted field never closes, or closes with text after its
 *     quote, is broken: te_csv_next() reports it (TE_CSV_BROKEN, "FILE:LINE:
 *     what is wrong", LINE where the quote opened) with the fields read before
 *     the problem (its id, usually), and reading resumes at the line after the
 *     record's first line. From there, lines that read cleanly but do not have
 *     the expected number of fields (te_csv_expect_fields) are reported and
 *     skipped, until a line starts a well-formed row; so one stray quote costs
 *     one record, never the rest of the file.
 *   - Text must be UTF-8 without NUL bytes: a record holding anything else is
 *     reported as broken (with the line and the byte within the line) and the
 *     next record is read normally.
 * Callers choose what a broken record means: tianchi-eval refuses the file at
 * the first one (a score must not rest on a partly read file); extract reports
 * each, writes a placeholder row for its id and goes on.
 */
#ifndef TE_CSV_H
#define TE_CSV_H

#include "tianchi_eval.h"

#include <stddef.h>
#include <stdio.h>

/* The longest record a reader over a stream holds (to resynchronise after a
 * broken one); a longer record is reported as broken. Readers over a buffer
 * have no limit. */
#define TE_CSV_MAX_RECORD ((size_t)16 << 20)

typedef struct te_csv te_csv;

typedef enum te_csv_result {
    TE_CSV_FAIL = -1,  /* out of memory, or the stream cannot be read (err): stop */
    TE_CSV_END = 0,    /* no more records */
    TE_CSV_ROW = 1,    /* a record was read */
    TE_CSV_BROKEN = 2  /* a broken record or a skipped line (err, code TE_ERR_FORMAT); go on */
} te_csv_result;

/* A reader over data[0..len), which must outlive it; name is used in
 * messages. Fails only on a bad argument or out of memory. */
te_csv *te_csv_new(const char *name, const char *data, size_t len, te_error *err);

/* A reader over a stream, read as records are asked for (memory holds one
 * record, at most TE_CSV_MAX_RECORD bytes); f is not closed. */
te_csv *te_csv_open(const char *name, FILE *f, te_error *err);

void te_csv_free(te_csv *csv);

/* The number of fields of a well-formed row (0, the default: any number),
 * which is what resynchronising after a broken record looks for. */
void te_csv_expect_fields(te_csv *csv, size_t n);

/* 1 when the input starts with a UTF-8 BOM (for a stream: known once
 * te_csv_next() has been called). */
int te_csv_had_bom(const te_csv *csv);

/* Read the next record (or the next broken one, see above). */
te_csv_result te_csv_next(te_csv *csv, te_error *err);

/* Fields of the record just read, valid until the next te_csv_next(). Each
 * field is NUL-terminated; *len (may be NULL) gets its length. After
 * TE_CSV_BROKEN they are the fields read in full before the problem, all valid
 * UTF-8 (none for a skipped line). */
size_t te_csv_n_fields(const te_csv *csv);
const char *te_csv_field(const te_csv *csv, size_t i, size_t *len);

/* The line the record starts on (from 1). */
long te_csv_line(const te_csv *csv);

#endif /* TE_CSV_H */
