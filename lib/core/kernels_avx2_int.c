/* kernels_avx2_int.c - the integer matrix products for x86-64 with AVX2:
 * qmatmul on rows as stored (4 rows x 3 tokens a tile) and qmatmul_x on
 * rows interleaved eight at a time (pdi_x_pack, n = 8). Both follow their
 * reference orders (pdi_qdot_reference, pdi_qdot_x_reference), so they give
 * the portable kernels' bits. */
#include "kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <string.h>

/* ------------------------------------------------ integer dot products */

/* Rows x tokens of one register tile. 4x3 keeps 12 accumulators plus the
 * operands in the 16 ymm registers; every weight block loaded serves 3 tokens
 * and every activation block 4 rows. */
#define QT_ROWS 4
#define QT_TOKS 3
/* A one-token sweep (decode) streams each weight block once: the block this
 * many rows below is asked for ahead, which the hardware prefetcher alone does
 * not do well across four interleaved rows (one thread: 44 -> 55-60 tok/s). */
#define PREFETCH_ROWS 8

AVX2_INLINE float half_at(const uint8_t *p) { return _cvtsh_ss(pdi_load_u16(p)); }

/* The eight int32 lanes of u (unsigned bytes) times s (signed bytes), four
 * products a lane: maddubs to pairs, madd to quads. */
AVX2_INLINE __m256i lanes_u8s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}


/* One tile of RM rows x RN tokens over every block, in the reference order:
 * per block the eight int32 lanes of w*x (maddubs + madd), then one fma per
 * lane with dw*dx. Q8_0 weights are signed, so |w| times x with w's sign
 * (maddubs wants one unsigned operand); 4-bit values are unsigned already. */
AVX2_INLINE void qtile(const pdi_dtype t, const bool with_off, const int RM, const int RN, const uint8_t *w,
                       size_t row_bytes, const pdi_qact *a, int64_t tok, float *y, int64_t y_stride)
{
    const bool q8 = t == PD_Q8_0;
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256 acc[QT_ROWS][QT_TOKS];
    __m128 off[QT_ROWS][QT_TOKS]; /* with_off: the 4-bit block offsets, in the reference's fma chain */
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int u = 0; u < RN; u++) {
            acc[r][u] = _mm256_setzero_ps();
            off[r][u] = _mm_setzero_ps();
        }
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap) {
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            const uint8_t *blk = w + (size_t)r * row_bytes + pdi_sub_at(t, b);
            if (RN == 1) _mm_prefetch((const char *)(blk + PREFETCH_ROWS * row_bytes), _MM_HINT_T0);
            float dw = half_at(blk);
            if (with_off) {
                __m128 o = _mm_set_ss(pdi_dtype_has_min(t) ? half_at(blk + 2) : -8.0f * dw);
#pragma GCC unroll 4
                for (int u = 0; u < RN; u++) off[r][u] = _mm_fmadd_ss(o, _mm_set_ss(sx[u]), off[r][u]);
            }
            __m256i wq, aw;
            if (q8) {
                wq = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
                aw = _mm256_abs_epi8(wq);
            } else {
                __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(blk + pdi_sub_values(t, b)));
                wq = aw = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low);
            }
#pragma GCC unroll 4
            for (int u = 0; u < RN; u++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(xq + u * cols));
                if (q8) x = _mm256_sign_epi8(x, wq);
                __m256i p = lanes_u8s8(aw, x);
                acc[r][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * dx[u]), acc[r][u]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int u = 0; u < RN; u++) y[u * y_stride + r] = hsum256(acc[r][u]) + (with_off ? _mm_cvtss_f32(off[r][u]) : 0.0f);
}

/* The 4-bit block offsets (m, or -8 d) times s = dx * sum(q), added to rows
 * [0, n_rows) for tokens [t0, t1), eight tokens a vector (s is block-major). */
AVX2_INLINE void q4_offsets(const pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                            int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    const int64_t nb = a->cols / PD_QBLOCK;
    for (int64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = w + (size_t)r * row_bytes;
        for (int64_t tok = t0; tok < t1; tok += 8) {
            __m256 off = _mm256_setzero_ps();
            const float *s = a->s + tok;
            for (int64_t b = 0; b < nb; b++, s += a->n_cap) {
                const uint8_t *blk = row + pdi_sub_at(t, b);
                float o = pdi_dtype_has_min(t) ? half_at(blk + 2) : -8.0f * half_at(blk);
                off = _mm256_fmadd_ps(_mm256_set1_ps(o), _mm256_loadu_ps(s), off);
            }
            float v[8];
            _mm256_storeu_ps(v, off);
            for (int64_t u = 0; u < 8 && tok + u < t1; u++) y[(tok + u) * y_stride + r] += v[u];
        }
    }
}

#define QTILE(RM, RN, wr, tok, yrow)                                                                                   \
    qtile(t, with_off, RM, RN, wr, row_bytes, a, tok, y + (tok) * y_stride + (yrow), y_stride)

/* Rows in panels of QT_ROWS, each panel swept over the tokens (it stays in L1
 * while the tokens' blocks come from L2); leftovers in narrower tiles. The
 * 4-bit offsets go with each tile for a few tokens (decode), and in a pass of
 * eight tokens a vector for more (prefill). */
AVX2_INLINE void qmatmul_kind(const pdi_dtype t, const bool with_off, const uint8_t *w, size_t row_bytes,
                              int64_t n_rows, const pdi_qact *a, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    for (int64_t r = 0; r < n_rows; r += QT_ROWS) {
        const uint8_t *wr = w + (size_t)r * row_bytes;
        int64_t tok = t0;
        if (n_rows - r >= QT_ROWS) {
            for (; tok + QT_TOKS <= t1; tok += QT_TOKS) QTILE(QT_ROWS, QT_TOKS, wr, tok, r);
            for (; tok < t1; tok++) QTILE(QT_ROWS, 1, wr, tok, r);
        } else {
            for (int64_t rr = r; rr < n_rows; rr++, wr += row_bytes) {
                for (tok = t0; tok + QT_TOKS <= t1; tok += QT_TOKS) QTILE(1, QT_TOKS, wr, tok, rr);
                for (; tok < t1; tok++) QTILE(1, 1, wr, tok, rr);
            }
        }
        if (t != PD_Q8_0 && !with_off) {
            int64_t rm = n_rows - r < QT_ROWS ? n_rows - r : QT_ROWS;
            q4_offsets(t, w + (size_t)r * row_bytes, row_bytes, rm, a, t0, t1, y + r, y_stride);
        }
    }
}

/* Below this many tokens the 4-bit offsets are summed inside the tiles. */
#define OFFSETS_IN_TILE 8

#define QMATMUL_VARIANT(NAME, T, WITH_OFF)                                                                             \
    AVX2 static void NAME(const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a, int64_t t0,           \
                          int64_t t1, float *y, int64_t y_stride)                                                       \
    {                                                                                                                  \
        qmatmul_kind(T, WITH_OFF, w, row_bytes, n_rows, a, t0, t1, y, y_stride);                                       \
    }
QMATMUL_VARIANT(qmatmul_q8, PD_Q8_0, false)
QMATMUL_VARIANT(qmatmul_q4_0, PD_Q4_0, false)
QMATMUL_VARIANT(qmatmul_q4_0_few, PD_Q4_0, true)
QMATMUL_VARIANT(qmatmul_q4_1, PD_Q4_1, false)
QMATMUL_VARIANT(qmatmul_q4_1_few, PD_Q4_1, true)
QMATMUL_VARIANT(qmatmul_q4_64, PD_Q4_64, false)
QMATMUL_VARIANT(qmatmul_q4_64_few, PD_Q4_64, true)

AVX2 void pdi_qmatmul_avx2(pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                           int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    bool few = t1 - t0 < OFFSETS_IN_TILE;
    if (t == PD_Q8_0) qmatmul_q8(w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_0) (few ? qmatmul_q4_0_few : qmatmul_q4_0)(w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else if (t == PD_Q4_1) (few ? qmatmul_q4_1_few : qmatmul_q4_1)(w, row_bytes, n_rows, a, t0, t1, y, y_stride);
    else (few ? qmatmul_q4_64_few : qmatmul_q4_64)(w, row_bytes, n_rows, a, t0, t1, y, y_stride);
}

/* ---------------------------------------- interleaved eight rows at a time
 *
 * (pdi_x_pack, n = 8) A 32-byte piece holds four values of each of 8 rows,
 * one row a dword, so vpmaddubsw with one broadcast dword of a token's
 * activations gives every row two sums of two products. For the 4-bit
 * types the eight pieces of a block (four, each for its low and its high
 * nibbles) add up in int16 (at most 16 * 15 * 127 = 30480) and one
 * vpmaddwd makes the 8 rows' whole block sums; a block then costs a token
 * one convert, one multiply (dw * dx) and one fma for 8 rows, where the four
 * rows a group took as many for two. Q4_0's -8 is taken out in the
 * integers (each sum starts from pdi_qact's block_bias), Q4_1 and Q4_64 add
 * m * s after each block, as pdi_qdot_x_reference orders them. Q8_0 goes as
 * |w| times x with w's sign, each piece widened to int32 on its own (two
 * could pass int16). A tile is one group x up to X8_TOKS tokens. */
#define X8_TOKS 4 /* 3 measured 5% slower, 6 the same */
#define X8_PREFETCH 4096 /* a group's first tile: bytes ahead in the matrix, one stream of blocks (2-8 KiB alike) */


AVX2_INLINE uint32_t load_u32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Block b of a group: the eight weight operands (Q8_0: |w|), the 8 dw and m. */
typedef struct {
    __m256i v[8];
    __m256 dw, m;
} x8_block;

AVX2_INLINE void x8_load(const pdi_dtype t, const uint8_t *vals, const uint8_t *scales, x8_block *xb)
{
    if (t == PD_Q8_0) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) xb->v[k] = _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(vals + 32 * k)));
    } else {
        const __m256i lo = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(vals + 32 * c));
            xb->v[c] = _mm256_and_si256(q, lo);
            xb->v[c + 4] = _mm256_and_si256(_mm256_srli_epi16(q, 4), lo);
        }
    }
    xb->dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)scales));
    xb->m = pdi_dtype_has_min(t) ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(scales + 16)))
                                : _mm256_setzero_ps();
}

/* The 8 rows' block sums for one token's block xq (32 int8), from init;
 * vals: the block's pieces (Q8_0 reads the signs there). */
AVX2_INLINE __m256i x8_dots(const pdi_dtype t, const x8_block *xb, const uint8_t *vals, const int8_t *xq, int32_t init)
{
    const __m256i ones = _mm256_set1_epi16(1);
    if (t == PD_Q8_0) {
        __m256i l = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m256i x = _mm256_set1_epi32((int)load_u32(xq + 4 * k));
            __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(vals + 32 * k));
            l = _mm256_add_epi32(l, _mm256_madd_epi16(_mm256_maddubs_epi16(xb->v[k], _mm256_sign_epi8(x, w)), ones));
        }
        return l;
    }
    __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        s = _mm256_add_epi16(s, _mm256_maddubs_epi16(xb->v[k], _mm256_set1_epi32((int)load_u32(xq + 4 * k))));
    return _mm256_add_epi32(_mm256_set1_epi32(init), _mm256_madd_epi16(s, ones));
}

/* One group (8 rows) times NT tokens from tok; stream: the group's first
 * tile, which reads it from memory (prefetching the blocks ahead). */
AVX2_INLINE void x8_tile(const pdi_dtype t, const int NT, const bool stream, const uint8_t *g, const pdi_qact *a,
                         int64_t tok, float *y, int64_t y_stride)
{
    const size_t vb = pdi_xd_values_bytes(t, 8);
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    __m256 acc[X8_TOKS];
#pragma GCC unroll 8
    for (int u = 0; u < NT; u++) acc[u] = _mm256_setzero_ps();
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    const int32_t *bx = a->block_bias + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap, bx += cap) {
        const uint8_t *sc = g + pdi_xd_scales_at(t, 8, b), *vals = g + pdi_xd_values_at(t, 8, b);
        if (stream) /* the group's first pass over its blocks: one stream of blocks from memory */
            for (size_t o = 0; o < vb; o += 64) _mm_prefetch((const char *)vals + X8_PREFETCH + o, _MM_HINT_T0);
        x8_block xb;
        x8_load(t, vals, sc, &xb);
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) {
            __m256i l = x8_dots(t, &xb, vals, xq + u * cols, t == PD_Q4_0 ? bx[u] : 0);
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(l), _mm256_mul_ps(xb.dw, _mm256_set1_ps(dx[u])), acc[u]);
            if (pdi_dtype_has_min(t)) acc[u] = _mm256_fmadd_ps(xb.m, _mm256_set1_ps(sx[u]), acc[u]);
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < NT; u++) _mm256_storeu_ps(y + u * y_stride, acc[u]);
}

AVX2_INLINE void qmatmul_x8_kind(const pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows,
                                 const pdi_qact *a, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
/* stream as a constant at each call, so that the prefetch test leaves the block loop */
#define X8_TILE(NT) \
    (tok == t0 ? x8_tile(t, NT, true, g, a, tok, y + tok * y_stride + r, y_stride) \
               : x8_tile(t, NT, false, g, a, tok, y + tok * y_stride + r, y_stride))
    for (int64_t r = 0; r < n_rows; r += 8) {
        const uint8_t *g = w + (size_t)r * row_bytes;
        int64_t tok = t0;
        for (; tok + X8_TOKS <= t1; tok += X8_TOKS) X8_TILE(X8_TOKS);
        if (t1 - tok >= 2) {
            X8_TILE(2);
            tok += 2;
        }
        for (; tok < t1; tok++) X8_TILE(1);
    }
#undef X8_TILE
}

PD_BLOCK_TYPE_ENTRY(AVX2, , pdi_qmatmul_x8_avx2, qmatmul_x8, qmatmul_x8_kind)

#endif
