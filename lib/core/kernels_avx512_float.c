/* kernels_avx512_float.c - the AVX-512 table's product of float weight rows
 * (F32, F16, BF16) with float activations: two rows to a 512-bit vector.
 *
 * Row r's eight weights sit in the low 256 bits and row r+1's in the high
 * 256 bits; each token's eight activations are broadcast to both halves. So
 * each half is the AVX2 kernel's accumulator for its row and token, added to
 * in the same order and reduced by the same hsum256: every result has the
 * bits of pdi_dot_row_avx2 and pdi_fmatmul_avx2, and a pass of any number of
 * rows (speculation's verifying passes) gives decoding's logits exactly.
 *
 * Tiles of 3 row pairs x 8 tokens: 24 accumulators, 3 weight pairs and one
 * activation vector in the 32 zmm registers; each weight pair, widened once,
 * serves 8 tokens (the AVX2 tile, 3 rows x 4 tokens in 16 ymm registers,
 * widens each row once per 4 tokens and does half the work per instruction).
 *
 * Compiled with target attributes, as kernels_avx512.c. */
#include "kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX512F_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"
#define AVX512F_INLINE __attribute__((target(AVX512F_TARGET), always_inline)) static inline

#define TILE_PAIRS 3
#define TILE_TOKS 8

/* Columns c..c+7 of rows r (low half) and r+1 (high half) as floats. */
AVX512F_INLINE __m512 weight_pair(const pdi_dtype t, const uint8_t *row, size_t row_bytes, int64_t c)
{
    const uint8_t *next = row + row_bytes;
    if (t == PD_F32)
        return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps((const float *)(const void *)(row + 4 * c))),
                                  _mm256_loadu_ps((const float *)(const void *)(next + 4 * c)), 1);
    __m256i h = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * c))),
        _mm_loadu_si128((const __m128i *)(const void *)(next + 2 * c)), 1);
    if (t == PD_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Each 256-bit half of v summed as hsum256 sums its vector (so as
 * pdi_dot_row_avx2 ends): lane 0 holds ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7))
 * of the low half, lane 8 that of the high half. */
AVX512F_INLINE __m512 hsum_halves(__m512 v)
{
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* y += the columns of row past c (the last multiple of 8) times x's, in
 * pdi_dot_row_avx2's order. */
static void add_tail(pdi_dtype t, const uint8_t *row, const float *x, int64_t c, int64_t n, float *y)
{
    float rest[8], total = *y;
    pdi_row_to_f32(t, row + (size_t)c * (t == PD_F32 ? 4 : 2), rest, n - c);
    for (int64_t k = 0; k < n - c; k++) total += rest[k] * x[c + k];
    *y = total;
}

/* RP row pairs from w times RN tokens from x into y. */
AVX512F_INLINE void pair_tile(const pdi_dtype t, const int RP, const int RN, const uint8_t *w, size_t row_bytes,
                              int64_t n, const float *x, int64_t x_stride, float *y, int64_t y_stride)
{
    __m512 acc[TILE_PAIRS][TILE_TOKS];
#pragma GCC unroll 4
    for (int p = 0; p < RP; p++)
#pragma GCC unroll 8
        for (int u = 0; u < RN; u++) acc[p][u] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m512 wv[TILE_PAIRS];
#pragma GCC unroll 4
        for (int p = 0; p < RP; p++) wv[p] = weight_pair(t, w + (size_t)(2 * p) * row_bytes, row_bytes, c);
#pragma GCC unroll 8
        for (int u = 0; u < RN; u++) {
            __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x + u * x_stride + c));
#pragma GCC unroll 4
            for (int p = 0; p < RP; p++) acc[p][u] = _mm512_fmadd_ps(wv[p], xv, acc[p][u]);
        }
    }
    /* every sum stored before any tail's call, which would clobber the accumulators */
#pragma GCC unroll 4
    for (int p = 0; p < RP; p++)
#pragma GCC unroll 8
        for (int u = 0; u < RN; u++) {
            float sums[16];
            _mm512_storeu_ps(sums, hsum_halves(acc[p][u]));
            y[u * y_stride + 2 * p] = sums[0];
            y[u * y_stride + 2 * p + 1] = sums[8];
        }
    if (c < n)
        for (int p = 0; p < 2 * RP; p++)
            for (int u = 0; u < RN; u++)
                add_tail(t, w + (size_t)p * row_bytes, x + u * x_stride, c, n, y + u * y_stride + p);
}

/* A tile of RP pairs and rn (1..8) tokens, rn made a constant for the unrolled loops. */
#define PAIR_TILE_TOKENS(T, RP, rn, ...)                                                                                \
    switch (rn) {                                                                                                      \
    case 1: pair_tile(T, RP, 1, __VA_ARGS__); break;                                                                   \
    case 2: pair_tile(T, RP, 2, __VA_ARGS__); break;                                                                   \
    case 3: pair_tile(T, RP, 3, __VA_ARGS__); break;                                                                   \
    case 4: pair_tile(T, RP, 4, __VA_ARGS__); break;                                                                   \
    case 5: pair_tile(T, RP, 5, __VA_ARGS__); break;                                                                   \
    case 6: pair_tile(T, RP, 6, __VA_ARGS__); break;                                                                   \
    case 7: pair_tile(T, RP, 7, __VA_ARGS__); break;                                                                   \
    default: pair_tile(T, RP, 8, __VA_ARGS__); break;                                                                  \
    }

AVX512F_INLINE void fmatmul_pairs(const pdi_dtype t, const uint8_t *w, size_t row_bytes, int64_t n_rows, int64_t n,
                                  const float *x, int64_t x_stride, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    int64_t pairs = n_rows / 2;
    for (int64_t p = 0; p < pairs;) {
        int rp = pairs - p >= TILE_PAIRS ? TILE_PAIRS : 1;
        const uint8_t *wp = w + (size_t)(2 * p) * row_bytes;
        for (int64_t tok = t0; tok < t1; tok += TILE_TOKS) {
            int rn = t1 - tok < TILE_TOKS ? (int)(t1 - tok) : TILE_TOKS;
            const float *xt = x + tok * x_stride;
            float *yt = y + tok * y_stride + 2 * p;
            if (rp == TILE_PAIRS) {
                PAIR_TILE_TOKENS(t, TILE_PAIRS, rn, wp, row_bytes, n, xt, x_stride, yt, y_stride)
            } else {
                PAIR_TILE_TOKENS(t, 1, rn, wp, row_bytes, n, xt, x_stride, yt, y_stride)
            }
        }
        p += rp;
    }
    if (n_rows % 2) /* the odd row: the AVX2 kernel, whose bits these are */
        pdi_fmatmul_avx2(t, w + (size_t)(n_rows - 1) * row_bytes, row_bytes, 1, n, x, x_stride, t0, t1,
                         y + n_rows - 1, y_stride);
}

/* One copy of the loops per weight type, each with its type a constant. */
__attribute__((target(AVX512F_TARGET))) void pdi_fmatmul_avx512(pdi_dtype t, const uint8_t *w, size_t row_bytes,
                                                                 int64_t n_rows, int64_t n, const float *x,
                                                                 int64_t x_stride, int64_t t0, int64_t t1, float *y,
                                                                 int64_t y_stride)
{
    switch (t) {
    case PD_F32: fmatmul_pairs(PD_F32, w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride); break;
    case PD_F16: fmatmul_pairs(PD_F16, w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride); break;
    case PD_BF16: fmatmul_pairs(PD_BF16, w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride); break;
    default: pdi_fmatmul_avx2(t, w, row_bytes, n_rows, n, x, x_stride, t0, t1, y, y_stride); break;
    }
}

#endif
