/* cmd_logits.c - `pocketdec logits` and `pocketdec hidden`: one forward
 * pass over --ids, printing the last position's logits or every position's
 * final-norm hidden state. */
#include "cli.h"

#include <stdlib.h>

static int cmd_logits_or_hidden(cli_args *a, bool hidden)
{
    cli_model cm = {0};
    pd_context *ctx = NULL;
    int32_t *ids = NULL, *rows = NULL;
    size_t n = 0;
    int rc = cli_model_context(a, &cm, &ctx, &ids, &n);
    if (rc == 0 && n == 0) rc = cli_usage(a, "--ids 1,2,3 is required");
    if (rc == 0) {
        pd_error err;
        pd_batch b = {.tokens = ids, .n_tokens = (int32_t)n, .want_logits = !hidden};
        if (hidden) {
            rows = malloc(n * sizeof *rows);
            if (!rows) rc = cli_failf("out of memory");
            for (size_t i = 0; rows && i < n; i++) rows[i] = (int32_t)i;
            b.outputs = rows;
            b.n_outputs = (int32_t)n;
        }
        if (rc == 0 && pd_eval(ctx, &b, &err)) rc = cli_fail(&err);
        if (rc == 0) {
            const pd_config *c = pd_model_config(cm.model);
            if (hidden) {
                fputc('[', stdout);
                for (int32_t i = 0; i < pd_context_n_outputs(ctx); i++) {
                    if (i) fputs(",\n", stdout);
                    cli_print_floats(stdout, pd_context_hidden(ctx, i), c->hidden);
                }
                fputs("]\n", stdout);
            } else {
                cli_print_floats(stdout, pd_context_logits(ctx, 0), c->vocab);
                fputc('\n', stdout);
            }
        }
    }
    free(rows);
    free(ids);
    pd_context_free(ctx);
    cli_model_close(&cm);
    return rc;
}

int cmd_logits(cli_args *a) { return cmd_logits_or_hidden(a, false); }
int cmd_hidden(cli_args *a) { return cmd_logits_or_hidden(a, true); }
