/* reader.c - the one reader of files of reviews (pocketdec_reviews.h): CSV
 * by tianchi-eval's reader (te_csv.h), JSONL by pd_jsonl.h, both over a
 * stream that pd_encoding.h may decode first. */
#include "pocketdec_reviews.h"
#include "pd_encoding.h"
#include "pd_internal.h"
#include "pd_jsonl.h"
#include "te_csv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pd_reviews {
    FILE *f;          /* the stream read (decoded, when an encoding is named); NULL for no bytes */
    char *name;       /* "stdin" or the path, for messages */
    bool jsonl;
    pd_jsonl jl;      /* the JSONL reader (over f) */
    te_csv *csv;      /* the CSV reader (over f): the one tianchi-eval reads with */
    bool first;       /* no record read yet (a CSV header is the first record) */
    bool failed;      /* the input cannot be read further (fail says why) */
    pd_status fail_code;
    char fail[PD_ERROR_MESSAGE_SIZE];
    long rows;        /* rows read (a CSV header and broken rows count) */
    char *id_name, *text_name; /* the columns named (NULL: the defaults) */
    bool keep_extra;
    /* a CSV file's header names and the id's and text's places in them */
    char **columns;
    size_t n_columns, id_col, text_col;
    /* the row last read */
    json_t *json;
    char *extra;
    bool broken;
    char problem[TE_ERROR_MESSAGE_SIZE + 64];
    char id_buf[24];  /* an integer id as text */
};

/* A text column's usual names, when the file does not name it. */
static const char *const text_names[] = {"Reviews", "text", "review", "content", "comment", NULL};

pd_reviews_params pd_reviews_default_params(void)
{
    return (pd_reviews_params){.format = PD_REVIEWS_AUTO};
}

/* JSONL when asked for, or with format AUTO for a name ending in ".jsonl". */
static bool is_jsonl(const pd_reviews_params *p, const char *path)
{
    size_t n = strlen(path);
    return p->format == PD_REVIEWS_JSONL || (p->format == PD_REVIEWS_AUTO && n > 6 && strcmp(path + n - 6, ".jsonl") == 0);
}

static size_t column_index(const pd_reviews *r, const char *name)
{
    for (size_t i = 0; i < r->n_columns; i++)
        if (strcmp(r->columns[i], name) == 0) return i;
    return (size_t)-1;
}

/* The columns a row may be, listed for messages. */
static void list_columns(const pd_reviews *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < r->n_columns && used + 1 < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "", r->columns[i]);
}

static void fail(pd_reviews *r, pd_status code, const char *msg)
{
    r->failed = true;
    r->fail_code = code;
    snprintf(r->fail, sizeof r->fail, "%s", msg);
}

/* The first CSV row as a header, when it is one: the columns kept, the id's
 * and text's found (false, the reader failed, when they cannot be). */
static bool csv_header(pd_reviews *r, pd_review *w)
{
    size_t n = te_csv_n_fields(r->csv);
    bool tianchi = n == 2 && !r->id_name && !r->text_name;
    if (tianchi && strcmp(te_csv_field(r->csv, 0, NULL), "id")) return true; /* id,Reviews without its header */
    w->header = 1;
    if (!(r->columns = calloc(n ? n : 1, sizeof *r->columns))) {
        fail(r, PD_ERR_NOMEM, "out of memory");
        return false;
    }
    for (r->n_columns = 0; r->n_columns < n; r->n_columns++)
        if (!(r->columns[r->n_columns] = strdup(te_csv_field(r->csv, r->n_columns, NULL)))) {
            fail(r, PD_ERR_NOMEM, "out of memory");
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
    char cols[256], msg[PD_ERROR_MESSAGE_SIZE];
    list_columns(r, cols, sizeof cols);
    snprintf(msg, sizeof msg, "%s:%ld: which columns hold the id and the review? the header has %s: name them "
             "with --id-column NAME and --text-column NAME", r->name, w->line, cols);
    fail(r, PD_ERR_FORMAT, msg);
    return false;
}

/* A CSV record as a row. A broken record (te_csv.h says which) keeps its id
 * when it has one, so that an output can still list it. */
static void csv_row(pd_reviews *r, pd_review *w, te_csv_result res, const te_error *err)
{
    size_t n = te_csv_n_fields(r->csv), want = r->n_columns ? r->n_columns : 2;
    w->line = te_csv_line(r->csv);
    if (r->first && res == TE_CSV_ROW && !csv_header(r, w)) return;
    r->first = false;
    w->id = n > r->id_col ? te_csv_field(r->csv, r->id_col, NULL) : NULL;
    if (w->header) return;
    char cols[256] = "id,Reviews";
    if (r->n_columns) list_columns(r, cols, sizeof cols);
    r->broken = true;
    if (res == TE_CSV_BROKEN)
        snprintf(r->problem, sizeof r->problem, "%s", err->message);
    else if (n != want)
        snprintf(r->problem, sizeof r->problem, "%s:%ld: broken row: expected %zu fields (%s), got %zu", r->name,
                 w->line, want, cols, n);
    else if (!*w->id)
        snprintf(r->problem, sizeof r->problem, "%s:%ld: broken row: the id is empty", r->name, w->line);
    else {
        r->broken = false;
        w->text = te_csv_field(r->csv, r->text_col, &w->text_len);
        return;
    }
    w->keep_id = w->id && *w->id;
}

static void jsonl_row(pd_reviews *r, pd_review *w, pd_jsonl_status st)
{
    const char *id = NULL, *text = NULL;
    size_t len = 0;
    w->line = r->jl.line;
    if (st == PD_JSONL_FAIL) {
        char msg[PD_ERROR_MESSAGE_SIZE];
        snprintf(msg, sizeof msg, "%s:%ld: %s", r->name, r->jl.line, r->jl.what);
        fail(r, strstr(r->jl.what, "out of memory") ? PD_ERR_NOMEM : PD_ERR_IO, msg);
    } else if (st == PD_JSONL_OK && pd_jsonl_object(&r->jl, r->json) &&
               pd_jsonl_id(&r->jl, r->json, r->id_name ? r->id_name : "id", r->id_buf, &id) &&
               pd_jsonl_string(&r->jl, r->json, r->text_name ? r->text_name : "text", true, &text, &len)) {
        w->id = id;
        w->text = text;
        w->text_len = len;
    } else {
        r->broken = true;
        snprintf(r->problem, sizeof r->problem, "%s:%ld: broken row skipped: %s", r->name, w->line, r->jl.what);
    }
}

/* The row's other CSV columns as JSON members ("k":"v",...), or NULL. */
static char *csv_extra(const pd_reviews *r)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->n_columns && i < te_csv_n_fields(r->csv); i++)
        if (i != r->id_col && i != r->text_col &&
            json_object_set_new(o, r->columns[i], json_string(te_csv_field(r->csv, i, NULL)))) {
            json_decref(o);
            return NULL;
        }
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    char *members = t && strlen(t) > 2 ? strndup(t + 1, strlen(t) - 2) : NULL; /* without the braces */
    free(t);
    return members;
}

/* The next row into w; false at the end of input. */
static bool read_row(pd_reviews *r, pd_review *w)
{
    if (r->jsonl) {
        pd_jsonl_status st = pd_jsonl_next(&r->jl, &r->json);
        if (st == PD_JSONL_END) return false;
        jsonl_row(r, w, st);
        return true;
    }
    te_error err;
    te_csv_result res = te_csv_next(r->csv, &err);
    if (res == TE_CSV_END) return false;
    if (res == TE_CSV_FAIL) fail(r, err.code == TE_ERR_NOMEM ? PD_ERR_NOMEM : PD_ERR_IO, err.message);
    else csv_row(r, w, res, &err);
    return true;
}

int pd_reviews_next(pd_reviews *r, pd_review *w, pd_error *err)
{
    if (!r || !w) return pdi_set_error(err, PD_ERR_ARG, "pd_reviews_next: NULL argument"), -1;
    memset(w, 0, sizeof *w);
    json_decref(r->json);
    r->json = NULL;
    free(r->extra);
    r->extra = NULL;
    r->broken = false;
    if (!r->failed && (!r->f || !read_row(r, w))) return 0;
    if (r->failed) return pdi_set_error(err, r->fail_code, "%s", r->fail), -1;
    w->ordinal = ++r->rows;
    if (r->broken) w->problem = r->problem;
    if (r->keep_extra && !r->jsonl && !r->broken && !w->header) w->extra = r->extra = csv_extra(r);
    return 1;
}

/* The reader over f (closed with it unless stdin), f checked or decoded. */
static pd_reviews *open_stream(FILE *f, const char *name, const char *path, const pd_reviews_params *p, pd_error *err)
{
    pd_reviews_params def = pd_reviews_default_params();
    if (!p) p = &def;
    pd_reviews *r = calloc(1, sizeof *r);
    if (!r || !(r->name = strdup(name)) || (p->id_column && !(r->id_name = strdup(p->id_column))) ||
        (p->text_column && !(r->text_name = strdup(p->text_column)))) {
        if (f && f != stdin) fclose(f);
        pd_reviews_free(r);
        return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", name), NULL;
    }
    r->f = f;
    r->first = true;
    r->text_col = 1;
    r->keep_extra = p->keep_extra != 0;
    r->jsonl = is_jsonl(p, path);
    if (!f) return r; /* no bytes: no rows */
    FILE *dec = p->encoding ? pd_decoded(f, p->encoding, err) : NULL;
    if (p->encoding ? !dec : !p->first_line && !pd_encoding_check(f, r->name, err)) {
        if (f != stdin) fclose(f);
        r->f = NULL;
        pd_reviews_free(r);
        return NULL;
    }
    if (dec) r->f = dec; /* closing it closes the file */
    te_error te;
    if (r->jsonl) {
        pd_jsonl_init(&r->jl, r->f, r->name);
        if (p->first_line) r->jl.line = p->first_line - 1; /* the line before the piece's first */
    } else if (!(r->csv = te_csv_open(r->name, r->f, &te))) {
        pdi_set_error(err, te.code == TE_ERR_NOMEM ? PD_ERR_NOMEM : PD_ERR_IO, "%s", te.message);
        pd_reviews_free(r);
        return NULL;
    } else {
        te_csv_expect_fields(r->csv, 2); /* id,Reviews: what a row looks like when resynchronising */
    }
    return r;
}

static bool params_ok(const pd_reviews_params *p, const char *path, pd_error *err)
{
    if (!p) return true;
    if (p->format < PD_REVIEWS_AUTO || p->format > PD_REVIEWS_JSONL)
        return pdi_set_error(err, PD_ERR_ARG, "reviews: format %d is not csv, jsonl or auto", (int)p->format), false;
    if (p->first_line < 0)
        return pdi_set_error(err, PD_ERR_ARG, "reviews: first_line %ld is below 0", p->first_line), false;
    if (p->first_line > 0 && (p->encoding || !is_jsonl(p, path)))
        return pdi_set_error(err, PD_ERR_ARG, "%s: first_line reads a piece of a UTF-8 JSONL file, not %s", path,
                             p->encoding ? "a file in another encoding" : "CSV"), false;
    return true;
}

pd_reviews *pd_reviews_open(const char *path, const pd_reviews_params *params, pd_error *err)
{
    if (!path) return pdi_set_error(err, PD_ERR_ARG, "pd_reviews_open: no path"), NULL;
    if (!params_ok(params, path, err)) return NULL;
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f) return pdi_set_error(err, PD_ERR_IO, "%s: cannot open: %s", path, strerror(errno)), NULL;
    return open_stream(f, in ? "stdin" : path, path, params, err);
}

pd_reviews *pd_reviews_open_memory(const char *data, size_t len, const char *name, const pd_reviews_params *params,
                                   pd_error *err)
{
    if ((!data && len) || !name) return pdi_set_error(err, PD_ERR_ARG, "pd_reviews_open_memory: no data or no name"), NULL;
    if (!params_ok(params, name, err)) return NULL;
    FILE *f = len ? fmemopen((void *)data, len, "rb") : NULL;
    if (len && !f) return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory", name), NULL;
    return open_stream(f, name, name, params, err);
}

void pd_reviews_free(pd_reviews *r)
{
    if (!r) return;
    if (r->f && r->f != stdin) fclose(r->f);
    te_csv_free(r->csv);
    pd_jsonl_free(&r->jl);
    for (size_t i = 0; i < r->n_columns; i++) free(r->columns[i]);
    free(r->columns);
    json_decref(r->json);
    free(r->extra);
    free(r->id_name);
    free(r->text_name);
    free(r->name);
    free(r);
}

const char *pd_reviews_column(const pd_reviews *r, const char *name, char *buf)
{
    if (!r || !name || r->broken || r->failed) return NULL;
    if (r->jsonl) {
        json_t *v = json_object_get(r->json, name);
        if (json_is_string(v)) return json_string_value(v);
        if (json_is_integer(v)) snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) snprintf(buf, 32, "%.17g", json_real_value(v));
        return json_is_number(v) ? buf : NULL;
    }
    size_t i = column_index(r, name);
    return r->csv && i < te_csv_n_fields(r->csv) ? te_csv_field(r->csv, i, NULL) : NULL;
}

pd_reviews_format pd_reviews_get_format(const pd_reviews *r)
{
    return r && r->jsonl ? PD_REVIEWS_JSONL : PD_REVIEWS_CSV;
}

const char *pd_reviews_name(const pd_reviews *r)
{
    return r ? r->name : NULL;
}

long pd_reviews_rows(const pd_reviews *r)
{
    return r ? r->rows : 0;
}

void pd_reviews_position(const pd_reviews *r, long *pos, long *size)
{
    struct stat st;
    *pos = r && r->f ? ftell(r->f) : -1;
    *size = r && r->f && fileno(r->f) >= 0 && fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode) ? (long)st.st_size : -1;
}

char *pd_reviews_join_extra(const char *line, size_t len, const char *extra, size_t *out_len)
{
    size_t n = extra && len >= 2 ? strlen(extra) : 0;
    char *joined = malloc(len + n + 2);
    if (!joined) return NULL;
    if (!n) {
        memcpy(joined, line, len);
        joined[len] = 0;
        *out_len = len;
        return joined;
    }
    /* the row's other columns carried into the line: {"id":..,"records":[..],"rating":"5"} */
    memcpy(joined, line, len - 2);
    joined[len - 2] = ',';
    memcpy(joined + len - 1, extra, n);
    memcpy(joined + len - 1 + n, "}\n", 3);
    *out_len = len + n + 1;
    return joined;
}
