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

static bool is_stop(const pd_model *m, int32_t id, const int32_t *stops, int n_stops)
{
    if (id == m->cfg.eos_id) return true;
    for (int i = 0; i < n_stops; i++)
        if (stops[i] == id) return true;
    return false;
}

pd_status pd_generate(pd_context *ctx, const char *prompt, const pd_generate_params *params,
                      pd_token_callback callback, void *user, char **text, pd_error *err)
{
    const pd_model *m = ctx->model;
    const pd_tokenizer *tok = m->tokenizer;
    if (text) *text = NULL;
    if (!tok) return pdi_set_error(err, PD_ERR_ARG, "%s: the model has no tokenizer to read a text prompt", m->source);
    if (!prompt) return pdi_set_error(err, PD_ERR_ARG, "generation: no prompt");
    pd_generate_params p = {.sampler = pd_sampler_default_params()};
    if (params) p = *params;
    if (p.max_tokens < 0) return pdi_set_error(err, PD_ERR_ARG, "generation: max_tokens %d is negative", p.max_tokens);

    char *wrapped = p.chat ? pd_chatml_user(prompt) : NULL;
    if (p.chat && !wrapped) return pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
    const char *full = wrapped ? wrapped : prompt;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    pd_status rc = pd_tokenizer_encode(tok, full, strlen(full), &ids, &n_ids, err);
    free(wrapped);
    if (rc) return rc;
    if (n_ids == 0) {
        free(ids);
        return pdi_set_error(err, PD_ERR_ARG, "generation: the prompt is empty");
    }
    if (n_ids > (size_t)(ctx->n_ctx - ctx->kv_len)) {
        free(ids);
        return pdi_set_error(err, PD_ERR_CONTEXT, "%s: the prompt has %zu tokens, the context has room for %d",
                             m->source, n_ids, ctx->n_ctx - ctx->kv_len);
    }
    rc = pd_eval_tokens(ctx, ids, (int32_t)n_ids, err);
    free(ids);
    if (rc) return rc;

    int32_t stops[3] = {pd_tokenizer_token_id(tok, "<|im_end|>"), pd_tokenizer_token_id(tok, "<|endoftext|>"),
                        m->cfg.eos_id};
    uint64_t rng = p.sampler.seed;
    pdi_buf out = {0};
    if (!pdi_buf_append(&out, "", 0)) return pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
    for (int32_t produced = 0; p.max_tokens == 0 || produced < p.max_tokens; produced++) {
        int32_t id = pd_sample(pd_context_logits(ctx, 0), m->cfg.vocab, NULL, &p.sampler, &rng);
        if (id < 0 || is_stop(m, id, stops, 3)) break;
        size_t plen = 0;
        const char *piece = pd_tokenizer_token_bytes(tok, id, &plen);
        if (!piece) { /* a row of the embedding with no token: say nothing for it */
            piece = "";
            plen = 0;
        }
        if (!pdi_buf_append(&out, piece, plen)) {
            free(out.data);
            return pdi_set_error(err, PD_ERR_NOMEM, "generation: out of memory");
        }
        if (callback && callback(id, piece, plen, user)) break;
        if (ctx->kv_len >= ctx->n_ctx) break; /* the context is full: stop, as at max_tokens */
        if ((rc = pd_eval_tokens(ctx, &id, 1, err))) {
            free(out.data);
            return rc;
        }
    }
    if (text)
        *text = out.data;
    else
        free(out.data);
    return PD_OK;
}
