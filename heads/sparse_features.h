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
    A_RIGHT, A_CLAUSE, A_MEMORY,
    A_POL, A_POLPOS, A_NEGATED,                           /* tag: the polarity table at character i + offset */
    A_POLSUM, A_POLMIN, A_POLMAX, A_CLAUSESUM, A_CLAUSEMIN, /* label: the polarity table */
    A_CLAUSEMAX, A_NEGATION, A_DEGREE                     /* (fewer than 64: feat_table.kinds) */
} atom_kind;

typedef struct atom {
    uint8_t kind;
    int8_t offset, field; /* offset k of NAME[k]; span field of NAME.FIELD */
} atom;

typedef struct feat_template {
    uint64_t h;             /* FNV-1a state after the template's own bytes */
    char *name;             /* those bytes (naming features) */
    int32_t n_atoms, multi; /* multi: the multi-valued atom's index, -1 without */
    atom atoms[MAX_ATOMS];
} feat_template;

typedef struct feat_table {
    int32_t buckets, width, n_templates; /* buckets 0: the decision has no sparse part */
    uint64_t kinds;                      /* bit a: some template uses atom kind a */
    feat_template *templates;
    float *w;                            /* [buckets][width] */
} feat_table;

typedef struct mem_entry {
    const char *key; /* the span fields' texts joined by TAB, into the file's data */
    uint32_t len;
    int32_t label;   /* index in the head's labels, -1 without labels */
    size_t line;
} mem_entry;

/* The polarity table (polarity.c): distinct terms, each with a log-odds
 * value, a negation mark, a degree mark, or several of them. */
#define PD_POLARITY_MAX_CHARS 16 /* characters of one term */
typedef struct pol_term {
    const char *bytes; /* into the file's data */
    uint32_t len;
    uint8_t kinds;     /* polarity.c's POL_VALUE | POL_NEGATION | POL_DEGREE */
    double value;
    size_t line;
} pol_term;

typedef struct pdi_polarity {
    char *data;       /* the file's bytes, cut into terms */
    pol_term *terms;  /* sorted by bytes, distinct */
    int32_t n_terms;
    int32_t longest;  /* characters */
} pdi_polarity;

/* What the polarity atoms read of one text: the matches of valued terms by
 * start, then length; the negation [0] and degree [1] words' matches; per
 * character the index of its strongest covering match (-1: none). */
typedef struct pol_match {
    int32_t start, end;
    double value;
} pol_match;

struct pdi_pol_text {
    pol_match *values;
    int32_t n_values;
    pdi_feat_span *words[2];
    int32_t n_words[2];
    int32_t *best;
};

/* head.json's features.polarity: file `name` in the head's folder;
 * PD_ERR_FORMAT naming the file and line for a bad line, a bad value or a
 * term given twice as one kind, PD_ERR_LIMIT for a term over
 * PD_POLARITY_MAX_CHARS characters. */
pd_status pdi_polarity_load(const pd_head *h, const char *name, pdi_polarity **out, pd_error *err);
void pdi_polarity_free(pdi_polarity *p);
/* The table's matches in x's text (*out freed by pdi_pol_text_free). */
pd_status pdi_pol_text_init(pdi_pol_text **out, const pdi_polarity *p, const pdi_feat_text *x, pd_error *err);
void pdi_pol_text_free(pdi_pol_text *t);
/* A value's bucket: "0" inside (-0.5, 0.5), else its sign and the largest
 * of 0.5 1 2 4 8 that |v| reaches ("-2" for -3.1). */
const char *pdi_pol_bucket(double v);
/* Character c: its strongest term's bucket ("0" without one), its place in
 * it (B I E S, - without), and negation in scope ("n" inside a negation
 * word, "1" one ending at most 2 characters before c in its clause, "0"). */
const char *pdi_pol_strongest(const pdi_pol_text *t, int32_t c);
const char *pdi_pol_place(const pdi_pol_text *t, int32_t c);
const char *pdi_pol_negated(const pdi_pol_text *t, const pdi_feat_text *x, int32_t c);
/* stats = sum, min, max of the values of the matches inside characters
 * [a, b); false (stats unset but the sum) without one. */
bool pdi_pol_stats(const pdi_pol_text *t, int32_t a, int32_t b, double stats[3]);
/* Words `which` (0 negation, 1 degree) before span s: "in" when one starts
 * it, "1" when one ends at most 2 characters before it in its clause, "0". */
const char *pdi_pol_before(const pdi_pol_text *t, const pdi_feat_text *x, int which, pdi_feat_span s);

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
    pdi_polarity *polarity; /* NULL without */
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
