/* taxonomy.c - the class of each mismatch (missed or extra span, span
 * boundary, link, category, polarity, repeated), from the quadruples of the
 * other side in the same review. The definitions: tianchi_eval.h and
 * docs/tianchi-eval.md. */
#include "te_internal.h"

#include <stdlib.h>
#include <string.h>

/* How a term relates to another of the same field. */
enum { TOUCH_NONE = 0, TOUCH_OVERLAP = 1, TOUCH_EQUAL = 2 };

const char *te_error_class_name(te_error_class c)
{
    switch (c) {
    case TE_CLASS_MISSED_SPAN: return "missed span";
    case TE_CLASS_EXTRA_SPAN: return "extra span";
    case TE_CLASS_BOUNDARY: return "span boundary off";
    case TE_CLASS_LINK: return "wrong link";
    case TE_CLASS_CATEGORY: return "wrong category";
    case TE_CLASS_POLARITY: return "wrong polarity";
    case TE_CLASS_REPEATED: return "repeated";
    case TE_N_CLASSES: break;
    }
    return "unknown";
}

static void offsets_of(const te_row *r, int field, long *start, long *end)
{
    *start = field == TE_ASPECT ? r->a_start : r->o_start;
    *end = field == TE_ASPECT ? r->a_end : r->o_end;
}

/* Equal strings; else overlapping offsets where both rows have them; else one
 * string inside the other. `_` and empty terms overlap nothing. */
static int touch(const te_row *x, const te_row *y, int field)
{
    const char *a = x->f[field], *b = y->f[field];
    if (strcmp(a, b) == 0)
        return TOUCH_EQUAL;
    if (!*a || !*b || strcmp(a, TE_PLACEHOLDER) == 0 || strcmp(b, TE_PLACEHOLDER) == 0)
        return TOUCH_NONE;
    long xs, xe, ys, ye;
    offsets_of(x, field, &xs, &xe);
    offsets_of(y, field, &ys, &ye);
    if (xs >= 0 && xe >= 0 && ys >= 0 && ye >= 0)
        return xs < ye && ys < xe ? TOUCH_OVERLAP : TOUCH_NONE;
    return strstr(a, b) || strstr(b, a) ? TOUCH_OVERLAP : TOUCH_NONE;
}

/* Whether some row of other[0..n) equals r on the first `depth` fields. */
static int has_prefix(const te_row *r, const te_row *const *other, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        int same = 1;
        for (int f = 0; same && f < depth; f++)
            same = strcmp(r->f[f], other[i]->f[f]) == 0;
        if (same)
            return 1;
    }
    return 0;
}

/* The class of r, a mismatch on side `gold` (1: a miss), against the other
 * side's quadruples of its review, other[0..n). */
static te_error_class class_of(const te_row *r, int gold, const te_row *const *other, size_t n)
{
    int best[2] = {TOUCH_NONE, TOUCH_NONE};
    for (size_t i = 0; i < n; i++)
        for (int f = TE_ASPECT; f <= TE_OPINION; f++) {
            int t = touch(r, other[i], f);
            if (t > best[f])
                best[f] = t;
        }
    if (best[TE_ASPECT] == TOUCH_NONE || best[TE_OPINION] == TOUCH_NONE)
        return gold ? TE_CLASS_MISSED_SPAN : TE_CLASS_EXTRA_SPAN;
    if (best[TE_ASPECT] != TOUCH_EQUAL || best[TE_OPINION] != TOUCH_EQUAL)
        return TE_CLASS_BOUNDARY;
    if (!has_prefix(r, other, n, 2))
        return TE_CLASS_LINK;
    if (!has_prefix(r, other, n, 3))
        return TE_CLASS_CATEGORY;
    if (!has_prefix(r, other, n, 4))
        return TE_CLASS_POLARITY;
    return TE_CLASS_REPEATED;
}

static int cmp_by_id(const void *a, const void *b)
{
    const te_row *x = *(const te_row *const *)a, *y = *(const te_row *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The quadruples of a side (placeholders left out), sorted by id. */
static const te_row **by_id(const te_rows *rows, size_t *n)
{
    const te_row **v = malloc((rows->n + 1) * sizeof *v);
    if (!v)
        return NULL;
    *n = 0;
    for (size_t i = 0; i < rows->n; i++)
        if (!rows->v[i].placeholder)
            v[(*n)++] = &rows->v[i];
    qsort(v, *n, sizeof *v, cmp_by_id);
    return v;
}

int te_classify(const te_eval *ev, const te_mismatch *mm, const te_row *const *rows, size_t n,
                te_error_class *out)
{
    size_t count[2];
    const te_row **side[2] = {by_id(&ev->rows[0], &count[0]), by_id(&ev->rows[1], &count[1])};
    int bad = !side[0] || !side[1];
    for (size_t i = 0; !bad && i < n; i++) {
        int gold = mm[i].kind == TE_MISS;
        const te_row **other = side[gold ? 1 : 0];
        size_t lo = 0, hi = count[gold ? 1 : 0];
        while (lo < hi) { /* the first row of the id */
            size_t mid = lo + (hi - lo) / 2;
            if (other[mid]->id < rows[i]->id)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t end = lo;
        while (end < count[gold ? 1 : 0] && other[end]->id == rows[i]->id)
            end++;
        out[i] = class_of(rows[i], gold, other + lo, end - lo);
    }
    free(side[0]);
    free(side[1]);
    return bad ? -1 : 0;
}
