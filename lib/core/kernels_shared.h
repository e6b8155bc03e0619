/* kernels_shared.h - what every kernel set shares, below the tables: the
 * definitions the fast kernels must equal (element conversions, activation
 * quantization, exp, SwiGLU, attention over widened rows), the reference
 * orders of the integer dots, the block and interleaved weight layouts, and
 * macros that make a table's functions from them. kernels_shared.c defines
 * them; the per-CPU files (kernels_portable.c, kernels_avx2*.c,
 * kernels_avx512.c, kernels_neon.c) call them, never each other's tables. */
#ifndef PD_KERNELS_SHARED_H
#define PD_KERNELS_SHARED_H

#include "pd_internal.h"

/* Activations of up to n_cap tokens quantized for the integer kernels: per
 * token, blocks of 32 int8 q = round(x / d) with d = max|x| / 127, and per
 * block s = d * sum(q) (what the block offset of Q4_0/Q4_1 weights multiplies).
 * d and s are block-major, [block][n_cap], so a kernel reads them for
 * consecutive tokens in one load; both carry 8 floats of padding. block_bias
 * holds per block and token -8 times the sum of q: where the kernels on eight
 * or sixteen interleaved rows start a block sum when they take Q4_0's q - 8
 * as q (Q8_0's v as v + 128: 16 times that), made once here instead of once
 * for every tile of every matrix. */
typedef struct pdi_qact {
    int64_t n_tok, n_cap, cols; /* cols: a multiple of 32 */
    int8_t *q;                  /* [n_tok][cols] */
    float *d, *s;               /* [cols/32][n_cap] */
    int32_t *block_bias;        /* [cols/32][n_cap]: -8 * sum of the block's q */
} pdi_qact;

/* Room in a for n tokens of cols columns, zeroed where the kernels read
 * padding; false when out of memory (pdi_qact_free frees what was made). */
bool pdi_qact_alloc(pdi_qact *a, int64_t n, size_t cols);
void pdi_qact_free(pdi_qact *a);

/* Quantize blocks [b0, b1) (of PD_QBLOCK columns) of tokens [t0, t1) of x
 * (row stride x_stride, from column 0) into a; a->cols set. Each block is
 * quantized on its own, so a row may be done a range of blocks at a time.
 * The definition; the kernel tables carry faster equals. */
void pdi_quantize_act(pdi_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1, int64_t b0, int64_t b1);

/* narrow's definition: pdi_f32_to_f16 of each. */
void pdi_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n);
/* exp_sum's definition: expf of each shifted score, summed in double. */
float pdi_exp_sum(float *s, int64_t n, float max);
/* silu_mul's definition, with expf. */
void pdi_silu_mul(float *g, const float *u, int64_t n);

/* key_scores and value_mix for tables whose dot and axpy take floats: F16
 * rows are widened a piece at a time. */
void pdi_key_scores_widened(float (*dot)(const float *, const float *, int64_t), pdi_dtype kt, const void *k,
                            size_t stride, int64_t nk, const float *q, int64_t n, float scale, float *out);
void pdi_value_mix_widened(void (*axpy)(float *, float, const float *, int64_t), pdi_dtype vt, const void *v,
                           size_t stride, int64_t nv, const float *p, int64_t n, float *out);

/* The static key_scores_NAME, value_mix_NAME and fmatmul_NAME of a table,
 * over its dot_NAME, axpy_NAME and dot_row_NAME. */
#define PD_WIDENED_ATTENTION(NAME)                                                                                    \
    static void key_scores_##NAME(pdi_dtype kt, const void *k, size_t stride, int64_t nk, const float *q,             \
                                  int64_t q_stride, int64_t nh, int64_t n, float scale, float *out,                   \
                                  int64_t out_stride)                                                                 \
    {                                                                                                                 \
        for (int64_t h = 0; h < nh; h++)                                                                              \
            pdi_key_scores_widened(dot_##NAME, kt, k, stride, nk, q + h * q_stride, n, scale, out + h * out_stride);   \
    }                                                                                                                 \
    static void value_mix_##NAME(pdi_dtype vt, const void *v, size_t stride, int64_t nv, const float *p,              \
                                 int64_t p_stride, int64_t nh, int64_t n, float *out, int64_t out_stride)             \
    {                                                                                                                 \
        for (int64_t h = 0; h < nh; h++)                                                                              \
            pdi_value_mix_widened(axpy_##NAME, vt, v, stride, nv, p + h * p_stride, n, out + h * out_stride);          \
    }                                                                                                                 \
    static void fmatmul_##NAME(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n,             \
                               const float *x, int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)  \
    {                                                                                                                 \
        for (int64_t r = 0; r < n_rows; r++)                                                                          \
            for (int64_t tok = t0; tok < t1; tok++)                                                                   \
                y[tok * y_stride + r] = dot_row_##NAME(t, w + (size_t)r * row_bytes, x + tok * x_stride, n);          \
    }

/* For a qmatmul-shaped DRIVER(type, w, row_bytes, n_rows, a, t0, t1, y,
 * y_stride) inlined with its type a constant: per block type a function
 * NAME_q8_0 ... under the target attribute ATTR, and the entry
 * LINKAGE void ENTRY(pdi_dtype t, ...) that picks one. */
#define PD_BLOCK_TYPE_VARIANT(ATTR, NAME, DRIVER, T)                                                                   \
    ATTR static void NAME(const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,            \
                          int64_t t1, float *y, int64_t y_stride)                                                      \
    {                                                                                                                  \
        DRIVER(T, w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                                       \
    }
#define PD_BLOCK_TYPE_ENTRY(ATTR, LINKAGE, ENTRY, NAME, DRIVER)                                                        \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q8_0, DRIVER, PD_Q8_0)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_0, DRIVER, PD_Q4_0)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_1, DRIVER, PD_Q4_1)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_64, DRIVER, PD_Q4_64)                                                        \
    LINKAGE void ENTRY(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,   \
                       int64_t t1, float *y, int64_t y_stride)                                                         \
    {                                                                                                                  \
        if (t == PD_Q8_0) NAME##_q8_0(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                   \
        else if (t == PD_Q4_0) NAME##_q4_0(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                              \
        else if (t == PD_Q4_1) NAME##_q4_1(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                              \
        else NAME##_q4_64(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                               \
    }


/* a little-endian u16 at any address (block scales are not aligned) */

static inline bool pdi_dtype_is_block(pdi_dtype t)
{
    return t == PD_Q8_0 || t == PD_Q4_0 || t == PD_Q4_1 || t == PD_Q4_64;
}
/* The 4-bit types with a minimum per block (w = d * q + m). */
static inline bool pdi_dtype_has_min(pdi_dtype t) { return t == PD_Q4_1 || t == PD_Q4_64; }

/* The integer kernels walk a row in sub-blocks of 32 weights, one a block of
 * the quantized activations. A sub-block is a whole block of Q8_0, Q4_0 and
 * Q4_1; Q4_64's sub-blocks 2c and 2c + 1 are the halves of its block c and
 * share its d and m, so a kernel reads them as Q4_1 blocks whose scales come
 * from block b / 2. */
static inline int64_t pdi_sub_block(pdi_dtype t, int64_t b) { return t == PD_Q4_64 ? b >> 1 : b; }
/* Bytes of a plain block of a block type (pdi_dtype_row_bytes of one block,
 * inlined for the kernels). */
static inline size_t pdi_block_bytes(pdi_dtype t) { return t == PD_Q4_64 ? 36 : t == PD_Q8_0 ? 34 : t == PD_Q4_0 ? 18 : 20; }
/* Where sub-block b's block starts in a plain row (its scales), and where
 * the sub-block's values start from there. */
static inline size_t pdi_sub_at(pdi_dtype t, int64_t b) { return (size_t)pdi_sub_block(t, b) * pdi_block_bytes(t); }
static inline size_t pdi_sub_values(pdi_dtype t, int64_t b)
{
    return t == PD_Q4_64 ? 4 + 16 * (size_t)(b & 1) : t == PD_Q4_1 ? 4 : 2;
}

/* The order every qmatmul follows for one (row, token) pair: for each
 * sub-block b, eight int32 lane sums L[k] of w[j]*q[j] over j = 4k..4k+3 (w:
 * the signed Q8_0 value, or the unsigned 4-bit value), then lane[k] =
 * fmaf(L[k], dw*dx, lane[k]); the 4-bit offset term off = fmaf(o_b, s_b, off)
 * with o_b = m (Q4_1, Q4_64) or -8*d (Q4_0); result = ((l0+l4)+(l2+l6)) +
 * ((l1+l5)+(l3+l7)) + off. A Q4_64 row gives the bits of the Q4_1 row that
 * repeats each block's d and m for both halves. */
float pdi_qdot_reference(pdi_dtype t, const uint8_t *row, const pdi_qact *a, int64_t tok);

/* Block weights interleaved n rows at a time, n = 4, 8 or 16 (the kernel
 * table's `interleave`). Group g starts n * g plain rows in (n * g *
 * row_bytes, row_bytes the plain row's), so the matrix keeps its size and a
 * row that is a multiple of n its address.
 *
 * n = 4: per block, pdi_x4_block_bytes(t) bytes (the four plain blocks' size):
 *   Q4_0 (72): the four F16 scales d, then the four rows' 16 bytes of nibbles
 *              as Q4_0 stores them (byte 16i + j: row i's j and j + 16);
 *   Q4_1 (80): the four d, the four F16 offsets m, then the nibbles as for Q4_0;
 *   Q4_64 (144): the four d, the four m, then each half's nibbles as Q4_1's;
 *   Q8_0 (136): the four d, then the four rows' values 0..15 (16 bytes each),
 *              then their values 16..31.
 * One 64-byte load gives four rows' nibbles, or four rows' values j (first
 * load) and j + 16 (second), with no shuffle.
 *
 * n = 8 or 16: the values of a sub-block, pdi_xd_values_bytes(t, n), are
 * pieces of 4n bytes whose dword i is row i's: piece c < 4 of a 4-bit
 * sub-block holds the nibble bytes 4c..4c+3 (values 4c..4c+3 low,
 * 16+4c..16+4c+3 high), piece k < 8 of a Q8_0 block the values 4k..4k+3;
 * the scales of a block, pdi_xd_scales_bytes(t, n), are the n d, and for
 * Q4_1 and Q4_64 the n m after them. A group goes block by block, its
 * scales, then its sub-blocks' values: one stream for decode (n = 16 with
 * the scales after all the values read at 70-75% of that rate from memory
 * on a Zen 4 core). One vpdpbusd
 * (n = 16) or vpmaddubsw (n = 8) of a piece and a broadcast dword of
 * activations adds four products to each of the n rows' block sums. */
static inline size_t pdi_x4_block_bytes(pdi_dtype t) { return 4 * pdi_block_bytes(t); }
/* Where sub-block b's block starts in a four-row group (its scales), and
 * where the sub-block's values start from there. */
static inline size_t pdi_x4_sub_at(pdi_dtype t, int64_t b) { return (size_t)pdi_sub_block(t, b) * pdi_x4_block_bytes(t); }
static inline size_t pdi_x4_values_at(pdi_dtype t, int64_t b)
{
    return t == PD_Q4_64 ? 16 + 64 * (size_t)(b & 1) : t == PD_Q4_1 ? 16 : 8;
}
static inline size_t pdi_xd_values_bytes(pdi_dtype t, int n) { return (t == PD_Q8_0 ? 32 : 16) * (size_t)n; }
static inline size_t pdi_xd_scales_bytes(pdi_dtype t, int n) { return (pdi_dtype_has_min(t) ? 4 : 2) * (size_t)n; }
/* A block of an n-row group: its scales, then its sub-blocks' values. */
static inline size_t pdi_xd_block_bytes(pdi_dtype t, int n)
{
    return pdi_xd_scales_bytes(t, n) + (t == PD_Q4_64 ? 2 : 1) * pdi_xd_values_bytes(t, n);
}
/* From an n-row group's start: the scales of sub-block b's block, and sub-block b's values. */
static inline size_t pdi_xd_scales_at(pdi_dtype t, int n, int64_t b)
{
    return (size_t)pdi_sub_block(t, b) * pdi_xd_block_bytes(t, n);
}
static inline size_t pdi_xd_values_at(pdi_dtype t, int n, int64_t b)
{
    size_t half = t == PD_Q4_64 ? (size_t)(b & 1) * pdi_xd_values_bytes(t, n) : 0; /* Q4_64's second sub-block */
    return pdi_xd_scales_at(t, n, b) + pdi_xd_scales_bytes(t, n) + half;
}
/* src: n_rows (a multiple of n) plain rows of type t; dst: the same bytes interleaved. */
void pdi_x_pack(pdi_dtype t, int n, const uint8_t *src, size_t row_bytes, int64_t n_rows, uint8_t *dst);
/* Row r of a matrix interleaved n at a time as floats: pdi_row_to_f32's values for the plain row. */
void pdi_x_row_to_f32(pdi_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, float *dst, int64_t cols);
/* The order of qmatmul_x for row r and token tok, sub-block by sub-block. v
 * is the signed value (Q8_0), q - 8 (Q4_0) or q (Q4_1, Q4_64); Q4_0's -8 is
 * inside the integers, so it has no offset term.
 * n = 4: for each sub-block, four int32 lane sums L[k] of v[j] * x[j] over
 * j = 4k..4k+3 and 16+4k..16+4k+3; lane[k] = fmaf(L[k], dw*dx, lane[k]); with
 * a minimum off = fmaf(m, s_b, off). The result is (lane0 + lane2) + (lane1 +
 * lane3), plus off with a minimum.
 * n = 8 or 16: for each sub-block, the int32 sum L of v[j] * x[j] over it;
 * acc = fmaf(L, dw*dx, acc), then with a minimum acc = fmaf(m, s_b, acc). */
float pdi_qdot_x_reference(pdi_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, const pdi_qact *a,
                           int64_t tok);

/* out = v / sqrt(mean(v^2) + eps) * w, for n elements (in place allowed). */
void pdi_rmsnorm(float *out, const float *v, const float *w, int64_t n, float eps);


/* The dot of one stored row of a block type (Q8_0, Q4_0, Q4_1, Q4_64; n
 * elements) with float x, each block's integer dot scaled once by its d (and
 * m): the dot_row of the sets whose block rows take the integer path and
 * need this only as a float fallback (portable, NEON). */
float pdi_dot_row_blocks(pdi_dtype t, const void *row, const float *x, int64_t n);

#endif
