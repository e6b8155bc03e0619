/* numbers.c - how numbers are stored: F16 and BF16 to and from F32, and a
 * row of any stored type (F32, F16, BF16, the block types) widened to F32.
 * The file formats read and write with them; the kernels widen with them. */
#include "pd_internal.h"

#include <string.h>

float pdi_f16_to_f32(uint16_t h)
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

uint16_t pdi_f32_to_f16(float f)
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

float pdi_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* 32 weights d * q + m from Q4_1's 16 bytes of nibbles (byte j: j and j + 16). */
static void q4_min_values(float d, float m, const uint8_t *q, float *o)
{
    for (int j = 0; j < 16; j++) {
        o[j] = d * (float)(q[j] & 0x0f) + m;
        o[j + 16] = d * (float)(q[j] >> 4) + m;
    }
}

void pdi_row_to_f32(pdi_dtype t, const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    switch (t) {
    case PD_F32:
        memcpy(dst, p, (size_t)n * 4);
        break;
    case PD_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = pdi_f16_to_f32(pdi_load_u16(p + 2 * i));
        break;
    case PD_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = pdi_bf16_to_f32(pdi_load_u16(p + 2 * i));
        break;
    case PD_Q8_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 34) {
            float d = pdi_f16_to_f32(pdi_load_u16(p));
            const int8_t *q = (const int8_t *)(p + 2);
            for (int j = 0; j < PD_QBLOCK; j++) dst[b * PD_QBLOCK + j] = d * (float)q[j];
        }
        break;
    case PD_Q4_0:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 18) {
            float d = pdi_f16_to_f32(pdi_load_u16(p));
            float *o = dst + b * PD_QBLOCK;
            for (int j = 0; j < 16; j++) {
                o[j] = d * (float)((p[2 + j] & 0x0f) - 8);
                o[j + 16] = d * (float)((p[2 + j] >> 4) - 8);
            }
        }
        break;
    case PD_Q4_1:
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 20)
            q4_min_values(pdi_f16_to_f32(pdi_load_u16(p)), pdi_f16_to_f32(pdi_load_u16(p + 2)), p + 4, dst + b * PD_QBLOCK);
        break;
    case PD_Q4_64:
        for (int64_t b = 0; b < n / PD_QBLOCK_64; b++, p += 36) {
            float d = pdi_f16_to_f32(pdi_load_u16(p)), m = pdi_f16_to_f32(pdi_load_u16(p + 2));
            q4_min_values(d, m, p + 4, dst + b * PD_QBLOCK_64);
            q4_min_values(d, m, p + 20, dst + b * PD_QBLOCK_64 + PD_QBLOCK);
        }
        break;
    }
}
