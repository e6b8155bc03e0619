/* tok_build.c - assembling a tokenizer from its parts: vocabulary, added
 * tokens, merges, pre-tokenizer steps; the GGUF entry point; freeing. */
#include "tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tok_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char tok_qwen2_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

pd_tokenizer *tok_new(const char *source, int32_t n_ids, size_t n_vocab, pd_error *err)
{
    if (n_ids < 0 || n_ids > TOK_MAX_IDS) {
        pdi_set_error(err, PD_ERR_FORMAT, "%s: %ld token ids is too many (at most %d)", source,
                      (long)n_ids, TOK_MAX_IDS);
        return NULL;
    }
    pd_tokenizer *tok = calloc(1, sizeof *tok);
    size_t n = n_ids ? (size_t)n_ids : 1;
    if (tok) {
        tok->source = strdup(source);
        tok->flags = calloc(n, 1);
        tok->text = calloc(n, sizeof *tok->text);
        tok->bytes = calloc(n, sizeof *tok->bytes);
    }
    if (!tok || !tok->source || !tok->flags || !tok->text || !tok->bytes) {
        pd_tokenizer_free(tok);
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", source);
        return NULL;
    }
    tok->n_ids = n_ids;
    tok->unk_id = -1;
    if (tok_vocab_init(tok, n_vocab, err) != PD_OK) {
        pdi_error_prefix(err, "%s", source);
        pd_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}

void pd_tokenizer_free(pd_tokenizer *tok)
{
    if (!tok) return;
    for (int i = 0; i < tok->n_steps; i++) pcre2_code_free(tok->steps[i].re);
    for (int i = 0; i < 2; i++) free(tok->index[i].order);
    free(tok->added);
    free(tok->pairs);
    free(tok->vocab);
    free(tok->arena);
    free(tok->bytes);
    free(tok->text);
    free(tok->flags);
    free(tok->source);
    free(tok);
}

static pd_status check_id(const pd_tokenizer *tok, int32_t id, pd_error *err)
{
    if (id < 0 || id >= tok->n_ids)
        return pdi_set_error(err, PD_ERR_FORMAT, "id %ld is out of range", (long)id);
    return PD_OK;
}

pd_status tok_set_vocab(pd_tokenizer *tok, int32_t id, const char *s, size_t len, pd_error *err)
{
    if (check_id(tok, id, err) != PD_OK) return PD_ERR_FORMAT;
    if (tok->flags[id] & TOK_VOCAB)
        return pdi_set_error(err, PD_ERR_FORMAT, "id %ld is given to both \"%s\" and \"%.*s\"",
                             (long)id, tok_arena_at(tok, tok->text[id]), (int)len, s);
    tok_span span;
    pd_status st = tok_arena_add(tok, s, len, &span, err);
    if (st != PD_OK) return st;
    tok_vocab_put(tok, span, id); /* a repeated string keeps its first id */
    tok->text[id] = span;
    tok->flags[id] |= TOK_VOCAB;
    return PD_OK;
}

pd_status tok_add_added(pd_tokenizer *tok, const tok_added *a, const char *content, size_t len,
                        pd_error *err)
{
    if (check_id(tok, a->id, err) != PD_OK) return PD_ERR_FORMAT;
    if (len == 0) return pdi_set_error(err, PD_ERR_FORMAT, "empty content");
    if (tok->flags[a->id] & TOK_ADDED)
        return pdi_set_error(err, PD_ERR_FORMAT, "id %ld is given to two added tokens", (long)a->id);
    tok_added *grown = pdi_grow(tok->added, &tok->cap_added, tok->n_added + 1, sizeof *grown);
    if (!grown) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    tok->added = grown;
    tok_added *dst = &tok->added[tok->n_added];
    *dst = *a;
    pd_status st = tok_arena_add(tok, content, len, &dst->content, err);
    if (st != PD_OK) return st;
    dst->match = dst->content;
    tok->n_added++;
    tok->flags[a->id] |= TOK_ADDED | (a->special ? TOK_SPECIAL : 0);
    return PD_OK;
}

pd_status tok_add_merge(pd_tokenizer *tok, uint32_t rank, const char *a, size_t alen, const char *b,
                        size_t blen, pd_error *err)
{
    int32_t left = tok_vocab_get(tok, a, alen), right = tok_vocab_get(tok, b, blen);
    if (left < 0) return pdi_set_error(err, PD_ERR_FORMAT, "unknown token \"%.*s\"", (int)alen, a);
    if (right < 0) return pdi_set_error(err, PD_ERR_FORMAT, "unknown token \"%.*s\"", (int)blen, b);
    char small[256];
    char *joined = alen + blen <= sizeof small ? small : malloc(alen + blen);
    if (!joined) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    memcpy(joined, a, alen);
    memcpy(joined + alen, b, blen);
    int32_t merged = tok_vocab_get(tok, joined, alen + blen);
    pd_status st = PD_OK;
    if (merged < 0)
        st = pdi_set_error(err, PD_ERR_FORMAT, "merged token \"%.*s\" is not in the vocabulary",
                           (int)(alen + blen), joined);
    else if (tok->n_pairs >= (tok->pair_mask + 1) / 2)
        st = pdi_set_error(err, PD_ERR_INTERNAL, "more merges than tok_pairs_init was told");
    else
        tok_pairs_put(tok, left, right, rank, merged);
    if (joined != small) free(joined);
    return st;
}

pd_status tok_add_merge_string(pd_tokenizer *tok, uint32_t rank, const char *m, pd_error *err)
{
    const char *sp = strchr(m, ' '); /* byte-level tokens hold no space */
    if (!sp || sp == m || !sp[1] || strchr(sp + 1, ' '))
        return pdi_set_error(err, PD_ERR_FORMAT, "expected \"left right\", got \"%s\"", m);
    return tok_add_merge(tok, rank, m, (size_t)(sp - m), sp + 1, strlen(sp + 1), err);
}

/* Unicode White_Space. PCRE2's \s also takes U+180E (PCRE2 10.42 at least),
 * which HF's Oniguruma and Rust's char::is_whitespace do not. */
#define TOK_WHITE_SPACE "\\t\\n\\x0b\\f\\r \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

/* Copy a regex with \s and \S spelt out as TOK_WHITE_SPACE (\S inside a
 * character class cannot be spelt out and stays). */
static char *spell_white_space(const char *p, size_t len, size_t *out_len)
{
    size_t cap = len * (sizeof TOK_WHITE_SPACE + 3) + 1, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    bool in_class = false;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            char d = p[++i];
            const char *fmt = d == 's' ? (in_class ? "%s" : "[%s]") : d == 'S' && !in_class ? "[^%s]" : NULL;
            if (fmt) {
                n += (size_t)snprintf(out + n, cap - n, fmt, TOK_WHITE_SPACE);
                if (in_class && i + 1 < len && p[i + 1] == '-') { /* [\s-x]: the - stays literal */
                    out[n++] = '\\';
                    out[n++] = p[++i];
                }
                continue;
            }
            out[n++] = c;
            out[n++] = d;
            if (d == 'Q') /* \Q...\E is literal */
                while (i + 1 < len && !(p[i + 1] == '\\' && i + 2 < len && p[i + 2] == 'E')) out[n++] = p[++i];
            continue;
        }
        out[n++] = c;
        if (!in_class && c == '[') {
            in_class = true;
            if (i + 1 < len && p[i + 1] == '^') out[n++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') out[n++] = p[++i]; /* a leading ] is literal */
        } else if (in_class && c == '[' && i + 1 < len && p[i + 1] == ':') {
            while (i + 1 < len && !(p[i] == ':' && p[i + 1] == ']')) out[n++] = p[++i]; /* [:alpha:] */
            if (i + 1 < len) out[n++] = p[++i];
        } else if (in_class && c == ']') {
            in_class = false;
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

pd_status tok_add_split(pd_tokenizer *tok, const char *pattern, size_t len, bool literal,
                        tok_behavior behavior, bool invert, pd_error *err)
{
    if (tok->n_steps == TOK_MAX_STEPS)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "more than %d pre-tokenizer steps", TOK_MAX_STEPS);
    int code;
    PCRE2_SIZE at;
    uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    size_t spelt_len = len;
    char *spelt = literal ? NULL : spell_white_space(pattern, len, &spelt_len);
    if (!literal && !spelt) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(spelt ? spelt : pattern), spelt_len, options, &code, &at, NULL);
    free(spelt);
    if (!re && spelt) { /* report the error against the pattern as written */
        pcre2_code *orig = pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
        pcre2_code_free(orig);
    }
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return pdi_set_error(err, PD_ERR_FORMAT, "bad regex at offset %zu: %s", (size_t)at, (char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: matching works without JIT */
    tok->steps[tok->n_steps++] = (tok_step){re, behavior, invert};
    return PD_OK;
}

pd_status tok_add_prefix_space(pd_tokenizer *tok, pd_error *err)
{
    if (tok->n_steps == TOK_MAX_STEPS)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED, "more than %d pre-tokenizer steps", TOK_MAX_STEPS);
    tok->steps[tok->n_steps++] = (tok_step){NULL, TOK_ISOLATED, false};
    return PD_OK;
}

/* Raw bytes of a vocabulary string: each character through the inverse
 * byte-level table; a string with a character outside the table stands for
 * its own UTF-8 (HF's ByteLevel decoder does the same). */
static pd_status decode_vocab_string(pd_tokenizer *tok, int32_t id, pd_error *err)
{
    tok_span s = tok->text[id];
    char small[256];
    char *buf = s.len <= sizeof small ? small : malloc(s.len);
    if (!buf) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < s.len;) {
        uint32_t cp;
        const uint8_t *p = (const uint8_t *)tok_arena_at(tok, s) + i;
        size_t len = pdi_utf8_char(p, s.len - i, &cp);
        int b = len ? tok_cp_to_byte(cp) : -1;
        if (b < 0) {
            n = SIZE_MAX;
            break;
        }
        buf[n++] = (char)b;
        i += len;
    }
    pd_status st;
    if (n == SIZE_MAX) {
        tok->bytes[id] = s;
        st = PD_OK;
    } else {
        /* arena_add may move the arena: s is an offset, buf a copy */
        st = tok_arena_add(tok, buf, n, &tok->bytes[id], err);
    }
    if (buf != small) free(buf);
    return st;
}

static bool longer(const pd_tokenizer *tok, uint32_t a, uint32_t b)
{
    return tok->added[a].match.len > tok->added[b].match.len;
}

/* Index the added tokens of one kind (normalised or not) by first byte. */
static pd_status build_index(pd_tokenizer *tok, int which, pd_error *err)
{
    tok_added_index *ix = &tok->index[which];
    uint32_t count[257] = {0};
    ix->order = malloc((tok->n_added + 1) * sizeof *ix->order);
    if (!ix->order) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < tok->n_added; i++)
        if (tok->added[i].normalized == (which == 1))
            count[(uint8_t)tok_arena_at(tok, tok->added[i].match)[0] + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    memcpy(ix->first, count, sizeof ix->first);
    for (size_t i = 0; i < tok->n_added; i++)
        if (tok->added[i].normalized == (which == 1))
            ix->order[count[(uint8_t)tok_arena_at(tok, tok->added[i].match)[0]]++] = (uint32_t)i;
    /* longest first inside each group; insertion sort, groups are small */
    for (int b = 0; b < 256; b++) {
        for (uint32_t i = ix->first[b] + 1; i < ix->first[b + 1]; i++) {
            uint32_t v = ix->order[i], j = i;
            while (j > ix->first[b] && longer(tok, v, ix->order[j - 1])) {
                ix->order[j] = ix->order[j - 1];
                j--;
            }
            ix->order[j] = v;
        }
    }
    return PD_OK;
}

pd_status tok_finish(pd_tokenizer *tok, pd_error *err)
{
    pd_status st;
    if (!tok->pairs && (st = tok_pairs_init(tok, 0, err)) != PD_OK) return st;
    if (!tok->byte_level)
        return pdi_set_error(err, PD_ERR_UNSUPPORTED,
                             "pre_tokenizer: no ByteLevel step (only byte-level BPE is supported)");
    while (tok->n_ids > 0 && !(tok->flags[tok->n_ids - 1] & (TOK_VOCAB | TOK_ADDED))) tok->n_ids--;
    for (int b = 0; b < 256; b++) {
        char s[4];
        size_t len = pdi_utf8_put(tok_byte_to_cp((uint8_t)b), s);
        tok->byte_token[b] = tok_vocab_get(tok, s, len);
    }
    for (int32_t id = 0; id < tok->n_ids; id++)
        if ((tok->flags[id] & (TOK_VOCAB | TOK_ADDED)) == TOK_VOCAB &&
            (st = decode_vocab_string(tok, id, err)) != PD_OK)
            return st;
    for (size_t i = 0; i < tok->n_added; i++) {
        tok_added *a = &tok->added[i];
        /* an added token decodes to its content, whatever the vocabulary says */
        tok->text[a->id] = tok->bytes[a->id] = a->content;
        if (a->normalized && tok->n_norm > 0) {
            char *norm;
            size_t len;
            if ((st = tok_normalize(tok, tok_arena_at(tok, a->content), a->content.len, &norm, &len,
                                    err)) != PD_OK)
                return st;
            /* an empty normal form cannot be searched for: match it raw */
            if (norm && len) st = tok_arena_add(tok, norm, len, &a->match, err);
            if (norm && !len) a->normalized = false;
            free(norm);
            if (st != PD_OK) return st;
        }
    }
    if ((st = build_index(tok, 0, err)) != PD_OK) return st;
    return build_index(tok, 1, err);
}

/* ------------------------------------------------------------ from GGUF */

pd_tokenizer *pdi_tokenizer_from_parts(const pdi_vocab_parts *parts, const char *source, pd_error *err)
{
    if (!source) source = "gguf";
    if (!parts || !parts->tokens || parts->n_tokens == 0) {
        pdi_set_error(err, PD_ERR_FORMAT, "%s: no tokenizer vocabulary", source);
        return NULL;
    }
    if (parts->pre && strcmp(parts->pre, "qwen2") != 0) {
        pdi_set_error(err, PD_ERR_UNSUPPORTED,
                      "%s: tokenizer.ggml.pre \"%s\" is not supported (only \"qwen2\")", source, parts->pre);
        return NULL;
    }
    if (parts->n_tokens > TOK_MAX_IDS) {
        pdi_set_error(err, PD_ERR_FORMAT, "%s: %zu tokens is too many", source, parts->n_tokens);
        return NULL;
    }
    pd_tokenizer *tok = tok_new(source, (int32_t)parts->n_tokens, parts->n_tokens, err);
    if (!tok) return NULL;
    pd_status st = tok_pairs_init(tok, parts->n_merges, err);
    if (st != PD_OK) pdi_error_prefix(err, "%s", source);
    for (size_t i = 0; st == PD_OK && i < parts->n_tokens; i++) {
        const char *s = parts->tokens[i] ? parts->tokens[i] : "";
        int type = parts->token_types ? parts->token_types[i] : 1;
        if (type == 3 || type == 4) { /* control / user defined: added tokens */
            tok_added a = {.id = (int32_t)i, .special = type == 3};
            st = tok_add_added(tok, &a, s, strlen(s), err);
        }
        if (st == PD_OK) st = tok_set_vocab(tok, (int32_t)i, s, strlen(s), err);
        if (st != PD_OK) pdi_error_prefix(err, "%s: tokenizer.ggml.tokens[%zu]", source, i);
    }
    for (size_t i = 0; st == PD_OK && i < parts->n_merges; i++) {
        st = tok_add_merge_string(tok, (uint32_t)i, parts->merges[i] ? parts->merges[i] : "", err);
        if (st != PD_OK) pdi_error_prefix(err, "%s: tokenizer.ggml.merges[%zu]", source, i);
    }
    if (st == PD_OK) {
        tok->norm[tok->n_norm++] = TOK_NFC;
        tok->byte_level = true;
        st = tok_add_split(tok, tok_qwen2_regex, strlen(tok_qwen2_regex), false, TOK_ISOLATED, false, err);
    }
    if (st == PD_OK && (st = tok_finish(tok, err)) != PD_OK) pdi_error_prefix(err, "%s", source);
    if (st != PD_OK) {
        pd_tokenizer_free(tok);
        return NULL;
    }
    return tok;
}
