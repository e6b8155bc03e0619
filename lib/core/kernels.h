/* kernels.h - the numeric inner loops, behind one seam.
 *
 * pdi_kernels_select() (kernels.c) picks a table once: AVX-512 VNNI or
 * AVX2+FMA on x86-64 (kernels_avx512.c, kernels_avx2.c), NEON on aarch64
 * (kernels_neon.c), portable C everywhere (kernels_portable.c); the trunk
 * only calls through the returned table. The per-CPU files build their
 * tables on the shared helpers of kernels_shared.h. PD_KERNELS=portable or
 * PD_KERNELS=avx2 in the environment forces that one (see pocketdec_runtime.h). */
#ifndef PD_KERNELS_H
#define PD_KERNELS_H

#include "kernels_shared.h"

/* Positions in a block of a blocked key cache (pdi_kernels.key_scores_t). */
#define PD_KEY_BLOCK 64

typedef struct pdi_kernels {
    const char *name;
    /* sum of a[i]*b[i] for i < n */
    float (*dot)(const float *a, const float *b, int64_t n);
    /* y[i] += s * x[i] */
    void (*axpy)(float *y, float s, const float *x, int64_t n);
    /* dot of one stored weight row of type t (n elements) with x, without
     * converting the row first (F32/F16/BF16 decode; every type in tests) */
    float (*dot_row)(pdi_dtype t, const void *row, const float *x, int64_t n);
    /* Q8_0/Q4_0/Q4_1 rows times quantized activations, integer dot products:
     * y[t * y_stride + r] = row r . token t for r < n_rows, t0 <= t < t1, row r
     * at w + r * row_bytes. Each (row, token) is summed in one fixed order
     * (pdi_qdot_reference in kernels_shared.c), so every implementation and every
     * split of rows and tokens gives the same bits. */
    void (*qmatmul)(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,
                    int64_t t1, float *y, int64_t y_stride);
    /* qmatmul for rows of type t interleaved `interleave` at a time
     * (pdi_x_pack): n_rows a multiple of interleave, w the group of the first
     * row. Sums in the order of pdi_qdot_x_reference, so every split gives the
     * same bits. interleave 0 in a table without it: the model then keeps the
     * file's layout. */
    int interleave; /* rows a group: 4, 8 or 16 */
    void (*qmatmul_x)(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,
                       int64_t t1, float *y, int64_t y_stride);
    /* F32/F16/BF16 rows times float activations: y[t * y_stride + r] = row r .
     * x[t] (x row stride x_stride, n columns) for r < n_rows, t0 <= t < t1;
     * each stored row is widened once per tile of tokens, not once per token. */
    void (*fmatmul)(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n, const float *x,
                    int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride);
    /* pdi_row_to_f32's result: n stored elements of type t as floats */
    void (*widen)(pdi_dtype t, const void *src, float *dst, int64_t n);
    /* n floats as F16 (the F16 KV cache), pdi_f32_to_f16's bits */
    void (*narrow)(const float *src, uint16_t *dst, int64_t n);
    /* pdi_quantize_act's result, bit for bit */
    void (*quantize_act)(pdi_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1, int64_t b0, int64_t b1);
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
    void (*key_scores)(pdi_dtype kt, const void *k, size_t stride, int64_t nk, const float *q, int64_t q_stride,
                       int64_t nh, int64_t n, float scale, float *out, int64_t out_stride);
    void (*value_mix)(pdi_dtype vt, const void *v, size_t stride, int64_t nv, const float *p, int64_t p_stride,
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
    void (*key_scores_t)(pdi_dtype kt, const void *kb, int64_t nk, const float *q, int64_t q_stride, int64_t nh,
                         int64_t n, float scale, float *out, int64_t out_stride);
    /* SwiGLU: g[i] = silu(g[i]) * u[i] for i < n, silu(x) = x / (1 + exp(-x)) */
    void (*silu_mul)(float *g, const float *u, int64_t n);
} pdi_kernels;

/* The table for this CPU: PD_KERNELS=portable gives the portable one,
 * PD_KERNELS=avx2 the AVX2 one where the CPU has it (else as unset);
 * otherwise AVX-512 VNNI, then AVX2, then NEON, then portable, the first
 * this CPU has and this build compiled. */
const pdi_kernels *pdi_kernels_select(void);
/* Each table, NULL where not compiled or (x86) not supported by this CPU. */
const pdi_kernels *pdi_kernels_portable(void); /* never NULL */
const pdi_kernels *pdi_kernels_avx2(void);
const pdi_kernels *pdi_kernels_avx512(void);
const pdi_kernels *pdi_kernels_neon(void);

#endif
