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
 * With a draft (DRAFT_DIR, a DFlash draft of BASE + ADAPTER), extraction
 * with it as the drafter (pd_extract_drafter_new) gives every review the
 * records, probabilities, offsets, tokens, stop and cache of extraction
 * without it, one at a time (copy speculation on and off, 1 and 2 threads)
 * and several in flight (pd_extract_many), with at least MIN_PER_PASS tokens
 * a verifying pass when it drafts alone; sampling leaves it unused; a draft
 * of another model and bad blocks are refused.
 *
 * Usage: test_extract_prefix BASE_DIR ADAPTER_DIR|- SCHEMA REVIEWS_CSV N MIN_CACHED [q4_0|-] [DRAFT_DIR MIN_PER_PASS] */
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

static const char *g_base, *g_adapter, *g_schema, *g_csv, *g_draft;
static int g_n, g_min_cached, g_q4;
static double g_min_per_pass;

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

/* describe(), with every record's probabilities and offsets (exact bits). */
static char *describe_full(const pd_extraction *x)
{
    char *s = NULL, *head = describe(x);
    size_t n = 0;
    FILE *out = open_memstream(&s, &n);
    fprintf(out, "%s|", head);
    for (int32_t r = 0; r < x->n_records; r++) {
        const pd_record *rec = &x->records[r];
        fprintf(out, "%a %a", (double)rec->confidence, (double)rec->link);
        for (int32_t j = 0; j < x->n_fields; j++) fprintf(out, " %a [%d,%d)", (double)rec->prob[j], rec->start[j], rec->end[j]);
        fprintf(out, "\n");
    }
    fclose(out);
    free(head);
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
    const pd_extraction_stats *st = &x->stats;
    /* the drafter's: within the totals, at most a block a drafter pass, and a
     * drafter pass only where a verifying pass follows */
    assert_true(st->n_draft_kept <= st->n_draft_drafted && st->n_draft_drafted <= st->n_drafted - st->n_copies_drafted);
    assert_true(st->n_draft_kept <= st->n_accepted - st->n_copies_kept && st->n_draft_passes < (st->n_forward ? st->n_forward : 1));
    if (st->n_draft_passes) assert_true(st->n_draft_drafted <= (PD_DRAFTER_BLOCK_MAX - 1) * st->n_draft_passes);
    if (k < 0) return; /* a drafter: its blocks bound the drafts, not k */
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
                       int parallel, int speculate, const drafting *one, const pd_draft *draft)
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
    if (draft) assert_non_null(p.drafter = pd_extract_drafter_new(draft, 0, 1, &err));
    long draft_passes = 0, draft_kept = 0;
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
            check_drafting(x, draft ? -1 : speculate);
            draft_passes += x->stats.n_draft_passes;
            draft_kept += x->stats.n_draft_kept;
            if (one && parallel <= pool) {
                drafting got = drafting_of(x);
                assert_memory_equal(&got, &one[r], sizeof got);
            }
            rejected += x->stats.n_drafted - x->stats.n_accepted;
            rejected_one += one ? one[r].drafted - one[r].kept : 0;
            char *d = draft ? describe_full(x) : describe(x);
            assert_string_equal(d, want[r++]);
            free(d);
        }
        pd_extraction_free(outs[i]);
    }
    if (one && parallel > pool) assert_true(rejected < rejected_one);
    if (draft) assert_true(draft_kept > 0);
    printf("  %d threads, %d in flight, speculation of %d%s: %d reviews identical to pd_extract (%ld drafts "
           "rejected%s; %ld drafter passes, %ld of its tokens kept)\n", threads, parallel, speculate, draft ? " and the draft" : "",
           g_n, rejected, one ? parallel <= pool ? ", each review's drafting that of pd_extract" : ", fewer than pd_extract's" : "",
           draft_passes, draft_kept);
    pd_extract_drafter_free((pd_extract_drafter *)p.drafter);
    free(outs);
    free(errs);
    free(big);
    free(texts);
    free(lens);
    for (int k = 0; k < parallel; k++) pd_context_free(ctxs[k]);
    free(ctxs);
}

/* Extraction with the draft g_draft as the drafter: the records,
 * probabilities and offsets of extraction without it (want: describe_full
 * of a cleared cache without speculation), its tokens, stop, cached prompt
 * tokens and cache; with no copy speculation at least g_min_per_pass tokens
 * a verifying pass. Then many in flight, sampling, and the refusals. */
static void check_draft(const pd_model *base, const pd_model *m, const pd_extractor *ex, char **reviews, char **want)
{
    pd_error err;
    pd_draft *draft = pd_draft_load(g_draft, m, &err);
    if (!draft) fail_msg("%s", err.message);
    for (int threads = 1; threads <= 2; threads++) {
        pd_context_params cp = pd_context_default_params();
        cp.n_ctx = 512;
        cp.n_threads = threads;
        pd_context *plain_ctx = pd_context_new(m, &cp, &err), *draft_ctx = pd_context_new(m, &cp, &err);
        assert_true(plain_ctx && draft_ctx);
        pd_extract_params plain = pd_extract_default_params(), spec = plain;
        plain.speculate = 0;
        spec.speculate = threads == 1 ? 0 : PD_SPECULATE_DEFAULT;
        assert_non_null(spec.drafter = pd_extract_drafter_new(draft, 0, threads, &err));
        long tokens = 0, verify = 0, passes = 0, drafted = 0, kept = 0;
        for (int i = 0; i < g_n; i++) {
            pd_extraction *a = NULL, *b = NULL;
            const char *text = reviews[i];
            assert_int_equal(pd_extract(plain_ctx, ex, text, strlen(text), &plain, &a, &err), PD_OK);
            if (pd_extract(draft_ctx, ex, text, strlen(text), &spec, &b, &err)) fail_msg("%s", err.message);
            char *da = describe_full(a), *db = describe_full(b);
            assert_string_equal(da, want[i]);
            assert_string_equal(db, want[i]);
            assert_int_equal(b->stats.n_cached_tokens, a->stats.n_cached_tokens);
            assert_int_equal(pd_context_kv_len(draft_ctx), pd_context_kv_len(plain_ctx));
            check_drafting(b, -1);
            tokens += b->stats.n_tokens;
            verify += b->stats.n_forward - (b->stats.n_forward > 0); /* the passes after the prompt's */
            passes += b->stats.n_draft_passes;
            drafted += b->stats.n_draft_drafted;
            kept += b->stats.n_draft_kept;
            free(da);
            free(db);
            pd_extraction_free(a);
            pd_extraction_free(b);
        }
        double per_pass = (double)tokens / (double)(verify ? verify : 1);
        printf("  %d threads, speculation of %d and the draft: %d reviews identical to extraction without it, "
               "probabilities and offsets too (%ld tokens in %ld passes after the prompts, %.2f a pass; %ld drafter "
               "passes, %ld of its %ld tokens kept)\n", threads, spec.speculate, g_n, tokens, verify, per_pass, passes,
               kept, drafted);
        assert_true(kept > 0);
        if (spec.speculate == 0 && per_pass < g_min_per_pass)
            fail_msg("%.2f tokens a pass with the draft alone: fewer than %.2f", per_pass, g_min_per_pass);
        /* sampling: drafts verified by the samples, the sampled records of the same seed without them */
        pd_extract_params hot = plain, hot_draft = spec;
        hot.sampler.temperature = hot_draft.sampler.temperature = 0.8f;
        hot.sampler.seed = hot_draft.sampler.seed = 11;
        long hot_drafted = 0, hot_kept = 0;
        for (int i = 0; i < 8 && i < g_n; i++) {
            pd_extraction *a = NULL, *b = NULL;
            assert_int_equal(pd_extract(plain_ctx, ex, reviews[i], strlen(reviews[i]), &hot, &a, &err), PD_OK);
            assert_int_equal(pd_extract(draft_ctx, ex, reviews[i], strlen(reviews[i]), &hot_draft, &b, &err), PD_OK);
            char *da = describe_full(a), *db = describe_full(b);
            assert_string_equal(db, da);
            assert_int_equal(a->stats.n_drafted, 0);
            hot_drafted += b->stats.n_drafted;
            hot_kept += b->stats.n_accepted;
            free(da);
            free(db);
            pd_extraction_free(a);
            pd_extraction_free(b);
        }
        printf("  sampling at 0.8: the records of the same seed without drafts; %ld of %ld drafted tokens kept\n",
               hot_kept, hot_drafted);
        assert_true(hot_kept > 0);
        pd_extract_drafter_free((pd_extract_drafter *)spec.drafter);
        pd_context_free(plain_ctx);
        pd_context_free(draft_ctx);
    }
    check_many(m, ex, reviews, want, 1, 3, 0, NULL, draft);
    check_many(m, ex, reviews, want, 2, 8, PD_SPECULATE_DEFAULT, NULL, draft);
    /* refusals: blocks out of range, a drafter's block set by hand, a draft of another model */
    int32_t size = pd_draft_block_size(draft);
    assert_null(pd_extract_drafter_new(draft, 1, 1, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_extract_drafter_new(draft, size + 1, 1, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "blocks of"));
    pd_extract_params bad = pd_extract_default_params();
    pd_extract_drafter *dr = pd_extract_drafter_new(draft, 2, 1, &err);
    assert_non_null(dr);
    pd_extract_drafter broken = *dr;
    broken.block = 1;
    bad.drafter = &broken;
    pd_context_params cp = pd_context_default_params();
    cp.n_ctx = 512;
    pd_context *ctx = pd_context_new(m, &cp, &err);
    pd_extraction *x = NULL;
    assert_int_equal(pd_extract(ctx, ex, reviews[0], strlen(reviews[0]), &bad, &x, &err), PD_ERR_ARG);
    assert_non_null(strstr(err.message, "drafter"));
    /* the pipeline: one door for a draft (extract.drafter refused, with or without .draft), a draft of another model */
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_threads = 1;
    pp.extract.drafter = dr;
    pd_schema *sc = pd_schema_load(g_schema, &err);
    assert_non_null(sc);
    for (int with_draft = 0; with_draft < 2; with_draft++) {
        pp.draft = with_draft ? draft : NULL;
        assert_null(pd_pipeline_new(m, sc, NULL, &pp, &err));
        assert_int_equal(err.code, PD_ERR_ARG);
        assert_non_null(strstr(err.message, "a draft enters by .draft"));
    }
    if (base != m) { /* the draft loaded for the base alone, used on the adapted model */
        pd_draft *other = pd_draft_load(g_draft, base, &err);
        assert_non_null(other);
        pd_extract_drafter *wrong = pd_extract_drafter_new(other, 0, 1, &err);
        bad.drafter = wrong;
        assert_int_equal(pd_extract(ctx, ex, reviews[0], strlen(reviews[0]), &bad, &x, &err), PD_ERR_ARG);
        assert_non_null(strstr(err.message, "another model"));
        assert_null(x);
        pp.draft = other;
        pp.extract.drafter = NULL;
        assert_null(pd_pipeline_new(m, sc, NULL, &pp, &err));
        assert_int_equal(err.code, PD_ERR_ARG);
        assert_non_null(strstr(err.message, "another model"));
        pd_extract_drafter_free(wrong);
        pd_draft_free(other);
    }
    pd_schema_free(sc);
    pd_context_free(ctx);
    pd_extract_drafter_free(dr);
    pd_draft_free(draft);
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
    char **first = calloc((size_t)g_n, sizeof *first), **full = calloc((size_t)g_n, sizeof *full);
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
            if (threads == 1) full[i] = describe_full(a);
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
    check_many(m, ex, reviews, first, 1, 8, 4, k4, NULL);
    check_many(m, ex, reviews, first, 2, 3, 0, NULL, NULL);
    check_many(m, ex, reviews, first, 3, 16, PD_SPECULATE_MAX, k16, NULL);
    check_many(m, ex, reviews, first, 2, 1, 4, k4, NULL);
    check_many(m, ex, reviews, first, 3, 3, PD_SPECULATE_MAX, k16, NULL);
    if (g_draft) check_draft(base, m, ex, reviews, full);
    for (int i = 0; i < g_n; i++) free(first[i]);
    for (int i = 0; i < g_n; i++) free(full[i]);
    free(first);
    free(full);
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
        fprintf(stderr, "usage: test_extract_prefix BASE_DIR ADAPTER_DIR|- SCHEMA REVIEWS_CSV N MIN_CACHED [q4_0|-] "
                        "[DRAFT_DIR MIN_PER_PASS]\n");
        return 2;
    }
    g_base = argv[1];
    g_adapter = argv[2];
    g_schema = argv[3];
    g_csv = argv[4];
    g_n = atoi(argv[5]);
    g_min_cached = atoi(argv[6]);
    g_q4 = argc > 7 && strcmp(argv[7], "q4_0") == 0;
    g_draft = argc > 9 ? argv[8] : NULL;
    g_min_per_pass = argc > 9 ? atof(argv[9]) : 0;
    if (g_n <= 0) {
        fprintf(stderr, "test_extract_prefix: N must be positive\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_prefix_reuse)};
    return cmocka_run_group_tests_name("extract-prefix", tests, NULL, NULL);
}
