/* extract_drafter.c - a DFlash draft (drafts/) as the drafter of extraction
 * by generation (schemas/' pd_extract_drafter seam): a draft context per
 * target context, holding the layer states of the tokens that context's
 * cache holds, so that the schema's cached prompt prefix needs no new
 * states from one text to the next. */
#include "pocketdec_compose.h"
#include "pd_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    pd_context *ctx;       /* the target context it follows */
    pd_draft_context *dc;
    int32_t *ids;          /* the tokens whose states dc holds */
    int32_t n, cap;
    int32_t mask;
    float *logits;         /* [block - 1][vocab]: the last proposals' scores */
} slot;

typedef struct drafter {
    pd_extract_drafter pub; /* first: the caller's pointer is this one */
    const pd_draft *draft;
    int32_t n_threads;
    int32_t *layers;
    slot **slots;
    int32_t n_slots;
} drafter;

static slot *slot_for(drafter *r, pd_context *ctx, pd_error *err)
{
    for (int32_t k = 0; k < r->n_slots; k++)
        if (r->slots[k]->ctx == ctx) return r->slots[k];
    slot **grown = realloc(r->slots, (size_t)(r->n_slots + 1) * sizeof *grown);
    slot *s = calloc(1, sizeof *s);
    if (grown) r->slots = grown;
    if (!grown || !s) {
        free(s);
        pdi_set_error(err, PD_ERR_NOMEM, "drafter: out of memory for a context's draft state");
        return NULL;
    }
    *s = (slot){.ctx = ctx, .mask = pd_draft_mask_id(r->draft)};
    size_t vocab = (size_t)pd_model_config(pd_draft_target(r->draft))->vocab;
    if (!(s->logits = malloc((size_t)(r->pub.block - 1) * vocab * sizeof(float)))) {
        free(s);
        pdi_set_error(err, PD_ERR_NOMEM, "drafter: out of memory for a context's draft scores");
        return NULL;
    }
    if (!(s->dc = pd_draft_context_new(r->draft, pd_context_n_ctx(ctx), r->n_threads, err))) {
        free(s->logits);
        free(s);
        return NULL;
    }
    r->slots[r->n_slots++] = s;
    return s;
}

static pd_status begin(void *user, pd_context *ctx, const int32_t *ids, int32_t n_keep, void **state, int32_t *held,
                       pd_error *err)
{
    drafter *r = user;
    if (pdi_context_model(ctx) != pd_draft_target(r->draft))
        return pdi_set_error(err, PD_ERR_ARG, "drafter: the draft was loaded for another model than the context's");
    slot *s = slot_for(r, ctx, err);
    if (!s) return err ? err->code : PD_ERR_NOMEM;
    int32_t m = 0; /* the states of the same leading tokens are the same states */
    while (m < n_keep && m < s->n && s->ids[m] == ids[m]) m++;
    pd_status rc = pd_draft_context_truncate(s->dc, m, err);
    if (rc) return rc;
    s->n = m;
    *state = s;
    *held = m;
    return PD_OK;
}

static pd_status append(void *state, const int32_t *ids, const float *states, int32_t n, pd_error *err)
{
    slot *s = state;
    if (s->n + n > s->cap) {
        int32_t cap = 2 * (s->n + n);
        int32_t *grown = realloc(s->ids, (size_t)cap * sizeof *grown);
        if (!grown) return pdi_set_error(err, PD_ERR_NOMEM, "drafter: out of memory for %d tokens", cap);
        s->ids = grown;
        s->cap = cap;
    }
    pd_status rc = pd_draft_context_append(s->dc, states, n, err);
    if (rc) return rc;
    memcpy(s->ids + s->n, ids, (size_t)n * sizeof *ids);
    s->n += n;
    return PD_OK;
}

static pd_status propose(void *state, int32_t last, int32_t n, int32_t *tokens, const float **logits, pd_error *err)
{
    slot *s = state;
    int32_t block[PD_DRAFTER_BLOCK_MAX];
    block[0] = last;
    for (int32_t i = 1; i < n; i++) block[i] = s->mask;
    *logits = s->logits;
    return pd_draft_propose(s->dc, block, n, tokens, s->logits, err);
}

pd_extract_drafter *pd_extract_drafter_new(const pd_draft *draft, int32_t block, int32_t n_threads, pd_error *err)
{
    if (!draft || n_threads < 0) {
        pdi_set_error(err, PD_ERR_ARG, "drafter: no draft, or n_threads %d is negative", n_threads);
        return NULL;
    }
    int32_t size = pd_draft_block_size(draft);
    if (block == 0) block = size;
    if (block < 2 || block > size || block > PD_DRAFTER_BLOCK_MAX) {
        pdi_set_error(err, PD_ERR_ARG, "drafter: blocks of %d tokens asked; the draft takes 2 to %d", block,
                      size < PD_DRAFTER_BLOCK_MAX ? size : PD_DRAFTER_BLOCK_MAX);
        return NULL;
    }
    drafter *r = calloc(1, sizeof *r);
    int32_t n_layers = pd_draft_n_target_layers(draft);
    if (r) r->layers = malloc((size_t)n_layers * sizeof *r->layers);
    if (!r || !r->layers) {
        free(r);
        pdi_set_error(err, PD_ERR_NOMEM, "drafter: out of memory");
        return NULL;
    }
    for (int32_t i = 0; i < n_layers; i++) r->layers[i] = pd_draft_target_layer(draft, i);
    r->draft = draft;
    r->n_threads = n_threads;
    r->pub = (pd_extract_drafter){.block = block, .layers = r->layers, .n_layers = n_layers, .user = r,
                                  .begin = begin, .append = append, .propose = propose};
    return &r->pub;
}

void pd_extract_drafter_free(pd_extract_drafter *dr)
{
    if (!dr) return;
    drafter *r = dr->user;
    for (int32_t k = 0; k < r->n_slots; k++) {
        pd_draft_context_free(r->slots[k]->dc);
        free(r->slots[k]->ids);
        free(r->slots[k]->logits);
        free(r->slots[k]);
    }
    free(r->slots);
    free(r->layers);
    free(r);
}
