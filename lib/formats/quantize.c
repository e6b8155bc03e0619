/* quantize.c - float rows to the block types Q8_0, Q4_0 and Q4_1 with the
 * exact arithmetic of ggml's quantize_row_q8_0/q4_0/q4_1_ref, so the bytes
 * are those llama.cpp's own quantizer writes from the same F32 values, and
 * to Q4_64 with Q4_1's arithmetic over blocks of 64. Used by `pocketdec
 * quantize` and by loading with pd_model_params.quantize. */
#include "pd_internal.h"

#include <float.h>
#include <math.h>

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* quantize_row_q8_0_ref for one block: d = amax/127, q = roundf(x/d). The
 * build is ISO C (-std=c11, no contraction), so no multiply-add is fused and
 * every step rounds to float as in ggml's reference code. */
static void block_q8_0(const float *x, uint8_t *out)
{
    float amax = 0.0f;
    for (int j = 0; j < PD_QBLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(out, pdi_f32_to_f16(d));
    for (int j = 0; j < PD_QBLOCK; j++) out[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

/* quantize_row_q4_0_ref: d = (signed value of the first largest |x|) / -8,
 * q = min(15, (int8)(x/d + 8.5)); weight j in the low nibble of byte j,
 * weight j+16 in its high nibble. */
static void block_q4_0(const float *x, uint8_t *out)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < PD_QBLOCK; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(out, pdi_f32_to_f16(d));
    for (int j = 0; j < PD_QBLOCK / 2; j++) {
        const float x0 = x[j] * id, x1 = x[j + 16] * id;
        int q0 = (int8_t)(x0 + 8.5f), q1 = (int8_t)(x1 + 8.5f);
        q0 = q0 < 15 ? q0 : 15;
        q1 = q1 < 15 ? q1 : 15;
        out[2 + j] = (uint8_t)(q0 | (q1 << 4));
    }
}

/* quantize_row_q4_1_ref over a block of len weights (32: Q4_1; 64: Q4_64,
 * MNN's asymmetric 4 bits): d = (max-min)/15, m = min,
 * q = min(15, (int8)((x-min)/d + 0.5)); then each half of 32 as Q4_1 packs
 * its nibbles. */
static void block_q4_min(const float *x, int len, uint8_t *out)
{
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < len; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    put16(out, pdi_f32_to_f16(d));
    put16(out + 2, pdi_f32_to_f16(min));
    for (int h = 0; h < len / PD_QBLOCK; h++) {
        const float *xh = x + h * PD_QBLOCK;
        for (int j = 0; j < PD_QBLOCK / 2; j++) {
            const float x0 = (xh[j] - min) * id, x1 = (xh[j + 16] - min) * id;
            int q0 = (int8_t)(x0 + 0.5f), q1 = (int8_t)(x1 + 0.5f);
            q0 = q0 < 15 ? q0 : 15;
            q1 = q1 < 15 ? q1 : 15;
            out[4 + 16 * h + j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void pdi_quantize_row(pdi_dtype t, const float *x, int64_t n, uint8_t *out)
{
    const int len = pdi_dtype_block_len(t);
    size_t bb = pdi_dtype_row_bytes(t, len);
    for (int64_t b = 0; b < n / len; b++) {
        const float *xb = x + b * len;
        uint8_t *ob = out + (size_t)b * bb;
        if (t == PD_Q8_0) block_q8_0(xb, ob);
        else if (t == PD_Q4_0) block_q4_0(xb, ob);
        else block_q4_min(xb, len, ob);
    }
}
