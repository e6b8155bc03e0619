/* test_kernels.c - every kernel implementation against a float64 dot of the
 * converted row, for every weight type, and the conversions against hand-worked values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

/* A random row of n weights stored as type t (random bytes are valid data for every type
 * once the scales are set to sane halves). */
static size_t make_row(pd_dtype t, int64_t n, uint8_t *buf)
{
    size_t bytes = pd_dtype_row_bytes(t, n);
    for (size_t i = 0; i < bytes; i++) buf[i] = (uint8_t)(frand() * 127.0f + 128.0f);
    if (t == PD_F32)
        for (int64_t i = 0; i < n; i++) {
            float v = frand();
            memcpy(buf + 4 * i, &v, 4);
        }
    if (t == PD_F16)
        for (int64_t i = 0; i < n; i++) put_u16(buf + 2 * i, pd_f32_to_f16(frand()));
    if (t == PD_BF16)
        for (int64_t i = 0; i < n; i++) put_u16(buf + 2 * i, (uint16_t)(0x3f00 | (buf[2 * i] & 0x7f)) ^ (uint16_t)(buf[2 * i + 1] & 0x80) << 8);
    size_t block = t == PD_Q8_0 ? 34 : t == PD_Q4_0 ? 18 : t == PD_Q4_1 ? 20 : 0;
    for (size_t b = 0; block && b < bytes / block; b++) {
        put_u16(buf + b * block, pd_f32_to_f16(0.01f + 0.02f * fabsf(frand())));
        if (t == PD_Q4_1) put_u16(buf + b * block + 2, pd_f32_to_f16(-0.1f * fabsf(frand())));
    }
    return bytes;
}

static void check_type(const pd_kernels *k, pd_dtype t)
{
    const int64_t sizes[] = {32, 64, 96, 896, 2560};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        uint8_t *row = malloc((size_t)n * 4 + 1);
        float *w = malloc((size_t)n * sizeof(float)), *x = malloc((size_t)n * sizeof(float));
        /* an odd address: stored rows need not be aligned */
        make_row(t, n, row + 1);
        pd_row_to_f32(t, row + 1, w, n);
        double want = 0.0, scale = 0.0;
        for (int64_t i = 0; i < n; i++) {
            x[i] = frand();
            want += (double)w[i] * x[i];
            scale += fabs((double)w[i] * x[i]);
        }
        float got = k->dot_row(t, row + 1, x, n);
        if (fabs(got - want) > 1e-5 * scale + 1e-7)
            fail_msg("%s dot_row %s n=%lld: got %.9g want %.9g", k->name, pd_dtype_name(t), (long long)n, got, want);
        float plain = k->dot(w, x, n);
        assert_true(fabs(plain - want) <= 1e-5 * scale + 1e-7);
        free(row);
        free(w);
        free(x);
    }
}

static void test_dot_row_all_types(void **state)
{
    (void)state;
    const pd_kernels *impls[2] = {pd_kernels_portable(), pd_kernels_select()};
    const pd_dtype types[] = {PD_F32, PD_F16, PD_BF16, PD_Q8_0, PD_Q4_0, PD_Q4_1};
    for (int k = 0; k < 2; k++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) check_type(impls[k], types[t]);
}

/* Hand-worked blocks: Q8_0 d=0.5 q=-3 -> -1.5; Q4_0 d=2, nibble 3 -> 2*(3-8) = -10;
 * Q4_1 d=0.25 m=1, nibble 15 -> 4.75. */
static void test_block_values(void **state)
{
    (void)state;
    uint8_t q8[34] = {0}, q40[18] = {0}, q41[20] = {0};
    float out[32];
    put_u16(q8, 0x3800); /* 0.5 */
    q8[2] = (uint8_t)-3;
    pd_row_to_f32(PD_Q8_0, q8, out, 32);
    assert_true(out[0] == -1.5f && out[1] == 0.0f);
    put_u16(q40, 0x4000); /* 2.0 */
    q40[2] = 0xa3;        /* weight 0: 3, weight 16: 10 */
    pd_row_to_f32(PD_Q4_0, q40, out, 32);
    assert_true(out[0] == -10.0f && out[16] == 4.0f && out[1] == -16.0f);
    put_u16(q41, 0x3400); /* 0.25 */
    put_u16(q41 + 2, 0x3c00); /* 1.0 */
    q41[4] = 0x0f;
    pd_row_to_f32(PD_Q4_1, q41, out, 32);
    assert_true(out[0] == 4.75f && out[16] == 1.0f);
}

static void test_half_conversions(void **state)
{
    (void)state;
    assert_true(pd_f16_to_f32(0x3c00) == 1.0f);
    assert_true(pd_f16_to_f32(0xc000) == -2.0f);
    assert_true(pd_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    assert_true(pd_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(pd_f16_to_f32(0x7c00)));
    assert_true(isnan(pd_f16_to_f32(0x7e00)));
    assert_int_equal(pd_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(pd_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(pd_f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(pd_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(pd_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie to even */
    /* every half survives a round trip through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = pd_f16_to_f32((uint16_t)h);
        if (!isnan(f)) assert_int_equal(pd_f32_to_f16(f), h);
    }
    assert_true(pd_bf16_to_f32(0x3f80) == 1.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot_row_all_types),
        cmocka_unit_test(test_block_values),
        cmocka_unit_test(test_half_conversions),
    };
    return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
