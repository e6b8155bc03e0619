/* test_heads.c - decision heads against the float64 numpy reference of
 * tools/testmodels/make_head.py, the prompt layouts against hand-built
 * sequences, order independence of the parallel layout, prefix reuse, one
 * forward pass per decision, threads, and every validation error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"

/* Scores are O(1) (pointer, classifier) or sums of log-probabilities of
 * random models (tens); float32 compute against float64 stays within this
 * fraction of the largest |score| of a decision. */
#define SCORE_TOL 5e-6
#define PROB_TOL 1e-5
/* Block-quantized models (Q8_0, Q4_0, Q4_1) multiply int8-quantized activations,
 * as llama.cpp does, and keep an F16 KV cache: scores within 3% of the largest.
 * A probability moves with the differences of scores: the verbalizer's (sums
 * of several label tokens' log-probabilities) move by up to 0.54 here, which
 * moved a probability by 0.040 (0.026 with an F32 cache); the bound is 0.06. */
#define QUANT_TOL 3e-2
#define QUANT_PROB_TOL 6e-2

static bool block_quantized(const pd_model *m)
{
    char *info = pd_model_info_json(m);
    bool q = strstr(info, "\"Q8_0\"") || strstr(info, "\"Q4_0\"") || strstr(info, "\"Q4_1\"");
    free(info);
    return q;
}

static json_t *doc;

static pd_model *load_model(const char *path)
{
    pd_error err;
    pd_model *m = pd_model_load(path, NULL, &err);
    if (!m) fail_msg("%s", err.message);
    return m;
}

static pd_head *load_head(const char *dir, const pd_model *m)
{
    pd_error err;
    pd_head *h = pd_head_load(dir, m, &err);
    if (!h) fail_msg("%s", err.message);
    return h;
}

static pd_decider *new_decider(const pd_model *m, const pd_head *h, pd_layout layout)
{
    pd_error err;
    pd_decider_params p = pd_decider_default_params();
    p.layout = layout;
    pd_decider *d = pd_decider_new(m, h, &p, &err);
    if (!d) fail_msg("%s", err.message);
    return d;
}

static pd_decision *decide(pd_decider *d, const char *text, const char *q, const char *const *c, int n)
{
    pd_error err;
    pd_decision *dec = NULL;
    if (pd_decide(d, text, q, c, n, &dec, &err)) fail_msg("%s", err.message);
    return dec;
}

static const char *str(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static double max_abs(const float *v, int n)
{
    double m = 1.0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)v[i]));
    return m;
}

static void assert_ids(json_t *want, const int32_t *got, int n, const char *what, const char *name)
{
    if ((int)json_array_size(want) != n) fail_msg("%s: %s has %d entries, expected %zu", name, what, n, json_array_size(want));
    for (int i = 0; i < n; i++)
        if (got[i] != json_integer_value(json_array_get(want, (size_t)i)))
            fail_msg("%s: %s[%d] = %d, expected %lld", name, what, i, got[i],
                     (long long)json_integer_value(json_array_get(want, (size_t)i)));
}

static void assert_close(json_t *want, const float *got, int n, double tol, const char *what, const char *name)
{
    double scale = 1.0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(json_number_value(json_array_get(want, (size_t)i))));
    for (int i = 0; i < n; i++) {
        double w = json_number_value(json_array_get(want, (size_t)i));
        if (fabs((double)got[i] - w) > tol * scale)
            fail_msg("%s: %s[%d] = %.9g, reference %.9g (tolerance %.3g)", name, what, i, (double)got[i], w,
                     tol * scale);
    }
}

/* ------------------------------------------------------------ reference */

static void test_reference_scores(void **state)
{
    (void)state;
    json_t *cases = json_object_get(doc, "cases");
    for (size_t k = 0; k < json_array_size(cases); k++) {
        json_t *c = json_array_get(cases, k);
        const char *name = str(c, "name"), *hdir = str(c, "head");
        pd_model *m = load_model(str(c, "model"));
        pd_head *h = hdir ? load_head(hdir, m) : NULL;
        pd_decider *d = new_decider(m, h, strcmp(str(c, "layout"), "parallel") ? PD_LAYOUT_SEQUENTIAL
                                                                                : PD_LAYOUT_PARALLEL);
        json_t *jc = json_object_get(c, "candidates");
        int n = (int)json_array_size(jc);
        const char *cands[16];
        for (int i = 0; i < n; i++) cands[i] = json_string_value(json_array_get(jc, (size_t)i));
        pd_decision *dec = decide(d, str(c, "text"), str(c, "question"), cands, n);
        assert_int_equal(dec->n_candidates, n);
        assert_int_equal(dec->forward_passes, 1);
        assert_int_equal(pd_decider_forward_passes(d), 1);
        assert_ids(json_object_get(c, "ids"), dec->tokens, dec->prompt_tokens, "ids", name);
        assert_ids(json_object_get(c, "positions"), dec->positions, dec->prompt_tokens, "positions", name);
        json_t *q = json_object_get(c, "query");
        assert_int_equal(dec->query_index, json_is_null(q) ? -1 : json_integer_value(q));
        if (json_object_get(c, "key_index"))
            assert_ids(json_object_get(c, "key_index"), dec->key_index, n, "key_index", name);
        bool quant = block_quantized(m);
        assert_close(json_object_get(c, "scores"), dec->scores, n, quant ? QUANT_TOL : SCORE_TOL, "score", name);
        assert_close(json_object_get(c, "probs"), dec->probs, n, quant ? QUANT_PROB_TOL : PROB_TOL, "prob", name);
        if (json_object_get(c, "mean_logprob"))
            assert_close(json_object_get(c, "mean_logprob"), dec->mean_logprob, n, quant ? QUANT_TOL : SCORE_TOL,
                         "mean_logprob", name);
        /* a classifier over a subset of its labels: same raw scores, renormalised */
        if (h && pd_head_get_type(h) == PD_HEAD_CLASSIFIER) {
            const char *sub[2] = {cands[3], cands[1]};
            pd_decision *s = decide(d, str(c, "text"), str(c, "question"), sub, 2);
            assert_int_equal(s->label_index[0], 3);
            assert_float_equal(s->scores[0], dec->scores[3], 1e-6);
            assert_float_equal(s->scores[1], dec->scores[1], 1e-6);
            assert_float_equal(s->probs[0] + s->probs[1], 1.0, 1e-6);
            pd_decision_free(s);
        }
        pd_decision_free(dec);
        pd_decider_free(d);
        pd_head_free(h);
        pd_model_free(m);
    }
}

/* -------------------------------------------------------------- layouts */

static const char *fixture_head(const char *name)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", json_string_value(json_object_get(doc, "model_a")));
    char *slash = strrchr(dir, '/');
    snprintf(slash + 1, sizeof dir - (size_t)(slash + 1 - dir), "%s", name);
    return dir;
}

static void test_hand_built_sequence(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    pd_head *h = load_head(fixture_head("head-a-pointer"), m);
    /* vocab 300: the markers are ids 295..299; digits and '?' are single bytes, id = byte - 33 */
    enum { PRE = 295, MID = 296, CS = 297, CE = 298, SUF = 299 };
    const char *cands[2] = {"3", "45"};
    const int32_t want[] = {PRE, '1' - 33, '2' - 33, MID, '?' - 33, CS, '3' - 33, CE, CS, '4' - 33, '5' - 33, CE, SUF};
    const int32_t seq_pos[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const int32_t par_pos[] = {0, 1, 2, 3, 4, 5, 6, 7, 5, 6, 7, 8, 12};
    for (int layout = PD_LAYOUT_SEQUENTIAL; layout <= PD_LAYOUT_PARALLEL; layout++) {
        pd_decider *d = new_decider(m, h, (pd_layout)layout);
        pd_decision *dec = decide(d, "12", "?", cands, 2);
        assert_int_equal(dec->prompt_tokens, 13);
        assert_memory_equal(dec->tokens, want, sizeof want);
        assert_memory_equal(dec->positions, layout == PD_LAYOUT_SEQUENTIAL ? seq_pos : par_pos, sizeof seq_pos);
        assert_int_equal(dec->query_index, 12);
        assert_int_equal(dec->key_index[0], 7);
        assert_int_equal(dec->key_index[1], 11);
        pd_decision_free(dec);
        pd_decider_free(d);
    }
    pd_head_free(h);
    pd_model_free(m);
}

/* Heap's algorithm: every permutation of idx[0..n). */
static int next_perm(int *idx, int *c, int n, int *i)
{
    while (*i < n) {
        if (c[*i] < *i) {
            int j = *i % 2 ? c[*i] : 0, t = idx[j];
            idx[j] = idx[*i];
            idx[*i] = t;
            c[*i]++;
            *i = 1;
            return 1;
        }
        c[*i] = 0;
        (*i)++;
    }
    return 0;
}

static void check_order_independent(pd_decider *d, const char *const *cands, int n)
{
    pd_decision *base = decide(d, "12, 34; 56!", "?= 0", cands, n);
    double scale = max_abs(base->scores, n);
    int idx[8], c[8] = {0}, i = 1, perms = 1;
    for (int k = 0; k < n; k++) idx[k] = k;
    while (next_perm(idx, c, n, &i)) {
        const char *perm[8];
        for (int k = 0; k < n; k++) perm[k] = cands[idx[k]];
        pd_decision *dec = decide(d, "12, 34; 56!", "?= 0", perm, n);
        for (int k = 0; k < n; k++) {
            if (fabs((double)dec->scores[k] - (double)base->scores[idx[k]]) > 1e-6 * scale)
                fail_msg("permutation %d: candidate %s scores %.9g, in the original order %.9g", perms, perm[k],
                         (double)dec->scores[k], (double)base->scores[idx[k]]);
        }
        pd_decision_free(dec);
        perms++;
    }
    assert_int_equal(perms, n == 5 ? 120 : 24);
    pd_decision_free(base);
}

static void test_parallel_order_independent(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    pd_head *h = load_head(fixture_head("head-a-pointer"), m);
    const char *cands[5] = {"1", "22", "333", "4-4", "+"};
    pd_decider *d = new_decider(m, h, PD_LAYOUT_PARALLEL);
    check_order_independent(d, cands, 5);
    /* the sequential layout does depend on the order (so the check above can fail) */
    pd_decider *s = new_decider(m, h, PD_LAYOUT_SEQUENTIAL);
    const char *swapped[5] = {"22", "1", "333", "4-4", "+"};
    pd_decision *a = decide(s, "12, 34; 56!", "?= 0", cands, 5), *b = decide(s, "12, 34; 56!", "?= 0", swapped, 5);
    assert_true(fabs((double)a->scores[0] - (double)b->scores[1]) > 1e-4);
    pd_decision_free(a);
    pd_decision_free(b);
    pd_decider_free(s);
    pd_decider_free(d);
    /* the verbalizer, parallel by default */
    d = new_decider(m, NULL, PD_LAYOUT_DEFAULT);
    check_order_independent(d, cands, 4);
    pd_decider_free(d);
    pd_head_free(h);
    pd_model_free(m);
}

/* ---------------------------------------------------------- prefix reuse */

static void assert_same_scores(const pd_decision *a, const pd_decision *b)
{
    assert_int_equal(a->n_candidates, b->n_candidates);
    assert_int_equal(a->prompt_tokens, b->prompt_tokens);
    assert_memory_equal(a->tokens, b->tokens, (size_t)a->prompt_tokens * sizeof(int32_t));
    double scale = max_abs(a->scores, a->n_candidates);
    for (int i = 0; i < a->n_candidates; i++) assert_float_equal(a->scores[i], b->scores[i], 1e-6 * scale);
}

static void test_prefix_reuse(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    pd_head *h = load_head(fixture_head("head-a-pointer"), m);
    const char *text = "12, 34; 56! 7.8 (9)", *qs[3] = {"?= 0", "+1", ""};
    const char *cands[3] = {"1", "22", "333"};
    for (int layout = PD_LAYOUT_SEQUENTIAL; layout <= PD_LAYOUT_PARALLEL; layout++) {
        pd_decider *fresh = new_decider(m, h, (pd_layout)layout), *doc_d = new_decider(m, h, (pd_layout)layout);
        pd_error err;
        assert_int_equal(pd_decider_set_text(doc_d, text, &err), PD_OK);
        assert_int_equal(pd_decider_forward_passes(doc_d), 1);
        pd_decider *forked = pd_decider_fork(doc_d, &err);
        assert_non_null(forked);
        for (int k = 0; k < 3; k++) {
            pd_decision *a = decide(fresh, text, qs[k], cands, 3), *b = decide(doc_d, NULL, qs[k], cands, 3);
            pd_decision *c = decide(forked, NULL, qs[k], cands, 3);
            assert_int_equal(b->forward_passes, 1);
            assert_same_scores(a, b);
            assert_same_scores(a, c);
            pd_decision_free(a);
            pd_decision_free(b);
            pd_decision_free(c);
        }
        /* one pass for the document, one per question */
        assert_int_equal(pd_decider_forward_passes(doc_d), 4);
        assert_int_equal(pd_decider_forward_passes(forked), 3);
        /* a decision with its own text leaves that text as the document */
        pd_decision_free(decide(doc_d, "5", "?", cands, 3));
        pd_decision *a = decide(fresh, "5", "+1", cands, 3), *b = decide(doc_d, NULL, "+1", cands, 3);
        assert_same_scores(a, b);
        pd_decision_free(a);
        pd_decision_free(b);
        /* and forgetting it leaves nothing to reuse */
        assert_int_equal(pd_decider_set_text(doc_d, NULL, &err), PD_OK);
        pd_decision *none = NULL;
        assert_int_equal(pd_decide(doc_d, NULL, "?", cands, 3, &none, &err), PD_ERR_ARG);
        assert_null(none);
        pd_decider_free(forked);
        pd_decider_free(doc_d);
        pd_decider_free(fresh);
    }
    pd_head_free(h);
    pd_model_free(m);
}

/* --------------------------------------------------------------- threads */

typedef struct {
    const pd_model *m;
    const pd_head *h;
    float scores[5];
    int ok;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    const char *cands[5] = {"1", "22", "333", "4-4", "+"};
    pd_decider_params dp = pd_decider_default_params();
    pd_decider *d = pd_decider_new(a->m, a->h, &dp, NULL);
    pd_decision *dec = NULL;
    for (int r = 0; d && r < 3; r++) {
        pd_decision_free(dec);
        dec = NULL;
        if (pd_decide(d, "12, 34; 56!", "?= 0", cands, 5, &dec, NULL)) break;
    }
    if (dec) {
        memcpy(a->scores, dec->scores, sizeof a->scores);
        a->ok = 1;
    }
    pd_decision_free(dec);
    pd_decider_free(d);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    pd_head *h = load_head(fixture_head("head-a-pointer"), m);
    thread_arg serial = {m, h, {0}, 0}, args[3];
    thread_main(&serial);
    assert_true(serial.ok);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        args[i] = serial;
        args[i].ok = 0;
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_true(args[i].ok);
        assert_memory_equal(args[i].scores, serial.scores, sizeof serial.scores); /* same arithmetic: bitwise */
    }
    pd_head_free(h);
    pd_model_free(m);
}

/* ------------------------------------------------------------ validation */

static pd_status status_of(const char *s)
{
    static const char *names[] = {"ok", "io", "format", "unsupported", "shape", "range", "nomem", "arg"};
    for (int i = 0; i < 8; i++)
        if (strcmp(s, names[i]) == 0) return (pd_status)i;
    fail_msg("unknown status %s", s);
    return PD_ERR_INTERNAL;
}

static void test_bad_heads(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    json_t *bad = json_object_get(doc, "bad_heads");
    assert_true(json_array_size(bad) >= 15);
    for (size_t k = 0; k < json_array_size(bad); k++) {
        json_t *c = json_array_get(bad, k);
        pd_error err = {PD_OK, ""};
        pd_head *h = pd_head_load(str(c, "dir"), m, &err);
        if (h) fail_msg("%s: loaded", str(c, "name"));
        if (err.code != status_of(str(c, "status")) || !strstr(err.message, str(c, "word")) ||
            !strstr(err.message, str(c, "dir")))
            fail_msg("%s: got %s \"%s\", expected %s naming %s and %s", str(c, "name"), pd_status_name(err.code),
                     err.message, str(c, "status"), str(c, "dir"), str(c, "word"));
    }
    pd_model_free(m);
}

static void expect_decide_error(pd_decider *d, const char *text, const char *const *c, int n, pd_status code,
                                const char *word)
{
    pd_error err = {PD_OK, ""};
    pd_decision *dec = NULL;
    assert_int_equal(pd_decide(d, text, "?", c, n, &dec, &err), code);
    assert_null(dec);
    if (!strstr(err.message, word)) fail_msg("\"%s\" does not mention %s", err.message, word);
}

static void test_bad_calls(void **state)
{
    (void)state;
    pd_model *m = load_model(json_string_value(json_object_get(doc, "model_a")));
    pd_head *cls = load_head(fixture_head("head-a-classifier"), m);
    pd_head *ptr = load_head(fixture_head("head-a-pointer"), m);
    pd_decider *dv = new_decider(m, NULL, PD_LAYOUT_DEFAULT), *dc = new_decider(m, cls, PD_LAYOUT_DEFAULT);
    const char *ok[2] = {"1", "2"}, *empty[2] = {"1", ""}, *unknown[1] = {"9"}, *null_c[2] = {"1", NULL};
    expect_decide_error(dv, "1", ok, 0, PD_ERR_ARG, "no candidates");
    expect_decide_error(dv, "1", empty, 2, PD_ERR_ARG, "empty");
    expect_decide_error(dv, "1", null_c, 2, PD_ERR_ARG, "NULL");
    expect_decide_error(dv, NULL, ok, 2, PD_ERR_ARG, "document");
    expect_decide_error(dc, "1", unknown, 1, PD_ERR_ARG, "\"9\"");
    int32_t n_labels = 0;
    assert_non_null(pd_head_labels(cls, &n_labels));
    assert_int_equal(n_labels, 6);
    assert_null(pd_head_labels(ptr, &n_labels));
    /* a classifier with no candidates scores all its labels */
    pd_decision *all = decide(dc, "1", "?", NULL, 0);
    assert_int_equal(all->n_candidates, 6);
    pd_decision_free(all);
    /* a prompt longer than the context */
    pd_decider_params p = pd_decider_default_params();
    p.n_ctx = 8;
    pd_error err;
    pd_decider *small = pd_decider_new(m, ptr, &p, &err);
    assert_non_null(small);
    expect_decide_error(small, "12345678", ok, 2, PD_ERR_CONTEXT, "do not fit");
    p.layout = (pd_layout)7;
    assert_null(pd_decider_new(m, ptr, &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    /* a head checked against one model refuses a model of another hidden size */
    pd_model *mb = load_model(json_string_value(json_object_get(doc, "model_b")));
    assert_null(pd_decider_new(mb, ptr, NULL, &err));
    assert_int_equal(err.code, PD_ERR_SHAPE);
    assert_null(pd_head_load(fixture_head("head-a-pointer"), mb, &err));
    assert_int_equal(err.code, PD_ERR_SHAPE);
    pd_model_free(mb);
    pd_decider_free(small);
    pd_decider_free(dv);
    pd_decider_free(dc);
    pd_head_free(cls);
    pd_head_free(ptr);
    pd_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR/cases.json\n", argv[0]);
        return 2;
    }
    json_error_t jerr;
    doc = json_load_file(argv[1], 0, &jerr);
    if (!doc) {
        fprintf(stderr, "%s: %s\n", argv[1], jerr.text);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_scores),  cmocka_unit_test(test_hand_built_sequence),
        cmocka_unit_test(test_parallel_order_independent), cmocka_unit_test(test_prefix_reuse),
        cmocka_unit_test(test_threads),           cmocka_unit_test(test_bad_heads),
        cmocka_unit_test(test_bad_calls),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(doc);
    return rc;
}
