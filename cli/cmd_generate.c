/* cmd_generate.c - `pocketdec generate`: text after a prompt, greedy or
 * sampled, printed as it comes. */
#include "cli.h"

#include <stdlib.h>

static int print_piece(int32_t id, const char *piece, size_t len, void *user)
{
    (void)id;
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

int cmd_generate(cli_args *a)
{
    const char *prompt = cli_opt(a, "--prompt");
    if (!prompt) return cli_usage(a, "--prompt TEXT is required");
    pd_generate_params gp = {.sampler = pd_sampler_default_params(), .chat = cli_flag(a, "--chat")};
    double temp = 0.0, top_p = 1.0;
    int32_t seed = 0;
    if (cli_int_opt(a, "--max-tokens", 128, 0, 1 << 30, &gp.max_tokens) ||
        cli_float_opt(a, "--temperature", 0.0, 0.0, 100.0, &temp) ||
        cli_int_opt(a, "--top-k", 0, 0, 1 << 30, &gp.sampler.top_k) ||
        cli_float_opt(a, "--top-p", 1.0, 0.0, 1.0, &top_p) || cli_int_opt(a, "--seed", 0, 0, INT32_MAX, &seed))
        return 2;
    gp.sampler.temperature = (float)temp;
    gp.sampler.top_p = (float)top_p;
    gp.sampler.seed = (uint64_t)seed;
    cli_model cm = {0};
    pd_context *ctx = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = cli_model_context(a, &cm, &ctx, &ids, &n);
    if (rc == 0) {
        pd_error err;
        if (pd_generate(ctx, prompt, &gp, print_piece, NULL, NULL, &err))
            rc = cli_fail(&err);
        else
            fputc('\n', stdout);
    }
    free(ids);
    pd_context_free(ctx);
    cli_model_close(&cm);
    return rc;
}
