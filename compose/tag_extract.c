/* tag_extract.c - extraction by decisions in one forward pass: a tagger head
 * (heads/: its pass decides the spans, links and labels) bound to a schema
 * (schemas/): each head field to a schema field, the records it decided to
 * schema values in text order, under the schema's rules. */
#include "tag_extract.h"
#include "heads.h"
#include "records.h"

#include <stdlib.h>
#include <string.h>

struct pd_tag_extractor {
    const pd_schema *schema;
    const pdi_tagger *t;
    pdi_tag_runner *runner;
    int32_t span_field[PD_TAGGER_MAX_SPANS]; /* schema field of each head span */
    int32_t *label_field;         /* [n_label_fields] schema field of each label field */
    float floor;                  /* records less sure are dropped: the head's min_confidence, or the pipeline's */
};

void pdi_tag_extractor_set_floor(pd_tag_extractor *tx, float min_confidence)
{
    tx->floor = min_confidence;
}

const pdi_tagger *pdi_tag_extractor_tagger(const pd_tag_extractor *tx) { return tx->t; }

const pdi_tag_runner *pdi_tag_extractor_runner(const pd_tag_extractor *tx) { return tx->runner; }

void pd_tag_extractor_free(pd_tag_extractor *tx)
{
    if (!tx) return;
    pdi_tag_runner_free(tx->runner);
    free(tx->label_field);
    free(tx);
}

/* Every field of the head must be the right kind of schema field. Fields a
 * record leaves `_` are `_` whatever the schema's `empty` says (the head
 * decides, as its trainer did). */
static pd_status bind_fields(pd_tag_extractor *tx, const char *src, pd_error *err)
{
    const pd_schema *sc = tx->schema;
    const pdi_tagger *t = tx->t;
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
        pdi_set_error(err, PD_ERR_ARG, "no model, schema or head to bind for extraction by decisions");
        return NULL;
    }
    pd_tag_extractor *tx = calloc(1, sizeof *tx);
    if (!tx) {
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", head->source);
        return NULL;
    }
    *tx = (pd_tag_extractor){.schema = schema, .t = head->tagger};
    pd_status rc = pdi_tag_runner_new(head, model, &tx->runner, err); /* refuses a head of another type */
    if (!rc) {
        tx->floor = (float)tx->t->min_confidence;
        char *src = pdi_path_join(head->source, "head.json");
        rc = src ? bind_fields(tx, src, err) : pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", head->source);
        free(src);
    }
    if (rc) {
        pd_tag_extractor_free(tx);
        return NULL;
    }
    return tx;
}

/* ------------------------------------------------------------ records */

/* A decided record and where it sorts: the first token of its earliest
 * span, then the order the head decided it in. */
typedef struct keyed {
    const pdi_tag_record *r;
    int32_t key, order;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Byte offset in the text of each token of the read copy (a copy of the
 * text's own tokens), [n_read + 1]. */
static size_t *read_offsets(const pd_tag_extractor *tx, const pd_tag_trace *tr)
{
    const pd_tokenizer *tok = pd_model_tokenizer(pdi_tag_runner_model(tx->runner));
    size_t *at = malloc(sizeof *at * ((size_t)tr->n_read + 1));
    if (!at) return NULL;
    at[0] = 0;
    for (int32_t i = 0; i < tr->n_read; i++) {
        size_t len = 0;
        pd_tokenizer_token_bytes(tok, tr->tokens[tr->read_start + i], &len);
        at[i + 1] = at[i] + len;
    }
    return at;
}

/* The probabilities and offsets of record r, just appended from rec (the
 * label logits' row `row` of the trace). A label field's probability is
 * its value's marginal over the label classes. */
static void describe(const pd_tag_extractor *tx, const pd_tag_trace *tr, const pdi_tag_record *rec, int32_t row,
                     const size_t *at, const char *text, size_t len, pd_record *r)
{
    const pdi_tagger *t = tx->t;
    double confidence = (double)rec->link * rec->label_prob;
    for (int32_t k = 0; k < t->n_spans; k++) {
        const pd_tag_span *sp = rec->span[k] >= 0 ? &tr->spans[rec->span[k]] : NULL;
        if (!sp) continue;
        int32_t f = tx->span_field[k];
        r->prob[f] = (float)sp->probability;
        confidence *= sp->probability;
        pdi_record_place(r, f, text, len, at[sp->first]);
    }
    for (int32_t j = 0; rec->label >= 0 && j < t->n_label_fields; j++) {
        const float *logits = tr->label_logits + (size_t)row * (size_t)tr->n_labels;
        const char *value = t->label_values[(size_t)rec->label * (size_t)t->n_label_fields + (size_t)j];
        double p = 0;
        for (int32_t l = 0; l < t->n_labels; l++)
            if (!strcmp(t->label_values[(size_t)l * (size_t)t->n_label_fields + (size_t)j], value))
                p += pdi_softmax_at(logits, tr->n_labels, l);
        r->prob[tx->label_field[j]] = (float)p;
    }
    r->link = rec->link;
    r->confidence = (float)confidence;
}

/* Each record the pass made, as the trace's candidates (its fate set by
 * make_records). */
static pd_status candidates(const pdi_tagger *t, pd_tag_trace *tr, const pdi_tag_record *recs, int32_t n_recs)
{
    if (!(tr->candidates = calloc((size_t)n_recs + 1, sizeof *tr->candidates))) return PD_ERR_NOMEM;
    tr->n_candidates = n_recs;
    for (int32_t r = 0; r < n_recs; r++) {
        pd_tag_candidate *c = &tr->candidates[r];
        for (int32_t k = 0; k < PD_TAGGER_MAX_SPANS; k++) c->spans[k] = k < t->n_spans ? recs[r].span[k] : -1;
        c->label = recs[r].label;
    }
    return PD_OK;
}

/* The head's records in text order as schema values: the no-record class
 * writes none, the floor (the head's min_confidence unless the pipeline
 * chose another) drops a record below it, and with
 * the schema's distinct_records a repeat of a record written before it is
 * dropped (in that order); each candidate's fate into the trace. */
static pd_status make_records(const pd_tag_extractor *tx, pd_tag_trace *tr, const pdi_tag_record *recs,
                              int32_t n_recs, const char *text, size_t len, pd_extraction *x, pd_error *err)
{
    const pdi_tagger *t = tx->t;
    const pd_schema *sc = tx->schema;
    keyed *order = malloc(sizeof *order * ((size_t)n_recs + 1));
    const char **values = calloc((size_t)pd_schema_n_fields(sc) + 1, sizeof *values);
    size_t *at = n_recs ? read_offsets(tx, tr) : NULL;
    pd_status rc = order && values && (at || !n_recs) && !candidates(t, tr, recs, n_recs)
                       ? PD_OK
                       : pdi_set_error(err, PD_ERR_NOMEM, "out of memory writing records");
    for (int32_t r = 0; !rc && r < n_recs; r++) {
        order[r] = (keyed){&recs[r], INT32_MAX, r};
        for (int32_t k = 0; k < t->n_spans; k++)
            if (recs[r].span[k] >= 0 && tr->spans[recs[r].span[k]].first < order[r].key)
                order[r].key = tr->spans[recs[r].span[k]].first;
    }
    if (!rc) qsort(order, (size_t)n_recs, sizeof *order, by_key);
    for (int32_t r = 0; !rc && r < n_recs; r++) {
        const pdi_tag_record *rec = order[r].r;
        pd_tag_candidate *c = &tr->candidates[order[r].order];
        if (rec->label == t->n_labels) { /* the no-record class */
            c->fate = PD_TAG_NO_RECORD;
            continue;
        }
        memset(values, 0, sizeof *values * (size_t)pd_schema_n_fields(sc));
        for (int32_t k = 0; k < t->n_spans; k++)
            if (rec->span[k] >= 0) values[tx->span_field[k]] = tr->spans[rec->span[k]].text;
        for (int32_t j = 0; rec->label >= 0 && j < t->n_label_fields; j++)
            values[tx->label_field[j]] = t->label_values[(size_t)rec->label * (size_t)t->n_label_fields + (size_t)j];
        if (pdi_extraction_append(x, values)) {
            rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory writing records");
            break;
        }
        describe(tx, tr, rec, order[r].order, at, text, len, &x->records[x->n_records - 1]);
        c->confidence = x->records[x->n_records - 1].confidence;
        c->fate = c->confidence < tx->floor                                           ? PD_TAG_BELOW_FLOOR
                  : pdi_schema_distinct_records(sc) && pdi_extraction_last_repeats(x) ? PD_TAG_REPEAT
                                                                                      : PD_TAG_WRITTEN;
        if (c->fate != PD_TAG_WRITTEN) pdi_extraction_drop_last(x);
    }
    free(order);
    free(values);
    free(at);
    return rc;
}

pd_status pd_tag_extract_trace(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                               pd_extraction **out, pd_tag_trace **trace, pd_error *err)
{
    if (out) *out = NULL;
    if (trace) *trace = NULL;
    if (!ctx || !tx || (!text && len))
        return pdi_set_error(err, PD_ERR_ARG, "no context, extractor or text for extraction by decisions");
    pd_extraction *x = pdi_extraction_new_empty(tx->schema);
    pd_tag_trace *tr = calloc(1, sizeof *tr);
    pdi_tag_record *recs = NULL;
    int32_t n_recs = 0;
    pd_status rc = x && tr ? PD_OK : pdi_set_error(err, PD_ERR_NOMEM, "out of memory extracting by decisions");
    if (!rc) rc = pdi_tag_run(tx->runner, ctx, text, len, trace != NULL, tr, &recs, &n_recs, err);
    if (!rc) rc = make_records(tx, tr, recs, n_recs, text, len, x, err);
    if (x) x->stats.n_prompt_tokens = tr ? tr->n_tokens : 0;
    free(recs);
    if (rc || !out) pd_extraction_free(x);
    else *out = x;
    if (rc || !trace) pd_tag_trace_free(tr);
    else *trace = tr;
    return rc;
}

pd_status pd_tag_extract(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len,
                         pd_extraction **out, pd_error *err)
{
    if (!out) return pdi_set_error(err, PD_ERR_ARG, "no output for extraction by decisions");
    return pd_tag_extract_trace(ctx, tx, text, len, out, NULL, err);
}
