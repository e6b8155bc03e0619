/* bench_kernels.c - the matrix-product kernels alone, one thread (a
 * benchmark, not a test): every vector kernel table this CPU runs (AVX2,
 * AVX-512 VNNI, NEON; the portable one where there is none) multiplies the
 * MNN-Pocket shapes (gate/up 2560 x 896, down 896 x 2560) at Q4_0, Q8_0,
 * Q4_1 and Q4_64 (MNN's blocks of 64),
 * and the bundled models' shapes (704 x 256, 256 x 704) at BF16, by 1, 4, 8
 * and 64 tokens, in the layout the model runs (block types interleaved as the
 * table asks). Enough copies of each matrix are swept in turn to pass
 * SWEEP_MB (64 by default), so the weights come from memory as a 0.3B model's
 * do in a forward pass; SWEEP_MB 0 keeps one copy, in the cache, as the small
 * bundled models' weights are. Prints one JSON line per case: the best of R sweeps in multiply-adds
 * per ns, and for the block types whether the largest case has the bits of
 * the reference order (pdi_qdot_reference, pdi_qdot_x_reference: every table
 * and every split must give them). Where the AVX-512 VNNI table runs, a
 * first line gives the roof: the rate one core issues vpdpbusd at.
 *
 * TYPES (q4_0,q8_0,q4_1,q4_64,bf16: all by default) picks the types.
 *
 * Usage: bench_kernels [RUNS=5] [TOKENS,...=1,4,8,64] [SWEEP_MB=64] [TYPES,...] */
#define _POSIX_C_SOURCE 200809L
#include "core/kernels.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t next_random(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* rows x cols weights of type t, random but finite: block scales are small
 * halves, BF16 values are in [-2, 2). */
static uint8_t *random_matrix(pdi_dtype t, int64_t rows, int64_t cols, uint64_t *seed)
{
    size_t rb = pdi_dtype_row_bytes(t, cols), bytes = rb * (size_t)rows;
    uint8_t *w = malloc(bytes);
    if (!w) return NULL;
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)next_random(seed);
    if (t == PD_BF16)
        for (size_t i = 0; i + 1 < bytes; i += 2) w[i + 1] = (uint8_t)((w[i + 1] & 0x80) | 0x3f);
    size_t block = t == PD_BF16 ? 0 : pdi_block_bytes(t);
    for (size_t b = 0; block && b < bytes / block; b++) {
        uint16_t d = pdi_f32_to_f16(0.01f + (float)(next_random(seed) % 100) * 1e-4f);
        memcpy(w + b * block, &d, 2);
    }
    return w;
}

typedef struct bench_case {
    const pdi_kernels *k;
    pdi_dtype type;
    int64_t rows, cols, tokens;
} bench_case;

/* The products of every copy, timed: the best of runs sweeps, in MAC/ns;
 * y receives the first copy's product. */
static double time_case(const bench_case *c, uint8_t *const *copies, int n_copies, const pdi_qact *a, const float *x,
                        float *y, int runs)
{
    size_t rb = pdi_dtype_row_bytes(c->type, c->cols);
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        double t0 = now_s();
        for (int i = n_copies - 1; i >= 0; i--) {
            if (c->type == PD_BF16) /* tiles at every token count, as the trunk runs them */
                c->k->fmatmul(c->type, copies[i], rb, c->rows, c->cols, x, c->cols, 0, c->tokens, y, c->rows);
            else if (c->k->interleave)
                c->k->qmatmul_x(c->type, copies[i], rb, c->rows, a, 0, c->tokens, y, c->rows);
            else
                c->k->qmatmul(c->type, copies[i], rb, c->rows, a, 0, c->tokens, y, c->rows);
        }
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return (double)c->rows * (double)c->cols * (double)c->tokens * n_copies / (best * 1e9);
}

/* One shape and type on every table; false when memory ran out. */
static bool run_shape(const pdi_kernels *const *tables, int n_tables, pdi_dtype type, int64_t rows, int64_t cols,
                      const int64_t *tokens, int n_tokens, int runs, size_t sweep)
{
    uint64_t seed = 42;
    size_t rb = pdi_dtype_row_bytes(type, cols), bytes = rb * (size_t)rows;
    int n_copies = sweep ? (int)((sweep + bytes - 1) / bytes) : 1;
    uint8_t *plain = random_matrix(type, rows, cols, &seed);
    uint8_t **copies = calloc((size_t)n_copies, sizeof *copies);
    int64_t max_tok = 0;
    for (int i = 0; i < n_tokens; i++) max_tok = tokens[i] > max_tok ? tokens[i] : max_tok;
    float *x = malloc((size_t)(max_tok * cols) * sizeof *x);
    float *y = malloc((size_t)(max_tok * rows) * sizeof *y);
    size_t ds = (size_t)((cols / 32 + 1) * max_tok) * sizeof(float);
    pdi_qact a = {max_tok, max_tok, cols, malloc((size_t)(max_tok * cols)), malloc(ds), malloc(ds),
                 malloc((size_t)(max_tok * cols / 32) * sizeof(int32_t))};
    bool memory = plain && copies && x && y && a.q && a.d && a.s && a.block_bias, ok = memory;
    for (int i = 0; ok && i < n_copies; i++) ok = memory = (copies[i] = malloc(bytes)) != NULL;
    for (int64_t i = 0; ok && i < max_tok * cols; i++) x[i] = (float)(next_random(&seed) % 2001) / 1000.0f - 1.0f;
    if (ok) pdi_quantize_act(&a, x, cols, 0, max_tok, 0, cols / 32);
    for (int t = 0; ok && t < n_tables; t++) {
        const pdi_kernels *k = tables[t];
        int n = type == PD_BF16 ? 0 : k->interleave;
        for (int i = 0; i < n_copies; i++) {
            if (n) pdi_x_pack(type, n, plain, rb, rows, copies[i]);
            else memcpy(copies[i], plain, bytes);
        }
        for (int j = 0; j < n_tokens; j++) {
            bench_case c = {k, type, rows, cols, tokens[j]};
            double mac_ns = time_case(&c, copies, n_copies, &a, x, y, runs);
            int check = type != PD_BF16 && j + 1 == n_tokens; /* the largest case, against the reference order */
            for (int64_t tok = 0; check && tok < tokens[j]; tok++)
                for (int64_t r = 0; r < rows; r++) {
                    float want = n ? pdi_qdot_x_reference(type, n, copies[0], rb, r, &a, tok)
                                   : pdi_qdot_reference(type, copies[0] + (size_t)r * rb, &a, tok);
                    if (memcmp(&want, &y[tok * rows + r], sizeof want)) check = -1;
                }
            printf("{\"kernels\": \"%s\", \"type\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"tokens\": %lld, "
                   "\"matrices\": %d, \"mac_per_ns\": %.2f%s}\n",
                   k->name, pdi_dtype_name(type), (long long)rows, (long long)cols, (long long)tokens[j], n_copies,
                   mac_ns, check == 1 ? ", \"same_bits\": true" : check ? ", \"same_bits\": false" : "");
            fflush(stdout);
            ok = ok && check >= 0;
        }
    }
    for (int i = 0; copies && i < n_copies; i++) free(copies[i]);
    free(copies);
    free(plain);
    free(x);
    free(y);
    free(a.q);
    free(a.d);
    free(a.s);
    free(a.block_bias);
    if (!ok)
        fprintf(stderr, "bench_kernels: %s %lld x %lld: %s\n", pdi_dtype_name(type), (long long)rows, (long long)cols,
                memory ? "a kernel's bits differ from the reference order" : "out of memory");
    return ok;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PEAK_CHAINS 12
/* The rate a core issues vpdpbusd at (512 bits: 64 multiply-adds each), on
 * PEAK_CHAINS independent accumulators: the roof of the integer products,
 * against which the AVX-512 VNNI kernel's MAC/ns are read (besides its eight
 * vpdpbusd, a block of 16 rows by one token costs a scale multiply, a
 * convert and an fma). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double vpdpbusd_peak(void)
{
    __m512i acc[PEAK_CHAINS], w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
    for (int k = 0; k < PEAK_CHAINS; k++) acc[k] = _mm512_setzero_si512();
    const long rounds = 20000000;
    double t0 = now_s();
    for (long i = 0; i < rounds; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < PEAK_CHAINS; k++) acc[k] = _mm512_dpbusd_epi32(acc[k], w, x);
        __asm__ volatile("" : "+v"(w)); /* no hoisting: each round's products are new */
    }
    double dt = now_s() - t0;
    __m512i sum = acc[0];
    for (int k = 1; k < PEAK_CHAINS; k++) sum = _mm512_add_epi32(sum, acc[k]);
    volatile int keep = _mm512_reduce_add_epi32(sum);
    (void)keep;
    return (double)rounds * PEAK_CHAINS * 64 / (dt * 1e9);
}
#endif

/* Whether name is one of the comma-separated names of list, ignoring case. */
static bool type_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *s = list; *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
        if (strcspn(s, ",") == n && strncasecmp(s, name, n) == 0) return true;
        if (!s[strcspn(s, ",")]) break;
    }
    return false;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    int64_t tokens[16] = {1, 4, 8, 64};
    int n_tokens = 4;
    if (argc > 2) {
        n_tokens = 0;
        for (char *s = argv[2], *end; *s && n_tokens < 16; s = *end ? end + 1 : end) {
            long v = strtol(s, &end, 10);
            if (end == s || v < 1 || v > 4096 || (*end && *end != ',')) {
                fprintf(stderr, "bench_kernels: TOKENS is a comma-separated list of counts in 1..4096\n");
                return 2;
            }
            tokens[n_tokens++] = v;
        }
    }
    char *end = NULL;
    long sweep_mb = argc > 3 ? strtol(argv[3], &end, 10) : 64;
    if (runs < 1 || n_tokens == 0 || sweep_mb < 0 || sweep_mb > 4096 || (end && (end == argv[3] || *end))) {
        fprintf(stderr, "usage: bench_kernels [RUNS=5] [TOKENS,...=1,4,8,64] [SWEEP_MB=64, at most 4096] [TYPES,...]\n");
        return 2;
    }
    const pdi_kernels *vector[] = {pdi_kernels_avx2(), pdi_kernels_avx512(), pdi_kernels_neon()};
    const pdi_kernels *tables[3];
    int n_tables = 0;
    for (int i = 0; i < 3; i++)
        if (vector[i]) tables[n_tables++] = vector[i];
    if (n_tables == 0) tables[n_tables++] = pdi_kernels_portable();
    static const struct {
        pdi_dtype type;
        int64_t rows, cols;
    } shapes[] = {{PD_Q4_0, 2560, 896}, {PD_Q4_0, 896, 2560},  {PD_Q8_0, 2560, 896},  {PD_Q8_0, 896, 2560},
                  {PD_Q4_1, 2560, 896}, {PD_Q4_1, 896, 2560},  {PD_Q4_64, 2560, 896}, {PD_Q4_64, 896, 2560},
                  {PD_BF16, 704, 256},  {PD_BF16, 256, 704}};
    const char *types = argc > 4 ? argv[4] : NULL; /* a comma-separated list of type names, any case */
#if defined(__x86_64__) && defined(__GNUC__)
    if (pdi_kernels_avx512()) {
        double best = 0;
        for (int r = 0; r < runs; r++) {
            double p = vpdpbusd_peak();
            best = p > best ? p : best;
        }
        printf("{\"kernels\": \"avx512-vnni\", \"roof\": \"vpdpbusd\", \"mac_per_ns\": %.2f}\n", best);
        fflush(stdout);
    }
#endif
    bool ok = true;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        if (!types || type_listed(types, pdi_dtype_name(shapes[s].type)))
            ok = run_shape(tables, n_tables, shapes[s].type, shapes[s].rows, shapes[s].cols, tokens, n_tokens, runs,
                       (size_t)sweep_mb << 20) && ok;
    return ok ? 0 : 1;
}
