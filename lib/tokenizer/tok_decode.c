/* tok_decode.c - ids to bytes, and lookups of single tokens. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

int32_t pd_tokenizer_n_vocab(const pd_tokenizer *tok)
{
    return tok ? tok->n_ids : 0;
}

/* Whether id names a token (ids may have gaps). */
static bool has_token(const pd_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_ids && (tok->flags[id] & (TOK_VOCAB | TOK_ADDED));
}

pd_status pd_tokenizer_decode(const pd_tokenizer *tok, const int32_t *ids, size_t n_ids, char **text,
                              size_t *text_len, pd_error *err)
{
    if (!tok || !text || !text_len || (!ids && n_ids))
        return pdi_set_error(err, PD_ERR_ARG, "decoding tokens: NULL argument");
    *text = NULL;
    *text_len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (!has_token(tok, ids[i]))
            return pdi_set_error(err, PD_ERR_RANGE, "%s: id %ld at position %zu is not a token (0 to %ld)",
                                 tok->source, (long)ids[i], i, (long)tok->n_ids - 1);
        if (total > SIZE_MAX / 2) return pdi_set_error(err, PD_ERR_NOMEM, "%s: decoded text too long", tok->source);
        total += tok->bytes[ids[i]].len;
    }
    char *out = malloc(total + 1);
    if (!out) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory while decoding", tok->source);
    size_t n = 0;
    for (size_t i = 0; i < n_ids; i++) {
        tok_span b = tok->bytes[ids[i]];
        memcpy(out + n, tok_arena_at(tok, b), b.len);
        n += b.len;
    }
    out[n] = '\0';
    *text = out;
    *text_len = n;
    return PD_OK;
}

const char *pd_tokenizer_token_bytes(const pd_tokenizer *tok, int32_t id, size_t *len)
{
    if (!tok || !has_token(tok, id)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = tok->bytes[id].len;
    return tok_arena_at(tok, tok->bytes[id]);
}

int32_t pd_tokenizer_token_id(const pd_tokenizer *tok, const char *token)
{
    if (!tok || !token) return -1;
    size_t len = strlen(token);
    /* added tokens first: their content wins over a vocabulary entry, as in HF */
    for (size_t i = 0; i < tok->n_added; i++) {
        const tok_added *a = &tok->added[i];
        if (a->content.len == len && memcmp(tok_arena_at(tok, a->content), token, len) == 0) return a->id;
    }
    return tok_vocab_get(tok, token, len);
}

int pd_tokenizer_is_special(const pd_tokenizer *tok, int32_t id)
{
    return tok && id >= 0 && id < tok->n_ids && (tok->flags[id] & TOK_SPECIAL) != 0;
}
