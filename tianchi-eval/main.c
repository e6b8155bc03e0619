/* main.c - the tianchi-eval command. */
#include "tianchi_eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_BAD_INPUT 1
#define EXIT_STRICT 2

static const char usage[] =
    "Usage: tianchi-eval GOLD PRED [--reviews FILE] [--json] [--html FILE] [--errors] [--strict]\n"
    "\n"
    "Score a submission of the Tianchi review opinion-mining task against gold labels:\n"
    "quadruples (aspect, opinion, category, polarity) matched one to one within each id;\n"
    "precision S/P, recall S/G, F1 = 2PR/(P+R). The rules: docs/tianchi-eval.md.\n"
    "\n"
    "  GOLD            gold labels as in train_labels.csv (a header, then 9 fields:\n"
    "                  id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities)\n"
    "  PRED            the submission as Result.csv (no header, 5 fields:\n"
    "                  id,AspectTerm,OpinionTerm,Category,Polarity; id,_,_,_,_ for a review\n"
    "                  without quadruples). \"-\" reads either file from stdin.\n"
    "  --reviews FILE  the reviews (id,Reviews): every review id must be in the submission,\n"
    "                  no other id may be; terms are checked to be spans of their review;\n"
    "                  error lists show the review text\n"
    "  --json          print JSON instead of the table\n"
    "  --html FILE     also write a self-contained HTML report (F1 chart, checks, errors)\n"
    "  --errors        list misses and false positives\n"
    "  --strict        fail with exit status 2 when the submission breaks a rule of the task\n"
    "  -h, --help      print this help\n"
    "  --version       print the version\n"
    "\n"
    "Exit status:\n"
    "  0  scored (rule violations, if any, are reported and scoring goes on)\n"
    "  1  bad input or usage; one line on stderr: tianchi-eval: FILE:LINE: what is wrong\n"
    "  2  with --strict, the submission breaks a rule: an id of the reviews (or of the gold\n"
    "     labels, without --reviews) missing, an unknown id, ids out of order, a category or\n"
    "     polarity outside its set, an empty term, a header row, a UTF-8 BOM. The scores are\n"
    "     printed all the same.\n";

typedef struct options {
    const char *gold, *pred, *reviews, *html;
    int json, errors, strict;
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

/* Returns -1 when parsed, or an exit status to leave with. */
static int parse_args(int argc, char **argv, options *o)
{
    int positional = 0, only_files = 0;
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
            } else if (has_name(a, "--reviews") || has_name(a, "--html")) {
                const char *name = has_name(a, "--reviews") ? "--reviews" : "--html";
                const char *v = option_value(argc, argv, &i, name);
                if (!v || !*v)
                    return fail_usage(name, "needs a FILE");
                *(strcmp(name, "--html") == 0 ? &o->html : &o->reviews) = v;
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
    int stdin_uses = !strcmp(o->gold, "-") + !strcmp(o->pred, "-") +
                     (o->reviews && !strcmp(o->reviews, "-"));
    if (stdin_uses > 1)
        return fail_usage("only one file can be read from stdin (\"-\")", NULL);
    return -1;
}

static int report(const te_result *res, const options *o)
{
    te_error err;
    unsigned flags = o->errors ? TE_REPORT_ERRORS : 0;
    if (o->json) {
        char *text = te_result_json(res, flags, &err);
        if (!text)
            return fail(err.message);
        puts(text);
        te_free(text);
        size_t n = te_result_n_issues(res), rules = te_result_n_violations(res);
        if (n)
            fprintf(stderr, "tianchi-eval: warning: %zu rule violations, %zu notes "
                            "(see \"checks\" in the JSON)\n", rules, n - rules);
    } else if (te_result_print_table(res, stdout, flags, &err) != TE_OK) {
        return fail(err.message);
    }
    if (o->html && te_result_save_html(res, o->html, &err) != TE_OK)
        return fail(err.message);
    if (fflush(stdout) != 0 || ferror(stdout))
        return fail("cannot write to stdout");
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    options o = {NULL, NULL, NULL, NULL, 0, 0, 0};
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    te_error err;
    te_eval *ev = te_eval_new(&err);
    if (!ev)
        return fail(err.message);
    te_result *res = NULL;
    if (te_eval_load_file(ev, TE_INPUT_GOLD, o.gold, &err) != TE_OK ||
        te_eval_load_file(ev, TE_INPUT_PREDICTIONS, o.pred, &err) != TE_OK ||
        (o.reviews && te_eval_load_file(ev, TE_INPUT_REVIEWS, o.reviews, &err) != TE_OK) ||
        !(res = te_eval_score(ev, &err))) {
        rc = fail(err.message);
    } else {
        rc = report(res, &o);
        size_t rules = te_result_n_violations(res);
        if (rc == EXIT_SUCCESS && o.strict && rules) {
            fprintf(stderr, "tianchi-eval: --strict: the submission breaks %zu rule%s of the task\n",
                    rules, rules == 1 ? "" : "s");
            rc = EXIT_STRICT;
        }
    }
    te_result_free(res);
    te_eval_free(ev);
    return rc;
}
