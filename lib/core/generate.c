/* generate.c - prompt in, text out: ChatML wrapping, the decode loop, stop tokens. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *pd_chatml_user(const char *message)
{
    static const char head[] = "<|im_start|>user\n", tail[] = "<|im_end|>\n<|im_start|>assistant\n";
    size_t n = strlen(message);
    char *s = malloc(sizeof head + n + sizeof tail);
    if (!s) return NULL;
    memcpy(s, head, sizeof head - 1);
    memcpy(s + sizeof head - 1, message, n);
    memcpy(s + sizeof head - 1 + n, tail, sizeof tail);
    return s;
}

pd_status pdi_gen_start(pdi_gen *g, pd_context *ctx, const char *prompt, const pd_generate_params *params,
                        pd_token_callback callback, void *user, pd_error *err)
{
    const pd_model *m = ctx->model;
    const pd_tokenizer *tok = m->tokenizer;
    memset(g, 0, sizeof *g);
    if (!tok) return pdi_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to read a text prompt", m->source);
    if (!prompt) return pdi_set_error(err, PD_ERR_ARG, "generation: no prompt");
    g->p = (pd_generate_params){.sampler = pd_sampler_default_params()};
    if (params) g->p = *params;
    if (g->p.max_tokens < 0)
        return pdi_set_error(err, PD_ERR_ARG, "generation: max_tokens %d is negative", g->p.max_tokens);
    g->model = m;
    g->callback = callback;
    g->user = user;
    g->rng = g->p.sampler.seed;
    g->stops[0] = pd_tokenizer_token_id(tok, "<|im_end|>");
    g->stops[1] = pd_tokenizer_token_id(tok, "<|endoftext|>");
    g->stops[2] = m->cfg.eos_id;

    char *wrapped = g->p.chat ? pd_chatml_user(prompt) : NULL;
    if (g->p.chat && !wrapped) return pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
    const char *full = wrapped ? wrapped : prompt;
    size_t n_ids = 0;
    pd_status rc = pd_tokenizer_encode(tok, full, strlen(full), &g->ids, &n_ids, err);
    free(wrapped);
    if (rc == PD_OK && n_ids == 0) rc = pdi_set_error(err, PD_ERR_ARG, "generation: the prompt is empty");
    if (rc == PD_OK && n_ids > (size_t)(ctx->n_ctx - ctx->kv_len))
        rc = pdi_set_error(err, PD_ERR_CONTEXT, "%s: the prompt has %zu tokens, the context has room for %d", m->source,
                           n_ids, ctx->n_ctx - ctx->kv_len);
    if (rc == PD_OK && !pdi_buf_append(&g->out, "", 0)) rc = pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
    g->n_ids = (int32_t)n_ids;
    if (rc) pdi_gen_end(g, NULL);
    return rc;
}

pd_status pdi_gen_emit(pdi_gen *g, int32_t id, pd_error *err)
{
    if (g->done) return PD_OK;
    bool stop = id < 0 || id == g->model->cfg.eos_id;
    for (int i = 0; i < 3; i++) stop = stop || g->stops[i] == id;
    if (stop) {
        g->done = g->stop_token = true;
        return PD_OK;
    }
    size_t plen = 0;
    const char *piece = pd_tokenizer_token_bytes(g->model->tokenizer, id, &plen);
    if (!piece) { /* a row of the embedding with no token: say nothing for it */
        piece = "";
        plen = 0;
    }
    if (!pdi_buf_append(&g->out, piece, plen)) return pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
    g->produced++;
    if ((g->callback && g->callback(id, piece, plen, g->user)) || (g->p.max_tokens && g->produced >= g->p.max_tokens))
        g->done = true;
    return PD_OK;
}

void pdi_gen_end(pdi_gen *g, char **text)
{
    free(g->ids);
    g->ids = NULL;
    if (text)
        *text = g->out.data;
    else
        free(g->out.data);
    g->out.data = NULL;
}

pd_status pd_generate(pd_context *ctx, const char *prompt, const pd_generate_params *params,
                      pd_token_callback callback, void *user, char **text, pd_error *err)
{
    if (text) *text = NULL;
    pdi_gen g;
    pd_status rc = pdi_gen_start(&g, ctx, prompt, params, callback, user, err);
    if (rc) return rc;
    rc = pd_eval_tokens(ctx, g.ids, g.n_ids, err);
    while (rc == PD_OK && !g.done) {
        int32_t id = pd_sample(pd_context_logits(ctx, 0), g.model->cfg.vocab, NULL, &g.p.sampler, &g.rng);
        rc = pdi_gen_emit(&g, id, err);
        if (rc || g.done) break;
        if (ctx->kv_len >= ctx->n_ctx) break; /* the context is full: stop, as at max_tokens */
        rc = pd_eval_tokens(ctx, &id, 1, err);
    }
    pdi_gen_end(&g, rc ? NULL : text);
    return rc;
}
