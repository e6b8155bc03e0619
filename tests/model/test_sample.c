/* test_sample.c - greedy, seeded sampling, top-k, top-p and masks, with hand-worked distributions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "pocketdec.h"

static void test_greedy(void **state)
{
    (void)state;
    float logits[5] = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f};
    pd_sampler_params p = pd_sampler_default_params();
    uint64_t rng = 0;
    assert_int_equal(pd_sample(logits, 5, NULL, &p, &rng), 1); /* ties go to the smaller id */
    uint8_t mask[5] = {1, 0, 1, 0, 1};
    assert_int_equal(pd_sample(logits, 5, mask, &p, &rng), 4);
    uint8_t none[5] = {0};
    assert_int_equal(pd_sample(logits, 5, none, &p, &rng), -1);
    p.temperature = 1.0f;
    assert_int_equal(pd_sample(logits, 5, none, &p, &rng), -1);
    p.top_k = 1;
    assert_int_equal(pd_sample(logits, 5, mask, &p, &rng), 4);
}

/* Frequencies over 20,000 draws match softmax(logits / T) within 0.015. */
static void count_draws(const float *logits, int n, const pd_sampler_params *p, uint64_t seed, double *freq)
{
    uint64_t rng = seed;
    int counts[8] = {0};
    for (int i = 0; i < 20000; i++) {
        int32_t id = pd_sample(logits, n, NULL, p, &rng);
        assert_true(id >= 0 && id < n);
        counts[id]++;
    }
    for (int i = 0; i < n; i++) freq[i] = counts[i] / 20000.0;
}

static void test_temperature_distribution(void **state)
{
    (void)state;
    /* probabilities 0.5, 0.3, 0.2 at T = 1; at T = 2 they are sqrt-ed and renormalised */
    float logits[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    pd_sampler_params p = {1.0f, 0, 1.0f, 7};
    double f[3];
    count_draws(logits, 3, &p, 7, f);
    assert_true(fabs(f[0] - 0.5) < 0.015 && fabs(f[1] - 0.3) < 0.015 && fabs(f[2] - 0.2) < 0.015);
    p.temperature = 2.0f;
    count_draws(logits, 3, &p, 9, f);
    double z = sqrt(0.5) + sqrt(0.3) + sqrt(0.2);
    assert_true(fabs(f[0] - sqrt(0.5) / z) < 0.015 && fabs(f[2] - sqrt(0.2) / z) < 0.015);
}

static void test_top_k_top_p(void **state)
{
    (void)state;
    float logits[4] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
    double f[4];
    pd_sampler_params p = {1.0f, 2, 1.0f, 0};
    count_draws(logits, 4, &p, 3, f); /* top-2: 0.4/0.7 and 0.3/0.7 */
    assert_true(fabs(f[0] - 4.0 / 7) < 0.015 && fabs(f[1] - 3.0 / 7) < 0.015 && f[2] == 0 && f[3] == 0);
    p.top_k = 0;
    p.top_p = 0.8f; /* 0.4 + 0.3 = 0.7 < 0.8, + 0.2 = 0.9 >= 0.8: keep three */
    count_draws(logits, 4, &p, 5, f);
    assert_true(fabs(f[0] - 4.0 / 9) < 0.015 && fabs(f[2] - 2.0 / 9) < 0.015 && f[3] == 0);
}

static void test_seed_reproducible(void **state)
{
    (void)state;
    float logits[6] = {0.3f, 0.1f, 0.2f, 0.5f, 0.4f, 0.0f};
    pd_sampler_params p = {0.9f, 5, 0.95f, 0};
    int32_t a[64], b[64], c[64];
    uint64_t r1 = 123, r2 = 123, r3 = 124;
    for (int i = 0; i < 64; i++) {
        a[i] = pd_sample(logits, 6, NULL, &p, &r1);
        b[i] = pd_sample(logits, 6, NULL, &p, &r2);
        c[i] = pd_sample(logits, 6, NULL, &p, &r3);
    }
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_temperature_distribution),
        cmocka_unit_test(test_top_k_top_p),
        cmocka_unit_test(test_seed_reproducible),
    };
    return cmocka_run_group_tests_name("sample", tests, NULL, NULL);
}
