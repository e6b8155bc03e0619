/* sparse_features.h - what features.c (head.json's "features", its files and
 * tables) and feature_sums.c (the review's characters, the sums) share: a
 * loaded head's templates, tables and memory. Private to heads/. */
#ifndef PD_SPARSE_FEATURES_H
#define PD_SPARSE_FEATURES_H

#include "heads.h"

#define MAX_ATOMS 4
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define SEP 0x1F /* before each atom value in a feature's key */

enum { D_TAG = PD_FEAT_TAG, D_LINK = PD_FEAT_LINK, D_LABEL = PD_FEAT_LABEL, D_COUNT };

typedef enum {
    A_C, A_KIND, A_LEX,                                   /* tag: character i + offset */
    A_NONE, A_FROM, A_TO, A_DIR, A_DIST, A_GAP, A_BREAK,  /* link */
    A_BETWEEN, A_LINK_CLAUSE, A_COUNT, A_LINK_MEMORY,
    A_TEXT, A_CHARS, A_BIGRAMS, A_PAIR, A_EMPTY, A_LEFT,  /* label */
    A_RIGHT, A_CLAUSE, A_MEMORY                          /* (fewer than 32: feat_table.kinds) */
} atom_kind;

typedef struct atom {
    uint8_t kind;
    int8_t offset, field; /* offset k of NAME[k]; span field of NAME.FIELD */
} atom;

typedef struct feat_template {
    uint64_t h;             /* FNV-1a state after the template's own bytes */
    int32_t n_atoms, multi; /* multi: the multi-valued atom's index, -1 without */
    atom atoms[MAX_ATOMS];
} feat_template;

typedef struct feat_table {
    int32_t buckets, width, n_templates; /* buckets 0: the decision has no sparse part */
    uint32_t kinds;                      /* bit a: some template uses atom kind a */
    feat_template *templates;
    float *w;                            /* [buckets][width] */
} feat_table;

typedef struct mem_entry {
    const char *key; /* the span fields' texts joined by TAB, into the file's data */
    uint32_t len;
    int32_t label;   /* index in the head's labels, -1 without labels */
    size_t line;
} mem_entry;

struct pdi_features {
    uint64_t seed;
    int32_t n_spans, link_from, link_to; /* the head's */
    feat_table table[D_COUNT];
    pdi_gazetteer *lexicon; /* NULL without */
    uint32_t lex_fields;   /* span fields (bits) that lex. atoms read */
    char *memory_data;     /* the memory file, cut into keys */
    mem_entry *memory;     /* sorted by key, distinct */
    int32_t n_memory;
    bool has_memory;
    char **label_names;    /* [n_labels] each label's values joined by '/' (the memory atom's values) */
    int32_t n_labels;
};

/* FNV-1a 64 of p[0..n) continued from state h. */
static inline uint64_t pdi_fnv_feed(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

/* Memory entries by key bytes (qsort, bsearch). */
int pdi_feat_compare_keys(const void *a, const void *b);

#endif
