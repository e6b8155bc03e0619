/* teach_changes.c - what a new model changed on the reviews labelled so far
 * (teach_changes.h): per review, the current model's records against those
 * the model proposed when the review was labelled, each marked added,
 * removed or unchanged and right or not by the person's answer; and the
 * counts over all of them. Records are multisets: two equal records of one
 * review are matched one to one, as the Tianchi metric matches. */
#include "teach_changes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct teach_changes {
    const pd_schema *schema;
    json_t *items, *errors;
    long reviews, exact[2], matched[2], predicted[2], gold, fixed, broken, added, removed, unchanged, changed;
};

size_t serve_utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

size_t serve_utf8_byte_of(const char *s, size_t len, size_t c)
{
    size_t i = 0;
    for (; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c-- == 0) break;
    return i;
}

teach_changes *serve_changes_new(const pd_schema *schema)
{
    teach_changes *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->schema = schema;
    c->items = json_array();
    c->errors = json_array();
    if (!c->items || !c->errors) {
        serve_changes_free(c);
        return NULL;
    }
    return c;
}

void serve_changes_free(teach_changes *c)
{
    if (!c) return;
    json_decref(c->items);
    json_decref(c->errors);
    free(c);
}

/* A record's identity as compact JSON ([value or [start, end] or null, ...]
 * in the schema's field order) into *key (malloc'ed), or why it is not a
 * record of the labels file's form over text (why: 0 when out of memory). */
static int record_key(const teach_changes *c, const char *text, size_t len, const json_t *rec, char **key,
                      char *why, size_t why_size)
{
    size_t chars = serve_utf8_chars(text, len);
    json_t *k = json_array();
    int rc = k ? 0 : 1;
    if (!json_is_object(rec)) rc = snprintf(why, why_size, "a record is not an object") > 0;
    for (int32_t f = 0; rc == 0 && f < pd_schema_n_fields(c->schema); f++) {
        const char *name = pd_schema_field_name(c->schema, f);
        const json_t *v = json_object_get(rec, name);
        pd_field_kind kind = pd_schema_field_kind(c->schema, f);
        json_t *part = NULL;
        if (!v) {
            snprintf(why, why_size, "a record has no \"%s\"", name);
        } else if (kind == PD_FIELD_ENUM || kind == PD_FIELD_PATTERN) {
            bool known = kind == PD_FIELD_PATTERN && json_is_string(v);
            for (int32_t n = 0; !known && json_is_string(v) && n < pd_schema_field_n_values(c->schema, f); n++)
                known = strcmp(json_string_value(v), pd_schema_field_value(c->schema, f, n)) == 0;
            if (known) part = json_string(json_string_value(v));
            else snprintf(why, why_size, "%s: not one of the schema's values", name);
        } else if (json_is_null(v)) {
            part = json_null();
        } else {
            const json_t *s = json_object_get(v, "start"), *e = json_object_get(v, "end"), *t = json_object_get(v, "text");
            json_int_t a = json_integer_value(s), b = json_integer_value(e);
            if (!json_is_integer(s) || !json_is_integer(e) || a < 0 || b <= a || (size_t)b > chars) {
                snprintf(why, why_size, "%s: not a span of the review's %zu characters", name, chars);
            } else {
                size_t x = serve_utf8_byte_of(text, len, (size_t)a), y = serve_utf8_byte_of(text, len, (size_t)b);
                if (t && (!json_is_string(t) || json_string_length(t) != y - x ||
                          memcmp(json_string_value(t), text + x, y - x) != 0))
                    snprintf(why, why_size, "%s: its text is not the review's characters [%lld, %lld)", name,
                             (long long)a, (long long)b);
                else
                    part = json_pack("[I,I]", (json_int_t)a, (json_int_t)b);
            }
        }
        if (!part) rc = 1;
        else if (json_array_append_new(k, part)) rc = 1, why[0] = 0;
    }
    *key = rc ? NULL : json_dumps(k, JSON_COMPACT);
    json_decref(k);
    if (rc == 0 && !*key) why[0] = 0, rc = 1;
    return rc;
}

/* The keys of recs, or NULL with why (why[0] == 0: out of memory). */
static char **keys_of(const teach_changes *c, const char *text, size_t len, const json_t *recs, const char *what,
                      char *why, size_t why_size)
{
    size_t n = json_array_size(recs);
    char **keys = calloc(n + 1, sizeof *keys);
    if (!keys) return (why[0] = 0, NULL);
    if (!json_is_array(recs)) {
        snprintf(why, why_size, "\"%s\" is not a list of records", what);
        free(keys);
        return NULL;
    }
    char inner[200];
    for (size_t r = 0; r < n; r++)
        if (record_key(c, text, len, json_array_get(recs, r), &keys[r], inner, sizeof inner)) {
            if (inner[0]) snprintf(why, why_size, "%s[%zu]: %s", what, r, inner);
            else why[0] = 0;
            for (size_t q = 0; q < r; q++) free(keys[q]);
            free(keys);
            return NULL;
        }
    return keys;
}

static void free_keys(char **keys, size_t n)
{
    for (size_t i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
}

static long count(char **keys, size_t n, const char *k)
{
    long m = 0;
    for (size_t i = 0; i < n; i++) m += strcmp(keys[i], k) == 0;
    return m;
}

static long lmin(long a, long b) { return a < b ? a : b; }

/* Records of x matched one to one against y (a multiset intersection). */
static long common(char **x, size_t nx, char **y, size_t ny)
{
    long m = 0;
    for (size_t i = 0; i < nx; i++) {
        bool first = true; /* each distinct key once */
        for (size_t j = 0; first && j < i; j++) first = strcmp(x[i], x[j]) != 0;
        if (first) m += lmin(count(x, nx, x[i]), count(y, ny, x[i]));
    }
    return m;
}

/* rec with its change and whether the answer holds it, appended to out. */
static int mark(json_t *out, const json_t *rec, const char *change, bool right)
{
    json_t *o = json_deep_copy(rec);
    if (!o || json_object_set_new(o, "change", json_string(change)) ||
        json_object_set_new(o, "right", json_boolean(right)) || json_array_append_new(out, o)) {
        json_decref(o);
        return 1;
    }
    return 0;
}

int serve_changes_add(teach_changes *c, const json_t *id, const char *where, const char *text, size_t len,
                      const json_t *gold, const json_t *before, const json_t *after)
{
    char why[256], said[512];
    size_t ng = json_array_size(gold), nb = json_array_size(before), na = json_array_size(after);
    char **g = keys_of(c, text, len, gold, "records", why, sizeof why), **b = NULL, **a = NULL;
    if (g) b = keys_of(c, text, len, before, "model", why, sizeof why);
    if (b) a = keys_of(c, text, len, after, "now", why, sizeof why);
    int rc = 0;
    if (!a) {
        snprintf(said, sizeof said, "%s: %s", where, why);
        rc = why[0] ? serve_changes_error(c, id, said) : 1;
    } else {
        long exact_b = (long)nb == (long)ng && common(b, nb, g, ng) == (long)ng,
             exact_a = (long)na == (long)ng && common(a, na, g, ng) == (long)ng, fixed = 0, broken = 0;
        for (size_t i = 0; i < ng; i++) { /* each distinct answer record once */
            bool first = true;
            for (size_t j = 0; first && j < i; j++) first = strcmp(g[i], g[j]) != 0;
            if (!first) continue;
            long gk = count(g, ng, g[i]), now = lmin(count(a, na, g[i]), gk), then = lmin(count(b, nb, g[i]), gk);
            fixed += now > then ? now - then : 0;
            broken += then > now ? then - now : 0;
        }
        json_t *recs = json_array();
        bool *used = calloc(nb + 1, sizeof *used);
        long added = 0, removed = 0;
        rc = !recs || !used;
        for (size_t i = 0; rc == 0 && i < na; i++) { /* the current records, matched to the earlier ones */
            size_t j = 0;
            while (j < nb && (used[j] || strcmp(a[i], b[j]) != 0)) j++;
            if (j < nb) used[j] = true;
            else added++;
            rc = mark(recs, json_array_get(after, i), j < nb ? "unchanged" : "added", count(g, ng, a[i]) > 0);
        }
        for (size_t j = 0; rc == 0 && j < nb; j++)
            if (!used[j]) {
                removed++;
                rc = mark(recs, json_array_get(before, j), "removed", count(g, ng, b[j]) > 0);
            }
        json_t *item = rc ? NULL : json_pack("{s:O,s:s%,s:O,s:b,s:b,s:I,s:I,s:O}", "id", id, "text", text, len,
                                             "answer", gold, "exact_before", (int)exact_b, "exact_after",
                                             (int)exact_a, "fixed", (json_int_t)fixed, "broken",
                                             (json_int_t)broken, "records", recs);
        json_decref(recs);
        if (!item || json_array_append_new(c->items, item)) {
            rc = 1;
        } else {
            c->reviews++;
            c->exact[0] += exact_b;
            c->exact[1] += exact_a;
            c->matched[0] += common(b, nb, g, ng);
            c->matched[1] += common(a, na, g, ng);
            c->predicted[0] += (long)nb;
            c->predicted[1] += (long)na;
            c->gold += (long)ng;
            c->fixed += fixed;
            c->broken += broken;
            c->added += added;
            c->removed += removed;
            c->unchanged += (long)na - added;
            c->changed += added || removed;
        }
        free(used);
    }
    free_keys(g, ng);
    free_keys(b, nb);
    free_keys(a, na);
    return rc;
}

int serve_changes_error(teach_changes *c, const json_t *id, const char *why)
{
    return json_array_append_new(c->errors, json_pack("{s:O,s:s}", "id", id ? id : json_null(), "error", why)) != 0;
}

json_t *serve_changes_json(const teach_changes *c)
{
#define PAIR(x) json_pack("{s:I,s:I}", "before", (json_int_t)(x)[0], "after", (json_int_t)(x)[1])
    return json_pack("{s:I,s:O,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O}", "reviews", (json_int_t)c->reviews,
                     "errors", c->errors, "exact", PAIR(c->exact), "matched", PAIR(c->matched), "predicted",
                     PAIR(c->predicted), "gold", (json_int_t)c->gold, "fixed", (json_int_t)c->fixed, "broken",
                     (json_int_t)c->broken, "added", (json_int_t)c->added, "removed", (json_int_t)c->removed,
                     "unchanged", (json_int_t)c->unchanged, "changed", (json_int_t)c->changed, "items", c->items);
#undef PAIR
}
