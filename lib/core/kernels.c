/* kernels.c - element conversions and the portable and AVX2 inner loops. */
#include "kernels.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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
        int shift = 126 - (int)(absx >> 23); /* half = mant * 2^(e-126), e the biased exponent */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
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
            total += pd_f16_to_f32(load_u16(p)) * s;
        }
        return (float)total;
    case PD_Q4_0:
    case PD_Q4_1: {
        bool has_min = t == PD_Q4_1;
        size_t block = has_min ? 20 : 18, qoff = has_min ? 4 : 2;
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += block, x += PD_QBLOCK) {
            float s = 0.0f, xs = 0.0f;
            for (int j = 0; j < 16; j++) {
                s += (float)(p[qoff + j] & 0x0f) * x[j] + (float)(p[qoff + j] >> 4) * x[j + 16];
                xs += x[j] + x[j + 16];
            }
            float d = pd_f16_to_f32(load_u16(p));
            /* Q4_0: w = d*(q-8); Q4_1: w = d*q + m */
            float offset = has_min ? pd_f16_to_f32(load_u16(p + 2)) : -8.0f * d;
            total += d * s + offset * xs;
        }
        return (float)total;
    }
    }
    return 0.0f;
}

static const pd_kernels portable = {"portable", dot_portable, axpy_portable, dot_row_portable};

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

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static float hsum256(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* 8 int8 at p as floats */
AVX2 static __m256 i8x8(const uint8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

/* 8 uint8 held in the low 64 bits of v, as floats */
AVX2 static __m256 u8x8(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }

AVX2 static float dot_row_avx2(pd_dtype t, const void *row, const float *x, int64_t n)
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
            acc = _mm256_fmadd_ps(_mm256_set1_ps(pd_f16_to_f32(load_u16(p))), s, acc);
        }
        return hsum256(acc);
    case PD_Q4_0:
    case PD_Q4_1: {
        bool has_min = t == PD_Q4_1;
        size_t block = has_min ? 20 : 18, qoff = has_min ? 4 : 2;
        const __m128i low = _mm_set1_epi8(0x0f);
        __m256 acc_x = _mm256_setzero_ps();
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += block, x += PD_QBLOCK) {
            __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(p + qoff));
            __m128i lo = _mm_and_si128(q, low), hi = _mm_and_si128(_mm_srli_epi16(q, 4), low);
            __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
            __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
            __m256 s = _mm256_mul_ps(u8x8(lo), x0);
            s = _mm256_fmadd_ps(u8x8(_mm_srli_si128(lo, 8)), x1, s);
            s = _mm256_fmadd_ps(u8x8(hi), x2, s);
            s = _mm256_fmadd_ps(u8x8(_mm_srli_si128(hi, 8)), x3, s);
            __m256 xs = _mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3));
            float d = pd_f16_to_f32(load_u16(p));
            float offset = has_min ? pd_f16_to_f32(load_u16(p + 2)) : -8.0f * d;
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
        pd_row_to_f32(t, p + (size_t)i * (t == PD_F32 ? 4 : 2), rest, n - i);
        for (int64_t k = 0; k < n - i; k++) total += rest[k] * x[i + k];
    }
    return total;
}

static const pd_kernels avx2 = {"avx2", dot_avx2, axpy_avx2, dot_row_avx2};
#endif

const pd_kernels *pd_kernels_select(void)
{
#ifdef PD_HAVE_X86
    __builtin_cpu_init();
    unsigned eax, ebx, ecx, edx;
    /* F16C is CPUID leaf 1, ECX bit 29 (not every compiler's builtin knows its name) */
    bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return &avx2;
#endif
    return &portable;
}
