/* reviews.c - the one reader of reviews (reviews.h): extract and summarize
 * read their --input through it. */
#include "reviews.h"

#include <errno.h>
#include <string.h>

/* A CSV record as a row: `id,Reviews`. A broken record (te_csv.h says which)
 * keeps its id when it has one, so that the output still lists it. */
static void csv_row(cli_reviews *r, cli_review *w, te_csv_result res, const te_error *err)
{
    size_t n = te_csv_n_fields(r->csv);
    w->line = te_csv_line(r->csv);
    w->id = n ? te_csv_field(r->csv, 0, NULL) : NULL;
    w->header = r->first && w->id && strcmp(w->id, "id") == 0;
    r->first = false;
    if (res == TE_CSV_BROKEN)
        snprintf(w->problem, sizeof w->problem, "%s", err->message);
    else if (n != 2)
        snprintf(w->problem, sizeof w->problem, "%s:%ld: broken row: expected 2 fields (id,Reviews), got %zu",
                 r->name, w->line, n);
    else if (!*w->id)
        snprintf(w->problem, sizeof w->problem, "%s:%ld: broken row: the id is empty", r->name, w->line);
    else {
        w->text = te_csv_field(r->csv, 1, &w->text_len);
        return;
    }
    w->keep_id = w->id && *w->id && !w->header;
}

/* The next row; false at the end of input. A broken row comes back with
 * w->problem set. */
static bool read_row(cli_reviews *r, cli_review *w);

bool cli_reviews_next(cli_reviews *r, cli_review *w)
{
    if (!read_row(r, w)) return false;
    w->ordinal = ++r->rows;
    return true;
}

static bool read_row(cli_reviews *r, cli_review *w)
{
    memset(w, 0, sizeof *w);
    if (r->jsonl) {
        const char *id = NULL, *text = NULL;
        size_t len = 0;
        cli_jsonl_status st = cli_jsonl_next(&r->jl, &w->json);
        if (st == CLI_JSONL_END) return false;
        w->line = r->jl.line;
        if (st == CLI_JSONL_FAIL) r->failed = true;
        if (st == CLI_JSONL_OK && cli_jsonl_object(&r->jl, w->json) && cli_jsonl_id(&r->jl, w->json, "id", w->id_buf, &id) &&
            cli_jsonl_string(&r->jl, w->json, "text", true, &text, &len)) {
            w->id = id;
            w->text = text;
            w->text_len = len;
        } else {
            snprintf(w->problem, sizeof w->problem, "%s:%ld: broken row skipped: %s", r->name, w->line, r->jl.what);
        }
        return true;
    }
    te_error err;
    te_csv_result res = te_csv_next(r->csv, &err);
    if (res == TE_CSV_END) return false;
    if (res == TE_CSV_FAIL) {
        r->failed = true;
        snprintf(r->fail, sizeof r->fail, "%s", err.message);
        return true;
    }
    csv_row(r, w, res, &err);
    return true;
}

int cli_reviews_open(cli_args *a, cli_reviews *r, const char *in, const char *ifmt)
{
    size_t n = strlen(in);
    r->name = strcmp(in, "-") ? in : "stdin";
    r->jsonl = ifmt ? strcmp(ifmt, "jsonl") == 0 : (n > 6 && strcmp(in + n - 6, ".jsonl") == 0);
    if (ifmt && strcmp(ifmt, "jsonl") && strcmp(ifmt, "csv")) return cli_usage(a, "--input-format must be csv or jsonl");
    r->first = true;
    r->f = strcmp(in, "-") ? fopen(in, "rb") : stdin;
    if (!r->f) return cli_failf("%s: cannot open: %s", in, strerror(errno));
    te_error err;
    if (r->jsonl)
        cli_jsonl_init(&r->jl, r->f, r->name);
    else if (!(r->csv = te_csv_open(r->name, r->f, &err)) && r->f != stdin)
        fclose(r->f);
    if (!r->jsonl && !r->csv) {
        r->f = NULL;
        return cli_failf("%s", err.message);
    }
    if (r->csv) te_csv_expect_fields(r->csv, 2); /* id,Reviews: what a row looks like when resynchronising */
    return 0;
}

int cli_reviews_fail(const cli_reviews *r)
{
    return r->jsonl ? cli_jsonl_fail(&r->jl) : cli_failf("%s", r->fail);
}

void cli_reviews_close(cli_reviews *r)
{
    if (r->f && r->f != stdin) fclose(r->f);
    r->f = NULL;
    te_csv_free(r->csv);
    r->csv = NULL;
    cli_jsonl_free(&r->jl);
}
