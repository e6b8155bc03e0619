/* windows.c - a review too long for one pass, read in windows: the text cut
 * at sentence (else clause) ends into windows of at most a number of
 * characters that overlap by their edge clauses, each window's records placed
 * in the whole text, and the windows' records merged into one extraction (the
 * same record seen by two windows kept once; a span a cut inside a word may
 * have shortened dropped, its window's neighbour reads it whole). */
#include "windows.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ cutting */


/* Whether the character at byte b ends a sentence (2: 。！？；!?; …, a line
 * break), a clause (1: ，,、 and spaces), or neither (0). */
static int stop_strength(const char *t, size_t len, size_t b)
{
    static const char *const sentence[] = {"。", "！", "？", "；", "…", "!", "?", ";", "\n", "\r", NULL};
    static const char *const clause[] = {"，", "、", ",", " ", "\t", "　", NULL};
    for (int i = 0; sentence[i]; i++)
        if (strlen(sentence[i]) <= len - b && !memcmp(t + b, sentence[i], strlen(sentence[i]))) return 2;
    for (int i = 0; clause[i]; i++)
        if (strlen(clause[i]) <= len - b && !memcmp(t + b, clause[i], strlen(clause[i]))) return 1;
    return 0;
}

/* The characters of the text: their byte offsets [n + 1] and how strongly a
 * cut after each may fall there ([n]: 2 after a sentence end, 1 after a
 * clause end, 0 inside). */
typedef struct chars {
    size_t *at;
    uint8_t *cut_after;
    int32_t n;
} chars;

static pd_status read_chars(const char *t, size_t len, chars *c)
{
    c->at = malloc(sizeof *c->at * (len + 1));
    c->cut_after = calloc(len + 1, 1);
    if (!c->at || !c->cut_after) return PD_ERR_NOMEM;
    c->n = 0;
    for (size_t b = 0; b < len; b++)
        if (!pdi_utf8_is_continuation((uint8_t)t[b])) {
            c->cut_after[c->n] = (uint8_t)stop_strength(t, len, b);
            c->at[c->n++] = b;
        }
    c->at[c->n] = len;
    return PD_OK;
}

/* The best end of a window that starts at character s: the last character
 * boundary at most s + max_chars after a sentence end, else after a clause
 * end, else s + max_chars itself (*cut: a cut inside a word). */
static int32_t window_end(const chars *c, int32_t s, int32_t max_chars, bool *cut)
{
    int32_t limit = s + max_chars;
    *cut = false;
    if (limit >= c->n) return c->n;
    for (int strength = 2; strength >= 1; strength--)
        for (int32_t e = limit; e > s; e--)
            if (c->cut_after[e - 1] >= strength) return e;
    *cut = true;
    return limit;
}

/* Where the window after [s, e) starts: at the earliest sentence or clause
 * start in its last quarter, so that the two share their edge clauses (an
 * aspect in one and its opinion in the next read together), else at e; after
 * a cut inside a word, a quarter before it, so that the word is read whole.
 * Always after s. */
static int32_t next_start(const chars *c, int32_t s, int32_t e, int32_t max_chars, bool cut)
{
    int32_t from = e - max_chars / 4;
    if (from <= s) from = s + 1;
    for (int32_t k = from; k < e; k++)
        if (c->cut_after[k - 1]) return k;
    return cut ? from : e;
}

pd_status pdi_windows_split(const char *text, size_t len, int32_t max_chars, pdi_window **out, int32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (max_chars < 1) return PD_ERR_ARG;
    chars c = {0};
    pd_status rc = read_chars(text, len, &c);
    pdi_window *w = NULL;
    int32_t n = 0, cap = 0;
    for (int32_t s = 0; !rc && s < c.n;) {
        bool cut;
        int32_t e = window_end(&c, s, max_chars, &cut);
        if (n == cap) {
            pdi_window *more = realloc(w, sizeof *w * (size_t)(cap = cap ? 2 * cap : 8));
            if (!more) {
                rc = PD_ERR_NOMEM;
                break;
            }
            w = more;
        }
        w[n++] = (pdi_window){.begin = c.at[s], .end = c.at[e], .char_begin = s, .char_end = e,
                              .cut_begin = s > 0 && !c.cut_after[s - 1], .cut_end = cut};
        if (e >= c.n) break;
        s = next_start(&c, s, e, max_chars, cut);
    }
    free(c.at);
    free(c.cut_after);
    if (rc) {
        free(w);
        return rc;
    }
    *out = w;
    *n_out = n;
    return PD_OK;
}

/* ------------------------------------------------------------ merging */

/* Whether a record of window w has a span that a cut inside a word may have
 * shortened: one that ends where w ends so (the next window reads on), or
 * starts where w starts so (the previous one read it). */
static bool touches_cut(const pd_record *r, int32_t n_fields, const pdi_window *w, bool last)
{
    for (int32_t f = 0; f < n_fields; f++) {
        if (r->start[f] < 0) continue;
        if (!last && w->cut_end && r->end[f] + w->char_begin >= w->char_end) return true;
        if (w->cut_begin && r->start[f] == 0) return true;
    }
    return false;
}

/* Whether two records have the same spans at the same places (the same
 * record read by two windows, whatever their labels). */
static bool same_spans(const pd_record *a, const pd_record *b, int32_t n_fields)
{
    for (int32_t f = 0; f < n_fields; f++) {
        if (a->start[f] != b->start[f] || a->end[f] != b->end[f]) return false;
        if (a->start[f] < 0 && strcmp(a->values[f], b->values[f])) return false; /* enums, `_` */
    }
    return true;
}

/* Move record r (offsets already in the text) into x, or drop it in favour of
 * the more confident of two readings of the same spans. */
static pd_status keep(pd_extraction *x, pd_record *r)
{
    for (int32_t q = 0; q < x->n_records; q++) {
        if (!same_spans(&x->records[q], r, x->n_fields)) continue;
        if (r->confidence > x->records[q].confidence) {
            pd_record old = x->records[q];
            x->records[q] = *r;
            *r = old;
        }
        pdi_record_free(r, x->n_fields);
        return PD_OK;
    }
    pd_record *recs = realloc(x->records, sizeof *recs * (size_t)(x->n_records + 1));
    if (!recs) return PD_ERR_NOMEM;
    x->records = recs;
    recs[x->n_records++] = *r;
    *r = (pd_record){0};
    return PD_OK;
}

static void add_stats(pd_extraction_stats *to, const pd_extraction_stats *s)
{
    to->n_prompt_tokens += s->n_prompt_tokens;
    to->n_tokens += s->n_tokens;
    to->n_sparse += s->n_sparse;
    to->n_cached_tokens += s->n_cached_tokens;
    to->n_forward += s->n_forward;
    to->n_drafted += s->n_drafted;
    to->n_accepted += s->n_accepted;
    to->n_copies_drafted += s->n_copies_drafted;
    to->n_copies_kept += s->n_copies_kept;
}

pd_status pdi_windows_merge(pd_extraction *x, pd_extraction *part, const pdi_window *w, bool last)
{
    pd_status rc = PD_OK;
    if (part->stats.mask_us) { /* the steps' mask times, window after window */
        double *more = realloc(x->stats.mask_us, sizeof *more * ((size_t)x->stats.n_tokens + (size_t)part->stats.n_tokens + 1));
        if (!more) return PD_ERR_NOMEM;
        memcpy(more + x->stats.n_tokens, part->stats.mask_us, sizeof *more * ((size_t)part->stats.n_tokens + 1));
        x->stats.mask_us = more;
    }
    add_stats(&x->stats, &part->stats);
    x->stats.n_windows++;
    if (part->stop != PD_STOP_END) x->stop = part->stop;
    for (int32_t r = 0; r < part->n_records; r++) {
        pd_record *rec = &part->records[r];
        if (touches_cut(rec, x->n_fields, w, last)) continue;
        for (int32_t f = 0; f < x->n_fields; f++)
            if (rec->start[f] >= 0) {
                rec->start[f] += w->char_begin;
                rec->end[f] += w->char_begin;
            }
        if (!rc) rc = keep(x, rec);
    }
    return rc;
}

/* The first character any span of r starts at (INT32_MAX without one). */
static int32_t anchor(const pd_record *r, int32_t n_fields)
{
    int32_t a = INT32_MAX;
    for (int32_t f = 0; f < n_fields; f++)
        if (r->start[f] >= 0 && r->start[f] < a) a = r->start[f];
    return a;
}

void pdi_windows_order(pd_extraction *x)
{
    /* insertion sort: stable, and the records come nearly sorted */
    for (int32_t i = 1; i < x->n_records; i++) {
        pd_record r = x->records[i];
        int32_t a = anchor(&r, x->n_fields), j = i;
        while (j > 0 && anchor(&x->records[j - 1], x->n_fields) > a) {
            x->records[j] = x->records[j - 1];
            j--;
        }
        x->records[j] = r;
    }
}
