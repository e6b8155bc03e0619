/* tag_prompt.c - a tagger head made ready to run on one model: its prompt
 * template split at each {text}, {chars} and {marked} with the literal
 * parts tokenized once, its gazetteer's marker tokens resolved; and the
 * prompt of one text built from them. */
#include "heads.h"

#include <stdlib.h>
#include <string.h>

/* One part of the prompt template: literal ids, a copy of the text, the
 * text with the gazetteer's matches between marker tokens, or the text
 * encoded one character at a time. */
typedef enum { PIECE_LITERAL, PIECE_TEXT, PIECE_MARKED, PIECE_CHARS } piece_kind;

/* The slot names, by piece kind. */
static const char *const slot_name[] = {NULL, "{text}", "{marked}", "{chars}"};

typedef struct piece {
    int32_t *ids;
    size_t n;
    piece_kind kind;
} piece;

struct pdi_tag_runner {
    const pd_head *head;
    const pd_model *model;
    piece *pieces;
    int32_t n_pieces, read_piece; /* read_piece: the last {text} or {chars} */
    bool has[PIECE_CHARS + 1];     /* which slots the template holds */
    int32_t marks[PD_TAGGER_MAX_SPANS][2]; /* open and close marker ids of each span field (gazetteer) */
};

void pdi_tag_runner_free(pdi_tag_runner *r)
{
    if (!r) return;
    for (int32_t i = 0; i < r->n_pieces; i++) pd_free(r->pieces[i].ids);
    free(r->pieces);
    free(r);
}

const pd_head *pdi_tag_runner_head(const pdi_tag_runner *r) { return r->head; }
const pd_model *pdi_tag_runner_model(const pdi_tag_runner *r) { return r->model; }

/* The next {text}, {marked} or {chars} at or after p (NULL when none);
 * *kind says which. */
static const char *next_slot(const char *p, piece_kind *kind)
{
    const char *first = NULL;
    *kind = PIECE_TEXT;
    for (piece_kind k = PIECE_TEXT; k <= PIECE_CHARS; k++) {
        const char *at = strstr(p, slot_name[k]);
        if (at && (!first || at < first)) {
            first = at;
            *kind = k;
        }
    }
    return first;
}

/* The template split at each {text}, {marked} and {chars}; literal parts
 * tokenized with special tokens recognised. */
static pd_status split_prompt(pdi_tag_runner *r, const char *src, pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(r->model);
    const char *prompt = r->head->tagger->prompt;
    size_t cap = 1;
    piece_kind kind;
    for (const char *p = prompt; (p = next_slot(p, &kind)); p++) cap += 2;
    if (!(r->pieces = calloc(cap, sizeof *r->pieces))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", src);
    for (const char *p = prompt;;) {
        const char *at = next_slot(p, &kind);
        size_t len = at ? (size_t)(at - p) : strlen(p);
        if (len > 0) {
            piece *pc = &r->pieces[r->n_pieces++];
            pd_status rc = pd_tokenizer_encode(tok, p, len, &pc->ids, &pc->n, err);
            if (rc) {
                pdi_error_prefix(err, "%s: prompt", src);
                return rc;
            }
        }
        if (!at) break;
        if (kind != PIECE_MARKED) r->read_piece = r->n_pieces;
        r->has[kind] = true;
        r->pieces[r->n_pieces++].kind = kind;
        p = at + strlen(slot_name[kind]);
    }
    return PD_OK;
}

/* Each span field's gazetteer markers must be tokens of the model. */
static pd_status resolve_marks(pdi_tag_runner *r, const char *src, pd_error *err)
{
    const pdi_tagger *t = r->head->tagger;
    const pd_tokenizer *tok = pd_model_tokenizer(r->model);
    int32_t vocab = pd_model_config(r->model)->vocab;
    for (int32_t k = 0; t->gazetteer && k < t->n_spans; k++)
        for (int32_t c = 0; c < 2; c++) {
            const char *name = pdi_gazetteer_mark(t->gazetteer, k, c);
            r->marks[k][c] = name ? pd_tokenizer_token_id(tok, name) : -1;
            if (!name) continue;
            if (r->marks[k][c] < 0 || r->marks[k][c] >= vocab)
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: gazetteer marker '%s' is not a token of the model", src,
                                     name);
        }
    return PD_OK;
}

pd_status pdi_tag_runner_new(const pd_head *head, const pd_model *model, pdi_tag_runner **out, pd_error *err)
{
    *out = NULL;
    if (head->type != PD_HEAD_TAGGER || !head->tagger)
        return pdi_set_error(err, PD_ERR_ARG, "%s: not a tagger head (extraction by decisions needs \"type\": \"tagger\")",
                             head->source);
    if (head->hidden != pd_model_config(model)->hidden)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: the head is for hidden size %d, the model has %d", head->source,
                             head->hidden, pd_model_config(model)->hidden);
    if (!pd_model_tokenizer(model))
        return pdi_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to build the prompt with", head->source);
    pdi_tag_runner *r = calloc(1, sizeof *r);
    char *src = pdi_path_join(head->source, "head.json");
    pd_status rc = r && src ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", head->source);
    if (!rc) {
        *r = (pdi_tag_runner){.head = head, .model = model};
        rc = split_prompt(r, src, err);
    }
    if (!rc) rc = resolve_marks(r, src, err);
    free(src);
    if (rc) {
        pdi_tag_runner_free(r);
        return rc;
    }
    *out = r;
    return PD_OK;
}

/* ---------------------------------------------------------- one prompt */

static pd_status nomem(const pdi_tag_runner *r, pd_error *err)
{
    return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory building a prompt", r->head->source);
}

/* Append k ids to the growing array *out (*n used, *cap allocated). */
static bool append_ids(int32_t **out, size_t *n, size_t *cap, const int32_t *ids, size_t k)
{
    int32_t *grown = pdi_grow(*out, cap, *n + k, sizeof *grown);
    if (!grown) return false;
    *out = grown;
    if (k) memcpy(*out + *n, ids, sizeof *ids * k);
    *n += k;
    return true;
}

/* Append the plain ids of text[0..len) (nothing when len is 0). */
static pd_status append_plain(const pdi_tag_runner *r, const char *text, size_t len, int32_t **out, size_t *n,
                              size_t *cap, pd_error *err)
{
    int32_t *ids = NULL;
    size_t k = 0;
    pd_status rc = len ? pd_tokenizer_encode_plain(pd_model_tokenizer(r->model), text, len, &ids, &k, err) : PD_OK;
    if (!rc && !append_ids(out, n, cap, ids, k)) rc = nomem(r, err);
    pd_free(ids);
    return rc;
}

/* The {marked} copy: the text's plain ids, each gazetteer match between the
 * open markers of its fields (in span order) and their close markers (in
 * reverse); the text between matches is encoded piece by piece. */
static pd_status marked_ids(const pdi_tag_runner *r, const char *text, size_t len, int32_t **out, size_t *n,
                            pd_error *err)
{
    const pdi_tagger *t = r->head->tagger;
    pdi_gaz_match *m = NULL;
    int32_t n_m = 0;
    size_t cap = 0, at = 0;
    *out = NULL;
    *n = 0;
    pd_status rc = pdi_gazetteer_match(t->gazetteer, ~0u, text, len, &m, &n_m, err);
    for (int32_t i = 0; !rc && i <= n_m; i++) {
        size_t start = i < n_m ? m[i].start : len;
        rc = append_plain(r, text + at, start - at, out, n, &cap, err);
        if (rc || i == n_m) break;
        int32_t open[PD_TAGGER_MAX_SPANS], close[PD_TAGGER_MAX_SPANS], k_n = 0;
        for (int32_t k = 0; k < t->n_spans; k++)
            if (m[i].fields & (1u << k)) {
                open[k_n] = r->marks[k][0];
                close[k_n++] = r->marks[k][1];
            }
        for (int32_t a = 0, b = k_n - 1; a < b; a++, b--) { /* close in reverse */
            int32_t swap = close[a];
            close[a] = close[b];
            close[b] = swap;
        }
        if (!append_ids(out, n, &cap, open, (size_t)k_n)) rc = nomem(r, err);
        if (!rc) rc = append_plain(r, text + m[i].start, m[i].end - m[i].start, out, n, &cap, err);
        if (!rc && !append_ids(out, n, &cap, close, (size_t)k_n)) rc = nomem(r, err);
        at = m[i].end;
    }
    free(m);
    return rc;
}

/* The {chars} copy: each character of the text encoded alone as plain text
 * (so every character starts a token; a character that is no token of the
 * vocabulary is its byte tokens). A character is a byte that is no UTF-8
 * continuation byte and the continuation bytes after it; the encoder
 * refuses a piece that is not valid UTF-8. */
static pd_status chars_ids(const pdi_tag_runner *r, const char *text, size_t len, int32_t **out, size_t *n,
                           pd_error *err)
{
    size_t cap = 0;
    pd_status rc = PD_OK;
    *out = NULL;
    *n = 0;
    for (size_t at = 0, end; !rc && at < len; at = end) {
        for (end = at + 1; end < len && pdi_utf8_is_continuation((uint8_t)text[end]); end++) {}
        rc = append_plain(r, text + at, end - at, out, n, &cap, err);
    }
    return rc;
}

pd_status pdi_tag_prompt(const pdi_tag_runner *r, const char *text, size_t len, pd_tag_trace *tr, pd_error *err)
{
    int32_t *ids = NULL, *marked = NULL, *chars = NULL;
    size_t n_ids = 0, n_marked = 0, n_chars = 0, total = 0;
    pd_status rc = r->has[PIECE_TEXT] ? pd_tokenizer_encode_plain(pd_model_tokenizer(r->model), text, len, &ids, &n_ids, err)
                                      : PD_OK;
    if (!rc && r->head->tagger->gazetteer) rc = marked_ids(r, text, len, &marked, &n_marked, err);
    if (!rc && r->has[PIECE_CHARS]) rc = chars_ids(r, text, len, &chars, &n_chars, err);
    const int32_t *src[] = {NULL, ids, marked, chars};
    size_t count[] = {0, n_ids, n_marked, n_chars};
    for (int32_t i = 0; !rc && i < r->n_pieces; i++) {
        const piece *pc = &r->pieces[i];
        total += pc->kind == PIECE_LITERAL ? pc->n : count[pc->kind];
    }
    if (!rc && (total > INT32_MAX || !(tr->tokens = malloc(sizeof *tr->tokens * (total ? total : 1))))) rc = nomem(r, err);
    for (int32_t i = 0; !rc && i < r->n_pieces; i++) {
        const piece *pc = &r->pieces[i];
        size_t k = pc->kind == PIECE_LITERAL ? pc->n : count[pc->kind];
        if (i == r->read_piece) tr->read_start = tr->n_tokens;
        if (k) memcpy(tr->tokens + tr->n_tokens, pc->kind == PIECE_LITERAL ? pc->ids : src[pc->kind], sizeof *ids * k);
        tr->n_tokens += (int32_t)k;
    }
    if (!rc) tr->n_read = (int32_t)count[r->pieces[r->read_piece].kind];
    pd_free(ids);
    free(marked);
    free(chars);
    return rc;
}
