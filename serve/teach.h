/* teach.h - annotation in the playground (`pocketdec serve --teach`,
 * teach.c): one review at a time, most useful first (pd_ranker), with the
 * model's records; each answer a line of the labels file, on disk before it
 * is answered OK (pd_output, fsync'ed). docs/serve.md, "Teach it". Not
 * installed. */
#ifndef PD_SERVE_TEACH_H
#define PD_SERVE_TEACH_H

#include "pocketdec_serve.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct teach teach;
struct generation;

/* The operations under /v1/teach/: next, progress, changes (GET); answer, skip, undo (POST). */
enum { TEACH_NEXT, TEACH_PROGRESS, TEACH_CHANGES, TEACH_ANSWER, TEACH_SKIP, TEACH_UNDO, N_TEACH_OPS };

/* The operation of url (TEACH_*), or -1 when url is not one. */
int serve_teach_op(const char *url);
bool serve_teach_wants_post(int op);

/* Read the labels file back (its torn last line cut), rank the reviews not
 * labelled yet with generation g's model, and keep the file open for
 * answers: NULL with msg filled when it cannot (a labels file of another
 * format, a review file it does not fit, an ordering the head cannot give).
 * Prints a line on stderr. The queue holds a reference on g (taken by the
 * caller, under the server's mutex). */
teach *serve_teach_open(struct generation *g, const pd_schema *schema, const serve_config *cfg, char *msg,
                        size_t msg_size);
void serve_teach_free(teach *t);

/* A reload's part (reload.c): the queue moved onto generation g (not yet
 * current): a ranker of g's model, the reviews not labelled ranked again by
 * it (same ordering), the next reviews proposed by it; the request being
 * answered finishes on the old one first. 0 with *old the generation the
 * queue held (its reference the caller drops, under the server's mutex,
 * once g is current; the caller takes one on g), or 1 with msg saying why
 * and nothing changed. */
int serve_teach_follow(teach *t, struct generation *g, struct generation **old, char *msg, size_t msg_size);

/* Answer operation op with body (len bytes; POST only): the HTTP status and
 * the JSON answer (malloc'ed) into *out. Safe from any thread. */
int serve_teach_handle(teach *t, int op, const char *body, size_t len, char **out);

#endif
