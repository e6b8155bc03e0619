/* kernels_neon.c - the inner loops for aarch64 (NEON, every aarch64 CPU has it).
 *
 * The integer dot products use SDOT (vdotq_s32) when the compiler targets a
 * CPU with the dot-product extension (-march=armv8.2-a+dotprod or later),
 * else widening multiplies and pairwise adds; both give the reference's int32
 * lanes exactly, so the results are the portable kernels' bits. */
#include "kernels.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#include <string.h>

static float dot_neon(const float *a, const float *b, int64_t n)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    float total = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++) total += a[i] * b[i];
    return total;
}

static void axpy_neon(float *y, float s, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), s));
    for (; i < n; i++) y[i] += s * x[i];
}

/* Float-weight rows: convert 256 at a time and dot (F16 rows via the
 * hardware conversion). Block rows go through the shared pdi_dot_row_blocks:
 * on aarch64 they take the integer path, dot_row is only their float
 * fallback. */
static float dot_row_neon(pdi_dtype t, const void *row, const float *x, int64_t n)
{
    if (pdi_dtype_is_block(t)) return pdi_dot_row_blocks(t, row, x, n);
    const uint8_t *p = row;
    float buf[256], total = 0.0f;
    size_t size = t == PD_F32 ? 4 : 2;
    for (int64_t i = 0; i < n; i += 256) {
        int64_t k = n - i < 256 ? n - i : 256;
        if (t == PD_F16) {
            int64_t j = 0;
            for (; j + 4 <= k; j += 4) {
                uint16_t h[4];
                memcpy(h, p + 2 * (i + j), sizeof h);
                vst1q_f32(buf + j, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h))));
            }
            if (j < k) pdi_row_to_f32(t, p + 2 * (i + j), buf + j, k - j);
        } else {
            pdi_row_to_f32(t, p + size * (size_t)i, buf, k);
        }
        total += dot_neon(buf, x + i, k);
    }
    return total;
}

/* ------------------------------------------------ integer dot products */

/* The eight int32 lanes of one block, w[j]*x[j] summed over j = 4k..4k+3:
 * lanes 0-3 from bytes 0-15, lanes 4-7 from bytes 16-31. */
static inline int32x4_t lanes16(int8x16_t w, int8x16_t x)
{
#ifdef __ARM_FEATURE_DOTPROD
    return vdotq_s32(vdupq_n_s32(0), w, x);
#else
    int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
    int16x8_t hi = vmull_high_s8(w, x);
    /* pairs, then pairs of pairs: lane k = bytes 4k..4k+3 */
    return vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi));
#endif
}

/* A tile of up to 4 rows x 2 tokens: 16 float32x4 accumulators (eight lanes
 * a pair), within the 32 NEON registers. */
#define NT_ROWS 4
#define NT_TOKS 2

static inline __attribute__((always_inline)) void ntile(const pdi_dtype t, const int RM, const int RN,
                                                        const uint8_t *w, size_t row_bytes, const pdi_qact *a,
                                                        int64_t tok, float *y, int64_t y_stride)
{
    const bool q8 = t == PD_Q8_0;
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    const uint8x16_t low = vdupq_n_u8(0x0f);
    float32x4_t acc[NT_ROWS][NT_TOKS][2];
    for (int r = 0; r < RM; r++)
        for (int u = 0; u < RN; u++) acc[r][u][0] = acc[r][u][1] = vdupq_n_f32(0.0f);
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap) {
        for (int r = 0; r < RM; r++) {
            const uint8_t *blk = w + (size_t)r * row_bytes + pdi_sub_at(t, b);
            float dw = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(pdi_load_u16(blk)))), 0);
            int8x16_t w0, w1;
            if (q8) {
                w0 = vld1q_s8((const int8_t *)(blk + 2));
                w1 = vld1q_s8((const int8_t *)(blk + 18));
            } else {
                uint8x16_t raw = vld1q_u8(blk + pdi_sub_values(t, b));
                w0 = vreinterpretq_s8_u8(vandq_u8(raw, low));
                w1 = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
            }
            for (int u = 0; u < RN; u++) {
                const int8_t *xu = xq + u * cols;
                float32x4_t dd = vdupq_n_f32(dw * dx[u]);
                int32x4_t l0 = lanes16(w0, vld1q_s8(xu)), l1 = lanes16(w1, vld1q_s8(xu + 16));
                acc[r][u][0] = vfmaq_f32(acc[r][u][0], vcvtq_f32_s32(l0), dd);
                acc[r][u][1] = vfmaq_f32(acc[r][u][1], vcvtq_f32_s32(l1), dd);
            }
        }
    }
    for (int r = 0; r < RM; r++)
        for (int u = 0; u < RN; u++) {
            /* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), the reference's order */
            float32x4_t v = vaddq_f32(acc[r][u][0], acc[r][u][1]);
            float32x2_t h2 = vadd_f32(vget_low_f32(v), vget_high_f32(v));
            y[u * y_stride + r] = vget_lane_f32(h2, 0) + vget_lane_f32(h2, 1);
        }
}

/* The 4-bit block offsets times s, four tokens a vector (as the AVX2 kernels). */
static void q4_offsets(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,
                       int64_t t1, float *y, int64_t y_stride)
{
    const int64_t nb = a->cols / PD_QBLOCK;
    for (int64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = w + (size_t)r * row_bytes;
        for (int64_t tok = t0; tok < t1; tok += 4) {
            float32x4_t off = vdupq_n_f32(0.0f);
            const float *s = a->s + tok;
            for (int64_t b = 0; b < nb; b++, s += a->n_cap) {
                const uint8_t *blk = row + pdi_sub_at(t, b);
                float o = pdi_dtype_has_min(t) ? pdi_f16_to_f32(pdi_load_u16(blk + 2)) : -8.0f * pdi_f16_to_f32(pdi_load_u16(blk));
                off = vfmaq_f32(off, vdupq_n_f32(o), vld1q_f32(s));
            }
            float v[4];
            vst1q_f32(v, off);
            for (int64_t u = 0; u < 4 && tok + u < t1; u++) y[(tok + u) * y_stride + r] += v[u];
        }
    }
}

static inline __attribute__((always_inline)) void qmatmul_kind(const pdi_dtype t, const uint8_t *w, size_t row_bytes,
                                                               int64_t n_rows, const pdi_qact *a, int64_t t0,
                                                               int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r += NT_ROWS) {
        const uint8_t *wr = w + (size_t)r * row_bytes;
        int64_t tok;
        if (n_rows - r >= NT_ROWS) {
            for (tok = t0; tok + NT_TOKS <= t1; tok += NT_TOKS)
                ntile(t, NT_ROWS, NT_TOKS, wr, row_bytes, a, tok, y + tok * y_stride + r, y_stride);
            for (; tok < t1; tok++)
                ntile(t, NT_ROWS, 1, wr, row_bytes, a, tok, y + tok * y_stride + r, y_stride);
        } else {
            for (int64_t rr = r; rr < n_rows; rr++, wr += row_bytes)
                for (tok = t0; tok < t1; tok++)
                    ntile(t, 1, 1, wr, row_bytes, a, tok, y + tok * y_stride + rr, y_stride);
        }
        if (t != PD_Q8_0) {
            int64_t rm = n_rows - r < NT_ROWS ? n_rows - r : NT_ROWS;
            q4_offsets(t, w + (size_t)r * row_bytes, row_bytes, rm, a, t0, t1, y + r, y_stride);
        }
    }
}

static void qmatmul_neon(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                         int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    if (t == PD_Q8_0) qmatmul_kind(PD_Q8_0, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_0) qmatmul_kind(PD_Q4_0, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_1) qmatmul_kind(PD_Q4_1, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else qmatmul_kind(PD_Q4_64, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
}

/* ------------------------------------------------ interleaved block weights
 * (pdi_x_pack, n = 4): per block of a group, the four scales in one conversion and
 * each row's values j and j + 16 as two signed 16-byte vectors (q - 8 for
 * Q4_0, q for Q4_1, Q8_0's bytes as stored), so lanes16 of the two sum to
 * pdi_qdot_x_reference's lanes exactly; Q4_1 adds its offsets m * s, the
 * four rows in one fma chain, and Q4_64 the same a sub-block at a time (its
 * halves share their block's scales). A tile is one group (4 rows) x up to X4_TOKS
 * tokens. */
#define X4_TOKS 4

static inline __attribute__((always_inline)) float32x4_t half4(const uint8_t *p)
{
    uint16_t h[4];
    memcpy(h, p, sizeof h);
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

static inline __attribute__((always_inline)) void x4_tile(const pdi_dtype t, const int RN, const uint8_t *w,
                                                          const pdi_qact *a, int64_t tok, float *y, int64_t y_stride)
{
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    const uint8x16_t low = vdupq_n_u8(0x0f);
    const int8x16_t eight = vdupq_n_s8(8);
    float32x4_t acc[4][X4_TOKS], off[X4_TOKS]; /* off: Q4_1, rows 0-3 */
    for (int u = 0; u < RN; u++) {
        for (int i = 0; i < 4; i++) acc[i][u] = vdupq_n_f32(0.0f);
        off[u] = vdupq_n_f32(0.0f);
    }
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap) {
        const uint8_t *p = w + pdi_x4_sub_at(t, b);
        const size_t at = pdi_x4_values_at(t, b);
        float dw[4];
        vst1q_f32(dw, half4(p));
        if (pdi_dtype_has_min(t)) {
            float32x4_t m4 = half4(p + 8);
            for (int u = 0; u < RN; u++) off[u] = vfmaq_f32(off[u], m4, vdupq_n_f32(sx[u]));
        }
        int8x16_t lo[4], hi[4];
        for (int i = 0; i < 4; i++) {
            if (t == PD_Q8_0) {
                lo[i] = vld1q_s8((const int8_t *)(p + at + 16 * i));
                hi[i] = vld1q_s8((const int8_t *)(p + at + 64 + 16 * i));
            } else {
                uint8x16_t raw = vld1q_u8(p + at + 16 * i);
                lo[i] = vreinterpretq_s8_u8(vandq_u8(raw, low));
                hi[i] = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
                if (t == PD_Q4_0) {
                    lo[i] = vsubq_s8(lo[i], eight);
                    hi[i] = vsubq_s8(hi[i], eight);
                }
            }
        }
        for (int u = 0; u < RN; u++) {
            int8x16_t xl = vld1q_s8(xq + u * cols), xh = vld1q_s8(xq + u * cols + 16);
            for (int i = 0; i < 4; i++) {
                int32x4_t l = vaddq_s32(lanes16(lo[i], xl), lanes16(hi[i], xh));
                acc[i][u] = vfmaq_f32(acc[i][u], vcvtq_f32_s32(l), vdupq_n_f32(dw[i] * dx[u]));
            }
        }
    }
    for (int u = 0; u < RN; u++) {
        /* per row l0 + l2 and l1 + l3, then the pairwise add of those two:
         * (l0 + l2) + (l1 + l3), the reference's order, rows 0-3 in one vector */
        float32x2_t h[4];
        for (int i = 0; i < 4; i++) h[i] = vadd_f32(vget_low_f32(acc[i][u]), vget_high_f32(acc[i][u]));
        float32x4_t rows = vpaddq_f32(vcombine_f32(h[0], h[1]), vcombine_f32(h[2], h[3]));
        if (pdi_dtype_has_min(t)) rows = vaddq_f32(rows, off[u]);
        vst1q_f32(y + u * y_stride, rows);
    }
}

static inline __attribute__((always_inline)) void qmatmul_x4_kind(const pdi_dtype t, const uint8_t *w, size_t row_bytes,
                                                                  int64_t n_rows, const pdi_qact *a, int64_t t0,
                                                                  int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r += 4) {
        const uint8_t *g = w + (size_t)r * row_bytes;
        int64_t tok = t0;
        for (; tok + X4_TOKS <= t1; tok += X4_TOKS) x4_tile(t, X4_TOKS, g, a, tok, y + tok * y_stride + r, y_stride);
        for (; tok < t1; tok++) x4_tile(t, 1, g, a, tok, y + tok * y_stride + r, y_stride);
    }
}

static void qmatmul_x4_neon(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,
                            int64_t t1, float *y, int64_t y_stride)
{
    if (t == PD_Q8_0) qmatmul_x4_kind(PD_Q8_0, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_0) qmatmul_x4_kind(PD_Q4_0, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_1) qmatmul_x4_kind(PD_Q4_1, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else qmatmul_x4_kind(PD_Q4_64, w, row_bytes, n_rows, a, t0, t1, y, y_stride);
}

PD_WIDENED_ATTENTION(neon)

#ifdef __ARM_FEATURE_DOTPROD
#define NEON_NAME "neon-dotprod"
#else
#define NEON_NAME "neon"
#endif
static const pdi_kernels neon = {
    .name = NEON_NAME,
    .dot = dot_neon,
    .axpy = axpy_neon,
    .dot_row = dot_row_neon,
    .fmatmul = fmatmul_neon,
    .qmatmul = qmatmul_neon,
    .interleave = 4,
    .qmatmul_x = qmatmul_x4_neon,
    .widen = pdi_row_to_f32,
    .narrow = pdi_f32_to_f16_n,
    .quantize_act = pdi_quantize_act,
    .key_scores = key_scores_neon,
    .value_mix = value_mix_neon,
    .exp_sum = pdi_exp_sum,
    .silu_mul = pdi_silu_mul,
};

const pdi_kernels *pdi_kernels_neon(void) { return &neon; }

#else
const pdi_kernels *pdi_kernels_neon(void) { return NULL; }
#endif
