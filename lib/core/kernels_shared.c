/* kernels_shared.c - what every kernel set shares (kernels_shared.h): F16
 * narrowing of many floats, activation quantization, exp and SwiGLU, attention over
 * widened rows, the reference orders of the integer dots, and the
 * interleaved weight layouts. The definitions the fast kernels are tested
 * against. */
#include "kernels_shared.h"

#include <math.h>
#include <string.h>

void pdi_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = pdi_f32_to_f16(src[i]);
}

void pdi_rmsnorm(float *out, const float *v, const float *w, int64_t n, float eps)
{
    /* eight running sums in double, so the adds are not one chain of
     * latencies (the compiler makes vectors of them); then summed pairwise */
    double part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] += (double)v[i + k] * v[i + k];
    for (; i < n; i++) part[0] += (double)v[i] * v[i];
    double ss = ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (i = 0; i < n; i++) out[i] = v[i] * scale * w[i];
}

/* ------------------------------------------------- quantized activations */

void pdi_quantize_act(pdi_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1, int64_t b0, int64_t b1)
{
    for (int64_t t = t0; t < t1; t++) {
        const float *xt = x + t * x_stride;
        int8_t *qt = a->q + t * a->cols;
        for (int64_t b = b0; b < b1; b++) {
            const float *v = xt + b * PD_QBLOCK;
            float amax = 0.0f;
            for (int j = 0; j < PD_QBLOCK; j++) amax = fmaxf(amax, fabsf(v[j]));
            float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
            int sum = 0;
            for (int j = 0; j < PD_QBLOCK; j++) {
                /* clamped, so a NaN or an infinity cannot make an out-of-range cast */
                float r = fminf(fmaxf(roundf(v[j] * id), -127.0f), 127.0f);
                qt[b * PD_QBLOCK + j] = (int8_t)r;
                sum += (int)r;
            }
            a->d[b * a->n_cap + t] = d;
            a->s[b * a->n_cap + t] = d * (float)sum;
            a->block_bias[b * a->n_cap + t] = -8 * sum;
        }
    }
}

float pdi_exp_sum(float *s, int64_t n, float max)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s[i] = s[i] == -INFINITY ? 0.0f : expf(s[i] - max);
        sum += s[i];
    }
    return (float)sum;
}

void pdi_silu_mul(float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

#define WIDEN_PIECE 256

void pdi_key_scores_widened(float (*dot)(const float *, const float *, int64_t), pdi_dtype kt, const void *k,
                            size_t stride, int64_t nk, const float *q, int64_t n, float scale, float *out)
{
    float piece[WIDEN_PIECE];
    for (int64_t j = 0; j < nk; j++) {
        const uint8_t *row = (const uint8_t *)k + (size_t)j * stride;
        if (kt == PD_F32) {
            out[j] = scale * dot(q, (const float *)(const void *)row, n);
            continue;
        }
        float sum = 0.0f;
        for (int64_t c = 0; c < n; c += WIDEN_PIECE) {
            int64_t len = n - c < WIDEN_PIECE ? n - c : WIDEN_PIECE;
            pdi_row_to_f32(kt, row + 2 * c, piece, len);
            sum += dot(q + c, piece, len);
        }
        out[j] = scale * sum;
    }
}

void pdi_value_mix_widened(void (*axpy)(float *, float, const float *, int64_t), pdi_dtype vt, const void *v,
                           size_t stride, int64_t nv, const float *p, int64_t n, float *out)
{
    float piece[WIDEN_PIECE];
    for (int64_t j = 0; j < nv; j++) {
        const uint8_t *row = (const uint8_t *)v + (size_t)j * stride;
        if (vt == PD_F32) {
            axpy(out, p[j], (const float *)(const void *)row, n);
            continue;
        }
        for (int64_t c = 0; c < n; c += WIDEN_PIECE) {
            int64_t len = n - c < WIDEN_PIECE ? n - c : WIDEN_PIECE;
            pdi_row_to_f32(vt, row + 2 * c, piece, len);
            axpy(out + c, p[j], piece, len);
        }
    }
}

/* The 32 integer values of sub-block b of a plain row as the integer dots
 * take them, from its block blk: the signed Q8_0 value, or the unsigned
 * 4-bit one; returns dw. */
static float block_values(pdi_dtype t, const uint8_t *blk, int64_t b, int v[PD_QBLOCK])
{
    const uint8_t *q = blk + pdi_sub_values(t, b);
    if (t == PD_Q8_0) {
        for (int j = 0; j < PD_QBLOCK; j++) v[j] = (int8_t)q[j];
    } else {
        for (int j = 0; j < 16; j++) {
            v[j] = q[j] & 0x0f;
            v[j + 16] = q[j] >> 4;
        }
    }
    return pdi_f16_to_f32(pdi_load_u16(blk));
}

float pdi_qdot_reference(pdi_dtype t, const uint8_t *row, const pdi_qact *a, int64_t tok)
{
    int64_t nb = a->cols / PD_QBLOCK;
    float lane[8] = {0}, off = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = row + pdi_sub_at(t, b);
        const int8_t *xq = a->q + tok * a->cols + b * PD_QBLOCK;
        int w[PD_QBLOCK];
        float dw = block_values(t, blk, b, w);
        if (t != PD_Q8_0) {
            float o = pdi_dtype_has_min(t) ? pdi_f16_to_f32(pdi_load_u16(blk + 2)) : -8.0f * dw;
            off = fmaf(o, a->s[b * a->n_cap + tok], off);
        }
        float dd = dw * a->d[b * a->n_cap + tok];
        for (int k = 0; k < 8; k++) {
            int32_t l = 0;
            for (int j = 4 * k; j < 4 * k + 4; j++) l += w[j] * xq[j];
            lane[k] = fmaf((float)l, dd, lane[k]);
        }
    }
    float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    return t == PD_Q8_0 ? sum : sum + off;
}

/* ------------------------------------------- interleaved n rows at a time */

/* A piece of row i's plain block and its place in its group (from the group's start). */
typedef struct {
    size_t group, plain, bytes;
} x_piece;

/* Row i's pieces of plain block b in a group of n: the scale, the
 * minimum, the values (Q8_0's four-row halves; Q4_64's two halves; eight or
 * sixteen rows' dwords). */
static inline int x_pieces(pdi_dtype t, int n, int64_t b, int i, x_piece p[10])
{
    const size_t at = pdi_sub_values(t, 0); /* the values in a plain block */
    const int64_t subs = t == PD_Q4_64 ? 2 : 1; /* sub-blocks a block */
    const bool has_min = pdi_dtype_has_min(t);
    int k = 0;
    if (n >= 8) {
        const size_t piece = 4 * (size_t)n, vb = pdi_xd_values_bytes(t, n);
        size_t sc = pdi_xd_scales_at(t, n, b * subs), v0 = pdi_xd_values_at(t, n, b * subs);
        p[k++] = (x_piece){sc + 2 * (size_t)i, 0, 2};
        if (has_min) p[k++] = (x_piece){sc + 2 * (size_t)n + 2 * (size_t)i, 2, 2};
        for (int64_t s = 0; s < subs; s++)
            for (size_t c = 0; c < vb / piece; c++)
                p[k++] = (x_piece){v0 + (size_t)s * vb + piece * c + 4 * (size_t)i, at + 16 * (size_t)s + 4 * c, 4};
        return k;
    }
    size_t base = (size_t)b * pdi_x4_block_bytes(t), v = 16 * (size_t)i;
    p[k++] = (x_piece){base + 2 * (size_t)i, 0, 2};
    if (has_min) p[k++] = (x_piece){base + 8 + 2 * (size_t)i, 2, 2};
    if (t == PD_Q8_0) {
        p[k++] = (x_piece){base + 8 + v, 2, 16};
        p[k++] = (x_piece){base + 72 + v, 18, 16};
        return k;
    }
    for (int64_t s = 0; s < subs; s++)
        p[k++] = (x_piece){base + pdi_x4_values_at(t, s) + v, at + 16 * (size_t)s, 16};
    return k;
}

/* A piece copied with a constant size, so the copies at load are moves, not calls. */
static inline void copy_piece(uint8_t *dst, const uint8_t *src, size_t bytes)
{
    switch (bytes) {
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 16); break; /* the only other size */
    }
}

/* Row r's plain block b of a matrix interleaved n at a time, into blk. */
static void x_plain_block(pdi_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, int64_t b, uint8_t *blk)
{
    const uint8_t *g = w + (size_t)(r - r % n) * row_bytes;
    x_piece p[10];
    for (int k = 0, np = x_pieces(t, n, b, (int)(r % n), p); k < np; k++)
        memcpy(blk + p[k].plain, g + p[k].group, p[k].bytes);
}

void pdi_x_pack(pdi_dtype t, int n, const uint8_t *src, size_t row_bytes, int64_t n_rows, uint8_t *dst)
{
    size_t bb = pdi_block_bytes(t);
    int64_t nb = (int64_t)(row_bytes / bb);
    for (int64_t g = 0; g < n_rows / n; g++) {
        uint8_t *o = dst + (size_t)(n * g) * row_bytes;
        for (int64_t b = 0; b < nb; b++)
            for (int i = 0; i < n; i++) {
                const uint8_t *blk = src + (size_t)(n * g + i) * row_bytes + (size_t)b * bb;
                x_piece p[10];
                for (int k = 0, np = x_pieces(t, n, b, i, p); k < np; k++)
                    copy_piece(o + p[k].group, blk + p[k].plain, p[k].bytes);
            }
    }
}

void pdi_x_row_to_f32(pdi_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, float *dst, int64_t cols)
{
    uint8_t blk[36];
    const int len = pdi_dtype_block_len(t);
    for (int64_t b = 0; b < cols / len; b++) {
        x_plain_block(t, n, w, row_bytes, r, b, blk);
        pdi_row_to_f32(t, blk, dst + b * len, len);
    }
}

float pdi_qdot_x_reference(pdi_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, const pdi_qact *a,
                           int64_t tok)
{
    float lane[4] = {0}, off = 0.0f, acc = 0.0f;
    const int bias = t == PD_Q4_0 ? 8 : 0;
    const bool has_min = pdi_dtype_has_min(t);
    for (int64_t b = 0; b < a->cols / PD_QBLOCK; b++) {
        uint8_t blk[36];
        int v[PD_QBLOCK];
        x_plain_block(t, n, w, row_bytes, r, pdi_sub_block(t, b), blk);
        float dw = block_values(t, blk, b, v);
        const int8_t *xq = a->q + tok * a->cols + b * PD_QBLOCK;
        float dd = dw * a->d[b * a->n_cap + tok], m = has_min ? pdi_f16_to_f32(pdi_load_u16(blk + 2)) : 0.0f;
        if (n >= 8) {
            int32_t l = 0;
            for (int j = 0; j < PD_QBLOCK; j++) l += (v[j] - bias) * xq[j];
            acc = fmaf((float)l, dd, acc);
            if (has_min) acc = fmaf(m, a->s[b * a->n_cap + tok], acc);
            continue;
        }
        for (int k = 0; k < 4; k++) {
            int32_t l = 0;
            for (int j = 4 * k; j < 4 * k + 4; j++) l += (v[j] - bias) * xq[j] + (v[j + 16] - bias) * xq[j + 16];
            lane[k] = fmaf((float)l, dd, lane[k]);
        }
        if (has_min) off = fmaf(m, a->s[b * a->n_cap + tok], off);
    }
    if (n >= 8) return acc;
    float sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
    return has_min ? sum + off : sum;
}

float pdi_dot_row_blocks(pdi_dtype t, const void *row, const float *x, int64_t n)
{
    const uint8_t *p = row;
    double total = 0.0;
    if (t == PD_Q8_0) {
        for (int64_t b = 0; b < n / PD_QBLOCK; b++, p += 34, x += PD_QBLOCK) {
            const int8_t *q = (const int8_t *)(p + 2);
            float s = 0.0f;
            for (int j = 0; j < PD_QBLOCK; j++) s += (float)q[j] * x[j];
            total += pdi_f16_to_f32(pdi_load_u16(p)) * s;
        }
        return (float)total;
    }
    for (int64_t b = 0; b < n / PD_QBLOCK; b++, x += PD_QBLOCK) {
        const uint8_t *blk = p + pdi_sub_at(t, b), *q = blk + pdi_sub_values(t, b);
        float s = 0.0f, xs = 0.0f;
        for (int j = 0; j < 16; j++) {
            s += (float)(q[j] & 0x0f) * x[j] + (float)(q[j] >> 4) * x[j + 16];
            xs += x[j] + x[j + 16];
        }
        float d = pdi_f16_to_f32(pdi_load_u16(blk));
        /* Q4_0: w = d*(q-8); Q4_1, Q4_64: w = d*q + m */
        float offset = pdi_dtype_has_min(t) ? pdi_f16_to_f32(pdi_load_u16(blk + 2)) : -8.0f * d;
        total += d * s + offset * xs;
    }
    return (float)total;
}
