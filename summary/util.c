/* util.c - errors, keys and the string counts of the summary module. */
#include "pds_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pds_fail(pds_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

const char *pds_field(const char *s)
{
    return s && *s ? s : "_";
}

bool pds_same_key(const char *cat_a, const char *pol_a, const char *cat_b, const char *pol_b)
{
    if ((cat_a == NULL) != (cat_b == NULL)) return false;
    return (!cat_a || strcmp(cat_a, cat_b) == 0) && strcmp(pol_a, pol_b) == 0;
}

char *pds_strdup(const char *s, bool *ok)
{
    if (!s) return NULL;
    char *c = strdup(s);
    if (!c) *ok = false;
    return c;
}

int pds_grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return -1;
        n *= 2;
    }
    void *p = realloc(*ptr, n * elem);
    if (!p) return -1;
    *ptr = p;
    *cap = n;
    return 0;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Open addressing, at most half full. */
static int rehash(pds_counts *c)
{
    size_t cap = c->cap ? c->cap * 2 : 64;
    char **keys = calloc(cap, sizeof *keys);
    long *counts = calloc(cap, sizeof *counts);
    if (!keys || !counts) {
        free(keys);
        free(counts);
        return -1;
    }
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->keys[i]) continue;
        size_t j = hash(c->keys[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = c->keys[i];
        counts[j] = c->counts[i];
    }
    free(c->keys);
    free(c->counts);
    c->keys = keys;
    c->counts = counts;
    c->cap = cap;
    return 0;
}

int pds_counts_add(pds_counts *c, const char *key, long n)
{
    if ((c->n + 1) * 2 > c->cap && rehash(c)) return -1;
    size_t j = hash(key) & (c->cap - 1);
    while (c->keys[j] && strcmp(c->keys[j], key)) j = (j + 1) & (c->cap - 1);
    if (!c->keys[j]) {
        if (!(c->keys[j] = strdup(key))) return -1;
        c->n++;
    }
    c->counts[j] += n;
    return 0;
}

void pds_counts_free(pds_counts *c)
{
    for (size_t i = 0; i < c->cap; i++) free(c->keys[i]);
    free(c->keys);
    free(c->counts);
    memset(c, 0, sizeof *c);
}

typedef struct slot {
    const char *key;
    long count;
} slot;

static int slot_order(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->key, y->key);
}

json_t *pds_counts_top(const pds_counts *c, int top)
{
    json_t *arr = json_array();
    slot *s = c->n ? malloc(c->n * sizeof *s) : NULL;
    if (!arr || (c->n && !s)) {
        json_decref(arr);
        free(s);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < c->cap; i++)
        if (c->keys[i]) s[n++] = (slot){c->keys[i], c->counts[i]};
    if (n) qsort(s, n, sizeof *s, slot_order); /* none: s is NULL */
    for (size_t i = 0; i < n && (long)i < top; i++)
        if (json_array_append_new(arr, json_pack("{s:s,s:I}", "value", s[i].key, "count", (json_int_t)s[i].count))) {
            json_decref(arr);
            arr = NULL;
            break;
        }
    free(s);
    return arr;
}
