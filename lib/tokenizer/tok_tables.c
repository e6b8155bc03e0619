/* tok_tables.c - GPT-2 byte table, the arena and the two hash
 * maps (vocabulary string -> id, merge pair -> rank). */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* bytes_to_unicode() of GPT-2: printable Latin-1 bytes stand for themselves,
 * the 68 others take U+0100 upward in byte order. */
static bool byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

uint32_t tok_byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 0x100 + b;                 /* 33 control bytes and space */
    if (b <= 0xA0) return 0x100 + 33 + (b - 0x7F);  /* DEL, C1 controls, NBSP */
    return 0x100 + 67;                               /* soft hyphen 0xAD */
}

int tok_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    uint32_t k = cp - 0x100;
    if (k <= 32) return (int)k;
    if (k <= 66) return (int)(0x7F + k - 33);
    if (k == 67) return 0xAD;
    return -1;
}

pd_status tok_arena_add(pd_tokenizer *tok, const void *data, size_t len, tok_span *span, pd_error *err)
{
    if (len >= UINT32_MAX || tok->arena_len > UINT32_MAX - len - 1)
        return pdi_set_error(err, PD_ERR_FORMAT, "token strings exceed 4 GiB");
    char *grown = pdi_grow(tok->arena, &tok->arena_cap, tok->arena_len + len + 1, 1);
    if (!grown) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    tok->arena = grown;
    if (len) memcpy(tok->arena + tok->arena_len, data, len);
    tok->arena[tok->arena_len + len] = '\0';
    span->off = (uint32_t)tok->arena_len;
    span->len = (uint32_t)len;
    tok->arena_len += len + 1;
    return PD_OK;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3u;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 30; /* splitmix64 finaliser */
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* Power of two holding n entries at most half full. */
static size_t table_size(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    return cap;
}

pd_status tok_vocab_init(pd_tokenizer *tok, size_t n_entries, pd_error *err)
{
    size_t cap = table_size(n_entries);
    tok->vocab = malloc(cap * sizeof *tok->vocab);
    if (!tok->vocab) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++) tok->vocab[i].id = -1;
    tok->vocab_mask = cap - 1;
    return PD_OK;
}

static size_t vocab_slot(const pd_tokenizer *tok, const char *s, size_t len)
{
    size_t i = hash_bytes(s, len) & tok->vocab_mask;
    for (;;) {
        const tok_str_entry *e = &tok->vocab[i];
        if (e->id < 0) return i;
        if (e->len == len && memcmp(tok->arena + e->off, s, len) == 0) return i;
        i = (i + 1) & tok->vocab_mask;
    }
}

bool tok_vocab_put(pd_tokenizer *tok, tok_span s, int32_t id)
{
    size_t i = vocab_slot(tok, tok_arena_at(tok, s), s.len);
    if (tok->vocab[i].id >= 0) return false;
    tok->vocab[i] = (tok_str_entry){s.off, s.len, id};
    return true;
}

int32_t tok_vocab_get(const pd_tokenizer *tok, const char *s, size_t len)
{
    if (!tok->vocab) return -1;
    return tok->vocab[vocab_slot(tok, s, len)].id;
}

pd_status tok_pairs_init(pd_tokenizer *tok, size_t n_merges, pd_error *err)
{
    size_t cap = table_size(n_merges);
    tok->pairs = malloc(cap * sizeof *tok->pairs);
    if (!tok->pairs) return pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cap; i++) tok->pairs[i].merged = -1;
    tok->pair_mask = cap - 1;
    return PD_OK;
}

static uint64_t pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

static size_t pair_slot(const pd_tokenizer *tok, uint64_t key)
{
    size_t i = hash_u64(key) & tok->pair_mask;
    while (tok->pairs[i].merged >= 0 && tok->pairs[i].key != key) i = (i + 1) & tok->pair_mask;
    return i;
}

void tok_pairs_put(pd_tokenizer *tok, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
    uint64_t key = pair_key(left, right);
    size_t i = pair_slot(tok, key);
    if (tok->pairs[i].merged < 0) tok->n_pairs++;
    tok->pairs[i] = (tok_pair_entry){key, rank, merged};
}

const tok_pair_entry *tok_pairs_get(const pd_tokenizer *tok, int32_t left, int32_t right)
{
    const tok_pair_entry *e = &tok->pairs[pair_slot(tok, pair_key(left, right))];
    return e->merged >= 0 ? e : NULL;
}
