/*
 * records.h - what a composer needs of a schema to make records without
 * generating them: fields by name, their kinds, and building a pd_extraction
 * value by value under the schema's distinct-record rule; and to relabel
 * records with a decision head: the decide section's question filled from a
 * record, its candidates, and a chosen candidate applied. Not installed.
 */
#ifndef PD_SCHEMA_RECORDS_H
#define PD_SCHEMA_RECORDS_H

#include "pd_internal.h"
#include "pocketdec_schemas.h"

/* The file (or name) the schema came from, for messages. */
const char *pdi_schema_source(const pd_schema *sc);
/* Index of the field called name, or -1. */
int32_t pdi_schema_field_index(const pd_schema *sc, const char *name);
bool pdi_schema_field_is_span(const pd_schema *sc, int32_t f);
bool pdi_schema_field_is_enum(const pd_schema *sc, int32_t f);
/* Whether value is one of enum field f's values. */
bool pdi_schema_enum_has(const pd_schema *sc, int32_t f, const char *value);
/* Whether a record equal to an earlier one is dropped (limits.distinct_records). */
bool pdi_schema_distinct_records(const pd_schema *sc);

/* An extraction of no records over sc's fields; NULL when out of memory. */
pd_extraction *pdi_extraction_new_empty(const pd_schema *sc);
/* Append a record: values[f] for each field f (NULL: "_"), copied.
 * PD_ERR_NOMEM (nothing appended) is the only failure. */
pd_status pdi_extraction_append(pd_extraction *x, const char *const *values);
/* Release one record's arrays (the record itself belongs to its extraction). */
void pdi_record_free(pd_record *r, int32_t n_fields);
/* Set span field f's character offsets in text (len bytes): where its value
 * occurs at byte `from` or first after it, else first; -1, -1 for `_` or a
 * value the text does not hold. Returns the byte offset, SIZE_MAX for none. */
size_t pdi_record_place(pd_record *r, int32_t f, const char *text, size_t len, size_t from);
/* Place every span value of x's records in text, record by record: each at
 * or after the previous record's span of its field (generation's rule). */
pd_status pdi_extraction_locate(pd_extraction *x, const pd_schema *sc, const char *text, size_t len);
/* Drop each record whose confidence is below min, keeping the order. */
void pdi_extraction_drop_below(pd_extraction *x, float min);
/* Drop each record equal in every field to an earlier one, keeping the order. */
void pdi_extraction_drop_repeats(pd_extraction *x);
/* Whether x's last record has the values of an earlier one. */
bool pdi_extraction_last_repeats(const pd_extraction *x);
/* Release x's last record (x holds one at least). */
void pdi_extraction_drop_last(pd_extraction *x);

/* Whether the schema has a `decide` section. */
bool pdi_schema_has_decide(const pd_schema *sc);
/* The decide question filled from rec's values (malloc'ed); NULL when out of
 * memory or without a decide section. */
char *pdi_schema_decide_question(const pd_schema *sc, const pd_record *rec);
/* The decide candidates (owned by the schema; *n receives their number, 0
 * without a decide section). */
const char *const *pdi_schema_decide_candidates(const pd_schema *sc, int32_t *n);
/* Give the fields the candidate template names the values of candidate k
 * (0 <= k < the number of candidates). With probs (the candidates'
 * probabilities, or NULL), each decided field's probability becomes its
 * value's marginal and the record's confidence its other fields'
 * probabilities times probs[k]. PD_ERR_NOMEM is the only failure. */
pd_status pdi_schema_apply_candidate(const pd_schema *sc, int32_t k, const float *probs, pd_record *rec);

/* An array of texts as a pd_text_source, for the calls that take many at
 * once: text i's result into outs[i] (NULL when it fails; its reason in
 * errs[i] when errs is not NULL, code PD_OK there on success), the failure
 * of the lowest index kept. */
typedef struct pdi_text_array {
    const char *const *texts;
    const size_t *lens;
    int32_t n, next;
    pd_extraction **outs;
    pd_error *errs;
    int32_t first_failed;
    pd_error first_err;
} pdi_text_array;

pdi_text_array pdi_text_array_init(const char *const *texts, const size_t *lens, int32_t n, pd_extraction **outs,
                                   pd_error *errs);
pd_text_source pdi_text_array_source(pdi_text_array *a);
/* PD_OK when every text has its result, else the first failed text's
 * status, its message in err prefixed by what (e.g. "extraction of many
 * texts: ") and "text I: ". A text that had no result and no error (the
 * stream stopped before it) counts as PD_ERR_INTERNAL. */
pd_status pdi_text_array_status(pdi_text_array *a, const char *what, pd_error *err);

#endif
