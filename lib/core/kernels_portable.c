/* kernels_portable.c - the inner loops in plain C: the fallback everywhere,
 * and the definition the SIMD versions are tested against. */
#include "kernels.h"

#include <math.h>
#include <string.h>


static float dot_portable(const float *a, const float *b, int64_t n)
{
    /* Eight partial sums: vectorisable and less rounding drift than one. */
    float s[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += a[i + k] * b[i + k];
    float total = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++) total += a[i] * b[i];
    return total;
}

static void axpy_portable(float *y, float s, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += s * x[i];
}

/* Block types: each block's integer dot is scaled once by its d (and m). */
static float dot_row_portable(pd_dtype t, const void *row, const float *x, int64_t n)
{
    const uint8_t *p = row;
    double total = 0.0;
    switch (t) {
    case PD_F32: {
        float buf[256];
        for (int64_t i = 0; i < n; i += 256) {
            int64_t k = n - i < 256 ? n - i : 256;
            memcpy(buf, p + 4 * i, (size_t)k * 4);
            total += dot_portable(buf, x + i, k);
        }
        return (float)total;
    }
    case PD_F16:
    case PD_BF16: {
        float buf[256];
        for (int64_t i = 0; i < n; i += 256) {
            int64_t k = n - i < 256 ? n - i : 256;
            pd_row_to_f32(t, p + 2 * i, buf, k);
            total += dot_portable(buf, x + i, k);
        }
        return (float)total;
    }
    case PD_Q8_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 34, x += PD_QBLOCK) {
            const int8_t *q = (const int8_t *)(p + 2);
            float s = 0.0f;
            for (int j = 0; j < PD_QBLOCK; j++) s += (float)q[j] * x[j];
            total += pd_f16_to_f32(pd_load_u16(p)) * s;
        }
        return (float)total;
    case PD_Q4_0:
    case PD_Q4_1:
    case PD_Q4_64:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, x += PD_QBLOCK) {
            const uint8_t *blk = p + pd_sub_at(t, b), *q = blk + pd_sub_values(t, b);
            float s = 0.0f, xs = 0.0f;
            for (int j = 0; j < 16; j++) {
                s += (float)(q[j] & 0x0f) * x[j] + (float)(q[j] >> 4) * x[j + 16];
                xs += x[j] + x[j + 16];
            }
            float d = pd_f16_to_f32(pd_load_u16(blk));
            /* Q4_0: w = d*(q-8); Q4_1, Q4_64: w = d*q + m */
            float offset = pd_dtype_has_min(t) ? pd_f16_to_f32(pd_load_u16(blk + 2)) : -8.0f * d;
            total += d * s + offset * xs;
        }
        return (float)total;
    }
    return 0.0f;
}

/* Pair by pair in the reference order: the slow but plain definition. */
static void qmatmul_portable(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a,
                             int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t tok = t0; tok < t1; tok++)
            y[tok * y_stride + r] = pd_qdot_reference(t, w + (size_t)r * row_bytes, a, tok);
}

static void qmatmul_x4_portable(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a,
                                int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t tok = t0; tok < t1; tok++) y[tok * y_stride + r] = pd_qdot_x_reference(t, 4, w, row_bytes, r, a, tok);
}

PD_WIDENED_ATTENTION(portable)

static const pd_kernels portable = {
    .name = "portable",
    .dot = dot_portable,
    .axpy = axpy_portable,
    .dot_row = dot_row_portable,
    .fmatmul = fmatmul_portable,
    .qmatmul = qmatmul_portable,
    .interleave = 4,
    .qmatmul_x = qmatmul_x4_portable,
    .widen = pd_row_to_f32,
    .narrow = pd_f32_to_f16_n,
    .quantize_act = pd_quantize_act,
    .key_scores = key_scores_portable,
    .value_mix = value_mix_portable,
    .exp_sum = pd_exp_sum,
    .silu_mul = pd_silu_mul,
};

const pd_kernels *pd_kernels_portable(void) { return &portable; }

