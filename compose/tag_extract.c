/* tag_extract.c - extraction by decisions in one forward pass: a tagger head
 * (heads/) bound to a schema (schemas/). The echo prompt is evaluated once;
 * the head's tags over the read copy give the spans, its link and label
 * scores the records, which the schema's rules then order and filter. A head
 * with sparse features adds their sums, over the read copy's characters, to
 * the emissions, link scores and label logits. */
#include "pocketdec_compose.h"
#include "heads.h"
#include "records.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One part of the prompt template: literal ids, a copy of the text, or the
 * text with the gazetteer's matches between marker tokens. */
typedef enum { PIECE_LITERAL, PIECE_TEXT, PIECE_MARKED } piece_kind;

typedef struct piece {
    int32_t *ids;
    size_t n;
    piece_kind kind;
} piece;

struct pd_tag_extractor {
    const pd_model *model;
    const pd_schema *schema;
    const pd_head *head;
    const pd_tagger *t;
    piece *pieces;
    int32_t n_pieces, read_piece; /* read_piece: the last {text} */
    int32_t span_field[2];        /* schema field of each head span */
    int32_t *label_field;         /* [n_label_fields] schema field of each label field */
    int32_t marks[PD_TAGGER_MAX_SPANS][2]; /* open and close marker ids of each span field (gazetteer) */
};

void pd_tag_extractor_free(pd_tag_extractor *tx)
{
    if (!tx) return;
    for (int32_t i = 0; i < tx->n_pieces; i++) pd_free(tx->pieces[i].ids);
    free(tx->pieces);
    free(tx->label_field);
    free(tx);
}

/* The next {text} or {marked} at or after p (NULL when none); *kind says which. */
static const char *next_slot(const char *p, piece_kind *kind)
{
    const char *text = strstr(p, "{text}"), *marked = strstr(p, "{marked}");
    *kind = marked && (!text || marked < text) ? PIECE_MARKED : PIECE_TEXT;
    return *kind == PIECE_MARKED ? marked : text;
}

/* The template split at each {text} and {marked}; literal parts tokenized
 * with special tokens recognised. */
static pd_status split_prompt(pd_tag_extractor *tx, const char *src, pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(tx->model);
    size_t cap = 1;
    piece_kind kind;
    for (const char *p = tx->t->prompt; (p = next_slot(p, &kind)); p++) cap += 2;
    if (!(tx->pieces = calloc(cap, sizeof *tx->pieces))) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", src);
    for (const char *p = tx->t->prompt;;) {
        const char *at = next_slot(p, &kind);
        size_t len = at ? (size_t)(at - p) : strlen(p);
        if (len > 0) {
            piece *pc = &tx->pieces[tx->n_pieces++];
            pd_status rc = pd_tokenizer_encode(tok, p, len, &pc->ids, &pc->n, err);
            if (rc) {
                pdi_error_prefix(err, "%s: prompt", src);
                return rc;
            }
        }
        if (!at) break;
        if (kind == PIECE_TEXT) tx->read_piece = tx->n_pieces;
        tx->pieces[tx->n_pieces++].kind = kind;
        p = at + (kind == PIECE_TEXT ? strlen("{text}") : strlen("{marked}"));
    }
    return PD_OK;
}

/* Each span field's gazetteer markers must be tokens of the model. */
static pd_status resolve_marks(pd_tag_extractor *tx, const char *src, pd_error *err)
{
    const pd_gazetteer *g = tx->t->gazetteer;
    const pd_tokenizer *tok = pd_model_tokenizer(tx->model);
    int32_t vocab = pd_model_config(tx->model)->vocab;
    for (int32_t k = 0; g && k < tx->t->n_spans; k++)
        for (int32_t c = 0; c < 2; c++) {
            const char *name = pdi_gazetteer_mark(g, k, c);
            tx->marks[k][c] = name ? pd_tokenizer_token_id(tok, name) : -1;
            if (!name) continue;
            if (tx->marks[k][c] < 0 || tx->marks[k][c] >= vocab)
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: gazetteer marker '%s' is not a token of the model", src,
                                     name);
        }
    return PD_OK;
}

/* Every field of the head must be the right kind of schema field. Fields a
 * record leaves `_` are `_` whatever the schema's `empty` says (the head
 * decides, as its trainer did). */
static pd_status bind_fields(pd_tag_extractor *tx, const char *src, pd_error *err)
{
    const pd_schema *sc = tx->schema;
    const pd_tagger *t = tx->t;
    const char *sp = pdi_schema_source(sc);
    for (int32_t k = 0; k < t->n_spans; k++) {
        int32_t f = tx->span_field[k] = pdi_schema_field_index(sc, t->spans[k]);
        if (f < 0 || !pdi_schema_field_is_span(sc, f))
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: span field '%s' is not a span field of %s", src, t->spans[k], sp);
    }
    if (t->n_label_fields && !(tx->label_field = calloc((size_t)t->n_label_fields, sizeof *tx->label_field)))
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", src);
    for (int32_t j = 0; j < t->n_label_fields; j++) {
        int32_t f = tx->label_field[j] = pdi_schema_field_index(sc, t->label_fields[j]);
        if (f < 0 || !pdi_schema_field_is_enum(sc, f))
            return pdi_set_error(err, PD_ERR_FORMAT, "%s: label field '%s' is not an enum field of %s", src,
                                 t->label_fields[j], sp);
        for (int32_t l = 0; l < t->n_labels; l++) {
            const char *v = t->label_values[(size_t)l * (size_t)t->n_label_fields + (size_t)j];
            if (!pdi_schema_enum_has(sc, f, v))
                return pdi_set_error(err, PD_ERR_FORMAT, "%s: labels[%d]: '%s' is not a value of field '%s' in %s", src, l,
                                     v, t->label_fields[j], sp);
        }
    }
    return PD_OK;
}

pd_tag_extractor *pd_tag_extractor_new(const pd_model *model, const pd_schema *schema, const pd_head *head,
                                       pd_error *err)
{
    if (!model || !schema || !head) {
        pdi_set_error(err, PD_ERR_ARG, "pd_tag_extractor_new: no model, schema or head");
        return NULL;
    }
    if (head->type != PD_HEAD_TAGGER || !head->tagger) {
        pdi_set_error(err, PD_ERR_ARG, "%s: not a tagger head (pd_tag_extractor_new needs \"type\": \"tagger\")",
                      head->source);
        return NULL;
    }
    if (head->hidden != pd_model_config(model)->hidden) {
        pdi_set_error(err, PD_ERR_SHAPE, "%s: the head is for hidden size %d, the model has %d", head->source,
                      head->hidden, pd_model_config(model)->hidden);
        return NULL;
    }
    if (!pd_model_tokenizer(model)) {
        pdi_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to build the prompt with", head->source);
        return NULL;
    }
    pd_tag_extractor *tx = calloc(1, sizeof *tx);
    char *src = pdi_path_join(head->source, "head.json");
    pd_status rc = tx && src ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "pd_tag_extractor_new: out of memory");
    if (!rc) {
        *tx = (pd_tag_extractor){.model = model, .schema = schema, .head = head, .t = head->tagger};
        rc = bind_fields(tx, src, err);
    }
    if (!rc) rc = split_prompt(tx, src, err);
    if (!rc) rc = resolve_marks(tx, src, err);
    free(src);
    if (rc) {
        pd_tag_extractor_free(tx);
        return NULL;
    }
    return tx;
}

/* ------------------------------------------------------------ the trace */

void pd_tag_trace_free(pd_tag_trace *tr)
{
    if (!tr) return;
    for (int32_t k = 0; tr->tag_names && k < tr->n_tags; k++) free(tr->tag_names[k]);
    for (int32_t s = 0; tr->spans && s < tr->n_spans; s++) free(tr->spans[s].text);
    for (int32_t l = 0; tr->links && l < tr->n_links; l++) free(tr->links[l].scores);
    free(tr->tag_names);
    free(tr->spans);
    free(tr->links);
    free(tr->tokens);
    free(tr->emissions);
    free(tr->tags);
    free(tr->label_logits);
    free(tr);
}

static pd_status tag_names(const pd_tagger *t, pd_tag_trace *tr)
{
    tr->n_tags = t->n_tags;
    if (!(tr->tag_names = calloc((size_t)t->n_tags, sizeof *tr->tag_names)) || !(tr->tag_names[0] = strdup("O")))
        return PD_ERR_NOMEM;
    for (int32_t k = 0; k < t->n_spans; k++)
        for (int32_t bi = 0; bi < 2; bi++) {
            size_t n = strlen(t->spans[k]) + 3;
            char *s = tr->tag_names[1 + 2 * k + bi] = malloc(n);
            if (!s) return PD_ERR_NOMEM;
            memcpy(s, bi ? "I-" : "B-", 2);
            memcpy(s + 2, t->spans[k], n - 2);
        }
    return PD_OK;
}

/* ----------------------------------------------------------- one pass */

/* The working set of one extraction. */
typedef struct pass {
    const pd_tag_extractor *tx;
    const pd_head *head;
    const pd_tagger *t;
    pd_tag_trace *tr;
    const float **rows;   /* [n_read] hidden states of the read copy */
    char *bytes;          /* the read copy's bytes */
    size_t *offset;       /* [n_read + 1] byte offset of each token in bytes */
    uint8_t *boundary;    /* [n_read] whether the token starts a character */
    const pd_features *features; /* the head's sparse features; NULL without */
    pd_feat_text text;    /* with them: the read copy's characters */
    pd_feat_span *chars;  /* [n_spans] each span's characters */
} pass;

typedef struct rec {
    int32_t span[PD_TAGGER_MAX_SPANS]; /* span index for each head span field, -1 for _ */
    int32_t key, order;   /* first token of its earliest span; creation order */
} rec;

static pd_status nomem(pd_error *err) { return pdi_set_error(err, PD_ERR_NOMEM, "pd_tag_extract: out of memory"); }

/* Append k ids to the growing array *out (*n used, *cap allocated). */
static bool append_ids(int32_t **out, size_t *n, size_t *cap, const int32_t *ids, size_t k)
{
    int32_t *grown = pdi_grow(*out, cap, *n + k, sizeof *grown);
    if (!grown) return false;
    *out = grown;
    if (k) memcpy(*out + *n, ids, sizeof *ids * k);
    *n += k;
    return true;
}

/* Append the plain ids of text[0..len) (nothing when len is 0). */
static pd_status append_plain(const pd_tokenizer *tok, const char *text, size_t len, int32_t **out, size_t *n,
                              size_t *cap, pd_error *err)
{
    int32_t *ids = NULL;
    size_t k = 0;
    pd_status rc = len ? pd_tokenizer_encode_plain(tok, text, len, &ids, &k, err) : PD_OK;
    if (!rc && !append_ids(out, n, cap, ids, k)) rc = nomem(err);
    pd_free(ids);
    return rc;
}

/* The {marked} copy: the text's plain ids, each gazetteer match between the
 * open markers of its fields (in span order) and their close markers (in
 * reverse); the text between matches is encoded piece by piece. */
static pd_status marked_ids(const pd_tag_extractor *tx, const char *text, size_t len, int32_t **out, size_t *n,
                            pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(tx->model);
    pd_gaz_match *m = NULL;
    int32_t n_m = 0;
    size_t cap = 0, at = 0;
    *out = NULL;
    *n = 0;
    pd_status rc = pdi_gazetteer_match(tx->t->gazetteer, ~0u, text, len, &m, &n_m, err);
    for (int32_t i = 0; !rc && i <= n_m; i++) {
        size_t start = i < n_m ? m[i].start : len;
        rc = append_plain(tok, text + at, start - at, out, n, &cap, err);
        if (rc || i == n_m) break;
        int32_t open[PD_TAGGER_MAX_SPANS], close[PD_TAGGER_MAX_SPANS], k_n = 0;
        for (int32_t k = 0; k < tx->t->n_spans; k++)
            if (m[i].fields & (1u << k)) {
                open[k_n] = tx->marks[k][0];
                close[k_n++] = tx->marks[k][1];
            }
        for (int32_t a = 0, b = k_n - 1; a < b; a++, b--) { /* close in reverse */
            int32_t swap = close[a];
            close[a] = close[b];
            close[b] = swap;
        }
        if (!append_ids(out, n, &cap, open, (size_t)k_n)) rc = nomem(err);
        if (!rc) rc = append_plain(tok, text + m[i].start, m[i].end - m[i].start, out, n, &cap, err);
        if (!rc && !append_ids(out, n, &cap, close, (size_t)k_n)) rc = nomem(err);
        at = m[i].end;
    }
    free(m);
    return rc;
}

/* The prompt: template pieces with the text's plain ids at each {text} and
 * its marked ids at each {marked}. */
static pd_status build_prompt(pass *ps, const char *text, size_t len, pd_error *err)
{
    const pd_tag_extractor *tx = ps->tx;
    int32_t *ids = NULL, *marked = NULL;
    size_t n_ids = 0, n_marked = 0, total = 0;
    pd_status rc = pd_tokenizer_encode_plain(pd_model_tokenizer(tx->model), text, len, &ids, &n_ids, err);
    if (!rc && tx->t->gazetteer) rc = marked_ids(tx, text, len, &marked, &n_marked, err);
    const int32_t *src[] = {NULL, ids, marked};
    size_t count[] = {0, n_ids, n_marked};
    for (int32_t i = 0; !rc && i < tx->n_pieces; i++) {
        const piece *pc = &tx->pieces[i];
        total += pc->kind == PIECE_LITERAL ? pc->n : count[pc->kind];
    }
    pd_tag_trace *tr = ps->tr;
    if (!rc && (total > INT32_MAX || !(tr->tokens = malloc(sizeof *tr->tokens * (total ? total : 1))))) rc = nomem(err);
    for (int32_t i = 0; !rc && i < tx->n_pieces; i++) {
        const piece *pc = &tx->pieces[i];
        size_t k = pc->kind == PIECE_LITERAL ? pc->n : count[pc->kind];
        if (i == tx->read_piece) tr->read_start = tr->n_tokens;
        if (k) memcpy(tr->tokens + tr->n_tokens, pc->kind == PIECE_LITERAL ? pc->ids : src[pc->kind], sizeof *ids * k);
        tr->n_tokens += (int32_t)k;
    }
    tr->n_read = (int32_t)n_ids;
    pd_free(ids);
    free(marked);
    return rc;
}

/* Bytes, offsets and character boundaries of the read copy's tokens. */
static pd_status read_bytes(pass *ps, pd_error *err)
{
    const pd_tokenizer *tok = pd_model_tokenizer(ps->tx->model);
    int32_t n = ps->tr->n_read;
    const int32_t *ids = ps->tr->tokens + ps->tr->read_start;
    ps->offset = malloc(sizeof *ps->offset * ((size_t)n + 1));
    ps->boundary = malloc((size_t)n + 1);
    if (!ps->offset || !ps->boundary) return nomem(err);
    ps->offset[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *b = pd_tokenizer_token_bytes(tok, ids[i], &len);
        ps->boundary[i] = !b || len == 0 || ((uint8_t)b[0] & 0xC0) != 0x80;
        ps->offset[i + 1] = ps->offset[i] + (b ? len : 0);
    }
    if (!(ps->bytes = malloc(ps->offset[n] + 1))) return nomem(err);
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *b = pd_tokenizer_token_bytes(tok, ids[i], &len);
        if (b) memcpy(ps->bytes + ps->offset[i], b, len);
    }
    return PD_OK;
}

/* Each run B-f I-f* of the tags is a span of field f. */
static pd_status find_spans(pass *ps, const pd_tag_lattice *lattice, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    if (!(tr->spans = calloc((size_t)tr->n_read, sizeof *tr->spans))) return nomem(err);
    for (int32_t i = 0; i < tr->n_read; i++) {
        int32_t tag = tr->tags[i];
        if (tag == 0 || tag % 2 == 0) continue; /* O, or inside a span */
        int32_t f = (tag - 1) / 2, j = i;
        while (j + 1 < tr->n_read && tr->tags[j + 1] == 2 + 2 * f) j++;
        pd_tag_span *s = &tr->spans[tr->n_spans++];
        s->field = f;
        s->name = ps->t->spans[f];
        s->first = i;
        s->last = j;
        s->probability = exp(pdi_tag_lattice_span_logprob(lattice, f, i, j));
        if (!(s->text = strndup(ps->bytes + ps->offset[i], ps->offset[j + 1] - ps->offset[i]))) return nomem(err);
    }
    return PD_OK;
}

/* Spans of head field f in text order, into idx; their count. */
static int32_t spans_of(const pd_tag_trace *tr, int32_t f, int32_t *idx)
{
    int32_t n = 0;
    for (int32_t s = 0; s < tr->n_spans; s++)
        if (tr->spans[s].field == f) idx[n++] = s;
    return n;
}

/* Records: one per `from` span with its partner, then the unchosen `to`
 * spans (or one per span with a single span field), in creation order. */
static pd_status link_records(pass *ps, rec *recs, int32_t *n_recs, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    const pd_tagger *t = ps->t;
    *n_recs = 0;
    if (t->link_from < 0) {
        for (int32_t s = 0; s < tr->n_spans; s++) recs[(*n_recs)++] = (rec){{s, -1}, tr->spans[s].first, 0};
        return PD_OK;
    }
    int32_t *from = malloc(sizeof *from * (size_t)(2 * tr->n_spans + 1)), *to = from ? from + tr->n_spans : NULL;
    const float **to_rows = malloc(sizeof *to_rows * (size_t)(tr->n_spans + 1));
    bool *chosen = calloc((size_t)tr->n_spans + 1, sizeof *chosen);
    float *work = malloc(sizeof *work * 2 * (size_t)t->link_dim);
    bool sparse_on = pdi_features_on(ps->features, PD_FEAT_LINK);
    pd_feat_span *to_chars = malloc(sizeof *to_chars * (size_t)(tr->n_spans + 1));
    double *sparse = malloc(sizeof *sparse * (size_t)(tr->n_spans + 1));
    pd_status rc = from && to_rows && chosen && work && to_chars && sparse ? PD_OK : nomem(err);
    int32_t n_from = rc ? 0 : spans_of(tr, t->link_from, from), n_to = rc ? 0 : spans_of(tr, t->link_to, to);
    if (!rc && n_from && !(tr->links = calloc((size_t)n_from, sizeof *tr->links))) rc = nomem(err);
    for (int32_t a = 0; !rc && a < n_to; a++) {
        to_rows[a] = ps->rows[tr->spans[to[a]].last];
        if (sparse_on) to_chars[a] = ps->chars[to[a]];
    }
    for (int32_t o = 0; !rc && o < n_from; o++) {
        pd_tag_link *l = &tr->links[tr->n_links++];
        l->from = from[o];
        l->n_scores = n_to + 1;
        if (!(l->scores = malloc(sizeof *l->scores * (size_t)(n_to + 1)))) {
            rc = nomem(err);
            break;
        }
        if (sparse_on) {
            memset(sparse, 0, sizeof *sparse * (size_t)(n_to + 1));
            pdi_features_link(&ps->text, ps->chars[from[o]], to_chars, n_to, sparse);
        }
        pdi_tagger_link_scores(ps->head, ps->rows[tr->spans[from[o]].last], to_rows, n_to, sparse_on ? sparse : NULL,
                               work, l->scores);
        int32_t best = pdi_argmax(l->scores, n_to + 1);
        l->choice = best < n_to ? to[best] : -1;
        if (best < n_to) chosen[best] = true;
        rec r = {{-1, -1}, 0, 0};
        r.span[t->link_from] = from[o];
        r.span[t->link_to] = l->choice;
        recs[(*n_recs)++] = r;
    }
    for (int32_t a = 0; !rc && a < n_to; a++) {
        if (chosen[a]) continue;
        rec r = {{-1, -1}, 0, 0};
        r.span[t->link_to] = to[a];
        recs[(*n_recs)++] = r;
    }
    free(from);
    free(to_rows);
    free(chosen);
    free(work);
    free(to_chars);
    free(sparse);
    return rc;
}

static int by_key(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Labels of each record, then the records in text order as schema values. */
static pd_status make_records(pass *ps, rec *recs, int32_t n_recs, pd_extraction *x, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    const pd_tagger *t = ps->t;
    const pd_schema *sc = ps->tx->schema;
    int32_t *label = calloc((size_t)n_recs + 1, sizeof *label);
    const char **values = calloc((size_t)pd_schema_n_fields(sc) + 1, sizeof *values);
    int32_t classes = t->n_labels + t->no_record; /* the no-record class last */
    bool sparse_on = pdi_features_on(ps->features, PD_FEAT_LABEL);
    double *sparse = malloc(sizeof *sparse * ((size_t)classes + 1));
    if (!label || !values || !sparse ||
        (classes && !(tr->label_logits = malloc(sizeof(float) * (size_t)classes * ((size_t)n_recs + 1))))) {
        free(label);
        free(values);
        free(sparse);
        return nomem(err);
    }
    tr->n_labels = classes;
    tr->no_record = t->no_record;
    for (int32_t r = 0; r < n_recs; r++) {
        recs[r].order = r;
        recs[r].key = INT32_MAX;
        const float *xs[PD_TAGGER_MAX_SPANS * PD_SPAN_N_STATES] = {NULL};
        pd_feat_span chars[PD_TAGGER_MAX_SPANS];
        for (int32_t k = 0; k < t->n_spans; k++) {
            int32_t s = recs[r].span[k];
            chars[k] = s >= 0 && sparse_on ? ps->chars[s] : (pd_feat_span){-1, -1};
            if (s < 0) continue;
            for (int32_t j = 0; j < t->n_label_states; j++)
                xs[k * t->n_label_states + j] =
                    ps->rows[t->label_states[j] == PD_SPAN_FIRST ? tr->spans[s].first : tr->spans[s].last];
            if (tr->spans[s].first < recs[r].key) recs[r].key = tr->spans[s].first;
        }
        if (!classes) continue;
        float *logits = tr->label_logits + (size_t)r * (size_t)classes;
        if (sparse_on) {
            memset(sparse, 0, sizeof *sparse * (size_t)classes);
            pdi_features_label(&ps->text, chars, sparse);
        }
        pdi_tagger_label_logits(ps->head, xs, sparse_on ? sparse : NULL, logits);
        label[r] = pdi_argmax(logits, classes);
        tr->n_label_rows++;
    }
    qsort(recs, (size_t)n_recs, sizeof *recs, by_key); /* stable: order breaks ties */
    pd_status rc = PD_OK;
    for (int32_t r = 0; !rc && r < n_recs; r++) {
        if (classes && label[recs[r].order] == t->n_labels) continue; /* no record */
        memset(values, 0, sizeof *values * (size_t)pd_schema_n_fields(sc));
        for (int32_t k = 0; k < t->n_spans; k++)
            if (recs[r].span[k] >= 0) values[ps->tx->span_field[k]] = tr->spans[recs[r].span[k]].text;
        for (int32_t j = 0; j < t->n_label_fields; j++)
            values[ps->tx->label_field[j]] = t->label_values[(size_t)label[recs[r].order] * (size_t)t->n_label_fields + (size_t)j];
        if (pdi_extraction_append(x, values)) rc = nomem(err);
    }
    if (!rc && pdi_schema_distinct_records(sc)) pdi_extraction_drop_repeats(x);
    free(label);
    free(values);
    free(sparse);
    return rc;
}

/* The character at byte b of the read copy (the next one when b falls
 * inside one, which the tag constraints rule out at span ends). */
static int32_t char_at(const pd_feat_text *x, size_t b)
{
    int32_t c;
    while ((c = pdi_feat_text_char(x, b)) < 0 && b < x->len) b++;
    return c < 0 ? x->n : c;
}

/* The emissions, with the sparse features' sums of the tokens that start a
 * character (the others have no features). */
static pd_status emissions(pass *ps, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    int32_t n = tr->n_read, T = ps->t->n_tags;
    double *sparse = NULL;
    if (ps->features) {
        pd_status rc = pdi_feat_text_init(&ps->text, ps->features, ps->bytes, ps->offset[n], err);
        if (rc) return rc;
    }
    if (pdi_features_on(ps->features, PD_FEAT_TAG)) {
        if (!(sparse = calloc((size_t)n * (size_t)T, sizeof *sparse))) return nomem(err);
        for (int32_t i = 0; i < n; i++) {
            int32_t c = pdi_feat_text_char(&ps->text, ps->offset[i]);
            if (ps->offset[i + 1] > ps->offset[i] && c >= 0 && c < ps->text.n)
                pdi_features_tag(&ps->text, c, sparse + (size_t)i * (size_t)T);
        }
    }
    pdi_tagger_emissions(ps->head, ps->rows, n, sparse, tr->emissions);
    free(sparse);
    return PD_OK;
}

/* With sparse features: each span's characters, those its tokens' bytes cover. */
static pd_status span_chars(pass *ps, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    if (!ps->features) return PD_OK;
    if (!(ps->chars = malloc(sizeof *ps->chars * ((size_t)tr->n_spans + 1)))) return nomem(err);
    for (int32_t s = 0; s < tr->n_spans; s++)
        ps->chars[s] = (pd_feat_span){char_at(&ps->text, ps->offset[tr->spans[s].first]),
                                      char_at(&ps->text, ps->offset[tr->spans[s].last + 1])};
    return PD_OK;
}

/* Evaluate the prompt once and decide everything from its hidden states. */
static pd_status run(pass *ps, pd_context *ctx, pd_extraction *x, pd_error *err)
{
    pd_tag_trace *tr = ps->tr;
    int32_t n = tr->n_read;
    int32_t *outputs = malloc(sizeof *outputs * (size_t)n);
    ps->rows = malloc(sizeof *ps->rows * (size_t)n);
    if (!outputs || !ps->rows) {
        free(outputs);
        return nomem(err);
    }
    for (int32_t i = 0; i < n; i++) outputs[i] = tr->read_start + i;
    pd_batch b = {tr->tokens, tr->n_tokens, NULL, NULL, outputs, n, 0};
    pd_status rc = pd_context_kv_truncate(ctx, 0, err);
    if (!rc) rc = pd_eval(ctx, &b, err);
    free(outputs);
    if (rc) return rc;
    tr->forward_passes = 1;
    for (int32_t i = 0; i < n; i++) ps->rows[i] = pd_context_hidden(ctx, i);
    if (!(tr->emissions = malloc(sizeof *tr->emissions * (size_t)n * (size_t)ps->t->n_tags)) ||
        !(tr->tags = malloc(sizeof *tr->tags * (size_t)n)))
        return nomem(err);
    if ((rc = read_bytes(ps, err)) || (rc = emissions(ps, err))) return rc;
    pd_tag_lattice lattice;
    rc = pdi_tag_lattice_init(&lattice, ps->t, tr->emissions, ps->boundary, n, err);
    if (!rc)
        rc = ps->t->posterior_spans ? pdi_tag_lattice_posterior_tags(&lattice, ps->t->span_threshold, tr->tags, err)
                                    : pdi_tagger_viterbi(ps->t, tr->emissions, ps->boundary, n, tr->tags, err);
    if (!rc) rc = find_spans(ps, &lattice, err);
    pdi_tag_lattice_free(&lattice);
    if (!rc) rc = span_chars(ps, err);
    if (rc) return rc;
    rec *recs = malloc(sizeof *recs * ((size_t)tr->n_spans + 1));
    int32_t n_recs = 0;
    if (!recs) return nomem(err);
    if (!(rc = link_records(ps, recs, &n_recs, err))) rc = make_records(ps, recs, n_recs, x, err);
    free(recs);
    return rc;
}

pd_status pd_tag_extract_trace(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                               pd_extraction **out, pd_tag_trace **trace, pd_error *err)
{
    if (out) *out = NULL;
    if (trace) *trace = NULL;
    if (!ctx || !tx || (!text && len)) return pdi_set_error(err, PD_ERR_ARG, "pd_tag_extract: NULL argument");
    pass ps = {.tx = tx, .head = tx->head, .t = tx->t, .features = tx->t->features};
    pd_extraction *x = pdi_extraction_new_empty(tx->schema);
    ps.tr = calloc(1, sizeof *ps.tr);
    pd_status rc = x && ps.tr ? PD_OK : nomem(err);
    if (!rc && trace && tag_names(tx->t, ps.tr)) rc = nomem(err); /* only a kept trace shows them */
    if (!rc && len > 0) { /* an empty text: no records, no model call */
        rc = build_prompt(&ps, text, len, err);
        if (!rc && ps.tr->n_tokens > pd_context_n_ctx(ctx))
            rc = pdi_set_error(err, PD_ERR_CONTEXT, "%s: the prompt for a text of %zu bytes has %d tokens, the context %d",
                               tx->head->source, len, ps.tr->n_tokens, pd_context_n_ctx(ctx));
        if (!rc) rc = run(&ps, ctx, x, err);
        x->n_prompt_tokens = ps.tr->n_tokens;
    }
    free(ps.rows);
    free(ps.bytes);
    free(ps.offset);
    free(ps.boundary);
    free(ps.chars);
    pdi_feat_text_free(&ps.text);
    if (rc || !out) pd_extraction_free(x);
    else *out = x;
    if (rc || !trace) pd_tag_trace_free(ps.tr);
    else *trace = ps.tr;
    return rc;
}

pd_status pd_tag_extract(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                         pd_extraction **out, pd_error *err)
{
    if (!out) return pdi_set_error(err, PD_ERR_ARG, "pd_tag_extract: NULL argument");
    return pd_tag_extract_trace(ctx, tx, text, len, out, NULL, err);
}
