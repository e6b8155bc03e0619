/* test_pipeline.c - pd_pipeline, extraction's one entry point, on the bundled
 * models: the path each head calls for; its records equal those of the
 * path's own calls (pd_tag_extract; pd_extract then pd_extraction_decide;
 * pd_extract), one text at a time, many at once and as a stream whose texts
 * arrive while others are in flight; every bad combination
 * refused with its code and a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "pocketdec.h"
#include "bundled.h"

static const char *const texts[] = {"物流很快，第二天就到了，包装也很好", "宝贝收到了，产品非常的不好，简直就是个垃圾，我都扔了。",
                                    "", "味道一般，价格还行", "很好用，会回购"};
#define N_TEXTS 5

/* The records of x as one string, for comparisons. */
static char *describe(const pd_extraction *x)
{
    size_t n = 1;
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t f = 0; f < x->n_fields; f++) n += strlen(x->records[r].values[f]) + 1;
    char *s = calloc(n, 1);
    assert_non_null(s);
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t f = 0; f < x->n_fields; f++) {
            strcat(s, x->records[r].values[f]);
            strcat(s, f + 1 < x->n_fields ? "," : ";");
        }
    return s;
}

static void assert_same(const pd_extraction *a, const pd_extraction *b)
{
    char *x = describe(a), *y = describe(b);
    assert_string_equal(x, y);
    free(x);
    free(y);
}

/* A stream whose texts arrive one call in two while others are in flight
 * (as a server's do), twice over, then a NULL text with a length: each
 * text's result kept by its tag, and every done call counted. */
#define N_STREAM (2 * N_TEXTS + 1)
typedef struct arrivals {
    int next, calls, n_done[N_STREAM];
    pd_extraction *outs[N_STREAM];
    pd_error errs[N_STREAM];
} arrivals;

static int arrive(void *user, int wait, const char **text, size_t *len, void **tag)
{
    arrivals *a = user;
    if (a->next == N_STREAM) return -1;
    if (!wait && a->calls++ % 2 == 0) return 0; /* nothing came yet */
    int i = a->next++;
    *text = i < 2 * N_TEXTS ? texts[i % N_TEXTS] : NULL;
    *len = i < 2 * N_TEXTS ? strlen(texts[i % N_TEXTS]) : 3;
    *tag = (void *)(intptr_t)i;
    return 1;
}

static void arrived(void *user, void *tag, pd_extraction *x, const pd_error *e)
{
    arrivals *a = user;
    int i = (int)(intptr_t)tag;
    assert_true(i >= 0 && i < N_STREAM);
    a->n_done[i]++;
    a->outs[i] = x;
    a->errs[i] = *e;
}

static void check_stream(pd_pipeline *p, pd_extraction *const *want)
{
    arrivals a = {0};
    pd_text_source src = {arrive, arrived, &a};
    pd_error err;
    if (pd_pipeline_extract_stream(p, &src, &err)) fail_msg("%s", err.message);
    for (int i = 0; i < N_STREAM; i++) {
        assert_int_equal(a.n_done[i], 1);
        if (i == 2 * N_TEXTS) { /* the NULL text: its own error, no records */
            assert_null(a.outs[i]);
            assert_int_equal(a.errs[i].code, PD_ERR_ARG);
            continue;
        }
        assert_int_equal(a.errs[i].code, PD_OK);
        assert_same(a.outs[i], want[i % N_TEXTS]);
        pd_extraction_free(a.outs[i]);
    }
    assert_int_equal(pd_pipeline_extract_stream(p, NULL, &err), PD_ERR_ARG);
}

/* The pipeline's records of every text, one at a time, many at once and as
 * a stream, against want(i) (the path's own calls). */
static void check_against(pd_pipeline *p, pd_extraction *const *want)
{
    pd_error err, errs[N_TEXTS];
    size_t lens[N_TEXTS];
    pd_extraction *outs[N_TEXTS];
    for (int i = 0; i < N_TEXTS; i++) {
        lens[i] = strlen(texts[i]);
        pd_extraction *x = NULL;
        if (pd_pipeline_extract(p, texts[i], lens[i], &x, &err)) fail_msg("%s", err.message);
        assert_same(x, want[i]);
        pd_extraction_free(x);
    }
    if (pd_pipeline_extract_many(p, texts, lens, N_TEXTS, outs, errs, &err)) fail_msg("%s", err.message);
    for (int i = 0; i < N_TEXTS; i++) {
        assert_int_equal(errs[i].code, PD_OK);
        assert_same(outs[i], want[i]);
        pd_extraction_free(outs[i]);
    }
    check_stream(p, want);
}

static void test_tagger_path(void **state)
{
    (void)state;
    pd_bundle *b = open_bundle("tianchi");
    pd_schema *s = open_schema("tianchi-makeup.yaml");
    pd_error err;
    pd_pipeline *p = pd_pipeline_new(pd_bundle_model(b), s, pd_bundle_head(b), NULL, &err);
    if (!p) fail_msg("%s", err.message);
    assert_int_equal(pd_pipeline_get_path(p), PD_PIPELINE_TAG);
    /* by default a context of one thread a core, texts side by side */
    int32_t cores = pd_cpu_count() < 16 ? pd_cpu_count() : 16;
    assert_int_equal(pd_pipeline_parallel(p), cores);
    assert_int_equal(pd_pipeline_read_ahead(p), cores > 1 ? 32 * cores : 1);
    pd_tag_extractor *tx = pd_tag_extractor_new(pd_bundle_model(b), s, pd_bundle_head(b), &err);
    pd_context *ctx = pd_context_new(pd_bundle_model(b), NULL, &err);
    assert_non_null(tx);
    assert_non_null(ctx);
    pd_extraction *want[N_TEXTS];
    for (int i = 0; i < N_TEXTS; i++)
        if (pd_tag_extract(ctx, tx, texts[i], strlen(texts[i]), &want[i], &err)) fail_msg("%s", err.message);
    assert_true(want[0]->n_records > 0); /* the comparison can fail */
    check_against(p, want);
    pd_pipeline_free(p);
    /* one text at a time, and 3 side by side (more than the threads: a thread each) */
    pd_pipeline_params pp = pd_pipeline_default_params();
    for (int32_t parallel = 1; parallel <= 3; parallel += 2) {
        pp.parallel = parallel;
        pp.n_threads = 2;
        if (!(p = pd_pipeline_new(pd_bundle_model(b), s, pd_bundle_head(b), &pp, &err))) fail_msg("%s", err.message);
        assert_int_equal(pd_pipeline_parallel(p), parallel);
        assert_int_equal(pd_pipeline_read_ahead(p), parallel > 1 ? 32 * parallel : 1);
        check_against(p, want);
        pd_pipeline_free(p);
    }
    for (int i = 0; i < N_TEXTS; i++) pd_extraction_free(want[i]);
    pd_context_free(ctx);
    pd_tag_extractor_free(tx);

    /* generation options do not apply to a tagger head */
    pp = pd_pipeline_default_params();
    pp.extract.max_records = 3;
    assert_null(pd_pipeline_new(pd_bundle_model(b), s, pd_bundle_head(b), &pp, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "max_records"));
    assert_non_null(strstr(err.message, "tagger head"));
    pd_schema_free(s);
    pd_bundle_free(b);
}

/* Each relabelled record's label probabilities and confidence, computed
 * again from the decider's own probabilities of the schema's candidates
 * ("{category}/{polarity}", category-major): each label's marginal, and the
 * span fields' probabilities times the chosen candidate's. */
static void check_relabel_probs(pd_decider *d, const pd_schema *s, const char *text, const pd_extraction *x)
{
    static const char *const cats[] = {"包装", "成分", "尺寸", "服务", "功效", "价格", "气味",
                                       "使用体验", "物流", "新鲜度", "真伪", "整体", "其他"};
    static const char *const pols[] = {"正面", "中性", "负面"};
    char names[39][64];
    const char *cands[39];
    assert_int_equal(pd_schema_n_candidates(s), 39);
    for (int k = 0; k < 39; k++) {
        snprintf(names[k], sizeof names[k], "%s/%s", cats[k / 3], pols[k % 3]);
        cands[k] = names[k];
    }
    pd_error err;
    for (int32_t r = 0; r < x->n_records; r++) {
        const pd_record *rec = &x->records[r];
        char question[512];
        snprintf(question, sizeof question, "属性：%s；观点：%s", rec->values[0], rec->values[1]);
        pd_decision *dec = NULL;
        if (pd_decide(d, text, question, cands, 39, &dec, &err)) fail_msg("%s", err.message);
        int best = 0;
        for (int k = 1; k < 39; k++)
            if (dec->probs[k] > dec->probs[best]) best = k;
        assert_string_equal(rec->values[2], cats[best / 3]);
        assert_string_equal(rec->values[3], pols[best % 3]);
        double cat = 0, pol = 0;
        for (int k = 0; k < 39; k++) {
            cat += k / 3 == best / 3 ? dec->probs[k] : 0;
            pol += k % 3 == best % 3 ? dec->probs[k] : 0;
        }
        double confidence = (double)rec->prob[0] * rec->prob[1] * dec->probs[best];
        if (fabs(rec->prob[2] - cat) > 1e-5 || fabs(rec->prob[3] - pol) > 1e-5 || fabs(rec->confidence - confidence) > 1e-5)
            fail_msg("record %d: probabilities %g %g, confidence %g; recomputed %g %g, %g", r, rec->prob[2], rec->prob[3],
                     rec->confidence, cat, pol, confidence);
        pd_decision_free(dec);
    }
}

/* A pipeline with a confidence floor keeps exactly the records of one
 * without it that reach the floor. */
static void check_floor(const pd_model *m, const pd_schema *s, const pd_head *h, pd_extraction *const *all)
{
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_threads = 2;
    pp.min_confidence = 0.85f;
    pd_error err;
    pd_pipeline *p = pd_pipeline_new(m, s, h, &pp, &err);
    if (!p) fail_msg("%s", err.message);
    int dropped = 0;
    for (int i = 0; i < N_TEXTS; i++) {
        pd_extraction *x = NULL;
        if (pd_pipeline_extract(p, texts[i], strlen(texts[i]), &x, &err)) fail_msg("%s", err.message);
        int32_t k = 0;
        for (int32_t r = 0; r < all[i]->n_records; r++) {
            if (all[i]->records[r].confidence < 0.85f) {
                dropped++;
                continue;
            }
            assert_true(k < x->n_records);
            for (int32_t f = 0; f < x->n_fields; f++)
                assert_string_equal(x->records[k].values[f], all[i]->records[r].values[f]);
            k++;
        }
        assert_int_equal(k, x->n_records);
        pd_extraction_free(x);
    }
    pd_pipeline_free(p);
    for (float bad = -0.5f; bad < 2; bad += 1.75f) { /* -0.5, 1.25 */
        pp.min_confidence = bad;
        assert_null(pd_pipeline_new(m, s, h, &pp, &err));
        assert_int_equal(err.code, PD_ERR_ARG);
        assert_non_null(strstr(err.message, "min_confidence"));
    }
    assert_true(dropped > 0); /* the floor is tested on records it drops */
}

static void test_generation_paths(void **state)
{
    (void)state;
    pd_bundle *b = open_bundle("tianchi-gen");
    pd_schema *s = open_schema("tianchi-makeup.yaml");
    const pd_model *m = pd_bundle_model(b);
    pd_error err;
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_threads = 2;
    pp.parallel = 3;
    pd_pipeline *relabel = pd_pipeline_new(m, s, pd_bundle_head(b), &pp, &err);
    if (!relabel) fail_msg("%s", err.message);
    assert_int_equal(pd_pipeline_get_path(relabel), PD_PIPELINE_RELABEL);
    assert_int_equal(pd_pipeline_parallel(relabel), 3);
    assert_true(pd_pipeline_read_ahead(relabel) >= 3);
    pd_pipeline *plain = pd_pipeline_new(m, s, NULL, NULL, &err);
    if (!plain) fail_msg("%s", err.message);
    assert_int_equal(pd_pipeline_get_path(plain), PD_PIPELINE_GENERATE);
    int32_t cores = pd_cpu_count(); /* the default threads: 2 texts in flight a thread, at most 16 */
    assert_int_equal(pd_pipeline_parallel(plain), 2 * cores < 16 ? 2 * cores : 16);

    pd_extractor *ex = pd_extractor_new(m, s, &err);
    pd_context *ctx = pd_context_new(m, NULL, &err);
    pd_decider *d = pd_decider_new(m, pd_bundle_head(b), NULL, &err);
    assert_non_null(ex);
    assert_non_null(ctx);
    assert_non_null(d);
    pd_extract_params ep = pd_extract_default_params();
    pd_extraction *gen[N_TEXTS], *lab[N_TEXTS];
    for (int i = 0; i < N_TEXTS; i++) {
        if (pd_extract(ctx, ex, texts[i], strlen(texts[i]), &ep, &gen[i], &err) ||
            pd_extract(ctx, ex, texts[i], strlen(texts[i]), &ep, &lab[i], &err) ||
            pd_extraction_decide(d, s, texts[i], lab[i], &err))
            fail_msg("%s", err.message);
    }
    check_against(plain, gen);
    check_against(relabel, lab);
    for (int i = 0; i < N_TEXTS; i++) check_relabel_probs(d, s, texts[i], lab[i]);
    check_floor(m, s, NULL, gen);
    for (int i = 0; i < N_TEXTS; i++) {
        pd_extraction_free(gen[i]);
        pd_extraction_free(lab[i]);
    }
    pd_decider_free(d);
    pd_context_free(ctx);
    pd_extractor_free(ex);
    pd_pipeline_free(relabel);
    pd_pipeline_free(plain);

    /* limits past the schema's are refused before any text */
    pp = pd_pipeline_default_params();
    pp.extract.max_records = 100000;
    assert_null(pd_pipeline_new(m, s, NULL, &pp, &err));
    assert_int_equal(err.code, PD_ERR_LIMIT);
    pp = pd_pipeline_default_params();
    pp.parallel = PD_PIPELINE_PARALLEL_MAX + 1;
    assert_null(pd_pipeline_new(m, s, NULL, &pp, &err));
    assert_int_equal(err.code, PD_ERR_LIMIT);
    pp = pd_pipeline_default_params();
    pp.n_threads = -1;
    assert_null(pd_pipeline_new(m, s, NULL, &pp, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_pipeline_new(NULL, s, NULL, NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_pipeline_new(m, NULL, NULL, NULL, NULL)); /* no error object: still NULL */
    pd_schema_free(s);

    /* a decision head needs a schema with a decide section */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/schemas/data/tianchi-test.yaml", root);
    pd_schema *bare = pd_schema_load(path, &err);
    if (!bare) fail_msg("%s", err.message);
    assert_int_equal(pd_schema_n_candidates(bare), 0);
    assert_null(pd_pipeline_new(m, bare, pd_bundle_head(b), NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "decide"));
    pd_schema_free(bare);
    pd_bundle_free(b);
}

static void test_bad_calls(void **state)
{
    (void)state;
    pd_error err;
    pd_extraction *x = (pd_extraction *)1;
    assert_int_equal(pd_pipeline_extract(NULL, "a", 1, &x, &err), PD_ERR_ARG);
    assert_null(x);
    assert_int_equal(pd_pipeline_extract_many(NULL, NULL, NULL, 0, NULL, NULL, &err), PD_ERR_ARG);
    pd_pipeline_free(NULL);
}

BUNDLED_MAIN("test_pipeline", cmocka_unit_test(test_tagger_path), cmocka_unit_test(test_generation_paths), cmocka_unit_test(test_bad_calls))
