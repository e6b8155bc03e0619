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

/* Float rows 256 elements at a time; block rows by pdi_dot_row_blocks. */
static float dot_row_portable(pdi_dtype t, const void *row, const float *x, int64_t n)
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
            pdi_row_to_f32(t, p + 2 * i, buf, k);
            total += dot_portable(buf, x + i, k);
        }
        return (float)total;
    }
    case PD_Q8_0:
    case PD_Q4_0:
    case PD_Q4_1:
    case PD_Q4_64:
        return pdi_dot_row_blocks(t, row, x, n);
    }
    return 0.0f;
}

/* Pair by pair in the reference order: the slow but plain definition. */
static void qmatmul_portable(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                             int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t tok = t0; tok < t1; tok++)
            y[tok * y_stride + r] = pdi_qdot_reference(t, w + (size_t)r * row_bytes, a, tok);
}

static void qmatmul_x4_portable(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                                int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t tok = t0; tok < t1; tok++) y[tok * y_stride + r] = pdi_qdot_x_reference(t, 4, w, row_bytes, r, a, tok);
}

PD_WIDENED_ATTENTION(portable)

static const pdi_kernels portable = {
    .name = "portable",
    .dot = dot_portable,
    .axpy = axpy_portable,
    .dot_row = dot_row_portable,
    .fmatmul = fmatmul_portable,
    .qmatmul = qmatmul_portable,
    .interleave = 4,
    .qmatmul_x = qmatmul_x4_portable,
    .widen = pdi_row_to_f32,
    .narrow = pdi_f32_to_f16_n,
    .quantize_act = pdi_quantize_act,
    .key_scores = key_scores_portable,
    .value_mix = value_mix_portable,
    .exp_sum = pdi_exp_sum,
    .silu_mul = pdi_silu_mul,
};

const pdi_kernels *pdi_kernels_portable(void) { return &portable; }

