/* Long reviews read in windows (compose/windows.c through pd_pipeline): the
 * cuts on hand-made texts; a review of more than 20,000 characters made of
 * the dev reviews, whose records must be those of its windows read one by one
 * (merged here by the documented rules, written again), each span at its
 * offsets; the same for generation; and a text the context cannot hold read
 * rather than refused.
 *
 * Usage: test_windows SOURCE_ROOT [CHARS] (the long review's length, 20,000
 * by default; less under the sanitizers) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketdec.h"
#include "bundled.h"
#include "windows.h"

static int32_t long_chars = 20000;

static int32_t n_chars(const char *s, size_t n)
{
    int32_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* The byte offset of character c of s. */
static size_t byte_of(const char *s, int32_t c)
{
    size_t b = 0;
    for (int32_t k = 0; k < c; k++)
        do b++;
        while (((unsigned char)s[b] & 0xC0) == 0x80);
    return b;
}

/* Each window's [char_begin, char_end) and whether it starts and ends inside a word. */
static void check_windows(const char *t, int32_t max_chars, int32_t n_want, const int32_t (*want)[4])
{
    pdi_window *w;
    int32_t n;
    assert_int_equal(pdi_windows_split(t, strlen(t), max_chars, &w, &n), PD_OK);
    assert_int_equal(n, n_want);
    for (int32_t k = 0; k < n; k++) {
        assert_int_equal(w[k].char_begin, want[k][0]);
        assert_int_equal(w[k].char_end, want[k][1]);
        assert_int_equal(w[k].cut_begin, want[k][2]);
        assert_int_equal(w[k].cut_end, want[k][3]);
        assert_int_equal(n_chars(t, w[k].begin), w[k].char_begin);
        assert_int_equal(n_chars(t, w[k].end), w[k].char_end);
    }
    free(w);
}

static void test_cuts(void **state)
{
    (void)state;
    /* at sentence ends; no sentence start in the last quarter: no overlap */
    check_windows("包装很好。物流很快。味道一般。价格还行。", 10, 2, (const int32_t[][4]){{0, 10, 0, 0}, {10, 20, 0, 0}});
    /* short sentences: the next window starts at the earliest one in the last quarter */
    check_windows("好。好。好。好。好。好。好。好。", 8, 3,
                  (const int32_t[][4]){{0, 8, 0, 0}, {6, 14, 0, 0}, {12, 16, 0, 0}});
    /* no sentence end in reach: at clause ends */
    check_windows("颜色很正，粉质细腻，持妆一般", 8, 3, (const int32_t[][4]){{0, 5, 0, 0}, {5, 10, 0, 0}, {10, 14, 0, 0}});
    /* none at all: cuts inside a word, each overlapped by a quarter of a window */
    check_windows("好好好好好好好好好好好好好好好好好好好好", 8, 3,
                  (const int32_t[][4]){{0, 8, 0, 1}, {6, 14, 1, 1}, {12, 20, 1, 0}});
    pdi_window *w;
    int32_t n;
    assert_int_equal(pdi_windows_split("", 0, 8, &w, &n), PD_OK);
    assert_int_equal(n, 0);
    assert_int_equal(pdi_windows_split("好", 3, 0, &w, &n), PD_ERR_ARG);
}

/* ------------------------------------------------ a 20,000-character review */

/* The dev reviews joined, each ended by a full stop, to at least `want` characters. */
static char *long_review(int32_t want)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/data/tianchi/dev_reviews.csv", root);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap), line[4096];
    int32_t chars = 0;
    assert_true(fgets(line, sizeof line, in) != NULL); /* the header */
    while (chars < want) {
        if (!fgets(line, sizeof line, in)) {
            rewind(in);
            assert_true(fgets(line, sizeof line, in) != NULL);
            continue;
        }
        char *text = strchr(line, ',');
        assert_non_null(text);
        text++;
        text[strcspn(text, "\r\n")] = '\0';
        if (*text == '"') continue; /* quoted rows: not worth unquoting here */
        size_t n = strlen(text);
        assert_true(len + n + 4 < cap);
        memcpy(out + len, text, n);
        memcpy(out + len + n, "。", 3);
        len += n + 3;
        chars += n_chars(text, n) + 1;
    }
    out[len] = '\0';
    fclose(in);
    return out;
}

static bool same_spans(const pd_record *a, const pd_record *b, int32_t n_fields)
{
    for (int32_t f = 0; f < n_fields; f++) {
        if (a->start[f] != b->start[f] || a->end[f] != b->end[f]) return false;
        if (a->start[f] < 0 && strcmp(a->values[f], b->values[f])) return false;
    }
    return true;
}

static int32_t first_start(const pd_record *r, int32_t n_fields)
{
    int32_t a = INT32_MAX;
    for (int32_t f = 0; f < n_fields; f++)
        if (r->start[f] >= 0 && r->start[f] < a) a = r->start[f];
    return a;
}

/* The records the documented rules make of the windows read one by one, as
 * pointers into parts[] (offsets moved in place); *n of them. */
static pd_record **merge_by_hand(pd_extraction **parts, const pdi_window *w, int32_t n_windows, int32_t *n)
{
    int32_t cap = 0;
    for (int32_t k = 0; k < n_windows; k++) cap += parts[k]->n_records;
    pd_record **kept = calloc((size_t)cap + 1, sizeof *kept);
    *n = 0;
    for (int32_t k = 0; k < n_windows; k++) {
        pd_extraction *x = parts[k];
        for (int32_t r = 0; r < x->n_records; r++) {
            pd_record *rec = &x->records[r];
            bool cut = false;
            for (int32_t f = 0; f < x->n_fields; f++) {
                if (rec->start[f] < 0) continue;
                cut |= k + 1 < n_windows && w[k].cut_end && rec->end[f] + w[k].char_begin >= w[k].char_end;
                cut |= w[k].cut_begin && rec->start[f] == 0;
            }
            if (cut) continue;
            for (int32_t f = 0; f < x->n_fields; f++)
                if (rec->start[f] >= 0) rec->start[f] += w[k].char_begin, rec->end[f] += w[k].char_begin;
            int32_t q = 0;
            while (q < *n && !same_spans(kept[q], rec, x->n_fields)) q++;
            if (q == *n) kept[(*n)++] = rec;
            else if (rec->confidence > kept[q]->confidence) kept[q] = rec;
        }
    }
    /* text order (stable), then repeats of the values dropped */
    for (int32_t i = 1; i < *n; i++)
        for (int32_t j = i; j > 0 && first_start(kept[j - 1], 4) > first_start(kept[j], 4); j--) {
            pd_record *t = kept[j];
            kept[j] = kept[j - 1];
            kept[j - 1] = t;
        }
    int32_t m = 0;
    for (int32_t i = 0; i < *n; i++) {
        bool seen = false;
        for (int32_t j = 0; j < m && !seen; j++) {
            seen = true;
            for (int32_t f = 0; f < 4; f++) seen &= strcmp(kept[j]->values[f], kept[i]->values[f]) == 0;
        }
        if (!seen) kept[m++] = kept[i];
    }
    *n = m;
    return kept;
}

/* pd_pipeline's records of a long text against its windows read one by one. */
static void check_long(pd_pipeline *p, const char *text, int32_t max_chars)
{
    pd_error err;
    size_t len = strlen(text);
    pd_extraction *whole = NULL;
    if (pd_pipeline_extract(p, text, len, &whole, &err)) fail_msg("%s", err.message);
    pdi_window *w;
    int32_t n_windows, n;
    assert_int_equal(pdi_windows_split(text, len, max_chars, &w, &n_windows), PD_OK);
    assert_int_equal(whole->stats.n_windows, n_windows);
    pd_extraction **parts = calloc((size_t)n_windows, sizeof *parts);
    for (int32_t k = 0; k < n_windows; k++)
        if (pd_pipeline_extract(p, text + w[k].begin, w[k].end - w[k].begin, &parts[k], &err))
            fail_msg("window %d: %s", k, err.message);
    pd_record **want = merge_by_hand(parts, w, n_windows, &n);
    assert_true(n > n_windows / 4); /* records all along the text */
    assert_int_equal(whole->n_records, n);
    for (int32_t r = 0; r < n; r++) {
        const pd_record *got = &whole->records[r];
        for (int32_t f = 0; f < 4; f++) {
            assert_string_equal(got->values[f], want[r]->values[f]);
            assert_int_equal(got->start[f], want[r]->start[f]);
            assert_int_equal(got->end[f], want[r]->end[f]);
            if (got->start[f] < 0) continue;
            size_t b = byte_of(text, got->start[f]), e = byte_of(text, got->end[f]);
            assert_int_equal(e - b, strlen(got->values[f])); /* text[start:end] is the value */
            assert_memory_equal(text + b, got->values[f], e - b);
        }
        assert_true(got->confidence == want[r]->confidence);
    }
    free(want);
    for (int32_t k = 0; k < n_windows; k++) pd_extraction_free(parts[k]);
    free(parts);
    free(w);
    pd_extraction_free(whole);
}

static void test_tagger_long_review(void **state)
{
    (void)state;
    pd_bundle *b = open_bundle("tianchi");
    pd_schema *s = open_schema("tianchi-makeup.yaml");
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_threads = 2;
    pd_error err;
    pd_pipeline *p = pd_pipeline_new(pd_bundle_model(b), s, pd_bundle_head(b), &pp, &err);
    if (!p) fail_msg("%s", err.message);
    if (bundled_arg) long_chars = atoi(bundled_arg);
    char *text = long_review(long_chars);
    check_long(p, text, 49); /* the bundled head's max_chars */
    free(text);
    pd_pipeline_free(p);
    pd_schema_free(s);
    pd_bundle_free(b);
}

static void test_generation_long_review(void **state)
{
    (void)state;
    pd_bundle *b = open_bundle("tianchi-gen");
    pd_schema *s = open_schema("tianchi-makeup.yaml");
    pd_pipeline_params pp = pd_pipeline_default_params();
    pp.n_threads = 2;
    pp.max_chars = 120;
    pd_error err;
    pd_pipeline *p = pd_pipeline_new(pd_bundle_model(b), s, NULL, &pp, &err);
    if (!p) fail_msg("%s", err.message);
    char *text = long_review(1500);
    check_long(p, text, 120);
    /* many at once: a long text among short ones gets the same records */
    const char *texts[3] = {"物流很快，包装也很好", text, "味道一般"};
    size_t lens[3] = {strlen(texts[0]), strlen(text), strlen(texts[2])};
    pd_extraction *outs[3], *one = NULL;
    pd_error errs[3];
    if (pd_pipeline_extract_many(p, texts, lens, 3, outs, errs, &err)) fail_msg("%s", err.message);
    assert_int_equal(pd_pipeline_extract(p, text, lens[1], &one, &err), PD_OK);
    assert_int_equal(outs[1]->n_records, one->n_records);
    for (int32_t r = 0; r < one->n_records; r++)
        for (int32_t f = 0; f < 4; f++) assert_string_equal(outs[1]->records[r].values[f], one->records[r].values[f]);
    assert_int_equal(outs[0]->stats.n_windows, 0);
    for (int i = 0; i < 3; i++) pd_extraction_free(outs[i]);
    pd_extraction_free(one);
    free(text);
    pd_pipeline_free(p);
    /* a text the context cannot hold, with no max_chars: windows that fit, not an error */
    pp.max_chars = 0;
    pp.n_ctx = 128;
    p = pd_pipeline_new(pd_bundle_model(b), s, NULL, &pp, &err);
    if (!p) fail_msg("%s", err.message);
    text = long_review(400);
    pd_extraction *x = NULL;
    if (pd_pipeline_extract(p, text, strlen(text), &x, &err)) fail_msg("%s", err.message);
    assert_true(x->stats.n_windows >= 2);
    assert_true(x->n_records > 0);
    pd_extraction_free(x);
    free(text);
    pd_pipeline_free(p);
    /* max_chars below the fewest a window may hold is refused */
    pp.max_chars = PD_PIPELINE_MIN_WINDOW - 1;
    assert_null(pd_pipeline_new(pd_bundle_model(b), s, NULL, &pp, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    pd_schema_free(s);
    pd_bundle_free(b);
}

BUNDLED_MAIN("test_windows", cmocka_unit_test(test_cuts), cmocka_unit_test(test_tagger_long_review), cmocka_unit_test(test_generation_long_review))
