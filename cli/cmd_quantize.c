/* cmd_quantize.c - `pocketdec quantize`: an HF model directory written as one
 * GGUF v3 file that both pocketdec and llama.cpp load (pd_model_quantize). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    pd_weight_quant type;
} TYPES[] = {{"q4_0", PD_QUANT_Q4_0}, {"q4_1", PD_QUANT_Q4_1}, {"q8_0", PD_QUANT_Q8_0}};

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
    const char *dir = cli_opt(a, "--model"), *type = cli_opt(a, "--type"), *out = cli_opt(a, "--out");
    if (!dir) return cli_usage(a, "--model HFDIR is required");
    if (!type) return cli_usage(a, "--type q4_0|q4_1|q8_0 is required");
    size_t k = 0;
    while (k < sizeof TYPES / sizeof TYPES[0] && strcmp(type, TYPES[k].name) != 0) k++;
    if (k == sizeof TYPES / sizeof TYPES[0]) return cli_usage(a, "--type must be q4_0, q4_1 or q8_0");
    double t0 = cli_seconds();
    char *owned_out = out ? NULL : default_out(dir, TYPES[k].name);
    if (!out && !(out = owned_out)) return cli_failf("out of memory");
    pd_quantize_stats stats;
    pd_error err;
    int rc = pd_model_quantize(dir, out, TYPES[k].type, &stats, &err) ? cli_fail(&err) : 0;
    if (rc == 0) {
        printf("{\"out\": ");
        cli_print_json_string(stdout, out, strlen(out));
        printf(", \"type\": \"%s\", \"tensors\": %d, \"bytes\": %llu, \"seconds\": %.3f}\n", TYPES[k].name,
               (int)stats.n_tensors, (unsigned long long)stats.n_bytes, cli_seconds() - t0);
    }
    free(owned_out);
    return rc;
}
