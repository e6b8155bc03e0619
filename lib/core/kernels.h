/* kernels.h - the numeric inner loops, behind one seam.
 *
 * pd_kernels_select() picks an implementation once (portable C, AVX-512 VNNI
 * or AVX2+FMA on x86-64, NEON on aarch64); the trunk only calls through the
 * returned table. PD_KERNELS=portable or PD_KERNELS=avx2 in the environment
 * forces that one. */
#ifndef PD_KERNELS_H
#define PD_KERNELS_H

#include "pd_internal.h"

/* Positions in a block of a blocked key cache (pd_kernels.key_scores_t). */
#define PD_KEY_BLOCK 64

/* Activations of up to n_cap tokens quantized for the integer kernels: per
 * token, blocks of 32 int8 q = round(x / d) with d = max|x| / 127, and per
 * block s = d * sum(q) (what the block offset of Q4_0/Q4_1 weights multiplies).
 * d and s are block-major, [block][n_cap], so a kernel reads them for
 * consecutive tokens in one load; both carry 8 floats of padding. block_bias
 * holds per block and token -8 times the sum of q: where the kernels on eight
 * or sixteen interleaved rows start a block sum when they take Q4_0's q - 8
 * as q (Q8_0's v as v + 128: 16 times that), made once here instead of once
 * for every tile of every matrix. */
typedef struct pd_qact {
    int64_t n_tok, n_cap, cols; /* cols: a multiple of 32 */
    int8_t *q;                  /* [n_tok][cols] */
    float *d, *s;               /* [cols/32][n_cap] */
    int32_t *block_bias;        /* [cols/32][n_cap]: -8 * sum of the block's q */
} pd_qact;

/* Quantize tokens [t0, t1) of x (row stride x_stride) into a; a->cols set.
 * The definition; the kernel tables carry faster equals. */
void pd_quantize_act(pd_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1);

/* narrow's definition: pd_f32_to_f16 of each. */
void pd_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n);
/* exp_sum's definition: expf of each shifted score, summed in double. */
float pd_exp_sum(float *s, int64_t n, float max);
/* silu_mul's definition, with expf. */
void pd_silu_mul(float *g, const float *u, int64_t n);

/* key_scores and value_mix for tables whose dot and axpy take floats: F16
 * rows are widened a piece at a time. */
void pd_key_scores_widened(float (*dot)(const float *, const float *, int64_t), pd_dtype kt, const void *k,
                           size_t stride, int64_t nk, const float *q, int64_t n, float scale, float *out);
void pd_value_mix_widened(void (*axpy)(float *, float, const float *, int64_t), pd_dtype vt, const void *v,
                          size_t stride, int64_t nv, const float *p, int64_t n, float *out);

/* The static key_scores_NAME, value_mix_NAME and fmatmul_NAME of a table,
 * over its dot_NAME, axpy_NAME and dot_row_NAME. */
#define PD_WIDENED_ATTENTION(NAME)                                                                                    \
    static void key_scores_##NAME(pd_dtype kt, const void *k, size_t stride, int64_t nk, const float *q,             \
                                  int64_t q_stride, int64_t nh, int64_t n, float scale, float *out,                   \
                                  int64_t out_stride)                                                                 \
    {                                                                                                                 \
        for (int64_t h = 0; h < nh; h++)                                                                              \
            pd_key_scores_widened(dot_##NAME, kt, k, stride, nk, q + h * q_stride, n, scale, out + h * out_stride);   \
    }                                                                                                                 \
    static void value_mix_##NAME(pd_dtype vt, const void *v, size_t stride, int64_t nv, const float *p,              \
                                 int64_t p_stride, int64_t nh, int64_t n, float *out, int64_t out_stride)             \
    {                                                                                                                 \
        for (int64_t h = 0; h < nh; h++)                                                                              \
            pd_value_mix_widened(axpy_##NAME, vt, v, stride, nv, p + h * p_stride, n, out + h * out_stride);          \
    }                                                                                                                 \
    static void fmatmul_##NAME(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n,             \
                               const float *x, int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)  \
    {                                                                                                                 \
        for (int64_t r = 0; r < n_rows; r++)                                                                          \
            for (int64_t tok = t0; tok < t1; tok++)                                                                   \
                y[tok * y_stride + r] = dot_row_##NAME(t, w + (size_t)r * row_bytes, x + tok * x_stride, n);          \
    }

/* For a qmatmul-shaped DRIVER(type, w, row_bytes, n_rows, a, t0, t1, y,
 * y_stride) inlined with its type a constant: per block type a function
 * NAME_q8_0 ... under the target attribute ATTR, and the entry
 * LINKAGE void ENTRY(pd_dtype t, ...) that picks one. */
#define PD_BLOCK_TYPE_VARIANT(ATTR, NAME, DRIVER, T)                                                                   \
    ATTR static void NAME(const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,            \
                          int64_t t1, float *y, int64_t y_stride)                                                      \
    {                                                                                                                  \
        DRIVER(T, w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                                       \
    }
#define PD_BLOCK_TYPE_ENTRY(ATTR, LINKAGE, ENTRY, NAME, DRIVER)                                                        \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q8_0, DRIVER, PD_Q8_0)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_0, DRIVER, PD_Q4_0)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_1, DRIVER, PD_Q4_1)                                                          \
    PD_BLOCK_TYPE_VARIANT(ATTR, NAME##_q4_64, DRIVER, PD_Q4_64)                                                        \
    LINKAGE void ENTRY(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,   \
                       int64_t t1, float *y, int64_t y_stride)                                                         \
    {                                                                                                                  \
        if (t == PD_Q8_0) NAME##_q8_0(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                   \
        else if (t == PD_Q4_0) NAME##_q4_0(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                              \
        else if (t == PD_Q4_1) NAME##_q4_1(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                              \
        else NAME##_q4_64(w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                               \
    }

typedef struct pd_kernels {
    const char *name;
    /* sum of a[i]*b[i] for i < n */
    float (*dot)(const float *a, const float *b, int64_t n);
    /* y[i] += s * x[i] */
    void (*axpy)(float *y, float s, const float *x, int64_t n);
    /* dot of one stored weight row of type t (n elements) with x, without
     * converting the row first (F32/F16/BF16 decode; every type in tests) */
    float (*dot_row)(pd_dtype t, const void *row, const float *x, int64_t n);
    /* Q8_0/Q4_0/Q4_1 rows times quantized activations, integer dot products:
     * y[t * y_stride + r] = row r . token t for r < n_rows, t0 <= t < t1, row r
     * at w + r * row_bytes. Each (row, token) is summed in one fixed order
     * (pd_qdot_reference in kernels.c), so every implementation and every
     * split of rows and tokens gives the same bits. */
    void (*qmatmul)(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,
                    int64_t t1, float *y, int64_t y_stride);
    /* qmatmul for rows of type t interleaved `interleave` at a time
     * (pd_x_pack): n_rows a multiple of interleave, w the group of the first
     * row. Sums in the order of pd_qdot_x_reference, so every split gives the
     * same bits. interleave 0 in a table without it: the model then keeps the
     * file's layout. */
    int interleave; /* rows a group: 4, 8 or 16 */
    void (*qmatmul_x)(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,
                       int64_t t1, float *y, int64_t y_stride);
    /* F32/F16/BF16 rows times float activations: y[t * y_stride + r] = row r .
     * x[t] (x row stride x_stride, n columns) for r < n_rows, t0 <= t < t1;
     * each stored row is widened once per tile of tokens, not once per token. */
    void (*fmatmul)(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,
                    int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride);
    /* pd_row_to_f32's result: n stored elements of type t as floats */
    void (*widen)(pd_dtype t, const void *src, float *dst, int64_t n);
    /* n floats as F16 (the F16 KV cache), pd_f32_to_f16's bits */
    void (*narrow)(const float *src, uint16_t *dst, int64_t n);
    /* pd_quantize_act's result, bit for bit */
    void (*quantize_act)(pd_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1);
    /* Attention over cached rows (kt: PD_F32 or PD_F16), row j at k +
     * j*stride bytes, n elements each:
     * key_scores, for nh query heads sharing the rows (head h's query at q +
     * h*q_stride, its scores at out + h*out_stride): out_h[j] = scale * (q_h .
     * k_j) for j < nk, each score the same bits whatever nh;
     * value_mix, for nh heads sharing the rows (head h's weights at p +
     * h*p_stride, its output at out + h*out_stride): out_h[d] += sum over j <
     * nv of p_h[j] * v_j[d], for d < n, each the same bits whatever nh;
     * exp_sum: s[i] = exp(s[i] - max) for i < n (0 where s[i] is -inf), and
     * returns their sum. */
    void (*key_scores)(pd_dtype kt, const void *k, size_t stride, int64_t nk, const float *q, int64_t q_stride,
                       int64_t nh, int64_t n, float scale, float *out, int64_t out_stride);
    void (*value_mix)(pd_dtype vt, const void *v, size_t stride, int64_t nv, const float *p, int64_t p_stride,
                      int64_t nh, int64_t n, float *out, int64_t out_stride);
    float (*exp_sum)(float *s, int64_t n, float max);
    /* Scores from a block of keys stored transposed, for tables where that
     * is faster (NULL in the others: the context keeps its keys in rows and
     * attention calls key_scores). kb: n rows of PD_KEY_BLOCK elements of kt
     * (F32 or F16), key j's element d at d*PD_KEY_BLOCK + j (the rows past
     * nk read but their results unused). For nh heads as key_scores (head
     * h's query at q + h*q_stride): out_h[j] = scale * sum over d < n of
     * q_h[d] * k_j[d] for j < nk (<= PD_KEY_BLOCK), summed d = 0, 1, ... in
     * one chain of fmas, so each score has the same bits whatever nh and nk. */
    void (*key_scores_t)(pd_dtype kt, const void *kb, int64_t nk, const float *q, int64_t q_stride, int64_t nh,
                         int64_t n, float scale, float *out, int64_t out_stride);
    /* SwiGLU: g[i] = silu(g[i]) * u[i] for i < n, silu(x) = x / (1 + exp(-x)) */
    void (*silu_mul)(float *g, const float *u, int64_t n);
} pd_kernels;

const pd_kernels *pd_kernels_select(void);
const pd_kernels *pd_kernels_portable(void);
const pd_kernels *pd_kernels_avx2(void); /* NULL where not compiled or not supported */
const pd_kernels *pd_kernels_neon(void); /* NULL where not compiled */
const pd_kernels *pd_kernels_avx512(void); /* NULL where not compiled or not supported */

/* kernels_avx2_int.c: qmatmul (rows as stored) and qmatmul_x (eight rows
 * interleaved) with AVX2; call only where pd_kernels_avx2() is not NULL */
void pd_qmatmul_avx2(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,
                     int64_t t1, float *y, int64_t y_stride);
void pd_qmatmul_x8_avx2(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,
                        int64_t t1, float *y, int64_t y_stride);
/* kernels_avx512.c: qmatmul with AVX-512 VNNI, and whether this CPU has it */
void pd_qmatmul_avx512(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a, int64_t t0,
                       int64_t t1, float *y, int64_t y_stride);
void pd_qmatmul_x16_avx512(pd_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pd_qact *a,
                          int64_t t0, int64_t t1, float *y, int64_t y_stride);
/* quantize_act, key_scores and value_mix at 512 bits (AVX-512 F/BW/VL/DQ) */
void pd_quantize_act_avx512(pd_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1);
void pd_key_scores_avx512(pd_dtype kt, const void *k, size_t stride, int64_t nk, const float *q,
                          int64_t q_stride, int64_t nh, int64_t n, float scale, float *out, int64_t out_stride);
void pd_value_mix_avx512(pd_dtype vt, const void *v, size_t stride, int64_t nv, const float *p, int64_t p_stride,
                         int64_t nh, int64_t n, float *out, int64_t out_stride);
void pd_key_scores_t_avx512(pd_dtype kt, const void *kb, int64_t nk, const float *q, int64_t q_stride, int64_t nh,
                            int64_t n, float scale, float *out, int64_t out_stride);
bool pd_avx512vnni_supported(void);

/* a little-endian u16 at any address (block scales are not aligned) */
static inline uint16_t pd_load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline bool pd_dtype_is_block(pd_dtype t)
{
    return t == PD_Q8_0 || t == PD_Q4_0 || t == PD_Q4_1 || t == PD_Q4_64;
}
/* The 4-bit types with a minimum per block (w = d * q + m). */
static inline bool pd_dtype_has_min(pd_dtype t) { return t == PD_Q4_1 || t == PD_Q4_64; }

/* The integer kernels walk a row in sub-blocks of 32 weights, one a block of
 * the quantized activations. A sub-block is a whole block of Q8_0, Q4_0 and
 * Q4_1; Q4_64's sub-blocks 2c and 2c + 1 are the halves of its block c and
 * share its d and m, so a kernel reads them as Q4_1 blocks whose scales come
 * from block b / 2. */
static inline int64_t pd_sub_block(pd_dtype t, int64_t b) { return t == PD_Q4_64 ? b >> 1 : b; }
/* Bytes of a plain block of a block type (pd_dtype_row_bytes of one block,
 * inlined for the kernels). */
static inline size_t pd_block_bytes(pd_dtype t) { return t == PD_Q4_64 ? 36 : t == PD_Q8_0 ? 34 : t == PD_Q4_0 ? 18 : 20; }
/* Where sub-block b's block starts in a plain row (its scales), and where
 * the sub-block's values start from there. */
static inline size_t pd_sub_at(pd_dtype t, int64_t b) { return (size_t)pd_sub_block(t, b) * pd_block_bytes(t); }
static inline size_t pd_sub_values(pd_dtype t, int64_t b)
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
float pd_qdot_reference(pd_dtype t, const uint8_t *row, const pd_qact *a, int64_t tok);

/* Block weights interleaved n rows at a time, n = 4, 8 or 16 (the kernel
 * table's `interleave`). Group g starts n * g plain rows in (n * g *
 * row_bytes, row_bytes the plain row's), so the matrix keeps its size and a
 * row that is a multiple of n its address.
 *
 * n = 4: per block, pd_x4_block_bytes(t) bytes (the four plain blocks' size):
 *   Q4_0 (72): the four F16 scales d, then the four rows' 16 bytes of nibbles
 *              as Q4_0 stores them (byte 16i + j: row i's j and j + 16);
 *   Q4_1 (80): the four d, the four F16 offsets m, then the nibbles as for Q4_0;
 *   Q4_64 (144): the four d, the four m, then each half's nibbles as Q4_1's;
 *   Q8_0 (136): the four d, then the four rows' values 0..15 (16 bytes each),
 *              then their values 16..31.
 * One 64-byte load gives four rows' nibbles, or four rows' values j (first
 * load) and j + 16 (second), with no shuffle.
 *
 * n = 8 or 16: the values of a sub-block, pd_xd_values_bytes(t, n), are
 * pieces of 4n bytes whose dword i is row i's: piece c < 4 of a 4-bit
 * sub-block holds the nibble bytes 4c..4c+3 (values 4c..4c+3 low,
 * 16+4c..16+4c+3 high), piece k < 8 of a Q8_0 block the values 4k..4k+3;
 * the scales of a block, pd_xd_scales_bytes(t, n), are the n d, and for
 * Q4_1 and Q4_64 the n m after them. n = 16 stores the values of every
 * sub-block, then the scales of every block; n = 8 goes block by block, its
 * scales, then its sub-blocks' values (one stream for decode). One vpdpbusd
 * (n = 16) or vpmaddubsw (n = 8) of a piece and a broadcast dword of
 * activations adds four products to each of the n rows' block sums. */
static inline size_t pd_x4_block_bytes(pd_dtype t) { return 4 * pd_block_bytes(t); }
/* Where sub-block b's block starts in a four-row group (its scales), and
 * where the sub-block's values start from there. */
static inline size_t pd_x4_sub_at(pd_dtype t, int64_t b) { return (size_t)pd_sub_block(t, b) * pd_x4_block_bytes(t); }
static inline size_t pd_x4_values_at(pd_dtype t, int64_t b)
{
    return t == PD_Q4_64 ? 16 + 64 * (size_t)(b & 1) : t == PD_Q4_1 ? 16 : 8;
}
static inline size_t pd_xd_values_bytes(pd_dtype t, int n) { return (t == PD_Q8_0 ? 32 : 16) * (size_t)n; }
static inline size_t pd_xd_scales_bytes(pd_dtype t, int n) { return (pd_dtype_has_min(t) ? 4 : 2) * (size_t)n; }
/* src: n_rows (a multiple of n) plain rows of type t; dst: the same bytes interleaved. */
void pd_x_pack(pd_dtype t, int n, const uint8_t *src, size_t row_bytes, int64_t n_rows, uint8_t *dst);
/* Row r of a matrix interleaved n at a time as floats: pd_row_to_f32's values for the plain row. */
void pd_x_row_to_f32(pd_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, float *dst, int64_t cols);
/* The order of qmatmul_x for row r and token tok, sub-block by sub-block. v
 * is the signed value (Q8_0), q - 8 (Q4_0) or q (Q4_1, Q4_64); Q4_0's -8 is
 * inside the integers, so it has no offset term.
 * n = 4: for each sub-block, four int32 lane sums L[k] of v[j] * x[j] over
 * j = 4k..4k+3 and 16+4k..16+4k+3; lane[k] = fmaf(L[k], dw*dx, lane[k]); with
 * a minimum off = fmaf(m, s_b, off). The result is (lane0 + lane2) + (lane1 +
 * lane3), plus off with a minimum.
 * n = 8 or 16: for each sub-block, the int32 sum L of v[j] * x[j] over it;
 * acc = fmaf(L, dw*dx, acc), then with a minimum acc = fmaf(m, s_b, acc). */
float pd_qdot_x_reference(pd_dtype t, int n, const uint8_t *w, size_t row_bytes, int64_t r, const pd_qact *a,
                          int64_t tok);

/* out = v / sqrt(mean(v^2) + eps) * w, for n elements (in place allowed). */
void pd_rmsnorm(float *out, const float *v, const float *w, int64_t n, float eps);

#endif
