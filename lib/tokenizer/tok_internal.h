/*
 * tok_internal.h - the byte-level BPE tokenizer's data, shared by its source
 * files (tables, build, tokenizer.json reader, encoder, decoder).
 *
 * A pd_tokenizer is immutable once built: encoding keeps all its scratch
 * state in per-call memory, so one tokenizer serves many threads.
 */
#ifndef PD_TOK_INTERNAL_H
#define PD_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "pd_internal.h"

/* Ids above this are refused: the id tables are dense arrays. */
#define TOK_MAX_IDS (1 << 26)
#define TOK_MAX_STEPS 8
#define TOK_MAX_NORM 4
#define TOK_NFC (UTF8PROC_STABLE | UTF8PROC_COMPOSE)
#define TOK_NFD (UTF8PROC_STABLE | UTF8PROC_DECOMPOSE)
#define TOK_NFKC (TOK_NFC | UTF8PROC_COMPAT)
#define TOK_NFKD (TOK_NFD | UTF8PROC_COMPAT)

enum { TOK_VOCAB = 1, TOK_ADDED = 2, TOK_SPECIAL = 4 };

/* A byte range inside the tokenizer's arena. */
typedef struct tok_span {
    uint32_t off, len;
} tok_span;

typedef struct tok_added {
    int32_t id;
    tok_span content; /* the token as written */
    tok_span match;   /* what is searched for: content, normalised when `normalized` */
    bool special, lstrip, rstrip, single_word, normalized;
} tok_added;

/* Added tokens grouped by first byte, longest first inside a group, so the
 * first hit at a position is the longest (HF's leftmost-longest match). */
typedef struct tok_added_index {
    uint32_t *order;     /* indices into added[] */
    uint32_t first[257]; /* order[first[b] .. first[b + 1]) start with byte b */
} tok_added_index;

typedef enum tok_behavior {
    TOK_ISOLATED,
    TOK_REMOVED,
    TOK_MERGED_PREV,
    TOK_MERGED_NEXT,
    TOK_CONTIGUOUS
} tok_behavior;

/* One pre-tokenizer step: a regex split, or (re NULL) ByteLevel's
 * add_prefix_space. The ByteLevel byte mapping itself is implicit. */
typedef struct tok_step {
    pcre2_code *re;
    tok_behavior behavior;
    bool invert;
} tok_step;

typedef struct tok_str_entry {
    uint32_t off, len;
    int32_t id; /* -1: empty slot */
} tok_str_entry;

typedef struct tok_pair_entry {
    uint64_t key;    /* left id << 32 | right id */
    uint32_t rank;   /* position in the merge list */
    int32_t merged;  /* -1: empty slot */
} tok_pair_entry;

struct pd_tokenizer {
    char *source; /* file name for messages */
    int32_t n_ids;
    uint8_t *flags;  /* [n_ids] TOK_* */
    tok_span *text;  /* [n_ids] vocabulary string, or added token content */
    tok_span *bytes; /* [n_ids] raw bytes (NUL-terminated in the arena) */
    char *arena;
    size_t arena_len, arena_cap;

    tok_str_entry *vocab; /* model vocabulary: byte-level string -> id */
    size_t vocab_mask;
    tok_pair_entry *pairs; /* merges: (left, right) -> (rank, merged id) */
    size_t pair_mask, n_pairs;
    int32_t byte_token[256]; /* id of each single byte's token, or -1 */

    tok_added *added;
    size_t n_added, cap_added;
    tok_added_index index[2]; /* [0] matched in raw text, [1] in normalised text */

    int norm[TOK_MAX_NORM]; /* utf8proc option sets, applied in order */
    int n_norm;
    tok_step steps[TOK_MAX_STEPS];
    int n_steps;
    bool byte_level; /* a ByteLevel pre-tokenizer was seen */
    bool ignore_merges, fuse_unk;
    int32_t unk_id;
};

/* --- tok_tables.c: byte-level table, hash maps, arena (UTF-8: lib/utf8.c) */

/* GPT-2 bytes_to_unicode: the code point that stands for byte b. */
uint32_t tok_byte_to_cp(uint8_t b);
/* The byte a code point stands for, or -1. */
int tok_cp_to_byte(uint32_t cp);

/* Append len bytes plus a NUL; *span gets their place. */
pd_status tok_arena_add(pd_tokenizer *tok, const void *data, size_t len, tok_span *span, pd_error *err);
static inline const char *tok_arena_at(const pd_tokenizer *tok, tok_span span)
{
    return tok->arena + span.off;
}

/* Messages of the build functions name no file: the readers prefix them. */
pd_status tok_vocab_init(pd_tokenizer *tok, size_t n_entries, pd_error *err);
/* Insert; false when the string is already present. */
bool tok_vocab_put(pd_tokenizer *tok, tok_span s, int32_t id);
int32_t tok_vocab_get(const pd_tokenizer *tok, const char *s, size_t len);

pd_status tok_pairs_init(pd_tokenizer *tok, size_t n_merges, pd_error *err);
/* A later duplicate of a pair takes the later rank, as in HF. */
void tok_pairs_put(pd_tokenizer *tok, int32_t left, int32_t right, uint32_t rank, int32_t merged);
const tok_pair_entry *tok_pairs_get(const pd_tokenizer *tok, int32_t left, int32_t right);

/* --- tok_build.c: assembling a tokenizer (used by the JSON and GGUF readers) */

pd_tokenizer *tok_new(const char *source, int32_t n_ids, size_t n_vocab, pd_error *err);
/* A model vocabulary entry. */
pd_status tok_set_vocab(pd_tokenizer *tok, int32_t id, const char *s, size_t len, pd_error *err);
/* An added token; flags as in tokenizer.json. */
pd_status tok_add_added(pd_tokenizer *tok, const tok_added *a, const char *content, size_t len,
                        pd_error *err);
/* Merge "a b" with rank `rank`; tok_pairs_init must have made room. */
pd_status tok_add_merge(pd_tokenizer *tok, uint32_t rank, const char *a, size_t alen, const char *b,
                        size_t blen, pd_error *err);
/* The same from "a b" (HF's older notation and GGUF's). */
pd_status tok_add_merge_string(pd_tokenizer *tok, uint32_t rank, const char *m, pd_error *err);
/* Append a split step; pattern is a regex, or a literal when literal is true. */
pd_status tok_add_split(pd_tokenizer *tok, const char *pattern, size_t len, bool literal,
                        tok_behavior behavior, bool invert, pd_error *err);
pd_status tok_add_prefix_space(pd_tokenizer *tok, pd_error *err);
/* Byte tokens, decoded bytes, added-token indexes. */
pd_status tok_finish(pd_tokenizer *tok, pd_error *err);

/* --- tok_encode.c */

/* Apply the normalizers to n bytes of valid UTF-8. *out is NULL when the text
 * is unchanged, else a malloc'ed copy of *out_len bytes. */
pd_status tok_normalize(const pd_tokenizer *tok, const char *s, size_t n, char **out, size_t *out_len,
                        pd_error *err);

/* The regex of GPT-2's ByteLevel pre-tokenizer (use_regex true) and Qwen2/3's Split. */
extern const char tok_gpt2_regex[];
extern const char tok_qwen2_regex[];

#endif /* PD_TOK_INTERNAL_H */
