/*
 * windows.h - a text too long for one pass cut into overlapping windows at
 * sentence ends, and the windows' records merged (pipeline.c's long-review
 * path). Not installed.
 */
#ifndef PD_COMPOSE_WINDOWS_H
#define PD_COMPOSE_WINDOWS_H

#include "pd_internal.h"
#include "pocketdec_schemas.h"
#include "records.h"

#include <stdbool.h>

typedef struct pdi_window {
    size_t begin, end;          /* its bytes of the text */
    int32_t char_begin, char_end; /* the same in characters */
    bool cut_begin, cut_end;    /* it starts, ends inside a word (no punctuation there) */
} pdi_window;

/* Cut text (len bytes of UTF-8) into windows of at most max_chars (>= 1)
 * characters: each ends at the last sentence end (。！？；!?;… or a line
 * break) that fits, else the last clause end (，,、 or a space), else after
 * max_chars (inside a word); the next starts at the earliest sentence or
 * clause start in the last quarter of the one before (they share those
 * clauses), else where it ended, or after a cut inside a word a quarter
 * before it. Windows cover the text in order; *out is malloc'ed (NULL and 0
 * for an empty text). PD_ERR_NOMEM or PD_ERR_ARG (max_chars < 1). */
pd_status pdi_windows_split(const char *text, size_t len, int32_t max_chars, pdi_window **out, int32_t *n);

/* Merge part, window w's extraction (offsets in the window), into x (offsets
 * in the text): each record's offsets moved by the window's start; a record
 * with a span that touches a cut inside a word dropped (an end at w's end,
 * unless w is the last, or a start at w's start, after such a cut: the
 * neighbour reads it whole); a record whose spans sit where a record of
 * x has them (a window before read it too) kept once, the more confident
 * reading. part's records are moved out; its stats added to x's (mask_us
 * appended), stats.n_windows counted, a stop other than PD_STOP_END kept.
 * PD_ERR_NOMEM is the only failure. */
pd_status pdi_windows_merge(pd_extraction *x, pd_extraction *part, const pdi_window *w, bool last);

/* Sort x's records by their first span's start, stably (the text order a
 * whole pass gives). */
void pdi_windows_order(pd_extraction *x);

#endif
