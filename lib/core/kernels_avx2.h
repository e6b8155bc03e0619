/* kernels_avx2.h - what the x86-64 files share: the target attributes (so
 * one binary runs everywhere), a horizontal sum, the AVX2 integer products
 * (kernels_avx2_int.c) and the AVX2 float kernels (kernels_avx2.c) that the
 * AVX2 and AVX-512 VNNI tables both hold. Call them only where
 * pdi_kernels_avx2() is not NULL. */
#ifndef PD_KERNELS_AVX2_H
#define PD_KERNELS_AVX2_H

#include "kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

AVX2_INLINE float hsum256(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* kernels_avx2_int.c: qmatmul (rows as stored) and qmatmul_x (eight rows
 * interleaved) with AVX2. */
AVX2 void pdi_qmatmul_avx2(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,
                           int64_t t1, float *y, int64_t y_stride);
AVX2 void pdi_qmatmul_x8_avx2(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                              int64_t t0, int64_t t1, float *y, int64_t y_stride);

/* kernels_avx2.c: the float kernels of both x86 tables (pdi_kernels' dot,
 * axpy, dot_row, fmatmul, widen, narrow, exp_sum and silu_mul). */
AVX2 float pdi_dot_avx2(const float *a, const float *b, int64_t n);
AVX2 void pdi_axpy_avx2(float *y, float s, const float *x, int64_t n);
AVX2 float pdi_dot_row_avx2(pdi_dtype t, const void *row, const float *x, int64_t n);
void pdi_fmatmul_avx2(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,
                      int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride);
AVX2 void pdi_widen_avx2(pdi_dtype t, const void *src, float *dst, int64_t n);
AVX2 void pdi_narrow_avx2(const float *src, uint16_t *dst, int64_t n);
AVX2 float pdi_exp_sum_avx2(float *s, int64_t n, float max);
AVX2 void pdi_silu_mul_avx2(float *g, const float *u, int64_t n);

/* exp's range and coefficients (kernels_avx2.c, exp8), for every width that
 * must give its bits: 2^n p(r), r = x - n ln 2, ln 2 in two parts. */
#define PD_EXP_LO (-87.0f)
#define PD_EXP_HI 88.0f
#define PD_EXP_LOG2E 1.44269504088896341f
#define PD_EXP_LN2_HI 0.693359375f
#define PD_EXP_LN2_LO (-2.12194440e-4f)
#define PD_EXP_P0 1.9875691500e-4f
#define PD_EXP_P1 1.3981999507e-3f
#define PD_EXP_P2 8.3334519073e-3f
#define PD_EXP_P3 4.1665795894e-2f
#define PD_EXP_P4 1.6666665459e-1f
#define PD_EXP_P5 5.0000001201e-1f
/* p(r) from n and the clamped x, with one width's operations: the same
 * steps at every width, so each lane has the same bits. */
#define PD_EXP_POLY(T, FMADD, FNMADD, MUL, ADD, SET1, n, x, out)                                                      \
    do {                                                                                                               \
        T r_ = FNMADD(n, SET1(PD_EXP_LN2_LO), FNMADD(n, SET1(PD_EXP_LN2_HI), x));                                      \
        T p_ = FMADD(SET1(PD_EXP_P0), r_, SET1(PD_EXP_P1));                                                            \
        p_ = FMADD(p_, r_, SET1(PD_EXP_P2));                                                                           \
        p_ = FMADD(p_, r_, SET1(PD_EXP_P3));                                                                           \
        p_ = FMADD(p_, r_, SET1(PD_EXP_P4));                                                                           \
        p_ = FMADD(p_, r_, SET1(PD_EXP_P5));                                                                           \
        (out) = FMADD(p_, MUL(r_, r_), ADD(r_, SET1(1.0f)));                                                           \
    } while (0)

/* kernels_avx512_float.c: fmatmul with two rows to a 512-bit vector, the
 * bits of pdi_fmatmul_avx2 (the AVX-512 table's). */
void pdi_fmatmul_avx512(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,
                        int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride);

/* An x86 table: the AVX2 float kernels (fmatmul given) and the given integer,
 * attention and activation ones. */
#define PD_X86_KERNELS(NAME, FMATMUL, QMATMUL, INTERLEAVE, QMATMUL_X, QUANTIZE, KEY_SCORES, VALUE_MIX, KEY_SCORES_T, EXP_SUM,  \
                       SILU_MUL)                                                                                       \
    {                                                                                                                  \
        .name = NAME, .dot = pdi_dot_avx2, .axpy = pdi_axpy_avx2, .dot_row = pdi_dot_row_avx2,                            \
                   .fmatmul = FMATMUL, .qmatmul = QMATMUL, .interleave = INTERLEAVE, .qmatmul_x = QMATMUL_X,              \
        .widen = pdi_widen_avx2, .narrow = pdi_narrow_avx2, .quantize_act = QUANTIZE, .key_scores = KEY_SCORES,          \
        .value_mix = VALUE_MIX, .key_scores_t = KEY_SCORES_T, .exp_sum = EXP_SUM, .silu_mul = SILU_MUL,                \
    }

#endif
#endif
