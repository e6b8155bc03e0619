/* forward.c - the Qwen3 forward pass (HF semantics), one chunk of tokens at a time.
 *
 * For each layer: RMSNorm, q/k/v projections, per-head q/k RMSNorm, RoPE
 * (rotate-half), K/V appended to the cache, grouped-query attention under the
 * batch's visibility, output projection into the residual stream; RMSNorm,
 * SwiGLU MLP into the residual stream. Then the final norm for the rows the
 * caller keeps, and the LM head for those rows. The matrix products are
 * matmul.c's, the norms, RoPE and cache writes of q and k rope.c's. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- one chunk */

/* Per-token work between the matrix products, run across the pool: the
 * residual sum and RMSNorm, or the q/k norms, RoPE and the cache write. */
typedef struct {
    pd_context *ctx;
    const float *norm;         /* residual_range: the norm's weights */
    int layer;                 /* rope_store_range: the layer, */
    const pdi_seq_part *parts;  /* the pass's parts (whose caches the rows go to) */
    bool trim;                 /* and whether attention runs for the kept rows only */
} token_job;

/* x += delta (when add), then xn = RMSNorm(x) for tokens [begin, end). */
static void residual_range(const token_job *j, bool add, int64_t begin, int64_t end)
{
    pd_context *ctx = j->ctx;
    const pd_config *c = &ctx->model->cfg;
    int64_t H = c->hidden;
    for (int64_t t = begin; t < end; t++) {
        float *x = ctx->x + t * H;
        if (add)
            for (int64_t i = 0; i < H; i++) x[i] += ctx->delta[t * H + i];
        pdi_rmsnorm(ctx->xn + t * H, x, j->norm, H, c->rms_eps);
    }
}

static void norm_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    residual_range(arg, false, begin, end);
}

static void add_norm_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    residual_range(arg, true, begin, end);
}

/* Every KV head of the rows whose part attention does not do them (pdi_rope_in_attention). */
static void rope_store_range(void *arg, int64_t begin, int64_t end, int thread)
{
    (void)thread;
    const token_job *j = arg;
    const pdi_seq_part *p = j->parts;
    for (int64_t t = begin; t < end; t++) {
        while (t >= p->row0 + p->n_tok) p++; /* the part that holds row t */
        if (!pdi_rope_in_attention(p, j->ctx->n_batch, j->trim))
            pdi_rope_store(j->ctx, j->layer, p, t, 0, j->ctx->model->cfg.n_kv_heads);
    }
}

/* Rows k of ctx->att and ctx->x become rows rows[k] (ascending, so each
 * moves down or stays). */
static void gather_rows(pd_context *ctx, const int32_t *rows, int32_t n_rows)
{
    const pd_config *c = &ctx->model->cfg;
    size_t Q = (size_t)c->n_heads * (size_t)c->head_dim, H = (size_t)c->hidden;
    for (int32_t k = 0; k < n_rows; k++)
        if (rows[k] != k) {
            memcpy(ctx->att + (size_t)k * Q, ctx->att + (size_t)rows[k] * Q, Q * sizeof(float));
            memcpy(ctx->x + (size_t)k * H, ctx->x + (size_t)rows[k] * H, H * sizeof(float));
        }
}

/* One layer on the pass's n_tok rows; ctx->xn holds RMSNorm(x) with the
 * layer's attention norm on entry, and the next layer's (or nothing, after
 * the last) on return. With trim (the last layer: the n_keep rows ctx->keep
 * lists, ascending), every row's keys and values go to its cache, but only
 * the kept rows go on through attention and the MLP, into rows 0..n_keep-1
 * of x: no other row's output is read, and each row's sums are those it has
 * in the whole pass. */
static void layer_forward(pd_context *ctx, int l, const pdi_seq_part *parts, int32_t n_parts, int32_t n_tok, bool trim,
                          int32_t n_keep)
{
    const pd_model *m = ctx->model;
    const pd_config *c = &m->cfg;
    const pdi_layer *L = &m->layers[l];
    int64_t H = c->hidden, hd = c->head_dim, Q = (int64_t)c->n_heads * hd, KV = (int64_t)c->n_kv_heads * hd;
    int64_t F = c->ffn;

    const pdi_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {ctx->q, ctx->k, ctx->v};
    pdi_matmul_fused(ctx, 3, qkv, qkv_out, (const int64_t[3]){Q, KV, KV}, ctx->xn, H, n_tok, false, false, NULL);

    token_job rj = {.ctx = ctx, .layer = l, .parts = parts, .trim = trim};
    bool rope_apart = false; /* some part's rows are not roped by attention */
    for (int32_t i = 0; i < n_parts && !rope_apart; i++) rope_apart = !pdi_rope_in_attention(&parts[i], ctx->n_batch, trim);
    if (rope_apart) pdi_pool_for(ctx->pool, n_tok, 8, rope_store_range, &rj);

    pdi_attention(ctx, l, parts, n_parts, trim);
    if (trim) {
        n_tok = n_keep;
        if (n_tok == 0) return; /* the keys and values were all the pass had to give */
        gather_rows(ctx, ctx->keep, n_keep);
    }
    pdi_matmul(ctx, &L->wo, ctx->att, NULL, Q, ctx->delta, H, n_tok);
    token_job ffn = {.ctx = ctx, .norm = L->ffn_norm};
    pdi_pool_for(ctx->pool, n_tok, 8, add_norm_range, &ffn);

    const pdi_matrix *gate_up[2] = {&L->w_gate, &L->w_up};
    float *gate_up_out[2] = {ctx->gate, ctx->up};
    /* the down projection's input is quantized where silu(gate) * up is made */
    const pdi_qact *inner = pdi_matmul_fused(ctx, 2, gate_up, gate_up_out, (const int64_t[2]){F, F}, ctx->xn, H, n_tok, true,
                                        true, pdi_dtype_is_block(L->w_down.dtype) ? &ctx->qact_inner : NULL);
    pdi_matmul(ctx, &L->w_down, ctx->gate, inner, F, ctx->delta, H, n_tok);
    if (l + 1 < c->n_layers) {
        token_job next = {.ctx = ctx, .norm = m->layers[l + 1].attn_norm};
        pdi_pool_for(ctx->pool, n_tok, 8, add_norm_range, &next);
    } else {
        for (int64_t i = 0; i < (int64_t)n_tok * H; i++) ctx->x[i] += ctx->delta[i];
    }
}

/* ------------------------------------------------------------- validation */

static pd_status check_batch(const pd_context *ctx, const pd_batch *b, pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    const char *src = ctx->model->source;
    if (!b || !b->tokens || b->n_tokens <= 0)
        return pdi_set_error(err, PD_ERR_ARG, "evaluation: empty batch");
    if (b->n_tokens > ctx->n_ctx - ctx->kv_len)
        return pdi_set_error(err, PD_ERR_CONTEXT, "%s: %d tokens do not fit: %d of the context's %d are in use", src,
                             b->n_tokens, ctx->kv_len, ctx->n_ctx);
    for (int32_t i = 0; i < b->n_tokens; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= c->vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "%s: token %d at batch index %d is outside the vocabulary [0, %d)",
                                 src, b->tokens[i], i, c->vocab);
        if (b->positions && (b->positions[i] < 0 || b->positions[i] >= c->max_positions))
            return pdi_set_error(err, PD_ERR_RANGE, "%s: position %d at batch index %d is outside [0, %d)", src,
                                 b->positions[i], i, c->max_positions);
    }
    if (b->visible) {
        size_t n = (size_t)b->n_tokens;
        for (size_t i = 0; i < n; i++) {
            if (!b->visible[i * n + i])
                return pdi_set_error(err, PD_ERR_ARG, "evaluation: token %zu of the batch must see itself", i);
            for (size_t j = i + 1; j < n; j++)
                if (b->visible[i * n + j])
                    return pdi_set_error(err, PD_ERR_ARG,
                                         "evaluation: token %zu may not see the later token %zu (the mask must be lower-triangular)", i, j);
        }
    }
    if (b->n_outputs < 0 || (b->n_outputs > 0 && !b->outputs))
        return pdi_set_error(err, PD_ERR_ARG, "evaluation: %d outputs asked with no output list", b->n_outputs);
    if (b->n_outputs > b->n_tokens) /* bounds the output buffers by the batch */
        return pdi_set_error(err, PD_ERR_LIMIT, "evaluation: %d outputs asked for a batch of %d tokens (at most one a token)",
                             b->n_outputs, b->n_tokens);
    for (int32_t k = 0; k < b->n_outputs; k++)
        if (b->outputs[k] < 0 || b->outputs[k] >= b->n_tokens)
            return pdi_set_error(err, PD_ERR_RANGE, "evaluation: output row %d is outside the batch of %d tokens",
                                 b->outputs[k], b->n_tokens);
    return PD_OK;
}

static pd_status reserve_outputs(pd_context *ctx, int32_t n, int logits, pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    if (n > ctx->cap_outputs || (logits && !ctx->out_logits)) {
        int32_t cap = n > ctx->cap_outputs ? n : ctx->cap_outputs;
        size_t hb, lb;
        if (!pdi_mul_size((size_t)cap, (size_t)c->hidden * sizeof(float), &hb) ||
            !pdi_mul_size((size_t)cap, (size_t)c->vocab * sizeof(float), &lb))
            return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: %d outputs are too many", n);
        size_t out = hb + (logits ? lb : 0); /* the context's own bytes are within its budget */
        if (ctx->max_bytes && (out < hb || out > ctx->max_bytes - ctx->bytes))
            return pdi_set_error(err, PD_ERR_LIMIT,
                                 "evaluation: %d kept rows need %zu bytes of outputs; with the context's %zu bytes that "
                                 "is over its budget of %zu bytes",
                                 cap, out, ctx->bytes, ctx->max_bytes);
        float *h = realloc(ctx->out_hidden, hb);
        if (!h) return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for %d outputs", n);
        ctx->out_hidden = h;
        free(ctx->out_logits);
        ctx->out_logits = NULL;
        if (logits && !(ctx->out_logits = malloc(lb))) {
            ctx->cap_outputs = 0;
            return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for the logits of %d outputs", n);
        }
        ctx->cap_outputs = cap;
    }
    return PD_OK;
}

/* Room for the layer states of n rows (pd_context_keep_layer_states). */
static pd_status reserve_states(pd_context *ctx, int32_t n, pd_error *err)
{
    size_t need;
    if (!pdi_mul_size((size_t)n, (size_t)ctx->n_state_layers * (size_t)ctx->model->cfg.hidden, &need))
        return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: the layer states of %d rows are too many", n);
    if (need > ctx->cap_states) {
        float *s = realloc(ctx->states, need * sizeof(float));
        if (!s) return pdi_set_error(err, PD_ERR_NOMEM, "evaluation: out of memory for the layer states of %d rows", n);
        ctx->states = s;
        ctx->cap_states = need;
    }
    return PD_OK;
}

/* The residual stream of the pass's rows after layer l into the layer
 * states of the parts' contexts that keep that layer. */
static void copy_states(pd_context *ctx, int l, const pdi_seq_part *parts, int32_t n_parts)
{
    int64_t H = ctx->model->cfg.hidden;
    for (int32_t i = 0; i < n_parts; i++) {
        pd_context *seq = parts[i].seq;
        for (int32_t k = 0; k < seq->n_state_layers; k++) {
            if (seq->state_layers[k] != l) continue;
            for (int32_t t = 0; t < parts[i].n_tok; t++) {
                size_t row = (size_t)(parts[i].chunk_start + t);
                memcpy(seq->states + (row * (size_t)seq->n_state_layers + (size_t)k) * (size_t)H,
                       ctx->x + (size_t)(parts[i].row0 + t) * (size_t)H, (size_t)H * sizeof(float));
            }
        }
    }
}

/* ------------------------------------------------------------------- eval */

/* The batch rows whose hidden states are kept: its outputs, or its last row
 * (stored in *last). */
static const int32_t *kept_outputs(const pd_batch *b, int32_t *last, int32_t *n)
{
    *last = b->n_tokens - 1;
    *n = b->n_outputs > 0 ? b->n_outputs : 1;
    return b->n_outputs > 0 ? b->outputs : last;
}

/* One pass: the parts' rows (at most ctx->n_batch together) through the
 * trunk on ctx's scratch and threads. Each part's cache grows by its rows,
 * and its kept rows' final-norm hidden states go to its context's outputs. */
static void run_pass(pd_context *ctx, pdi_seq_part *parts, int32_t n_parts)
{
    const pd_model *m = ctx->model;
    const pd_config *c = &m->cfg;
    int64_t H = c->hidden;
    int32_t n_tok = 0, last, n_out;
    for (int32_t i = 0; i < n_parts; i++) {
        pdi_seq_part *p = &parts[i];
        const pd_batch *b = p->batch;
        p->row0 = n_tok;
        for (int32_t t = 0; t < p->n_tok; t++, n_tok++) {
            pdi_matrix_row(&m->embed, b->tokens[p->chunk_start + t], ctx->x + n_tok * H);
            ctx->chunk_pos[n_tok] = b->positions ? b->positions[p->chunk_start + t] : p->batch_kv0 + p->chunk_start + t;
        }
    }
    pdi_rope_tables(ctx, n_tok);
    if (c->n_layers > 0) {
        token_job first = {.ctx = ctx, .norm = m->layers[0].attn_norm};
        pdi_pool_for(ctx->pool, n_tok, 8, norm_range, &first);
    }
    /* the pass's kept rows, ascending (slot: a row's place among them, -1 for none) */
    int32_t n_keep = 0;
    for (int32_t t = 0; t < n_tok; t++) ctx->slot[t] = -1;
    for (int32_t i = 0; i < n_parts; i++) {
        pdi_seq_part *p = &parts[i];
        const int32_t *outputs = kept_outputs(p->batch, &last, &n_out);
        for (int32_t k = 0; k < n_out; k++)
            if (outputs[k] >= p->chunk_start && outputs[k] < p->chunk_start + p->n_tok)
                ctx->slot[p->row0 + outputs[k] - p->chunk_start] = 0;
        p->keep0 = n_keep;
        for (int32_t t = p->row0; t < p->row0 + p->n_tok; t++)
            if (ctx->slot[t] == 0) {
                ctx->slot[t] = n_keep;
                ctx->keep[n_keep++] = t;
            }
        p->n_keep = n_keep - p->keep0;
    }
    bool trim = n_keep < n_tok, states = false; /* the last layer carries the kept rows only, */
    for (int32_t i = 0; i < n_parts; i++) {
        trim = trim && !parts[i].seq->states_last; /* unless its states are kept */
        states = states || parts[i].seq->n_state_layers > 0;
    }
    for (int l = 0; l < c->n_layers; l++) {
        layer_forward(ctx, l, parts, n_parts, n_tok, trim && l + 1 == c->n_layers, n_keep);
        if (states) copy_states(ctx, l, parts, n_parts);
    }
    for (int32_t i = 0; i < n_parts; i++) {
        const pdi_seq_part *p = &parts[i];
        p->seq->kv_len = p->batch_kv0 + p->chunk_start + p->n_tok;
        const int32_t *outputs = kept_outputs(p->batch, &last, &n_out);
        for (int32_t k = 0; k < n_out; k++) {
            int32_t r = outputs[k] - p->chunk_start;
            if (r >= 0 && r < p->n_tok) {
                int32_t at = trim && c->n_layers > 0 ? ctx->slot[p->row0 + r] : p->row0 + r;
                pdi_rmsnorm(p->seq->out_hidden + (size_t)k * H, ctx->x + (size_t)at * H, m->final_norm, H, c->rms_eps);
            }
        }
    }
}

/* The contexts and batches of pd_eval_many, checked before anything is
 * evaluated or allocated (a message names the context when there are several). */
static pd_status check_many(const pd_context *lead, pd_context *const *ctxs, const pd_batch *batches, int32_t n,
                            pd_error *err)
{
    if (!lead || !ctxs || !batches || n <= 0)
        return pdi_set_error(err, PD_ERR_ARG, "%s: no context or no batch", n == 1 ? "pd_eval" : "pd_eval_many");
    for (int32_t i = 0; i < n; i++) {
        if (!ctxs[i]) return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: context %d is NULL", i);
        if (ctxs[i]->model != lead->model)
            return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: context %d is of another model than the pass context", i);
        if (ctxs[i]->n_ctx > lead->n_ctx)
            return pdi_set_error(err, PD_ERR_ARG,
                                 "joint evaluation: context %d holds %d tokens, more than the pass context's %d (whose "
                                 "scratch the passes use)", i, ctxs[i]->n_ctx, lead->n_ctx);
        for (int32_t j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i])
                return pdi_set_error(err, PD_ERR_ARG, "joint evaluation: contexts %d and %d are the same context", j, i);
        pd_status rc = check_batch(ctxs[i], &batches[i], err);
        if (rc && n > 1) pdi_error_prefix(err, "joint evaluation: context %d", i);
        if (rc) return rc;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t last, n_out;
        kept_outputs(&batches[i], &last, &n_out);
        pd_status rc = reserve_outputs(ctxs[i], n_out, batches[i].want_logits, err);
        if (rc == PD_OK && ctxs[i]->n_state_layers) rc = reserve_states(ctxs[i], batches[i].n_tokens, err);
        if (rc && n > 1) pdi_error_prefix(err, "joint evaluation: context %d", i);
        if (rc) return rc;
    }
    return PD_OK;
}

/* What a finished batch leaves on its context: the plain causal run (kv_ids),
 * the count of outputs, and the logits (computed with lead's threads). */
static void finish_batch(pd_context *lead, pd_context *ctx, const pd_batch *b, int32_t kv0)
{
    const pd_config *c = &ctx->model->cfg;
    /* the plain causal run grows only from its own end; any other batch ends it at kv0 */
    bool plain = !b->visible && ctx->kv_plain == kv0;
    for (int32_t i = 0; plain && b->positions && i < b->n_tokens; i++) plain = b->positions[i] == kv0 + i;
    if (ctx->kv_plain > kv0) ctx->kv_plain = kv0;
    if (plain) {
        memcpy(ctx->kv_ids + kv0, b->tokens, (size_t)b->n_tokens * sizeof(int32_t));
        ctx->kv_plain = kv0 + b->n_tokens;
    }
    int32_t last;
    kept_outputs(b, &last, &ctx->n_outputs);
    ctx->state_rows = ctx->n_state_layers ? b->n_tokens : 0;
    if (b->want_logits) {
        pdi_matmul(lead, &ctx->model->lm_head, ctx->out_hidden, NULL, c->hidden, ctx->out_logits, c->vocab, ctx->n_outputs);
        ctx->have_logits = 1;
    }
}

pd_status pd_eval_many(pd_context *lead, pd_context *const *ctxs, const pd_batch *batches, int32_t n, pd_error *err)
{
    pd_status rc = check_many(lead, ctxs, batches, n, err);
    if (rc) return rc;
    for (int32_t i = 0; i < n; i++) {
        ctxs[i]->n_outputs = 0;
        ctxs[i]->have_logits = 0;
    }
    /* passes of at most n_batch rows: a batch goes whole into one pass when
     * it fits in one, else it is split across passes */
    int32_t i = 0, start = 0;
    while (i < n) {
        int32_t n_parts = 0, rows = 0;
        while (i < n && rows < lead->n_batch) {
            int32_t left = batches[i].n_tokens - start, take = left;
            if (rows + left > lead->n_batch) {
                if (rows > 0 && left <= lead->n_batch) break; /* whole, in the next pass */
                take = lead->n_batch - rows;
            }
            lead->parts[n_parts++] = (pdi_seq_part){ctxs[i], &batches[i], 0, take, start, ctxs[i]->kv_len - start, 0, 0};
            rows += take;
            start += take;
            if (start == batches[i].n_tokens) {
                i++;
                start = 0;
            }
        }
        run_pass(lead, lead->parts, n_parts);
    }
    for (int32_t k = 0; k < n; k++) finish_batch(lead, ctxs[k], &batches[k], ctxs[k]->kv_len - batches[k].n_tokens);
    return PD_OK;
}

pd_status pd_eval(pd_context *ctx, const pd_batch *batch, pd_error *err)
{
    if (!ctx) return pdi_set_error(err, PD_ERR_ARG, "evaluation: no context");
    return pd_eval_many(ctx, &ctx, batch, 1, err);
}

pd_status pd_eval_tokens(pd_context *ctx, const int32_t *ids, int32_t n_ids, pd_error *err)
{
    pd_batch b = {.tokens = ids, .n_tokens = n_ids, .want_logits = 1};
    return pd_eval(ctx, &b, err);
}

pd_status pd_context_logits_rows(pd_context *ctx, int32_t i, const int32_t *rows, int32_t n_rows, float *out,
                                 pd_error *err)
{
    const pd_config *c = &ctx->model->cfg;
    if (i < 0 || i >= ctx->n_outputs)
        return pdi_set_error(err, PD_ERR_RANGE, "logits of kept rows: output %d of %d", i, ctx->n_outputs);
    if (n_rows < 0 || (n_rows > 0 && (!rows || !out)))
        return pdi_set_error(err, PD_ERR_ARG, "logits of kept rows: no rows or no output buffer");
    for (int32_t k = 0; k < n_rows; k++)
        if (rows[k] < 0 || rows[k] >= c->vocab)
            return pdi_set_error(err, PD_ERR_RANGE, "logits of kept rows: row %d is outside [0, %d)", rows[k],
                                 c->vocab);
    pdi_matmul_rows(ctx, &ctx->model->lm_head, rows, n_rows, pd_context_hidden(ctx, i), NULL, c->hidden, out, n_rows, 1);
    return PD_OK;
}

void pdi_model_embed_rows(const pd_model *model, const int32_t *ids, int64_t n, float *out)
{
    for (int64_t t = 0; t < n; t++) pdi_matrix_row(&model->embed, ids[t], out + t * model->cfg.hidden);
}

void pdi_context_head_logits(pd_context *ctx, const float *x, int64_t n_tok, float *logits)
{
    const pd_config *c = &ctx->model->cfg;
    pdi_matmul(ctx, &ctx->model->lm_head, x, NULL, c->hidden, logits, c->vocab, n_tok);
}

struct pdi_pool *pdi_context_pool(pd_context *ctx) { return ctx->pool; }
const pd_model *pdi_context_model(const pd_context *ctx) { return ctx->model; }
