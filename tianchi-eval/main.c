/* main.c - the tianchi-eval command. */
#include "tianchi_eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_BAD_INPUT 1
#define EXIT_STRICT 2
#define MAX_THRESHOLDS 64

static const char usage[] =
    "Usage: tianchi-eval GOLD PRED [--reviews FILE] [--json] [--html FILE] [--errors] [--strict]\n"
    "       tianchi-eval GOLD A --compare B [--bootstrap N] [--seed S] [--examples N] [...]\n"
    "       tianchi-eval GOLD PRED.jsonl --sweep [--thresholds a,b,...] [--json] [--html FILE]\n"
    "\n"
    "Score a submission of the Tianchi review opinion-mining task against gold labels:\n"
    "quadruples (aspect, opinion, category, polarity) matched one to one within each id;\n"
    "precision S/P, recall S/G, F1 = 2PR/(P+R). The rules: docs/tianchi-eval.md.\n"
    "\n"
    "  GOLD            gold labels as in train_labels.csv (a header, then 9 fields:\n"
    "                  id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities),\n"
    "                  or a labels file: JSONL as train/ reads it, {\"id\", \"text\", \"records\"}\n"
    "                  with {\"text\",\"start\",\"end\"} or null terms (read as JSONL when its first\n"
    "                  byte other than blanks is '{'); PRED may be one too: two people's labels\n"
    "                  give their agreement\n"
    "  PRED            the submission as Result.csv (no header, 5 fields:\n"
    "                  id,AspectTerm,OpinionTerm,Category,Polarity; id,_,_,_,_ for a review\n"
    "                  without quadruples), or pocketdec's JSONL extraction output (read as\n"
    "                  JSONL when its first byte other than blanks is '{'). \"-\" reads a file\n"
    "                  from stdin.\n"
    "  --reviews FILE  the reviews (id,Reviews): every review id must be in the submission,\n"
    "                  no other id may be; terms are checked to be spans of their review;\n"
    "                  error lists show the review text\n"
    "  --json          print JSON instead of the table\n"
    "  --html FILE     also write a self-contained HTML report: charts (inline SVG) of F1 per\n"
    "                  category and polarity; for JSONL predictions with confidences P/R by\n"
    "                  threshold and the reliability diagram (the default sweep), else a line\n"
    "                  saying why not; checks, errors. With --compare the runs' F1, the\n"
    "                  interval and the error classes; with --sweep P/R by threshold and\n"
    "                  the reliability diagram\n"
    "  --errors        list misses and false positives\n"
    "  --strict        fail with exit status 2 when the submission breaks a rule of the task\n"
    "  --compare B     score run A (PRED) and run B, both for the same reviews, against GOLD:\n"
    "                  F1 of each, F1(B) - F1(A) with a paired bootstrap 95% interval over\n"
    "                  reviews, and each run's errors by class (missed/extra span, span\n"
    "                  boundary off, wrong link, wrong category, wrong polarity, repeated)\n"
    "  --bootstrap N   resamples of the interval (default 1000)\n"
    "  --seed S        seed of the resampling (default 0): the same seed, the same interval\n"
    "  --examples N    examples shown a class with --compare (default 3)\n"
    "  --sweep         for JSONL predictions with confidences: P, R, F1 of the records with\n"
    "                  confidence >= each threshold, and a reliability table (ten bins)\n"
    "  --thresholds L  the sweep's thresholds, comma-separated (default 0,0.1,...,0.9,0.95)\n"
    "  --fields L      JSONL keys of aspect, opinion, category, polarity\n"
    "                  (default aspect,opinion,category,polarity)\n"
    "  -h, --help      print this help\n"
    "  --version       print the version\n"
    "\n"
    "Exit status:\n"
    "  0  scored (rule violations, if any, are reported and scoring goes on)\n"
    "  1  bad input or usage; one line on stderr: tianchi-eval: FILE:LINE: what is wrong\n"
    "     (also: a malformed JSONL line, a JSONL id that is not a review's with --reviews,\n"
    "     runs compared that do not have rows for the same ids, --sweep without confidences)\n"
    "  2  with --strict, the submission (with --compare: either run) breaks a rule: an id\n"
    "     of the reviews (or of the gold labels, without --reviews) missing, an unknown id,\n"
    "     ids out of order, a category or polarity outside its set, an empty term, a header\n"
    "     row, a UTF-8 BOM. The scores are printed all the same.\n";

typedef struct options {
    const char *gold, *pred, *reviews, *html, *compare, *fields;
    int json, errors, strict, sweep;
    unsigned long resamples;
    unsigned long long seed;
    unsigned long examples;
    double thresholds[MAX_THRESHOLDS];
    size_t n_thresholds; /* 0: the default ones */
} options;

static int fail(const char *message)
{
    fprintf(stderr, "tianchi-eval: %s\n", message);
    return EXIT_BAD_INPUT;
}

static int fail_usage(const char *what, const char *arg)
{
    fprintf(stderr, "tianchi-eval: %s%s%s (see --help)\n", what, arg ? " " : "", arg ? arg : "");
    return EXIT_BAD_INPUT;
}

/* The value of an option given as "--name VALUE" or "--name=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static int has_name(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* An unsigned decimal integer in [min, max], all of s. */
static int parse_count(const char *s, unsigned long long min, unsigned long long max,
                       unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-' || *s == '+')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Comma-separated numbers in [0, 1]. */
static int parse_thresholds(const char *s, options *o)
{
    o->n_thresholds = 0;
    for (;;) {
        char *end;
        errno = 0;
        double t = strtod(s, &end);
        if (end == s || errno || !(t >= 0.0 && t <= 1.0) || o->n_thresholds == MAX_THRESHOLDS ||
            (*end != ',' && *end != '\0'))
            return -1;
        o->thresholds[o->n_thresholds++] = t;
        if (*end == '\0')
            return 0;
        s = end + 1;
    }
}

/* An option with a value: 0 when taken, -1 when a is not one, or an exit
 * status to leave with. */
static int valued_option(int argc, char **argv, int *i, options *o)
{
    enum { REVIEWS, HTML, COMPARE, FIELDS, BOOTSTRAP, SEED, EXAMPLES, THRESHOLDS, N_VALUED };
    static const char *const names[N_VALUED] = {"--reviews", "--html", "--compare", "--fields",
                                                "--bootstrap", "--seed", "--examples",
                                                "--thresholds"};
    static const char *const needs[N_VALUED] = {
        "needs a FILE", "needs a FILE", "needs a FILE",
        "needs four names, aspect,opinion,category,polarity",
        "needs a number of resamples, 1 to 10000000", "needs a non-negative integer",
        "needs a number of examples, 0 to 100", "needs numbers in [0, 1], comma-separated"};
    int k = 0;
    while (k < N_VALUED && !has_name(argv[*i], names[k]))
        k++;
    if (k == N_VALUED)
        return -1;
    const char *v = option_value(argc, argv, i, names[k]);
    unsigned long long n = 0;
    int bad = !v || !*v;
    if (!bad) {
        switch (k) {
        case REVIEWS: o->reviews = v; break;
        case HTML: o->html = v; break;
        case COMPARE: o->compare = v; break;
        case FIELDS: o->fields = v; break;
        case BOOTSTRAP:
            bad = parse_count(v, 1, 10000000, &n) != 0;
            o->resamples = (unsigned long)n;
            break;
        case SEED: bad = parse_count(v, 0, ~0ull, &o->seed) != 0; break;
        case EXAMPLES:
            bad = parse_count(v, 0, 100, &n) != 0;
            o->examples = (unsigned long)n;
            break;
        default: bad = parse_thresholds(v, o) != 0;
        }
    }
    return bad ? fail_usage(names[k], needs[k]) : 0;
}

/* Returns -1 when parsed, or an exit status to leave with. */
static int parse_args(int argc, char **argv, options *o)
{
    int positional = 0, only_files = 0, rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_files && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0) {
                only_files = 1;
            } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                fputs(usage, stdout);
                return 0;
            } else if (strcmp(a, "--version") == 0) {
                printf("tianchi-eval %s\n", TE_VERSION);
                return 0;
            } else if (strcmp(a, "--json") == 0) {
                o->json = 1;
            } else if (strcmp(a, "--errors") == 0) {
                o->errors = 1;
            } else if (strcmp(a, "--strict") == 0) {
                o->strict = 1;
            } else if (strcmp(a, "--sweep") == 0) {
                o->sweep = 1;
            } else if ((rc = valued_option(argc, argv, &i, o)) >= 0) {
                if (rc != 0)
                    return rc;
            } else {
                return fail_usage("unknown option", a);
            }
            continue;
        }
        if (positional == 0)
            o->gold = a;
        else if (positional == 1)
            o->pred = a;
        else
            return fail_usage("one argument too many:", a);
        positional++;
    }
    if (positional < 2)
        return fail_usage("expected two files, GOLD and PRED", NULL);
    if (o->sweep && o->compare)
        return fail_usage("--sweep and --compare go one at a time", NULL);
    if (o->sweep && o->errors)
        return fail_usage("--sweep lists no errors: leave out", "--errors");
    int stdin_uses = !strcmp(o->gold, "-") + !strcmp(o->pred, "-") +
                     (o->reviews && !strcmp(o->reviews, "-")) +
                     (o->compare && !strcmp(o->compare, "-"));
    if (stdin_uses > 1)
        return fail_usage("only one file can be read from stdin (\"-\")", NULL);
    /* Each run is loaded with its own copy of gold and reviews. */
    if (o->compare && (!strcmp(o->gold, "-") || (o->reviews && !strcmp(o->reviews, "-"))))
        return fail_usage("with --compare, GOLD and --reviews are read twice: give files, not", "-");
    return -1;
}

/* Print JSON text (te_free'd here), or fail with err's message. */
static int print_json(char *text, const te_error *err)
{
    if (!text)
        return fail(err->message);
    puts(text);
    te_free(text);
    return EXIT_SUCCESS;
}

static void warn_issues(const te_result *res, const char *what)
{
    size_t n = te_result_n_issues(res), rules = te_result_n_violations(res);
    if (n)
        fprintf(stderr, "tianchi-eval: warning: %s%zu rule violations, %zu notes "
                        "(see \"checks\" in the JSON)\n", what, rules, n - rules);
}

static int finish_output(void)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return fail("cannot write to stdout");
    return EXIT_SUCCESS;
}

static int report(const te_result *res, const options *o)
{
    te_error err;
    unsigned flags = o->errors ? TE_REPORT_ERRORS : 0;
    if (o->json) {
        if (print_json(te_result_json(res, flags, &err), &err) != EXIT_SUCCESS)
            return EXIT_BAD_INPUT;
        warn_issues(res, "");
    } else if (te_result_print_table(res, stdout, flags, &err) != TE_OK) {
        return fail(err.message);
    }
    if (o->html && te_result_save_html(res, o->html, &err) != TE_OK)
        return fail(err.message);
    return finish_output();
}

static int report_compare(const te_compare *cmp, const options *o)
{
    te_error err;
    if (o->json) {
        if (print_json(te_compare_json(cmp, o->examples, &err), &err) != EXIT_SUCCESS)
            return EXIT_BAD_INPUT;
        warn_issues(te_compare_result(cmp, 0), "run A: ");
        warn_issues(te_compare_result(cmp, 1), "run B: ");
    } else if (te_compare_print_table(cmp, stdout, o->examples, &err) != TE_OK) {
        return fail(err.message);
    }
    if (o->html && te_compare_save_html(cmp, o->html, o->examples, &err) != TE_OK)
        return fail(err.message);
    return finish_output();
}

static int report_sweep(const te_sweep *sw, const options *o)
{
    te_error err;
    if (o->json) {
        if (print_json(te_sweep_json(sw, &err), &err) != EXIT_SUCCESS)
            return EXIT_BAD_INPUT;
    } else if (te_sweep_print_table(sw, stdout, &err) != TE_OK) {
        return fail(err.message);
    }
    if (o->html && te_sweep_save_html(sw, o->html, &err) != TE_OK)
        return fail(err.message);
    return finish_output();
}

/* --strict: exit 2 when a submission scored breaks a rule. */
static int strict_status(const options *o, size_t rules)
{
    if (!o->strict || !rules)
        return EXIT_SUCCESS;
    fprintf(stderr, "tianchi-eval: --strict: the submission breaks %zu rule%s of the task\n",
            rules, rules == 1 ? "" : "s");
    return EXIT_STRICT;
}

/* Gold, one run's predictions and the reviews into a new evaluator. */
static te_eval *load(const options *o, const char *pred, te_error *err)
{
    te_eval *ev = te_eval_new(err);
    if (ev && (te_eval_load_file(ev, TE_INPUT_GOLD, o->gold, err) != TE_OK ||
               (o->fields && te_eval_set_jsonl_fields(ev, o->fields, err) != TE_OK) ||
               te_eval_load_file(ev, TE_INPUT_PREDICTIONS, pred, err) != TE_OK ||
               (o->reviews && te_eval_load_file(ev, TE_INPUT_REVIEWS, o->reviews, err) != TE_OK))) {
        te_eval_free(ev);
        return NULL;
    }
    return ev;
}

static int run_compare(const options *o, te_eval *a, te_error *err)
{
    te_eval *b = load(o, o->compare, err);
    te_compare_params params = {o->resamples, o->seed};
    te_compare *cmp = b ? te_compare_new(a, b, &params, err) : NULL;
    int rc = cmp ? report_compare(cmp, o) : fail(err->message);
    if (rc == EXIT_SUCCESS)
        rc = strict_status(o, te_result_n_violations(te_compare_result(cmp, 0)) +
                                  te_result_n_violations(te_compare_result(cmp, 1)));
    te_compare_free(cmp);
    te_eval_free(b);
    return rc;
}

static int run_sweep(const options *o, te_eval *ev, te_error *err)
{
    te_sweep *sw = te_eval_sweep(ev, o->n_thresholds ? o->thresholds : NULL, o->n_thresholds, err);
    int rc = sw ? report_sweep(sw, o) : fail(err->message);
    te_sweep_free(sw);
    return rc;
}

int main(int argc, char **argv)
{
    options o = {.resamples = 1000, .examples = 3};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    te_error err;
    te_eval *ev = load(&o, o.pred, &err);
    if (!ev)
        return fail(err.message);
    if (o.compare) {
        rc = run_compare(&o, ev, &err);
    } else if (o.sweep) {
        rc = run_sweep(&o, ev, &err);
    } else {
        te_result *res = te_eval_score(ev, &err);
        rc = res ? report(res, &o) : fail(err.message);
        if (rc == EXIT_SUCCESS)
            rc = strict_status(&o, te_result_n_violations(res));
        te_result_free(res);
    }
    te_eval_free(ev);
    return rc;
}
