/* cmd_generate.c - `pocketdec generate`: text after a prompt, greedy or
 * sampled, printed as it comes; with --draft DIR, the target verifies a
 * DFlash / DFlash2 draft's blocks (the same text, greedy or for the same
 * seed). A summary line ends stderr: tokens and tokens/s, and with a draft
 * passes, drafted and accepted tokens. */
#include "cli.h"

#include <stdlib.h>

static int print_piece(int32_t id, const char *piece, size_t len, void *user)
{
    (void)id;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    ++*(int32_t *)user;
    return 0;
}

int cmd_generate(cli_args *a)
{
    const char *prompt = cli_opt(a, "--prompt");
    if (!prompt) return cli_usage(a, "--prompt TEXT is required");
    pd_generate_params gp = {.sampler = pd_sampler_default_params(), .chat = cli_flag(a, "--chat")};
    double temp = 0.0, top_p = 1.0;
    int32_t seed = 0, block = 0;
    if (cli_int_opt(a, "--max-tokens", 128, 0, 1 << 30, &gp.max_tokens) ||
        cli_float_opt(a, "--temperature", 0.0, 0.0, 100.0, &temp) ||
        cli_int_opt(a, "--top-k", 0, 0, 1 << 30, &gp.sampler.top_k) ||
        cli_float_opt(a, "--top-p", 1.0, 0.0, 1.0, &top_p) || cli_int_opt(a, "--seed", 0, 0, INT32_MAX, &seed) ||
        cli_int_opt(a, "--draft-block", 0, 2, 256, &block))
        return 2;
    const char *draft_dir = cli_opt(a, "--draft");
    if (block && !draft_dir) return cli_usage(a, "--draft-block needs --draft DIR");
    gp.sampler.temperature = (float)temp;
    gp.sampler.top_p = (float)top_p;
    gp.sampler.seed = (uint64_t)seed;
    cli_model cm = {0};
    pd_context *ctx = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = cli_model_context(a, &cm, &ctx, &ids, &n);
    pd_error err;
    pd_draft *draft = NULL;
    pd_draft_context *dc = NULL;
    if (rc == 0 && !(rc = cli_draft_open(a, cm.model, &draft)) && draft) {
        if (!(dc = pd_draft_context_new(draft, pd_context_n_ctx(ctx), pd_context_n_threads(ctx), &err)))
            rc = cli_fail(&err);
        else if (block > pd_draft_block_size(draft))
            rc = cli_failf("--draft-block %d: the draft's blocks hold at most %d tokens", block,
                           pd_draft_block_size(draft));
    }
    if (rc == 0) {
        pd_draft_stats st;
        int32_t produced = 0;
        double t0 = cli_seconds();
        if (dc ? pd_draft_generate(ctx, dc, prompt, &gp, block, print_piece, &produced, NULL, &st, &err)
               : pd_generate(ctx, prompt, &gp, print_piece, &produced, NULL, &err))
            rc = cli_fail(&err);
        else
            fputc('\n', stdout);
        double seconds = cli_seconds() - t0, rate = seconds > 0 ? produced / seconds : 0.0;
        if (rc == 0 && dc)
            fprintf(stderr, "pocketdec: %d tokens in %d passes; %d drafted, %d accepted (%.2f a pass); %.1f tokens/s\n",
                    st.produced, st.passes, st.drafted, st.accepted,
                    st.passes ? (double)st.produced / st.passes : 0.0, rate);
        else if (rc == 0)
            fprintf(stderr, "pocketdec: %d tokens in %.3f s; %.1f tokens/s\n", produced, seconds, rate);
    }
    pd_draft_context_free(dc);
    pd_draft_free(draft);
    free(ids);
    pd_context_free(ctx);
    cli_model_close(&cm);
    return rc;
}
