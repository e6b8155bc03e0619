/* model_weights.c - a model's weights rewritten after loading: quantized to
 * blocks (pd_model_params.quantize), interleaved for the kernels, and the
 * derived models of adapters (low-rank updates merged into copies of the
 * matrices, or held beside them for the runtime). */
#include "model.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <math.h>
#include <unistd.h>


static const struct {
    const char *suffix;
    size_t offset;
} layer_matrices[] = {
    {"self_attn.q_proj.weight", offsetof(pdi_layer, wq)},   {"self_attn.k_proj.weight", offsetof(pdi_layer, wk)},
    {"self_attn.v_proj.weight", offsetof(pdi_layer, wv)},   {"self_attn.o_proj.weight", offsetof(pdi_layer, wo)},
    {"mlp.gate_proj.weight", offsetof(pdi_layer, w_gate)}, {"mlp.up_proj.weight", offsetof(pdi_layer, w_up)},
    {"mlp.down_proj.weight", offsetof(pdi_layer, w_down)},
};
#define N_LAYER_MATRICES (sizeof layer_matrices / sizeof layer_matrices[0])

/* Index (layer * 7 + k) of an HF projection name, or -1. The name must be
 * canonical ("model.layers.3.", no sign or leading zero). */
static long matrix_index(const pd_config *c, const char *name)
{
    const char *pre = "model.layers.";
    size_t np = strlen(pre);
    if (strncmp(name, pre, np) != 0) return -1;
    const char *p = name + np;
    if (*p < '0' || *p > '9' || (*p == '0' && p[1] != '.')) return -1;
    long l = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        l = l * 10 + (*p - '0');
        if (l >= c->n_layers) return -1;
    }
    if (*p++ != '.') return -1;
    for (size_t k = 0; k < N_LAYER_MATRICES; k++)
        if (strcmp(p, layer_matrices[k].suffix) == 0) return l * (long)N_LAYER_MATRICES + (long)k;
    return -1;
}

static pdi_matrix *matrix_at(pdi_layer *layers, long index)
{
    return (pdi_matrix *)(void *)((char *)&layers[index / (long)N_LAYER_MATRICES] +
                                 layer_matrices[index % (long)N_LAYER_MATRICES].offset);
}

/* Keep p (NULL allowed) to free with the model; NULL when p or the list failed. */
static void *own(pd_model *m, void *p)
{
    if (!p) return NULL;
    void **o = pdi_grow(m->owned, &m->cap_owned, m->n_owned + 1, sizeof *o);
    if (!o) {
        free(p);
        return NULL;
    }
    m->owned = o;
    return m->owned[m->n_owned++] = p;
}

/* Give back the pages of [p, p + n) when they lie in one of st's mappings:
 * a file's clean pages (read again from the file if ever touched), or the
 * anonymous weights quantized at load once they are packed (never read again). */
static void release_mapped(const pdi_tensor_store *st, const uint8_t *p, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    for (size_t i = 0; i < st->n_maps; i++) {
        const pdi_mapping *mp = &st->maps[i];
        if (!mp->data || p < mp->data || n > mp->size || (size_t)(p - mp->data) > mp->size - n) continue;
        uintptr_t mask = ~((uintptr_t)page - 1);
        uintptr_t b = ((uintptr_t)p + (uintptr_t)page - 1) & mask, e = ((uintptr_t)p + n) & mask;
        if (b < e) madvise((void *)b, e - b, MADV_DONTNEED);
        return;
    }
}

/* The matrix interleave_weights may interleave: the layers' in order, then the LM head. */
static pdi_matrix *interleavable(pd_model *m, size_t i)
{
    size_t n_mat = (size_t)m->cfg.n_layers * N_LAYER_MATRICES;
    if (i < n_mat) return matrix_at(m->layers, (long)i);
    return i == n_mat && m->lm_head.rows % m->kern->interleave == 0 ? &m->lm_head : NULL;
}

/* bytes rounded up to whole 64-byte lines: each matrix quantized or packed
 * at load starts on a line of its own */
static size_t line_padded(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Matrix i of those quantize_weights may quantize (the layers' matrices,
 * the LM head, then untied embeddings), its tensor name in name; NULL past them. */
static pdi_matrix *quantizable(pd_model *m, size_t i, char name[96])
{
    size_t n_mat = (size_t)m->cfg.n_layers * N_LAYER_MATRICES;
    if (i < n_mat) {
        snprintf(name, 96, "model.layers.%zu.%s", i / N_LAYER_MATRICES, layer_matrices[i % N_LAYER_MATRICES].suffix);
        return matrix_at(m->layers, (long)i);
    }
    bool tied = m->cfg.tied_embeddings;
    if (i > n_mat + (tied ? 0 : 1)) return NULL;
    snprintf(name, 96, "%s", i == n_mat && !tied ? "lm_head.weight" : "model.embed_tokens.weight");
    return i == n_mat ? &m->lm_head : &m->embed;
}

/* Quantizing one float matrix x as type t into out, rows spread over a pool. */
typedef struct {
    const pd_model *m;
    const pdi_matrix *x;
    pdi_dtype t;
    uint8_t *out;
    float *rows; /* a row of scratch for each thread, max_cols floats apart */
    int64_t max_cols;
} weights_quant_job;

/* Rows [begin, end) of j->x quantized. The file pages of the rows done go
 * back about every MiB (a float embedding is a large part of a small
 * model); a page a row ends in goes with the next piece, and the pages
 * shared with other threads' rows once the whole matrix is done. */
static void quantize_rows(void *arg, int64_t begin, int64_t end, int thread)
{
    const weights_quant_job *j = arg;
    const pdi_matrix *x = j->x;
    float *row = j->rows + (size_t)thread * (size_t)j->max_cols;
    const size_t rb = pdi_dtype_row_bytes(j->t, x->cols);
    const uintptr_t page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    const uint8_t *first = x->data + (size_t)begin * x->row_bytes, *kept = first;
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *src = x->data + (size_t)r * x->row_bytes;
        j->m->kern->widen(x->dtype, src, row, x->cols);
        pdi_quantize_row(j->t, row, x->cols, j->out + (size_t)r * rb);
        const uint8_t *done = src + x->row_bytes;
        if ((size_t)(done - kept) >= ((size_t)1 << 20) || r + 1 == end) {
            release_mapped(&j->m->store, kept, (size_t)(done - kept));
            kept = (const uint8_t *)((uintptr_t)done & page_mask);
            kept = kept < first ? first : kept;
        }
    }
}

/* Float matrices quantized as they load (pd_model_params.quantize), as
 * `pocketdec quantize` writes them, across the cores, into one anonymous
 * mapping of the store's, the file pages given back as the rows are done. Interleaving
 * then gives back that mapping's pages slab by slab as it packs them, as it
 * does a file's, so the peak stays near one copy of the weights. */
pd_status pdi_model_quantize_weights(pd_model *m, pd_weight_quant q, pd_error *err)
{
    static const pdi_dtype types[] = {[PD_QUANT_Q8_0] = PD_Q8_0, [PD_QUANT_Q4_0] = PD_Q4_0, [PD_QUANT_Q4_1] = PD_Q4_1,
                                     [PD_QUANT_Q4_64] = PD_Q4_64};
    if (q < PD_QUANT_Q8_0 || q > PD_QUANT_Q4_64)
        return pdi_set_error(err, PD_ERR_ARG, "%s: unknown weight quantization %d", m->source, (int)q);
    const pdi_dtype t = types[q];
    char name[96];
    pdi_matrix *x;
    size_t total = 0;
    int64_t max_cols = 0;
    for (size_t i = 0; (x = quantizable(m, i, name)); i++) {
        if (pdi_dtype_is_block(x->dtype)) continue;
        if (x->cols % pdi_dtype_block_len(t))
            return pdi_set_error(err, PD_ERR_SHAPE, "%s: %s has %lld columns, not whole blocks of %d: it cannot be quantized",
                                 m->source, name, (long long)x->cols, pdi_dtype_block_len(t));
        size_t bytes;
        if (!pdi_mul_size((size_t)x->rows, pdi_dtype_row_bytes(t, x->cols), &bytes) || total + bytes + 63 < total)
            return pdi_set_error(err, PD_ERR_NOMEM, "%s: %s is too large to quantize", m->source, name);
        total += line_padded(bytes);
        max_cols = x->cols > max_cols ? x->cols : max_cols;
    }
    if (!total) return PD_OK;
    char what[PD_ERROR_MESSAGE_SIZE];
    snprintf(what, sizeof what, "%s: weights quantized at load", m->source);
    uint8_t *out;
    pd_status st = pdi_store_map_anonymous(&m->store, total, what, &out, err);
    if (st != PD_OK) return st;
    pdi_pool *pool = pdi_pool_for_weights();
    int threads = pool ? pdi_pool_size(pool) : 1;
    weights_quant_job job = {m, NULL, t, out, malloc((size_t)threads * (size_t)max_cols * sizeof(float)), max_cols};
    if (!job.rows) {
        pdi_pool_free(pool);
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory quantizing", m->source);
    }
    for (size_t i = 0; (x = quantizable(m, i, name)); i++) {
        if (pdi_dtype_is_block(x->dtype)) continue;
        job.x = x;
        if (pool) pdi_pool_for(pool, x->rows, 1, quantize_rows, &job);
        else quantize_rows(&job, 0, x->rows, 0);
        release_mapped(&m->store, x->data, (size_t)x->rows * x->row_bytes);
        size_t rb = pdi_dtype_row_bytes(t, x->cols);
        x->dtype = t;
        x->data = job.out;
        x->row_bytes = rb;
        job.out += line_padded((size_t)x->rows * rb);
    }
    free(job.rows);
    pdi_pool_free(pool);
    if (m->cfg.tied_embeddings) m->embed = m->lm_head; /* one matrix: the lookups read its blocks */
    return PD_OK;
}

/* Groups of n rows of x in a slab: about 1 MiB. */
static int64_t slab_groups(const pdi_matrix *x, int n) { return (int64_t)((1u << 20) / ((size_t)n * x->row_bytes)) + 1; }

/* A slab of one matrix to pack: groups [g0, g0 + ng) of x into dst. */
typedef struct {
    pdi_matrix *x;
    uint8_t *dst;
    int64_t g0, ng;
} pack_slab;

typedef struct {
    pd_model *m;
    const pack_slab *slabs;
    int n;
    uint8_t *scratch; /* in-place slabs: a slab's bytes a thread, scratch_bytes apart */
    size_t scratch_bytes;
} pack_job;

/* Slabs [begin, end): packed, and each one's file pages given back at once,
 * so the peak is the packed weights plus a slab a thread. A slab packed in
 * place (dst is the matrix's own data) is copied to the thread's scratch
 * first. */
static void pack_range(void *arg, int64_t begin, int64_t end, int thread)
{
    const pack_job *j = arg;
    for (int64_t i = begin; i < end; i++) {
        const pack_slab *s = &j->slabs[i];
        size_t group = (size_t)j->n * s->x->row_bytes, at = (size_t)s->g0 * group, bytes = (size_t)s->ng * group;
        const uint8_t *src = s->x->data + at;
        if (s->dst == s->x->data) {
            uint8_t *copy = j->scratch + (size_t)thread * j->scratch_bytes;
            memcpy(copy, src, bytes);
            pdi_x_pack(s->x->dtype, j->n, copy, s->x->row_bytes, j->n * s->ng, s->dst + at);
            continue;
        }
        pdi_x_pack(s->x->dtype, j->n, src, s->x->row_bytes, j->n * s->ng, s->dst + at);
        release_mapped(&j->m->store, src, bytes);
    }
}

/* Whether [p, p + n) lies in anonymous memory of the store's (weights
 * repacked or quantized at load), which interleaving may rewrite in place. */
static bool store_owns(const pdi_tensor_store *st, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < st->n_maps; i++) {
        const pdi_mapping *mp = &st->maps[i];
        if (mp->data && p >= mp->data && n <= mp->size && (size_t)(p - mp->data) <= mp->size - n) return mp->owned;
    }
    return false;
}

/* The block-quantized (Q8_0, Q4_0, Q4_1, Q4_64) matrices of the layers and the LM
 * head (the embeddings too when tied) interleaved n = kern->interleave rows
 * at a time (pdi_x_pack), in slabs across the cores, each file range given
 * back once packed, so the peak stays near one copy. Only when every layer
 * matrix has a multiple of n rows: the fused q/k/v loop hands each matrix
 * rows from where the last one ended. Out of memory, every matrix keeps the
 * file's layout. */
void pdi_model_interleave_weights(pd_model *m)
{
    const int n = m->kern->interleave;
    if (!n) return;
    size_t n_mat = (size_t)m->cfg.n_layers * N_LAYER_MATRICES, total = 0;
    for (size_t i = 0; i < n_mat; i++)
        if (matrix_at(m->layers, (long)i)->rows % n) return;
    /* matrices in memory of the store's own (repacked or quantized at load)
     * are packed in place, a slab at a time through a thread's scratch: no
     * second copy to fault in and zero; the others into one new buffer */
    const pdi_matrix *w;
    size_t n_slabs = 0, max_slab = 0;
    for (size_t i = 0; (w = interleavable(m, i)); i++) {
        if (!pdi_dtype_is_block(w->dtype)) continue;
        size_t bytes = (size_t)w->rows * w->row_bytes, slab = (size_t)slab_groups(w, n) * n * w->row_bytes;
        n_slabs += (size_t)(w->rows / n / slab_groups(w, n)) + 1;
        if (!store_owns(&m->store, w->data, bytes)) total += line_padded(bytes);
        else max_slab = slab > max_slab ? slab : max_slab;
    }
    /* one buffer in 2 MiB pages where the system gives them: a few hundred
     * page faults at load instead of tens of thousands, and fewer TLB misses
     * while decode streams the weights */
    const size_t huge = (size_t)2 << 20, size = (total + huge - 1) & ~(huge - 1);
    void *buf = NULL;
    if (total && (posix_memalign(&buf, huge, size) || !own(m, buf))) return;
#ifdef MADV_HUGEPAGE
    if (buf) madvise(buf, size, MADV_HUGEPAGE);
#endif
    pdi_pool *pool = pdi_pool_for_weights();
    int threads = pool ? pdi_pool_size(pool) : 1;
    pack_slab *slabs = malloc(n_slabs * sizeof *slabs);
    uint8_t *scratch = max_slab ? malloc((size_t)threads * max_slab) : NULL;
    if (!slabs || (max_slab && !scratch)) { /* buf is owned by m: freed with it */
        free(slabs);
        free(scratch);
        pdi_pool_free(pool);
        return;
    }
    /* slabs of about 1 MiB (whole groups), spread over the cores: the first
     * touch of the new pages and the packing both run in parallel */
    uint8_t *dst = buf;
    size_t k = 0;
    pdi_matrix *x;
    for (size_t i = 0; (x = interleavable(m, i)); i++) {
        if (!pdi_dtype_is_block(x->dtype)) continue;
        int64_t slab = slab_groups(x, n);
        size_t bytes = (size_t)x->rows * x->row_bytes;
        uint8_t *to = store_owns(&m->store, x->data, bytes) ? (uint8_t *)(uintptr_t)x->data : dst;
        for (int64_t g0 = 0; g0 < x->rows / n; g0 += slab)
            slabs[k++] = (pack_slab){x, to, g0, x->rows / n - g0 < slab ? x->rows / n - g0 : slab};
        if (to == dst) dst += line_padded(bytes);
    }
    pack_job job = {m, slabs, n, scratch, max_slab};
    if (pool) pdi_pool_for(pool, (int64_t)k, 1, pack_range, &job);
    else pack_range(&job, 0, (int64_t)k, 0);
    pdi_pool_free(pool);
    free(scratch);
    /* every slab is packed: the matrices now read the new layout */
    for (size_t i = 0; i < k; i++) {
        if (slabs[i].g0) continue; /* a matrix's first slab */
        slabs[i].x->data = slabs[i].dst;
        slabs[i].x->interleave = n;
        m->n_interleaved++;
    }
    free(slabs);
    if (m->cfg.tied_embeddings) m->embed = m->lm_head; /* one matrix: the lookups read it interleaved too */
}

static float *copy_floats(pd_model *m, const float *src, int64_t a, int64_t b)
{
    size_t bytes;
    if (!pdi_mul_size((size_t)a * (size_t)b, sizeof(float), &bytes)) return NULL;
    float *d = own(m, malloc(bytes));
    if (d) memcpy(d, src, bytes);
    return d;
}

static pd_status check_update(const pd_model *base, const pdi_lowrank *u, long *index, pd_error *err)
{
    const char *src = base->source;
    *index = u->matrix ? matrix_index(&base->cfg, u->matrix) : -1;
    if (*index < 0)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: no matrix %s to update (the %d layers' seven projections can be)",
                             src, u->matrix ? u->matrix : "(null)", base->cfg.n_layers);
    if (!u->A || !u->B || u->rank < 1)
        return pdi_set_error(err, PD_ERR_ARG, "%s: update of %s has no data or rank %lld", src, u->matrix,
                             (long long)u->rank);
    if (!isfinite(u->scale))
        return pdi_set_error(err, PD_ERR_ARG, "%s: update of %s has a non-finite scale", src, u->matrix);
    const pdi_matrix *w = matrix_at(base->layers, *index);
    if (u->rows != w->rows || u->cols != w->cols)
        return pdi_set_error(err, PD_ERR_SHAPE, "%s: update of %s is [%lld, %lld], the matrix is [%lld, %lld]", src,
                             u->matrix, (long long)u->rows, (long long)u->cols, (long long)w->rows, (long long)w->cols);
    return PD_OK;
}

typedef struct {
    const pdi_kernels *kern;
    const pdi_matrix *src; /* the stored W to convert first, or NULL when dst already holds a copy */
    float *dst;
    const pdi_lowrank *u;
} merge_job;

/* Rows [begin, end) of dst (+)= W + scale * B A, row by row (each row is the
 * same arithmetic whatever the split, so any thread count gives the same bits). */
static void merge_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const merge_job *j = arg;
    size_t cols = (size_t)j->u->cols, r = (size_t)j->u->rank;
    for (int64_t i = begin; i < end; i++) {
        float *row = j->dst + (size_t)i * cols;
        if (j->src) pdi_matrix_row(j->src, i, row);
        for (size_t k = 0; k < r; k++)
            j->kern->axpy(row, j->u->scale * j->u->B[(size_t)i * r + k], j->u->A + k * cols, (int64_t)cols);
    }
}

/* PD_DERIVE_AUTO: merge F32 matrices; merge a 16-bit one too when the
 * update is large for it (rank x (rows + cols) above rows x cols / 8: at
 * runtime it would add more than an eighth of the matrix's own
 * multiply-adds), widening BF16/F16 to F32 being exact; quantized matrices
 * keep their blocks and take the update at runtime. */
static bool auto_merges(const pdi_matrix *w, int64_t rank)
{
    if (w->dtype == PD_F32) return true;
    if (w->dtype != PD_BF16 && w->dtype != PD_F16) return false;
    return (double)rank * (double)(w->rows + w->cols) > (double)w->rows * (double)w->cols / 8.0;
}

static pd_status add_update(pd_model *m, pdi_matrix *w, bool *merged, const pdi_lowrank *u, pdi_derive_mode mode,
                            pdi_pool *pool, pd_error *err)
{
    int64_t rows = w->rows, cols = w->cols, r = u->rank;
    bool merge = mode == PD_DERIVE_MERGE || (mode == PD_DERIVE_AUTO && auto_merges(w, r));
    if (!merge) {
        if (r > PD_LOWRANK_MAX_RANK)
            return pdi_set_error(err, PD_ERR_UNSUPPORTED, "%s: rank %lld of %s is above %d, the most applied at runtime",
                                 m->source, (long long)r, u->matrix, PD_LOWRANK_MAX_RANK);
        pdi_delta *d = own(m, calloc(1, sizeof *d));
        float *bt = NULL;
        if (!d || !(d->A = copy_floats(m, u->A, r, cols)) || !(d->Bt = bt = copy_floats(m, u->B, rows, r)))
            return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for the update of %s", m->source, u->matrix);
        for (size_t i = 0; i < (size_t)rows; i++)
            for (size_t k = 0; k < (size_t)r; k++) bt[k * (size_t)rows + i] = u->B[i * (size_t)r + k];
        d->rank = r;
        d->scale = u->scale;
        d->next = w->delta;
        w->delta = d;
        return PD_OK;
    }
    pdi_matrix src = *w;
    if (!*merged) { /* first update of this matrix: an owned F32 copy of W */
        size_t bytes;
        float *c = NULL;
        if (pdi_mul_size((size_t)rows * (size_t)cols, sizeof(float), &bytes)) c = own(m, malloc(bytes));
        if (!c) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for a merged copy of %s", m->source, u->matrix);
        w->dtype = PD_F32;
        w->row_bytes = (size_t)cols * sizeof(float);
        if (w->interleave) m->n_interleaved--;
        w->interleave = 0;
        w->data = (const uint8_t *)c;
    }
    merge_job j = {m->kern, *merged ? NULL : &src, (float *)(void *)(uintptr_t)w->data, u};
    if (pool) pdi_pool_for(pool, rows, 16, merge_range, &j);
    else merge_range(&j, 0, rows, 0);
    *merged = true;
    return PD_OK;
}

pd_model *pdi_model_derive(const pd_model *base, const pdi_lowrank *updates, size_t n_updates, pdi_derive_mode mode,
                           pd_error *err)
{
    if (!base || (n_updates > 0 && !updates) || mode < PD_DERIVE_AUTO || mode > PD_DERIVE_RUNTIME) {
        pdi_set_error(err, PD_ERR_ARG, "deriving a model: no base model, no updates or an unknown mode");
        return NULL;
    }
    for (size_t i = 0; i < n_updates; i++) {
        long index;
        if (check_update(base, &updates[i], &index, err)) return NULL;
    }
    size_t n_mat = (size_t)base->cfg.n_layers * N_LAYER_MATRICES;
    pdi_pool *pool = NULL;
    pd_model *m = calloc(1, sizeof *m);
    bool *merged = calloc(n_mat, sizeof *merged);
    if (m) {
        *m = *base;
        pdi_store_init(&m->store);
        m->norm_storage = NULL;
        m->base = base;
        m->owned = NULL;
        m->n_owned = m->cap_owned = 0;
        m->source = strdup(base->source);
        m->layers = malloc((size_t)base->cfg.n_layers * sizeof *m->layers);
        if (m->layers) memcpy(m->layers, base->layers, (size_t)base->cfg.n_layers * sizeof *m->layers);
    }
    if (!m || !merged || !m->source || !m->layers) {
        pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for a derived model", base->source);
        goto fail;
    }
    /* merging is a pass over every weight of the target matrices: spread it
     * over the cores */
    if (mode != PD_DERIVE_RUNTIME) pool = pdi_pool_for_weights();
    for (size_t i = 0; i < n_updates; i++) {
        const pdi_lowrank *u = &updates[i];
        long index = matrix_index(&base->cfg, u->matrix);
        if (add_update(m, matrix_at(m->layers, index), &merged[index], u, mode, pool, err)) goto fail;
    }
    pdi_pool_free(pool);
    free(merged);
    return m;
fail:
    pdi_pool_free(pool);
    free(merged);
    pd_model_free(m);
    return NULL;
}
