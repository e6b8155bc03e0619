/* Tagger heads (extraction by decisions) against the float64 reference of
 * tools/testmodels/make_head.py: emissions, link scores and label logits
 * within 2e-5 of the largest |value| of each; tokens, tags, spans, link
 * choices and records exactly. Then every broken head with its status and a
 * message naming the file, the plain tokenization of the text, empty texts,
 * the context limit and the refusals between heads and deciders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pocketdec.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 2e-5 /* of the largest |value| of the compared array */

static json_t *g_doc;
static pd_model *g_model;
static pd_schema *g_schema;

static const char *jstr(json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

static pd_head *load_head(const char *dir)
{
    pd_error err;
    pd_head *h = pd_head_load(dir, g_model, &err);
    if (!h) fail_msg("%s", err.message);
    return h;
}

/* got[0..n) against the JSON array want, within TOL of its largest |value|. */
static void check_close(const char *what, const char *name, const float *got, json_t *want, size_t n)
{
    assert_int_equal(json_array_size(want), n);
    double scale = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(json_number_value(json_array_get(want, i))));
    for (size_t i = 0; i < n; i++) {
        double w = json_number_value(json_array_get(want, i));
        if (fabs((double)got[i] - w) > TOL * fmax(scale, 1e-30))
            fail_msg("%s: %s[%zu] = %.9g, the reference %.9g (scale %.3g)", name, what, i, (double)got[i], w, scale);
    }
}

static void check_probability(const char *name, int32_t r, const char *what, double got, double want)
{
    /* probabilities: within TOL of 1, the largest they can be */
    if (!(fabs(got - want) <= TOL))
        fail_msg("%s: record %d: %s is %.9g, the reference %.9g", name, r, what, got, want);
}

/* Each record's offsets (exactly) and probabilities against the reference's. */
static void check_record_meta(const char *name, json_t *meta, const pd_extraction *x)
{
    assert_int_equal(x->n_records, json_array_size(meta));
    for (int32_t r = 0; r < x->n_records; r++) {
        const pd_record *rec = &x->records[r];
        json_t *m = json_array_get(meta, r), *spans = json_object_get(m, "spans"), *probs = json_object_get(m, "probs");
        for (int32_t f = 0; f < x->n_fields; f++) {
            const char *field = pd_schema_field_name(g_schema, f);
            json_t *at = json_object_get(spans, field);
            assert_int_equal(rec->start[f], at ? json_integer_value(json_array_get(at, 0)) : -1);
            assert_int_equal(rec->end[f], at ? json_integer_value(json_array_get(at, 1)) : -1);
            check_probability(name, r, field, rec->prob[f], json_number_value(json_object_get(probs, field)));
        }
        check_probability(name, r, "link", rec->link, json_number_value(json_object_get(m, "link")));
        check_probability(name, r, "confidence", rec->confidence, json_number_value(json_object_get(m, "confidence")));
    }
}

/* Every record the pass made, with its spans, label, confidence and fate,
 * as the reference made and judged it. */
static void check_candidates(const char *name, json_t *want, const pd_tag_trace *tr)
{
    assert_int_equal(tr->n_candidates, json_array_size(want));
    for (int32_t r = 0; r < tr->n_candidates; r++) {
        const pd_tag_candidate *c = &tr->candidates[r];
        json_t *w = json_array_get(want, r);
        for (int32_t k = 0; k < 2; k++)
            assert_int_equal(c->spans[k], json_integer_value(json_array_get(json_object_get(w, "spans"), (size_t)k)));
        assert_int_equal(c->label, json_integer_value(json_object_get(w, "label")));
        check_probability(name, r, "candidate confidence", c->confidence, json_number_value(json_object_get(w, "confidence")));
        if (strcmp(pd_tag_fate_name(c->fate), jstr(w, "fate")))
            fail_msg("%s: candidate %d is %s, the reference's %s", name, r, pd_tag_fate_name(c->fate), jstr(w, "fate"));
    }
}

static void check_trace(json_t *c, const pd_tag_trace *tr, const pd_extraction *x)
{
    const char *name = jstr(c, "name");
    json_t *ids = json_object_get(c, "ids"), *em = json_object_get(c, "emissions");
    assert_int_equal(tr->n_tokens, json_array_size(ids));
    for (int32_t i = 0; i < tr->n_tokens; i++) assert_int_equal(tr->tokens[i], json_integer_value(json_array_get(ids, i)));
    assert_int_equal(tr->read_start, json_integer_value(json_object_get(c, "read_start")));
    assert_int_equal(tr->n_read, json_array_size(em));
    assert_int_equal(tr->forward_passes, 1);
    /* emissions as one array: the tolerance is of the largest over the whole pass */
    json_t *flat = json_array();
    for (int32_t i = 0; i < tr->n_read; i++) json_array_extend(flat, json_array_get(em, i));
    check_close("emissions", name, tr->emissions, flat, (size_t)tr->n_read * (size_t)tr->n_tags);
    json_decref(flat);
    json_t *tags = json_object_get(c, "tags"), *names = json_object_get(c, "tag_names");
    for (int32_t k = 0; k < tr->n_tags; k++) assert_string_equal(tr->tag_names[k], json_string_value(json_array_get(names, k)));
    for (int32_t i = 0; i < tr->n_read; i++)
        if (tr->tags[i] != json_integer_value(json_array_get(tags, i)))
            fail_msg("%s: tag %d is %d, the reference's %d", name, i, tr->tags[i], (int)json_integer_value(json_array_get(tags, i)));
    json_t *spans = json_object_get(c, "spans");
    assert_int_equal(tr->n_spans, json_array_size(spans));
    for (int32_t s = 0; s < tr->n_spans; s++) {
        json_t *w = json_array_get(spans, s);
        assert_string_equal(tr->spans[s].name, jstr(w, "field"));
        assert_string_equal(tr->spans[s].text, jstr(w, "text"));
        assert_int_equal(tr->spans[s].first, json_integer_value(json_object_get(w, "first")));
        assert_int_equal(tr->spans[s].last, json_integer_value(json_object_get(w, "last")));
        /* a probability: within TOL of 1, the largest it can be */
        double p = json_number_value(json_object_get(w, "probability"));
        if (!(fabs(tr->spans[s].probability - p) <= TOL))
            fail_msg("%s: span %d has probability %.9g, the reference %.9g", name, s, tr->spans[s].probability, p);
    }
    json_t *links = json_object_get(c, "links");
    assert_int_equal(tr->n_links, json_array_size(links));
    for (int32_t l = 0; l < tr->n_links; l++) {
        json_t *w = json_array_get(links, l);
        assert_int_equal(tr->links[l].from, json_integer_value(json_object_get(w, "from")));
        check_close("link scores", name, tr->links[l].scores, json_object_get(w, "scores"), (size_t)tr->links[l].n_scores);
        assert_int_equal(tr->links[l].choice, json_integer_value(json_object_get(w, "choice")));
    }
    json_t *logits = json_object_get(c, "label_logits");
    assert_int_equal(tr->n_label_rows, json_array_size(logits));
    for (int32_t r = 0; r < tr->n_label_rows; r++)
        check_close("label logits", name, tr->label_logits + (size_t)r * (size_t)tr->n_labels, json_array_get(logits, r),
                    (size_t)tr->n_labels);
    check_candidates(name, json_object_get(c, "candidates"), tr);
    json_t *recs = json_object_get(c, "records");
    assert_int_equal(x->n_records, json_array_size(recs));
    assert_int_equal(x->stats.n_prompt_tokens, tr->n_tokens);
    assert_int_equal(x->stats.n_tokens, 0);
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t f = 0; f < x->n_fields; f++)
            assert_string_equal(x->records[r].values[f],
                                jstr(json_array_get(recs, r), pd_schema_field_name(g_schema, f)));
    check_record_meta(name, json_object_get(c, "record_meta"), x);
}

/* pd_tag_explain's document of the same pass (its shape:
 * docs/extraction-by-decisions.md): the trace's spans, links and candidates,
 * each character's marginals summing to 1 as the trace's tokens' do. */
static void check_explain(const char *name, pd_context *ctx, const pd_tag_extractor *tx, const char *text,
                          const pd_tag_trace *tr)
{
    pd_error err;
    char *doc = NULL;
    size_t len = 0;
    if (pd_tag_explain(ctx, tx, text, strlen(text), &doc, &len, &err)) fail_msg("%s: %s", name, err.message);
    json_t *d = json_loadb(doc, len, 0, NULL), *v;
    assert_non_null(d);
    size_t i;
    assert_int_equal(json_array_size(json_object_get(d, "spans")), tr->n_spans);
    json_array_foreach(json_object_get(d, "spans"), i, v) {
        assert_true(fabs(json_number_value(json_object_get(v, "probability")) - tr->spans[i].probability) <= 1e-8);
        json_t *w = json_object_get(v, "why");
        assert_true(fabs(json_number_value(json_object_get(w, "trunk")) + json_number_value(json_object_get(w, "sparse")) -
                         json_number_value(json_object_get(w, "score"))) <= 1e-6);
    }
    assert_int_equal(json_array_size(json_object_get(d, "links")), tr->n_links);
    assert_int_equal(json_array_size(json_object_get(d, "records")), tr->n_candidates);
    size_t chars = 0;
    for (const char *b = text; *b; b++) chars += ((uint8_t)*b & 0xC0) != 0x80;
    assert_int_equal(json_array_size(json_object_get(d, "characters")), chars);
    json_array_foreach(json_object_get(d, "characters"), i, v) {
        double sum = json_number_value(json_object_get(v, "outside"));
        const char *f;
        json_t *p;
        json_object_foreach(json_object_get(v, "inside"), f, p) sum += json_number_value(p);
        if (fabs(sum - 1) > 1e-5) fail_msg("%s: character %zu's marginals sum to %.9g", name, i, sum);
    }
    json_decref(d);
    pd_free(doc);
}

static void test_reference(void **state)
{
    (void)state;
    pd_error err;
    pd_context *ctx = pd_context_new(g_model, NULL, &err);
    assert_non_null(ctx);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g_doc, "cases"), i, c) {
        pd_head *h = load_head(jstr(c, "head"));
        assert_int_equal(pd_head_get_type(h), PD_HEAD_TAGGER);
        pd_tag_extractor *tx = pd_tag_extractor_new(g_model, g_schema, h, &err);
        if (!tx) fail_msg("%s", err.message);
        const char *text = jstr(c, "text");
        pd_extraction *x = NULL, *plain = NULL;
        pd_tag_trace *tr = NULL;
        if (pd_tag_extract_trace(ctx, tx, text, strlen(text), &x, &tr, &err)) fail_msg("%s: %s", jstr(c, "name"), err.message);
        check_trace(c, tr, x);
        check_explain(jstr(c, "name"), ctx, tx, text, tr);
        /* without the trace: the same records */
        assert_int_equal(pd_tag_extract(ctx, tx, text, strlen(text), &plain, &err), PD_OK);
        assert_int_equal(plain->n_records, x->n_records);
        for (int32_t r = 0; r < x->n_records; r++)
            for (int32_t f = 0; f < x->n_fields; f++) assert_string_equal(plain->records[r].values[f], x->records[r].values[f]);
        pd_extraction_free(plain);
        pd_extraction_free(x);
        pd_tag_trace_free(tr);
        pd_tag_extractor_free(tx);
        pd_head_free(h);
    }
    pd_context_free(ctx);
}

static pd_status status_of(const char *s)
{
    static const char *const names[] = {"ok", "io", "format", "unsupported", "shape", "range", "nomem", "arg",
                                        "context", "internal", "limit"};
    for (int i = 0; i < 11; i++)
        if (strcmp(names[i], s) == 0) return (pd_status)i;
    fail_msg("unknown status %s", s);
    return PD_ERR_INTERNAL;
}

static void test_bad_heads(void **state)
{
    (void)state;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(g_doc, "bad_heads"), i, b) {
        pd_error err = {0};
        const char *dir = jstr(b, "dir"), *word = jstr(b, "word"), *name = jstr(b, "name");
        pd_head *h = pd_head_load(dir, g_model, &err);
        pd_tag_extractor *tx = NULL;
        if (strcmp(jstr(b, "stage"), "bind") == 0) {
            if (!h) fail_msg("%s: the head should load: %s", name, err.message);
            tx = pd_tag_extractor_new(g_model, g_schema, h, &err);
            if (tx) fail_msg("%s: bound", name);
        } else if (h) {
            fail_msg("%s: loaded", name);
        }
        if (err.code != status_of(jstr(b, "status")) || !strstr(err.message, word) || !strstr(err.message, dir))
            fail_msg("%s: got %s \"%s\", expected %s naming %s and '%s'", name, pd_status_name(err.code), err.message,
                     jstr(b, "status"), dir, word);
        pd_head_free(h);
    }
}

static json_t *first_case(const char *head_suffix)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g_doc, "cases"), i, c) {
        const char *h = jstr(c, "head");
        if (strlen(h) >= strlen(head_suffix) && !strcmp(h + strlen(h) - strlen(head_suffix), head_suffix)) return c;
    }
    fail_msg("no case for %s", head_suffix);
    return NULL;
}

/* The text is plain text: a marker written in it is bytes, not the marker. */
static void test_plain_text(void **state)
{
    (void)state;
    pd_error err;
    pd_head *h = load_head(jstr(first_case("head-pair"), "head"));
    pd_tag_extractor *tx = pd_tag_extractor_new(g_model, g_schema, h, &err);
    pd_context *ctx = pd_context_new(g_model, NULL, &err);
    assert_non_null(tx);
    assert_non_null(ctx);
    const char *text = "好<|fim_suffix|>用<|im_end|>";
    const pd_tokenizer *tok = pd_model_tokenizer(g_model);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(pd_tokenizer_encode_plain(tok, text, strlen(text), &ids, &n, &err), PD_OK);
    pd_tag_trace *tr = NULL;
    assert_int_equal(pd_tag_extract_trace(ctx, tx, text, strlen(text), NULL, &tr, &err), PD_OK);
    assert_int_equal(tr->n_read, (int32_t)n);
    assert_memory_equal(tr->tokens + tr->read_start, ids, n * sizeof *ids);
    for (size_t i = 0; i < n; i++) assert_false(pd_tokenizer_is_special(tok, ids[i]));
    /* prefix marker, two copies, middle and suffix markers */
    assert_int_equal(tr->n_tokens, 2 * (int32_t)n + 3);
    assert_int_equal(tr->tokens[tr->n_tokens - 1], pd_tokenizer_token_id(tok, "<|fim_suffix|>"));
    for (int32_t s = 0; s < tr->n_spans; s++) assert_non_null(strstr(text, tr->spans[s].text));
    pd_free(ids);
    pd_tag_trace_free(tr);
    /* an empty text: no records, no model call */
    pd_extraction *x = NULL;
    assert_int_equal(pd_tag_extract_trace(ctx, tx, "", 0, &x, &tr, &err), PD_OK);
    assert_int_equal(x->n_records, 0);
    assert_int_equal(tr->forward_passes, 0);
    assert_int_equal(x->stats.n_prompt_tokens, 0);
    pd_extraction_free(x);
    /* invalid UTF-8; explaining it too, or with nowhere for the document */
    assert_int_equal(pd_tag_extract(ctx, tx, "\xff", 1, &x, &err), PD_ERR_FORMAT);
    assert_null(x);
    char *doc = (char *)"";
    assert_int_equal(pd_tag_explain(ctx, tx, "好\xff", 4, &doc, NULL, &err), PD_ERR_FORMAT);
    assert_null(doc);
    assert_non_null(strstr(err.message, "not UTF-8"));
    assert_int_equal(pd_tag_explain(ctx, tx, "好", 3, NULL, NULL, &err), PD_ERR_ARG);
    check_explain("empty", ctx, tx, "", tr); /* tr: the empty text's */
    pd_tag_trace_free(tr);
    pd_context_free(ctx);
    /* a prompt longer than the context, refused before the model runs */
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 16;
    ctx = pd_context_new(g_model, &cp, &err);
    assert_non_null(ctx);
    assert_int_equal(pd_tag_extract(ctx, tx, "123456789", 9, &x, &err), PD_ERR_CONTEXT);
    assert_non_null(strstr(err.message, "tokens"));
    assert_int_equal(pd_context_kv_len(ctx), 0);
    assert_int_equal(pd_tag_extract(ctx, tx, "1234", 4, &x, &err), PD_OK); /* 11 tokens fit */
    pd_extraction_free(x);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);
    pd_head_free(h);
}

/* A tagger head does not decide; a decision head does not tag. */
static void test_refusals(void **state)
{
    (void)state;
    pd_error err;
    pd_head *h = load_head(jstr(first_case("head-pair"), "head"));
    assert_null(pd_decider_new(g_model, h, NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "tagger"));
    assert_null(pd_head_labels(h, NULL));
    pd_head *ptr = load_head(json_string_value(json_object_get(g_doc, "pointer_head")));
    assert_null(pd_tag_extractor_new(g_model, g_schema, ptr, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "not a tagger head"));
    assert_null(pd_tag_extractor_new(g_model, NULL, h, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    pd_head_free(ptr);
    pd_head_free(h);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s cases.json\n", argv[0]);
        return 2;
    }
    json_error_t jerr;
    pd_error err;
    if (!(g_doc = json_load_file(argv[1], 0, &jerr))) {
        fprintf(stderr, "%s: %s\n", argv[1], jerr.text);
        return 1;
    }
    if (!(g_model = pd_model_load(jstr(g_doc, "model"), NULL, &err)) || !(g_schema = pd_schema_load(jstr(g_doc, "schema"), &err))) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_bad_heads),
        cmocka_unit_test(test_plain_text),
        cmocka_unit_test(test_refusals),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pd_schema_free(g_schema);
    pd_model_free(g_model);
    json_decref(g_doc);
    return rc;
}
