/* pocketdec - the command-line tool: tokenize, logits, hidden, generate, info, bench.
 *
 * Every subcommand prints JSON (or text for generate) on stdout, exits 0 on
 * success, and on failure prints one line "pocketdec: message" on stderr and
 * exits 1 (2 for a usage error). */
#include "cli.h"
#include "jsonl.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ------------------------------------------------------------ tokenize */

/* One line's value: a string to encode, or (decode) an array of ids. */
static int tokenize_value(const pd_tokenizer *tok, cli_jsonl *r, const json_t *in, bool decode)
{
    pd_error err;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!decode) {
        if (!json_is_string(in)) {
            cli_jsonl_bad(r, "expected a JSON string");
            return cli_jsonl_fail(r);
        }
        if (pd_tokenizer_encode(tok, json_string_value(in), json_string_length(in), &ids, &n, &err))
            return cli_failf("%s:%ld: %s", r->name, r->line, cli_message(&err));
        cli_print_ids(stdout, ids, n);
        pd_free(ids);
        return 0;
    }
    if (!cli_jsonl_ids(r, in, &ids, &n)) return cli_jsonl_fail(r);
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (pd_tokenizer_decode(tok, ids, n, &text, &len, &err)) {
        rc = cli_failf("%s:%ld: %s", r->name, r->line, cli_message(&err));
    } else {
        cli_print_json_string(stdout, text, len);
        fputc('\n', stdout);
        pd_free(text);
    }
    free(ids);
    return rc;
}

static int cmd_tokenize(cli_args *a)
{
    const char *path = cli_opt(a, "--tokenizer");
    bool decode = cli_flag(a, "--decode");
    if (!path) return cli_usage(a, "--tokenizer FILE is required");
    pd_error err;
    pd_tokenizer *tok = pd_tokenizer_load(path, &err);
    if (!tok) return cli_fail(&err);
    cli_jsonl r;
    cli_jsonl_init(&r, stdin, "stdin");
    json_t *in = NULL;
    cli_jsonl_status st;
    int rc = 0;
    while (rc == 0 && (st = cli_jsonl_next(&r, &in)) != CLI_JSONL_END) {
        rc = st == CLI_JSONL_OK ? tokenize_value(tok, &r, in, decode) : cli_jsonl_fail(&r);
        json_decref(in);
    }
    cli_jsonl_free(&r);
    pd_tokenizer_free(tok);
    return rc;
}

/* --------------------------------------------------------- logits, hidden */

/* Load the model, make a context with --threads, and parse --ids. */
static int open_model_ids(cli_args *a, cli_model *cm, pd_context **ctx, int32_t **ids, size_t *n_ids)
{
    const char *ids_s = cli_opt(a, "--ids");
    if (ids_s && cli_parse_ids(ids_s, ids, n_ids)) return cli_usage(a, "--ids must be comma-separated integers");
    pd_context_params cp = pd_context_default_params();
    if (cli_threads_opt(a, &cp.n_threads) || cli_int_opt(a, "--ctx", 0, 0, 1 << 30, &cp.n_ctx) ||
        cli_kv_cache_opt(a, &cp.kv_type))
        return 2;
    int rc = cli_model_open(a, cm);
    if (rc) return rc;
    if (ids_s && (size_t)cp.n_ctx < *n_ids) cp.n_ctx = (int32_t)*n_ids;
    pd_error err;
    *ctx = pd_context_new(cm->model, &cp, &err);
    if (!*ctx) return cli_fail(&err);
    return 0;
}

static int cmd_logits_or_hidden(cli_args *a, bool hidden)
{
    cli_model cm = {0};
    pd_context *ctx = NULL;
    int32_t *ids = NULL, *rows = NULL;
    size_t n = 0;
    int rc = open_model_ids(a, &cm, &ctx, &ids, &n);
    if (rc == 0 && n == 0) rc = cli_usage(a, "--ids 1,2,3 is required");
    if (rc == 0) {
        pd_error err;
        pd_batch b = {ids, (int32_t)n, NULL, NULL, NULL, 0, !hidden};
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

static int cmd_logits(cli_args *a) { return cmd_logits_or_hidden(a, false); }
static int cmd_hidden(cli_args *a) { return cmd_logits_or_hidden(a, true); }

/* ------------------------------------------------------------- generate */

static int print_piece(int32_t id, const char *piece, size_t len, void *user)
{
    (void)id;
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static int cmd_generate(cli_args *a)
{
    const char *prompt = cli_opt(a, "--prompt");
    if (!prompt) return cli_usage(a, "--prompt TEXT is required");
    pd_generate_params gp = {pd_sampler_default_params(), 0, cli_flag(a, "--chat")};
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
    int rc = open_model_ids(a, &cm, &ctx, &ids, &n);
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

/* ----------------------------------------------------------------- info */

static int cmd_info(cli_args *a)
{
    const char *path = cli_opt(a, "--model");
    if (!path) return cli_usage(a, "--model PATH is required");
    char *file = cli_model_path(path);
    if (!file) return cli_failf("out of memory");
    pd_error err;
    pd_model *model = pd_model_load(file, NULL, &err);
    free(file);
    if (!model) return cli_fail(&err);
    char *s = pd_model_info_json(model);
    int rc = s ? (puts(s), 0) : cli_failf("out of memory");
    pd_free(s);
    pd_model_free(model);
    return rc;
}

/* ---------------------------------------------------------------- bench */

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

static int cmd_bench(cli_args *a)
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
    pd_context_params cp = {n_prompt + n_gen, threads, 512, 0, kv_type};
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

/* ----------------------------------------------------------------- main */

int cmd_score(cli_args *a); /* cmd_score.c */

int cmd_extract(cli_args *a); /* cmd_extract.c */

int cmd_quantize(cli_args *a); /* cmd_quantize.c */

int cmd_tag(cli_args *a); /* cmd_tag.c */

static const cli_command commands[] = {
    {"tokenize", "--tokenizer FILE [--decode]",
     "Reads one JSON string per stdin line and writes one JSON array of ids per line;\n"
     "with --decode reads arrays of ids and writes JSON strings (invalid UTF-8 becomes U+FFFD).",
     cmd_tokenize},
    {"logits", "--model PATH --ids 1,2,3 [--threads N] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Prints the logits at the last position as one JSON array.", cmd_logits},
    {"hidden", "--model PATH --ids 1,2,3 [--threads N] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Prints the final-norm hidden state of every position as a JSON array of arrays.", cmd_hidden},
    {"generate",
     "--model PATH --prompt TEXT [--chat] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--threads N]"
     " [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Generates text after the prompt (greedy unless --temperature > 0); --chat wraps it as a ChatML user turn.",
     cmd_generate},
    {"info", "--model PATH", "Prints a JSON summary of the model.", cmd_info},
    {"bench", "--model PATH [--prompt-tokens 512] [--gen-tokens 128] [--threads N] [--reps 3] [--kv-cache auto|f32|f16] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64]",
     "Times prefill and decode on random ids; prints JSON with tokens/s (medians), load time and peak RSS.\n"
     "--weight-layout file keeps every weight in the file's layout (auto: the kernels' faster layout where they have one).",
     cmd_bench},
    {"extract",
     "--model PATH --schema FILE --input FILE --output FILE [--format tianchi|jsonl] [--input-format csv|jsonl] [--threads N] [--max-records N] [--max-tokens N] [--ctx N] [--temperature T] [--seed S] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime] [--head DIR] [--progress S]",
     "Extracts schema-bound records (e.g. Tianchi quadruples) from each review of --input: Tianchi CSV\n"
     "(id,Reviews) or JSONL ({\"id\",\"text\"}; by the .jsonl extension or --input-format). Writes Tianchi\n"
     "submission rows (every id in order, id,_,_,_,_ for none) or JSONL. '-' is stdin/stdout; one review\n"
     "at a time in constant memory. CSV is read as Python's csv reads it (a quote inside an unquoted field\n"
     "is a character); a broken row is reported with its line and its id still written as id,_,_,_,_, and\n"
     "reading resumes at the next well-formed row. A summary line ends stderr; the exit status is 1 when a\n"
     "row was broken or failed (after all others were written) or when the input holds no review.\n"
     "--head DIR: a decision head then picks each record's labels (the schema's decide section); a tagger\n"
     "head instead extracts each review's records in one forward pass (no generation; --max-records,\n"
     "--max-tokens, --temperature and --seed do not apply).\n"
     "Progress: a bar on stderr when it is a terminal; --progress S writes a line there every S seconds\n"
     "instead (share of the input read, reviews, records, reviews/s), for logs and pipes (0: every review).",
     cmd_extract},
    {"tag",
     "--model PATH [--head DIR] --schema FILE --text T [--threads N] [--ctx N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Runs a tagger head (extraction by decisions) on one text and prints one JSON object:\n"
     "{\"tokens\":[prompt ids],\"read_start\":k,\"tags\":[one per read-copy token],\"emissions\":[[n_tags] per\n"
     "read-copy token],\"spans\":[{\"field\",\"text\",\"first\",\"last\"}] (token indices within the read copy,\n"
     "text order),\"links\":[{\"from\":span index,\"scores\":[to spans in text order, none last],\"choice\":span\n"
     "index or -1}],\"labels\":[{\"logits\":[n_labels]}] (one per record before sorting and dropping repeats,\n"
     "in the order made: from spans, then unchosen to spans),\"records\":[{field: value}],\"forward_passes\":1}.",
     cmd_tag},
    {"score",
     "--model PATH [--head DIR] [--text T] [--question Q] [--candidate A] [--layout sequential|parallel] [--explain] [--jsonl] [--threads N] [--ctx N] [--bench N] [--weight-layout auto|file] [--quantize q8_0|q4_0|q4_1|q4_64] [--adapter DIR[:WEIGHT]] [--adapter-mode auto|merge|runtime]",
     "Scores label candidates for a text in one forward pass with a decision head (pointer or classifier;\n"
     "without --head, the LM log-probability of each candidate). Prints JSON\n"
     "{\"candidates\":[{\"label\",\"prob\",\"score\"}],\"forward_passes\":1,\"prompt_tokens\":N}; --explain adds the\n"
     "token ids, their positions and the query/key positions. --candidate repeats; a classifier scores all its\n"
     "labels when none is given. --jsonl reads {\"text\",\"question\",\"candidates\"} per stdin line (a repeated\n"
     "text reuses its cache). --bench N prints the best time of N decisions and of N prefills of the same prompt.",
     cmd_score},
    {"quantize", "--model HFDIR --type q4_0|q4_1|q8_0 [--out FILE.gguf]",
     "Writes the HF model as one GGUF v3 file that pocketdec and llama.cpp load: matrices and the\n"
     "embedding quantized row by row as ggml's reference quantizers do, norms F32, the vocabulary\n"
     "from tokenizer.json. Default output: HFDIR-TYPE.gguf. Prints a JSON summary.",
     cmd_quantize},
};

int main(int argc, char **argv)
{
    return cli_main(argc, argv, commands, sizeof commands / sizeof commands[0]);
}
