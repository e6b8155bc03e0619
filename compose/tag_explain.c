/* tag_explain.c - why a tagger pass decided what it did, as one JSON document
 * (pd_tag_explain; the shape in docs/extraction-by-decisions.md, "Why it
 * decided so"): the text's characters with their tag marginals, the spans,
 * each link with its runner-up, each record's likeliest labels, and the
 * sparse features that weighed most in each decision beside the trunk's
 * share. `pocketdec tag --html` and the playground draw this one shape. */
#include "heads.h"
#include "records.h"
#include "tag_extract.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOP_LABELS 3

/* The pass and what explaining it needs. */
typedef struct explain {
    const pdi_tagger *t;
    const pd_tag_trace *tr;
    const char *text;
    size_t len;
    size_t *at;         /* [n_read + 1] byte offset in the text of each read-copy token */
    int32_t *char_of;   /* [len + 1] the character at each byte offset (of the character it is inside) */
    const pdi_why *why; /* [spans, links, label rows] */
} explain;

/* json_object_set_new for a list of pairs; false when out of memory. */
static bool set(json_t *o, const char *k, json_t *v) { return v && !json_object_set_new(o, k, v); }

static json_t *pair(json_int_t a, json_int_t b) { return json_pack("[II]", a, b); }

/* {score, trunk, sparse, trunk_share, n_features, features: [{name, weight}]}:
 * score = trunk (the dense part) + sparse (the features' sum). */
static json_t *why_json(const pdi_why *w, double score)
{
    json_t *o = json_object(), *fs = json_array();
    double trunk = score - w->sparse, mass = fabs(trunk) + fabs(w->sparse);
    bool ok = o && fs && set(o, "score", json_real(score)) && set(o, "trunk", json_real(trunk)) &&
              set(o, "sparse", json_real(w->sparse)) &&
              set(o, "trunk_share", json_real(mass > 0 ? fabs(trunk) / mass : 1.0)) &&
              set(o, "sparse_on", json_boolean(w->on)) && set(o, "n_features", json_integer(w->n_features));
    for (int32_t k = 0; ok && k < w->n_top; k++) { /* a name cut at its room may end inside a character: not shown */
        const char *name = w->top[k].name;
        size_t n = pdi_utf8_check(name, strlen(name));
        ok = !json_array_append_new(fs, json_pack("{s:s%,s:f}", "name", name, n, "weight", w->top[k].weight));
    }
    if (ok && set(o, "features", fs)) return o;
    json_decref(o);
    json_decref(ok ? NULL : fs);
    return NULL;
}

/* Character offsets of byte range [a, b). */
static json_t *char_range(const explain *e, size_t a, size_t b) { return pair(e->char_of[a], e->char_of[b]); }

/* Each character: its bytes, its token's tag, and per span field the
 * probability that it lies inside a span of that field (B or I), with O's. */
static json_t *characters(const explain *e)
{
    const pd_tag_trace *tr = e->tr;
    json_t *a = json_array();
    int32_t tok = 0;
    for (size_t b = 0; a && b < e->len;) {
        uint32_t cp;
        size_t n = pdi_utf8_char((const uint8_t *)e->text + b, e->len - b, &cp);
        while (tok + 1 < tr->n_read && e->at[tok + 1] <= b) tok++; /* the token holding its first byte */
        const float *m = tr->n_read ? tr->tag_marginals + (size_t)tok * (size_t)tr->n_tags : NULL;
        json_t *c = json_object(), *in = json_object();
        bool ok = c && in && set(c, "text", json_stringn(e->text + b, n)) && set(c, "bytes", pair((json_int_t)b, (json_int_t)(b + n))) &&
                  set(c, "tag", json_string(m ? tr->tag_names[tr->tags[tok]] : "O")) &&
                  set(c, "outside", json_real(m ? m[0] : 1.0));
        for (int32_t f = 0; ok && f < e->t->n_spans; f++)
            ok = set(in, e->t->spans[f], json_real(m ? (double)m[1 + 2 * f] + (double)m[2 + 2 * f] : 0.0));
        if (!ok || !set(c, "inside", in) || json_array_append_new(a, c)) {
            json_decref(ok ? NULL : in);
            json_decref(c);
            json_decref(a);
            return NULL;
        }
        b += n;
    }
    return a;
}

/* The emission margin of span s's tags over O, on the tokens that start a
 * character (the others follow their character's first token). */
static double span_score(const explain *e, const pd_tag_span *s)
{
    const pd_tag_trace *tr = e->tr;
    double score = 0;
    for (int32_t i = s->first; i <= s->last; i++) {
        const float *em = tr->emissions + (size_t)i * (size_t)tr->n_tags;
        if (e->at[i + 1] > e->at[i] && !pdi_utf8_is_continuation((uint8_t)e->text[e->at[i]]))
            score += (double)em[tr->tags[i]] - (double)em[0];
    }
    return score;
}

static json_t *spans(const explain *e)
{
    json_t *a = json_array();
    for (int32_t s = 0; a && s < e->tr->n_spans; s++) {
        const pd_tag_span *sp = &e->tr->spans[s];
        size_t b0 = e->at[sp->first], b1 = e->at[sp->last + 1];
        json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:[ii],s:f,s:o}", "field", sp->name, "text", sp->text, "chars",
                              char_range(e, b0, b1), "bytes", pair((json_int_t)b0, (json_int_t)b1), "tokens", sp->first,
                              sp->last, "probability", sp->probability, "why", why_json(&e->why[s], span_score(e, sp)));
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* One link: every candidate (the `to` spans in text order, then none) with
 * its softmax probability; the choice and the runner-up. */
static json_t *link_json(const explain *e, int32_t l)
{
    const pd_tag_link *ln = &e->tr->links[l];
    int32_t n = ln->n_scores, best = pdi_argmax(ln->scores, n), second = -1, k = 0;
    int32_t *to = malloc(sizeof *to * (size_t)n);
    json_t *cands = json_array();
    for (int32_t s = 0; to && s < e->tr->n_spans; s++)
        if (e->tr->spans[s].field == e->t->link_to) to[k++] = s;
    if (to) to[n - 1] = -1; /* none */
    for (int32_t a = 0; a < n; a++)
        if (a != best && (second < 0 || ln->scores[a] > ln->scores[second])) second = a;
    for (int32_t a = 0; to && cands && a < n; a++)
        if (json_array_append_new(cands, json_pack("{s:i,s:f,s:f}", "to", to[a], "score", (double)ln->scores[a],
                                                   "probability", pdi_softmax_at(ln->scores, n, a)))) {
            json_decref(cands);
            cands = NULL;
        }
    json_t *runner = !to ? NULL
                     : second < 0
                         ? json_null()
                         : json_pack("{s:i,s:f}", "to", to[second], "probability", pdi_softmax_at(ln->scores, n, second));
    json_t *o = to && cands && runner
                    ? json_pack("{s:i,s:i,s:f,s:o,s:o,s:o}", "from", ln->from, "choice", ln->choice, "probability",
                                pdi_softmax_at(ln->scores, n, best), "runner_up", runner, "candidates", cands, "why",
                                why_json(&e->why[e->tr->n_spans + l], (double)ln->scores[best]))
                    : NULL;
    if (!o) {
        json_decref(cands);
        json_decref(runner);
    }
    free(to);
    return o;
}

static json_t *links(const explain *e)
{
    json_t *a = json_array();
    for (int32_t l = 0; a && l < e->tr->n_links; l++)
        if (json_array_append_new(a, link_json(e, l))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Label class c's value of label field j. */
static const char *label_value(const pdi_tagger *t, int32_t c, int32_t j)
{
    return t->label_values[(size_t)c * (size_t)t->n_label_fields + (size_t)j];
}

/* The TOP_LABELS likeliest entries of p[0..n) (ties: the lower index), into idx; their count. */
static int32_t top_of(const double *p, int32_t n, int32_t *idx)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t j = k < TOP_LABELS ? k++ : TOP_LABELS;
        if (j == TOP_LABELS && p[i] <= p[idx[TOP_LABELS - 1]]) continue;
        if (j == TOP_LABELS) j--;
        while (j > 0 && p[i] > p[idx[j - 1]]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return k;
}

/* A record's label classes into rec: the likeliest joint classes ("top"),
 * and per label field its likeliest values (each a marginal over the classes). */
static bool labels_json(const explain *e, int32_t r, json_t *rec)
{
    const pdi_tagger *t = e->t;
    const float *logits = e->tr->label_logits + (size_t)r * (size_t)e->tr->n_labels;
    int32_t n = e->tr->n_labels, idx[TOP_LABELS], k;
    json_t *top = json_array(), *fields = json_object(); /* owned by rec from here */
    double *p = malloc(sizeof *p * ((size_t)n + (size_t)t->n_labels));
    bool ok = set(rec, "top", top) && set(rec, "labels", fields) && p;
    for (int32_t c = 0; ok && c < n; c++) p[c] = pdi_softmax_at(logits, n, c);
    ok = ok && set(rec, "no_record", json_real(e->tr->no_record ? p[n - 1] : 0.0));
    k = ok ? top_of(p, n, idx) : 0;
    for (int32_t i = 0; ok && i < k; i++) {
        json_t *values = idx[i] < t->n_labels ? json_object() : json_null(); /* null: the no-record class */
        ok = values && !json_array_append_new(top, json_pack("{s:o,s:f}", "values", values, "probability", p[idx[i]]));
        for (int32_t j = 0; ok && idx[i] < t->n_labels && j < t->n_label_fields; j++)
            ok = set(values, t->label_fields[j], json_string(label_value(t, idx[i], j)));
    }
    for (int32_t j = 0; ok && j < t->n_label_fields; j++) {
        double *v = p + n; /* each value's marginal at its first class, -1 at the others */
        for (int32_t c = 0; c < t->n_labels; c++) {
            int32_t first = 0;
            while (strcmp(label_value(t, first, j), label_value(t, c, j))) first++;
            v[c] = first == c ? p[c] : -1;
            if (first < c) v[first] += p[c];
        }
        json_t *vals = json_array();
        ok = set(fields, t->label_fields[j], vals);
        k = top_of(v, t->n_labels, idx);
        for (int32_t i = 0; ok && i < k; i++)
            ok = !json_array_append_new(
                vals, json_pack("{s:s,s:f}", "value", label_value(t, idx[i], j), "probability", v[idx[i]]));
    }
    free(p);
    return ok;
}

/* The candidates (every record the pass made, the label rows' order). */
static json_t *records(const explain *e)
{
    const pd_tag_trace *tr = e->tr;
    const pdi_tagger *t = e->t;
    json_t *a = json_array();
    for (int32_t r = 0; a && r < tr->n_candidates; r++) {
        const pd_tag_candidate *c = &tr->candidates[r];
        json_t *values = json_object();
        for (int32_t k = 0; values && k < t->n_spans; k++)
            if (!set(values, t->spans[k], json_string(c->spans[k] >= 0 ? tr->spans[c->spans[k]].text : "_"))) {
                json_decref(values);
                values = NULL;
            }
        for (int32_t j = 0; values && c->label >= 0 && c->label < t->n_labels && j < t->n_label_fields; j++)
            set(values, t->label_fields[j], json_string(label_value(t, c->label, j)));
        json_t *o = values ? json_pack("{s:[ii],s:o,s:s,s:f}", "spans", c->spans[0], c->spans[1], "values", values, "fate",
                                       pd_tag_fate_name(c->fate), "confidence", (double)c->confidence)
                           : NULL;
        bool ok = o && (!tr->n_labels || labels_json(e, r, o));
        if (ok && tr->n_labels) {
            const float *logits = tr->label_logits + (size_t)r * (size_t)tr->n_labels;
            ok = set(o, "why", why_json(&e->why[tr->n_spans + tr->n_links + r], (double)logits[pdi_argmax(logits, tr->n_labels)]));
        }
        if (!ok || json_array_append_new(a, o)) {
            json_decref(ok ? NULL : o);
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Names a into an array of strings; NULL when out of memory. */
static json_t *strings(const char *const *a, int32_t n)
{
    json_t *o = json_array();
    for (int32_t i = 0; o && i < n; i++)
        if (json_array_append_new(o, json_string(a[i]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* The document's top level; NULL when out of memory. */
static json_t *document(const explain *e)
{
    const pdi_tagger *t = e->t;
    json_t *o = json_object();
    bool ok = o && set(o, "version", json_integer(1)) && set(o, "text", json_stringn(e->text, e->len)) &&
              set(o, "span_fields", strings((const char *const *)t->spans, t->n_spans)) &&
              set(o, "label_fields", strings((const char *const *)t->label_fields, t->n_label_fields)) &&
              set(o, "tags", strings((const char *const *)e->tr->tag_names, e->tr->n_tags)) &&
              set(o, "link", t->link_from >= 0 ? json_pack("{s:s,s:s}", "from", t->spans[t->link_from], "to",
                                                           t->spans[t->link_to])
                                               : json_null()) &&
              set(o, "characters", characters(e)) && set(o, "spans", spans(e)) && set(o, "links", links(e)) &&
              set(o, "records", records(e)) && set(o, "forward_passes", json_integer(e->tr->forward_passes));
    if (ok) return o;
    json_decref(o);
    return NULL;
}

pd_status pd_tag_explain(pd_context *ctx, const pd_tag_extractor *tx, const char *text, size_t len, char **json,
                         size_t *json_len, pd_error *err)
{
    if (json) *json = NULL;
    if (json_len) *json_len = 0;
    if (!ctx || !tx || !json || (!text && len))
        return pdi_set_error(err, PD_ERR_ARG, "no context, extractor, text or output to explain a tagger pass");
    size_t bad = pdi_utf8_check(text, len);
    if (bad < len) return pdi_set_error(err, PD_ERR_FORMAT, "the text is not UTF-8 (byte %zu of %zu)", bad, len);
    pd_tag_trace *tr = NULL;
    pd_status rc = pd_tag_extract_trace(ctx, tx, text, len, NULL, &tr, err);
    explain e = {.t = pdi_tag_extractor_tagger(tx), .tr = tr, .text = text ? text : "", .len = len};
    pdi_why *why = NULL;
    if (!rc) rc = pdi_tag_why(pdi_tag_extractor_runner(tx), tr, &why, err);
    e.why = why;
    e.at = rc ? NULL : malloc(sizeof *e.at * ((size_t)tr->n_read + 1));
    e.char_of = rc ? NULL : malloc(sizeof *e.char_of * (len + 1));
    if (!rc && (!e.at || !e.char_of)) rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory explaining a tagger pass");
    if (!rc) {
        const pd_tokenizer *tok = pd_model_tokenizer(pdi_tag_runner_model(pdi_tag_extractor_runner(tx)));
        e.at[0] = 0;
        for (int32_t i = 0; i < tr->n_read; i++) {
            size_t n = 0;
            pd_tokenizer_token_bytes(tok, tr->tokens[tr->read_start + i], &n);
            e.at[i + 1] = e.at[i] + n;
        }
        int32_t c = -1;
        for (size_t b = 0; b <= len; b++) e.char_of[b] = c += b == len || !pdi_utf8_is_continuation((uint8_t)text[b]);
        if (tr->n_read && e.at[tr->n_read] != len)
            rc = pdi_set_error(err, PD_ERR_INTERNAL, "the read copy holds %zu bytes, the text %zu", e.at[tr->n_read], len);
    }
    json_t *doc = rc ? NULL : document(&e);
    if (!rc && !doc) rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory explaining a tagger pass");
    if (!rc && !(*json = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))))
        rc = pdi_set_error(err, PD_ERR_NOMEM, "out of memory writing a tagger pass's explanation");
    if (!rc && json_len) *json_len = strlen(*json);
    json_decref(doc);
    free(why);
    free(e.at);
    free(e.char_of);
    pd_tag_trace_free(tr);
    return rc;
}
