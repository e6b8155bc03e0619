/* draft_generate.c - generation with a draft proposing blocks and the
 * target verifying each in one pass (pd_draft_generate).
 *
 * After the prompt (its layer states appended to the draft's context), each
 * pass: the block [last token, the draft's proposals...] goes through the
 * target with every row kept; the proposals are taken while each equals the
 * target's choice after the rows before it, then the target's own next
 * token; both caches keep the block's rows up to the last taken proposal.
 * Every token taken is the target's choice after exactly the tokens before
 * it, so the text is pd_generate's.
 *
 * Sampling is the same walk. The target's choice at a row is a sample of its
 * distribution p there; the proposal x is kept when the sample is x, with
 * probability p(x), and otherwise the sample, drawn from p without x, ends
 * the pass. That is the speculative acceptance rule (keep with probability
 * min(1, p(x)/q(x)), else draw from max(0, p - q) normalized) for a draft
 * whose q puts all its mass on x, as DFlash's argmax and DFlash2's selected
 * path do. One sample a token taken, from the seeded stream in pd_generate's
 * order, on logits with pd_generate's bits: the same seed gives the same
 * text. */
#include "drafts.h"

#include <stdlib.h>
#include <string.h>

typedef struct engine {
    pd_context *ctx;
    pd_draft_context *dc;
    pdi_gen g;
    int32_t kv0;      /* the target's cache before the prompt (the draft's position 0) */
    bool drafting;    /* the draft's context holds every position before the block */
    pd_draft_stats st;
} engine;

/* The layer states of the last evaluation's rows 0..n-1 into the draft's
 * context; when they do not fit, drafting stops. */
static void feed_draft(engine *e, int32_t n)
{
    pd_error ignored;
    if (e->drafting && pd_draft_context_append(e->dc, pd_context_layer_states(e->ctx, 0), n, &ignored))
        e->drafting = false;
}

/* One pass from the last token cur: draft, verify, take, cut back. *next
 * receives the target's token after what was taken. */
static pd_status pass(engine *e, int32_t cur, int32_t block, int32_t *next, pd_error *err)
{
    int32_t start = pd_context_kv_len(e->ctx), n = pd_context_n_ctx(e->ctx) - start;
    if (n > block) n = block;
    if (e->g.p.max_tokens && n > e->g.p.max_tokens - e->g.produced) n = e->g.p.max_tokens - e->g.produced;
    const pd_draft *d = pdi_draft_of(e->dc);
    int32_t ids[256], rows[256];
    ids[0] = cur;
    if (n >= 2 && e->drafting) {
        for (int32_t i = 1; i < n; i++) ids[i] = pd_draft_mask_id(d);
        pd_status rc = pd_draft_propose(e->dc, ids, n, ids + 1, NULL, err);
        if (rc) return rc;
        e->st.drafted += n - 1;
    } else {
        n = 1;
    }
    for (int32_t i = 0; i < n; i++) rows[i] = i;
    pd_batch b = {.tokens = ids, .n_tokens = n, .outputs = rows, .n_outputs = n, .want_logits = 1};
    pd_status rc = pd_eval(e->ctx, &b, err);
    if (rc) return rc;
    e->st.passes++;
    const int32_t vocab = pd_model_config(pdi_context_model(e->ctx))->vocab;
    int32_t taken = 0; /* proposals taken */
    for (;;) {
        int32_t choice = pd_sample(pd_context_logits(e->ctx, taken), vocab, NULL, &e->g.p.sampler, &e->g.rng);
        if (taken + 1 < n && ids[taken + 1] == choice) {
            taken++;
            if ((rc = pdi_gen_emit(&e->g, choice, err))) return rc;
            continue;
        }
        *next = choice;
        break;
    }
    e->st.accepted += taken;
    if ((rc = pd_context_kv_truncate(e->ctx, start + taken + 1, err))) return rc;
    feed_draft(e, taken + 1);
    return pdi_gen_emit(&e->g, *next, err);
}

pd_status pd_draft_generate(pd_context *ctx, pd_draft_context *dc, const char *prompt, const pd_generate_params *params,
                            int32_t block, pd_token_callback callback, void *user, char **text, pd_draft_stats *stats,
                            pd_error *err)
{
    if (text) *text = NULL;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!ctx || !dc) return pdi_set_error(err, PD_ERR_ARG, "speculative generation: no context or no draft context");
    const pd_draft *d = pdi_draft_of(dc);
    if (pd_draft_target(d) != pdi_context_model(ctx))
        return pdi_set_error(err, PD_ERR_ARG, "%s: the draft was loaded for another model than the context's", d->source);
    if (block == 0) block = d->block_size;
    if (block < 2 || block > d->block_size)
        return pdi_set_error(err, PD_ERR_ARG, "%s: blocks of %d tokens asked; the draft takes 2 to %d", d->source, block,
                             d->block_size);
    engine e = {.ctx = ctx, .dc = dc, .kv0 = pd_context_kv_len(ctx)};
    pd_status rc = pdi_gen_start(&e.g, ctx, prompt, params, callback, user, err);
    if (rc) return rc;
    rc = pd_context_keep_layer_states(ctx, d->target_layers, d->n_targets, err);
    pd_batch b = {.tokens = e.g.ids, .n_tokens = e.g.n_ids, .want_logits = 1};
    if (rc == PD_OK) rc = pd_eval(ctx, &b, err);
    if (rc == PD_OK) {
        pd_draft_context_truncate(dc, 0, NULL);
        e.drafting = true;
        feed_draft(&e, e.g.n_ids);
        int32_t cur = pd_sample(pd_context_logits(ctx, 0), d->vocab, NULL, &e.g.p.sampler, &e.g.rng);
        rc = pdi_gen_emit(&e.g, cur, err);
        while (rc == PD_OK && !e.g.done && pd_context_kv_len(ctx) < pd_context_n_ctx(ctx))
            rc = pass(&e, cur, block, &cur, err);
    }
    /* pd_generate's cache: every token it printed but the last, which it
     * evaluates only to find a stop token after it */
    if (rc == PD_OK) rc = pd_context_kv_truncate(ctx, e.kv0 + e.g.n_ids + e.g.produced - !e.g.stop_token, err);
    pd_context_keep_layer_states(ctx, NULL, 0, NULL);
    e.st.produced = e.g.produced;
    if (stats) *stats = e.st;
    pdi_gen_end(&e.g, rc ? NULL : text);
    return rc;
}
