/* reviews.c - the reviews a command reads (reviews.h): one row at a time
 * (extract, in constant memory) or all of them (rank, serve --teach). */
#include "reviews.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A CSV record as a row: `id,Reviews`. A broken record (te_csv.h says which)
 * keeps its id when it has one, so that the output still lists it. */
static void csv_row(cli_reader *r, cli_row *w, te_csv_result res, const te_error *err)
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
static bool read_row(cli_reader *r, cli_row *w);

bool cli_reader_next(cli_reader *r, cli_row *w)
{
    if (!read_row(r, w)) return false;
    w->ordinal = ++r->rows;
    return true;
}

static bool read_row(cli_reader *r, cli_row *w)
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


int cli_reader_open(cli_args *a, const char *option, cli_reader *r)
{
    const char *in = cli_opt(a, option), *ifmt = cli_opt(a, "--input-format");
    if (!in) {
        char what[64];
        snprintf(what, sizeof what, "%s FILE is required ('-' for stdin)", option);
        return cli_usage(a, what);
    }
    size_t n = strlen(in);
    *r = (cli_reader){0};
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

int cli_reader_fail(const cli_reader *r)
{
    return r->jsonl ? cli_jsonl_fail(&r->jl) : cli_failf("%s", r->fail);
}

void cli_reader_close(cli_reader *r)
{
    if (r->f && r->f != stdin) fclose(r->f);
    r->f = NULL;
    te_csv_free(r->csv);
    r->csv = NULL;
    cli_jsonl_free(&r->jl);
}

void cli_reviews_free(cli_reviews *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->ids[i]);
        free(v->texts[i]);
    }
    free(v->ids);
    free(v->texts);
    free(v->lens);
    *v = (cli_reviews){0};
}

static int by_id(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* A repeated id: named with the line of its second row. */
static int repeated_id(const cli_reviews *v, const long *lines, const char *name)
{
    char ***by = malloc((v->n ? v->n : 1) * sizeof *by);
    if (!by) return cli_failf("out of memory");
    for (size_t i = 0; i < v->n; i++) by[i] = &v->ids[i];
    qsort(by, v->n, sizeof *by, by_id);
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < v->n; i++)
        if (strcmp(*by[i - 1], *by[i]) == 0) {
            size_t k = (size_t)(by[i] - v->ids), j = (size_t)(by[i - 1] - v->ids);
            rc = cli_failf("%s:%ld: the id %s is also the id of line %ld: each review needs an id of its own", name,
                           lines[k > j ? k : j], *by[i], lines[k > j ? j : k]);
        }
    free(by);
    return rc;
}

int cli_reviews_load(cli_args *a, const char *option, cli_reviews *out)
{
    *out = (cli_reviews){0};
    cli_reader r;
    int rc = cli_reader_open(a, option, &r);
    size_t cap = 0;
    long *lines = NULL;
    cli_row w;
    while (rc == 0 && cli_reader_next(&r, &w)) {
        if (r.failed) rc = cli_reader_fail(&r);
        else if (w.header) ;
        else if (w.problem[0]) rc = cli_failf("%s", w.problem);
        else if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            char **ids = realloc(out->ids, cap * sizeof *ids), **texts = ids ? realloc(out->texts, cap * sizeof *texts) : NULL;
            if (ids) out->ids = ids;
            if (texts) out->texts = texts;
            size_t *lens = texts ? realloc(out->lens, cap * sizeof *lens) : NULL;
            if (lens) out->lens = lens;
            long *l = lens ? realloc(lines, cap * sizeof *l) : NULL;
            if (l) lines = l;
            if (!l) rc = cli_failf("out of memory reading %s", r.name);
        }
        if (rc == 0 && !w.header && !w.problem[0]) {
            out->ids[out->n] = strdup(w.id);
            out->texts[out->n] = strndup(w.text, w.text_len);
            out->lens[out->n] = w.text_len;
            lines[out->n] = w.line;
            if (!out->ids[out->n] | !out->texts[out->n]) {
                free(out->ids[out->n]);
                free(out->texts[out->n]);
                rc = cli_failf("out of memory reading %s", r.name);
            } else {
                out->n++;
            }
        }
        json_decref(w.json);
    }
    if (rc == 0 && out->n == 0) rc = cli_failf("%s: no reviews found (the input is empty, or holds only a header)", r.name);
    if (rc == 0) rc = repeated_id(out, lines, r.name);
    free(lines);
    cli_reader_close(&r);
    if (rc) cli_reviews_free(out);
    return rc;
}
