/* kernels_avx2.c - the inner loops for x86-64 with AVX2, FMA and F16C (the
 * integer matrix products are in kernels_avx2_int.c) and the AVX2 table. Its
 * float kernels are the AVX-512 table's too (kernels_avx512.c).
 *
 * Compiled with target attributes rather than -mavx2, so one binary runs
 * everywhere and pdi_kernels_avx2() returns NULL on CPUs without them. */
#include "kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

/* Eight elements from i of a float row, or of a half row (f16), as floats. */
AVX2_INLINE __m256 load8(bool f16, const void *p, int64_t i)
{
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p + i)));
    return _mm256_loadu_ps((const float *)p + i);
}

AVX2_INLINE float elem(bool f16, const void *p, int64_t i)
{
    return f16 ? pdi_f16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

AVX2_INLINE float dot_kind(bool f16, const float *a, const void *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(f16, b, i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), load8(f16, b, i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(f16, b, i), s0);
    float total = hsum256(_mm256_add_ps(s0, s1));
    for (; i < n; i++) total += a[i] * elem(f16, b, i);
    return total;
}

AVX2_INLINE void axpy_kind(bool f16, float *y, float s, const void *x, int64_t n)
{
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vs, load8(f16, x, i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += s * elem(f16, x, i);
}

AVX2 float pdi_dot_avx2(const float *a, const float *b, int64_t n) { return dot_kind(false, a, b, n); }

AVX2 void pdi_axpy_avx2(float *y, float s, const float *x, int64_t n) { axpy_kind(false, y, s, x, n); }


/* 8 int8 at p as floats */
AVX2 static __m256 i8x8(const uint8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

/* 8 uint8 held in the low 64 bits of v, as floats */
AVX2 static __m256 u8x8(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }

AVX2 float pdi_dot_row_avx2(pdi_dtype t, const void *row, const float *x, int64_t n)
{
    const uint8_t *p = row;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    switch (t) {
    case PD_F32:
        for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps((const float *)(const void *)(p + 4 * i)),
                                                         _mm256_loadu_ps(x + i), acc);
        break;
    case PD_F16:
        for (; i + 8 <= n; i += 8)
            acc = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i))),
                                  _mm256_loadu_ps(x + i), acc);
        break;
    case PD_BF16:
        for (; i + 8 <= n; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i)));
            acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(w, 16)), _mm256_loadu_ps(x + i), acc);
        }
        break;
    case PD_Q8_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 34, x += PD_QBLOCK) {
            __m256 s = _mm256_mul_ps(i8x8(p + 2), _mm256_loadu_ps(x));
            s = _mm256_fmadd_ps(i8x8(p + 10), _mm256_loadu_ps(x + 8), s);
            s = _mm256_fmadd_ps(i8x8(p + 18), _mm256_loadu_ps(x + 16), s);
            s = _mm256_fmadd_ps(i8x8(p + 26), _mm256_loadu_ps(x + 24), s);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(pdi_f16_to_f32(pdi_load_u16(p))), s, acc);
        }
        return hsum256(acc);
    case PD_Q4_0:
    case PD_Q4_1:
    case PD_Q4_64: {
        const __m128i low = _mm_set1_epi8(0x0f);
        __m256 acc_x = _mm256_setzero_ps();
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, x += PD_QBLOCK) {
            const uint8_t *blk = p + pdi_sub_at(t, b);
            __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + pdi_sub_values(t, b)));
            __m128i lo = _mm_and_si128(q, low), hi = _mm_and_si128(_mm_srli_epi16(q, 4), low);
            __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
            __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
            __m256 s = _mm256_mul_ps(u8x8(lo), x0);
            s = _mm256_fmadd_ps(u8x8(_mm_srli_si128(lo, 8)), x1, s);
            s = _mm256_fmadd_ps(u8x8(hi), x2, s);
            s = _mm256_fmadd_ps(u8x8(_mm_srli_si128(hi, 8)), x3, s);
            __m256 xs = _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3));
            float d = pdi_f16_to_f32(pdi_load_u16(blk));
            float offset = pdi_dtype_has_min(t) ? pdi_f16_to_f32(pdi_load_u16(blk + 2)) : -8.0f * d;
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), s, acc);
            acc_x = _mm256_fmadd_ps(_mm256_set1_ps(offset), xs, acc_x);
        }
        return hsum256(_mm256_add_ps(acc, acc_x));
    }
    }
    /* the tail of an F32/F16/BF16 row that is not a multiple of 8 */
    float total = hsum256(acc);
    if (i < n) {
        float rest[8];
        pdi_row_to_f32(t, p + (size_t)i * (t == PD_F32 ? 4 : 2), rest, n - i);
        for (int64_t k = 0; k < n - i; k++) total += rest[k] * x[i + k];
    }
    return total;
}


/* pdi_row_to_f32 with F16 and BF16 widened eight at a time (exact either way). */
AVX2 void pdi_widen_avx2(pdi_dtype t, const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    if (t == PD_F16)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(true, p, i));
    else if (t == PD_BF16)
        for (; i + 8 <= n; i += 8) {
            __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * i));
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
        }
    if (i < n) pdi_row_to_f32(t, p + (t == PD_F32 ? 4 : 2) * i, dst + i, n - i);
}

/* pdi_f32_to_f16 eight at a time: F16C rounds to nearest even as it does;
 * a NaN, whose payload F16C keeps, goes through pdi_f32_to_f16 instead. */
AVX2 void pdi_narrow_avx2(const float *src, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(src + i);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)))
            for (int k = 0; k < 8; k++) dst[i + k] = pdi_f32_to_f16(src[i + k]);
    }
    for (; i < n; i++) dst[i] = pdi_f32_to_f16(src[i]);
}

/* ------------------------------------------------ float weight matrices */

/* Rows x tokens of one float tile: 12 accumulators, 3 widened weight vectors
 * and one activation vector in the 16 ymm registers; each weight vector,
 * widened once, serves 4 tokens. */
#define FT_ROWS 3
#define FT_TOKS 4
/* A pass of exactly 2 tokens: 4 rows x 2 tokens, 8 accumulator chains (each
 * (row, token) one chain over the columns, for dot_row's bits), enough to
 * cover the FMA latency that 3 rows x 1 token leave waiting. */
#define FT_PAIR_ROWS 4

enum { W_F32, W_F16, W_BF16 };

/* Eight weights from column c of a stored row as floats. */
AVX2_INLINE __m256 wload8(const int kind, const uint8_t *row, int64_t c)
{
    if (kind == W_F32) return _mm256_loadu_ps((const float *)(const void *)(row + 4 * c));
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * c));
    if (kind == W_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AVX2_INLINE float welem(const int kind, const uint8_t *row, int64_t c)
{
    if (kind == W_F32) {
        float v;
        memcpy(&v, row + 4 * c, 4);
        return v;
    }
    return kind == W_F16 ? pdi_f16_to_f32(pdi_load_u16(row + 2 * c)) : pdi_bf16_to_f32(pdi_load_u16(row + 2 * c));
}

AVX2_INLINE void ftile(const int kind, const int RM, const int RN, const uint8_t *w, size_t row_bytes, int64_t n,
                       const float *x, int64_t x_stride, float *y, int64_t y_stride)
{
    __m256 acc[FT_PAIR_ROWS][FT_TOKS];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int u = 0; u < RN; u++) acc[r][u] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256 wv[FT_PAIR_ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) wv[r] = wload8(kind, w + (size_t)r * row_bytes, c);
#pragma GCC unroll 4
        for (int u = 0; u < RN; u++) {
            __m256 xv = _mm256_loadu_ps(x + u * x_stride + c);
#pragma GCC unroll 4
            for (int r = 0; r < RM; r++) acc[r][u] = _mm256_fmadd_ps(wv[r], xv, acc[r][u]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int u = 0; u < RN; u++) {
            float v = hsum256(acc[r][u]);
            for (int64_t k = c; k < n; k++) v += welem(kind, w + (size_t)r * row_bytes, k) * x[u * x_stride + k];
            y[u * y_stride + r] = v;
        }
}

AVX2_INLINE void fmatmul_kind(const int kind, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n,
                              const float *x, int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    if (t1 - t0 == 2) { /* two tokens: 4-row tiles, the rows left as below */
        int64_t r = 0;
        for (; r + FT_PAIR_ROWS <= n_rows; r += FT_PAIR_ROWS)
            ftile(kind, FT_PAIR_ROWS, 2, w + (size_t)r * row_bytes, row_bytes, n, x + t0 * x_stride, x_stride,
                  y + t0 * y_stride + r, y_stride);
        w += (size_t)r * row_bytes;
        y += r;
        n_rows -= r;
    }
    for (int64_t r = 0; r < n_rows; r += FT_ROWS) {
        int64_t rm = n_rows - r < FT_ROWS ? n_rows - r : FT_ROWS, tok = t0;
        const uint8_t *wr = w + (size_t)r * row_bytes;
        for (; tok + FT_TOKS <= t1; tok += FT_TOKS) {
            const float *xt = x + tok * x_stride;
            float *yt = y + tok * y_stride + r;
            if (rm == FT_ROWS) ftile(kind, FT_ROWS, FT_TOKS, wr, row_bytes, n, xt, x_stride, yt, y_stride);
            else if (rm == 2) ftile(kind, 2, FT_TOKS, wr, row_bytes, n, xt, x_stride, yt, y_stride);
            else ftile(kind, 1, FT_TOKS, wr, row_bytes, n, xt, x_stride, yt, y_stride);
        }
        for (; tok < t1; tok++) {
            const float *xt = x + tok * x_stride;
            float *yt = y + tok * y_stride + r;
            if (rm == FT_ROWS) ftile(kind, FT_ROWS, 1, wr, row_bytes, n, xt, x_stride, yt, y_stride);
            else if (rm == 2) ftile(kind, 2, 1, wr, row_bytes, n, xt, x_stride, yt, y_stride);
            else ftile(kind, 1, 1, wr, row_bytes, n, xt, x_stride, yt, y_stride);
        }
    }
}

#define FMATMUL_VARIANT(NAME, KIND)                                                                                    \
    AVX2 static void NAME(const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,              \
                          int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)                         \
    {                                                                                                                  \
        fmatmul_kind(KIND, w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride);                                 \
    }
FMATMUL_VARIANT(fmatmul_f32, W_F32)
FMATMUL_VARIANT(fmatmul_f16, W_F16)
FMATMUL_VARIANT(fmatmul_bf16, W_BF16)

void pdi_fmatmul_avx2(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,
                         int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    if (t == PD_F16) fmatmul_f16(w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride);
    else if (t == PD_BF16) fmatmul_bf16(w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride);
    else if (t == PD_F32) fmatmul_f32(w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride);
    else /* block types have qmatmul; this keeps the entry total */
        for (int64_t r = 0; r < n_rows; r++)
            for (int64_t tok = t0; tok < t1; tok++)
                y[tok * y_stride + r] = pdi_dot_row_avx2(t, w + (size_t)r * row_bytes, x + tok * x_stride, n);
}

/* ------------------------------------------------- quantized activations */

/* roundf (halves away from zero) of eight floats: truncate, then step away
 * from zero where the dropped fraction is at least one half (x - trunc(x) is
 * exact). NaN stays NaN, infinities stay infinite, as roundf has it. */
AVX2_INLINE __m256 round_away(__m256 x)
{
    __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(x, t));
    __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_or_ps(step, sign));
}

/* pdi_quantize_act, eight values a step, with its bits: the same maximum
 * (NaN ignored, as fmaxf does), the same scalar d and 1/d, roundf, and the
 * clamp that turns NaN into -127. */
AVX2 static void quantize_act_avx2(pdi_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1, int64_t b0,
                                   int64_t b1)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
    for (int64_t t = t0; t < t1; t++) {
        const float *xt = x + t * x_stride;
        int8_t *qt = a->q + t * a->cols;
        for (int64_t b = b0; b < b1; b++) {
            const float *v = xt + b * PD_QBLOCK;
            __m256 x0 = _mm256_loadu_ps(v), x1 = _mm256_loadu_ps(v + 8);
            __m256 x2 = _mm256_loadu_ps(v + 16), x3 = _mm256_loadu_ps(v + 24);
            __m256 m = _mm256_setzero_ps();
            m = _mm256_max_ps(_mm256_and_ps(x0, abs_mask), m);
            m = _mm256_max_ps(_mm256_and_ps(x1, abs_mask), m);
            m = _mm256_max_ps(_mm256_and_ps(x2, abs_mask), m);
            m = _mm256_max_ps(_mm256_and_ps(x3, abs_mask), m);
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
            float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
            __m256 vid = _mm256_set1_ps(id);
            __m256i q[4];
            const __m256 xs[4] = {x0, x1, x2, x3};
            for (int k = 0; k < 4; k++) {
                __m256 r = round_away(_mm256_mul_ps(xs[k], vid));
                q[k] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
            }
            __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
            /* packs work within 128-bit lanes: put the 32 bytes back in order */
            __m256i p16 = _mm256_packs_epi32(_mm256_permute2x128_si256(q[0], q[1], 0x20),
                                             _mm256_permute2x128_si256(q[0], q[1], 0x31));
            __m256i p16b = _mm256_packs_epi32(_mm256_permute2x128_si256(q[2], q[3], 0x20),
                                              _mm256_permute2x128_si256(q[2], q[3], 0x31));
            __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16, p16b), order);
            _mm256_storeu_si256((__m256i *)(void *)(qt + b * PD_QBLOCK), p8);
            a->d[b * a->n_cap + t] = d;
            a->s[b * a->n_cap + t] = d * (float)_mm_cvtsi128_si32(s4);
            a->block_bias[b * a->n_cap + t] = -8 * _mm_cvtsi128_si32(s4);
        }
    }
}

/* -------------------------------------------------------------- attention */

/* Eight keys a step: eight accumulators over the columns (each query vector
 * loaded once for the eight), then one transposing reduction to the eight
 * scores. A last partial step repeats its last key, so every score is summed
 * in the same order wherever its key stands. */
AVX2_INLINE void key_scores_kind(bool f16, const uint8_t *k, size_t stride, int64_t nk, const float *q, int64_t n,
                                 float scale, float *out)
{
    for (int64_t j = 0; j < nk; j += 8) {
        const uint8_t *kp[8];
        for (int u = 0; u < 8; u++) kp[u] = k + (size_t)(j + u < nk ? j + u : nk - 1) * stride;
        __m256 acc[8];
#pragma GCC unroll 8
        for (int u = 0; u < 8; u++) acc[u] = _mm256_setzero_ps();
        int64_t c = 0;
        for (; c + 8 <= n; c += 8) {
            __m256 qv = _mm256_loadu_ps(q + c);
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++) acc[u] = _mm256_fmadd_ps(qv, load8(f16, kp[u], c), acc[u]);
        }
        __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
        __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
        __m256 tot = _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
        float v[8];
        _mm256_storeu_ps(v, tot);
        for (int u = 0; u < 8 && j + u < nk; u++) {
            for (int64_t t = c; t < n; t++) v[u] += q[t] * elem(f16, kp[u], t);
            out[j + u] = scale * v[u];
        }
    }
}

/* Up to 64 output columns held in registers while every value row is added. */
AVX2_INLINE void value_mix_kind(bool f16, const uint8_t *v, size_t stride, int64_t nv, const float *p, int64_t n,
                                float *out)
{
    int64_t c = 0;
    for (; c + 8 <= n; c += 64) {
        int m = (int)((n - c) / 8 < 8 ? (n - c) / 8 : 8);
        __m256 acc[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) acc[i] = i < m ? _mm256_loadu_ps(out + c + 8 * i) : _mm256_setzero_ps();
        for (int64_t j = 0; j < nv; j++) {
            const uint8_t *vj = v + (size_t)j * stride;
            __m256 pj = _mm256_set1_ps(p[j]);
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                if (i < m) acc[i] = _mm256_fmadd_ps(pj, load8(f16, vj, c + 8 * i), acc[i]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (i < m) _mm256_storeu_ps(out + c + 8 * i, acc[i]);
        if (m < 8) {
            c += 8 * m;
            break;
        }
    }
    for (; c < n; c++)
        for (int64_t j = 0; j < nv; j++) out[c] += p[j] * elem(f16, v + (size_t)j * stride, c);
}

AVX2 static void key_scores_avx2(pdi_dtype kt, const void *k, size_t stride, int64_t nk, const float *q,
                                 int64_t q_stride, int64_t nh, int64_t n, float scale, float *out, int64_t out_stride)
{
    for (int64_t h = 0; h < nh; h++) {
        if (kt == PD_F16) key_scores_kind(true, k, stride, nk, q + h * q_stride, n, scale, out + h * out_stride);
        else key_scores_kind(false, k, stride, nk, q + h * q_stride, n, scale, out + h * out_stride);
    }
}

AVX2 static void value_mix_avx2(pdi_dtype vt, const void *v, size_t stride, int64_t nv, const float *p,
                                int64_t p_stride, int64_t nh, int64_t n, float *out, int64_t out_stride)
{
    for (int64_t h = 0; h < nh; h++) {
        if (vt == PD_F16) value_mix_kind(true, v, stride, nv, p + h * p_stride, n, out + h * out_stride);
        else value_mix_kind(false, v, stride, nv, p + h * p_stride, n, out + h * out_stride);
    }
}

/* key_scores_t (kernels.h) on a block of keys stored transposed: a head's
 * scores for 8 keys are one fma chain over d with the query's element
 * broadcast; NH heads x NV vectors of 8 keys from j0 are NH * NV chains in
 * flight (2 x 4 keeps 8 accumulators, 4 key vectors and a query element in
 * the 16 ymm registers). The last vector's scores past nk go to a buffer. */
AVX2_INLINE void scores_t_tile(const bool f16, const int NH, const int NV, const uint8_t *kb, int64_t j0,
                               int64_t nk, const float *q, int64_t q_stride, int64_t n, float scale, float *out,
                               int64_t out_stride)
{
    __m256 acc[2][4];
#pragma GCC unroll 2
    for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[h][v] = _mm256_setzero_ps();
    for (int64_t d = 0; d < n; d++) {
        __m256 kv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) kv[v] = load8(f16, kb, d * PD_KEY_BLOCK + j0 + 8 * v);
#pragma GCC unroll 2
        for (int h = 0; h < NH; h++) {
            __m256 qd = _mm256_set1_ps(q[h * q_stride + d]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[h][v] = _mm256_fmadd_ps(qd, kv[v], acc[h][v]);
        }
    }
#pragma GCC unroll 2
    for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            int64_t j = j0 + 8 * v;
            __m256 s = _mm256_mul_ps(acc[h][v], _mm256_set1_ps(scale));
            if (nk - j >= 8) {
                _mm256_storeu_ps(out + h * out_stride + j, s);
            } else {
                float part[8];
                _mm256_storeu_ps(part, s);
                memcpy(out + h * out_stride + j, part, (size_t)(nk - j) * sizeof(float));
            }
        }
}

/* NH heads over keys [j0, nk) of the block, at most 32 of them: 1-4 vectors. */
AVX2_INLINE void scores_t_heads(const bool f16, const int NH, const uint8_t *kb, int64_t j0, int64_t nk,
                                const float *q, int64_t q_stride, int64_t n, float scale, float *out,
                                int64_t out_stride)
{
    int64_t nv = (nk - j0 + 7) / 8;
    if (nv >= 4) scores_t_tile(f16, NH, 4, kb, j0, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 3) scores_t_tile(f16, NH, 3, kb, j0, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 2) scores_t_tile(f16, NH, 2, kb, j0, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 1) scores_t_tile(f16, NH, 1, kb, j0, nk, q, q_stride, n, scale, out, out_stride);
}

AVX2 static void key_scores_t_avx2(pdi_dtype kt, const void *kb, int64_t nk, const float *q, int64_t q_stride,
                                   int64_t nh, int64_t n, float scale, float *out, int64_t out_stride)
{
    const bool f16 = kt == PD_F16;
    for (int64_t j0 = 0; j0 < nk; j0 += 32) { /* the block in halves of 32 keys */
        int64_t h = 0;
        for (; h + 2 <= nh; h += 2)
            scores_t_heads(f16, 2, kb, j0, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
        if (h < nh)
            scores_t_heads(f16, 1, kb, j0, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
    }
}

/* exp of eight floats: 2^n * p(r) with r = x - n ln 2 (ln 2 in two parts) and
 * p of degree 7 (the Cephes coefficients), within 2 ulp of expf on
 * [-87, 88]; below -87 (and -inf, a masked score) exactly 0. */
AVX2_INLINE __m256 exp8(__m256 x)
{
    __m256 zero_below = _mm256_cmp_ps(x, _mm256_set1_ps(PD_EXP_LO), _CMP_GE_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(PD_EXP_LO)), _mm256_set1_ps(PD_EXP_HI));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(PD_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 p;
    PD_EXP_POLY(__m256, _mm256_fmadd_ps, _mm256_fnmadd_ps, _mm256_mul_ps, _mm256_add_ps, _mm256_set1_ps, n, x, p);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), zero_below);
}

AVX2 float pdi_exp_sum_avx2(float *s, int64_t n, float max)
{
    __m256 vmax = _mm256_set1_ps(max), acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + i), vmax));
        _mm256_storeu_ps(s + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum256(acc);
    if (i < n) {
        float rest[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        memcpy(rest, s + i, (size_t)(n - i) * sizeof(float));
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(rest), vmax));
        _mm256_storeu_ps(rest, e);
        memcpy(s + i, rest, (size_t)(n - i) * sizeof(float));
        sum += hsum256(e);
    }
    return sum;
}

/* silu(g) * u eight at a time with exp8 (-g past 88 gives a huge finite
 * exp and so -0 or a tiny silu where expf gives inf and -0; NaN stays NaN). */
AVX2 void pdi_silu_mul_avx2(float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                                              _mm256_loadu_ps(u + i)));
    }
    if (i < n) pdi_silu_mul(g + i, u + i, n - i);
}

static const pdi_kernels avx2 = PD_X86_KERNELS("avx2", pdi_fmatmul_avx2, pdi_qmatmul_avx2, 8, pdi_qmatmul_x8_avx2, quantize_act_avx2,
                                                key_scores_avx2, value_mix_avx2, key_scores_t_avx2, pdi_exp_sum_avx2,
                                                pdi_silu_mul_avx2);

const pdi_kernels *pdi_kernels_avx2(void)
{
    __builtin_cpu_init();
    unsigned eax, ebx, ecx, edx;
    /* F16C is CPUID leaf 1, ECX bit 29 (not every compiler's builtin knows its name) */
    bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return &avx2;
    return NULL;
}

#else
const pdi_kernels *pdi_kernels_avx2(void) { return NULL; }
#endif
