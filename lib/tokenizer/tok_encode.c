/* tok_encode.c - text to ids: added tokens split out of the raw text,
 * normalisation, regex pre-tokenisation, byte-level BPE.
 *
 * All scratch memory lives in a per-call `enc` so that a tokenizer can be
 * shared by threads. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct sym {
    int32_t id, prev, next; /* id -1: merged into its left neighbour */
} sym;

typedef struct cand {
    uint32_t rank;
    int32_t pos, left, right, merged;
} cand;

typedef struct seg {
    size_t a, b;
    bool match;
} seg;

typedef struct enc {
    const pd_tokenizer *tok;
    pd_error *err;
    int32_t *ids;
    size_t n_ids, cap_ids;
    pcre2_match_data *md;
    sym *syms;
    size_t cap_syms;
    cand *heap;
    size_t n_heap, cap_heap;
    char *buf; /* byte-level form of a piece (ignore_merges) */
    size_t cap_buf;
    bool plain; /* no added token is recognised in the text */
} enc;

static pd_status nomem(const enc *e)
{
    return pdi_set_error(e->err, PD_ERR_NOMEM, "%s: out of memory while encoding", e->tok->source);
}

static pd_status emit(enc *e, int32_t id)
{
    int32_t *ids = pdi_grow(e->ids, &e->cap_ids, e->n_ids + 1, sizeof *ids);
    if (!ids) return nomem(e);
    e->ids = ids;
    e->ids[e->n_ids++] = id;
    return PD_OK;
}

/* ------------------------------------------------------------------ BPE */

static bool cand_less(const cand *x, const cand *y)
{
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(enc *e, cand c)
{
    size_t i = e->n_heap++;
    while (i > 0 && cand_less(&c, &e->heap[(i - 1) / 2])) {
        e->heap[i] = e->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    e->heap[i] = c;
}

static cand heap_pop(enc *e)
{
    cand top = e->heap[0], last = e->heap[--e->n_heap];
    size_t i = 0, n = e->n_heap;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && cand_less(&e->heap[k + 1], &e->heap[k])) k++;
        if (!cand_less(&e->heap[k], &last)) break;
        e->heap[i] = e->heap[k];
        i = k;
    }
    if (n) e->heap[i] = last;
    return top;
}

static void push_pair(enc *e, int32_t a, int32_t b)
{
    const tok_pair_entry *p = tok_pairs_get(e->tok, e->syms[a].id, e->syms[b].id);
    if (p) heap_push(e, (cand){p->rank, a, e->syms[a].id, e->syms[b].id, p->merged});
}

/* ignore_merges: a piece that is a whole vocabulary token is taken as is. */
static int32_t whole_piece(enc *e, const uint8_t *p, size_t n)
{
    char *buf = pdi_grow(e->buf, &e->cap_buf, 2 * n, 1);
    if (!buf) return -1;
    e->buf = buf;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += pdi_utf8_put(tok_byte_to_cp(p[i]), e->buf + len);
    return tok_vocab_get(e->tok, e->buf, len);
}

/* Merge the piece's bytes by rank, leftmost first among equal ranks (the
 * order of HF's BPE), with a heap of candidate pairs over a linked list. */
static pd_status bpe(enc *e, const uint8_t *p, size_t n)
{
    const pd_tokenizer *tok = e->tok;
    if (tok->ignore_merges) {
        int32_t id = whole_piece(e, p, n);
        if (id >= 0) return emit(e, id);
    }
    sym *syms = n > INT32_MAX / 4 ? NULL : pdi_grow(e->syms, &e->cap_syms, n, sizeof *syms);
    if (syms) e->syms = syms;
    cand *heap = syms ? pdi_grow(e->heap, &e->cap_heap, 3 * n, sizeof *heap) : NULL;
    if (!heap) return nomem(e);
    e->heap = heap;
    int32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_token[p[i]];
        if (id < 0) { /* a byte without a token: unk, or dropped as HF does without unk */
            if (tok->unk_id < 0 || (tok->fuse_unk && m > 0 && e->syms[m - 1].id == tok->unk_id)) continue;
            id = tok->unk_id;
        }
        e->syms[m] = (sym){id, m - 1, m + 1};
        m++;
    }
    if (m == 0) return PD_OK;
    e->syms[m - 1].next = -1;
    e->n_heap = 0;
    for (int32_t i = 0; i + 1 < m; i++) push_pair(e, i, i + 1);
    while (e->n_heap > 0) {
        cand c = heap_pop(e);
        sym *l = &e->syms[c.pos];
        /* stale candidates: a side was merged since the pair was queued */
        if (l->id != c.left || l->next < 0 || e->syms[l->next].id != c.right) continue;
        int32_t r = l->next;
        l->id = c.merged;
        l->next = e->syms[r].next;
        e->syms[r].id = -1;
        if (l->next >= 0) e->syms[l->next].prev = c.pos;
        if (l->prev >= 0) push_pair(e, l->prev, c.pos);
        if (l->next >= 0) push_pair(e, c.pos, l->next);
    }
    for (int32_t i = 0; i >= 0; i = e->syms[i].next) {
        pd_status st = emit(e, e->syms[i].id);
        if (st != PD_OK) return st;
    }
    return PD_OK;
}

/* -------------------------------------------------------- pre-tokenizer */

static pd_status add_seg(enc *e, seg **segs, size_t *n, size_t *cap, seg s)
{
    seg *grown = pdi_grow(*segs, cap, *n + 1, sizeof *grown);
    if (!grown) return nomem(e);
    *segs = grown;
    (*segs)[(*n)++] = s;
    return PD_OK;
}

/* Matches of the step's regex and the gaps between them, in order. */
static pd_status find_segments(enc *e, const tok_step *sp, const char *s, size_t n, seg **segs,
                               size_t *n_segs)
{
    size_t pos = 0, prev = 0, cap = 0;
    pd_status st = PD_OK;
    *segs = NULL;
    *n_segs = 0;
    while (st == PD_OK && pos < n) {
        uint32_t opts = PCRE2_NO_UTF_CHECK;
        int rc = pcre2_match(sp->re, (PCRE2_SPTR)s, n, pos, opts, e->md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* deep backtracking: the interpreter has more room */
            rc = pcre2_match(sp->re, (PCRE2_SPTR)s, n, pos, opts | PCRE2_NO_JIT, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = pdi_set_error(e->err, PD_ERR_UNSUPPORTED, "%s: pre-tokenizer regex failed: %s",
                               e->tok->source, (char *)msg);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t a = ov[0], b = ov[1];
        if (a == b) { /* an empty match splits nothing: step over one character */
            uint32_t cp;
            size_t len = pdi_utf8_char((const uint8_t *)s + a, n - a, &cp);
            pos = a + (len ? len : 1);
            continue;
        }
        if (a > prev) st = add_seg(e, segs, n_segs, &cap, (seg){prev, a, false});
        if (st == PD_OK) st = add_seg(e, segs, n_segs, &cap, (seg){a, b, true});
        prev = pos = b;
    }
    if (st == PD_OK && prev < n) st = add_seg(e, segs, n_segs, &cap, (seg){prev, n, false});
    return st;
}

/* HF's SplitDelimiterBehavior, in place; the pieces are segs[*lo .. *hi). */
static void apply_behavior(tok_behavior behavior, bool invert, seg *segs, size_t n, size_t *lo, size_t *hi)
{
    size_t w = 0;
    bool prev = false;
    for (size_t i = 0; i < n; i++) segs[i].match ^= invert;
    switch (behavior) {
    case TOK_ISOLATED:
        w = n;
        break;
    case TOK_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!segs[i].match) segs[w++] = segs[i];
        break;
    case TOK_MERGED_PREV:
    case TOK_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            seg s = segs[i];
            bool join = behavior == TOK_MERGED_PREV ? s.match && !prev : s.match == prev;
            if (join && w > 0) segs[w - 1].b = s.b;
            else segs[w++] = s;
            prev = s.match;
        }
        break;
    case TOK_MERGED_NEXT:
        *lo = n;
        for (size_t i = n; i-- > 0;) {
            seg s = segs[i];
            if (s.match && !prev && *lo < n) segs[*lo].a = s.a;
            else segs[--*lo] = s;
            prev = s.match;
        }
        *hi = n;
        return;
    }
    *lo = 0;
    *hi = w;
}

static pd_status pretok(enc *e, const char *s, size_t n, int step)
{
    const pd_tokenizer *tok = e->tok;
    if (n == 0) return PD_OK;
    if (step == tok->n_steps) return bpe(e, (const uint8_t *)s, n);
    const tok_step *sp = &tok->steps[step];
    pd_status st = PD_OK;
    if (!sp->re) { /* ByteLevel add_prefix_space */
        if (s[0] == ' ') return pretok(e, s, n, step + 1);
        char *t = malloc(n + 1);
        if (!t) return nomem(e);
        t[0] = ' ';
        memcpy(t + 1, s, n);
        st = pretok(e, t, n + 1, step + 1);
        free(t);
        return st;
    }
    seg *segs;
    size_t n_segs, lo, hi;
    st = find_segments(e, sp, s, n, &segs, &n_segs);
    if (st == PD_OK) {
        apply_behavior(sp->behavior, sp->invert, segs, n_segs, &lo, &hi);
        for (size_t i = lo; st == PD_OK && i < hi; i++)
            st = pretok(e, s + segs[i].a, segs[i].b - segs[i].a, step + 1);
    }
    free(segs);
    return st;
}

/* ----------------------------------------------------------- normaliser */

/* Whether normalising s with these options certainly changes nothing:
 * ASCII is stable under every form, and code points below U+0300 (no byte
 * >= 0xCC) are stable under NFC. */
static bool norm_stable(int options, const char *s, size_t n)
{
    uint8_t limit = (options & (UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE)) ? 0x80 : 0xCC;
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] >= limit) return false;
    return true;
}

pd_status tok_normalize(const pd_tokenizer *tok, const char *s, size_t n, char **out, size_t *out_len,
                        pd_error *err)
{
    char *owned = NULL;
    for (int k = 0; k < tok->n_norm; k++) {
        if (norm_stable(tok->norm[k], s, n)) continue;
        utf8proc_uint8_t *dst;
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                          (utf8proc_option_t)tok->norm[k]);
        if (r < 0) {
            free(owned);
            return pdi_set_error(err, r == UTF8PROC_ERROR_NOMEM ? PD_ERR_NOMEM : PD_ERR_FORMAT,
                                 "%s: normalizer: %s", tok->source, utf8proc_errmsg(r));
        }
        free(owned);
        owned = (char *)dst;
        s = owned;
        n = (size_t)r;
    }
    *out = owned;
    *out_len = n;
    return PD_OK;
}

/* --------------------------------------------------------- added tokens */

static bool is_space(uint32_t c) /* Unicode White_Space, as Rust's char::is_whitespace */
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

static bool is_word(uint32_t c)
{
    if (c == '_') return true;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

/* The character ending just before offset i (s valid UTF-8); its start in *start. */
static uint32_t char_before(const char *s, size_t i, size_t *start)
{
    size_t j = i - 1;
    while (j > 0 && pdi_utf8_is_continuation((uint8_t)s[j])) j--;
    uint32_t cp = 0;
    pdi_utf8_char((const uint8_t *)s + j, i - j, &cp);
    *start = j;
    return cp;
}

static bool single_word_ok(const char *s, size_t n, size_t a, size_t b)
{
    size_t j;
    uint32_t cp;
    if (a > 0 && is_word(char_before(s, a, &j))) return false;
    return b >= n || !pdi_utf8_char((const uint8_t *)s + b, n - b, &cp) || !is_word(cp);
}

static pd_status split_added(enc *e, const char *s, size_t n, int level);

/* Text between added tokens: normalise, look for normalised added tokens,
 * pre-tokenise. */
static pd_status gap(enc *e, const char *s, size_t n, int level)
{
    if (n == 0) return PD_OK;
    if (level == 1) return pretok(e, s, n, 0);
    char *norm;
    size_t len;
    pd_status st = tok_normalize(e->tok, s, n, &norm, &len, e->err);
    if (st != PD_OK) return st;
    st = split_added(e, norm ? norm : s, len, 1);
    free(norm);
    return st;
}

/* Leftmost-longest search for added tokens (level 0: those matched in the
 * raw text; 1: in the normalised text), honouring single_word, lstrip and
 * rstrip as HF's AddedVocabulary does. */
static pd_status split_added(enc *e, const char *s, size_t n, int level)
{
    const pd_tokenizer *tok = e->tok;
    const tok_added_index *ix = &tok->index[level];
    if (e->plain || ix->first[256] == 0) return gap(e, s, n, level);
    size_t start = 0, i = 0;
    while (i < n) {
        uint8_t c = (uint8_t)s[i];
        const tok_added *a = NULL;
        for (uint32_t k = ix->first[c]; k < ix->first[c + 1] && !a; k++) {
            const tok_added *t = &tok->added[ix->order[k]];
            if (t->match.len <= n - i && memcmp(s + i, tok_arena_at(tok, t->match), t->match.len) == 0) a = t;
        }
        if (!a) {
            i++;
            continue;
        }
        size_t ms = i, me = i + a->match.len, j;
        if (a->single_word && !single_word_ok(s, n, ms, me)) {
            i = me;
            continue;
        }
        while (a->lstrip && ms > start && is_space(char_before(s, ms, &j))) ms = j;
        uint32_t cp;
        size_t len;
        while (a->rstrip && (len = pdi_utf8_char((const uint8_t *)s + me, n - me, &cp)) && is_space(cp))
            me += len;
        pd_status st = gap(e, s + start, ms - start, level);
        if (st == PD_OK) st = emit(e, a->id);
        if (st != PD_OK) return st;
        start = i = me;
    }
    return gap(e, s + start, n - start, level);
}

static pd_status encode(const pd_tokenizer *tok, const char *text, size_t text_len, bool plain, int32_t **ids,
                        size_t *n_ids, pd_error *err)
{
    if (!tok || !ids || !n_ids || (!text && text_len))
        return pdi_set_error(err, PD_ERR_ARG, "%s: NULL argument", plain ? "pd_tokenizer_encode_plain" : "pd_tokenizer_encode");
    *ids = NULL;
    *n_ids = 0;
    size_t bad = pdi_utf8_check((const uint8_t *)text, text_len);
    if (bad < text_len)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: text: invalid UTF-8 at byte offset %zu", tok->source, bad);
    enc e = {.tok = tok, .err = err, .plain = plain};
    pd_status st = PD_OK;
    if (tok->n_steps > 0 && !(e.md = pcre2_match_data_create(1, NULL))) st = nomem(&e);
    if (st == PD_OK && text_len) st = split_added(&e, text, text_len, 0);
    if (st == PD_OK && !e.ids && !(e.ids = malloc(sizeof *e.ids))) st = nomem(&e);
    pcre2_match_data_free(e.md);
    free(e.syms);
    free(e.heap);
    free(e.buf);
    if (st != PD_OK) {
        free(e.ids);
        return st;
    }
    *ids = e.ids;
    *n_ids = e.n_ids;
    return PD_OK;
}

pd_status pd_tokenizer_encode(const pd_tokenizer *tok, const char *text, size_t text_len, int32_t **ids,
                              size_t *n_ids, pd_error *err)
{
    return encode(tok, text, text_len, false, ids, n_ids, err);
}

pd_status pd_tokenizer_encode_plain(const pd_tokenizer *tok, const char *text, size_t text_len, int32_t **ids,
                                    size_t *n_ids, pd_error *err)
{
    return encode(tok, text, text_len, true, ids, n_ids, err);
}
