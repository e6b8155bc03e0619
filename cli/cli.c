/* cli.c - the subcommand dispatcher, option accessors and JSON printers. */
#include "cli.h"
#include "pd_jsonl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int find(cli_args *a, const char *name)
{
    for (int i = 0; i < a->argc; i++)
        if (strcmp(a->argv[i], name) == 0) return i;
    return -1;
}

const char *cli_opt(cli_args *a, const char *name)
{
    int i = find(a, name);
    if (i < 0 || i + 1 >= a->argc) return NULL;
    return a->argv[i + 1];
}

const char *cli_opt_nth(cli_args *a, const char *name, int n)
{
    for (int i = 0; i + 1 < a->argc; i++)
        if (strcmp(a->argv[i], name) == 0 && n-- == 0) return a->argv[i + 1];
    return NULL;
}

/* Split "DIR[:WEIGHT]": the part after the last ':' is a weight only when it
 * parses as a finite number (so a directory name with a ':' still works). */
static char *adapter_spec(const char *spec, float *weight)
{
    char *dir = strdup(spec);
    if (!dir) return NULL;
    *weight = 1.0f;
    char *colon = strrchr(dir, ':'), *end;
    if (colon && colon[1]) {
        errno = 0;
        double w = strtod(colon + 1, &end);
        if (!errno && !*end && isfinite(w)) {
            *weight = (float)w;
            *colon = '\0';
        }
    }
    return dir;
}

char *cli_model_path(const char *path)
{
    char *base = pd_bundle_part(path, "base");
    return base ? base : strdup(path);
}

/* --adapter-mode into *mode. */
static int adapter_mode_opt(cli_args *a, pd_apply_mode *mode)
{
    const char *v = cli_opt(a, "--adapter-mode");
    *mode = PD_APPLY_AUTO;
    if (v && !strcmp(v, "merge")) *mode = PD_APPLY_MERGE;
    else if (v && !strcmp(v, "runtime")) *mode = PD_APPLY_RUNTIME;
    else if (v && strcmp(v, "auto") != 0) return cli_usage(a, "--adapter-mode must be auto, merge or runtime");
    return 0;
}

int cli_quant_opt(cli_args *a, const char *name, const pd_weight_quant *allowed, int n, pd_weight_quant def,
                  pd_weight_quant *out)
{
    const char *v = cli_opt(a, name);
    pd_weight_quant q = def;
    *out = def;
    if (!v) return find(a, name) >= 0 ? cli_usage(a, "an option is missing its value") : 0;
    pd_error err;
    bool ok = pd_quant_type_from_name(v, &q, &err) == PD_OK;
    for (int k = 0; ok && k < n; k++)
        if (allowed[k] == q) {
            *out = q;
            return 0;
        }
    char what[160];
    int len = snprintf(what, sizeof what, "%s must be", name);
    for (int k = 0; k < n && len > 0 && (size_t)len < sizeof what; k++)
        len += snprintf(what + len, sizeof what - (size_t)len, "%s%s", k == 0 ? " " : k + 1 < n ? ", " : " or ",
                        pd_quant_type_name(allowed[k]));
    return cli_usage(a, what);
}

int cli_layout_opt(cli_args *a, pd_model_params *p)
{
    static const pd_weight_quant loadable[] = {PD_QUANT_Q8_0, PD_QUANT_Q4_0, PD_QUANT_Q4_1, PD_QUANT_Q4_64};
    const char *v = cli_opt(a, "--weight-layout");
    p->layout = PD_LAYOUT_AUTO;
    int rc = cli_quant_opt(a, "--quantize", loadable, 4, PD_QUANT_NONE, &p->quantize);
    if (rc) return rc;
    if (!v || strcmp(v, "auto") == 0) return 0;
    if (strcmp(v, "file") == 0) p->layout = PD_LAYOUT_FILE;
    else return cli_usage(a, "--weight-layout must be auto or file");
    return 0;
}

int cli_draft_open(cli_args *a, const pd_model *model, pd_draft **out)
{
    static const pd_weight_quant draftable[] = {PD_QUANT_NONE, PD_QUANT_Q8_0, PD_QUANT_Q4_0};
    const char *dir = cli_opt(a, "--draft"), *q = cli_opt(a, "--draft-quantize");
    *out = NULL;
    pd_weight_quant quant;
    int rc = cli_quant_opt(a, "--draft-quantize", draftable, 3, PD_QUANT_NONE, &quant);
    if (rc) return rc;
    if (q && !dir) return cli_usage(a, "--draft-quantize needs --draft DIR");
    pd_error err;
    if (dir && !(*out = pd_draft_load_quantized(dir, model, quant, &err))) return cli_fail(&err);
    return 0;
}

int cli_bundle_opts(cli_args *a, bool with_head, cli_bundle_params *o)
{
    *o = (cli_bundle_params){.p = pd_bundle_default_params()};
    if (cli_layout_opt(a, &o->p.model) || adapter_mode_opt(a, &o->p.adapter_mode)) return 2;
    int n = 0, given = 0;
    while (cli_opt_nth(a, "--adapter", n)) n++;
    for (int i = 0; i < a->argc; i++) given += strcmp(a->argv[i], "--adapter") == 0;
    if (given != n) return cli_usage(a, "--adapter needs DIR[:WEIGHT]");
    o->dirs = calloc((size_t)n + 1, sizeof *o->dirs);
    o->weights = calloc((size_t)n + 1, sizeof *o->weights);
    int rc = o->dirs && o->weights ? 0 : cli_failf("out of memory");
    for (int i = 0; rc == 0 && i < n; i++, o->n_dirs++)
        if (!(o->dirs[i] = adapter_spec(cli_opt_nth(a, "--adapter", i), &o->weights[i]))) rc = cli_failf("out of memory");
    o->p.adapters = (const char *const *)o->dirs;
    o->p.weights = o->weights;
    o->p.n_adapters = (size_t)n;
    o->p.head = with_head ? cli_opt(a, "--head") : NULL;
    o->p.no_head = !with_head;
    if (rc) cli_bundle_opts_free(o);
    return rc;
}

void cli_bundle_opts_free(cli_bundle_params *o)
{
    for (int i = 0; o->dirs && i < o->n_dirs; i++) free(o->dirs[i]);
    free(o->dirs);
    free(o->weights);
    *o = (cli_bundle_params){0};
}

int cli_model_open(cli_args *a, cli_model *m, bool with_head)
{
    *m = (cli_model){0};
    const char *path = cli_opt(a, "--model");
    if (!path) return cli_usage(a, "--model PATH is required");
    cli_bundle_params o;
    int rc = cli_bundle_opts(a, with_head, &o);
    if (rc) return rc;
    pd_error err;
    if (!(m->bundle = pd_bundle_open(path, &o.p, &err))) rc = cli_fail(&err);
    if (rc == 0) {
        m->model = pd_bundle_model(m->bundle);
        m->head = pd_bundle_head(m->bundle);
        m->head_dir = pd_bundle_head_dir(m->bundle);
    }
    cli_bundle_opts_free(&o);
    return rc;
}

void cli_model_close(cli_model *m)
{
    pd_bundle_free(m->bundle);
    *m = (cli_model){0};
}

bool cli_flag(cli_args *a, const char *name)
{
    int i = find(a, name);
    if (i < 0) return false;
    return true;
}

int cli_int_opt(cli_args *a, const char *name, int32_t def, int32_t lo, int32_t hi, int32_t *out)
{
    const char *s = cli_opt(a, name);
    *out = def;
    if (!s) return find(a, name) >= 0 ? cli_usage(a, "an option is missing its value") : 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "pocketdec %s: %s must be an integer in [%d, %d], got '%s'\n", a->command, name, lo, hi, s);
        return 2;
    }
    *out = (int32_t)v;
    return 0;
}

int cli_threads_opt(cli_args *a, int32_t *out)
{
    int32_t cores = pd_cpu_count();
    int rc = cli_int_opt(a, "--threads", cores, 1, 256, out);
    if (!rc && *out > cores) {
        fprintf(stderr, "pocketdec %s: --threads %d is more than the %d cores this process may use; running %d\n",
                a->command, *out, cores, cores);
        *out = cores;
    }
    return rc;
}

int cli_float_opt(cli_args *a, const char *name, double def, double lo, double hi, double *out)
{
    const char *s = cli_opt(a, name);
    *out = def;
    if (!s) return find(a, name) >= 0 ? cli_usage(a, "an option is missing its value") : 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "pocketdec %s: %s must be a number in [%g, %g], got '%s'\n", a->command, name, lo, hi, s);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_parse_ids(const char *s, int32_t **ids, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return 1;
    size_t k = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX || (*end && *end != ',')) {
            free(v);
            return 1;
        }
        v[k++] = (int32_t)x;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) { /* trailing comma */
            free(v);
            return 1;
        }
    }
    *ids = v;
    *n = k;
    return 0;
}

void cli_print_ids(FILE *f, const int32_t *ids, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) fprintf(f, i ? ",%d" : "%d", ids[i]);
    fputs("]\n", f);
}

void cli_print_floats(FILE *f, const float *v, int64_t n)
{
    fputc('[', f);
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(v[i]))
            fprintf(f, i ? ",%.9g" : "%.9g", (double)v[i]);
        else
            fputs(i ? ",null" : "null", f); /* JSON has no inf/nan */
    }
    fputc(']', f);
}

void cli_print_json_string(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = pd_utf8_char(s + i, len - i, &cp);
        if (k == 0) {
            fputs("\xef\xbf\xbd", f); /* U+FFFD for each invalid byte */
            i++;
            continue;
        }
        unsigned char ch = p[i];
        if (k == 1 && (ch < 0x20 || ch == '"' || ch == '\\')) {
            switch (ch) {
            case '"': fputs("\\\"", f); break;
            case '\\': fputs("\\\\", f); break;
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            default: fprintf(f, "\\u%04x", ch);
            }
        } else {
            fwrite(p + i, 1, k, f);
        }
        i += k;
    }
    fputc('"', f);
}

int cli_fail(const pd_error *err)
{
    fprintf(stderr, "pocketdec: %s\n", err->message);
    return 1;
}

int cli_failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pocketdec: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_jsonl_fail(const pd_jsonl *r)
{
    return cli_failf("%s:%ld: %s", r->name, r->line, r->what);
}

int cli_pipeline_opts(cli_args *a, pd_pipeline_params *pp)
{
    double min_confidence;
    int rc;
    if ((rc = cli_int_opt(a, "--ctx", 0, 0, 1 << 20, &pp->n_ctx)) ||
        (rc = cli_int_opt(a, "--max-chars", PD_PIPELINE_HEAD_DEFAULT, 0, INT32_MAX, &pp->max_chars)) ||
        (rc = cli_float_opt(a, "--min-confidence", PD_PIPELINE_HEAD_DEFAULT, -HUGE_VAL, HUGE_VAL, &min_confidence)))
        return rc;
    pp->min_confidence = (float)min_confidence;
    pd_error err;
    if (pd_pipeline_params_check(pp, &err)) return cli_usage(a, err.message);
    return 0;
}

int cli_usage(cli_args *a, const char *what)
{
    fprintf(stderr, "pocketdec %s: %s\nusage: pocketdec %s %s\n", a->command, what, a->command, a->usage);
    return 2;
}

/* Whether `name` appears in the usage text, and whether it takes a value: the
 * usage is the single statement of a command's options ("--model PATH",
 * "[--threads N]" take values; "[--chat]" is a flag). Returns 0 unknown, 1
 * flag, 2 option with a value. */
static int usage_kind(const char *usage, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(usage, name); p; p = strstr(p + 1, name)) {
        bool starts = p == usage || p[-1] == ' ' || p[-1] == '[';
        if (!starts || (p[n] != ' ' && p[n] != ']' && p[n] != '\0')) continue;
        return p[n] == ' ' && p[n + 1] != '[' && p[n + 1] != '-' ? 2 : 1;
    }
    return 0;
}

/* Refuse unknown options and options missing their value, before any work. */
static int check_known(cli_args *a)
{
    for (int k = 0; k < a->argc; k++) {
        int kind = strncmp(a->argv[k], "--", 2) == 0 ? usage_kind(a->usage, a->argv[k]) : 0;
        if (kind == 0) {
            fprintf(stderr, "pocketdec %s: unknown argument '%s'\nusage: pocketdec %s %s\n", a->command,
                    a->argv[k], a->command, a->usage);
            return 1;
        }
        if (kind == 2 && ++k >= a->argc) {
            fprintf(stderr, "pocketdec %s: %s needs a value\n", a->command, a->argv[k - 1]);
            return 1;
        }
    }
    return 0;
}

static const char bundle_help[] =
    "PATH (--model) is an HF model directory, a .gguf file, an MNN export folder (llm.mnn, llm.mnn.weight,\n"
    "llm_config.json, tokenizer.txt), or a bundle folder holding base/, adapter/ and head/ (models/tianchi):\n"
    "base/ is loaded; where the command takes them, adapter/ is applied before any\n"
    "--adapter and head/ is the head unless --head is given.";

static void print_help(const cli_command *commands, size_t n)
{
    printf("pocketdec %s - Qwen3 decoders of the MNN-Pocket family on the CPU\n\nusage: pocketdec COMMAND [options]\n\n",
           PD_VERSION);
    for (size_t i = 0; i < n; i++) printf("  %-9s %s\n", commands[i].name, commands[i].usage);
    printf("\n%s\n'pocketdec COMMAND --help' explains one command.\n", bundle_help);
}

int cli_main(int argc, char **argv, const cli_command *commands, size_t n_commands)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_help(commands, n_commands);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pocketdec %s\n", PD_VERSION);
        return 0;
    }
    for (size_t i = 0; i < n_commands; i++) {
        const cli_command *c = &commands[i];
        if (strcmp(argv[1], c->name) != 0) continue;
        cli_args a = {c->name, c->usage, argc - 2, argv + 2};
        if (find(&a, "--help") >= 0 || find(&a, "-h") >= 0) {
            printf("usage: pocketdec %s %s\n\n%s\n", c->name, c->usage, c->help);
            if (usage_kind(c->usage, "--model"))
                printf("\n%s\n", bundle_help);
            return 0;
        }
        return check_known(&a) ? 2 : c->run(&a);
    }
    fprintf(stderr, "pocketdec: unknown command '%s' (try pocketdec --help)\n", argv[1]);
    return 2;
}

int cli_kv_cache_opt(cli_args *a, pd_kv_type *t)
{
    const char *v = cli_opt(a, "--kv-cache");
    *t = PD_KV_AUTO;
    if (!v || strcmp(v, "auto") == 0) return 0;
    if (strcmp(v, "f32") == 0) *t = PD_KV_F32;
    else if (strcmp(v, "f16") == 0) *t = PD_KV_F16;
    else return cli_usage(a, "--kv-cache must be auto, f32 or f16");
    return 0;
}

double cli_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_model_context(cli_args *a, cli_model *cm, pd_context **ctx, int32_t **ids, size_t *n_ids)
{
    const char *ids_s = cli_opt(a, "--ids");
    if (ids_s && cli_parse_ids(ids_s, ids, n_ids)) return cli_usage(a, "--ids must be comma-separated integers");
    pd_context_params cp = pd_context_default_params();
    if (cli_threads_opt(a, &cp.n_threads) || cli_int_opt(a, "--ctx", 0, 0, 1 << 30, &cp.n_ctx) ||
        cli_kv_cache_opt(a, &cp.kv_type))
        return 2;
    int rc = cli_model_open(a, cm, false);
    if (rc) return rc;
    if (ids_s && (size_t)cp.n_ctx < *n_ids) cp.n_ctx = (int32_t)*n_ids;
    pd_error err;
    *ctx = pd_context_new(cm->model, &cp, &err);
    if (!*ctx) return cli_fail(&err);
    return 0;
}
