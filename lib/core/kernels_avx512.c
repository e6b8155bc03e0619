/* kernels_avx512.c - the AVX-512 VNNI table: qmatmul, qmatmul_x (sixteen
 * rows interleaved), activation quantization and the attention kernels for
 * x86-64 with AVX-512 (F, BW, VL, DQ) and VNNI; its float kernels are the
 * AVX2 table's (kernels_avx2.h).
 *
 * Two weight rows share one 512-bit vector: row r's block in the low 256
 * bits, row r+1's in the high 256 bits. Each half holds the eight int32 lane
 * sums of pdi_qdot_reference for its row, from one vpdpbusd (unsigned bytes
 * times signed bytes, four products a lane), and is scaled and summed in the
 * reference order, so the results are the reference's bits.
 *
 * 4-bit weights (0..15) are the unsigned operand and the int8 activations the
 * signed one. Q8_0 weights are signed too: the activations go in as x ^ 0x80
 * (x + 128 as unsigned) and each lane starts from -128 * sum of its four
 * weights, computed once per block of a row pair and shared by every token.
 *
 * Prefill runs tiles of 2 row pairs x 8 tokens; decode (one token) a tile of
 * 4 rows that shares the scale conversion and prefetches the weights ahead.
 *
 * Compiled with target attributes rather than -mavx512f, so one binary runs
 * everywhere; pdi_kernels_avx512() is NULL on CPUs that cannot run it. */
#include "kernels_avx2.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c"
#define AVX512 __attribute__((target(AVX512_TARGET)))
#define AVX512_INLINE __attribute__((target(AVX512_TARGET), always_inline)) static inline

/* the dtypes' own values, so a kind is also a pdi_dtype (pdi_xd_values_bytes) */
enum { KIND_Q8_0 = PD_Q8_0, KIND_Q4_0 = PD_Q4_0, KIND_Q4_1 = PD_Q4_1, KIND_Q4_64 = PD_Q4_64 };

/* A register tile: up to TILE_PAIRS row pairs x TILE_TOKS tokens. 2 x 8 keeps
 * 16 accumulators, 2 offset accumulators and the pairs' weights, scales and
 * corrections in the 32 zmm registers; each weight vector serves 8 tokens
 * and each activation block 4 rows. */
#define TILE_PAIRS 2
#define TILE_TOKS 8
/* Decode streams the weights: prefetch this many bytes ahead of the block
 * being read. Further (64 KiB) ran past the end of a thread's chunk of rows
 * and into other threads' or other matrices' weights: 8 KiB measured
 * 15-20% faster decode on the MNN-Pocket shape. */
#ifndef PF_DIST
#define PF_DIST 8192
#endif

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* One block of a row pair, ready for every token of a tile. */
typedef struct {
    __m512i w;    /* weight bytes: [row r | row r+1], the unsigned (Q4) or signed (Q8_0) operand */
    __m512i corr; /* Q8_0: -128 * sum of each lane's four weights */
    __m512 dw;    /* [dw(r) x8 | dw(r+1) x8] */
    __m512 o;     /* Q4: the block offset, [o(r) x8 | o(r+1) x8] */
} pair_block;

/* The weight bytes of a sub-block of rows p0 and p1 (p1 == p0 for a single
 * row; both at the sub-block's block, its values voff bytes on), and for
 * Q8_0 the lanes' corrections. */
AVX512_INLINE void load_weights(const int kind, const uint8_t *p0, const uint8_t *p1, size_t voff, pair_block *pb)
{
    const __m512i zero = _mm512_setzero_si512();
    if (kind == KIND_Q8_0) {
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(p0 + voff));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(p1 + voff));
        pb->w = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
        pb->corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8((char)0x80), pb->w));
    } else {
        /* [q(r) q(r) | q(r+1) q(r+1)], the second copy of each shifted by 4:
         * low nibbles are weights 0..15, high nibbles weights 16..31 */
        __m128i q0 = _mm_loadu_si128((const __m128i *)(const void *)(p0 + voff));
        __m128i q1 = _mm_loadu_si128((const __m128i *)(const void *)(p1 + voff));
        __m512i q = _mm512_permutex2var_epi64(_mm512_castsi128_si512(q0), _mm512_set_epi64(9, 8, 9, 8, 1, 0, 1, 0),
                                              _mm512_castsi128_si512(q1));
        q = _mm512_srlv_epi64(q, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0));
        pb->w = _mm512_and_si512(q, _mm512_set1_epi8(0x0f));
        pb->corr = zero;
    }
}

/* 16 floats: f[i] in lanes 0..7 and f[j] in lanes 8..15 */
AVX512_INLINE __m512 spread2(__m512 f, int i, int j)
{
    return _mm512_permutexvar_ps(_mm512_set_epi32(j, j, j, j, j, j, j, j, i, i, i, i, i, i, i, i), f);
}

/* A sub-block of rows p0 and p1: weights, scales and offsets. */
AVX512_INLINE pair_block load_pair(const int kind, const uint8_t *p0, const uint8_t *p1, size_t voff)
{
    pair_block pb;
    load_weights(kind, p0, p1, voff, &pb);
    if (pdi_dtype_has_min((pdi_dtype)kind)) {
        /* d and m of both rows in one conversion: [d(r) m(r) d(r+1) m(r+1)] */
        uint64_t h = load_u32(p0) | (uint64_t)load_u32(p1) << 32;
        __m512 f = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h)));
        pb.dw = spread2(f, 0, 2);
        pb.o = spread2(f, 1, 3);
    } else {
        uint32_t h = pdi_load_u16(p0) | (uint32_t)pdi_load_u16(p1) << 16;
        pb.dw = spread2(_mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h))), 0, 1);
        pb.o = _mm512_mul_ps(pb.dw, _mm512_set1_ps(-8.0f)); /* Q4_0; exact, and unused for Q8_0 */
    }
    return pb;
}

/* The reference's end combine within each 256-bit half of v: lane 0 holds
 * ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) of the low half, lane 8 of the high. */
AVX512_INLINE __m512 hsum_halves(__m512 v)
{
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* NP row pairs (rows 2p and 2p+1 of w; with single, the one row w) times NT
 * tokens from tok, over every block. Per block and pair the weights, scales
 * and corrections are made once; per block, pair and token one vpdpbusd, one
 * conversion, dw*dx and one fma. The 4-bit offsets ride along as one vector
 * per pair, [o(r) s(t..t+7) | o(r+1) s(t..t+7)], since s is block-major. */
AVX512_INLINE void qtile(const int kind, const int NP, const int NT, const uint8_t *w, size_t row_bytes, bool single,
                         const pdi_qact *a, int64_t tok, float *y, int64_t y_stride)
{
    const size_t step = single ? 0 : row_bytes;
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    __m512 acc[TILE_PAIRS][TILE_TOKS], off[TILE_PAIRS];
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) {
        off[p] = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) acc[p][u] = _mm512_setzero_ps();
    }
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap) {
        pair_block pb[TILE_PAIRS];
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            const uint8_t *p0 = w + (size_t)(2 * p) * row_bytes + pdi_sub_at((pdi_dtype)kind, b);
            if (NT == 1) {
                _mm_prefetch((const char *)p0 + PF_DIST, _MM_HINT_T0);
                _mm_prefetch((const char *)p0 + step + PF_DIST, _MM_HINT_T0);
            }
            pb[p] = load_pair(kind, p0, p0 + step, pdi_sub_values((pdi_dtype)kind, b));
        }
        if (kind != KIND_Q8_0) {
            /* s of 8 tokens from tok (the padding covers a tile of fewer) */
            __m512 s = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(sx))));
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++) off[p] = _mm512_fmadd_ps(pb[p].o, s, off[p]);
        }
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) {
            __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(xq + u * cols)));
            if (kind == KIND_Q8_0) x = _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
            __m512 dxu = _mm512_set1_ps(dx[u]);
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                __m512i l = kind == KIND_Q8_0 ? _mm512_dpbusd_epi32(pb[p].corr, x, pb[p].w)
                                              : _mm512_dpbusd_epi32(_mm512_setzero_si512(), pb[p].w, x);
                acc[p][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), _mm512_mul_ps(pb[p].dw, dxu), acc[p][u]);
            }
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) {
        float o[16];
        _mm512_storeu_ps(o, off[p]);
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) {
            float s[16];
            _mm512_storeu_ps(s, hsum_halves(acc[p][u]));
            float *yu = y + u * y_stride + 2 * p;
            yu[0] = kind == KIND_Q8_0 ? s[0] : s[0] + o[u];
            if (!single) yu[1] = kind == KIND_Q8_0 ? s[8] : s[8] + o[8 + u];
        }
    }
}

/* One token times four rows (two pairs), the matrix-vector product of
 * decode, where the weights stream from memory once: the four rows' scales
 * are converted together and scaled by dx once, the 4-bit offsets summed as
 * one vector of four rows, and the weights prefetched PF_DIST bytes ahead
 * (rows are contiguous, so that is a few panels further on). */
AVX512_INLINE void qdecode4(const int kind, const uint8_t *w, size_t row_bytes, const pdi_qact *a, int64_t tok,
                            float *y)
{
    /* bytes a sub-block takes of a row, on average */
    const size_t bsize = kind == KIND_Q8_0 ? 34 : kind == KIND_Q4_1 ? 20 : 18;
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap;
    /* Q4_1 and Q4_64 scales come as [d m] per row, the others as [d] */
    const bool has_min = pdi_dtype_has_min((pdi_dtype)kind);
    const int sd = has_min ? 2 : 1;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m256 off = _mm256_setzero_ps();
    const int8_t *xq = a->q + tok * a->cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap) {
        const uint8_t *p = w + pdi_sub_at((pdi_dtype)kind, b);
        const size_t voff = pdi_sub_values((pdi_dtype)kind, b);
        if (b % (int64_t)(64 / bsize) == 0) /* about once a cache line of each row: more costs load slots */
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) _mm_prefetch((const char *)p + (size_t)r * row_bytes + PF_DIST, _MM_HINT_T0);
        __m256 f;
        if (has_min) {
            uint64_t h01 = load_u32(p) | (uint64_t)load_u32(p + row_bytes) << 32;
            uint64_t h23 = load_u32(p + 2 * row_bytes) | (uint64_t)load_u32(p + 3 * row_bytes) << 32;
            f = _mm256_cvtph_ps(_mm_set_epi64x((long long)h23, (long long)h01));
        } else {
            uint64_t h = pdi_load_u16(p) | (uint64_t)pdi_load_u16(p + row_bytes) << 16 |
                         (uint64_t)pdi_load_u16(p + 2 * row_bytes) << 32 |
                         (uint64_t)pdi_load_u16(p + 3 * row_bytes) << 48;
            f = _mm256_cvtph_ps(_mm_cvtsi64_si128((long long)h));
        }
        __m512 dd = _mm512_castps256_ps512(_mm256_mul_ps(f, _mm256_set1_ps(*dx)));
        if (kind == KIND_Q4_0) off = _mm256_fmadd_ps(_mm256_mul_ps(f, _mm256_set1_ps(-8.0f)), _mm256_set1_ps(*sx), off);
        if (has_min) off = _mm256_fmadd_ps(f, _mm256_set1_ps(*sx), off);
        pair_block p01, p23;
        load_weights(kind, p, p + row_bytes, voff, &p01);
        load_weights(kind, p + 2 * row_bytes, p + 3 * row_bytes, voff, &p23);
        __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)xq));
        __m512i l01, l23;
        if (kind == KIND_Q8_0) {
            x = _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
            l01 = _mm512_dpbusd_epi32(p01.corr, x, p01.w);
            l23 = _mm512_dpbusd_epi32(p23.corr, x, p23.w);
        } else {
            l01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p01.w, x);
            l23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p23.w, x);
        }
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l01), spread2(dd, 0, sd), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l23), spread2(dd, 2 * sd, 3 * sd), acc1);
    }
    float s0[16], s1[16], o[8];
    _mm512_storeu_ps(s0, hsum_halves(acc0));
    _mm512_storeu_ps(s1, hsum_halves(acc1));
    _mm256_storeu_ps(o, off);
    const float sum[4] = {s0[0], s0[8], s1[0], s1[8]};
    for (int r = 0; r < 4; r++) y[r] = kind == KIND_Q8_0 ? sum[r] : sum[r] + o[sd * r + sd - 1];
}

/* NP row pairs from w over tokens [t0, t1): full tiles of TILE_TOKS, then the
 * leftover tokens in tiles of 4, 2 and 1. The pairs' blocks stay in L1 while
 * the tokens' blocks come from L2. */
AVX512_INLINE void qpanel(const int kind, const int NP, const uint8_t *w, size_t row_bytes, bool single,
                          const pdi_qact *a, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    int64_t tok = t0;
    for (; tok + TILE_TOKS <= t1; tok += TILE_TOKS)
        qtile(kind, NP, TILE_TOKS, w, row_bytes, single, a, tok, y + tok * y_stride, y_stride);
    if (t1 - tok >= 4) {
        qtile(kind, NP, 4, w, row_bytes, single, a, tok, y + tok * y_stride, y_stride);
        tok += 4;
    }
    if (t1 - tok >= 2) {
        qtile(kind, NP, 2, w, row_bytes, single, a, tok, y + tok * y_stride, y_stride);
        tok += 2;
    }
    if (tok < t1 && NP == 2) qdecode4(kind, w, row_bytes, a, tok, y + tok * y_stride);
    else if (tok < t1) qtile(kind, NP, 1, w, row_bytes, single, a, tok, y + tok * y_stride, y_stride);
}

/* Rows in panels of TILE_PAIRS pairs, then a last pair, then a last single
 * row (run as a pair of that row with itself, the copy's sums dropped). */
AVX512_INLINE void qmatmul_kind(const int kind, const uint8_t *w, size_t row_bytes, int64_t n_rows, const pdi_qact *a,
                                int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    int64_t r = 0;
    for (; r + 2 * TILE_PAIRS <= n_rows; r += 2 * TILE_PAIRS)
        qpanel(kind, TILE_PAIRS, w + (size_t)r * row_bytes, row_bytes, false, a, t0, t1, y + r, y_stride);
    for (; r < n_rows; r += 2)
        qpanel(kind, 1, w + (size_t)r * row_bytes, row_bytes, n_rows - r == 1, a, t0, t1, y + r, y_stride);
}

PD_BLOCK_TYPE_ENTRY(AVX512, static, qmatmul_avx512, qmatmul, qmatmul_kind)

/* ---------------------------------------- interleaved sixteen rows at a time
 *
 * (pdi_x_pack, n = 16) A 64-byte piece holds four values of each of 16 rows,
 * one row a dword, so vpdpbusd with one broadcast dword of a token's
 * activations adds four products to every row's block sum: eight of them
 * (Q4: four pieces, each nibble half one) make the 16 rows' whole block dots,
 * with no lanes left to add up. Each block then costs a token one convert,
 * one multiply (dw * dx) and one fma for 16 rows, where four rows a group
 * took as many for four.
 *
 * The weights are the unsigned operand: nibbles as they are, Q8_0's signed
 * values as v ^ 0x80 (v + 128). What that adds, or Q4_0's -8, is taken out in
 * the integers: each sum starts from -8 or -128 times the sum of the block's
 * activations (pdi_qact's block_bias). Q4_1's offsets m * s go into the same
 * accumulator after each block, as the reference orders them. */

/* Tiles: prefill one group (16 rows) x TILE_TOKS tokens, the group's eight
 * weight vectors serving every token (12 or 16 tokens measured the same);
 * decode X16_GROUPS_D groups x 1 token: one stream of blocks a thread (on a
 * Zen 4 core 1 group decoded 10-20% faster than 2, 2 and 4 alike; on Zen 5
 * 1, 2 and 4 measured within noise). */
#ifndef X16_GROUPS_D
#define X16_GROUPS_D 1
#endif

/* Block b of a group: the eight weight operands, the 16 dw and Q4_1's 16 m. */
typedef struct {
    __m512i v[8];
    __m512 dw, m;
} x16_block;

AVX512_INLINE x16_block x16_load(const int kind, const uint8_t *vals, const uint8_t *scales)
{
    x16_block xb;
    if (kind == KIND_Q8_0) {
        const __m512i flip = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) xb.v[k] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(vals + 64 * k)), flip);
    } else {
        const __m512i lo = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            __m512i q = _mm512_loadu_si512((const void *)(vals + 64 * c));
            xb.v[c] = _mm512_and_si512(q, lo);
            xb.v[c + 4] = _mm512_and_si512(_mm512_srli_epi16(q, 4), lo);
        }
    }
    xb.dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)scales));
    xb.m = pdi_dtype_has_min((pdi_dtype)kind) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(scales + 32)))
                             : _mm512_setzero_ps();
    return xb;
}

/* The 16 rows' block sums for one token's block xq (32 int8), from init. One
 * token alone runs two chains of four and adds them (the same integers), so
 * the latencies of eight dependent vpdpbusd do not line up. */
AVX512_INLINE __m512i x16_dots(const x16_block *xb, const int8_t *xq, int32_t init, const int chains)
{
    __m512i l0 = _mm512_set1_epi32(init), l1 = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        __m512i x = _mm512_set1_epi32((int)load_u32((const uint8_t *)xq + 4 * k));
        if (chains == 2 && k >= 4) l1 = _mm512_dpbusd_epi32(l1, xb->v[k], x);
        else l0 = _mm512_dpbusd_epi32(l0, xb->v[k], x);
    }
    return chains == 2 ? _mm512_add_epi32(l0, l1) : l0;
}

/* NG groups (16 rows each, group stride 16 * row_bytes) times NT tokens from
 * tok; stream: the tile reads its groups from memory (decode, or a panel's
 * first tile) and prefetches the blocks ahead. */
AVX512_INLINE void x16_tile(const int kind, const int NG, const int NT, const bool stream, const uint8_t *w,
                            size_t row_bytes, const pdi_qact *a, int64_t tok, float *y, int64_t y_stride)
{
    const size_t gstride = 16 * row_bytes;
    const int64_t nb = a->cols / PD_QBLOCK, cap = a->n_cap, cols = a->cols;
    const int shift = kind == KIND_Q8_0 ? 4 : 0; /* -128 = 16 * -8 */
    __m512 acc[X16_GROUPS_D][TILE_TOKS];
#pragma GCC unroll 8
    for (int g = 0; g < NG; g++)
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) acc[g][u] = _mm512_setzero_ps();
    /* Each group's prefetch point: PF_DIST bytes ahead in its one stream of
     * blocks, counted on past the group's end into the same group of the
     * following tiles (NG groups on), as many tiles on as PF_DIST spans (a
     * group of 896 columns is 9 KiB at Q4_0: a point taken as at most one
     * tile ahead would miss a group's first KiB). A tile's groups move in
     * step: pf is group 0's point, group g's is g * gstride on. It moves by
     * step bytes a sub-block (gstride / nb: a block's bytes, or half a
     * Q4_64 block's). */
    const int64_t end = (int64_t)gstride, step = end / nb;
    int64_t ahead = PF_DIST, pf_left; /* pf_left: bytes left in the group pf is in */
    const uint8_t *pf = w;
    for (; ahead >= end; ahead -= end) pf += (size_t)NG * gstride;
    pf += ahead;
    pf_left = end - ahead;
    const int8_t *xq = a->q + tok * cols;
    const float *dx = a->d + tok, *sx = a->s + tok;
    const int32_t *bx = a->block_bias + tok;
    for (int64_t b = 0; b < nb; b++, xq += PD_QBLOCK, dx += cap, sx += cap, bx += cap) {
#pragma GCC unroll 8
        for (int g = 0; g < NG; g++) {
            const uint8_t *grp = w + (size_t)g * gstride;
            const uint8_t *sc = grp + pdi_xd_scales_at((pdi_dtype)kind, 16, b);
            const uint8_t *vals = grp + pdi_xd_values_at((pdi_dtype)kind, 16, b);
            if (stream) /* the group's stream PF_DIST ahead (pf) */
                for (int64_t o = 0; o < step; o += 64)
                    _mm_prefetch((const char *)pf + (size_t)g * gstride + o, _MM_HINT_T0);
            x16_block xb = x16_load(kind, vals, sc);
#pragma GCC unroll 8
            for (int u = 0; u < NT; u++) {
                int32_t init = pdi_dtype_has_min((pdi_dtype)kind) ? 0 : (int32_t)((uint32_t)bx[u] << shift);
                __m512i l = x16_dots(&xb, xq + u * cols, init, NT == 1 ? 2 : 1);
                __m512 dd = _mm512_mul_ps(xb.dw, _mm512_set1_ps(dx[u]));
                acc[g][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), dd, acc[g][u]);
                if (pdi_dtype_has_min((pdi_dtype)kind)) acc[g][u] = _mm512_fmadd_ps(xb.m, _mm512_set1_ps(sx[u]), acc[g][u]);
            }
        }
        if (stream) {
            pf += step;
            if ((pf_left -= step) <= 0) {
                pf += (size_t)NG * gstride - (size_t)end;
                pf_left += end;
            }
        }
    }
#pragma GCC unroll 8
    for (int g = 0; g < NG; g++)
#pragma GCC unroll 8
        for (int u = 0; u < NT; u++) _mm512_storeu_ps(y + u * y_stride + 16 * g, acc[g][u]);
}

/* One group over tokens [t0, t1): tiles of TILE_TOKS, then the rest in one
 * tile of its own width (a pass of 11 rows: 8 and 3, where 8, 2 and 1
 * unpacked each block three times; in cache 11 and 13 tokens ran 10-12%
 * faster). The first tile reads the group from memory and prefetches it;
 * the others find it in L1 (a group's blocks are 7-20 KiB on the
 * MNN-Pocket shape). */
_Static_assert(TILE_TOKS == 8, "the rest after the full tiles is 1 to 7 tokens");
AVX512_INLINE void x16_panel(const int kind, const uint8_t *w, size_t row_bytes, const pdi_qact *a, int64_t t0,
                             int64_t t1, float *y, int64_t y_stride)
{
/* stream as a constant at each call, so that the prefetch test leaves the block loop */
#define X16_TILE(NT) \
    (tok == t0 ? x16_tile(kind, 1, NT, true, w, row_bytes, a, tok, y + tok * y_stride, y_stride) \
               : x16_tile(kind, 1, NT, false, w, row_bytes, a, tok, y + tok * y_stride, y_stride))
    int64_t tok = t0;
    for (; tok + TILE_TOKS <= t1; tok += TILE_TOKS) X16_TILE(TILE_TOKS);
    switch (t1 - tok) { /* the rest in one tile of its own width */
    case 7: X16_TILE(7); break;
    case 6: X16_TILE(6); break;
    case 5: X16_TILE(5); break;
    case 4: X16_TILE(4); break;
    case 3: X16_TILE(3); break;
    case 2: X16_TILE(2); break;
    case 1: X16_TILE(1); break;
    default: break;
    }
#undef X16_TILE
}

AVX512_INLINE void qmatmul_x16_kind(const int kind, const uint8_t *w, size_t row_bytes, int64_t n_rows,
                                    const pdi_qact *a, int64_t t0, int64_t t1, float *y, int64_t y_stride)
{
    const size_t gstride = 16 * row_bytes;
    int64_t g = 0, ng = n_rows / 16;
    if (t1 - t0 == 1) { /* decode: one token, the weights streamed once */
        for (; g + X16_GROUPS_D <= ng; g += X16_GROUPS_D)
            x16_tile(kind, X16_GROUPS_D, 1, true, w + (size_t)g * gstride, row_bytes, a, t0, y + t0 * y_stride + 16 * g,
                     y_stride);
        for (; g < ng; g++)
            x16_tile(kind, 1, 1, true, w + (size_t)g * gstride, row_bytes, a, t0, y + t0 * y_stride + 16 * g, y_stride);
        return;
    }
    for (; g < ng; g++) x16_panel(kind, w + (size_t)g * gstride, row_bytes, a, t0, t1, y + 16 * g, y_stride);
}

PD_BLOCK_TYPE_ENTRY(AVX512, static, qmatmul_x16_avx512, qmatmul_x16, qmatmul_x16_kind)

/* ------------------------------------------------- quantized activations */

/* roundf (halves away from zero) of 16 floats, as round_away in kernels_avx2.c. */
AVX512_INLINE __m512 round_away16(__m512 x)
{
    __m512 t = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 frac = _mm512_abs_ps(_mm512_sub_ps(x, t));
    __m512 step = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), _mm512_set1_ps(1.0f));
    __m512 sign = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
    return _mm512_add_ps(t, _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(step), _mm512_castps_si512(sign))));
}

/* pdi_quantize_act, a block of 32 in two vectors, with its bits: the same
 * maximum (NaN ignored, as fmaxf does: max_ps returns its second operand
 * when either is NaN), the same scalar d and 1/d, roundf, the clamp that
 * turns NaN into -127, and the block biases. */
AVX512 static void quantize_act_avx512(pdi_qact *a, const float *x, int64_t x_stride, int64_t t0, int64_t t1,
                                       int64_t b0, int64_t b1)
{
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int64_t t = t0; t < t1; t++) {
        const float *xt = x + t * x_stride;
        int8_t *qt = a->q + t * a->cols;
        for (int64_t b = b0; b < b1; b++) {
            __m512 x0 = _mm512_loadu_ps(xt + b * PD_QBLOCK), x1 = _mm512_loadu_ps(xt + b * PD_QBLOCK + 16);
            __m512 m = _mm512_max_ps(_mm512_abs_ps(x1), _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps()));
            float amax = _mm512_reduce_max_ps(m);
            float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
            __m512 vid = _mm512_set1_ps(id);
            __m512i q0 = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(round_away16(_mm512_mul_ps(x0, vid)), lo), hi));
            __m512i q1 = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(round_away16(_mm512_mul_ps(x1, vid)), lo), hi));
            _mm_storeu_si128((__m128i *)(void *)(qt + b * PD_QBLOCK), _mm512_cvtsepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(void *)(qt + b * PD_QBLOCK + 16), _mm512_cvtsepi32_epi8(q1));
            a->d[b * a->n_cap + t] = d;
            int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
            a->s[b * a->n_cap + t] = d * (float)sum;
            a->block_bias[b * a->n_cap + t] = -8 * sum;
        }
    }
}

/* ----------------------------------------------------------- attention
 *
 * The AVX2 attention kernels at twice the width, with masked loads for the
 * columns past the last 16, so no scalar tail. */

/* Columns [c, c + 16) of a cached row (the first `live` of them; the rest 0). */
AVX512_INLINE __m512 load16(const int f16, const uint8_t *row, int64_t c, __mmask16 live)
{
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(live, (const void *)(row + 2 * c)));
    return _mm512_maskz_loadu_ps(live, (const void *)(row + 4 * c));
}

AVX512_INLINE __mmask16 live_cols(int64_t n, int64_t c) { return n - c >= 16 ? 0xffff : (__mmask16)((1u << (n - c)) - 1); }

/* NH query heads (1 or 2) over eight keys a step: each (head, key) one
 * accumulator over the columns, every key's columns loaded once for the
 * heads, then one reduction per head to its eight scores. A score's sums do
 * not depend on NH or on where its key stands: a last partial step repeats
 * its last key. */
AVX512_INLINE void key_scores_kind(const int f16, const int NH, const uint8_t *k, size_t stride, int64_t nk,
                                   const float *q, int64_t q_stride, int64_t n, float scale, float *out,
                                   int64_t out_stride)
{
    for (int64_t j = 0; j < nk; j += 8) {
        const uint8_t *kp[8];
        for (int u = 0; u < 8; u++) kp[u] = k + (size_t)(j + u < nk ? j + u : nk - 1) * stride;
        __m512 acc[2][8];
#pragma GCC unroll 2
        for (int h = 0; h < NH; h++)
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++) acc[h][u] = _mm512_setzero_ps();
        for (int64_t c = 0; c < n; c += 16) {
            __mmask16 live = live_cols(n, c);
            __m512 qv[2];
#pragma GCC unroll 2
            for (int h = 0; h < NH; h++) qv[h] = _mm512_maskz_loadu_ps(live, q + h * q_stride + c);
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++) {
                __m512 kv = load16(f16, kp[u], c, live);
#pragma GCC unroll 2
                for (int h = 0; h < NH; h++) acc[h][u] = _mm512_fmadd_ps(qv[h], kv, acc[h][u]);
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < NH; h++) {
            __m256 s[8];
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++)
                s[u] = _mm256_add_ps(_mm512_castps512_ps256(acc[h][u]), _mm512_extractf32x8_ps(acc[h][u], 1));
            __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(s[0], s[1]), _mm256_hadd_ps(s[2], s[3]));
            __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(s[4], s[5]), _mm256_hadd_ps(s[6], s[7]));
            __m256 tot = _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20),
                                       _mm256_permute2f128_ps(s0123, s4567, 0x31));
            float v[8];
            _mm256_storeu_ps(v, _mm256_mul_ps(tot, _mm256_set1_ps(scale)));
            for (int u = 0; u < 8 && j + u < nk; u++) out[h * out_stride + j + u] = v[u];
        }
    }
}

/* NH heads (1 to 4) with up to 64 output columns each in registers while
 * every value row, loaded once for the heads, is added: each column one
 * chain over the rows in order (NH x 4 chains in flight), as the AVX2 and
 * portable tables add them, so a row's term lands in the same place of its
 * sum whichever call of blocks brings it: a block of keys hidden from a
 * token (skipped) or present with zero weights gives the same bits. */
AVX512_INLINE void value_mix_kind(const int f16, const int NH, const uint8_t *v, size_t stride, int64_t nv,
                                  const float *p, int64_t p_stride, int64_t n, float *out, int64_t out_stride)
{
    for (int64_t c = 0; c < n; c += 64) {
        __mmask16 live[4];
        __m512 acc[4][4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            live[i] = c + 16 * i < n ? live_cols(n, c + 16 * i) : 0;
#pragma GCC unroll 4
            for (int h = 0; h < NH; h++) acc[h][i] = _mm512_maskz_loadu_ps(live[i], out + h * out_stride + c + 16 * i);
        }
        for (int64_t j = 0; j < nv; j++) {
            const uint8_t *vj = v + (size_t)j * stride;
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                __m512 x = load16(f16, vj, c + 16 * i, live[i]);
#pragma GCC unroll 4
                for (int h = 0; h < NH; h++) acc[h][i] = _mm512_fmadd_ps(_mm512_set1_ps(p[h * p_stride + j]), x, acc[h][i]);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
            for (int h = 0; h < NH; h++) _mm512_mask_storeu_ps(out + h * out_stride + c + 16 * i, live[i], acc[h][i]);
    }
}

AVX512 static void key_scores_avx512(pdi_dtype kt, const void *k, size_t stride, int64_t nk, const float *q,
                                 int64_t q_stride, int64_t nh, int64_t n, float scale, float *out, int64_t out_stride)
{
    int64_t h = 0;
    for (; h + 2 <= nh; h += 2) {
        if (kt == PD_F16) key_scores_kind(1, 2, k, stride, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
        else key_scores_kind(0, 2, k, stride, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
    }
    if (h < nh) {
        if (kt == PD_F16) key_scores_kind(1, 1, k, stride, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
        else key_scores_kind(0, 1, k, stride, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
    }
}

/* Heads four at a time (each value row loaded and widened once for four),
 * then the last 1-3 together. */
AVX512 static void value_mix_avx512(pdi_dtype vt, const void *v, size_t stride, int64_t nv, const float *p,
                                int64_t p_stride, int64_t nh, int64_t n, float *out, int64_t out_stride)
{
/* the kind and the head count as constants at each call */
#define VALUE_MIX(NH) \
    (vt == PD_F16 ? value_mix_kind(1, NH, v, stride, nv, ph, p_stride, n, oh, out_stride) \
                  : value_mix_kind(0, NH, v, stride, nv, ph, p_stride, n, oh, out_stride))
    for (int64_t h = 0; h < nh; h += 4) {
        const float *ph = p + h * p_stride;
        float *oh = out + h * out_stride;
        switch (nh - h < 4 ? nh - h : 4) {
        case 4: VALUE_MIX(4); break;
        case 3: VALUE_MIX(3); break;
        case 2: VALUE_MIX(2); break;
        default: VALUE_MIX(1); break;
        }
    }
#undef VALUE_MIX
}

/* ------------------------------------------- keys stored transposed in blocks
 *
 * Scores with the keys across the lanes: a block holds key j's column d at
 * d * PD_KEY_BLOCK + j, so a head's scores for 16 keys are one fma chain
 * over d, each column of the query broadcast, with no horizontal sums and
 * nothing to transpose (the cache is written that way). Each score is
 * summed d = 0, 1, ... in one chain, so its bits do not depend on the
 * tile, the heads or how many keys come with it. */

_Static_assert(PD_KEY_BLOCK == 64, "a key block is four vectors of 16");

/* NH heads x NV vectors of 16 keys: NH * NV fma chains in flight. */
AVX512_INLINE void scores_t_tile(const int f16, const int NH, const int NV, const uint8_t *kb, int64_t nk,
                                 const float *q, int64_t q_stride, int64_t n, float scale, float *out,
                                 int64_t out_stride)
{
    const size_t elt = f16 ? 2 : 4;
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[h][v] = _mm512_setzero_ps();
    for (int64_t d = 0; d < n; d++) {
        __m512 kv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const uint8_t *p = kb + ((size_t)d * PD_KEY_BLOCK + 16 * (size_t)v) * elt;
            kv[v] = f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p))
                        : _mm512_loadu_ps((const void *)p);
        }
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++) {
            __m512 qd = _mm512_set1_ps(q[h * q_stride + d]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[h][v] = _mm512_fmadd_ps(qd, kv[v], acc[h][v]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(out + h * out_stride + 16 * v, live_cols(nk, 16 * v),
                                  _mm512_mul_ps(acc[h][v], _mm512_set1_ps(scale)));
}

/* NH heads over the block's first nk keys: 1-4 vectors of 16. */
AVX512_INLINE void scores_t_heads(const int f16, const int NH, const uint8_t *kb, int64_t nk, const float *q,
                                  int64_t q_stride, int64_t n, float scale, float *out, int64_t out_stride)
{
    int64_t nv = (nk + 15) / 16;
    if (nv == 4) scores_t_tile(f16, NH, 4, kb, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 3) scores_t_tile(f16, NH, 3, kb, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 2) scores_t_tile(f16, NH, 2, kb, nk, q, q_stride, n, scale, out, out_stride);
    else if (nv == 1) scores_t_tile(f16, NH, 1, kb, nk, q, q_stride, n, scale, out, out_stride);
}

/* Heads four at a time (16 chains), then the last 1-3 together. */
AVX512_INLINE void scores_t_kind(const int f16, const uint8_t *kb, int64_t nk, const float *q, int64_t q_stride,
                                 int64_t nh, int64_t n, float scale, float *out, int64_t out_stride)
{
    int64_t h = 0;
    for (; h + 4 <= nh; h += 4)
        scores_t_heads(f16, 4, kb, nk, q + h * q_stride, q_stride, n, scale, out + h * out_stride, out_stride);
    q += h * q_stride;
    out += h * out_stride;
    if (nh - h == 3) scores_t_heads(f16, 3, kb, nk, q, q_stride, n, scale, out, out_stride);
    else if (nh - h == 2) scores_t_heads(f16, 2, kb, nk, q, q_stride, n, scale, out, out_stride);
    else if (nh - h == 1) scores_t_heads(f16, 1, kb, nk, q, q_stride, n, scale, out, out_stride);
}

AVX512 static void key_scores_t_avx512(pdi_dtype kt, const void *kb, int64_t nk, const float *q, int64_t q_stride,
                                   int64_t nh, int64_t n, float scale, float *out, int64_t out_stride)
{
    if (kt == PD_F16) scores_t_kind(1, kb, nk, q, q_stride, nh, n, scale, out, out_stride);
    else scores_t_kind(0, kb, nk, q, q_stride, nh, n, scale, out, out_stride);
}

static bool avx512vnni_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
}

/* ------------------------------------------------------ exp and SwiGLU
 *
 * The AVX2 table's exp8 (kernels_avx2.c) sixteen at a time: the same
 * operations lane by lane, so the same bits, and sums added in its order. */

AVX512_INLINE __m512 exp16(__m512 x)
{
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(PD_EXP_LO), _CMP_GE_OQ); /* below -87, and NaN: 0 */
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(PD_EXP_LO)), _mm512_set1_ps(PD_EXP_HI));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(PD_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 p;
    PD_EXP_POLY(__m512, _mm512_fmadd_ps, _mm512_fnmadd_ps, _mm512_mul_ps, _mm512_add_ps, _mm512_set1_ps, n, x, p);
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e));
}

/* pdi_exp_sum_avx2's bits: its eight running sums get each half of a
 * vector in turn, as its loop adds them; the last 1-15 values are padded
 * with -inf (exp 0), as it pads its last 1-7. */
AVX512 static float exp_sum_avx512(float *s, int64_t n, float max)
{
    __m512 vmax = _mm512_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + i), vmax));
        _mm512_storeu_ps(s + i, e);
        acc = _mm256_add_ps(_mm256_add_ps(acc, _mm512_castps512_ps256(e)), _mm512_extractf32x8_ps(e, 1));
    }
    if (i == n) return hsum256(acc);
    __mmask16 live = live_cols(n, i);
    __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), live, s + i), vmax));
    _mm512_mask_storeu_ps(s + i, live, e);
    if (n - i < 8) return hsum256(acc) + hsum256(_mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e)); /* a whole eight, then the rest padded */
    if (n - i == 8) return hsum256(acc);
    return hsum256(acc) + hsum256(_mm512_extractf32x8_ps(e, 1));
}

/* pdi_silu_mul_avx2's bits: sixteen at a time, the rest as it does them. */
AVX512 static void silu_mul_avx512(float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_loadu_ps(g + i);
        __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
        _mm512_storeu_ps(g + i, _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                                              _mm512_loadu_ps(u + i)));
    }
    if (i < n) pdi_silu_mul_avx2(g + i, u + i, n - i);
}

static const pdi_kernels avx512 = PD_X86_KERNELS("avx512-vnni", pdi_fmatmul_avx512, qmatmul_avx512, 16, qmatmul_x16_avx512,
                                                  quantize_act_avx512, key_scores_avx512, value_mix_avx512,
                                                  key_scores_t_avx512, exp_sum_avx512, silu_mul_avx512);

const pdi_kernels *pdi_kernels_avx512(void) { return pdi_kernels_avx2() && avx512vnni_supported() ? &avx512 : NULL; }

#else
const pdi_kernels *pdi_kernels_avx512(void) { return NULL; }
#endif
