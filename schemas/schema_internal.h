/*
 * schema_internal.h - extraction schemas and the constraint engine, shared by
 * the schemas/ sources and the in-tree tests. Not installed.
 *
 * The output grammar a schema describes, in bytes:
 *   output  = record* END
 *   record  = field (separator field)* record_end
 *   field   = "_" (when the field allows empty) | value
 * A value never contains the first byte of the terminator that follows it
 * (separator or record_end), so the output parses by splitting on them.
 * Values are whole UTF-8 characters: a span is a substring of the input text,
 * an enum value one of its strings, a pattern value a full PCRE2 match.
 */
#ifndef PD_SCHEMA_INTERNAL_H
#define PD_SCHEMA_INTERNAL_H

#include "pd_internal.h"
#include "records.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* A byte trie: node 0 is the root; children are a linked list. Each node may
 * end one or more entries (token ids, or enum value indices). */
typedef struct pdi_trie {
    int32_t *first_child, *next_sibling, *entry; /* entry: first id ending here, -1 none */
    uint8_t *byte;
    int32_t n_nodes, cap_nodes;
    int32_t *entry_next; /* per id: the next id with the same bytes, -1 none */
    int32_t n_ids;
} pdi_trie;

pd_status pdi_trie_init(pdi_trie *t, int32_t n_ids, pd_error *err);
/* Add id with the given bytes (len > 0). */
pd_status pdi_trie_add(pdi_trie *t, int32_t id, const uint8_t *bytes, size_t len, pd_error *err);
void pdi_trie_free(pdi_trie *t);
/* Child of node on byte b, or -1. */
int32_t pdi_trie_child(const pdi_trie *t, int32_t node, uint8_t b);

typedef pd_field_kind pdi_field_kind;

#define PD_PATTERN_MAX_BYTES 256 /* longest value a pattern field may produce */

typedef struct pdi_schema_field {
    char *name;
    pdi_field_kind kind;
    bool allow_empty;
    char **values; /* enum */
    int32_t n_values;
    pdi_trie trie;  /* enum: its values */
    char *pattern; /* pattern: the source regex */
    pcre2_code *re;
} pdi_schema_field;

struct pd_schema {
    char *path, *name;
    pdi_schema_field *fields;
    int32_t n_fields;
    char *separator, *record_end; /* non-empty */
    char *end_token;              /* vocabulary token that ends the output */
    char *prompt;                 /* template holding {text} once */
    int32_t max_records, max_tokens;
    int32_t *csv_cols, n_csv;     /* field indices of the Tianchi/CSV row */
    bool distinct_records;        /* a repeated record ends the output */
    char *decide_question;        /* NULL: no decide section; {field} templates */
    char *decide_candidate;       /* names the enum fields a head relabels */
    char **decide_cands;          /* its candidates, rendered once when the schema is read */
    int32_t n_decide_cands;
};

#define PD_SCHEMA_MAX_CANDIDATES 4096 /* joint labels a decide section may make */

/* The field named by the placeholder "{name}" at p (p[0] == '{'), or -1;
 * *end receives the closing '}' (NULL when there is none). */
int32_t pdi_schema_placeholder(const pd_schema *sc, const char *p, const char **end);
/* Whether field f appears in the decide candidate template. */
bool pdi_schema_decides(const pd_schema *sc, int32_t f);
/* tpl with each {field} replaced by values[field]; NULL when out of memory. */
char *pdi_schema_render(const pd_schema *sc, const char *tpl, char *const *values);
/* Every candidate of the decide section, the first named field varying
 * slowest; two equal candidates give PD_ERR_FORMAT. */
pd_status pdi_schema_candidates(const pd_schema *sc, char ***out, int32_t *n, pd_error *err);
void pdi_schema_free_candidates(char **cands, int32_t n);

/* ----------------------------------------------------------- the engine */

/* Where the output stands. Small and copied freely: the DFS over the
 * vocabulary trie carries one per node. */
enum { PD_PH_START = 0, PD_PH_VALUE, PD_PH_EMPTY, PD_PH_TERM, PD_PH_DONE };

typedef struct pdi_cstate {
    int32_t rec;      /* complete records */
    int16_t field;    /* current field */
    uint8_t phase;    /* PD_PH_* */
    uint8_t need;     /* UTF-8 continuation bytes still expected */
    int32_t node;     /* span: automaton state; enum: trie node; term: bytes matched */
    int32_t len;      /* bytes of the current value */
    int32_t pos;      /* bytes of output so far (where the next byte goes in buf) */
} pdi_cstate;

/* The constraint of one input text: the schema plus a suffix automaton of the
 * text. Mutable scratch (pattern buffer, match data): one per thread. */
typedef struct pdi_constraint {
    const pd_schema *schema;
    int32_t max_records;
    /* suffix automaton: states with transition lists */
    int32_t *sam_len, *sam_link, *sam_edge;
    int32_t n_states, last;
    int32_t *edge_to, *edge_next;
    uint8_t *edge_byte;
    int32_t n_edges, cap_edges;
    uint8_t *buf;     /* output bytes by position: committed, then the DFS path */
    size_t cap_buf;
    pcre2_match_data *md;
} pdi_constraint;

pd_status pdi_constraint_init(pdi_constraint *c, const pd_schema *schema, const char *text, size_t len,
                              int32_t max_records, pd_error *err);
void pdi_constraint_free(pdi_constraint *c);

pdi_cstate pdi_cstate_initial(void);
/* Advance by one output byte; false when the byte leaves the language. */
bool pdi_cstate_step(pdi_constraint *c, pdi_cstate *s, uint8_t b);
/* Whether the output may end here (a record boundary, records to spare). */
bool pdi_cstate_can_end(const pdi_constraint *c, const pdi_cstate *s);

/* Every token of the vocabulary trie whose bytes keep s a valid prefix,
 * ascending, into ids (room for vocab->n_ids). Visits only live branches. */
int32_t pdi_constraint_allowed(pdi_constraint *c, const pdi_cstate *s, const pdi_trie *vocab, int32_t *ids);

#endif
