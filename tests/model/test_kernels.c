/* test_kernels.c - every kernel implementation against a float64 dot of the
 * converted row, for every weight type; the integer kernels bitwise against
 * their reference order; the conversions against hand-worked values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
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
static size_t make_row(pdi_dtype t, int64_t n, uint8_t *buf)
{
    size_t bytes = pdi_dtype_row_bytes(t, n);
    for (size_t i = 0; i < bytes; i++) buf[i] = (uint8_t)(frand() * 127.0f + 128.0f);
    if (t == PD_F32)
        for (int64_t i = 0; i < n; i++) {
            float v = frand();
            memcpy(buf + 4 * i, &v, 4);
        }
    if (t == PD_F16)
        for (int64_t i = 0; i < n; i++) put_u16(buf + 2 * i, pdi_f32_to_f16(frand()));
    if (t == PD_BF16)
        for (int64_t i = 0; i < n; i++) put_u16(buf + 2 * i, (uint16_t)(0x3f00 | (buf[2 * i] & 0x7f)) ^ (uint16_t)(buf[2 * i + 1] & 0x80) << 8);
    size_t block = t == PD_Q8_0 ? 34 : t == PD_Q4_0 ? 18 : t == PD_Q4_1 ? 20 : t == PD_Q4_64 ? 36 : 0;
    for (size_t b = 0; block && b < bytes / block; b++) {
        put_u16(buf + b * block, pdi_f32_to_f16(0.01f + 0.02f * fabsf(frand())));
        if (pdi_dtype_has_min(t)) put_u16(buf + b * block + 2, pdi_f32_to_f16(-0.1f * fabsf(frand())));
    }
    return bytes;
}

static void check_type(const pdi_kernels *k, pdi_dtype t)
{
    const int64_t sizes[] = {32, 64, 96, 896, 2560};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        if (n % pdi_dtype_block_len(t)) continue;
        uint8_t *row = malloc((size_t)n * 4 + 1);
        float *w = malloc((size_t)n * sizeof(float)), *x = malloc((size_t)n * sizeof(float));
        /* an odd address: stored rows need not be aligned */
        make_row(t, n, row + 1);
        pdi_row_to_f32(t, row + 1, w, n);
        double want = 0.0, scale = 0.0;
        for (int64_t i = 0; i < n; i++) {
            x[i] = frand();
            want += (double)w[i] * x[i];
            scale += fabs((double)w[i] * x[i]);
        }
        float got = k->dot_row(t, row + 1, x, n);
        if (fabs(got - want) > 1e-5 * scale + 1e-7)
            fail_msg("%s dot_row %s n=%lld: got %.9g want %.9g", k->name, pdi_dtype_name(t), (long long)n, got, want);
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
    const pdi_kernels *impls[4] = {pdi_kernels_portable(), pdi_kernels_select(), pdi_kernels_avx2(), pdi_kernels_avx512()};
    const pdi_dtype types[] = {PD_F32, PD_F16, PD_BF16, PD_Q8_0, PD_Q4_0, PD_Q4_1, PD_Q4_64};
    for (int k = 0; k < 4; k++)
        for (size_t t = 0; impls[k] && t < sizeof types / sizeof types[0]; t++) check_type(impls[k], types[t]);
}

/* widen gives pdi_row_to_f32's values exactly, for every type, at odd
 * addresses and lengths. */
static void test_widen(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon(),
                                 pdi_kernels_select()};
    const pdi_dtype types[] = {PD_F32, PD_F16, PD_BF16, PD_Q8_0, PD_Q4_0, PD_Q4_1, PD_Q4_64};
    uint8_t row[4 * 192 + 1];
    float want[192], got[192];
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        for (int64_t n = pdi_dtype_block_len(types[k]), step = n > 1 ? n : 13; n <= 192; n += step) {
            make_row(types[k], n, row + 1);
            pdi_row_to_f32(types[k], row + 1, want, n);
            for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
                if (!impls[m]) continue;
                impls[m]->widen(types[k], row + 1, got, n);
                if (memcmp(got, want, (size_t)n * sizeof(float)))
                    fail_msg("%s widen %s n=%lld differs", impls[m]->name, pdi_dtype_name(types[k]), (long long)n);
            }
        }
}

/* fmatmul against a float64 product of the widened rows, for every float
 * weight type, tile shape and leftover (rows 1..7, tokens 1..9, columns not a
 * multiple of 8), rows at odd addresses; and bit for bit against the same
 * table's dot_row, whatever the tile: a pass of several rows (speculation's
 * verifying passes, sequences decoded together) must give each row the
 * logits a pass of that row alone gives, and a sparse head dots rows. */
static void test_fmatmul(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon(),
                                 pdi_kernels_select()};
    const pdi_dtype types[] = {PD_F32, PD_F16, PD_BF16};
    const int64_t n = 101, max_rows = 7, max_toks = 17, ys = 11;
    float x[17 * 101], w[7 * 101], y[17 * 11];
    for (int64_t i = 0; i < max_toks * n; i++) x[i] = frand();
    for (size_t k = 0; k < 3; k++) {
        size_t rb = pdi_dtype_row_bytes(types[k], n);
        uint8_t *buf = malloc(rb * (size_t)max_rows + 1), *rows = buf + 1;
        for (int64_t r = 0; r < max_rows; r++) {
            make_row(types[k], n, rows + r * rb);
            pdi_row_to_f32(types[k], rows + r * rb, w + r * n, n);
        }
        for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
            if (!impls[m]) continue;
            for (int64_t nr = 1; nr <= max_rows; nr++)
                for (int64_t t1 = 1; t1 <= max_toks; t1++) {
                    int64_t t0 = t1 > 4 ? 2 : 0;
                    memset(y, 0, sizeof y);
                    impls[m]->fmatmul(types[k], rows, rb, nr, n, x, n, t0, t1, y, ys);
                    for (int64_t t = 0; t < max_toks; t++)
                        for (int64_t r = 0; r < ys; r++) {
                            bool inside = t >= t0 && t < t1 && r < nr;
                            double want = 0.0, scale = 0.0;
                            for (int64_t c = 0; inside && c < n; c++) {
                                want += (double)w[r * n + c] * x[t * n + c];
                                scale += fabs((double)w[r * n + c] * x[t * n + c]);
                            }
                            if (inside) {
                                float dot = impls[m]->dot_row(types[k], rows + r * rb, x + t * n, n);
                                if (memcmp(&dot, &y[t * ys + r], sizeof dot))
                                    fail_msg("%s fmatmul %s rows %lld tokens [%lld, %lld): y[%lld][%lld] = %.9g, "
                                             "dot_row %.9g",
                                             impls[m]->name, pdi_dtype_name(types[k]), (long long)nr, (long long)t0,
                                             (long long)t1, (long long)t, (long long)r, y[t * ys + r], dot);
                            }
                            if (fabs(y[t * ys + r] - want) > 1e-6 * scale)
                                fail_msg("%s fmatmul %s rows %lld tokens [%lld, %lld): y[%lld][%lld] = %.9g, want %.9g",
                                         impls[m]->name, pdi_dtype_name(types[k]), (long long)nr, (long long)t0,
                                         (long long)t1, (long long)t, (long long)r, y[t * ys + r], want);
                        }
                }
        }
        free(buf);
    }
}

/* ------------------------------------------------- integer dot products */

typedef struct {
    pdi_qact a;
    float *x;
} qact_buf;

static void qact_new(qact_buf *b, int64_t n_tok, int64_t cols)
{
    b->x = malloc((size_t)(n_tok * cols) * sizeof(float));
    for (int64_t i = 0; i < n_tok * cols; i++) b->x[i] = frand() * (i % 7 == 0 ? 4.0f : 1.0f);
    size_t ds = (size_t)((cols / 32 + 1) * n_tok + 8) * sizeof(float);
    b->a = (pdi_qact){n_tok, n_tok, cols, malloc((size_t)(n_tok * cols)), calloc(1, ds), calloc(1, ds),
                     malloc((size_t)(n_tok * cols / 32) * sizeof(int32_t))};
    pdi_quantize_act(&b->a, b->x, cols, 0, n_tok, 0, cols / 32);
}

static void qact_free(qact_buf *b)
{
    free(b->x);
    free(b->a.q);
    free(b->a.d);
    free(b->a.s);
    free(b->a.block_bias);
}

/* Each activation is within half a step of its block's scale; s = d * sum(q);
 * block_bias -8 times the block's sum; the largest of a block maps to +-127. */
static void test_quantize_act(void **state)
{
    (void)state;
    qact_buf b;
    qact_new(&b, 3, 96);
    for (int64_t t = 0; t < 3; t++)
        for (int64_t blk = 0; blk < 3; blk++) {
            float d = b.a.d[blk * 3 + t];
            int sum = 0, top = 0;
            for (int j = 0; j < 32; j++) {
                int64_t i = t * 96 + blk * 32 + j;
                assert_true(fabsf(b.x[i] - d * b.a.q[i]) <= 0.5f * d * 1.0001f);
                sum += b.a.q[i];
                if (abs(b.a.q[i]) > top) top = abs(b.a.q[i]);
            }
            assert_int_equal(top, 127);
            assert_true(b.a.s[blk * 3 + t] == d * (float)sum);
            assert_int_equal(b.a.block_bias[blk * 3 + t], -8 * sum);
        }
    /* a block of zeros has scale 0 and zeros */
    memset(b.x, 0, 32 * sizeof(float));
    pdi_quantize_act(&b.a, b.x, 96, 0, 1, 0, 3);
    assert_true(b.a.d[0] == 0.0f && b.a.q[5] == 0);
    qact_free(&b);
}

/* Every table's quantize_act gives pdi_quantize_act's bits, including ties at
 * half a step, NaN, infinities, -0, subnormals and an all-zero block, in a
 * row of 21 blocks (kernels may take 16 blocks at a time, then the rest). */
static void test_quantize_act_tables(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon(),
                                 pdi_kernels_select()};
    const int64_t n_tok = 5, cols = 21 * 32, nb = cols / 32;
    float *x = malloc((size_t)(n_tok * cols) * sizeof(float));
    for (int64_t i = 0; i < n_tok * cols; i++) x[i] = frand() * 3.0f;
    /* token 0: block 0 has max 127, so id = 1 and k + 0.5 are exact ties */
    x[0] = 127.0f;
    const float ties[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 0.49999997f, -0.49999997f};
    for (int k = 0; k < 10; k++) x[1 + k] = ties[k];
    x[40] = NAN;                  /* block 1: NaN among finite values */
    x[70] = INFINITY;             /* block 2: an infinity */
    x[71] = -INFINITY;
    for (int j = 96; j < 128; j++) x[j] = 0.0f; /* block 3: zeros, one -0 */
    x[100] = -0.0f;
    x[130] = 1e-40f; /* block 4: subnormals only */
    x[131] = -3e-39f;
    for (int j = 132; j < 160; j++) x[j] = 0.0f;
    x[17 * 32 + 5] = NAN; /* past the first 16 blocks: a NaN, an all-zero block */
    for (int j = 19 * 32; j < 20 * 32; j++) x[j] = 0.0f;
    size_t ds = (size_t)((nb + 1) * n_tok + 8) * sizeof(float), bs = (size_t)(nb * n_tok) * sizeof(int32_t);
    pdi_qact want = {n_tok, n_tok, cols, malloc((size_t)(n_tok * cols)), calloc(1, ds), calloc(1, ds), malloc(bs)};
    pdi_qact got = {n_tok, n_tok, cols, malloc((size_t)(n_tok * cols)), calloc(1, ds), calloc(1, ds), malloc(bs)};
    pdi_quantize_act(&want, x, cols, 0, n_tok, 0, nb);
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++) {
        if (!impls[i]) continue;
        memset(got.q, 0x55, (size_t)(n_tok * cols));
        /* tokens, then blocks, a range at a time: each block is quantized on its own */
        impls[i]->quantize_act(&got, x, cols, 0, 2, 0, nb);
        impls[i]->quantize_act(&got, x, cols, 2, n_tok, 0, 7);
        impls[i]->quantize_act(&got, x, cols, 2, n_tok, 7, nb);
        for (int64_t j = 0; j < n_tok * cols; j++)
            if (got.q[j] != want.q[j])
                fail_msg("%s quantize_act: q[%lld] = %d, want %d (x %.9g)", impls[i]->name, (long long)j, got.q[j],
                         want.q[j], x[j]);
        assert_memory_equal(got.d, want.d, (size_t)(nb * n_tok) * sizeof(float));
        assert_memory_equal(got.s, want.s, (size_t)(nb * n_tok) * sizeof(float));
        assert_memory_equal(got.block_bias, want.block_bias, bs);
    }
    /* the ties round away from zero, as roundf does */
    assert_int_equal(want.q[1], 1);
    assert_int_equal(want.q[2], -1);
    assert_int_equal(want.q[5], 3);
    assert_int_equal(want.q[8], -127);
    free(x);
    free(want.q);
    free(want.d);
    free(want.s);
    free(got.q);
    free(got.d);
    free(got.s);
    free(want.block_bias);
    free(got.block_bias);
}

/* The AVX-512 table's exp_sum and silu_mul give the AVX2 table's bits (the
 * same exp lane by lane, the sums in its order), at every length's tail. */
static void test_x86_exp_bits(void **state)
{
    (void)state;
    const pdi_kernels *a = pdi_kernels_avx2(), *b = pdi_kernels_avx512();
    if (!a || !b) return; /* not an x86 CPU with both tables */
    enum { N = 140 };
    float s[N], g[N], u[N];
    for (int i = 0; i < N; i++) {
        s[i] = -8.0f * fabsf(frand());
        g[i] = 12.0f * frand();
        u[i] = frand();
    }
    s[3] = -INFINITY;
    s[20] = -90.0f; /* past exp's range: 0 */
    g[5] = 95.0f;   /* silu of a large input, and of a large negative one */
    g[6] = -95.0f;
    for (int n = 0; n <= N; n++) {
        float sa[N], sb[N], ga[N], gb[N];
        memcpy(sa, s, sizeof s);
        memcpy(sb, s, sizeof s);
        memcpy(ga, g, sizeof g);
        memcpy(gb, g, sizeof g);
        float suma = a->exp_sum(sa, n, 0.5f), sumb = b->exp_sum(sb, n, 0.5f);
        if (memcmp(&suma, &sumb, sizeof suma) || memcmp(sa, sb, sizeof sa))
            fail_msg("exp_sum of %d: %s %.9g, %s %.9g", n, a->name, suma, b->name, sumb);
        a->silu_mul(ga, u, n);
        b->silu_mul(gb, u, n);
        assert_memory_equal(ga, gb, sizeof ga);
    }
}

/* The attention kernels: key_scores and value_mix over F32 and F16 rows
 * against float64 (19 rows: two blocks of eight and three more; rows of 75
 * and 150 columns, 160 apart: column tails and more than one 64-column
 * piece), exp_sum within a few ulp of expf (exactly 0 for a masked -inf). */
static void test_attention_kernels(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon(),
                                 pdi_kernels_select()};
    enum { NK = 19, STRIDE = 160 };
    float k[NK * STRIDE], kw[NK * STRIDE], q[STRIDE], p[NK], out[NK], y[STRIDE + 1];
    uint16_t kh[NK * STRIDE];
    for (int64_t i = 0; i < NK * STRIDE; i++) {
        k[i] = frand();
        kh[i] = pdi_f32_to_f16(k[i]);
        kw[i] = pdi_f16_to_f32(kh[i]);
    }
    for (int64_t i = 0; i < STRIDE; i++) q[i] = frand();
    float q3[3 * STRIDE]; /* three heads; the second is q */
    for (int64_t i = 0; i < 3 * STRIDE; i++) q3[i] = i / STRIDE == 1 ? q[i % STRIDE] : frand();
    for (int64_t j = 0; j < NK; j++) p[j] = frand();
    float p7[7 * NK]; /* seven heads' weights (a KV head's group: kernels may take 4, then 3); the second is p */
    for (int64_t j = 0; j < 7 * NK; j++) p7[j] = j / NK == 1 ? p[j % NK] : frand();
    float s[203], e[203];
    for (int i = 0; i < 203; i++) s[i] = -40.0f * fabsf(frand());
    s[0] = 0.0f;
    s[7] = -INFINITY;
    s[100] = -86.9f;
    s[101] = -87.5f;
    s[202] = -INFINITY; /* in the tail */
    memcpy(e, s, sizeof s);
    float want_sum = pdi_exp_sum(e, 203, 0.0f);
    for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
        const pdi_kernels *kt = impls[m];
        if (!kt) continue;
        /* the cached rows as floats and as halves (the halves' values are exact floats) */
        for (int half = 0; half < 2; half++)
            for (int64_t n = 75; n <= 150; n += 75) {
                pdi_dtype kvt = half ? PD_F16 : PD_F32;
                const float *kv = half ? kw : k;
                const void *rows = half ? (const void *)kh : (const void *)k;
                size_t stride = STRIDE * (half ? 2 : 4);
                kt->key_scores(kvt, rows, stride, NK, q, STRIDE, 1, n, 0.5f, out, NK);
                /* three heads at once: each head's scores the bits of it alone */
                float out3[3 * NK], one[NK];
                kt->key_scores(kvt, rows, stride, NK, q3, STRIDE, 3, n, 0.5f, out3, NK);
                for (int h = 0; h < 3; h++) {
                    kt->key_scores(kvt, rows, stride, NK, q3 + h * STRIDE, STRIDE, 1, n, 0.5f, one, NK);
                    assert_memory_equal(out3 + h * NK, one, sizeof one);
                }
                assert_memory_equal(out3 + NK, out, sizeof out); /* head 1 is q */
                for (int64_t j = 0; j < NK; j++) {
                    double want = 0.0, scale = 0.0;
                    for (int64_t c = 0; c < n; c++) {
                        want += 0.5 * q[c] * kv[j * STRIDE + c];
                        scale += fabs(0.5 * q[c] * kv[j * STRIDE + c]);
                    }
                    if (fabs(out[j] - want) > 1e-6 * scale)
                        fail_msg("%s key_scores %s n=%lld key %lld: %.9g, want %.9g", kt->name, pdi_dtype_name(kvt),
                                 (long long)n, (long long)j, out[j], want);
                }
                for (int64_t c = 0; c <= STRIDE; c++) y[c] = (float)c;
                kt->value_mix(kvt, rows, stride, NK, p, NK, 1, n, y, STRIDE + 1);
                /* seven heads at once (the second with p): each the bits of it alone */
                float y7[7 * (STRIDE + 1)], y1[STRIDE + 1];
                for (int64_t c = 0; c < 7 * (STRIDE + 1); c++) y7[c] = (float)(c % (STRIDE + 1));
                kt->value_mix(kvt, rows, stride, NK, p7, NK, 7, n, y7, STRIDE + 1);
                for (int h = 0; h < 7; h++) {
                    for (int64_t c = 0; c <= STRIDE; c++) y1[c] = (float)c;
                    kt->value_mix(kvt, rows, stride, NK, p7 + h * NK, NK, 1, n, y1, STRIDE + 1);
                    assert_memory_equal(y7 + h * (STRIDE + 1), y1, sizeof y1);
                }
                assert_memory_equal(y7 + STRIDE + 1, y, sizeof y);
                for (int64_t c = 0; c <= STRIDE; c++) {
                    double want = c, scale = fabs(want);
                    for (int64_t j = 0; c < n && j < NK; j++) {
                        want += (double)p[j] * kv[j * STRIDE + c];
                        scale += fabs((double)p[j] * kv[j * STRIDE + c]);
                    }
                    if (fabs(y[c] - want) > 1e-6 * scale)
                        fail_msg("%s value_mix %s n=%lld column %lld: %.9g, want %.9g", kt->name, pdi_dtype_name(kvt),
                                 (long long)n, (long long)c, y[c], want);
                }
            }
        float got[203];
        memcpy(got, s, sizeof s);
        float sum = kt->exp_sum(got, 203, 0.0f);
        assert_true(fabsf(sum - want_sum) <= 1e-6f * want_sum);
        assert_true(got[7] == 0.0f && got[202] == 0.0f && got[0] == 1.0f);
        for (int i = 0; i < 203; i++)
            if (fabsf(got[i] - e[i]) > 4.8e-7f * e[i] + 1e-37f)
                fail_msg("%s exp_sum: exp(%.9g) = %.9g, expf %.9g", kt->name, s[i], got[i], e[i]);
    }
}

/* The reference order computes the right number: against a float64 dot of the
 * converted row with the dequantized activations. */
static void test_qdot_reference_value(void **state)
{
    (void)state;
    const pdi_dtype types[] = {PD_Q8_0, PD_Q4_0, PD_Q4_1, PD_Q4_64};
    for (size_t k = 0; k < 4; k++)
        for (int64_t n = 2 * pdi_dtype_block_len(types[k]); n <= 4096; n *= 4) {
            uint8_t *row = malloc((size_t)n * 2);
            float *w = malloc((size_t)n * sizeof(float));
            make_row(types[k], n, row);
            pdi_row_to_f32(types[k], row, w, n);
            qact_buf b;
            qact_new(&b, 1, n);
            double want = 0.0, scale = 0.0;
            for (int64_t i = 0; i < n; i++) {
                double xv = (double)b.a.d[i / 32] * b.a.q[i];
                want += w[i] * xv;
                scale += fabs(w[i] * xv);
            }
            float got = pdi_qdot_reference(types[k], row, &b.a, 0);
            if (fabs(got - want) > 1e-5 * scale)
                fail_msg("%s n=%lld: got %.9g want %.9g", pdi_dtype_name(types[k]), (long long)n, got, want);
            qact_free(&b);
            free(row);
            free(w);
        }
}

/* Every implementation, every tile shape and every split of rows and tokens
 * gives the reference's bits: the same integers, scaled and summed in the same
 * order. */
static void check_qmatmul(pdi_dtype type, int64_t cols, int64_t rows, int64_t toks)
{
    const pdi_kernels *impls[4] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_neon(), pdi_kernels_avx512()};
    const int64_t ys = rows + 4;
    size_t rb = pdi_dtype_row_bytes(type, cols);
    uint8_t *w = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) make_row(type, cols, w + r * rb);
    qact_buf b;
    qact_new(&b, toks, cols);
    float *want = calloc((size_t)(toks * ys), sizeof(float)), *got = calloc((size_t)(toks * ys), sizeof(float));
    for (int64_t t = 0; t < toks; t++)
        for (int64_t r = 0; r < rows; r++) want[t * ys + r] = pdi_qdot_reference(type, w + r * rb, &b.a, t);
    /* uneven pieces: a single row, odd and even counts, a short tail */
    int64_t t2 = toks < 2 ? toks : 2, t3 = toks < 3 ? toks : 3;
    const int64_t rcut[] = {0, 1, rows / 2, rows - 2, rows}, tcut[] = {0, t2, t3, toks - 1 > t3 ? toks - 1 : t3, toks};
    int tested = 0;
    for (int i = 0; i < 4; i++) {
        if (!impls[i]) continue;
        tested++;
        /* all at once, then in the pieces */
        memset(got, 0, (size_t)(toks * ys) * sizeof(float));
        impls[i]->qmatmul(type, w, rb, rows, &b.a, 0, toks, got, ys);
        for (int64_t t = 0; t < toks; t++)
            for (int64_t r = 0; r < rows; r++)
                if (memcmp(&got[t * ys + r], &want[t * ys + r], sizeof(float)))
                    fail_msg("%s %s cols %lld row %lld token %lld: %.9g, reference %.9g", impls[i]->name,
                             pdi_dtype_name(type), (long long)cols, (long long)r, (long long)t, got[t * ys + r],
                             want[t * ys + r]);
        memset(got, 0, (size_t)(toks * ys) * sizeof(float));
        for (int ri = 0; ri < 4; ri++)
            for (int ti = 0; ti < 4; ti++)
                impls[i]->qmatmul(type, w + rcut[ri] * rb, rb, rcut[ri + 1] - rcut[ri], &b.a, tcut[ti], tcut[ti + 1],
                                  got + rcut[ri], ys);
        for (int64_t t = 0; t < toks; t++)
            for (int64_t r = 0; r < rows; r++) assert_memory_equal(&got[t * ys + r], &want[t * ys + r], sizeof(float));
        printf("  %s %s %lld x %lld x %lld: every (row, token) bitwise equal to the reference\n", impls[i]->name,
               pdi_dtype_name(type), (long long)rows, (long long)cols, (long long)toks);
    }
    assert_true(tested >= 1);
    qact_free(&b);
    free(w);
    free(want);
    free(got);
}

static void test_qmatmul_bitwise(void **state)
{
    (void)state;
    const pdi_dtype types[] = {PD_Q8_0, PD_Q4_0, PD_Q4_1, PD_Q4_64};
    /* rows x tokens: 4-row panels, a last pair, a last single row; 8-token
     * tiles and leftovers of 4, 2 and 1; one token (decode); an odd number
     * of blocks of 64 */
    const int64_t shapes[][3] = {{160, 13, 11}, {192, 13, 11}, {896, 37, 1}, {896, 37, 9}, {2560, 37, 15}};
    for (size_t k = 0; k < 4; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (shapes[s][0] % pdi_dtype_block_len(types[k]) == 0)
                check_qmatmul(types[k], shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* Block weights interleaved n rows at a time: the packed rows read back as
 * the plain ones; the reference order against a float64 dot; every table
 * whose qmatmul_x takes groups of n, at every split of whole groups and of
 * tokens, bitwise equal to the reference; and within rounding of the plain
 * layout's product. */
static void check_x(pdi_dtype type, int n, int64_t cols, int64_t rows, int64_t toks)
{
    const pdi_kernels *impls[4] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_neon(), pdi_kernels_avx512()};
    const int64_t ys = rows + 4;
    const char *name = pdi_dtype_name(type);
    size_t rb = pdi_dtype_row_bytes(type, cols), bb = pdi_dtype_row_bytes(type, pdi_dtype_block_len(type));
    size_t vals = pdi_dtype_has_min(type) ? 4 : 2, nv = bb - vals;
    uint8_t *plain = malloc(rb * (size_t)rows), *w = malloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) make_row(type, cols, plain + r * rb);
    /* the ends of the range: one row all 0 nibbles (Q4_0 -8 d) or -128 (Q8_0),
     * one all 15 nibbles or 127 */
    for (size_t b = 0; b < rb / bb; b++) {
        memset(plain + b * bb + vals, type == PD_Q8_0 ? 0x80 : 0x00, nv);
        if (rows > 1) memset(plain + rb + b * bb + vals, type == PD_Q8_0 ? 0x7f : 0xff, nv);
    }
    pdi_x_pack(type, n, plain, rb, rows, w);
    float *a = malloc((size_t)cols * sizeof(float)), *bq = malloc((size_t)cols * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        pdi_row_to_f32(type, plain + r * rb, a, cols);
        pdi_x_row_to_f32(type, n, w, rb, r, bq, cols);
        assert_memory_equal(a, bq, (size_t)cols * sizeof(float));
    }
    qact_buf b;
    qact_new(&b, toks, cols);
    /* token 0 at the top of the int8 range, token 1 at the bottom (and their s to match) */
    for (int64_t t = 0; t < (toks < 2 ? toks : 2); t++) {
        memset(b.a.q + t * cols, t ? -127 : 127, (size_t)cols);
        for (int64_t blk = 0; blk < cols / 32; blk++) {
            b.a.s[blk * b.a.n_cap + t] = b.a.d[blk * b.a.n_cap + t] * ((t ? -127.0f : 127.0f) * 32.0f);
            b.a.block_bias[blk * b.a.n_cap + t] = -8 * (t ? -127 * 32 : 127 * 32);
        }
    }
    float *want = calloc((size_t)(toks * ys), sizeof(float)), *got = calloc((size_t)(toks * ys), sizeof(float));
    for (int64_t t = 0; t < toks; t++)
        for (int64_t r = 0; r < rows; r++) {
            want[t * ys + r] = pdi_qdot_x_reference(type, n, w, rb, r, &b.a, t);
            pdi_row_to_f32(type, plain + r * rb, a, cols);
            double exact = 0.0, scale = 0.0;
            for (int64_t i = 0; i < cols; i++) {
                double xv = (double)b.a.d[(i / 32) * b.a.n_cap + t] * b.a.q[t * cols + i];
                exact += a[i] * xv;
                scale += fabs(a[i] * xv);
            }
            if (fabs(want[t * ys + r] - exact) > 1e-6 * scale)
                fail_msg("%s x%d reference cols %lld row %lld token %lld: %.9g, float64 %.9g", name, n,
                         (long long)cols, (long long)r, (long long)t, want[t * ys + r], exact);
            float plain_dot = pdi_qdot_reference(type, plain + r * rb, &b.a, t);
            assert_true(fabs(plain_dot - want[t * ys + r]) <= 1.1e-5 * scale); /* the plain order: 1e-5 */
        }
    /* whole groups: the first, half of them, all but the last, the last */
    int64_t g = rows / n, t2 = toks < 2 ? toks : 2, t3 = toks < 3 ? toks : 3;
    const int64_t rcut[] = {0, n, n * (g / 2 > 1 ? g / 2 : 1), n * (g - 1 > 1 ? g - 1 : 1), rows},
                  tcut[] = {0, t2, t3, toks - 1 > t3 ? toks - 1 : t3, toks};
    int tested = 0;
    for (int i = 0; i < 4; i++) {
        if (!impls[i] || impls[i]->interleave != n) continue;
        tested++;
        memset(got, 0, (size_t)(toks * ys) * sizeof(float));
        impls[i]->qmatmul_x(type, w, rb, rows, &b.a, 0, toks, got, ys);
        for (int64_t t = 0; t < toks; t++)
            for (int64_t r = 0; r < rows; r++)
                if (memcmp(&got[t * ys + r], &want[t * ys + r], sizeof(float)))
                    fail_msg("%s %s x%d cols %lld row %lld token %lld: %.9g, reference %.9g", impls[i]->name,
                             name, n, (long long)cols, (long long)r, (long long)t, got[t * ys + r], want[t * ys + r]);
        memset(got, 0, (size_t)(toks * ys) * sizeof(float));
        for (int ri = 0; ri < 4; ri++)
            for (int ti = 0; ti < 4; ti++)
                if (rcut[ri] < rcut[ri + 1])
                    impls[i]->qmatmul_x(type, w + rcut[ri] * rb, rb, rcut[ri + 1] - rcut[ri], &b.a, tcut[ti],
                                        tcut[ti + 1], got + rcut[ri], ys);
        for (int64_t t = 0; t < toks; t++)
            for (int64_t r = 0; r < rows; r++) assert_memory_equal(&got[t * ys + r], &want[t * ys + r], sizeof(float));
        printf("  %s %s x%d %lld x %lld x %lld: every (row, token) bitwise equal to the reference\n", impls[i]->name,
               name, n, (long long)rows, (long long)cols, (long long)toks);
    }
    /* four at a time the portable table's own; eight the AVX2 one's, sixteen where AVX-512 VNNI runs */
    assert_true(tested >= (n == 4 || (n == 8 && pdi_kernels_avx2()) || (n == 16 && pdi_kernels_avx512()) ? 1 : 0));
    qact_free(&b);
    free(plain);
    free(w);
    free(a);
    free(bq);
    free(want);
    free(got);
}

static void test_x(void **state)
{
    (void)state;
    /* cols x rows x tokens. Four at a time: 2-group prefill tiles and a last
     * group; 4-group decode tiles and leftovers; 8-token tiles and leftovers
     * of 4, 2 and 1. Sixteen: the same for groups of 16 (whose leftovers after
     * the 8-token tiles, 1 to 7, go in one tile of their width: 12 and 14
     * tokens give 4 and 6), and an odd number of blocks (groups that do not
     * start on a 64-byte line) */
    const int64_t x4[][3] = {{32, 4, 3}, {64, 4, 3}, {160, 12, 11}, {192, 12, 11}, {896, 36, 1}, {896, 44, 9},
                             {2560, 40, 15}};
    const int64_t x8[][3] = {{32, 8, 3}, {64, 8, 1}, {96, 16, 5}, {160, 24, 11}, {192, 24, 11},
                             {896, 40, 1}, {896, 48, 9}, {2560, 24, 15}};
    const int64_t x16[][3] = {{32, 16, 3}, {64, 16, 3}, {96, 32, 5}, {160, 48, 11}, {192, 48, 11},
                              {896, 80, 1}, {896, 96, 9}, {2560, 48, 15}, {192, 32, 12}, {896, 64, 14}};
    const pdi_dtype types[] = {PD_Q8_0, PD_Q4_0, PD_Q4_1, PD_Q4_64};
    for (size_t k = 0; k < 4; k++) {
        int64_t len = pdi_dtype_block_len(types[k]);
        for (size_t s = 0; s < sizeof x4 / sizeof x4[0]; s++)
            if (x4[s][0] % len == 0) check_x(types[k], 4, x4[s][0], x4[s][1], x4[s][2]);
        for (size_t s = 0; s < sizeof x8 / sizeof x8[0]; s++)
            if (x8[s][0] % len == 0) check_x(types[k], 8, x8[s][0], x8[s][1], x8[s][2]);
        for (size_t s = 0; s < sizeof x16 / sizeof x16[0]; s++)
            if (x16[s][0] % len == 0) check_x(types[k], 16, x16[s][0], x16[s][1], x16[s][2]);
    }
}

/* A Q4_64 row as Q4_1: each block of 64 as two Q4_1 blocks with its d and m. */
static void q4_64_as_q4_1(const uint8_t *src, int64_t cols, uint8_t *dst)
{
    for (int64_t b = 0; b < cols / 64; b++)
        for (int h = 0; h < 2; h++) {
            memcpy(dst + (2 * b + h) * 20, src + b * 36, 4);
            memcpy(dst + (2 * b + h) * 20 + 4, src + b * 36 + 4 + 16 * h, 16);
        }
}

/* Q4_64 is Q4_1 whose two halves of each block of 64 share the block's d and
 * m: a Q4_64 matrix and that Q4_1 matrix give the same floats, and the same
 * bits through the reference orders and through every table's qmatmul and
 * qmatmul_x, so the Q4_64 kernels are checked against the Q4_1 ones as well
 * as against their reference (test_qmatmul_bitwise, test_x). */
static void test_q4_64_is_q4_1_with_shared_scales(void **state)
{
    (void)state;
    const pdi_kernels *impls[4] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_neon(), pdi_kernels_avx512()};
    const int64_t cols = 576, rows = 48, toks = 9, ys = rows;
    size_t rb = pdi_dtype_row_bytes(PD_Q4_64, cols), rb1 = pdi_dtype_row_bytes(PD_Q4_1, cols);
    assert_true(rb == 324 && rb1 == 360);
    uint8_t *w = malloc(rb * rows), *w1 = malloc(rb1 * rows), *xw = malloc(rb * rows), *xw1 = malloc(rb1 * rows);
    float *a = malloc(cols * sizeof(float)), *a1 = malloc(cols * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        make_row(PD_Q4_64, cols, w + r * rb);
        q4_64_as_q4_1(w + r * rb, cols, w1 + r * rb1);
        pdi_row_to_f32(PD_Q4_64, w + r * rb, a, cols);
        pdi_row_to_f32(PD_Q4_1, w1 + r * rb1, a1, cols);
        assert_memory_equal(a, a1, cols * sizeof(float));
    }
    qact_buf b;
    qact_new(&b, toks, cols);
    float *got = calloc(toks * ys, sizeof(float)), *want = calloc(toks * ys, sizeof(float));
    for (int64_t t = 0; t < toks; t++)
        for (int64_t r = 0; r < rows; r++) {
            float x = pdi_qdot_reference(PD_Q4_64, w + r * rb, &b.a, t);
            float x1 = pdi_qdot_reference(PD_Q4_1, w1 + r * rb1, &b.a, t);
            assert_memory_equal(&x, &x1, sizeof x);
        }
    int tested = 0;
    for (int i = 0; i < 4; i++) {
        if (!impls[i]) continue;
        impls[i]->qmatmul(PD_Q4_64, w, rb, rows, &b.a, 0, toks, got, ys);
        impls[i]->qmatmul(PD_Q4_1, w1, rb1, rows, &b.a, 0, toks, want, ys);
        assert_memory_equal(got, want, toks * ys * sizeof(float));
        for (int64_t t0 = 0; t0 < toks; t0 += 4) /* decode and prefill tiles */
            for (int64_t t1 = t0 + 1; t1 <= toks; t1 += 3) {
                impls[i]->qmatmul(PD_Q4_64, w, rb, rows, &b.a, t0, t1, got, ys);
                assert_memory_equal(got, want, toks * ys * sizeof(float));
            }
        int n = impls[i]->interleave;
        pdi_x_pack(PD_Q4_64, n, w, rb, rows, xw);
        pdi_x_pack(PD_Q4_1, n, w1, rb1, rows, xw1);
        for (int64_t r = 0; r < rows; r++) {
            pdi_x_row_to_f32(PD_Q4_64, n, xw, rb, r, a, cols);
            pdi_row_to_f32(PD_Q4_1, w1 + r * rb1, a1, cols);
            assert_memory_equal(a, a1, cols * sizeof(float));
            for (int64_t t = 0; t < toks; t++) {
                float x = pdi_qdot_x_reference(PD_Q4_64, n, xw, rb, r, &b.a, t);
                float x1 = pdi_qdot_x_reference(PD_Q4_1, n, xw1, rb1, r, &b.a, t);
                assert_memory_equal(&x, &x1, sizeof x);
            }
        }
        impls[i]->qmatmul_x(PD_Q4_64, xw, rb, rows, &b.a, 0, toks, got, ys);
        impls[i]->qmatmul_x(PD_Q4_1, xw1, rb1, rows, &b.a, 0, toks, want, ys);
        assert_memory_equal(got, want, toks * ys * sizeof(float));
        for (int64_t t = 0; t < toks; t++) /* one token at a time: the decode tiles */
            impls[i]->qmatmul_x(PD_Q4_64, xw, rb, rows, &b.a, t, t + 1, got, ys);
        assert_memory_equal(got, want, toks * ys * sizeof(float));
        printf("  %s Q4_64 %lld x %lld x %lld: the bits of Q4_1 with shared scales, plain and x%d\n", impls[i]->name,
               (long long)rows, (long long)cols, (long long)toks, n);
        tested++;
    }
    assert_true(tested >= 1);
    qact_free(&b);
    free(w);
    free(w1);
    free(xw);
    free(xw1);
    free(a);
    free(a1);
    free(got);
    free(want);
}

/* Hand-worked Q4_64 quantization of 64 values: min -1, max 14, so d = 1
 * and m = -1; 2.25 -> (int)(3.25 + 0.5) = 3 (back to 2); 9 -> 10. Value j
 * of half h sits in byte 4 + 16h + j % 16, low nibble for j < 16. */
static void test_quantize_q4_64(void **state)
{
    (void)state;
    float x[64], back[64];
    uint8_t blk[36];
    for (int j = 0; j < 64; j++) x[j] = 2.25f;
    x[0] = -1.0f;
    x[40] = 9.0f;
    x[63] = 14.0f;
    pdi_quantize_row(PD_Q4_64, x, 64, blk);
    assert_int_equal(pdi_load_u16(blk), 0x3c00);     /* d = 1 */
    assert_int_equal(pdi_load_u16(blk + 2), 0xbc00); /* m = -1 */
    assert_int_equal(blk[4], 0x30);                 /* values 0 (q 0) and 16 (q 3) */
    assert_int_equal(blk[4 + 16 + 8], 0x3a);        /* values 40 (q 10) and 56 (q 3) */
    assert_int_equal(blk[4 + 16 + 15], 0xf3);       /* values 47 (q 3) and 63 (q 15) */
    pdi_row_to_f32(PD_Q4_64, blk, back, 64);
    assert_true(back[0] == -1.0f && back[40] == 9.0f && back[63] == 14.0f && back[1] == 2.0f && back[62] == 2.0f);
    /* a constant block: d = 0, every q 0, back to the value (as its F16) */
    for (int j = 0; j < 64; j++) x[j] = 0.5f;
    pdi_quantize_row(PD_Q4_64, x, 64, blk);
    pdi_row_to_f32(PD_Q4_64, blk, back, 64);
    for (int j = 0; j < 64; j++) assert_true(back[j] == 0.5f);
    /* random rows: every value within half a step (plus the F16 roundings) */
    for (int rep = 0; rep < 20; rep++) {
        float lo = 1e30f, hi = -1e30f;
        for (int j = 0; j < 64; j++) {
            x[j] = frand() * (rep + 1);
            lo = fminf(lo, x[j]);
            hi = fmaxf(hi, x[j]);
        }
        pdi_quantize_row(PD_Q4_64, x, 64, blk);
        pdi_row_to_f32(PD_Q4_64, blk, back, 64);
        float step = (hi - lo) / 15.0f;
        for (int j = 0; j < 64; j++)
            if (fabsf(back[j] - x[j]) > 0.5f * step + 16.0f * 1e-3f * (fabsf(lo) + step))
                fail_msg("Q4_64 value %d: %.9g back as %.9g (step %.9g)", j, x[j], back[j], step);
    }
}

/* silu_mul of every table against double precision: within 4e-7 of the
 * result (exp8's 2 ulp and the division) plus 1e-36 (below x = -88 exp(-x)
 * passes the largest float: expf gives inf and a silu of -0, exp8 stops at
 * e^88 and gives x / e^88), across the range where exp saturates and at 0,
 * -0 and a NaN; 37 values: tails of every length. */
static void test_silu_mul(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon()};
    enum { N = 37 };
    float g0[N], u[N];
    for (int i = 0; i < N; i++) {
        g0[i] = 12.0f * frand();
        u[i] = frand();
    }
    g0[0] = 0.0f, g0[1] = -0.0f, g0[2] = -100.0f, g0[3] = 100.0f, g0[4] = -87.5f, g0[5] = 88.5f, g0[6] = NAN;
    g0[36] = -30.0f; /* in the tail */
    for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
        if (!impls[m]) continue;
        for (int64_t n = 1; n <= N; n += 12) {
            float g[N];
            memcpy(g, g0, sizeof g);
            impls[m]->silu_mul(g, u, n);
            for (int64_t i = 0; i < n; i++) {
                double x = g0[i], want = x / (1.0 + exp(-x)) * u[i];
                if (isnan(x)) {
                    assert_true(isnan(g[i]));
                    continue;
                }
                if (fabs(g[i] - want) > 4e-7 * fabs(want) + 1e-36)
                    fail_msg("%s silu_mul n=%lld [%lld] x=%.9g: %.9g, want %.9g", impls[m]->name, (long long)n,
                             (long long)i, x, g[i], want);
            }
        }
    }
}

/* Hand-worked blocks: Q8_0 d=0.5 q=-3 -> -1.5; Q4_0 d=2, nibble 3 -> 2*(3-8) = -10;
 * Q4_1 d=0.25 m=1, nibble 15 -> 4.75; Q4_64 the same in either half. */
static void test_block_values(void **state)
{
    (void)state;
    uint8_t q8[34] = {0}, q40[18] = {0}, q41[20] = {0};
    float out[32];
    put_u16(q8, 0x3800); /* 0.5 */
    q8[2] = (uint8_t)-3;
    pdi_row_to_f32(PD_Q8_0, q8, out, 32);
    assert_true(out[0] == -1.5f && out[1] == 0.0f);
    put_u16(q40, 0x4000); /* 2.0 */
    q40[2] = 0xa3;        /* weight 0: 3, weight 16: 10 */
    pdi_row_to_f32(PD_Q4_0, q40, out, 32);
    assert_true(out[0] == -10.0f && out[16] == 4.0f && out[1] == -16.0f);
    put_u16(q41, 0x3400); /* 0.25 */
    put_u16(q41 + 2, 0x3c00); /* 1.0 */
    q41[4] = 0x0f;
    pdi_row_to_f32(PD_Q4_1, q41, out, 32);
    assert_true(out[0] == 4.75f && out[16] == 1.0f);
    /* Q4_64 d=0.25 m=1: byte 4 gives weights 0 and 16, byte 20 weights 32 and 48 */
    uint8_t q464[36] = {0};
    float out64[64];
    put_u16(q464, 0x3400);
    put_u16(q464 + 2, 0x3c00);
    q464[4] = 0x0f;
    q464[20] = 0xa3;
    pdi_row_to_f32(PD_Q4_64, q464, out64, 64);
    assert_true(out64[0] == 4.75f && out64[16] == 1.0f && out64[32] == 1.75f && out64[48] == 3.5f && out64[63] == 1.0f);
}

static void test_half_conversions(void **state)
{
    (void)state;
    assert_true(pdi_f16_to_f32(0x3c00) == 1.0f);
    assert_true(pdi_f16_to_f32(0xc000) == -2.0f);
    assert_true(pdi_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    assert_true(pdi_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(pdi_f16_to_f32(0x7c00)));
    assert_true(isnan(pdi_f16_to_f32(0x7e00)));
    assert_int_equal(pdi_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(pdi_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(pdi_f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(pdi_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(pdi_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie to even */
    /* every half survives a round trip through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = pdi_f16_to_f32((uint16_t)h);
        if (!isnan(f)) assert_int_equal(pdi_f32_to_f16(f), h);
    }
    assert_true(pdi_bf16_to_f32(0x3f80) == 1.0f);
}

/* Every table's narrow gives pdi_f32_to_f16's bits: float bit patterns over
 * the whole range a prime stride apart (halves' ties, subnormals, overflow),
 * each in every position of an 8-wide step and in the tail, plus zeros,
 * infinities and NaNs with payloads of either sign. */
static void test_narrow_tables(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon()};
    const int64_t n = 4099; /* not a multiple of 8: a tail */
    float *x = malloc((size_t)n * sizeof(float));
    uint16_t *want = malloc((size_t)n * 2), *got = malloc((size_t)n * 2);
    const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                                0x7f800001u, 0x7fffffffu, 0xffbfffffu, 0x38800000u, 0x33000000u, 0x33000001u,
                                0x477fe000u, 0x477ff000u, 0x3f801000u, 0x3f803000u};
    int tested = 0;
    for (uint32_t start = 0; start < 8; start++) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t bits = i < 16 ? special[(i + start) % 16] : (uint32_t)((uint64_t)(i + start * n) * 1048573u);
            memcpy(&x[i], &bits, 4);
            want[i] = pdi_f32_to_f16(x[i]);
        }
        for (size_t k = 0; k < sizeof impls / sizeof impls[0]; k++) {
            if (!impls[k]) continue;
            tested++;
            memset(got, 0x55, (size_t)n * 2);
            impls[k]->narrow(x, got, n);
            for (int64_t i = 0; i < n; i++)
                if (got[i] != want[i])
                    fail_msg("%s narrow of %a (element %lld): 0x%04x, want 0x%04x", impls[k]->name, (double)x[i],
                             (long long)i, got[i], want[i]);
        }
    }
    assert_true(tested >= 8);
    free(x);
    free(want);
    free(got);
}

/* key_scores_t where a table has it, on a block of keys stored transposed
 * (F32, and F16 with the halves' exact values): each score the bits of one
 * fmaf chain over d = 0, 1, ... times the scale, whatever the number of
 * heads (1-9: tiles of 4, 3, 2, 1) and keys (1, 16, 19, 50, 64: tails and
 * whole vectors), and within 1e-6 of a float64 dot. The block's columns past
 * nk hold NaN: they must not reach a score. Rows of 75 and 150 elements. */
static void test_key_scores_transposed(void **state)
{
    (void)state;
    const pdi_kernels *impls[] = {pdi_kernels_portable(), pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon()};
    enum { B = PD_KEY_BLOCK, N = 150, NH = 9 };
    float *k = malloc(B * N * sizeof(float)), *kb = malloc(N * B * sizeof(float));
    uint16_t *kh = malloc(N * B * 2);
    float q[NH * N], out[NH * B], one[B];
    for (int64_t i = 0; i < NH * N; i++) q[i] = frand();
    int tested = 0;
    for (size_t m = 0; m < sizeof impls / sizeof impls[0]; m++) {
        const pdi_kernels *kern = impls[m];
        if (!kern || !kern->key_scores_t) continue;
        tested++;
        const int64_t nks[] = {1, 16, 19, 50, 64};
        for (int half = 0; half < 2; half++)
            for (int64_t n = 75; n <= N; n += 75)
                for (size_t a = 0; a < sizeof nks / sizeof nks[0]; a++) {
                    int64_t nk = nks[a];
                    /* key j's element d at d * B + j; NaN past nk */
                    for (int64_t d = 0; d < n; d++)
                        for (int64_t j = 0; j < B; j++) {
                            float x = j < nk ? frand() : NAN;
                            kh[d * B + j] = pdi_f32_to_f16(x);
                            k[j * N + d] = half ? pdi_f16_to_f32(kh[d * B + j]) : x;
                            kb[d * B + j] = x;
                        }
                    const void *blk = half ? (const void *)kh : (const void *)kb;
                    pdi_dtype kt = half ? PD_F16 : PD_F32;
                    for (int64_t nh = 1; nh <= NH; nh++) {
                        kern->key_scores_t(kt, blk, nk, q, N, nh, n, 0.125f, out, B);
                        for (int64_t h = 0; h < nh; h++) {
                            kern->key_scores_t(kt, blk, nk, q + h * N, N, 1, n, 0.125f, one, B);
                            assert_memory_equal(out + h * B, one, (size_t)nk * sizeof(float));
                            for (int64_t j = 0; j < nk; j++) {
                                float acc = 0.0f;
                                double exact = 0.0, scale = 0.0;
                                for (int64_t d = 0; d < n; d++) {
                                    acc = fmaf(q[h * N + d], k[j * N + d], acc);
                                    exact += 0.125 * q[h * N + d] * k[j * N + d];
                                    scale += fabs(0.125 * q[h * N + d] * k[j * N + d]);
                                }
                                float want = 0.125f * acc;
                                if (memcmp(&out[h * B + j], &want, sizeof want) || fabs(want - exact) > 1e-6 * scale)
                                    fail_msg("%s key_scores_t %s nh %lld nk %lld n %lld head %lld key %lld: %.9g, "
                                             "chain %.9g, float64 %.9g", kern->name, half ? "f16" : "f32",
                                             (long long)nh, (long long)nk, (long long)n, (long long)h, (long long)j,
                                             out[h * B + j], want, exact);
                            }
                        }
                    }
                }
        printf("  %s key_scores_t: the chain's bits for 1-9 heads, 1-64 keys, F32 and F16 blocks\n", kern->name);
    }
    assert_true(tested >= (pdi_kernels_avx512() ? 1 : 0));
    free(k);
    free(kb);
    free(kh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot_row_all_types),
        cmocka_unit_test(test_quantize_act),
        cmocka_unit_test(test_quantize_act_tables),
        cmocka_unit_test(test_attention_kernels),
        cmocka_unit_test(test_x86_exp_bits),
        cmocka_unit_test(test_fmatmul),
        cmocka_unit_test(test_widen),
        cmocka_unit_test(test_qdot_reference_value),
        cmocka_unit_test(test_qmatmul_bitwise),
        cmocka_unit_test(test_x),
        cmocka_unit_test(test_q4_64_is_q4_1_with_shared_scales),
        cmocka_unit_test(test_quantize_q4_64),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_block_values),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_narrow_tables),
        cmocka_unit_test(test_key_scores_transposed),
    };
    return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
