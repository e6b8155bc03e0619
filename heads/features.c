/* features.c - a tagger head's sparse features (the wide part): head.json's
 * "features" (the hash, a lexicon and a memory file, and for each of the
 * tag, link and label decisions a bucket count and templates of atoms), the
 * two files and the tables features.tag/link/label, all checked before use
 * (docs/extraction-by-decisions.md, "Sparse features"). The sums the
 * composer adds to the dense scores are feature_sums.c's. */
#include "sparse_features.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEMPLATES 64
#define MAX_BUCKETS (1 << 24)

static const char *const decision_names[D_COUNT] = {"tag", "link", "label"};

/* How each atom is written: NAME, NAME[k] (offset in [lo, hi]) or
 * NAME.FIELD[k] / NAME.FIELD (a span field, with or without an offset). */
typedef enum { W_PLAIN, W_OFFSET, W_FIELD, W_FIELD_OFFSET } atom_writing;

static const struct {
    const char *name;
    uint8_t decision, kind, writing, multi;
    int8_t lo, hi;
} atom_defs[] = {
    {"c", D_TAG, A_C, W_OFFSET, 0, -4, 4},           {"kind", D_TAG, A_KIND, W_OFFSET, 0, -4, 4},
    {"lex", D_TAG, A_LEX, W_FIELD_OFFSET, 0, -4, 4}, {"none", D_LINK, A_NONE, W_PLAIN, 0, 0, 0},
    {"from", D_LINK, A_FROM, W_PLAIN, 0, 0, 0},      {"to", D_LINK, A_TO, W_PLAIN, 0, 0, 0},
    {"dir", D_LINK, A_DIR, W_PLAIN, 0, 0, 0},        {"dist", D_LINK, A_DIST, W_PLAIN, 0, 0, 0},
    {"gap", D_LINK, A_GAP, W_PLAIN, 0, 0, 0},        {"break", D_LINK, A_BREAK, W_PLAIN, 0, 0, 0},
    {"between", D_LINK, A_BETWEEN, W_PLAIN, 0, 0, 0}, {"clause", D_LINK, A_LINK_CLAUSE, W_PLAIN, 0, 0, 0},
    {"count", D_LINK, A_COUNT, W_PLAIN, 0, 0, 0},    {"memory", D_LINK, A_LINK_MEMORY, W_PLAIN, 0, 0, 0},
    {"text", D_LABEL, A_TEXT, W_FIELD, 0, 0, 0},     {"chars", D_LABEL, A_CHARS, W_FIELD, 1, 0, 0},
    {"bigrams", D_LABEL, A_BIGRAMS, W_FIELD, 1, 0, 0}, {"pair", D_LABEL, A_PAIR, W_PLAIN, 0, 0, 0},
    {"empty", D_LABEL, A_EMPTY, W_PLAIN, 0, 0, 0},   {"left", D_LABEL, A_LEFT, W_OFFSET, 0, 1, 4},
    {"right", D_LABEL, A_RIGHT, W_OFFSET, 0, 1, 4},  {"clause", D_LABEL, A_CLAUSE, W_PLAIN, 1, 0, 0},
    {"memory", D_LABEL, A_MEMORY, W_PLAIN, 0, 0, 0},
    {"pol", D_TAG, A_POL, W_OFFSET, 0, -4, 4},       {"polpos", D_TAG, A_POLPOS, W_OFFSET, 0, -4, 4},
    {"negated", D_TAG, A_NEGATED, W_OFFSET, 0, -4, 4}, {"polsum", D_LABEL, A_POLSUM, W_FIELD, 0, 0, 0},
    {"polmin", D_LABEL, A_POLMIN, W_FIELD, 0, 0, 0}, {"polmax", D_LABEL, A_POLMAX, W_FIELD, 0, 0, 0},
    {"clausesum", D_LABEL, A_CLAUSESUM, W_PLAIN, 0, 0, 0}, {"clausemin", D_LABEL, A_CLAUSEMIN, W_PLAIN, 0, 0, 0},
    {"clausemax", D_LABEL, A_CLAUSEMAX, W_PLAIN, 0, 0, 0}, {"negation", D_LABEL, A_NEGATION, W_PLAIN, 0, 0, 0},
    {"degree", D_LABEL, A_DEGREE, W_PLAIN, 0, 0, 0},
};

void pdi_features_free(pdi_features *f)
{
    if (!f) return;
    for (int d = 0; d < D_COUNT; d++) {
        for (int32_t i = 0; f->table[d].templates && i < f->table[d].n_templates; i++) free(f->table[d].templates[i].name);
        free(f->table[d].templates);
        free(f->table[d].w);
    }
    pdi_gazetteer_free(f->lexicon);
    pdi_polarity_free(f->polarity);
    free(f->memory_data);
    free(f->memory);
    for (int32_t l = 0; f->label_names && l < f->n_labels; l++) free(f->label_names[l]);
    free(f->label_names);
    free(f);
}

uint64_t pdi_fnv1a64(uint64_t seed, const void *p, size_t n) { return pdi_fnv_feed(FNV_BASIS ^ seed, p, n); }

/* ------------------------------------------------------------- head.json */

/* v as compact JSON into buf (for messages). */
static const char *shown(json_t *v, char *buf, size_t n)
{
    char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(buf, n, "%s", s ? s : "nothing");
    if (s && strlen(s) >= n && n > 4) memcpy(buf + n - 4, "...", 4);
    free(s);
    return buf;
}

/* The first key of obj that is not among names[0..n), NULL when none. */
static const char *unknown_key(json_t *obj, const char *const *names, int n)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int i = 0;
        while (i < n && strcmp(names[i], key) != 0) i++;
        if (i == n) return key;
    }
    return NULL;
}

static int32_t field_index(const pdi_tagger *t, const char *s, size_t n)
{
    for (int32_t k = 0; k < t->n_spans; k++)
        if (strlen(t->spans[k]) == n && memcmp(t->spans[k], s, n) == 0) return k;
    return -1;
}

/* Where a template is, for messages. */
typedef struct where {
    const char *path, *decision, *tpl;
    size_t index;
} where;

#define TPL_FMT "%s: features.%s.templates[%zu] \"%.80s\": "
#define TPL_ARGS(w) (w)->path, (w)->decision, (w)->index, (w)->tpl

/* One atom a[0..n) of a template of decision d into *out. */
static pd_status parse_atom(const pdi_tagger *t, int d, const char *a, size_t n, atom *out, bool *multi, const where *w,
                            pd_error *err)
{
    const char *open = memchr(a, '[', n), *dot = memchr(a, '.', n);
    size_t name_len = (size_t)((dot ? dot : open ? open : a + n) - a);
    size_t i = 0;
    while (i < sizeof atom_defs / sizeof atom_defs[0] &&
           !(atom_defs[i].decision == d && strlen(atom_defs[i].name) == name_len &&
             memcmp(atom_defs[i].name, a, name_len) == 0))
        i++;
    if (i == sizeof atom_defs / sizeof atom_defs[0] || (dot && open && dot > open))
        return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "unknown atom '%.*s' for the %s decision", TPL_ARGS(w), (int)n, a,
                             w->decision);
    int writing = atom_defs[i].writing;
    bool has_field = writing == W_FIELD || writing == W_FIELD_OFFSET;
    bool has_offset = writing == W_OFFSET || writing == W_FIELD_OFFSET;
    if ((dot != NULL) != has_field || (open != NULL) != has_offset)
        return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "atom '%.*s' must be written %s%s%s", TPL_ARGS(w), (int)n, a,
                             atom_defs[i].name, has_field ? ".FIELD" : "", has_offset ? "[k]" : "");
    *out = (atom){atom_defs[i].kind, 0, 0};
    *multi = atom_defs[i].multi;
    if (has_field) {
        const char *f = dot + 1, *f_end = open ? open : a + n;
        int32_t k = field_index(t, f, (size_t)(f_end - f));
        if (k < 0)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "unknown field '%.*s' (not a span field of the head)",
                                 TPL_ARGS(w), (int)(f_end - f), f);
        out->field = (int8_t)k;
    }
    if (has_offset) { /* -?[0-9] ']' at the end, as %d writes it, within [lo, hi] */
        const char *k = open + 1, *end = a + n;
        bool neg = k < end && *k == '-';
        const char *digit = k + neg;
        int v = digit < end && *digit >= '0' && *digit <= '9' ? *digit - '0' : -1;
        if (neg) v = -v;
        if (digit + 2 != end || end[-1] != ']' || !(*digit >= '0' && *digit <= '9') || (neg && v == 0) ||
            v < atom_defs[i].lo || v > atom_defs[i].hi)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "bad offset in '%.*s' (an integer in [%d, %d])", TPL_ARGS(w),
                                 (int)n, a, atom_defs[i].lo, atom_defs[i].hi);
        out->offset = (int8_t)v;
    }
    return PD_OK;
}

/* A template: "bias" (no atom) or up to MAX_ATOMS atoms separated by single
 * spaces, at most one of them multi-valued. */
static pd_status parse_template(pdi_features *f, const pdi_tagger *t, int d, feat_template *tp, const where *w,
                                pd_error *err)
{
    const char *s = w->tpl;
    size_t len = strlen(s);
    *tp = (feat_template){.h = pdi_fnv1a64(f->seed, s, len), .multi = -1, .name = strdup(s)};
    if (!tp->name) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", w->path);
    if (strcmp(s, "bias") == 0) return PD_OK;
    if (len == 0 || s[0] == ' ' || s[len - 1] == ' ' || strstr(s, "  "))
        return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "atoms must be separated by single spaces", TPL_ARGS(w));
    int32_t n = 1;
    for (size_t i = 0; i < len; i++) n += s[i] == ' ';
    if (n > MAX_ATOMS)
        return pdi_set_error(err, PD_ERR_LIMIT, TPL_FMT "%d atoms, more than %d", TPL_ARGS(w), n, MAX_ATOMS);
    for (const char *a = s; tp->n_atoms < n; tp->n_atoms++) {
        const char *end = strchr(a, ' ');
        size_t alen = end ? (size_t)(end - a) : strlen(a);
        bool multi = false;
        atom *at = &tp->atoms[tp->n_atoms];
        pd_status rc = parse_atom(t, d, a, alen, at, &multi, w, err);
        if (rc) return rc;
        if (multi && tp->multi >= 0)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "more than one multi-valued atom", TPL_ARGS(w));
        if (multi) tp->multi = tp->n_atoms;
        if (at->kind == A_LEX && !f->lexicon)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "a lex. atom needs features.lexicon", TPL_ARGS(w));
        if ((at->kind == A_MEMORY || at->kind == A_LINK_MEMORY) && !f->has_memory)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "a memory atom needs features.memory", TPL_ARGS(w));
        if (at->kind >= A_POL && !f->polarity)
            return pdi_set_error(err, PD_ERR_FORMAT, TPL_FMT "a polarity atom needs features.polarity", TPL_ARGS(w));
        if (at->kind == A_LEX) f->lex_fields |= 1u << at->field;
        a += alen + 1;
    }
    return PD_OK;
}

/* features.tag / .link / .label: {"buckets": n, "templates": [...]}. */
static pd_status parse_table(pdi_features *f, const pdi_tagger *t, int d, json_t *v, const char *path, pd_error *err)
{
    static const char *const keys[] = {"buckets", "templates"};
    const char *name = decision_names[d], *bad;
    feat_table *tb = &f->table[d];
    char got[48];
    if (!json_is_object(v))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s must be an object {\"buckets\", \"templates\"}", path,
                             name);
    if ((bad = unknown_key(v, keys, 2)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s: unknown key '%s'", path, name, bad);
    if (d == D_LINK && t->link_from < 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.link: the head has no link", path);
    if (d == D_LABEL && t->n_labels == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.label: the head has no labels", path);
    json_t *b = json_object_get(v, "buckets"), *tpls = json_object_get(v, "templates");
    json_int_t buckets = json_integer_value(b);
    if (!json_is_integer(b) || buckets < 1)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s.buckets must be an integer in [1, %d], got %s", path,
                             name, MAX_BUCKETS, shown(b, got, sizeof got));
    if (buckets > MAX_BUCKETS)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s: features.%s.buckets %lld, more than %d", path, name,
                             (long long)buckets, MAX_BUCKETS);
    size_t n = json_array_size(tpls);
    if (!json_is_array(tpls) || n == 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s.templates must be a non-empty array of strings, got %s",
                             path, name, shown(tpls, got, sizeof got));
    if (n > MAX_TEMPLATES)
        return pdi_set_error(err, PD_ERR_LIMIT, "%s: features.%s.templates has %zu templates, more than %d", path, name,
                             n, MAX_TEMPLATES);
    if (!(tb->templates = calloc(n, sizeof *tb->templates)))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(tpls, i));
        if (!s)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s.templates[%zu] is not a string: %s", path, name, i,
                                 shown(json_array_get(tpls, i), got, sizeof got));
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_string_value(json_array_get(tpls, j)), s) == 0)
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s.templates[%zu] \"%.80s\" repeats templates[%zu]",
                                     path, name, i, s, j);
        where w = {path, name, s, i};
        tb->n_templates = (int32_t)i + 1; /* before parsing: its name is freed with the table on a refusal */
        pd_status rc = parse_template(f, t, d, &tb->templates[i], &w, err);
        if (rc) return rc;
        for (int32_t a = 0; a < tb->templates[i].n_atoms; a++) tb->kinds |= 1ull << tb->templates[i].atoms[a].kind;
    }
    tb->buckets = (int32_t)buckets;
    tb->width = d == D_TAG ? t->n_tags : d == D_LINK ? 1 : t->n_labels + t->no_record;
    return PD_OK;
}

/* "hash": {"function": "fnv1a64", "seed": s} with s in [0, 2^32). */
static pd_status parse_hash(pdi_features *f, json_t *v, const char *path, pd_error *err)
{
    static const char *const keys[] = {"function", "seed"};
    const char *bad, *fn = json_string_value(json_object_get(v, "function"));
    json_t *seed = json_object_get(v, "seed");
    char got[48];
    if (!json_is_object(v))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.hash must be an object {\"function\": \"fnv1a64\", \"seed\"}",
                             path);
    if ((bad = unknown_key(v, keys, 2)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.hash: unknown key '%s'", path, bad);
    if (!fn || strcmp(fn, "fnv1a64") != 0)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.hash.function must be \"fnv1a64\", got %s", path,
                             shown(json_object_get(v, "function"), got, sizeof got));
    json_int_t s = json_integer_value(seed);
    if (!json_is_integer(seed) || s < 0 || s > 0xFFFFFFFFll)
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features.hash.seed must be an integer in [0, 2^32), got %s", path,
                             shown(seed, got, sizeof got));
    f->seed = (uint64_t)s;
    return PD_OK;
}

/* Each label's values joined by sep into a malloc'ed string; NULL when out of memory. */
static char *join_label(const pdi_tagger *t, int32_t l, char sep)
{
    size_t n = 0;
    for (int32_t j = 0; j < t->n_label_fields; j++) n += strlen(t->label_values[l * t->n_label_fields + j]) + 1;
    char *s = malloc(n + 1), *p = s;
    for (int32_t j = 0; s && j < t->n_label_fields; j++) {
        if (j) *p++ = sep;
        size_t k = strlen(t->label_values[l * t->n_label_fields + j]);
        memcpy(p, t->label_values[l * t->n_label_fields + j], k);
        p += k;
    }
    if (s) *p = '\0';
    return s;
}

int pdi_feat_compare_keys(const void *a, const void *b)
{
    const mem_entry *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* One memory line: the span fields' texts in head order, then the label
 * fields' values, TAB-separated; the values one of the head's labels. */
static pd_status memory_line(pdi_features *f, const pdi_tagger *t, char **tab_labels, char *s, size_t n, size_t line,
                             const char *file, pd_error *err)
{
    int32_t want = t->n_spans + t->n_label_fields, got = 0;
    char *p = s, *end = s + n, *key_end = s;
    for (;;) {
        char *tab = memchr(p, '\t', (size_t)(end - p)), *fe = tab ? tab : end;
        if (++got > want) break;
        if (fe == p || pdi_text_chars(p, (size_t)(fe - p)) < 0)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: field %d is empty, not UTF-8 or holds a control character",
                                 file, line, got);
        if (got == t->n_spans) key_end = fe;
        if (!tab) break;
        p = tab + 1;
    }
    if (got != want)
        return pdi_set_error(err, PD_ERR_FORMAT,
                             "%s:%zu: expected %d TAB-separated fields (the texts of %d span fields, then %d label values)",
                             file, line, want, t->n_spans, t->n_label_fields);
    int32_t label = -1;
    if (t->n_label_fields) {
        size_t k = (size_t)(end - key_end - 1);
        for (int32_t l = 0; label < 0 && l < t->n_labels; l++)
            if (strlen(tab_labels[l]) == k && memcmp(tab_labels[l], key_end + 1, k) == 0) label = l;
        for (char *c = key_end + 1; label < 0 && c < end; c++)
            if (*c == '\t') *c = '/'; /* shown as the memory atom shows labels */
        if (label < 0)
            return pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: label '%.*s' is not one of the head's labels", file, line,
                                 (int)k > 200 ? 200 : (int)k, key_end + 1);
    }
    f->memory[f->n_memory++] = (mem_entry){s, (uint32_t)(key_end - s), label, line};
    return PD_OK;
}

/* The memory file: records a line (blank lines skipped), keys distinct. */
static pd_status load_memory(pdi_features *f, const pd_head *h, const char *name, pd_error *err)
{
    const pdi_tagger *t = h->tagger;
    char *file = pdi_head_path(h, name), *s, **tab_labels = calloc((size_t)t->n_labels + 1, sizeof *tab_labels);
    size_t len = 0, lines = 0, pos = 0, n;
    pd_status rc = file && tab_labels ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", h->source);
    for (int32_t l = 0; !rc && l < t->n_labels; l++)
        if (!(tab_labels[l] = join_label(t, l, '\t'))) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", file);
    if (!rc) rc = pdi_head_text_read(file, &f->memory_data, &len, &lines, err);
    if (!rc && !(f->memory = malloc(sizeof *f->memory * lines)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", file);
    for (size_t line = 1; !rc && pdi_head_text_line(f->memory_data, len, &pos, &s, &n); line++)
        if (n > 0) rc = memory_line(f, t, tab_labels, s, n, line, file, err);
    if (!rc) qsort(f->memory, (size_t)f->n_memory, sizeof *f->memory, pdi_feat_compare_keys);
    for (int32_t i = 1; !rc && i < f->n_memory; i++) {
        const mem_entry *a = &f->memory[i - 1], *b = &f->memory[i];
        if (pdi_feat_compare_keys(a, b) != 0) continue;
        rc = pdi_set_error(err, PD_ERR_FORMAT, "%s:%zu: the key of line %zu seen again (a memory key once)", file,
                           a->line > b->line ? a->line : b->line, a->line < b->line ? a->line : b->line);
    }
    for (int32_t l = 0; tab_labels && l < t->n_labels; l++) free(tab_labels[l]);
    free(tab_labels);
    free(file);
    return rc;
}

pd_status pdi_features_parse(pd_head *h, json_t *root, const char *path, pd_error *err)
{
    static const char *const keys[] = {"hash", "lexicon", "memory", "polarity", "tag", "link", "label"};
    pdi_tagger *t = h->tagger;
    json_t *v = json_object_get(root, "features");
    const char *bad;
    if (!v) return PD_OK;
    if (!json_is_object(v)) return pdi_set_error(err, PD_ERR_FORMAT, "%s: \"features\" must be an object", path);
    if ((bad = unknown_key(v, keys, 7)))
        return pdi_set_error(err, PD_ERR_FORMAT, "%s: features: unknown key '%s'", path, bad);
    pdi_features *f = t->features = calloc(1, sizeof *f);
    if (!f) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    *f = (pdi_features){.n_spans = t->n_spans, .link_from = t->link_from, .link_to = t->link_to};
    pd_status rc = parse_hash(f, json_object_get(v, "hash"), path, err);
    const char *names[3] = {NULL, NULL, NULL}; /* lexicon, memory, polarity */
    for (int i = 0; !rc && i < 3; i++) {
        json_t *file = json_object_get(v, keys[1 + i]);
        names[i] = json_string_value(file);
        if (file && (!names[i] || !*names[i]))
            rc = pdi_set_error(err, PD_ERR_FORMAT, "%s: features.%s must be a file name", path, keys[1 + i]);
    }
    if (!rc && names[0]) rc = pdi_lexicon_load(h, names[0], &f->lexicon, err);
    if (!rc && names[2]) rc = pdi_polarity_load(h, names[2], &f->polarity, err);
    f->has_memory = names[1] != NULL;
    for (int d = 0; !rc && d < D_COUNT; d++) {
        json_t *tb = json_object_get(v, decision_names[d]);
        if (tb) rc = parse_table(f, t, d, tb, path, err);
    }
    if (!rc && t->n_labels && !(f->label_names = calloc((size_t)t->n_labels, sizeof *f->label_names)))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t l = 0; !rc && l < t->n_labels; l++, f->n_labels = l)
        if (!(f->label_names[l] = join_label(t, l, '/'))) rc = pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", path);
    if (!rc && names[1]) rc = load_memory(f, h, names[1], err);
    return rc;
}

/* ------------------------------------------------------ head.safetensors */

pd_status pdi_features_tensors(pd_head *h, const pdi_tensor_store *st, const char *path, pd_error *err)
{
    pdi_features *f = h->tagger->features;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const char *name = st->tensors[i].name;
        if (strncmp(name, "features.", 9) != 0) continue;
        int d = 0;
        while (d < D_COUNT && strcmp(name + 9, decision_names[d]) != 0) d++;
        if (d == D_COUNT || !f || !f->table[d].buckets)
            return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has no declaration (head.json has no %s)", path, name,
                                 name);
    }
    for (int d = 0; f && d < D_COUNT; d++) {
        feat_table *tb = &f->table[d];
        char name[32];
        snprintf(name, sizeof name, "features.%s", decision_names[d]);
        const pdi_tensor *tn = pdi_store_find(st, name);
        if (!tb->buckets) continue;
        if (tn && (tn->n_dims != 2 || tn->shape[0] != tb->buckets || tn->shape[1] != tb->width)) {
            char got[64];
            pdi_tensor_shape_text(tn, got, sizeof got);
            return pdi_set_error(err, PD_ERR_SHAPE, "%s: tensor %s has shape [%s], expected [%d, %d] (%s.buckets x %s)",
                                 path, name, got, tb->buckets, tb->width, name,
                                 d == D_TAG ? "tags" : d == D_LINK ? "1" : "label classes");
        }
        pd_status rc = pdi_head_take_tensor(st, name, tb->buckets, tb->width, false, &tb->w, path, err);
        if (rc) return rc;
    }
    return PD_OK;
}

bool pdi_features_on(const pdi_features *f, pdi_feat_decision d) { return f && f->table[d].buckets > 0; }
