/* The tagger head's constrained Viterbi on hand-made emissions: the BIO
 * rules, tokens inside a character, transitions, start/end and ties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "heads.h"

#include <string.h>

enum { O, B_A, I_A, B_B, I_B, T = 5, N = 4 };

static float trans[T * T], start[T], end[T];
static pd_tagger tagger = {.n_spans = 2, .n_tags = T, .trans = trans, .start = start, .end = end};

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_go_to_the_smaller_tag),
        cmocka_unit_test(test_bio_rules),
        cmocka_unit_test(test_inside_a_character),
        cmocka_unit_test(test_transitions_start_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
