/* te_internal.h - what the files of tianchi-eval share and callers never see. */
#ifndef TE_INTERNAL_H
#define TE_INTERNAL_H

#include "tianchi_eval.h"

#include <stdarg.h>
#include <stdint.h>

#define TE_MEMORY_NAME "<memory>"
#define TE_PLACEHOLDER "_"

/* ------------------------------------------------------------------ errors */

/* Fill err (if not NULL) with "file:line: message" (": line" left out when
 * line <= 0, "file: " left out when file is NULL) and return code. */
te_status te_fail(te_error *err, te_status code, const char *file, long line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Copy at most max bytes of s (cut on a character boundary, "..." added when
 * cut) into buf, for quoting input in messages. */
const char *te_snippet(const char *s, size_t len, char *buf, size_t bufsize, size_t max);

/* ------------------------------------------------------------------ memory */

/* A string pool: many small strings freed at once. */
typedef struct te_pool_block te_pool_block;
typedef struct te_pool {
    te_pool_block *head;
} te_pool;

/* A NUL-terminated copy of s[0..len) that lives as long as the pool, or NULL. */
char *te_pool_strndup(te_pool *pool, const char *s, size_t len);
char *te_pool_printf(te_pool *pool, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void te_pool_free(te_pool *pool);

/* Make room for need elements of size elem in *ptr (capacity *cap): doubles,
 * checks for overflow. Returns 0, or -1 when out of memory (*ptr unchanged). */
int te_grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* ------------------------------------------------------------------- UTF-8 */

/* Length of the longest valid UTF-8 prefix of s[0..len) (strict: no
 * overlongs, no surrogates, nothing past U+10FFFF). */
size_t te_utf8_valid_prefix(const char *s, size_t len);

/* Decode one character of valid UTF-8 at s; returns its byte length. */
size_t te_utf8_next(const char *s, uint32_t *cp);

/* Columns a valid UTF-8 string takes in a terminal (CJK counts 2). */
size_t te_display_width(const char *s);

/* -------------------------------------------------------------------- CSV */

/* The reader and its rule: te_csv.h. */
#include "te_csv.h"

/* Read a whole file ("-" for stdin) into *data (malloc'ed, *len bytes, a NUL
 * appended for convenience). */
te_status te_read_file(const char *path, char **data, size_t *len, te_error *err);

/* ---------------------------------------------------------------- the data */

/* Field indexes of a quadruple. */
enum { TE_ASPECT = 0, TE_OPINION = 1, TE_CATEGORY = 2, TE_POLARITY = 3, TE_N_FIELDS = 4 };

/* One row of gold or predictions as loaded. */
typedef struct te_row {
    long id;
    const char *f[TE_N_FIELDS]; /* pooled strings */
    const char *file;           /* pooled */
    long line;
    long a_start, a_end, o_start, o_end; /* gold character offsets, -1 when blank */
    int placeholder;                     /* all four fields are `_` */
} te_row;

typedef struct te_review {
    long id;
    const char *text;
    const char *file;
    long line;
    size_t seq; /* order of arrival, to undo a failed load */
} te_review;

/* A finding of the loaders, turned into an issue by the scorer. */
typedef struct te_note {
    te_issue_kind kind;
    te_input input;
    const char *file;
    long line;
} te_note;

typedef struct te_rows {
    te_row *v;
    size_t n, cap;
} te_rows;

struct te_eval {
    te_pool pool;
    te_rows rows[2]; /* TE_INPUT_GOLD, TE_INPUT_PREDICTIONS */
    te_review *reviews;
    size_t n_reviews, cap_reviews; /* sorted by id between calls */
    size_t next_seq;
    te_note *notes;
    size_t n_notes, cap_notes;
    const char *last_file[TE_N_INPUTS];
    long n_added[TE_N_INPUTS]; /* rows added in memory, for their "line" */
};

/* The task's label sets. */
extern const char *const te_categories[];
extern const size_t te_n_categories;
extern const char *const te_polarities[];
extern const size_t te_n_polarities;
/* Index of label in the set of the axis, or -1. */
int te_label_index(te_axis axis, const char *label);
/* Whether a result holds a label outside the task's sets (marked "*" in the
 * table and the HTML report, with a footnote only then). */
int te_result_has_unknown_labels(const te_result *res);

#endif /* TE_INTERNAL_H */
