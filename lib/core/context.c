/* context.c - a context's run state: KV cache, scratch, outputs; create, fork, truncate. */
#include "model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

pd_context_params pd_context_default_params(void)
{
    pd_context_params p = {.n_ctx = 0, .n_threads = 0, .n_batch = 256, .max_bytes = 0, .kv_type = PD_KV_AUTO};
    return p;
}

static int64_t max3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* Columns of the widest input a product reads: hidden, the attention output, or ffn. */
static size_t widest_input(const pd_config *c)
{
    return (size_t)max3(c->hidden, (int64_t)c->n_heads * c->head_dim, c->ffn);
}

/* Allocate n floats, n computed from factors without overflow; NULL on failure. */
static float *alloc_floats(size_t a, size_t b, size_t c)
{
    size_t n, bytes;
    if (!pdi_mul_size(a, b, &n) || !pdi_mul_size(n, c, &n) || !pdi_mul_size(n, sizeof(float), &bytes) || bytes == 0)
        return NULL;
    return calloc(1, bytes);
}

static size_t kv_dim(const pd_config *c) { return (size_t)c->n_kv_heads * (size_t)c->head_dim; }

/* Check the parameters and fill in the defaults. */
static pd_status resolve_params(const pd_model *model, pd_context_params *p, pd_error *err)
{
    const pd_config *c = &model->cfg;
    if (p->n_ctx < 0 || p->n_threads < 0 || p->n_batch < 0 || p->n_threads > 256)
        return pdi_set_error(err, PD_ERR_ARG,
                             "context: negative or oversize parameter (n_ctx %d, n_threads %d, n_batch %d)",
                             p->n_ctx, p->n_threads, p->n_batch);
    if (p->n_ctx == 0) p->n_ctx = c->max_positions < 4096 ? c->max_positions : 4096;
    if (p->n_ctx > c->max_positions)
        return pdi_set_error(err, PD_ERR_RANGE, "%s: context of %d tokens asked, the model supports %d", model->source,
                             p->n_ctx, c->max_positions);
    if (p->n_threads == 0) p->n_threads = pd_cpu_count(); /* the one default: every core this process may use */
    if (p->n_batch == 0) p->n_batch = 256;
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    if (p->kv_type == PD_KV_AUTO) p->kv_type = pdi_dtype_is_block(c->n_layers ? model->layers[0].wk.dtype : PD_F32)
                                                   ? PD_KV_F16 : PD_KV_F32;
    if (p->kv_type != PD_KV_F32 && p->kv_type != PD_KV_F16)
        return pdi_set_error(err, PD_ERR_ARG, "context: unknown KV cache type %d", (int)p->kv_type);
    return PD_OK;
}

/* a += b * c bytes; false on overflow. */
static bool add_bytes(size_t *a, size_t b, size_t c)
{
    size_t n;
    if (!pdi_mul_size(b, c, &n) || *a + n < n) return false;
    *a += n;
    return true;
}

/* a += b * c * d floats, in bytes; false on overflow. */
static bool add_floats(size_t *a, size_t b, size_t c, size_t d)
{
    size_t n;
    if (!pdi_mul_size(b, c, &n) || !pdi_mul_size(n, d, &n) || !pdi_mul_size(n, sizeof(float), &n) || *a + n < n)
        return false;
    *a += n;
    return true;
}

/* Tokens of room in the quantized activations for a batch of n: rounded up so
 * the block-major d and s rows lie an odd number of cache lines apart. At a
 * power-of-two stride the blocks of one token (all a decode step reads) fall
 * into the same few L1 sets and evict each other. */
static size_t qact_cap(size_t n)
{
    size_t cap = (n + 15) / 16 * 16;
    return (cap / 16) % 2 ? cap : cap + 16;
}

/* Bytes of one cached key or value element. */
static size_t kv_bytes_per(pd_kv_type t) { return t == PD_KV_F16 ? 2 : 4; }

/* Bytes of the KV cache: n_ctx rounded up to whole blocks, keys and values
 * of every layer (model.h). */
static bool cache_bytes(const pd_config *c, const pd_context_params *p, size_t *kv)
{
    size_t row = kv_dim(c) * kv_bytes_per(p->kv_type);
    *kv = 0;
    return add_bytes(kv, pdi_kv_blocks(p->n_ctx) * 2 * (size_t)c->n_layers * PD_KEY_BLOCK, row);
}

/* The cache's pages: zeroed by the system and only made resident where
 * touched (the positions used so far: a prefix), in 2 MiB pages where the
 * system gives them (the mapping is aligned to 2 MiB for that). */
#define KV_PAGE ((size_t)2 << 20)
static void *map_cache(size_t bytes, size_t *mapped)
{
    size_t size = (bytes + KV_PAGE - 1) & ~(KV_PAGE - 1);
    if (size < bytes || size + KV_PAGE < size) return NULL;
    uint8_t *p = mmap(NULL, size + KV_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    size_t head = (KV_PAGE - (uintptr_t)p % KV_PAGE) % KV_PAGE;
    if (head) munmap(p, head); /* the slack before and after the aligned range */
    munmap(p + head + size, KV_PAGE - head);
#ifdef MADV_HUGEPAGE
    madvise(p + head, size, MADV_HUGEPAGE);
#endif
    *mapped = size;
    return p + head;
}

/* The bytes of quantized activations for n tokens of cols columns
 * (pdi_qact_alloc): int8 q, then d and s (with padding), then block_bias. */
static bool add_qact(size_t *scratch, size_t n, size_t cols)
{
    return add_floats(scratch, qact_cap(n), cols / sizeof(float) + 1, 1) &&
           add_floats(scratch, 2, (cols / PD_QBLOCK + 1) * qact_cap(n) + 8, 1) &&
           add_floats(scratch, qact_cap(n), cols / PD_QBLOCK, 1) /* block_bias: int32 */;
}

/* What pd_context_new allocates for resolved parameters p: the KV cache and
 * the scratch (the same products as the allocations below). */
static bool context_sizes(const pd_model *m, const pd_context_params *p, size_t *kv, size_t *scratch)
{
    const pd_config *c = &m->cfg;
    size_t B = (size_t)p->n_batch, H = (size_t)c->hidden, Q = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t F = (size_t)c->ffn, KV = kv_dim(c), T = (size_t)p->n_threads, R = (size_t)c->head_dim / 2 + 1;
    size_t max_cols = widest_input(c);
    size_t G = (size_t)(c->n_heads / c->n_kv_heads); /* query heads per KV head */
    *scratch = 0;
    return cache_bytes(c, p, kv) &&
           add_floats(scratch, 3 * B, H, 1) &&
           add_floats(scratch, 2 * B, Q, 1) && add_floats(scratch, 2 * B, KV, 1) && add_floats(scratch, 2 * B, F, 1) &&
           add_floats(scratch, T, (size_t)pdi_attn_tokens(p->n_batch) * G * (size_t)p->n_ctx + PD_ATTN_BLOCK * (size_t)c->head_dim, 1) &&
           add_floats(scratch, 2 * B, R, 1) && add_floats(scratch, B, 1, 1) /* chunk_pos: int32 */ &&
           add_floats(scratch, (size_t)p->n_ctx, 1, 1) /* kv_ids: int32 */ &&
           add_floats(scratch, 2 * B, 1, 1) /* keep, slot: int32 */ &&
           add_bytes(scratch, B, sizeof(pdi_seq_part)) &&
           add_qact(scratch, B, max_cols) && add_qact(scratch, B, F) && *kv + *scratch >= *kv;
}

size_t pd_context_bytes(const pd_model *model, const pd_context_params *params)
{
    if (!model) return 0;
    pd_context_params p = params ? *params : pd_context_default_params();
    size_t kv, scratch;
    if (resolve_params(model, &p, NULL) || !context_sizes(model, &p, &kv, &scratch)) return 0;
    return kv + scratch;
}

/* Room in a for n tokens of cols columns (only block-quantized weights read
 * it, whose inputs are whole blocks); false when out of memory (what was
 * allocated is freed with the context). */
bool pdi_qact_alloc(pdi_qact *a, int64_t n, size_t cols)
{
    n = (int64_t)qact_cap((size_t)n);
    size_t q, ds, block;
    /* d and s: [blocks][n] plus a vector of padding for the 8-token loads */
    if (!pdi_mul_size((size_t)n, cols, &q) || !pdi_mul_size(cols / PD_QBLOCK + 1, (size_t)n, &ds) ||
        !pdi_mul_size(ds + 8, sizeof(float), &ds) || !pdi_mul_size(q / PD_QBLOCK, sizeof(int32_t), &block))
        return false;
    a->q = malloc(q);
    a->d = calloc(1, ds);
    a->s = calloc(1, ds);
    a->block_bias = malloc(block);
    a->n_cap = n;
    return a->q && a->d && a->s && a->block_bias;
}

void pdi_qact_free(pdi_qact *a)
{
    free(a->q);
    free(a->d);
    free(a->s);
    free(a->block_bias);
}

pd_context *pd_context_new(const pd_model *model, const pd_context_params *params, pd_error *err)
{
    if (!model) {
        pdi_set_error(err, PD_ERR_ARG, "context: no model");
        return NULL;
    }
    pd_context_params p = params ? *params : pd_context_default_params();
    const pd_config *c = &model->cfg;
    size_t kv_bytes, scratch_bytes;
    if (resolve_params(model, &p, err)) return NULL;
    if (!context_sizes(model, &p, &kv_bytes, &scratch_bytes)) {
        pdi_set_error(err, PD_ERR_LIMIT, "%s: a context of %d tokens is too large to address", model->source, p.n_ctx);
        return NULL;
    }
    /* the budget is checked before anything is allocated */
    if (p.max_bytes && kv_bytes + scratch_bytes > p.max_bytes) {
        pdi_set_error(err, PD_ERR_LIMIT,
                      "%s: a context of %d tokens (batch %d, threads %d) needs %zu bytes (KV cache %zu, scratch %zu), "
                      "over the budget of %zu bytes",
                      model->source, p.n_ctx, p.n_batch, p.n_threads, kv_bytes + scratch_bytes, kv_bytes,
                      scratch_bytes, p.max_bytes);
        return NULL;
    }

    pd_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) goto nomem;
    ctx->model = model;
    ctx->n_ctx = p.n_ctx;
    ctx->n_batch = p.n_batch;
    ctx->max_bytes = p.max_bytes;
    ctx->bytes = kv_bytes + scratch_bytes;
    size_t B = (size_t)p.n_batch, H = (size_t)c->hidden, Q = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t F = (size_t)c->ffn, KV = kv_dim(c), T = (size_t)p.n_threads;
    ctx->kv_f16 = p.kv_type == PD_KV_F16;
    ctx->k_blocked = model->kern->key_scores_t != NULL;
    ctx->k_cache = map_cache(kv_bytes, &ctx->kv_mapped);
    if (ctx->k_cache) /* the values follow each block's keys */
        ctx->v_cache = (uint8_t *)ctx->k_cache + (size_t)c->n_layers * KV * PD_KEY_BLOCK * kv_bytes_per(p.kv_type);
    ctx->x = alloc_floats(B, H, 1);
    ctx->xn = alloc_floats(B, H, 1);
    ctx->q = alloc_floats(B, Q, 1);
    ctx->k = alloc_floats(B, KV, 1);
    ctx->v = alloc_floats(B, KV, 1);
    ctx->att = alloc_floats(B, Q, 1);
    ctx->gate = alloc_floats(B, F, 1);
    ctx->up = alloc_floats(B, F, 1);
    ctx->delta = alloc_floats(B, H, 1);
    ctx->scores = alloc_floats(T, (size_t)pdi_attn_tokens(p.n_batch) * (size_t)(c->n_heads / c->n_kv_heads) * (size_t)p.n_ctx +
                                      PD_ATTN_BLOCK * (size_t)c->head_dim, 1);
    ctx->rope_cos = alloc_floats(B, (size_t)c->head_dim / 2 + 1, 1);
    ctx->rope_sin = alloc_floats(B, (size_t)c->head_dim / 2 + 1, 1);
    ctx->chunk_pos = calloc(B, sizeof(int32_t));
    ctx->kv_ids = calloc((size_t)p.n_ctx, sizeof(int32_t));
    ctx->keep = calloc(B, sizeof(int32_t));
    ctx->slot = calloc(B, sizeof(int32_t));
    ctx->parts = calloc(B, sizeof(pdi_seq_part));
    ctx->pool = pdi_pool_new(p.n_threads);
    if (!ctx->k_cache || !ctx->v_cache || !ctx->x || !ctx->xn || !ctx->q || !ctx->k || !ctx->v || !ctx->att ||
        !ctx->gate || !ctx->up || !ctx->delta || !ctx->scores || !ctx->rope_cos ||
        !ctx->rope_sin || !ctx->chunk_pos || !ctx->kv_ids || !ctx->keep || !ctx->slot || !ctx->parts || !ctx->pool ||
        !pdi_qact_alloc(&ctx->qact, p.n_batch, widest_input(c)) ||
        !pdi_qact_alloc(&ctx->qact_inner, p.n_batch, (size_t)c->ffn))
        goto nomem;
    return ctx;
nomem:
    pd_context_free(ctx);
    pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory for a context of %d tokens", model->source, p.n_ctx);
    return NULL;
}

void pd_context_free(pd_context *ctx)
{
    if (!ctx) return;
    pdi_pool_free(ctx->pool);
    if (ctx->k_cache) munmap(ctx->k_cache, ctx->kv_mapped);
    free(ctx->x);
    free(ctx->xn);
    free(ctx->q);
    free(ctx->k);
    free(ctx->v);
    free(ctx->att);
    free(ctx->gate);
    free(ctx->up);
    free(ctx->delta);
    free(ctx->scores);
    free(ctx->rope_cos);
    free(ctx->rope_sin);
    free(ctx->chunk_pos);
    free(ctx->kv_ids);
    free(ctx->keep);
    free(ctx->slot);
    free(ctx->parts);
    pdi_qact_free(&ctx->qact);
    pdi_qact_free(&ctx->qact_inner);
    free(ctx->out_hidden);
    free(ctx->out_logits);
    free(ctx->state_layers);
    free(ctx->states);
    free(ctx);
}

pd_context *pd_context_fork(const pd_context *src, pd_error *err)
{
    if (!src) {
        pdi_set_error(err, PD_ERR_ARG, "forking a context: no context");
        return NULL;
    }
    pd_context_params p = {.n_ctx = src->n_ctx, .n_threads = pdi_pool_size(src->pool), .n_batch = src->n_batch,
                           .max_bytes = src->max_bytes, .kv_type = src->kv_f16 ? PD_KV_F16 : PD_KV_F32};
    pd_context *ctx = pd_context_new(src->model, &p, err);
    if (!ctx) return NULL;
    /* the blocks that hold the used positions, the last one in full */
    size_t block = pdi_kv_block_elems(src, kv_dim(&src->model->cfg)) * kv_bytes_per(p.kv_type);
    memcpy(ctx->k_cache, src->k_cache, pdi_kv_blocks(src->kv_len) * block);
    ctx->kv_len = src->kv_len;
    memcpy(ctx->kv_ids, src->kv_ids, (size_t)src->kv_plain * sizeof(int32_t));
    ctx->kv_plain = src->kv_plain;
    return ctx;
}

int32_t pd_context_kv_len(const pd_context *ctx) { return ctx->kv_len; }

pd_status pd_context_keep_layer_states(pd_context *ctx, const int32_t *layers, int32_t n, pd_error *err)
{
    if (!ctx || n < 0 || (n > 0 && !layers))
        return pdi_set_error(err, PD_ERR_ARG, "layer states: no context or no layer list");
    const pd_config *c = &ctx->model->cfg;
    for (int32_t i = 0; i < n; i++)
        if (layers[i] < 0 || layers[i] >= c->n_layers)
            return pdi_set_error(err, PD_ERR_RANGE, "%s: layer %d is not one of the model's %d layers", ctx->model->source,
                                 layers[i], c->n_layers);
    int32_t *copy = n ? malloc((size_t)n * sizeof *copy) : NULL;
    if (n && !copy) return pdi_set_error(err, PD_ERR_NOMEM, "layer states: out of memory");
    if (n) memcpy(copy, layers, (size_t)n * sizeof *copy);
    free(ctx->state_layers);
    ctx->state_layers = copy;
    ctx->n_state_layers = n;
    ctx->state_rows = 0;
    ctx->states_last = false;
    for (int32_t i = 0; i < n; i++) ctx->states_last = ctx->states_last || layers[i] == c->n_layers - 1;
    return PD_OK;
}

const float *pd_context_layer_states(const pd_context *ctx, int32_t row)
{
    if (!ctx || row < 0 || row >= ctx->state_rows) return NULL;
    return ctx->states + (size_t)row * (size_t)ctx->n_state_layers * (size_t)ctx->model->cfg.hidden;
}
int32_t pd_context_n_ctx(const pd_context *ctx) { return ctx->n_ctx; }
int32_t pd_context_n_threads(const pd_context *ctx) { return pdi_pool_size(ctx->pool); }
pd_kv_type pd_context_kv_type(const pd_context *ctx) { return ctx->kv_f16 ? PD_KV_F16 : PD_KV_F32; }

pd_status pd_context_kv_truncate(pd_context *ctx, int32_t n, pd_error *err)
{
    if (n < 0 || n > ctx->kv_len)
        return pdi_set_error(err, PD_ERR_RANGE, "cache truncation: %d is outside [0, %d]", n, ctx->kv_len);
    ctx->kv_len = n;
    if (ctx->kv_plain > n) ctx->kv_plain = n;
    return PD_OK;
}

int32_t pd_context_kv_match(const pd_context *ctx, const int32_t *ids, int32_t n_ids)
{
    if (!ctx || !ids || n_ids <= 0) return 0;
    int32_t n = n_ids < ctx->kv_plain ? n_ids : ctx->kv_plain, k = 0;
    while (k < n && ctx->kv_ids[k] == ids[k]) k++;
    return k;
}

int32_t pd_context_n_outputs(const pd_context *ctx) { return ctx->n_outputs; }

const float *pd_context_hidden(const pd_context *ctx, int32_t i)
{
    if (i < 0 || i >= ctx->n_outputs) return NULL;
    return ctx->out_hidden + (size_t)i * (size_t)ctx->model->cfg.hidden;
}

const float *pd_context_logits(const pd_context *ctx, int32_t i)
{
    if (!ctx->have_logits || i < 0 || i >= ctx->n_outputs) return NULL;
    return ctx->out_logits + (size_t)i * (size_t)ctx->model->cfg.vocab;
}
