/* pd_jsonl.h - the one reader of JSON-lines inputs, internal to libpocketdec
 * (the reviews reader's JSONL; the command's tokenize, score --jsonl): one
 * JSON value per line, lines of any length up to a limit, blank lines
 * skipped, and every refusal worded as "FILE:LINE: what is wrong". */
#ifndef PD_REVIEWS_JSONL_H
#define PD_REVIEWS_JSONL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest line accepted by default (a line of JSON, in bytes, without its
 * line break): far more than any prompt, small enough to bound memory. */
#define PD_JSONL_MAX_LINE ((size_t)16 << 20)

typedef struct pd_jsonl {
    FILE *f;
    const char *name;   /* "stdin" or the path, for messages */
    size_t max_line;    /* longest line accepted in bytes; 0 = PD_JSONL_MAX_LINE */
    long line;          /* the number of the line last read (1-based) */
    char what[384];     /* after PD_JSONL_BAD or _FAIL: what is wrong (no FILE:LINE prefix) */
    char *buf;          /* the line last read (private) */
    size_t cap;
} pd_jsonl;

typedef enum pd_jsonl_status {
    PD_JSONL_END = 0,  /* end of input */
    PD_JSONL_OK = 1,   /* *value holds the line's value */
    PD_JSONL_BAD = 2,  /* this line is refused (r->what); the next call reads the line after it */
    PD_JSONL_FAIL = 3  /* the stream cannot be read or memory ran out (r->what): stop */
} pd_jsonl_status;

/* Start reading f; name is used in messages. */
void pd_jsonl_init(pd_jsonl *r, FILE *f, const char *name);
/* Release the reader's buffer (not f). */
void pd_jsonl_free(pd_jsonl *r);

/* Read lines up to the next one that is not blank and parse it. Refused:
 * a line over max_line bytes, a NUL byte, invalid UTF-8 (named by byte
 * offset), malformed JSON (with its column), duplicate keys, trailing text.
 * A UTF-8 byte order mark at the start of the input and a CR before the line
 * break are dropped. On PD_JSONL_OK the caller owns *value (json_decref). */
pd_jsonl_status pd_jsonl_next(pd_jsonl *r, json_t **value);

/* Refuse the current line with a printf-style reason; returns PD_JSONL_BAD. */
pd_jsonl_status pd_jsonl_bad(pd_jsonl *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Type checks of a line's value. Each returns true when the value fits; when
 * it does not, it sets r->what (naming the key and the JSON type found) and
 * returns false. */

/* v is a JSON object. */
bool pd_jsonl_object(pd_jsonl *r, const json_t *v);
/* obj[key] is a string: *s (NUL-free: JSON \u0000 is refused) and *len (may
 * be NULL). An absent optional key gives *s = NULL. */
bool pd_jsonl_string(pd_jsonl *r, const json_t *obj, const char *key, bool required, const char **s, size_t *len);
/* obj[key] is an array of at most max strings: *out is a malloc'd array of *n
 * pointers into obj (free it, not the strings). An absent optional key gives
 * *out = NULL, *n = 0. Out of memory also returns false. */
bool pd_jsonl_strings(pd_jsonl *r, const json_t *obj, const char *key, bool required, size_t max,
                       const char ***out, size_t *n);
/* v is an array of integers in int32 range: *ids is malloc'd (free it). */
bool pd_jsonl_ids(pd_jsonl *r, const json_t *v, int32_t **ids, size_t *n);
/* obj[key] is a string or an integer (an id): *s is its text, written into
 * buf (size >= 24) for an integer. */
bool pd_jsonl_id(pd_jsonl *r, const json_t *obj, const char *key, char *buf, const char **s);


#endif
