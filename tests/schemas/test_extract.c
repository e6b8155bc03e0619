/* Extraction with a random-weight model over the real Qwen3 vocabulary: every
 * train review gives valid records (spans `_` or substrings of the review,
 * labels from the closed sets written out here, not read from the schema);
 * the sparse and the full LM head give identical outputs; an empty review,
 * a review longer than the context and the writers.
 *
 * Usage: test_extract MODEL_DIR REVIEWS_JSONL SCHEMA [N_REVIEWS]
 * (N_REVIEWS limits the run, for the sanitizer build; 0 or absent: all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pocketdec.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_model_path, *g_reviews_path, *g_schema_path;
static long g_limit;

static const char *const CATEGORIES[] = {"包装", "成分", "尺寸", "服务", "功效", "价格", "气味",
                                         "使用体验", "物流", "新鲜度", "真伪", "整体", "其他"};
static const char *const POLARITIES[] = {"正面", "中性", "负面"};

typedef struct fixture {
    pd_model *model;
    pd_schema *schema;
    pd_extractor *ex;
    pd_context *ctx;
    json_t *reviews; /* [{id, text}] */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    pd_error err;
    f->model = pd_model_load(g_model_path, NULL, &err);
    if (!f->model) fprintf(stderr, "%s\n", err.message);
    assert_non_null(f->model);
    f->schema = pd_schema_load(g_schema_path, &err);
    assert_non_null(f->schema);
    f->ex = pd_extractor_new(f->model, f->schema, &err);
    if (!f->ex) fprintf(stderr, "%s\n", err.message);
    assert_non_null(f->ex);
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 512;
    f->ctx = pd_context_new(f->model, &cp, &err);
    assert_non_null(f->ctx);
    f->reviews = json_array();
    FILE *in = fopen(g_reviews_path, "r");
    assert_non_null(in);
    char line[8192];
    while (fgets(line, sizeof line, in)) {
        json_t *o = json_loads(line, 0, NULL);
        assert_non_null(o);
        json_array_append_new(f->reviews, o);
    }
    fclose(in);
    assert_int_equal(json_array_size(f->reviews), 2829);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    json_decref(f->reviews);
    pd_context_free(f->ctx);
    pd_extractor_free(f->ex);
    pd_schema_free(f->schema);
    pd_model_free(f->model);
    free(f);
    return 0;
}

static bool one_of(const char *v, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v, set[i]) == 0) return true;
    return false;
}

static bool span_ok(const char *v, const char *text)
{
    return strcmp(v, "_") == 0 || (*v && strstr(text, v));
}

static pd_extraction *extract(fixture *f, const char *text, int sparse)
{
    pd_extract_params p = pd_extract_default_params();
    p.sparse_head = sparse;
    pd_extraction *x = NULL;
    pd_error err;
    pd_status rc = pd_extract(f->ctx, f->ex, text, strlen(text), &p, &x, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, PD_OK);
    return x;
}

static void test_all_reviews_valid(void **state)
{
    fixture *f = *state;
    size_t n = json_array_size(f->reviews);
    if (g_limit > 0 && (size_t)g_limit < n) n = (size_t)g_limit;
    long records = 0, spans = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(f->reviews, i);
        const char *text = json_string_value(json_object_get(o, "text"));
        const char *id = json_string_value(json_object_get(o, "id"));
        pd_extraction *x = extract(f, text, -1);
        assert_int_equal(x->n_fields, 4);
        assert_true(x->n_records <= 3);
        assert_true(x->stats.n_tokens <= 24);
        for (int32_t r = 0; r < x->n_records; r++) {
            char **v = x->records[r].values;
            if (!span_ok(v[0], text) || !span_ok(v[1], text))
                fprintf(stderr, "review %s: '%s' / '%s' not in '%s'\n", id, v[0], v[1], text);
            assert_true(span_ok(v[0], text));
            assert_true(span_ok(v[1], text));
            assert_true(one_of(v[2], CATEGORIES, 13));
            assert_true(one_of(v[3], POLARITIES, 3));
            spans += strcmp(v[0], "_") != 0;
        }
        records += x->n_records;
        /* a Tianchi row per record (or the placeholder), each starting with the id */
        char *csv = NULL;
        size_t len = 0;
        pd_error err;
        assert_int_equal(pd_extraction_format(f->schema, x, id, PD_FORMAT_TIANCHI, &csv, &len, &err), PD_OK);
        long lines = 0;
        for (size_t k = 0; k < len; k++) lines += csv[k] == '\n';
        assert_int_equal(lines, x->n_records ? x->n_records : 1);
        assert_int_equal(strncmp(csv, id, strlen(id)), 0);
        pd_free(csv);
        pd_extraction_free(x);
    }
    fprintf(stderr, "%zu reviews: %ld records, %ld with an aspect span\n", n, records, spans);
    assert_true(records > 0 && spans > 0); /* the run did produce spans to check */
}

/* Characters of s[0..n). */
static int32_t chars(const char *s, size_t n)
{
    int32_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* A generated record's offsets and probabilities: each span value at its
 * first occurrence at or after the previous record's span of the field (else
 * its first), each probability in (0, 1], the link 1, the confidence the
 * product of the fields' probabilities. */
static void check_record_meta(const char *text, const pd_extraction *x)
{
    const char *from[4] = {text, text, text, text};
    for (int32_t r = 0; r < x->n_records; r++) {
        const pd_record *rec = &x->records[r];
        double product = 1;
        for (int32_t j = 0; j < 4; j++) {
            if (!(rec->prob[j] > 0 && rec->prob[j] <= 1)) fail_msg("record %d field %d: probability %g", r, j, rec->prob[j]);
            product *= rec->prob[j];
            if (j >= 2 || strcmp(rec->values[j], "_") == 0) {
                assert_int_equal(rec->start[j], -1);
                assert_int_equal(rec->end[j], -1);
                continue;
            }
            const char *at = strstr(from[j], rec->values[j]);
            if (!at) at = strstr(text, rec->values[j]);
            assert_non_null(at);
            from[j] = at;
            assert_int_equal(rec->start[j], chars(text, (size_t)(at - text)));
            assert_int_equal(rec->end[j], rec->start[j] + chars(rec->values[j], strlen(rec->values[j])));
        }
        assert_true(rec->link == 1.0f);
        if (!(fabs(rec->confidence - product) <= 1e-5 * product))
            fail_msg("record %d: confidence %.9g, the fields' product %.9g", r, rec->confidence, product);
    }
}

/* Two extractions of one text: the same probabilities (within float
 * rounding: the sparse head computes each allowed row's logit itself). */
static void check_same_probs(const pd_extraction *a, const pd_extraction *b)
{
    for (int32_t r = 0; r < a->n_records; r++) {
        for (int32_t j = 0; j < 4; j++)
            if (!(fabs(a->records[r].prob[j] - b->records[r].prob[j]) <= 1e-5))
                fail_msg("record %d field %d: probability %.9g against %.9g", r, j, a->records[r].prob[j],
                         b->records[r].prob[j]);
        assert_true(fabs(a->records[r].confidence - b->records[r].confidence) <= 1e-5);
    }
}

static void test_sparse_equals_full(void **state)
{
    fixture *f = *state;
    long sparse_steps = 0;
    for (size_t i = 0; i < 40; i++) {
        const char *text = json_string_value(json_object_get(json_array_get(f->reviews, i), "text"));
        pd_extraction *a = extract(f, text, 0), *b = extract(f, text, 1), *c = extract(f, text, -1);
        assert_int_equal(a->stats.n_sparse, 0);
        sparse_steps += b->stats.n_sparse;
        pd_extraction *xs[2] = {b, c};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(xs[k]->stats.n_tokens, a->stats.n_tokens);
            assert_int_equal(xs[k]->n_records, a->n_records);
            for (int32_t r = 0; r < a->n_records; r++)
                for (int32_t j = 0; j < 4; j++) assert_string_equal(xs[k]->records[r].values[j], a->records[r].values[j]);
            check_same_probs(a, xs[k]);
        }
        check_record_meta(text, a);
        pd_extraction_free(a);
        pd_extraction_free(b);
        pd_extraction_free(c);
    }
    assert_true(sparse_steps > 0);
}

static bool same_record(const pd_record *a, const pd_record *b)
{
    for (int j = 0; j < 4; j++)
        if (strcmp(a->values[j], b->values[j])) return false;
    return true;
}

/* A schema from the test schema's text with its limits line replaced. */
static pd_schema *with_limits(const char *limits)
{
    pd_error err;
    char data[4096] = {0}, *text;
    FILE *in = fopen(g_schema_path, "rb");
    assert_non_null(in);
    assert_true(fread(data, 1, sizeof data - 1, in) > 0);
    fclose(in);
    char *at = strstr(data, "limits:"), *eol = strchr(at, '\n');
    size_t n = (size_t)(at - data) + strlen(limits) + strlen(eol) + 1;
    assert_non_null(text = malloc(n));
    snprintf(text, n, "%.*s%s%s", (int)(at - data), data, limits, eol);
    pd_schema *sc = pd_schema_parse(text, strlen(text), "distinct.yaml", &err);
    if (!sc) fprintf(stderr, "%s\n", err.message);
    assert_non_null(sc);
    free(text);
    return sc;
}

/* distinct_records: the greedy output is that of the plain schema cut before
 * its first repeated record, and the stop says so. */
static void test_distinct_records(void **state)
{
    fixture *f = *state;
    pd_schema *plain = with_limits("limits: {max_records: 8, max_tokens: 96}"),
              *distinct = with_limits("limits: {max_records: 8, max_tokens: 96, distinct_records: true}");
    pd_error err;
    pd_extractor *ep = pd_extractor_new(f->model, plain, &err), *ed = pd_extractor_new(f->model, distinct, &err);
    assert_true(ep && ed);
    int cut = 0;
    for (size_t i = 0; i < 60; i++) {
        const char *text = json_string_value(json_object_get(json_array_get(f->reviews, i), "text"));
        pd_extraction *a = NULL, *b = NULL;
        assert_int_equal(pd_extract(f->ctx, ep, text, strlen(text), NULL, &a, &err), PD_OK);
        assert_int_equal(pd_extract(f->ctx, ed, text, strlen(text), NULL, &b, &err), PD_OK);
        int32_t first_repeat = a->n_records;
        for (int32_t r = 1; r < a->n_records && first_repeat == a->n_records; r++)
            for (int32_t q = 0; q < r; q++)
                if (same_record(&a->records[q], &a->records[r])) first_repeat = r;
        assert_int_equal(b->n_records, first_repeat);
        for (int32_t r = 0; r < b->n_records; r++) assert_true(same_record(&a->records[r], &b->records[r]));
        assert_int_equal(b->stop, first_repeat < a->n_records ? PD_STOP_REPEAT : a->stop);
        cut += first_repeat < a->n_records;
        pd_extraction_free(a);
        pd_extraction_free(b);
    }
    fprintf(stderr, "distinct_records cut %d of 60 outputs at a repeated record\n", cut);
    assert_true(cut > 0); /* the random model does repeat itself: the check ran */
    pd_extractor_free(ep);
    pd_extractor_free(ed);
    pd_schema_free(plain);
    pd_schema_free(distinct);
}

static void test_edge_inputs(void **state)
{
    fixture *f = *state;
    pd_extraction *x = extract(f, "", -1); /* empty review: no records, no model call */
    assert_int_equal(x->n_records, 0);
    assert_int_equal(x->stats.n_tokens, 0);
    char *text = NULL;
    pd_error err;
    assert_int_equal(pd_extraction_format(f->schema, x, "7", PD_FORMAT_TIANCHI, &text, NULL, &err), PD_OK);
    assert_string_equal(text, "7,_,_,_,_\n");
    pd_free(text);
    assert_int_equal(pd_extraction_format(f->schema, x, "7", PD_FORMAT_JSONL, &text, NULL, &err), PD_OK);
    assert_string_equal(text, "{\"id\":\"7\",\"records\":[]}\n");
    pd_free(text);
    pd_extraction_free(x);

    /* longer than the context (512 tokens) */
    size_t n = 3000;
    char *big = malloc(n * 3 + 1);
    for (size_t i = 0; i < n; i++) memcpy(big + 3 * i, "好", 3);
    big[3 * n] = '\0';
    x = NULL;
    assert_int_equal(pd_extract(f->ctx, f->ex, big, strlen(big), NULL, &x, &err), PD_ERR_CONTEXT);
    assert_null(x);
    assert_non_null(strstr(err.message, "context"));
    /* invalid UTF-8 is refused, not extracted from */
    assert_int_equal(pd_extract(f->ctx, f->ex, "\xff\xfe", 2, NULL, &x, &err), PD_ERR_FORMAT);
    free(big);
}

static void test_writers(void **state)
{
    fixture *f = *state;
    char *vals[2][4] = {{"a,b", "say \"hi\"", "整体", "正面"}, {"_", "好", "价格", "负面"}};
    int32_t starts[2][4] = {{0, 4, -1, -1}, {-1, 9, -1, -1}}, ends[2][4] = {{3, 12, -1, -1}, {-1, 10, -1, -1}};
    float probs[2][4] = {{0.5f, 0.25f, 0.75f, 1}, {1, 0.125f, 0.5f, 0.0625f}};
    pd_record recs[2] = {{.values = vals[0], .start = starts[0], .end = ends[0], .prob = probs[0], .link = 0.5f,
                          .confidence = 0.046875f},
                         {.values = vals[1], .start = starts[1], .end = ends[1], .prob = probs[1], .link = 1,
                          .confidence = 0.00390625f}};
    pd_extraction x = {.n_fields = 4, .n_records = 2, .records = recs, .stop = PD_STOP_END};
    char *text = NULL;
    pd_error err;
    assert_int_equal(pd_extraction_format(f->schema, &x, "12", PD_FORMAT_TIANCHI, &text, NULL, &err), PD_OK);
    assert_string_equal(text, "12,\"a,b\",\"say \"\"hi\"\"\",整体,正面\n12,_,好,价格,负面\n");
    pd_free(text);
    assert_int_equal(pd_extraction_format(f->schema, &x, "12", PD_FORMAT_JSONL, &text, NULL, &err), PD_OK);
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    json_t *r0 = json_array_get(json_object_get(o, "records"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "opinion")), "say \"hi\"");
    assert_string_equal(json_string_value(json_object_get(o, "id")), "12");
    /* offsets of the values placed in the text only; probabilities to 4 significant digits */
    json_t *spans0 = json_object_get(r0, "spans"), *probs0 = json_object_get(r0, "probs");
    assert_int_equal(json_object_size(spans0), 2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(spans0, "opinion"), 0)), 4);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(spans0, "opinion"), 1)), 12);
    assert_float_equal(json_real_value(json_object_get(probs0, "category")), 0.75, 0);
    assert_float_equal(json_real_value(json_object_get(probs0, "link")), 0.5, 0);
    assert_float_equal(json_real_value(json_object_get(r0, "confidence")), 0.04688, 0);
    json_t *r1 = json_array_get(json_object_get(o, "records"), 1);
    assert_null(json_object_get(json_object_get(r1, "spans"), "aspect"));
    assert_float_equal(json_real_value(json_object_get(r1, "confidence")), 0.003906, 0);
    json_decref(o);
    pd_free(text);
    /* records built by hand without offsets or probabilities: the values alone */
    pd_record bare[1] = {{.values = vals[1]}};
    x = (pd_extraction){.n_fields = 4, .n_records = 1, .records = bare};
    assert_int_equal(pd_extraction_format(f->schema, &x, "13", PD_FORMAT_JSONL, &text, NULL, &err), PD_OK);
    assert_string_equal(text, "{\"id\":\"13\",\"records\":[{\"aspect\":\"_\",\"opinion\":\"好\",\"category\":\"价格\",\"polarity\":\"负面\"}]}\n");
    pd_free(text);
}

/* pd_extraction_json: the records' part of the JSONL line, byte for byte,
 * as an array or one record; out-of-range records and bad UTF-8 refused. */
static void test_records_json(void **state)
{
    fixture *f = *state;
    char *vals[2][4] = {{"a\"\\\n\x01", "😀", "整体", "正面"}, {"_", "好", "价格", "负面"}};
    int32_t starts[2][4] = {{0, 5, -1, -1}, {-1, 9, -1, -1}}, ends[2][4] = {{4, 6, -1, -1}, {-1, 10, -1, -1}};
    float probs[2][4] = {{0.5f, 1e-5f, 0.75f, 1}, {1, 0.123456f, 0.5f, 0.0625f}};
    pd_record recs[2] = {{.values = vals[0], .start = starts[0], .end = ends[0], .prob = probs[0], .link = 0.5f,
                          .confidence = 0.046875f},
                         {.values = vals[1], .start = starts[1], .end = ends[1], .prob = probs[1], .link = 1,
                          .confidence = 0.00390625f}};
    pd_extraction x = {.n_fields = 4, .n_records = 2, .records = recs, .stop = PD_STOP_END};
    pd_error err;
    char *line = NULL, *all = NULL, *one = NULL, *two = NULL;
    size_t n_all = 0;
    assert_int_equal(pd_extraction_format(f->schema, &x, "12", PD_FORMAT_JSONL, &line, NULL, &err), PD_OK);
    assert_int_equal(pd_extraction_json(f->schema, &x, -1, &all, &n_all, &err), PD_OK);
    assert_int_equal(n_all, strlen(all));
    assert_int_equal(pd_extraction_json(f->schema, &x, 0, &one, NULL, &err), PD_OK);
    assert_int_equal(pd_extraction_json(f->schema, &x, 1, &two, NULL, &err), PD_OK);
    assert_string_equal(one, "{\"aspect\":\"a\\\"\\\\\\n\\u0001\",\"opinion\":\"😀\",\"category\":\"整体\","
                             "\"polarity\":\"正面\",\"spans\":{\"aspect\":[0,4],\"opinion\":[5,6]},"
                             "\"probs\":{\"aspect\":0.5,\"opinion\":1e-5,\"category\":0.75,\"polarity\":1.0,"
                             "\"link\":0.5},\"confidence\":0.04688}");
    /* the line is {"id":..,"records":<all>}, and <all> is [<one>,<two>] */
    char want[1024];
    snprintf(want, sizeof want, "{\"id\":\"12\",\"records\":%s}\n", all);
    assert_string_equal(line, want);
    snprintf(want, sizeof want, "[%s,%s]", one, two);
    assert_string_equal(all, want);
    pd_free(line);
    pd_free(all);
    pd_free(one);
    pd_free(two);
    assert_int_equal(pd_extraction_json(f->schema, NULL, -1, &all, NULL, &err), PD_OK);
    assert_string_equal(all, "[]");
    pd_free(all);
    assert_int_equal(pd_extraction_json(f->schema, &x, 2, &all, NULL, &err), PD_ERR_ARG);
    assert_null(all);
    assert_non_null(strstr(err.message, "no record 2"));
    assert_int_equal(pd_extraction_json(f->schema, &x, -2, &all, NULL, &err), PD_ERR_ARG);
    assert_int_equal(pd_extraction_json(f->schema, NULL, 0, &all, NULL, &err), PD_ERR_ARG);
    assert_int_equal(pd_extraction_json(NULL, &x, -1, &all, NULL, &err), PD_ERR_ARG);
    assert_int_equal(pd_extraction_json(f->schema, &x, -1, NULL, NULL, &err), PD_ERR_ARG);
    vals[1][1] = "\xff";
    assert_int_equal(pd_extraction_json(f->schema, &x, 1, &all, NULL, &err), PD_ERR_FORMAT);
    assert_null(all);
    assert_non_null(strstr(err.message, "not valid UTF-8"));
    /* the line too: an error, not a record written without its opinion */
    assert_int_equal(pd_extraction_format(f->schema, &x, "12", PD_FORMAT_JSONL, &all, NULL, &err), PD_ERR_FORMAT);
    assert_null(all);
    x.n_fields = 3;
    assert_int_equal(pd_extraction_json(f->schema, &x, 0, &all, NULL, &err), PD_ERR_ARG);
}

/* Sampling under the mask: still valid, the same seed gives the same
 * records, and it does differ from greedy somewhere. */
static void test_sampling(void **state)
{
    fixture *f = *state;
    int differs = 0;
    for (size_t i = 0; i < 30; i++) {
        const char *text = json_string_value(json_object_get(json_array_get(f->reviews, i), "text"));
        pd_extraction *x[3];
        for (int k = 0; k < 3; k++) {
            pd_extract_params p = pd_extract_default_params();
            p.sampler.temperature = k < 2 ? 1.0f : 0.0f;
            p.sampler.seed = 11 + i;
            pd_error err;
            assert_int_equal(pd_extract(f->ctx, f->ex, text, strlen(text), &p, &x[k], &err), PD_OK);
        }
        assert_int_equal(x[0]->n_records, x[1]->n_records);
        for (int32_t r = 0; r < x[0]->n_records; r++) {
            char **v = x[0]->records[r].values;
            assert_true(span_ok(v[0], text) && span_ok(v[1], text));
            assert_true(one_of(v[2], CATEGORIES, 13) && one_of(v[3], POLARITIES, 3));
            for (int j = 0; j < 4; j++) assert_string_equal(v[j], x[1]->records[r].values[j]);
        }
        differs += x[0]->n_records != x[2]->n_records || x[0]->stats.n_tokens != x[2]->stats.n_tokens ||
                   (x[0]->n_records > 0 && strcmp(x[0]->records[0].values[1], x[2]->records[0].values[1]));
        for (int k = 0; k < 3; k++) pd_extraction_free(x[k]);
    }
    assert_true(differs > 0);
}

/* One extractor shared by threads, each with its own context, gives the
 * serial records. */
typedef struct job {
    fixture *f;
    pd_context *ctx;
    size_t first;
    char *out; /* the Tianchi rows of reviews first, first+2, ... (of 24) */
    int rc;
} job;

static void *thread_main(void *arg)
{
    job *j = arg;
    size_t cap = 1 << 16, len = 0;
    j->out = calloc(1, cap);
    for (size_t i = j->first; i < 24; i += 2) {
        json_t *o = json_array_get(j->f->reviews, i);
        const char *text = json_string_value(json_object_get(o, "text"));
        pd_extraction *x = NULL;
        char *rows = NULL;
        size_t n = 0;
        pd_error err;
        if (pd_extract(j->ctx, j->f->ex, text, strlen(text), NULL, &x, &err) ||
            pd_extraction_format(j->f->schema, x, json_string_value(json_object_get(o, "id")), PD_FORMAT_TIANCHI,
                                 &rows, &n, &err) || len + n + 1 > cap) {
            j->rc = 1;
        } else {
            memcpy(j->out + len, rows, n);
            len += n;
        }
        pd_free(rows);
        pd_extraction_free(x);
    }
    return NULL;
}

static void test_threads_share_extractor(void **state)
{
    fixture *f = *state;
    job serial[2], par[2];
    pd_error err;
    for (int k = 0; k < 2; k++) {
        serial[k] = (job){f, f->ctx, (size_t)k, NULL, 0};
        thread_main(&serial[k]);
        par[k] = (job){f, pd_context_new(f->model, NULL, &err), (size_t)k, NULL, 0};
        assert_non_null(par[k].ctx);
    }
    pthread_t th[2];
    for (int k = 0; k < 2; k++) assert_int_equal(pthread_create(&th[k], NULL, thread_main, &par[k]), 0);
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(serial[k].rc, 0);
        assert_int_equal(par[k].rc, 0);
        assert_true(strlen(par[k].out) > 0);
        assert_string_equal(par[k].out, serial[k].out);
        free(serial[k].out);
        free(par[k].out);
        pd_context_free(par[k].ctx);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_extract MODEL_DIR REVIEWS_JSONL SCHEMA [N_REVIEWS]\n");
        return 2;
    }
    g_model_path = argv[1];
    g_reviews_path = argv[2];
    g_schema_path = argv[3];
    g_limit = argc > 4 ? atol(argv[4]) : 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_records_json),
        cmocka_unit_test(test_edge_inputs),
        cmocka_unit_test(test_distinct_records),
        cmocka_unit_test(test_sparse_equals_full),
        cmocka_unit_test(test_threads_share_extractor),
        cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_all_reviews_valid),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
