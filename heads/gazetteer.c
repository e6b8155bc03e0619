/* gazetteer.c - a tagger head's term lists: the gazetteer, remembered span
 * terms that the prompt's {marked} copy of the text shows between marker
 * tokens, so the trunk sees which words were spans in training, and the
 * sparse features' lexicon, the same file without marks
 * (docs/extraction-by-decisions.md). head.json names the file (and the
 * gazetteer's markers); the file is one `field<TAB>term` a line, editable by
 * users for their shop's vocabulary. Matching is pure text work; turning
 * matches into token ids or features is the caller's. Also the head's text
 * files (gazetteer, lexicon, memory): read, limited, cut into lines. */
#include "heads.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct gaz_term {
    const char *bytes; /* into the file's data */
    uint32_t len;      /* bytes */
    int32_t chars;     /* characters */
    uint32_t fields;   /* bit k: span field k */
} gaz_term;

struct pdi_gazetteer {
    char *data;        /* the file's bytes, cut into terms */
    gaz_term *terms;   /* sorted by bytes, distinct */
    int32_t n_terms;
    int32_t longest;   /* characters of the longest term */
    uint32_t fields;   /* the span fields (bits) its lines may name */
    char *marks[PD_TAGGER_MAX_SPANS][2]; /* open and close marker of each span field; NULL without (a lexicon) */
};

void pdi_gazetteer_free(pdi_gazetteer *g)
{
    if (!g) return;
    for (int32_t k = 0; k < PD_TAGGER_MAX_SPANS; k++) {
        free(g->marks[k][0]);
        free(g->marks[k][1]);
    }
    free(g->data);
    free(g->terms);
    free(g);
}

const char *pdi_gazetteer_mark(const pdi_gazetteer *g, int32_t field, bool close)
{
    return g && field >= 0 && field < PD_TAGGER_MAX_SPANS ? g->marks[field][close] : NULL;
}

static int compare_terms(const void *a, const void *b)
{
    const gaz_term *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

int32_t pdi_text_chars(const char *s, size_t n)
{
    int32_t chars = 0;
    for (size_t i = 0; i < n; chars++) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0 || cp < 0x20 || cp == 0x7F) return -1;
        i += (size_t)k;
    }
    return chars;
}

/* "marks": {field: [open, close]} for span fields of t. */
static pd_status parse_marks(pdi_gazetteer *g, const pdi_tagger *t, json_t *marks, const char *path, pd_error *err)
{
    if (!json_is_object(marks) || json_object_size(marks) == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: gazetteer.marks must be an object {span field: [open, close]}", path);
    const char *field;
    json_t *pair;
    json_object_foreach(marks, field, pair) {
        int32_t k = 0;
        while (k < t->n_spans && strcmp(t->spans[k], field) != 0) k++;
        if (k == t->n_spans)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: gazetteer.marks names '%s', not a span field of the head", path,
                                 field);
        const char *open = json_string_value(json_array_get(pair, 0)), *close = json_string_value(json_array_get(pair, 1));
        if (json_array_size(pair) != 2 || !open || !close || !*open || !*close || strcmp(open, close) == 0)
            return pdi_set_error(err, PD_ERR_FORMAT,
                                 "%s: gazetteer.marks.%s must be two different marker token names [open, close]", path,
                                 field);
        if (!(g->marks[k][0] = strdup(open)) || !(g->marks[k][1] = strdup(close)))
            return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    }
    return PD_OK;
}

/* One line `field<TAB>term` (s[0..n), no newline) into g->terms. */
static pd_status parse_line(pdi_gazetteer *g, const pdi_tagger *t, char *s, size_t n, size_t line, const char *file,
                            pd_error *err)
{
    char *tab = memchr(s, '\t', n);
    if (!tab) return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: expected field<TAB>term", file, line);
    int32_t k = 0;
    while (k < t->n_spans && !(strlen(t->spans[k]) == (size_t)(tab - s) && memcmp(t->spans[k], s, (size_t)(tab - s)) == 0))
        k++;
    if (k == t->n_spans || !(g->fields & (1u << k)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: field '%.*s' is not a span field%s", file, line,
                             (int)(tab - s) > 64 ? 64 : (int)(tab - s), s,
                             g->marks[0][0] || g->marks[1][0] ? " with marks in head.json" : " of the head");
    const char *term = tab + 1;
    size_t len = n - (size_t)(term - s);
    int32_t chars = pdi_text_chars(term, len);
    if (len == 0 || chars < 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: the term is empty, not UTF-8 or holds a control character",
                             file, line);
    if (chars > PD_GAZETTEER_MAX_CHARS)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s:%zu: a term of %d characters, more than %d", file, line, chars,
                             PD_GAZETTEER_MAX_CHARS);
    g->terms[g->n_terms++] = (gaz_term){term, (uint32_t)len, chars, 1u << k};
    if (chars > g->longest) g->longest = chars;
    return PD_OK;
}

/* File `name` (in the head's folder) into sorted distinct terms of the span
 * fields g->fields (a term on several lines has every field it is listed
 * under). */
static pd_status read_terms(pdi_gazetteer *g, const pd_head *h, const char *name, pd_error *err)
{
    char *file = pdi_head_path(h, name), *s;
    size_t len = 0, lines = 0, pos = 0, n;
    if (!file) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", h->source);
    pd_status rc = pdi_head_text_read(file, &g->data, &len, &lines, err);
    if (!rc && !(g->terms = malloc(sizeof *g->terms * lines))) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", file);
    for (size_t line = 1; !rc && pdi_head_text_line(g->data, len, &pos, &s, &n); line++)
        if (n > 0 && *s != '#') rc = parse_line(g, h->tagger, s, n, line, file, err);
    free(file);
    if (rc) return rc;
    qsort(g->terms, (size_t)g->n_terms, sizeof *g->terms, compare_terms);
    int32_t kept = 0;
    for (int32_t i = 0; i < g->n_terms; i++) {
        if (kept > 0 && compare_terms(&g->terms[kept - 1], &g->terms[i]) == 0)
            g->terms[kept - 1].fields |= g->terms[i].fields;
        else
            g->terms[kept++] = g->terms[i];
    }
    g->n_terms = kept;
    return PD_OK;
}

pd_status pdi_gazetteer_parse(pd_head *h, json_t *root, const char *path, pd_error *err)
{
    pdi_tagger *t = h->tagger;
    json_t *gz = json_object_get(root, "gazetteer");
    bool marked = strstr(t->prompt, "{marked}") != NULL;
    if (!gz) {
        if (marked)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: the prompt has {marked} but head.json names no \"gazetteer\"",
                                 path);
        return PD_OK;
    }
    if (!marked)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: a \"gazetteer\" needs {marked} in the prompt (where the marks go)",
                             path);
    const char *name = json_string_value(json_object_get(gz, "file"));
    if (!json_is_object(gz) || !name || !*name)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"gazetteer\" must be an object with \"file\" and \"marks\"", path);
    pdi_gazetteer *g = t->gazetteer = calloc(1, sizeof *t->gazetteer);
    if (!g) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    pd_status rc = parse_marks(g, t, json_object_get(gz, "marks"), path, err);
    for (int32_t k = 0; k < PD_TAGGER_MAX_SPANS; k++)
        if (g->marks[k][0]) g->fields |= 1u << k;
    return rc ? rc : read_terms(g, h, name, err);
}

pd_status pdi_lexicon_load(const pd_head *h, const char *name, pdi_gazetteer **out, pd_error *err)
{
    pdi_gazetteer *g = *out = calloc(1, sizeof *g);
    if (!g) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", h->source);
    g->fields = (1u << h->tagger->n_spans) - 1;
    return read_terms(g, h, name, err);
}

/* ---------------------------------------------------------------- matching */

static const gaz_term *lookup(const pdi_gazetteer *g, const char *s, size_t n)
{
    gaz_term key = {s, (uint32_t)n, 0, 0};
    return bsearch(&key, g->terms, (size_t)g->n_terms, sizeof *g->terms, compare_terms);
}

typedef struct candidate {
    int32_t chars, start; /* length and first character */
    uint32_t fields;
} candidate;

static int longer_then_earlier(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->chars != y->chars) return x->chars > y->chars ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

static int earlier(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

pd_status pdi_gazetteer_match(const pdi_gazetteer *g, uint32_t fields, const char *text, size_t len, pdi_gaz_match **out,
                              int32_t *n_out, pd_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (len > INT32_MAX - 1) return pdi_set_error(err, PD_ERR_LIMIT, "gazetteer: a text of %zu bytes", len);
    /* starts[c]: byte offset of character c (a byte that is no UTF-8 continuation); starts[chars] = len */
    size_t *starts = malloc(sizeof *starts * (len + 1));
    candidate *cand = malloc(sizeof *cand * (len + 1));
    uint8_t *used = calloc(len + 1, 1);
    int32_t chars = 0, n_cand = 0, n = 0;
    if (!starts || !cand || !used) {
        free(starts);
        free(cand);
        free(used);
        return pdi_set_error(err, PD_ERR_NOMEM, "gazetteer: out of memory for a text of %zu bytes", len);
    }
    for (size_t i = 0; i < len; i++)
        if (!pdi_utf8_is_continuation((uint8_t)text[i])) starts[chars++] = i;
    starts[chars] = len;
    for (int32_t s = 0; s < chars; s++) /* the longest term of the fields starting at each character */
        for (int32_t L = g->longest < chars - s ? g->longest : chars - s; L > 0; L--) {
            const gaz_term *hit = lookup(g, text + starts[s], starts[s + L] - starts[s]);
            if (hit && (hit->fields & fields)) {
                cand[n_cand++] = (candidate){L, s, hit->fields & fields};
                break;
            }
        }
    qsort(cand, (size_t)n_cand, sizeof *cand, longer_then_earlier);
    for (int32_t i = 0; i < n_cand; i++) { /* kept unless it overlaps one kept before */
        const candidate *c = &cand[i];
        int32_t j = c->start;
        while (j < c->start + c->chars && !used[j]) j++;
        if (j < c->start + c->chars) continue;
        memset(used + c->start, 1, (size_t)c->chars);
        cand[n++] = *c; /* n <= i: kept ones move to the front */
    }
    pd_status rc = PD_OK;
    if (n > 0 && !(*out = malloc(sizeof **out * (size_t)n)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "gazetteer: out of memory");
    if (!rc) {
        qsort(cand, (size_t)n, sizeof *cand, earlier); /* text order */
        for (int32_t i = 0; i < n; i++)
            (*out)[i] = (pdi_gaz_match){starts[cand[i].start], starts[cand[i].start + cand[i].chars], cand[i].fields};
        *n_out = n;
    }
    free(starts);
    free(cand);
    free(used);
    return rc;
}
