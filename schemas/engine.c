/* engine.c - the constraint engine: which tokens keep the output a valid
 * prefix of what a schema allows. A byte automaton (schema fields, a suffix
 * automaton of the input text for spans, tries for enums, PCRE2 partial
 * matching for patterns) is walked together with a trie of the vocabulary's
 * token bytes, so a step visits only the live branches of the vocabulary. */
#include "schema_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Room for one more element in n parallel arrays (element sizes[i]) of one
 * capacity, each grown by pdi_grow's rule; false when an allocation fails or
 * the capacity would pass INT32_MAX (the arrays that grew keep their new
 * size, *cap the old). */
static bool grow(int32_t *cap, int n, void **arrays[], const size_t sizes[])
{
    size_t want = (size_t)*cap;
    for (int i = 0; i < n; i++) {
        want = (size_t)*cap;
        void *p = pdi_grow(*arrays[i], &want, (size_t)*cap + 1, sizes[i]);
        if (!p) return false;
        *arrays[i] = p;
    }
    if (want > INT32_MAX) return false;
    *cap = (int32_t)want;
    return true;
}

/* ------------------------------------------------------------------ trie */

pd_status pdi_trie_init(pdi_trie *t, int32_t n_ids, pd_error *err)
{
    memset(t, 0, sizeof *t);
    t->n_ids = n_ids;
    t->entry_next = malloc(sizeof(int32_t) * (size_t)(n_ids > 0 ? n_ids : 1));
    if (!t->entry_next) return pdi_set_error(err, PD_ERR_NOMEM, "trie: out of memory");
    for (int32_t i = 0; i < n_ids; i++) t->entry_next[i] = -1;
    return pdi_trie_add(t, -1, NULL, 0, err); /* the root */
}

void pdi_trie_free(pdi_trie *t)
{
    free(t->first_child);
    free(t->next_sibling);
    free(t->entry);
    free(t->byte);
    free(t->entry_next);
    memset(t, 0, sizeof *t);
}

int32_t pdi_trie_child(const pdi_trie *t, int32_t node, uint8_t b)
{
    for (int32_t c = t->first_child[node]; c >= 0; c = t->next_sibling[c])
        if (t->byte[c] == b) return c;
    return -1;
}

static int32_t new_node(pdi_trie *t, uint8_t b)
{
    if (t->n_nodes == t->cap_nodes) {
        void **arrays[] = {(void **)&t->first_child, (void **)&t->next_sibling, (void **)&t->entry,
                           (void **)&t->byte};
        static const size_t sizes[] = {sizeof(int32_t), sizeof(int32_t), sizeof(int32_t), 1};
        if (!grow(&t->cap_nodes, 4, arrays, sizes)) return -1;
    }
    int32_t n = t->n_nodes++;
    t->first_child[n] = t->next_sibling[n] = t->entry[n] = -1;
    t->byte[n] = b;
    return n;
}

pd_status pdi_trie_add(pdi_trie *t, int32_t id, const uint8_t *bytes, size_t len, pd_error *err)
{
    if (t->n_nodes == 0) return new_node(t, 0) < 0 ? pdi_set_error(err, PD_ERR_NOMEM, "trie: out of memory") : PD_OK;
    if (id < 0 || id >= t->n_ids || len == 0) return pdi_set_error(err, PD_ERR_ARG, "trie: bad entry %d", id);
    int32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t c = pdi_trie_child(t, node, bytes[i]);
        if (c < 0) {
            if ((c = new_node(t, bytes[i])) < 0) return pdi_set_error(err, PD_ERR_NOMEM, "trie: out of memory");
            t->next_sibling[c] = t->first_child[node];
            t->first_child[node] = c;
        }
        node = c;
    }
    t->entry_next[id] = t->entry[node];
    t->entry[node] = id;
    return PD_OK;
}

/* ------------------------------------------------------ suffix automaton */

static int32_t sam_next(const pdi_constraint *c, int32_t st, uint8_t b)
{
    for (int32_t e = c->sam_edge[st]; e >= 0; e = c->edge_next[e])
        if (c->edge_byte[e] == b) return c->edge_to[e];
    return -1;
}

static bool sam_add_edge(pdi_constraint *c, int32_t from, uint8_t b, int32_t to)
{
    if (c->n_edges == c->cap_edges) {
        void **arrays[] = {(void **)&c->edge_to, (void **)&c->edge_next, (void **)&c->edge_byte};
        static const size_t sizes[] = {sizeof(int32_t), sizeof(int32_t), 1};
        if (!grow(&c->cap_edges, 3, arrays, sizes)) return false;
    }
    int32_t e = c->n_edges++;
    c->edge_to[e] = to;
    c->edge_byte[e] = b;
    c->edge_next[e] = c->sam_edge[from];
    c->sam_edge[from] = e;
    return true;
}

static void sam_redirect(pdi_constraint *c, int32_t st, uint8_t b, int32_t to)
{
    for (int32_t e = c->sam_edge[st]; e >= 0; e = c->edge_next[e])
        if (c->edge_byte[e] == b) c->edge_to[e] = to;
}

/* The textbook online construction (Blumer et al.), one byte at a time. */
static bool sam_extend(pdi_constraint *c, uint8_t b)
{
    int32_t cur = c->n_states++;
    c->sam_len[cur] = c->sam_len[c->last] + 1;
    c->sam_edge[cur] = -1;
    int32_t p = c->last;
    for (; p >= 0 && sam_next(c, p, b) < 0; p = c->sam_link[p])
        if (!sam_add_edge(c, p, b, cur)) return false;
    if (p < 0) {
        c->sam_link[cur] = 0;
    } else {
        int32_t q = sam_next(c, p, b);
        if (c->sam_len[p] + 1 == c->sam_len[q]) {
            c->sam_link[cur] = q;
        } else {
            int32_t clone = c->n_states++;
            c->sam_len[clone] = c->sam_len[p] + 1;
            c->sam_link[clone] = c->sam_link[q];
            c->sam_edge[clone] = -1;
            for (int32_t e = c->sam_edge[q]; e >= 0; e = c->edge_next[e])
                if (!sam_add_edge(c, clone, c->edge_byte[e], c->edge_to[e])) return false;
            for (; p >= 0 && sam_next(c, p, b) == q; p = c->sam_link[p]) sam_redirect(c, p, b, clone);
            c->sam_link[q] = c->sam_link[cur] = clone;
        }
    }
    c->last = cur;
    return true;
}

pd_status pdi_constraint_init(pdi_constraint *c, const pd_schema *schema, const char *text, size_t len,
                              int32_t max_records, pd_error *err)
{
    memset(c, 0, sizeof *c);
    c->schema = schema;
    c->max_records = max_records;
    if (len > (size_t)INT32_MAX / 2 - 2)
        return pdi_set_error(err, PD_ERR_RANGE, "%s: input text of %zu bytes is too long", schema->path, len);
    size_t states = 2 * len + 2;
    c->sam_len = malloc(sizeof(int32_t) * states);
    c->sam_link = malloc(sizeof(int32_t) * states);
    c->sam_edge = malloc(sizeof(int32_t) * states);
    c->md = pcre2_match_data_create(4, NULL);
    if (!c->sam_len || !c->sam_link || !c->sam_edge || !c->md) goto nomem;
    c->n_states = 1;
    c->sam_len[0] = 0;
    c->sam_link[0] = -1;
    c->sam_edge[0] = -1;
    for (size_t i = 0; i < len; i++)
        if (!sam_extend(c, (uint8_t)text[i])) goto nomem;
    return PD_OK;
nomem:
    pdi_constraint_free(c);
    return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for the input automaton", schema->path);
}

void pdi_constraint_free(pdi_constraint *c)
{
    free(c->sam_len);
    free(c->sam_link);
    free(c->sam_edge);
    free(c->edge_to);
    free(c->edge_next);
    free(c->edge_byte);
    pcre2_match_data_free(c->md);
    free(c->buf);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------- byte automaton */

static bool step(pdi_constraint *c, pdi_cstate *s, uint8_t b);

pdi_cstate pdi_cstate_initial(void)
{
    pdi_cstate s = {0, 0, PD_PH_START, 0, 0, 0, 0};
    return s;
}

static const char *terminator(const pd_schema *sc, int field)
{
    return field + 1 < sc->n_fields ? sc->separator : sc->record_end;
}

/* UTF-8 bookkeeping: values are whole characters of valid UTF-8. */
static bool utf8_step(pdi_cstate *s, uint8_t b)
{
    if (b >= 0x80 && b < 0xC0) {
        if (s->need == 0) return false;
        s->need--;
        return true;
    }
    if (s->need) return false;
    s->need = b < 0x80 ? 0 : b < 0xE0 ? 1 : b < 0xF0 ? 2 : b < 0xF8 ? 3 : 9;
    return s->need != 9 && b != 0xC0 && b != 0xC1;
}

static int pattern_match(pdi_constraint *c, const pdi_schema_field *f, int32_t start, size_t n, uint32_t options)
{
    return pcre2_match(f->re, c->buf + start, n, 0, options, c->md, NULL);
}

static bool value_complete(pdi_constraint *c, const pdi_cstate *s, const pdi_schema_field *f)
{
    if (s->phase == PD_PH_EMPTY) return true;
    if (s->phase != PD_PH_VALUE || s->need) return false;
    switch (f->kind) {
    case PD_FIELD_SPAN: return true;
    case PD_FIELD_ENUM: return f->trie.entry[s->node] >= 0;
    case PD_FIELD_PATTERN: return pattern_match(c, f, s->pos - 1 - s->len, (size_t)s->len, 0) >= 0;
    }
    return false;
}

/* s->pos already counts b, which sits at buf[s->pos - 1]. */
static bool value_step(pdi_constraint *c, pdi_cstate *s, const pdi_schema_field *f, uint8_t b)
{
    int32_t from = s->phase == PD_PH_START ? 0 : s->node;
    if (!utf8_step(s, b)) return false;
    switch (f->kind) {
    case PD_FIELD_SPAN:
        s->node = sam_next(c, from, b);
        break;
    case PD_FIELD_ENUM:
        s->node = pdi_trie_child(&f->trie, from, b);
        break;
    case PD_FIELD_PATTERN: {
        if (s->len >= PD_PATTERN_MAX_BYTES) return false;
        int rc = pattern_match(c, f, s->pos - 1 - s->len, (size_t)s->len + 1, PCRE2_PARTIAL_HARD);
        s->node = (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) ? 0 : -1;
        break;
    }
    }
    s->phase = PD_PH_VALUE;
    s->len++;
    return s->node >= 0;
}

static bool put_byte(pdi_constraint *c, int32_t pos, uint8_t b)
{
    uint8_t *nb = pdi_grow(c->buf, &c->cap_buf, (size_t)pos + 1, 1);
    if (!nb) return false;
    c->buf = nb;
    nb[pos] = b;
    return true;
}

bool pdi_cstate_step(pdi_constraint *c, pdi_cstate *s, uint8_t b)
{
    if (s->phase == PD_PH_DONE || !put_byte(c, s->pos, b)) return false;
    s->pos++;
    return step(c, s, b);
}

static bool step(pdi_constraint *c, pdi_cstate *s, uint8_t b)
{
    const pd_schema *sc = c->schema;
    const pdi_schema_field *f = &sc->fields[s->field];
    const char *term = terminator(sc, s->field);
    if (s->phase == PD_PH_TERM) {
        if ((uint8_t)term[s->node] != b) return false;
        if (term[++s->node] != '\0') return true;
        s->phase = PD_PH_START;
        s->node = s->len = s->need = 0;
        if (++s->field == sc->n_fields) {
            s->field = 0;
            if (++s->rec >= c->max_records) s->phase = PD_PH_DONE;
        }
        return true;
    }
    if (b == (uint8_t)term[0]) {
        if (!value_complete(c, s, f)) return false;
        s->phase = PD_PH_TERM;
        s->node = 0;
        return step(c, s, b);
    }
    if (s->phase == PD_PH_EMPTY) return false;
    if (s->phase == PD_PH_START && b == '_' && f->allow_empty) {
        s->phase = PD_PH_EMPTY;
        return true;
    }
    return value_step(c, s, f, b);
}

bool pdi_cstate_can_end(const pdi_constraint *c, const pdi_cstate *s)
{
    (void)c;
    return s->phase == PD_PH_DONE || (s->phase == PD_PH_START && s->field == 0);
}

/* ---------------------------------------------------------- allowed set */

typedef struct walk {
    pdi_constraint *c;
    const pdi_trie *vocab;
    int32_t *ids, n;
} walk;

static void dfs(walk *w, int32_t node, const pdi_cstate *s)
{
    const pdi_trie *t = w->vocab;
    for (int32_t ch = t->first_child[node]; ch >= 0; ch = t->next_sibling[ch]) {
        pdi_cstate next = *s;
        if (!pdi_cstate_step(w->c, &next, t->byte[ch])) continue;
        for (int32_t id = t->entry[ch]; id >= 0; id = t->entry_next[id]) w->ids[w->n++] = id;
        if (t->first_child[ch] >= 0) dfs(w, ch, &next);
    }
}

static int cmp_id(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int32_t pdi_constraint_allowed(pdi_constraint *c, const pdi_cstate *s, const pdi_trie *vocab, int32_t *ids)
{
    walk w = {c, vocab, ids, 0};
    if (s->phase != PD_PH_DONE) dfs(&w, 0, s);
    qsort(ids, (size_t)w.n, sizeof *ids, cmp_id);
    return w.n;
}
