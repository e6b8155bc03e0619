/* request.h - the HTTP server's request bodies, apart from any socket: each
 * body parsed and checked (UTF-8, JSON, the fields and their types, the
 * limits), the bearer key compared in constant time, and the answers built
 * as JSON. The socket side (server.c) calls these; the unit test and the
 * fuzz target (tests/serve/, tests/fuzz/fuzz_serve_request.c) call them
 * directly. */
#ifndef PD_SERVE_REQUEST_H
#define PD_SERVE_REQUEST_H

#include "pocketdec.h"
#include "pocketdec_summary.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SERVE_MESSAGE_SIZE 256

/* POST /v1/extract: {"text": "..."} or {"texts": ["...", ...]}, the latter
 * with optional "ids": [id, ...] (strings or integers, one a text): each
 * result then also carries the command's lines for that id ("jsonl" and
 * "tianchi": what `pocketdec extract` writes, byte for byte). With "ids",
 * optional "extras": [members or null, ...], one a text: a CSV row's other
 * columns as JSON members ("rating":"5","sku":"A1", the "extra_json" of
 * /v1/reviews/read), carried into its "jsonl" line as the command carries
 * them. A string is sent, not an object, so that the columns keep the
 * file's order (a JavaScript object reorders keys that look like numbers). */
typedef struct serve_extract_req {
    json_t *root;       /* the parsed body: owns the strings below */
    const json_t *ids;  /* NULL, or the ids (an array of n strings or integers) */
    char **extras;      /* NULL, or [n]: each text's members, checked and written compact (malloc'ed), or NULL */
    const char **texts; /* [n], NUL-terminated, valid UTF-8 without NUL */
    size_t *lens;       /* [n] their lengths in bytes */
    size_t n;
    bool many;          /* "texts" (the answer is {"results": [...]}) */
} serve_extract_req;

/* POST /v1/score: {"text": "...", "question": "...", "candidates": ["...", ...]};
 * question may be absent (""), candidates absent or empty (a classifier head
 * then scores all its labels). */
typedef struct serve_score_req {
    json_t *root;
    const char *text, *question;
    const char **cands; /* [n] */
    size_t n;
} serve_score_req;

/* POST /v1/why: {"text": "..."}, into req->text (the other fields unset). */
int serve_parse_why(const char *body, size_t len, serve_score_req *req, char msg[SERVE_MESSAGE_SIZE]);

/* Parse and check a body of len bytes. Returns 0 and fills *req, or the HTTP
 * status to answer (400, or 413 when there are more than max_texts texts,
 * more than max_cands candidates) with msg saying what is wrong ("the body is
 * empty", "\"texts\"[3] must be a string", ...). On failure *req holds
 * nothing to free; on success free it with the matching _free. */
int serve_parse_extract(const char *body, size_t len, size_t max_texts, serve_extract_req *req, char msg[SERVE_MESSAGE_SIZE]);
void serve_extract_req_free(serve_extract_req *req);
int serve_parse_score(const char *body, size_t len, size_t max_cands, serve_score_req *req, char msg[SERVE_MESSAGE_SIZE]);
void serve_score_req_free(serve_score_req *req);

/* POST /v1/reload: no body, or {"model": "DIR"}: 0 with *path the folder
 * (malloc'ed) or NULL (no body, or no "model": the path the server was
 * started with), or 400 with msg saying what is wrong. */
int serve_parse_reload(const char *body, size_t len, char **path, char msg[SERVE_MESSAGE_SIZE]);

/* POST /v1/summarize: {"reviews": [{"id", "text", "records": [...]}, ...]}
 * (a file's results of /v1/extract): 0 with *root the parsed body (free with
 * json_decref) and *reviews its array, or 400 with msg. Each review is
 * checked by serve_summarize. */
int serve_parse_summarize(const char *body, size_t len, json_t **root, const json_t **reviews,
                          char msg[SERVE_MESSAGE_SIZE]);

/* The summary (summary/pocketdec_summary.h, as `pocketdec summarize` writes
 * it, every cell's reviews under "listed") of reviews, estimated under the
 * rates cal (NULL: none), read from the file named cal_name (for messages).
 * Returns 200 with *out the JSON (malloc'ed), or 400 (a review or record that
 * is not one: msg names which), 500. */
int serve_summarize(const json_t *reviews, const pds_calibration *cal, const char *cal_name, char **out,
                    char msg[SERVE_MESSAGE_SIZE]);

/* POST /v1/reviews/read: a file of reviews (the body: its bytes, any
 * encoding) read by the library's reader (pocketdec_reviews.h), as `pocketdec
 * extract` reads it, with the options of the query: name (the file's name,
 * for messages and, without format, its extension), format ("csv", "jsonl";
 * empty or NULL: by the name), id_column, text_column, encoding (empty or
 * NULL: the defaults). 200 with *out {"rows": [{"id", "text", "line",
 * "extra": {other columns}, "extra_json": "the same as JSON members, in the
 * file's order" (absent without other columns)}], "problems": ["FILE:LINE:
 * ...", ...]} (a
 * broken row is a problem and reading goes on), or 400 with *out the error
 * body naming what is wrong (the file's encoding, its columns, ...), 500
 * when out of memory (*out may then be NULL). */
typedef struct serve_reviews_opts {
    const char *name, *format, *id_column, *text_column, *encoding;
} serve_reviews_opts;
int serve_read_reviews(const char *body, size_t len, const serve_reviews_opts *o, char **out);

/* Whether the Authorization header value is "Bearer KEY"; the time taken
 * depends on KEY's length only, never on where the two differ. header may be
 * NULL (no header). */
bool serve_auth_ok(const char *header, const char *key);

/* {"error": msg} as compact JSON (malloc'ed), or NULL when out of memory. */
char *serve_error_body(const char *msg);

#endif
