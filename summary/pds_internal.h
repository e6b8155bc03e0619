/* pds_internal.h - what the files of the summary module share. */
#ifndef PDS_INTERNAL_H
#define PDS_INTERNAL_H

#include "pocketdec_summary.h"
#include "pocketdec_runtime.h"

#include <stdint.h>

int pds_fail(pds_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A record's field, "_" for none (NULL). */
const char *pds_field(const char *s);
/* Two cell keys equal (category NULL: a polarity entry). */
bool pds_same_key(const char *cat_a, const char *pol_a, const char *cat_b, const char *pol_b);
/* A malloc'ed copy (NULL stays NULL); *ok false when out of memory. */
char *pds_strdup(const char *s, bool *ok);
/* Make room for need elements of size elem in *ptr (capacity *cap). */
int pds_grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* A count of each distinct string (the top aspects and opinions of a cell). */
typedef struct pds_counts {
    char **keys;
    long *counts;
    size_t cap, n;
} pds_counts;

int pds_counts_add(pds_counts *c, const char *key, long n);
void pds_counts_free(pds_counts *c);
/* The top entries as [{"value":..,"count":..}], by count then value. */
json_t *pds_counts_top(const pds_counts *c, int top);

/* A cell's rates (c may be NULL: none): its own with at least min_support
 * gold records, else its polarity's with the spread between the polarity's
 * cells added to their variance; *which says whose ("cell", "polarity",
 * "none"). category NULL: the polarity's entry. */
pds_rates pds_calibration_rates(const pds_calibration *c, const char *category, const char *polarity, int min_support,
                                const char **which);

/* The i-th cell of the calibration (its key and gold records): false past
 * the last. */
bool pds_calibration_cell(const pds_calibration *c, size_t i, const char **category, const char **polarity,
                          double *gold);

/* ------------------------------------------------ summaries from files */

/* e as err (pd_error's code for pds_error's): 1. */
int pds_to_pd_error(pd_error *err, const pds_error *e);
/* The rates of p (rates.c: a calibration file, measured on labelled
 * reviews, or the bundle's calibration.json): *out NULL when none; *name
 * the calibration's name in messages. 0, or non-zero with err. */
int pds_rates_load(const pd_summarize_params *p, pds_calibration **out, const char **name, pd_error *err);

#endif
