/* bench_adapters.c - what applying a LoRA adapter costs: adapter load time,
 * apply (merge) time and the extra anonymous memory of each mode, and decode
 * speed with and without the adapter.
 *
 * Usage: bench_adapters MODEL ADAPTER_DIR [THREADS]
 * Prints one JSON object per mode (auto, merge, runtime). Memory is the growth
 * of RssAnon (/proc/self/status): owned copies, not the mapped base file;
 * adapter_mib while the adapter is loaded, derived_mib what applying adds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pocketdec.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the process (all threads): less disturbed than the wall clock on a busy machine. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* RssAnon in MiB, or -1 where /proc is missing. */
static double rss_anon_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "RssAnon:", 8) == 0) kb = atof(line + 8);
    fclose(f);
    return kb / 1024.0;
}

/* Decode tokens/s: a 16-token prompt, then 32 single-token steps. */
static double decode_speed(const pd_model *m, int threads)
{
    pd_error err;
    pd_context_params p = {128, threads, 0, 0, PD_KV_AUTO};
    pd_context *ctx = pd_context_new(m, &p, &err);
    if (!ctx) {
        fprintf(stderr, "bench_adapters: %s\n", err.message);
        exit(1);
    }
    int32_t ids[16], vocab = pd_model_config(m)->vocab;
    for (int i = 0; i < 16; i++) ids[i] = (100 + 37 * i) % vocab;
    if (pd_eval_tokens(ctx, ids, 16, &err)) goto fail;
    double t0 = now();
    for (int i = 0; i < 32; i++) {
        int32_t id = (1000 + i) % vocab;
        if (pd_eval_tokens(ctx, &id, 1, &err)) goto fail;
    }
    double s = now() - t0;
    pd_context_free(ctx);
    return 32.0 / s;
fail:
    fprintf(stderr, "bench_adapters: %s\n", err.message);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_adapters MODEL ADAPTER_DIR [THREADS]\n");
        return 2;
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    pd_error err;
    double t_load = now();
    pd_model *base = pd_model_load(argv[1], NULL, &err);
    t_load = now() - t_load;
    if (!base) {
        fprintf(stderr, "bench_adapters: %s\n", err.message);
        return 1;
    }
    decode_speed(base, threads); /* warm-up: the first pass pages the mapped weights in */
    double base_speed = decode_speed(base, threads);
    static const char *names[] = {"auto", "merge", "runtime"};
    for (int mode = PD_APPLY_AUTO; mode <= PD_APPLY_RUNTIME; mode++) {
        double mem0 = rss_anon_mib(), t0 = now();
        pd_adapter *a = pd_adapter_load(argv[2], &err);
        if (!a) {
            fprintf(stderr, "bench_adapters: %s\n", err.message);
            return 1;
        }
        double t1 = now(), mem1 = rss_anon_mib(), cpu1 = cpu_seconds();
        const pd_adapter *list[1] = {a};
        pd_model *m = pd_model_apply_adapters(base, list, NULL, 1, (pd_apply_mode)mode, &err);
        double t2 = now(), mem2 = rss_anon_mib(), cpu2 = cpu_seconds();
        if (!m) {
            fprintf(stderr, "bench_adapters: %s\n", err.message);
            return 1;
        }
        int32_t rank = pd_adapter_rank(a);
        size_t n_targets = pd_adapter_n_targets(a);
        pd_adapter_free(a);
        double speed = decode_speed(m, threads);
        printf("{\"model\": \"%s\", \"mode\": \"%s\", \"rank\": %d, \"targets\": %zu, \"adapter_load_s\": %.3f, "
               "\"apply_s\": %.3f, \"apply_cpu_s\": %.3f, \"adapter_mib\": %.1f, \"derived_mib\": %.1f, \"decode_tok_s_base\": %.2f, \"decode_tok_s_adapted\": "
               "%.2f, \"base_load_s\": %.3f, \"threads\": %d}\n",
               argv[1], names[mode], rank, n_targets, t1 - t0, t2 - t1, cpu2 - cpu1, mem1 - mem0, mem2 - mem1,
               base_speed, speed, t_load, threads);
        fflush(stdout);
        pd_model_free(m);
    }
    pd_model_free(base);
    return 0;
}
