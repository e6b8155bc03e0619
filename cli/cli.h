/* cli.h - argument parsing and JSON printing shared by the pocketdec subcommands. */
#ifndef PD_CLI_H
#define PD_CLI_H

#include "pocketdec.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct cli_args {
    const char *command;
    const char *usage;
    int argc;
    char **argv; /* the subcommand's arguments */
} cli_args;

typedef struct cli_command {
    const char *name, *usage, *help;
    int (*run)(cli_args *a);
} cli_command;

int cli_main(int argc, char **argv, const cli_command *commands, size_t n_commands);

/* The value after `name`, or NULL. */
const char *cli_opt(cli_args *a, const char *name);
/* The value after the n-th (0-based) occurrence of a repeatable option, or NULL. */
const char *cli_opt_nth(cli_args *a, const char *name, int n);
bool cli_flag(cli_args *a, const char *name);
/* Integer/float option with default and range; prints a usage error and returns 2 when bad. */
int cli_int_opt(cli_args *a, const char *name, int32_t def, int32_t lo, int32_t hi, int32_t *out);
/* --threads: the cores this process may use (pd_cpu_count) by default; more is
 * accepted with a warning and lowered to that. */
int cli_threads_opt(cli_args *a, int32_t *out);

/* Option `name`, a weight type (pd_quant_type_name), into *out (def when
 * absent): one of the n types of `allowed`, else 2 after the usage message
 * "NAME must be a, b or c" (the allowed names in that order). */
int cli_quant_opt(cli_args *a, const char *name, const pd_weight_quant *allowed, int n, pd_weight_quant def,
                  pd_weight_quant *out);
/* --kv-cache auto|f32|f16 into *t (PD_KV_AUTO when absent); 2 after a usage
 * message when the value is something else. */
int cli_kv_cache_opt(cli_args *a, pd_kv_type *t);
/* --weight-layout auto|file into p->layout (auto when absent) and --quantize
 * q8_0|q4_0|q4_1|q4_64 into p->quantize (none when absent); 2 after a usage message. */
int cli_layout_opt(cli_args *a, pd_model_params *p);
/* The draft of --draft DIR for model into *out (NULL without --draft), its
 * matrices quantized as --draft-quantize q8_0|q4_0 asks (as stored when
 * absent or none): 2 after a usage message, 1 after the load's error. */
int cli_draft_open(cli_args *a, const pd_model *model, pd_draft **out);
int cli_float_opt(cli_args *a, const char *name, double def, double lo, double hi, double *out);
/* The options extract and serve share, into pp: --ctx N, --min-confidence P
 * and --max-chars N (absent: the head's, PD_PIPELINE_HEAD_DEFAULT), checked
 * by the library (pd_pipeline_params_check): 2 after its message. */
int cli_pipeline_opts(cli_args *a, pd_pipeline_params *pp);

/* The model a command evaluates (pd_bundle_open): --model PATH, with the
 * adapters of every --adapter DIR[:WEIGHT] applied (commands that take adapters list the option
 * in their usage). PATH may be a bundle folder (base/, adapter/, head/ side
 * by side, as models/tianchi): base/ is loaded, adapter/ applied before any
 * --adapter, and head/ is the head of commands that take --head unless one
 * is given. `model` is what to evaluate. */
typedef struct cli_model {
    pd_bundle *bundle;
    const pd_model *model;  /* what to evaluate: the base with the adapters applied */
    const pd_head *head;    /* with_head: --head DIR, else the bundle's head/; NULL when neither */
    const char *head_dir;   /* where head came from */
} cli_model;

/* The options cli_model_open loads --model with (--weight-layout,
 * --quantize, --adapter-mode, each --adapter, --head with with_head), for a
 * command that opens bundles itself (serve's reload). 0, or the exit code
 * after printing the error (1) or usage (2); free with cli_bundle_opts_free. */
typedef struct cli_bundle_params {
    pd_bundle_params p;
    char **dirs;
    float *weights;
    int n_dirs;
} cli_bundle_params;
int cli_bundle_opts(cli_args *a, bool with_head, cli_bundle_params *o);
void cli_bundle_opts_free(cli_bundle_params *o);

/* with_head: the command takes --head (the head is loaded with the model).
 * Returns 0, or the exit code after printing the error (1) or usage (2). */
int cli_model_open(cli_args *a, cli_model *m, bool with_head);
void cli_model_close(cli_model *m);
/* The model file of --model PATH: PATH, or PATH/base for a bundle folder
 * (for the commands that load the base alone: info, bench). malloc'ed; NULL
 * when out of memory. */
char *cli_model_path(const char *path);
/* The model (cli_model_open) and a context over it with --threads, --ctx
 * and --kv-cache; --ids 1,2,3 into *ids (malloc'ed; *n_ids 0 without it),
 * the context made long enough for them. 0, or the exit code after printing
 * the error (1) or usage (2). */
int cli_model_context(cli_args *a, cli_model *cm, pd_context **ctx, int32_t **ids, size_t *n_ids);

/* "1,2,3" -> ids (malloc'd); non-zero when malformed. */
int cli_parse_ids(const char *s, int32_t **ids, size_t *n);

void cli_print_ids(FILE *f, const int32_t *ids, size_t n);
void cli_print_floats(FILE *f, const float *v, int64_t n);
/* A JSON string of bytes; invalid UTF-8 sequences become U+FFFD. */
void cli_print_json_string(FILE *f, const char *s, size_t len);

/* Print "pocketdec: message" (the library's messages name files and values,
 * never its C functions) on stderr and return 1. */
int cli_fail(const pd_error *err);
int cli_failf(const char *fmt, ...);
/* Print a JSONL reader's refusal, "pocketdec: FILE:LINE: what", and return 1. */
struct pd_jsonl;
int cli_jsonl_fail(const struct pd_jsonl *r);
/* Print a usage error for the subcommand and return 2. */
int cli_usage(cli_args *a, const char *what);

/* The run a command's options make, as a resumable output records it
 * (pd_output_open): the version, the command, and a "key: value" line an
 * option (a path that exists by its real path, file count, size and FNV-1a
 * hash of its contents; a file over 8 MiB by size, mtime and its edges),
 * except the options of skip (NULL-terminated: those that do not change the
 * output, e.g. --threads). malloc'ed; NULL when out of memory. */
char *cli_run_id(cli_args *a, const char *const *skip);

/* Seconds on the monotonic clock (differences time a command's steps). */
double cli_seconds(void);

/* The subcommands, one cmd_*.c each (logits and hidden share one); each
 * returns the exit code. */
int cmd_tokenize(cli_args *a);
int cmd_logits(cli_args *a);
int cmd_hidden(cli_args *a);
int cmd_generate(cli_args *a);
int cmd_info(cli_args *a);
int cmd_bench(cli_args *a);
int cmd_extract(cli_args *a);
int cmd_tag(cli_args *a);
int cmd_score(cli_args *a);
int cmd_quantize(cli_args *a);
int cmd_serve(cli_args *a);
int cmd_rank(cli_args *a);
int cmd_summarize(cli_args *a);

#endif
