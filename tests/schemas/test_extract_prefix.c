/* Prompt prefix reuse, copy speculation, and several texts in flight
 * (pd_extract_many) in pd_extract: a model extracts
 * the first N reviews on one context, each prompt keeping the cached tokens it
 * shares with the last one (at least MIN_CACHED from the second review on: the
 * schema's prompt before {text}) and drafting 4, 1 or 16 tokens a pass (at 1,
 * 2 and 3 threads), with the records, tokens, stops and final cache length of
 * a cleared cache without speculation, which agree across threads too; some
 * drafts are kept. Run on the random
 * real-vocabulary model, and on the bundled generative model
 * (models/tianchi-gen: BF16 base with its LoRA adapter at runtime, and the
 * same base quantized to Q4_0 at load, whose KV cache is F16). The same
 * reviews through pd_extract_many, 1, 3, 8 and 16 in flight at 1-3
 * threads, give the records of pd_extract.
 *
 * Usage: test_extract_prefix BASE_DIR ADAPTER_DIR|- SCHEMA REVIEWS_CSV N MIN_CACHED [q4_0] */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pocketdec.h"
#include "te_csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_base, *g_adapter, *g_schema, *g_csv;
static int g_n, g_min_cached, g_q4;

/* The second field of the first n rows after the header. */
static char **read_reviews(int n)
{
    FILE *f = fopen(g_csv, "rb");
    assert_non_null(f);
    te_error terr;
    te_csv *csv = te_csv_open(g_csv, f, &terr);
    assert_non_null(csv);
    char **out = calloc((size_t)n, sizeof *out);
    int k = -1; /* the header first */
    while (k < n && te_csv_next(csv, &terr) == TE_CSV_ROW) {
        assert_int_equal(te_csv_n_fields(csv), 2);
        if (k >= 0) out[k] = strdup(te_csv_field(csv, 1, NULL));
        k++;
    }
    assert_int_equal(k, n);
    te_csv_free(csv);
    fclose(f);
    return out;
}

static char *describe(const pd_extraction *x)
{
    char *s = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    fprintf(out, "%d %d %d %d|", x->n_records, x->stats.n_tokens, (int)x->stop, x->stats.n_prompt_tokens);
    for (int32_t r = 0; r < x->n_records; r++)
        for (int32_t j = 0; j < x->n_fields; j++)
            fprintf(out, "%s%c", x->records[r].values[j], j + 1 < x->n_fields ? ',' : '\n');
    fclose(out);
    return s;
}

/* pd_extract's drafting on a review: drafted and kept tokens, passes, and
 * the span copies among the drafted and kept tokens. */
typedef struct drafting {
    int32_t drafted, kept, passes, copies, copies_kept;
} drafting;

static drafting drafting_of(const pd_extraction *x)
{
    return (drafting){x->stats.n_drafted, x->stats.n_accepted, x->stats.n_forward, x->stats.n_copies_drafted, x->stats.n_copies_kept};
}

/* What any review's counts must satisfy at speculate k: kept within drafted,
 * copies within both, at most k drafted a pass, and the copy rule of
 * pd_extract_params.speculate: a copy is drafted only while at least one in
 * 4 of the review's drafted copies was kept, at most one more than it has
 * kept, so it drafts at most 5 x kept + 1 copies in all. */
static void check_drafting(const pd_extraction *x, int k)
{
    assert_true(x->stats.n_accepted <= x->stats.n_drafted && x->stats.n_drafted <= k * x->stats.n_forward);
    assert_true(x->stats.n_copies_kept <= x->stats.n_copies_drafted && x->stats.n_copies_drafted <= x->stats.n_drafted);
    assert_true(x->stats.n_copies_kept <= x->stats.n_accepted);
    if (x->stats.n_copies_drafted > 5 * x->stats.n_copies_kept + 1)
        fail_msg("%d span copies drafted with %d kept: more than the rule allows", x->stats.n_copies_drafted, x->stats.n_copies_kept);
}

/* pd_extract_many with `parallel` texts in flight (the pass context at
 * `threads` threads, the others at 1 with a small batch) gives every review
 * the records, tokens and stop of pd_extract (want[i]); an empty text and a
 * text too long for the context are finished on the way, alone. one[i], when
 * given, is pd_extract's drafting of review i at the same speculate: no more
 * in flight than the pass context's threads, each review drafts as it does
 * there; more, span copies stop while they are in flight, and fewer drafts
 * are rejected. */
static void check_many(const pd_model *m, const pd_extractor *ex, char **reviews, char **want, int threads,
                       int parallel, int speculate, const drafting *one)
{
    pd_error err;
    pd_context **ctxs = calloc((size_t)parallel, sizeof *ctxs);
    for (int k = 0; k < parallel; k++) {
        pd_context_params cp = pd_context_default_params();
        cp.n_ctx = 512;
        cp.n_threads = k ? 1 : threads;
        cp.n_batch = k ? 1 + PD_SPECULATE_MAX : 256;
        ctxs[k] = pd_context_new(m, &cp, &err);
        assert_non_null(ctxs[k]);
    }
    /* the reviews, with an empty text and one too long for the context among them */
    int n = g_n + 2, at_empty = g_n / 3, at_long = g_n / 2;
    const char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    char *big = malloc(4001);
    memset(big, 'a', 4000);
    big[4000] = 0;
    for (int i = 0, r = 0; i < n; i++) {
        texts[i] = i == at_empty ? "" : i == at_long ? big : reviews[r++];
        lens[i] = strlen(texts[i]);
    }
    pd_extraction **outs = calloc((size_t)n, sizeof *outs);
    pd_error *errs = calloc((size_t)n, sizeof *errs);
    pd_extract_params p = pd_extract_default_params();
    p.speculate = speculate;
    assert_int_equal(pd_extract_many(ctxs, parallel, ex, texts, lens, n, &p, outs, errs, &err), PD_ERR_CONTEXT);
    assert_non_null(strstr(err.message, "text "));
    long rejected = 0, rejected_one = 0;
    int pool = pd_context_n_threads(ctxs[0]); /* threads as started: at most the CPUs */
    for (int i = 0, r = 0; i < n; i++) {
        if (i == at_long) {
            assert_null(outs[i]);
            assert_int_equal(errs[i].code, PD_ERR_CONTEXT);
            continue;
        }
        assert_int_equal(errs[i].code, PD_OK);
        assert_non_null(outs[i]);
        if (i == at_empty) {
            assert_int_equal(outs[i]->n_records, 0);
            assert_int_equal(outs[i]->stats.n_forward, 0);
        } else {
            const pd_extraction *x = outs[i];
            check_drafting(x, speculate);
            if (one && parallel <= pool) {
                drafting got = drafting_of(x);
                assert_memory_equal(&got, &one[r], sizeof got);
            }
            rejected += x->stats.n_drafted - x->stats.n_accepted;
            rejected_one += one ? one[r].drafted - one[r].kept : 0;
            char *d = describe(x);
            assert_string_equal(d, want[r++]);
            free(d);
        }
        pd_extraction_free(outs[i]);
    }
    if (one && parallel > pool) assert_true(rejected < rejected_one);
    printf("  %d threads, %d in flight, speculation of %d: %d reviews identical to pd_extract (%ld drafts "
           "rejected%s)\n", threads, parallel, speculate, g_n, rejected,
           one ? parallel <= pool ? ", each review's drafting that of pd_extract" : ", fewer than pd_extract's" : "");
    free(outs);
    free(errs);
    free(big);
    free(texts);
    free(lens);
    for (int k = 0; k < parallel; k++) pd_context_free(ctxs[k]);
    free(ctxs);
}

static void check_model(pd_weight_quant quant, char **reviews)
{
    pd_error err;
    pd_model_params mp = {.quantize = quant};
    pd_model *base = pd_model_load(g_base, &mp, &err);
    if (!base) fail_msg("%s", err.message);
    pd_model *m = base;
    if (strcmp(g_adapter, "-")) {
        pd_adapter *ad = pd_adapter_load(g_adapter, &err);
        if (!ad) fail_msg("%s", err.message);
        m = pd_model_apply_adapters(base, (const pd_adapter *const *)&ad, NULL, 1, PD_APPLY_AUTO, &err);
        if (!m) fail_msg("%s", err.message);
        pd_adapter_free(ad);
    }
    pd_schema *sc = pd_schema_load(g_schema, &err);
    assert_non_null(sc);
    pd_extractor *ex = pd_extractor_new(m, sc, &err);
    assert_non_null(ex);
    char **first = calloc((size_t)g_n, sizeof *first);
    drafting *k4 = calloc((size_t)g_n, sizeof *k4), *k16 = calloc((size_t)g_n, sizeof *k16);
    long records = 0;
    for (int threads = 1; threads <= 3; threads++) {
        pd_context_params cp = pd_context_default_params();
        cp.n_ctx = 512;
        cp.n_threads = threads;
        pd_context *reuse = pd_context_new(m, &cp, &err), *fresh = pd_context_new(m, &cp, &err);
        assert_true(reuse && fresh);
        long cached = 0, drafted = 0, kept = 0, copies = 0, copies_kept = 0, passes = 0, plain_passes = 0, tokens = 0;
        pd_extract_params plain = pd_extract_default_params(), spec = plain;
        plain.speculate = 0;
        spec.speculate = threads == 1 ? 4 : threads == 2 ? 1 : PD_SPECULATE_MAX;
        for (int i = 0; i < g_n; i++) {
            pd_extraction *a = NULL, *b = NULL;
            const char *text = reviews[i];
            assert_int_equal(pd_context_kv_truncate(fresh, 0, &err), PD_OK);
            assert_int_equal(pd_extract(fresh, ex, text, strlen(text), &plain, &a, &err), PD_OK);
            assert_int_equal(pd_extract(reuse, ex, text, strlen(text), &spec, &b, &err), PD_OK);
            assert_int_equal(a->stats.n_cached_tokens, 0);
            assert_int_equal(a->stats.n_drafted, 0);
            check_drafting(b, spec.speculate);
            copies += b->stats.n_copies_drafted;
            copies_kept += b->stats.n_copies_kept;
            assert_int_equal(pd_context_kv_len(reuse), pd_context_kv_len(fresh));
            drafted += b->stats.n_drafted;
            kept += b->stats.n_accepted;
            if (threads != 2) (threads == 1 ? k4 : k16)[i] = drafting_of(b);
            passes += b->stats.n_forward;
            plain_passes += a->stats.n_forward;
            tokens += b->stats.n_tokens;
            if (i > 0 && *text) assert_true(b->stats.n_cached_tokens >= g_min_cached);
            cached += b->stats.n_cached_tokens;
            records += threads == 1 ? a->n_records : 0;
            char *da = describe(a), *db = describe(b);
            assert_string_equal(db, da);
            if (threads == 1) first[i] = da;
            else {
                assert_string_equal(da, first[i]);
                free(da);
            }
            free(db);
            pd_extraction_free(a);
            pd_extraction_free(b);
        }
        printf("  %s, %d threads: %d reviews identical with prefix reuse (%ld prompt tokens reused) and "
               "speculation of %d (%ld of %ld drafted tokens kept, span copies %ld of %ld; %ld tokens in %ld passes, "
               "%ld without)\n",
               quant == PD_QUANT_Q4_0 ? "Q4_0 at load" : "as stored", threads, g_n, cached, spec.speculate, kept,
               drafted, copies_kept, copies, tokens, passes, plain_passes);
        assert_true(kept > 0);
        pd_context_free(reuse);
        pd_context_free(fresh);
    }
    assert_true(records > 0);
    check_many(m, ex, reviews, first, 1, 8, 4, k4);
    check_many(m, ex, reviews, first, 2, 3, 0, NULL);
    check_many(m, ex, reviews, first, 3, 16, PD_SPECULATE_MAX, k16);
    check_many(m, ex, reviews, first, 2, 1, 4, k4);
    check_many(m, ex, reviews, first, 3, 3, PD_SPECULATE_MAX, k16);
    for (int i = 0; i < g_n; i++) free(first[i]);
    free(first);
    free(k4);
    free(k16);
    pd_extractor_free(ex);
    pd_schema_free(sc);
    if (m != base) pd_model_free(m);
    pd_model_free(base);
}

static void test_prefix_reuse(void **state)
{
    (void)state;
    char **reviews = read_reviews(g_n);
    check_model(PD_QUANT_NONE, reviews);
    if (g_q4) check_model(PD_QUANT_Q4_0, reviews);
    for (int i = 0; i < g_n; i++) free(reviews[i]);
    free(reviews);
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: test_extract_prefix BASE_DIR ADAPTER_DIR|- SCHEMA REVIEWS_CSV N MIN_CACHED [q4_0]\n");
        return 2;
    }
    g_base = argv[1];
    g_adapter = argv[2];
    g_schema = argv[3];
    g_csv = argv[4];
    g_n = atoi(argv[5]);
    g_min_cached = atoi(argv[6]);
    g_q4 = argc > 7 && strcmp(argv[7], "q4_0") == 0;
    if (g_n <= 0) {
        fprintf(stderr, "test_extract_prefix: N must be positive\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prefix_reuse)};
    return cmocka_run_group_tests_name("extract-prefix", tests, NULL, NULL);
}
