/* kernels.c - element conversions and the portable and AVX2 inner loops. */
#include "kernels.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PD_HAVE_X86 1
#endif

float pd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t pd_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffff;
    if (absx >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
    if (absx >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds past the largest half */
    if (absx < 0x38800000) {                                  /* subnormal half or zero */
        if (absx < 0x33000000) return (uint16_t)sign;
        uint32_t mant = (absx & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(absx >> 23);
        uint32_t half = mant >> (shift + 1);
        uint32_t rem = mant & ((1u << (shift + 1)) - 1);
        uint32_t mid = 1u << shift;
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx - 0x38000000) >> 13);
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)(sign | half);
}

float pd_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

void pd_row_to_f32(pd_dtype t, const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    switch (t) {
    case PD_F32:
        memcpy(dst, p, (size_t)n * 4);
        break;
    case PD_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = pd_f16_to_f32(load_u16(p + 2 * i));
        break;
    case PD_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = pd_bf16_to_f32(load_u16(p + 2 * i));
        break;
    case PD_Q8_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 34) {
            float d = pd_f16_to_f32(load_u16(p));
            const int8_t *q = (const int8_t *)(p + 2);
            for (int j = 0; j < PD_QBLOCK; j++) dst[b * PD_QBLOCK + j] = d * (float)q[j];
        }
        break;
    case PD_Q4_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 18) {
            float d = pd_f16_to_f32(load_u16(p));
            float *o = dst + b * PD_QBLOCK;
            for (int j = 0; j < 16; j++) {
                o[j] = d * (float)((p[2 + j] & 0x0f) - 8);
                o[j + 16] = d * (float)((p[2 + j] >> 4) - 8);
            }
        }
        break;
    case PD_Q4_1:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 20) {
            float d = pd_f16_to_f32(load_u16(p));
            float m = pd_f16_to_f32(load_u16(p + 2));
            float *o = dst + b * PD_QBLOCK;
            for (int j = 0; j < 16; j++) {
                o[j] = d * (float)(p[4 + j] & 0x0f) + m;
                o[j + 16] = d * (float)(p[4 + j] >> 4) + m;
            }
        }
        break;
    }
}

void pd_rmsnorm(float *out, const float *v, const float *w, int64_t n, float eps)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)v[i] * v[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++) out[i] = v[i] * scale * w[i];
}

/* ---------------------------------------------------------------- portable */

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

static const pd_kernels portable = {"portable", dot_portable, axpy_portable};

const pd_kernels *pd_kernels_portable(void) { return &portable; }

/* -------------------------------------------------------------------- AVX2 */

#ifdef PD_HAVE_X86
__attribute__((target("avx2,fma"))) static float dot_avx2(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s0 = _mm256_add_ps(s0, s1);
    __m128 lo = _mm256_castps256_ps128(s0), hi = _mm256_extractf128_ps(s0, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    float total = _mm_cvtss_f32(lo);
    for (; i < n; i++) total += a[i] * b[i];
    return total;
}

__attribute__((target("avx2,fma"))) static void axpy_avx2(float *y, float s, const float *x, int64_t n)
{
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vs, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += s * x[i];
}

static const pd_kernels avx2 = {"avx2", dot_avx2, axpy_avx2};
#endif

const pd_kernels *pd_kernels_select(void)
{
#ifdef PD_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2;
#endif
    return &portable;
}
