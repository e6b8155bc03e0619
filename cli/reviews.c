/* reviews.c - the one reader of reviews (reviews.h): extract and summarize
 * read their --input through it. */
#include "reviews.h"
#include "encoding.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A text column's usual names, when the file does not name it. */
static const char *const text_names[] = {"Reviews", "text", "review", "content", "comment", NULL};

static size_t column_index(const cli_reviews *r, const char *name)
{
    for (size_t i = 0; i < r->n_columns; i++)
        if (strcmp(r->columns[i], name) == 0) return i;
    return (size_t)-1;
}

/* The columns a row may be, listed for messages. */
static void list_columns(const cli_reviews *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < r->n_columns && used + 1 < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "", r->columns[i]);
}

/* The first CSV row as a header, when it is one: the columns kept, the id's
 * and text's found (false with r->fail set when they cannot be). */
static bool csv_header(cli_reviews *r, cli_review *w)
{
    size_t n = te_csv_n_fields(r->csv);
    bool tianchi = n == 2 && !r->id_name && !r->text_name;
    if (tianchi && strcmp(te_csv_field(r->csv, 0, NULL), "id")) return true; /* id,Reviews without its header */
    w->header = true;
    if (!(r->columns = calloc(n ? n : 1, sizeof *r->columns))) {
        snprintf(r->fail, sizeof r->fail, "out of memory");
        return false;
    }
    for (r->n_columns = 0; r->n_columns < n; r->n_columns++)
        if (!(r->columns[r->n_columns] = strdup(te_csv_field(r->csv, r->n_columns, NULL)))) {
            snprintf(r->fail, sizeof r->fail, "out of memory");
            return false;
        }
    if (tianchi) return true;
    r->id_col = column_index(r, r->id_name ? r->id_name : "id");
    r->text_col = r->text_name ? column_index(r, r->text_name) : (size_t)-1;
    for (int k = 0; !r->text_name && text_names[k]; k++) {
        size_t i = column_index(r, text_names[k]);
        if (i != (size_t)-1 && r->text_col != (size_t)-1) r->text_col = (size_t)-2; /* two: not obvious */
        else if (i != (size_t)-1) r->text_col = i;
    }
    if (r->id_col < n && r->text_col < n && r->id_col != r->text_col) {
        te_csv_expect_fields(r->csv, n);
        return true;
    }
    char cols[256];
    list_columns(r, cols, sizeof cols);
    snprintf(r->fail, sizeof r->fail, "%s:%ld: which columns hold the id and the review? the header has %s: name them "
             "with --id-column NAME and --text-column NAME", r->name, w->line, cols);
    return false;
}

/* A CSV record as a row. A broken record (te_csv.h says which) keeps its id
 * when it has one, so that the output still lists it. */
static void csv_row(cli_reviews *r, cli_review *w, te_csv_result res, const te_error *err)
{
    size_t n = te_csv_n_fields(r->csv), want = r->n_columns ? r->n_columns : 2;
    w->line = te_csv_line(r->csv);
    if (r->first && res == TE_CSV_ROW && !csv_header(r, w)) {
        r->failed = true;
        return;
    }
    r->first = false;
    w->id = n > r->id_col ? te_csv_field(r->csv, r->id_col, NULL) : NULL;
    if (w->header) return;
    char cols[256] = "id,Reviews";
    if (r->n_columns) list_columns(r, cols, sizeof cols);
    if (res == TE_CSV_BROKEN)
        snprintf(w->problem, sizeof w->problem, "%s", err->message);
    else if (n != want)
        snprintf(w->problem, sizeof w->problem, "%s:%ld: broken row: expected %zu fields (%s), got %zu", r->name,
                 w->line, want, cols, n);
    else if (!*w->id)
        snprintf(w->problem, sizeof w->problem, "%s:%ld: broken row: the id is empty", r->name, w->line);
    else {
        w->text = te_csv_field(r->csv, r->text_col, &w->text_len);
        return;
    }
    w->keep_id = w->id && *w->id;
}

/* The next row; false at the end of input. A broken row comes back with
 * w->problem set. */
static bool read_row(cli_reviews *r, cli_review *w);

bool cli_reviews_next(cli_reviews *r, cli_review *w)
{
    if (!read_row(r, w)) return false;
    w->ordinal = ++r->rows;
    if (r->keep_extra && !r->failed && !w->problem[0] && !w->header) {
        json_t *o = cli_reviews_extra(r, w);
        char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        if (t && strlen(t) > 2) w->extra = strndup(t + 1, strlen(t) - 2); /* without the braces */
        free(t);
    }
    return true;
}

void cli_review_release(cli_review *w)
{
    json_decref(w->json);
    w->json = NULL;
    free(w->extra);
    w->extra = NULL;
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
        if (st == CLI_JSONL_OK && cli_jsonl_object(&r->jl, w->json) && cli_jsonl_id(&r->jl, w->json, r->id_name ? r->id_name : "id", w->id_buf, &id) &&
            cli_jsonl_string(&r->jl, w->json, r->text_name ? r->text_name : "text", true, &text, &len)) {
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
    r->id_name = cli_opt(a, "--id-column");
    r->text_name = cli_opt(a, "--text-column");
    r->text_col = 1;
    r->f = strcmp(in, "-") ? fopen(in, "rb") : stdin;
    if (!r->f) return cli_failf("%s: cannot open: %s", in, strerror(errno));
    const char *enc = cli_opt(a, "--encoding");
    char msg[512];
    FILE *dec = enc ? cli_decoded(r->f, enc, msg, sizeof msg) : NULL;
    if (enc ? !dec : !cli_encoding_check(r->f, r->name, msg, sizeof msg)) {
        if (r->f != stdin) fclose(r->f);
        r->f = NULL;
        return cli_failf("%s", msg);
    }
    if (dec) r->f = dec; /* closing it closes the file */
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
    for (size_t i = 0; i < r->n_columns; i++) free(r->columns[i]);
    free(r->columns);
    r->columns = NULL;
    r->n_columns = 0;
}

const char *cli_reviews_column(const cli_reviews *r, const cli_review *w, const char *name, char *buf)
{
    if (r->jsonl) {
        json_t *v = json_object_get(w->json, name);
        if (json_is_string(v)) return json_string_value(v);
        if (json_is_integer(v)) snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) snprintf(buf, 32, "%.17g", json_real_value(v));
        return json_is_number(v) ? buf : NULL;
    }
    size_t i = column_index(r, name);
    return i < te_csv_n_fields(r->csv) && !w->problem[0] ? te_csv_field(r->csv, i, NULL) : NULL;
}

json_t *cli_reviews_extra(const cli_reviews *r, const cli_review *w)
{
    json_t *o = json_object();
    const char *id = r->id_name ? r->id_name : "id", *text = r->text_name ? r->text_name : "text", *key;
    json_t *v;
    if (!o) return NULL;
    if (r->jsonl) {
        json_object_foreach(w->json, key, v)
            if (strcmp(key, id) && strcmp(key, text) && json_object_set(o, key, v)) goto fail;
        return o;
    }
    for (size_t i = 0; !w->problem[0] && i < r->n_columns && i < te_csv_n_fields(r->csv); i++)
        if (i != r->id_col && i != r->text_col &&
            json_object_set_new(o, r->columns[i], json_string(te_csv_field(r->csv, i, NULL))))
            goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}
