/* The tagger head's constrained Viterbi on hand-made emissions: the BIO
 * rules, tokens inside a character, transitions, start/end and ties; its
 * span probabilities against the sum over every tag sequence, and the
 * posterior span rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "heads.h"

#include <math.h>
#include <string.h>

enum { O, B_A, I_A, B_B, I_B, T = 5, N = 4 };

static float trans[T * T], start[T], end[T];
static pdi_tagger tagger = {.n_spans = 2, .n_tags = T, .trans = trans, .start = start, .end = end};

static void decode(const float em[N][T], const uint8_t *boundary, int32_t *tags)
{
    pd_error err;
    assert_int_equal(pdi_tagger_viterbi(&tagger, &em[0][0], boundary, N, tags, &err), PD_OK);
}

static void reset(void)
{
    memset(trans, 0, sizeof trans);
    memset(start, 0, sizeof start);
    memset(end, 0, sizeof end);
}

static void test_ties_go_to_the_smaller_tag(void **state)
{
    (void)state;
    reset();
    float em[N][T] = {{0}};
    uint8_t all[N] = {1, 1, 1, 1};
    int32_t tags[N];
    decode(em, all, tags);
    for (int i = 0; i < N; i++) assert_int_equal(tags[i], O);
    float v[3] = {1, 1, 0};
    assert_int_equal(pdi_argmax(v, 3), 0);
}

static void test_bio_rules(void **state)
{
    (void)state;
    reset();
    /* I-a wanted everywhere: never first, never after O or another field */
    float em[N][T] = {{0, 0, 5, 0, 0}, {0, 0, 0, 0, 9}, {0, 0, 5, 0, 0}, {0, 2, 0, 0, 0}};
    uint8_t all[N] = {1, 1, 1, 1};
    int32_t tags[N];
    decode(em, all, tags);
    /* best: O (I-a not at 0), then B-b? No: I-b at 1 needs B-b at 0. */
    assert_int_not_equal(tags[0], I_A);
    for (int i = 1; i < N; i++)
        if (tags[i] == I_A) assert_true(tags[i - 1] == B_A || tags[i - 1] == I_A);
        else if (tags[i] == I_B) assert_true(tags[i - 1] == B_B || tags[i - 1] == I_B);
    assert_int_equal(tags[0], B_B); /* 0 + 9 beats O then anything else */
    assert_int_equal(tags[1], I_B);
}

static void test_inside_a_character(void **state)
{
    (void)state;
    reset();
    /* tokens 1 and 3 start inside a character: they continue their predecessor's span although O scores more */
    float em[N][T] = {{0, 3, 0, 0, 0}, {0, 0, -1, 0, 0}, {0, 0, 0, 3, 0}, {0, 0, 0, 0, -1}};
    uint8_t boundary[N] = {1, 0, 1, 0};
    int32_t tags[N];
    decode(em, boundary, tags);
    int32_t want[N] = {B_A, I_A, B_B, I_B};
    assert_memory_equal(tags, want, sizeof want);
    /* after O, a token inside a character is O whatever it wants */
    float em2[N][T] = {{5, -10, -10, -10, -10}, {0, 9, 9, 9, 9}, {5, -10, -10, -10, -10}, {0, 9, 9, 9, 9}};
    decode(em2, boundary, tags);
    for (int i = 0; i < N; i++) assert_int_equal(tags[i], O);
}

static void test_transitions_start_end(void **state)
{
    (void)state;
    reset();
    float em[N][T] = {{0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 1, 0, 0}};
    uint8_t all[N] = {1, 1, 1, 1};
    int32_t tags[N];
    decode(em, all, tags);
    int32_t span[N] = {B_A, I_A, I_A, I_A};
    assert_memory_equal(tags, span, sizeof span);
    start[B_A] = -1.5f; /* B I I I: 4 - 1.5 - 3; B I I O: 3 - 1.5; O B I O: 1; O O O O: 0 */
    end[I_A] = -3;
    decode(em, all, tags);
    int32_t cut[N] = {B_A, I_A, I_A, O};
    assert_memory_equal(tags, cut, sizeof cut);
    start[B_A] = -2; /* B I I O and O B I O tie at 1: at token 2, I-a after B-a (the smaller tag) wins */
    decode(em, all, tags);
    int32_t tie[N] = {O, B_A, I_A, O};
    assert_memory_equal(tags, tie, sizeof tie);
    reset();
    trans[I_A * T + I_A] = -5; /* I-a I-a is costly: B I then B I */
    decode(em, all, tags);
    assert_int_equal(tags[0], B_A);
    assert_int_equal(tags[1], I_A);
    assert_int_not_equal(tags[2], I_A);
}

/* Every tag sequence of N tokens, scored by hand: -inf where not allowed. */
static double sequence_score(const float em[N][T], const uint8_t *boundary, const int32_t *y)
{
    double s = (double)start[y[0]] + (double)em[0][y[0]] + (double)end[y[N - 1]];
    if (!pdi_tagger_allowed(-1, y[0], boundary[0])) return -INFINITY;
    for (int i = 1; i < N; i++) {
        if (!pdi_tagger_allowed(y[i - 1], y[i], boundary[i])) return -INFINITY;
        s += (double)trans[y[i - 1] * T + y[i]] + (double)em[i][y[i]];
    }
    return s;
}

/* p[f][a][b]: the probability that tokens a..b are one span of field f,
 * summed over the N^T sequences. */
static void brute_force(const float em[N][T], const uint8_t *boundary, double p[2][N][N])
{
    memset(p, 0, sizeof(double) * 2 * N * N);
    double z = 0;
    int32_t y[N];
    for (int code = 0; code < 625; code++) {
        for (int i = 0, c = code; i < N; i++, c /= T) y[i] = c % T;
        double w = exp(sequence_score(em, boundary, y));
        z += w;
        for (int a = 0; a < N; a++) {
            if (y[a] != B_A && y[a] != B_B) continue;
            int f = y[a] == B_A ? 0 : 1, b = a;
            while (b + 1 < N && y[b + 1] == 2 + 2 * f) b++;
            p[f][a][b] += w;
        }
    }
    for (int f = 0; f < 2; f++)
        for (int a = 0; a < N; a++)
            for (int b = 0; b < N; b++) p[f][a][b] /= z;
}

static void test_span_probabilities(void **state)
{
    (void)state;
    uint32_t seed = 7;
    uint8_t boundaries[3][N] = {{1, 1, 1, 1}, {1, 0, 1, 0}, {1, 1, 0, 0}};
    for (int trial = 0; trial < 30; trial++) {
        float em[N][T];
        float *all[] = {&em[0][0], trans, start, end};
        int sizes[] = {N * T, T * T, T, T};
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < sizes[k]; i++) {
                seed = seed * 1664525u + 1013904223u;
                all[k][i] = (float)((int)(seed >> 8) % 4001 - 2000) / 1000.0f; /* [-2, 2] */
            }
        const uint8_t *boundary = boundaries[trial % 3];
        double want[2][N][N];
        brute_force(em, boundary, want);
        pdi_tag_lattice lattice;
        pd_error err;
        assert_int_equal(pdi_tag_lattice_init(&lattice, &tagger, &em[0][0], boundary, N, &err), PD_OK);
        for (int f = 0; f < 2; f++)
            for (int a = 0; a < N; a++)
                for (int b = 0; b < N; b++) {
                    double got = b < a ? 0 : exp(pdi_tag_lattice_span_logprob(&lattice, f, a, b));
                    if (fabs(got - want[f][a][b]) > 1e-12)
                        fail_msg("trial %d: span %d %d..%d: %.15g, by enumeration %.15g", trial, f, a, b, got, want[f][a][b]);
                }
        /* the posterior rule at 0.5: exactly the spans at least that probable */
        int32_t tags[N], expect[N] = {0};
        assert_int_equal(pdi_tag_lattice_posterior_tags(&lattice, 0.5, tags, &err), PD_OK);
        for (int f = 0; f < 2; f++)
            for (int a = 0; a < N; a++)
                for (int b = a; b < N; b++)
                    if (want[f][a][b] >= 0.5)
                        for (int i = a; i <= b; i++) expect[i] = (i == a ? 1 : 2) + 2 * f;
        assert_memory_equal(tags, expect, sizeof expect);
        pdi_tag_lattice_free(&lattice);
    }
}

static void test_posterior_overlaps(void **state)
{
    (void)state;
    reset();
    /* field a at 0..1 against field b at 0..1: a low threshold admits both; the more probable wins */
    float em[N][T] = {{0, 3.2f, 0, 3, 0}, {0, 0, 3, 0, 3.1f}, {2, 0, 0, 0, 0}, {2, 0, 0, 0, 0}};
    uint8_t all[N] = {1, 1, 1, 1};
    pdi_tag_lattice lattice;
    pd_error err;
    assert_int_equal(pdi_tag_lattice_init(&lattice, &tagger, &em[0][0], all, N, &err), PD_OK);
    double pa = exp(pdi_tag_lattice_span_logprob(&lattice, 0, 0, 1)), pb = exp(pdi_tag_lattice_span_logprob(&lattice, 1, 0, 1));
    assert_true(pa > pb && pb > 0.01);
    int32_t tags[N];
    assert_int_equal(pdi_tag_lattice_posterior_tags(&lattice, 0.01, tags, &err), PD_OK);
    assert_int_equal(tags[0], B_A);
    assert_int_equal(tags[1], I_A);
    /* out of range and impossible spans */
    assert_true(pdi_tag_lattice_span_logprob(&lattice, 0, 2, 1) == -INFINITY);
    assert_true(pdi_tag_lattice_span_logprob(&lattice, 2, 0, 0) == -INFINITY);
    assert_true(pdi_tag_lattice_span_logprob(&lattice, 0, 0, N) == -INFINITY);
    /* threshold 1: nothing is certain here */
    assert_int_equal(pdi_tag_lattice_posterior_tags(&lattice, 1.0, tags, &err), PD_OK);
    for (int i = 0; i < N; i++) assert_int_equal(tags[i], O);
    pdi_tag_lattice_free(&lattice);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_go_to_the_smaller_tag),
        cmocka_unit_test(test_bio_rules),
        cmocka_unit_test(test_inside_a_character),
        cmocka_unit_test(test_transitions_start_end),
        cmocka_unit_test(test_span_probabilities),
        cmocka_unit_test(test_posterior_overlaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
