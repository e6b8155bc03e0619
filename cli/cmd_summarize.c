/* cmd_summarize.c - `pocketdec summarize`: the summary of a corpus's records
 * by the library (pd_summarize, summary/pocketdec_summarize.h: the files
 * read, the rule for counts, estimates and intervals); here its options and
 * outputs (JSON, CSV, HTML). */
#include "cli.h"
#include "pocketdec_summary.h"
#include "reviews.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The library's notes printed as the command always has. */
static void note(void *ctx, pd_summarize_note kind, const char *message)
{
    (void)ctx;
    fprintf(stderr, "%s: %s\n", kind == PD_SUMMARIZE_UNMATCHED ? "pocketdec summarize" : "pocketdec", message);
}

/* The summary's JSON by p, extracted here with --model (its head,
 * --threads) and schema_path's schema when set. */
static json_t *summary_json(cli_args *a, pd_summarize_params *p, const char *schema_path, int *rc)
{
    pd_error err;
    json_t *j = NULL;
    if (!schema_path) {
        if (!(j = pds_summarize_json(p, &err))) *rc = cli_failf("%s", err.message);
        return j;
    }
    pd_pipeline_params pp = pd_pipeline_default_params();
    if ((*rc = cli_threads_opt(a, &pp.n_threads))) return NULL;
    pd_schema *schema = pd_schema_load(schema_path, &err);
    if (!schema) {
        *rc = cli_fail(&err);
        return NULL;
    }
    cli_model m;
    if ((*rc = cli_model_open(a, &m, true)) == 0) {
        if (!(p->pipeline = pd_pipeline_new(m.model, schema, m.head, &pp, &err))) *rc = cli_fail(&err);
        p->schema = schema;
        if (*rc == 0 && !(j = pds_summarize_json(p, &err))) *rc = cli_failf("%s", err.message);
        pd_pipeline_free(p->pipeline);
        cli_model_close(&m);
    }
    pd_schema_free(schema);
    return j;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        int e = errno;
        return cli_failf("%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

static int write_outputs(cli_args *a, const json_t *j)
{
    const char *json = cli_opt(a, "--json"), *dir = cli_opt(a, "--csv"), *html = cli_opt(a, "--html");
    size_t flags = JSON_INDENT(1) | JSON_PRESERVE_ORDER;
    int rc = 0;
    if (!dir && !json && !html) json = "-";
    if (html) {
        char *page = pds_summary_html(j, cli_opt(a, "--records"));
        rc = page ? write_text(html, page) : cli_failf("out of memory");
        free(page);
        if (rc) return rc;
    }
    if (json && strcmp(json, "-") == 0) {
        if (json_dumpf(j, stdout, flags) || fputc('\n', stdout) == EOF) rc = cli_failf("stdout: cannot write");
    } else if (json && json_dump_file(j, json, flags)) {
        rc = cli_failf("%s: cannot write: %s", json, strerror(errno));
    }
    if (rc || !dir) return rc;
    if (mkdir(dir, 0777) && errno != EEXIST) return cli_failf("%s: cannot make the folder: %s", dir, strerror(errno));
    static const char *const names[2] = {"polarity.csv", "cells.csv"};
    for (int k = 0; k < 2 && !rc; k++) {
        char path[4096], *text = pds_summary_csv(j, k == 1);
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        rc = text ? write_text(path, text) : cli_failf("out of memory");
        free(text);
    }
    return rc;
}

int cmd_summarize(cli_args *a)
{
    pd_summarize_params p = pd_summarize_default_params();
    const char *schema_path = cli_opt(a, "--schema");
    pd_error err;
    p.records = cli_opt(a, "--records");
    p.reviews = cli_opt(a, "--input");
    p.by = cli_opt(a, "--by");
    p.calibration = cli_opt(a, "--calibration");
    p.calibrate_labels = cli_opt(a, "--calibrate");
    p.calibrate_records = cli_opt(a, "--calibrate-records");
    p.save_calibration = cli_opt(a, "--save-calibration");
    p.bundle = cli_opt(a, "--model");
    p.save_state = cli_opt(a, "--save-state");
    p.note = note;
    while (cli_opt_nth(a, "--merge", (int)p.n_merge)) p.n_merge++;
    const char **merge = calloc(p.n_merge + 1, sizeof *merge);
    if (!merge) return cli_failf("out of memory");
    for (size_t i = 0; i < p.n_merge; i++) merge[i] = cli_opt_nth(a, "--merge", (int)i);
    p.merge = merge;
    int rc = pds_summarize_check(&p, schema_path != NULL, &err) ? cli_usage(a, err.message) : 0;
    if (rc == 0 && schema_path && !p.bundle)
        rc = cli_usage(a, "--schema extracts the reviews of --input with --model: give both");
    if (rc || (rc = cli_int_opt(a, "--min-support", p.min_support, 1, 1000000, &p.min_support)) ||
        (rc = cli_int_opt(a, "--top", p.top, 0, 1000, &p.top)) ||
        (rc = cli_int_opt(a, "--examples", p.examples, 0, 100, &p.examples)) ||
        (rc = cli_int_opt(a, "--list-reviews", cli_opt(a, "--html") ? -1 : 0, -1, INT_MAX, &p.listed)) ||
        (rc = cli_reviews_params(a, cli_opt(a, "--input-format"), &p.reviews_params))) {
        free(merge);
        return rc;
    }
    json_t *j = summary_json(a, &p, schema_path, &rc);
    if (rc == 0) rc = write_outputs(a, j);
    json_decref(j);
    free(merge);
    return rc;
}
