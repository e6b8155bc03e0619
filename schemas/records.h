/*
 * records.h - what a composer needs of a schema to make records without
 * generating them: fields by name, their kinds, and building a pd_extraction
 * value by value under the schema's distinct-record rule. Not installed.
 */
#ifndef PD_SCHEMA_RECORDS_H
#define PD_SCHEMA_RECORDS_H

#include "pd_internal.h"

/* The file (or name) the schema came from, for messages. */
const char *pd_schema_source(const pd_schema *sc);
/* Index of the field called name, or -1. */
int32_t pd_schema_field_index(const pd_schema *sc, const char *name);
bool pd_schema_field_is_span(const pd_schema *sc, int32_t f);
bool pd_schema_field_is_enum(const pd_schema *sc, int32_t f);
/* Whether value is one of enum field f's values. */
bool pd_schema_enum_has(const pd_schema *sc, int32_t f, const char *value);
/* Whether a record equal to an earlier one is dropped (limits.distinct_records). */
bool pd_schema_distinct_records(const pd_schema *sc);

/* An extraction of no records over sc's fields; NULL when out of memory. */
pd_extraction *pd_extraction_new_empty(const pd_schema *sc);
/* Append a record: values[f] for each field f (NULL: "_"), copied.
 * PD_ERR_NOMEM (nothing appended) is the only failure. */
pd_status pd_extraction_append(pd_extraction *x, const char *const *values);
/* Drop each record equal in every field to an earlier one, keeping the order. */
void pd_extraction_drop_repeats(pd_extraction *x);

#endif
