/* teach_check.h - an answer of the annotation page (POST
 * /v1/teach/answer's "records") checked against the schema and the review's
 * text (teach_check.c). Not installed. */
#ifndef PD_SERVE_TEACH_CHECK_H
#define PD_SERVE_TEACH_CHECK_H

#include "pocketdec.h"
#include "request.h"

#include <jansson.h>
#include <stddef.h>

/* given (the answer's "records") checked against schema and text (len
 * bytes of UTF-8): 0 with *out the records in the labels file's form (every
 * field; a span {text, start, end} in characters with the review's text, or
 * null for `_`), or 400 (500: out of memory) with msg (SERVE_MESSAGE_SIZE
 * bytes) naming the record and field and what is wrong. */
int serve_teach_check(const pd_schema *schema, const char *text, size_t len, const json_t *given, json_t **out,
                      char *msg);

/* Characters [start, end) of text as {text, start, end} (NULL when out of memory). */
json_t *serve_span_json(const char *text, size_t len, size_t start, size_t end);

#endif
