/* feature_sums.c - the sums of a tagger head's sparse features: the review
 * as characters (kinds, clause punctuation, lexicon marks), and for a token,
 * a link candidate or a record the key of each feature its templates give
 * (the template's bytes, then 0x1F and each atom's value), hashed to a row
 * of the decision's table and added (docs/extraction-by-decisions.md,
 * "Sparse features"). Pure text work: no token, no hidden state. */
#include "sparse_features.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ------------------------------------------------------------- the text */

static bool is_clause_punct(int32_t cp)
{
    return cp == 0xFF0C || cp == 0x3002 || cp == 0xFF01 || cp == 0xFF1F || cp == ',' || cp == '.' || cp == '!' ||
           cp == '?' || cp == '~' || cp == 0xFF5E || cp == 0xFF1B || cp == ';' || cp == ' ';
}

static char kind_of(int32_t cp)
{
    if (cp >= '0' && cp <= '9') return 'd';
    if ((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z')) return 'a';
    if (cp >= 0x4E00 && cp <= 0x9FFF) return 'h';
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x3000) return 's';
    return 'p';
}

int32_t pdi_feat_text_char(const pdi_feat_text *x, size_t byte)
{
    int32_t lo = 0, hi = x->n; /* the last character that starts at or before byte */
    if (byte >= x->len) return byte == x->len ? x->n : -1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (x->start[mid] <= byte) lo = mid;
        else hi = mid - 1;
    }
    return x->start[lo] == byte ? lo : -1;
}

/* Lexicon marks of field k: B I... E or S on its matches, - elsewhere. */
static pd_status mark_field(pdi_feat_text *x, int32_t k, pd_error *err)
{
    pdi_gaz_match *m = NULL;
    int32_t n = 0;
    char *marks = x->marks + (size_t)k * (size_t)x->n;
    memset(marks, '-', (size_t)x->n);
    pd_status rc = pdi_gazetteer_match(x->f->lexicon, 1u << k, x->bytes, x->len, &m, &n, err);
    for (int32_t i = 0; !rc && i < n; i++) {
        int32_t a = pdi_feat_text_char(x, m[i].start), b = pdi_feat_text_char(x, m[i].end);
        if (a < 0 || b <= a) continue; /* not on characters (not UTF-8) */
        for (int32_t c = a; c < b; c++) marks[c] = c == a ? (b - a == 1 ? 'S' : 'B') : c == b - 1 ? 'E' : 'I';
    }
    free(m);
    return rc;
}

pd_status pdi_feat_text_init(pdi_feat_text *x, const pdi_features *f, const char *bytes, size_t len, pd_error *err)
{
    *x = (pdi_feat_text){.f = f, .bytes = bytes, .len = len};
    if (len > INT32_MAX / 2) return pdi_set_error(err, PD_ERR_LIMIT, "features: a text of %zu bytes", len);
    int32_t n = pdi_utf8_count(bytes, len);
    x->n = n;
    x->start = malloc(sizeof *x->start * ((size_t)n + 1));
    x->cp = malloc(sizeof *x->cp * ((size_t)n + 1));
    x->kind = malloc((size_t)n + 1);
    x->punct = malloc((size_t)n + 1);
    x->scratch = malloc(sizeof *x->scratch * ((size_t)n + 1));
    x->key = malloc(2 * len + 2 * PD_TAGGER_MAX_SPANS + 1);
    x->marks = f->lex_fields ? malloc((size_t)f->n_spans * (size_t)n + 1) : NULL;
    if (!x->start || !x->cp || !x->kind || !x->punct || !x->scratch || !x->key || (f->lex_fields && !x->marks)) {
        pdi_feat_text_free(x);
        return pdi_set_error(err, PD_ERR_NOMEM, "features: out of memory for a text of %zu bytes", len);
    }
    n = 0;
    for (size_t i = 0; i < len; i++)
        if (!pdi_utf8_is_continuation((uint8_t)bytes[i])) x->start[n++] = i;
    x->start[n] = len;
    for (int32_t c = 0; c < n; c++) {
        utf8proc_int32_t cp = -1;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)bytes + x->start[c],
                                              (utf8proc_ssize_t)(x->start[c + 1] - x->start[c]), &cp);
        x->cp[c] = k == (utf8proc_ssize_t)(x->start[c + 1] - x->start[c]) ? cp : -1; /* -1: not UTF-8 */
        x->kind[c] = kind_of(x->cp[c]);
        x->punct[c] = is_clause_punct(x->cp[c]);
    }
    pd_status rc = PD_OK;
    for (int32_t k = 0; !rc && k < f->n_spans; k++)
        if (f->lex_fields & (1u << k)) rc = mark_field(x, k, err);
    if (!rc && f->polarity) rc = pdi_pol_text_init(&x->pol, f->polarity, x, err);
    if (rc) pdi_feat_text_free(x);
    return rc;
}

void pdi_feat_text_free(pdi_feat_text *x)
{
    free(x->start);
    free(x->cp);
    free(x->kind);
    free(x->punct);
    free(x->scratch);
    free(x->key);
    free(x->marks);
    pdi_pol_text_free(x->pol);
    *x = (pdi_feat_text){.f = x->f};
}

/* ------------------------------------------------------------- the sums */

/* What the atoms of one token, link candidate or record read. */
typedef struct feat_ctx {
    const pdi_feat_text *x;
    int32_t i;                   /* tag: the token's character */
    pdi_feat_span from, to;       /* link: the pair (to.start < 0: none) */
    const pdi_feat_span *tos;     /* link: every `to` span of the review */
    int32_t n_to, in_clause;     /* link: their count; how many lie in from's clause */
    bool before;                 /* link: to ends before from starts */
    int32_t gap_a, gap_b;        /* link: the characters between them */
    const pdi_feat_span *spans;   /* label: the record's span of each field (start < 0: `_`) */
    pdi_feat_span anchor, clause; /* label: the anchor span and its clause */
    int32_t n_distinct;          /* label: distinct characters of the anchor's clause (x->scratch) */
    int32_t memory;              /* link: 1/0 the pair is a memory key; label: its memory label, -1 none */
    pdi_feat_visit visit;        /* naming: told each feature (NULL: the sums alone) */
    void *arg;
    int32_t which;               /* naming: the link candidate (0 for a token or a record) */
} feat_ctx;

/* Where a feature's key goes: its hash, and when text is set (naming the
 * features of a decision: pdi_features_*_named) its bytes, cut at PDI_FEAT_NAME_MAX. */
typedef struct feed {
    uint64_t h;
    char *text;
    size_t n;
} feed;

static void put(feed *k, const void *p, size_t n)
{
    k->h = pdi_fnv_feed(k->h, p, n);
    if (!k->text) return;
    size_t room = PDI_FEAT_NAME_MAX - 1 - k->n;
    memcpy(k->text + k->n, p, n < room ? n : room);
    k->n += n < room ? n : room;
}

static void feed_str(feed *k, const char *s) { put(k, s, strlen(s)); }

/* Characters [a, b) of the text. */
static void feed_chars(feed *k, const pdi_feat_text *x, int32_t a, int32_t b)
{
    put(k, x->bytes + x->start[a], x->start[b] - x->start[a]);
}

/* Character c, <s> before the text, </s> after it. */
static void feed_char(feed *k, const pdi_feat_text *x, int32_t c)
{
    if (c < 0 || c >= x->n) feed_str(k, c < 0 ? "<s>" : "</s>");
    else feed_chars(k, x, c, c + 1);
}

static void feed_count(feed *k, int32_t n)
{
    char d = (char)('0' + (n < 3 ? n : 3));
    put(k, &d, 1);
}

/* Span s's text, `_` when empty. */
static void feed_span(feed *k, const pdi_feat_text *x, pdi_feat_span s)
{
    if (s.start < 0) feed_str(k, "_");
    else feed_chars(k, x, s.start, s.end);
}

/* The link atoms that compare the pair (dir, dist, gap, break, between). */
static void feed_pair(feed *k, int kind, const feat_ctx *c)
{
    const pdi_feat_text *x = c->x;
    int32_t d = c->gap_b - c->gap_a;
    if (kind == A_DIR || kind == A_DIST) feed_str(k, c->before ? "L" : "R");
    if (kind == A_DIST) {
        static const char *const buckets[] = {"0", "1", "2", "3", "4", "4", "6", "6", "6", "6"};
        feed_str(k, d < 10 ? buckets[d] : d < 16 ? "10" : "16");
    } else if (kind == A_GAP) {
        if (d <= 4) feed_chars(k, x, c->gap_a, c->gap_b);
        else feed_str(k, ">4");
    } else if (kind == A_BREAK) {
        int32_t i = c->gap_a;
        while (i < c->gap_b && !x->punct[i]) i++;
        feed_str(k, i < c->gap_b ? "1" : "0");
    } else if (kind == A_BETWEEN) {
        int32_t n = 0;
        for (int32_t s = 0; s < c->n_to; s++) n += c->tos[s].start >= c->gap_a && c->tos[s].end <= c->gap_b;
        feed_count(k, n);
    }
}

/* A polarity statistic (0 sum, 1 min, 2 max) of characters [a, b) as its
 * bucket; <none> for an empty span or one holding no valued term. */
static void feed_pol_stat(feed *k, const pdi_feat_text *x, pdi_feat_span s, int which)
{
    double st[3];
    feed_str(k, s.start < 0 || !pdi_pol_stats(x->pol, s.start, s.end, st) ? "<none>" : pdi_pol_bucket(st[which]));
}

/* Value j of atom a (j counts a multi-valued atom's values). */
static void feed_atom(feed *key, const atom *a, const feat_ctx *c, int32_t j)
{
    const pdi_feat_text *x = c->x;
    const pdi_features *f = x->f;
    bool none = c->to.start < 0;
    int32_t k = c->i + a->offset;
    switch (a->kind) {
    case A_C: feed_char(key, x, k); return;
    case A_KIND:
    case A_LEX:
        if (k < 0 || k >= x->n) feed_str(key, k < 0 ? "<s>" : "</s>");
        else put(key, a->kind == A_KIND ? x->kind + k : x->marks + (size_t)a->field * (size_t)x->n + k, 1);
        return;
    case A_NONE: feed_str(key, none ? "1" : "0"); return;
    case A_FROM: feed_span(key, x, c->from); return;
    case A_TO:
        if (none) feed_str(key, "<none>");
        else feed_span(key, x, c->to);
        return;
    case A_DIR:
    case A_DIST:
    case A_GAP:
    case A_BREAK:
    case A_BETWEEN:
        if (none) feed_str(key, "<none>");
        else feed_pair(key, a->kind, c);
        return;
    case A_LINK_CLAUSE: feed_count(key, c->in_clause); return;
    case A_COUNT: feed_count(key, c->n_to); return;
    case A_LINK_MEMORY: feed_str(key, none ? "<none>" : c->memory ? "1" : "0"); return;
    case A_TEXT: feed_span(key, x, c->spans[a->field]); return;
    case A_CHARS: feed_char(key, x, c->spans[a->field].start + j); return;
    case A_BIGRAMS: feed_chars(key, x, c->spans[a->field].start + j, c->spans[a->field].start + j + 2); return;
    case A_PAIR:
        for (int32_t s = 0; s < f->n_spans; s++) {
            if (s) feed_str(key, "|");
            feed_span(key, x, c->spans[s]);
        }
        return;
    case A_EMPTY:
        for (int32_t s = 0; s < f->n_spans; s++) feed_str(key, c->spans[s].start < 0 ? "1" : "0");
        return;
    case A_LEFT: feed_char(key, x, c->anchor.start - a->offset); return;
    case A_RIGHT: feed_char(key, x, c->anchor.end - 1 + a->offset); return;
    case A_CLAUSE: {
        utf8proc_uint8_t buf[4];
        put(key, buf, (size_t)utf8proc_encode_char(x->scratch[j], buf));
        return;
    }
    case A_MEMORY: feed_str(key, c->memory < 0 ? "<none>" : f->label_names[c->memory]); return;
    case A_POL:
    case A_POLPOS:
    case A_NEGATED:
        if (k < 0 || k >= x->n) feed_str(key, k < 0 ? "<s>" : "</s>");
        else
            feed_str(key, a->kind == A_POL      ? pdi_pol_strongest(x->pol, k)
                          : a->kind == A_POLPOS ? pdi_pol_place(x->pol, k)
                                                : pdi_pol_negated(x->pol, x, k));
        return;
    case A_POLSUM:
    case A_POLMIN:
    case A_POLMAX: feed_pol_stat(key, x, c->spans[a->field], a->kind - A_POLSUM); return;
    case A_CLAUSESUM:
    case A_CLAUSEMIN:
    case A_CLAUSEMAX: feed_pol_stat(key, x, c->clause, a->kind - A_CLAUSESUM); return;
    case A_NEGATION:
    case A_DEGREE: feed_str(key, pdi_pol_before(x->pol, x, a->kind == A_DEGREE, c->anchor)); return;
    }
}

/* How many values a multi-valued atom has. */
static int32_t n_values(const atom *a, const feat_ctx *c)
{
    if (a->kind == A_CLAUSE) return c->n_distinct;
    pdi_feat_span s = c->spans[a->field];
    int32_t len = s.start < 0 ? 0 : s.end - s.start;
    return a->kind == A_CHARS ? len : len > 1 ? len - 1 : 0;
}

/* out[0..width) += the rows of every feature of the table's templates; with
 * c->visit, each feature named (template, then its atoms' values) to it too. */
static void sum_table(const feat_table *tb, const feat_ctx *c, double *out)
{
    char name[PDI_FEAT_NAME_MAX];
    for (int32_t t = 0; t < tb->n_templates; t++) {
        const feat_template *tp = &tb->templates[t];
        int32_t n = tp->multi >= 0 ? n_values(&tp->atoms[tp->multi], c) : 1;
        for (int32_t j = 0; j < n; j++) {
            feed k = {tp->h, c->visit ? name : NULL, 0};
            if (k.text) {
                k.n = strlen(tp->name) < PDI_FEAT_NAME_MAX - 1 ? strlen(tp->name) : PDI_FEAT_NAME_MAX - 1;
                memcpy(name, tp->name, k.n);
            }
            for (int32_t a = 0; a < tp->n_atoms; a++) {
                k.h = (k.h ^ SEP) * FNV_PRIME; /* shown as "=" before the first value, a space between the others */
                if (k.text && k.n < PDI_FEAT_NAME_MAX - 1) name[k.n++] = a ? ' ' : '=';
                feed_atom(&k, &tp->atoms[a], c, j);
            }
            const float *row = tb->w + (size_t)(k.h % (uint64_t)tb->buckets) * (size_t)tb->width;
            for (int32_t y = 0; y < tb->width; y++) out[y] += (double)row[y];
            if (k.text) {
                name[k.n] = '\0';
                c->visit(c->arg, c->which, name, row);
            }
        }
    }
}

/* The clause of span s: from just after the last clause punctuation before
 * it to just before the first at or after its end. */
static pdi_feat_span clause_of(const pdi_feat_text *x, pdi_feat_span s)
{
    pdi_feat_span c = {s.start, s.end};
    while (c.start > 0 && !x->punct[c.start - 1]) c.start--;
    while (c.end < x->n && !x->punct[c.end]) c.end++;
    return c;
}

static int compare_ints(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The memory's entry for the key of these span texts (one per field, start
 * < 0: `_`), NULL when it has none. */
static const mem_entry *memory_find(const pdi_feat_text *x, const pdi_feat_span *spans)
{
    const pdi_features *f = x->f;
    size_t n = 0;
    for (int32_t k = 0; k < f->n_spans; k++) {
        if (k) x->key[n++] = '\t';
        if (spans[k].start < 0) {
            x->key[n++] = '_';
            continue;
        }
        size_t len = x->start[spans[k].end] - x->start[spans[k].start];
        memcpy(x->key + n, x->bytes + x->start[spans[k].start], len);
        n += len;
    }
    mem_entry key = {x->key, (uint32_t)n, 0, 0}; /* n < 2 len + 2: no overflow */
    return f->n_memory ? bsearch(&key, f->memory, (size_t)f->n_memory, sizeof key, pdi_feat_compare_keys) : NULL;
}

void pdi_features_tag_named(const pdi_feat_text *x, int32_t i, double *out, pdi_feat_visit visit, void *arg)
{
    feat_ctx c = {.x = x, .i = i, .visit = visit, .arg = arg};
    if (pdi_features_on(x->f, PD_FEAT_TAG)) sum_table(&x->f->table[D_TAG], &c, out);
}

void pdi_features_tag(const pdi_feat_text *x, int32_t i, double *out) { pdi_features_tag_named(x, i, out, NULL, NULL); }

void pdi_features_link_named(const pdi_feat_text *x, pdi_feat_span from, const pdi_feat_span *to, int32_t n_to,
                             double *out, pdi_feat_visit visit, void *arg)
{
    const pdi_features *f = x->f;
    if (!pdi_features_on(f, PD_FEAT_LINK)) return;
    const feat_table *tb = &f->table[D_LINK];
    feat_ctx c = {.x = x, .from = from, .tos = to, .n_to = n_to, .visit = visit, .arg = arg};
    pdi_feat_span clause = clause_of(x, from);
    for (int32_t s = 0; s < n_to; s++) c.in_clause += to[s].start >= clause.start && to[s].end <= clause.end;
    for (int32_t a = 0; a <= n_to; a++) {
        c.to = a < n_to ? to[a] : (pdi_feat_span){-1, -1};
        c.which = a;
        c.before = c.to.end <= from.start;
        c.gap_a = c.before ? c.to.end : from.end;
        c.gap_b = c.before ? from.start : c.to.start > from.end ? c.to.start : from.end;
        if (a < n_to && (tb->kinds & (1ull << A_LINK_MEMORY))) {
            pdi_feat_span pair[PD_TAGGER_MAX_SPANS];
            pair[f->link_from] = from;
            pair[f->link_to] = c.to;
            c.memory = memory_find(x, pair) != NULL;
        }
        double s = 0.0;
        sum_table(tb, &c, &s);
        out[a] += s;
    }
}

void pdi_features_link(const pdi_feat_text *x, pdi_feat_span from, const pdi_feat_span *to, int32_t n_to, double *out)
{
    pdi_features_link_named(x, from, to, n_to, out, NULL, NULL);
}

void pdi_features_label_named(const pdi_feat_text *x, const pdi_feat_span *spans, double *out, pdi_feat_visit visit,
                              void *arg)
{
    const pdi_features *f = x->f;
    if (!pdi_features_on(f, PD_FEAT_LABEL)) return;
    const feat_table *tb = &f->table[D_LABEL];
    feat_ctx c = {.x = x, .spans = spans, .memory = -1, .visit = visit, .arg = arg}; /* a record always has a span */
    int32_t k = f->link_from >= 0 && spans[f->link_from].start >= 0 ? f->link_from : 0;
    while (k < f->n_spans && spans[k].start < 0) k++;
    if (k < f->n_spans) c.anchor = spans[k];
    c.clause = clause_of(x, c.anchor);
    if (tb->kinds & (1ull << A_CLAUSE)) { /* its distinct characters, in any order: sums are order-free */
        pdi_feat_span cl = c.clause;
        for (int32_t i = cl.start; i < cl.end; i++)
            if (x->cp[i] >= 0) x->scratch[c.n_distinct++] = x->cp[i];
        qsort(x->scratch, (size_t)c.n_distinct, sizeof *x->scratch, compare_ints);
        int32_t n = 0;
        for (int32_t i = 0; i < c.n_distinct; i++)
            if (n == 0 || x->scratch[n - 1] != x->scratch[i]) x->scratch[n++] = x->scratch[i];
        c.n_distinct = n;
    }
    if (tb->kinds & (1ull << A_MEMORY)) {
        const mem_entry *m = memory_find(x, spans);
        c.memory = m ? m->label : -1;
    }
    sum_table(tb, &c, out);
}

void pdi_features_label(const pdi_feat_text *x, const pdi_feat_span *spans, double *out)
{
    pdi_features_label_named(x, spans, out, NULL, NULL);
}
