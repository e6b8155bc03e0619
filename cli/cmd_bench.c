/* cmd_bench.c - `pocketdec bench`: prefill and decode tokens/s on random
 * ids (medians over --reps), load time and peak RSS, as one JSON object. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cmd_bench(cli_args *a)
{
    const char *path = cli_opt(a, "--model");
    if (!path) return cli_usage(a, "--model PATH is required");
    int32_t n_prompt, n_gen, threads, reps;
    if (cli_int_opt(a, "--prompt-tokens", 512, 1, 1 << 20, &n_prompt) ||
        cli_int_opt(a, "--gen-tokens", 128, 0, 1 << 20, &n_gen) || cli_threads_opt(a, &threads) ||
        cli_int_opt(a, "--reps", 3, 1, 100, &reps))
        return 2;
    pd_kv_type kv_type;
    if (cli_kv_cache_opt(a, &kv_type)) return 2;
    pd_model_params mp;
    if (cli_layout_opt(a, &mp)) return 2;
    pd_error err;
    char *file = cli_model_path(path);
    if (!file) return cli_failf("out of memory");
    double t0 = cli_seconds();
    pd_model *model = pd_model_load(file, &mp, &err);
    free(file);
    if (!model) return cli_fail(&err);
    double load_s = cli_seconds() - t0;
    const pd_config *c = pd_model_config(model);
    pd_context_params cp = {.n_ctx = n_prompt + n_gen, .n_threads = threads, .n_batch = 512, .kv_type = kv_type};
    pd_context *ctx = pd_context_new(model, &cp, &err);
    if (!ctx) {
        pd_model_free(model);
        return cli_fail(&err);
    }
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    double *pre = calloc((size_t)reps, sizeof *pre), *dec = calloc((size_t)reps, sizeof *dec);
    int rc = (!ids || !pre || !dec) ? cli_failf("out of memory") : 0;
    uint64_t rng = 42;
    for (int32_t i = 0; rc == 0 && i < n_prompt; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((rng >> 33) % (uint64_t)c->vocab);
    }
    for (int r = 0; rc == 0 && r < reps; r++) {
        pd_context_kv_truncate(ctx, 0, NULL);
        double s = cli_seconds();
        if (pd_eval_tokens(ctx, ids, n_prompt, &err)) {
            rc = cli_fail(&err);
            break;
        }
        pre[r] = n_prompt / (cli_seconds() - s);
        s = cli_seconds();
        for (int32_t g = 0; g < n_gen; g++) {
            int32_t next = pd_sample(pd_context_logits(ctx, 0), c->vocab, NULL, NULL, NULL);
            if (pd_eval_tokens(ctx, &next, 1, &err)) {
                rc = cli_fail(&err);
                break;
            }
        }
        dec[r] = n_gen ? n_gen / (cli_seconds() - s) : 0.0;
    }
    if (rc == 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("{\"model\": ");
        cli_print_json_string(stdout, path, strlen(path));
        printf(", \"threads\": %d, \"reps\": %d, \"prompt_tokens\": %d, \"gen_tokens\": %d, \"kv_cache\": \"%s\","
               " \"layout\": \"%s\",\n"
               " \"prefill_tokens_per_s\": %.2f, \"decode_tokens_per_s\": %.2f, \"load_s\": %.4f,"
               " \"peak_rss_mb\": %.1f}\n",
               threads, reps, n_prompt, n_gen, pd_context_kv_type(ctx) == PD_KV_F16 ? "f16" : "f32",
               mp.layout == PD_LAYOUT_FILE ? "file" : "auto",
               median(pre, reps), median(dec, reps), load_s, (double)ru.ru_maxrss / 1024.0);
    }
    free(ids);
    free(pre);
    free(dec);
    pd_context_free(ctx);
    pd_model_free(model);
    return rc;
}
