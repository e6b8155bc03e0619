/* cmd_quantize.c - `pocketdec quantize`: an HF model directory written as one
 * GGUF v3 file that both pocketdec and llama.cpp load (pd_model_quantize). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* the types a GGUF file holds that llama.cpp loads */
static const pd_weight_quant TYPES[] = {PD_QUANT_Q4_0, PD_QUANT_Q4_1, PD_QUANT_Q8_0};

/* "DIR-q4_0.gguf" next to the model directory (trailing slashes dropped). */
static char *default_out(const char *dir, const char *type)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    char *s = malloc(len + strlen(type) + 7);
    if (s) sprintf(s, "%.*s-%s.gguf", (int)len, dir, type);
    return s;
}

/* pocketdec quantize --model HFDIR --type q4_0|q4_1|q8_0 [--out FILE.gguf] */
int cmd_quantize(cli_args *a)
{
    const char *dir = cli_opt(a, "--model"), *out = cli_opt(a, "--out");
    pd_weight_quant type;
    if (!dir) return cli_usage(a, "--model HFDIR is required");
    if (!cli_opt(a, "--type")) return cli_usage(a, "--type q4_0|q4_1|q8_0 is required");
    int rc = cli_quant_opt(a, "--type", TYPES, 3, PD_QUANT_NONE, &type);
    if (rc) return rc;
    double t0 = cli_seconds();
    char *owned_out = out ? NULL : default_out(dir, pd_quant_type_name(type));
    if (!out && !(out = owned_out)) return cli_failf("out of memory");
    pd_quantize_stats stats;
    pd_error err;
    rc = pd_model_quantize(dir, out, type, &stats, &err) ? cli_fail(&err) : 0;
    if (rc == 0) {
        printf("{\"out\": ");
        cli_print_json_string(stdout, out, strlen(out));
        printf(", \"type\": \"%s\", \"tensors\": %d, \"bytes\": %llu, \"seconds\": %.3f}\n", pd_quant_type_name(type),
               (int)stats.n_tensors, (unsigned long long)stats.n_bytes, cli_seconds() - t0);
    }
    free(owned_out);
    return rc;
}
