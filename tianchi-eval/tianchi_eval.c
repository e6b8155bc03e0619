/* tianchi_eval.c - the evaluator object: reading gold, predictions and
 * reviews from CSV, or taking them one by one from memory. */
#include "te_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* What each kind of input looks like, for parsing and for telling the user
 * which file they seem to have given instead. */
typedef struct kind_info {
    const char *name;
    size_t n_fields;
    const char *columns;
    int header; /* the format has a header row */
} kind_info;

static const kind_info kinds[TE_N_INPUTS] = {
    {"gold labels", 9, "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities", 1},
    {"predictions", 5, "id,AspectTerm,OpinionTerm,Category,Polarity", 0},
    {"reviews", 2, "id,Reviews", 1},
};

te_eval *te_eval_new(te_error *err)
{
    te_eval *ev = calloc(1, sizeof *ev);
    if (!ev)
        te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory");
    return ev;
}

void te_eval_free(te_eval *ev)
{
    if (!ev)
        return;
    te_pool_free(&ev->pool);
    free(ev->rows[0].v);
    free(ev->rows[1].v);
    free(ev->reviews);
    free(ev->notes);
    free(ev);
}

/* ---------------------------------------------------------------- parsing */

static void trim(const char **s, size_t *len)
{
    while (*len && ((*s)[0] == ' ' || (*s)[0] == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

int te_parse_id(const char *s, size_t len, long *out)
{
    trim(&s, &len);
    if (len == 0)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int d = s[i] - '0';
        if (v > (LONG_MAX - d) / 10)
            return -2;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int is_blank(const char *s, size_t len)
{
    trim(&s, &len);
    return len == 0;
}

static int is_id_label(const char *s, size_t len)
{
    trim(&s, &len);
    return len == 2 && (s[0] == 'i' || s[0] == 'I') && (s[1] == 'd' || s[1] == 'D');
}

/* The kind whose rows have n fields, other than `not`, or -1. */
static int kind_with_fields(size_t n, te_input not)
{
    for (int k = 0; k < TE_N_INPUTS; k++)
        if (k != (int)not && kinds[k].n_fields == n)
            return k;
    return -1;
}

static te_status wrong_fields(te_error *err, te_input kind, const char *file, long line,
                              size_t n, int header)
{
    int other = kind_with_fields(n, kind);
    const kind_info *want = &kinds[kind];
    if (other >= 0)
        return te_fail(err, TE_ERR_FORMAT, file, line,
                       "%s%zu fields: this looks like a %s file (%s), but %s are expected "
                       "(%s%zu fields: %s)",
                       header ? "header with " : "", n, kinds[other].name, kinds[other].columns,
                       want->name, want->header ? "a header, then " : "no header, ",
                       want->n_fields, want->columns);
    return te_fail(err, TE_ERR_FORMAT, file, line, "%s%zu fields, expected %zu for %s (%s)",
                   header ? "header with " : "", n, want->n_fields, want->name, want->columns);
}

static te_status bad_number(te_error *err, const char *file, long line, const char *what,
                            const char *s, size_t len, int why)
{
    char snip[64];
    te_snippet(s, len, snip, sizeof snip, 40);
    return te_fail(err, TE_ERR_FORMAT, file, line, "%s \"%s\" is %s", what, snip,
                   why == -2 ? "too large" : "not a non-negative integer");
}

/* ----------------------------------------------------------------- adding */

te_status te_eval_add_note(te_eval *ev, te_issue_kind kind, te_input input, const char *file,
                          long line, te_error *err)
{
    if (te_grow((void **)&ev->notes, &ev->cap_notes, ev->n_notes + 1, sizeof *ev->notes) != 0)
        return te_fail(err, TE_ERR_NOMEM, file, line, "out of memory");
    ev->notes[ev->n_notes++] = (te_note){kind, input, file, line};
    return TE_OK;
}

te_status te_eval_add_row(te_eval *ev, te_input kind, long id, const char *const f[TE_N_FIELDS],
                         const long offsets[4], const char *file, long line, te_error *err)
{
    te_rows *rows = &ev->rows[kind];
    if (te_grow((void **)&rows->v, &rows->cap, rows->n + 1, sizeof *rows->v) != 0)
        return te_fail(err, TE_ERR_NOMEM, file, line, "out of memory");
    te_row *r = &rows->v[rows->n];
    memset(r, 0, sizeof *r);
    r->id = id;
    int all_blank = 1;
    for (int i = 0; i < TE_N_FIELDS; i++) {
        r->f[i] = te_pool_strndup(&ev->pool, f[i], strlen(f[i]));
        if (!r->f[i])
            return te_fail(err, TE_ERR_NOMEM, file, line, "out of memory");
        if (strcmp(f[i], TE_PLACEHOLDER) != 0)
            all_blank = 0;
    }
    r->placeholder = all_blank;
    r->file = file;
    r->line = line;
    r->a_start = offsets[0];
    r->a_end = offsets[1];
    r->o_start = offsets[2];
    r->o_end = offsets[3];
    r->confidence = -1;
    rows->n++;
    return TE_OK;
}

static int cmp_review(const void *a, const void *b)
{
    const te_review *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the reviews by id and refuse a repeated id (the caller rolls back). */
static te_status sort_reviews(te_eval *ev, te_error *err)
{
    qsort(ev->reviews, ev->n_reviews, sizeof *ev->reviews, cmp_review);
    for (size_t i = 1; i < ev->n_reviews; i++) {
        const te_review *a = &ev->reviews[i - 1], *b = &ev->reviews[i];
        if (a->id == b->id)
            return te_fail(err, TE_ERR_FORMAT, b->file, b->line,
                           "review id %ld appears twice (first at %s:%ld)", b->id, a->file,
                           a->line);
    }
    return TE_OK;
}

static te_status add_review(te_eval *ev, long id, const char *text, size_t len,
                            const char *file, long line, te_error *err)
{
    if (te_grow((void **)&ev->reviews, &ev->cap_reviews, ev->n_reviews + 1,
                sizeof *ev->reviews) != 0)
        return te_fail(err, TE_ERR_NOMEM, file, line, "out of memory");
    const char *copy = te_pool_strndup(&ev->pool, text, len);
    if (!copy)
        return te_fail(err, TE_ERR_NOMEM, file, line, "out of memory");
    te_review *r = &ev->reviews[ev->n_reviews++];
    *r = (te_review){id, copy, file, line, ev->next_seq++};
    return TE_OK;
}

/* One data row of a CSV file, its field count already checked. */
static te_status load_row(te_eval *ev, te_input kind, te_csv *csv, long id, const char *file,
                          te_error *err)
{
    long line = te_csv_line(csv);
    if (kind == TE_INPUT_REVIEWS) {
        size_t len;
        const char *text = te_csv_field(csv, 1, &len);
        return add_review(ev, id, text, len, file, line, err);
    }
    const char *f[TE_N_FIELDS];
    long offsets[4] = {-1, -1, -1, -1};
    if (kind == TE_INPUT_PREDICTIONS) {
        for (int i = 0; i < TE_N_FIELDS; i++)
            f[i] = te_csv_field(csv, (size_t)i + 1, NULL);
    } else {
        /* id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities */
        static const size_t field_of[TE_N_FIELDS] = {1, 4, 7, 8};
        static const size_t offset_of[4] = {2, 3, 5, 6};
        static const char *const offset_name[4] = {"A_start", "A_end", "O_start", "O_end"};
        for (int i = 0; i < TE_N_FIELDS; i++)
            f[i] = te_csv_field(csv, field_of[i], NULL);
        for (int i = 0; i < 4; i++) {
            size_t len;
            const char *s = te_csv_field(csv, offset_of[i], &len);
            if (is_blank(s, len))
                continue;
            int why = te_parse_id(s, len, &offsets[i]);
            if (why != 0)
                return bad_number(err, file, line, offset_name[i], s, len, why);
        }
    }
    return te_eval_add_row(ev, kind, id, f, offsets, file, line, err);
}

/* Undo a failed load: what it added goes, pooled strings are just left. */
typedef struct load_mark {
    size_t rows, seq, notes;
} load_mark;

static load_mark mark_of(const te_eval *ev, te_input kind)
{
    load_mark m = {0, ev->next_seq, ev->n_notes};
    if (kind != TE_INPUT_REVIEWS)
        m.rows = ev->rows[kind].n;
    return m;
}

static void roll_back(te_eval *ev, te_input kind, load_mark m)
{
    if (kind != TE_INPUT_REVIEWS)
        ev->rows[kind].n = m.rows;
    ev->n_notes = m.notes;
    /* The older reviews keep their sorted order. */
    size_t n = 0;
    for (size_t k = 0; k < ev->n_reviews; k++)
        if (ev->reviews[k].seq < m.seq)
            ev->reviews[n++] = ev->reviews[k];
    ev->n_reviews = n;
}

/* Read the records of one file; err is not NULL. */
static te_status parse_csv(te_eval *ev, te_input kind, te_csv *csv, const char *file,
                           te_error *err)
{
    const kind_info *info = &kinds[kind];
    te_status st;
    if (te_csv_had_bom(csv) && (st = te_eval_add_note(ev, TE_ISSUE_BOM, kind, file, 1, err)) != TE_OK)
        return st;
    long data_rows = 0;
    int first = 1, had_header = 0;
    te_csv_result r;
    te_csv_expect_fields(csv, info->n_fields);
    while ((r = te_csv_next(csv, err)) == TE_CSV_ROW) {
        long line = te_csv_line(csv);
        size_t n = te_csv_n_fields(csv), id_len;
        const char *id_text = te_csv_field(csv, 0, &id_len);
        long id = 0;
        int why = te_parse_id(id_text, id_len, &id);
        /* A first row that starts with "id" is a header. */
        if (first && is_id_label(id_text, id_len)) {
            first = 0;
            if (n != info->n_fields)
                return wrong_fields(err, kind, file, line, n, 1);
            had_header = 1;
            /* The task wants a submission without a header: noted, then skipped. */
            if (!info->header && (st = te_eval_add_note(ev, TE_ISSUE_HEADER, kind, file, line, err)) != TE_OK)
                return st;
            continue;
        }
        first = 0;
        if (n != info->n_fields)
            return wrong_fields(err, kind, file, line, n, 0);
        if (why != 0)
            return bad_number(err, file, line, "id", id_text, id_len, why);
        if ((st = load_row(ev, kind, csv, id, file, err)) != TE_OK)
            return st;
        data_rows++;
    }
    /* A broken record refuses the file: a score must not rest on part of it. */
    if (r != TE_CSV_END)
        return err->code;
    if (data_rows == 0)
        return te_fail(err, TE_ERR_FORMAT, file, 0, had_header ? "no data rows after the header"
                                                                : "empty file");
    return TE_OK;
}

te_status te_eval_load_buffer(te_eval *ev, te_input kind, const char *name, const char *data,
                              size_t len, te_error *err)
{
    te_error local;
    if (!err)
        err = &local; /* the steps below pass their status through err */
    if (!ev || (unsigned)kind >= TE_N_INPUTS || (!data && len))
        return te_fail(err, TE_ERR_ARG, name, 0, "invalid argument");
    const char *file = te_pool_strndup(&ev->pool, name ? name : TE_MEMORY_NAME,
                                       strlen(name ? name : TE_MEMORY_NAME));
    if (!file)
        return te_fail(err, TE_ERR_NOMEM, name, 0, "out of memory");
    load_mark mark = mark_of(ev, kind);
    te_status st;
    if (kind != TE_INPUT_REVIEWS && te_is_jsonl(data, len)) {
        st = te_jsonl_parse(ev, kind, file, data, len, err);
    } else {
        te_csv *csv = te_csv_new(file, data, len, err);
        if (!csv)
            return err->code;
        st = parse_csv(ev, kind, csv, file, err);
        te_csv_free(csv);
    }
    if (st == TE_OK && kind == TE_INPUT_REVIEWS)
        st = sort_reviews(ev, err);
    if (st != TE_OK) {
        roll_back(ev, kind, mark);
        return st;
    }
    ev->last_file[kind] = file;
    return TE_OK;
}

te_status te_eval_load_file(te_eval *ev, te_input kind, const char *path, te_error *err)
{
    if (!ev || !path)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no evaluator or no path");
    char *data;
    size_t len;
    te_status st = te_read_file(path, &data, &len, err);
    if (st != TE_OK)
        return st;
    st = te_eval_load_buffer(ev, kind, strcmp(path, "-") == 0 ? "<stdin>" : path, data, len, err);
    free(data);
    return st;
}

static te_status check_text(const char *s, const char *what, long line, te_error *err)
{
    if (te_utf8_valid_prefix(s, strlen(s)) != strlen(s))
        return te_fail(err, TE_ERR_ARG, TE_MEMORY_NAME, line, "%s is not valid UTF-8", what);
    return TE_OK;
}

te_status te_eval_add_quad(te_eval *ev, te_input kind, const te_quad *quad, te_error *err)
{
    if (!ev || !quad || (kind != TE_INPUT_GOLD && kind != TE_INPUT_PREDICTIONS))
        return te_fail(err, TE_ERR_ARG, NULL, 0,
                       "invalid argument: a quadruple is gold or a prediction");
    long line = ev->n_added[kind] + 1;
    if (quad->id < 0)
        return te_fail(err, TE_ERR_ARG, TE_MEMORY_NAME, line, "id %ld is negative", quad->id);
    static const char *const names[TE_N_FIELDS] = {"aspect", "opinion", "category", "polarity"};
    const char *f[TE_N_FIELDS] = {quad->aspect, quad->opinion, quad->category, quad->polarity};
    for (int i = 0; i < TE_N_FIELDS; i++) {
        if (!f[i])
            f[i] = TE_PLACEHOLDER;
        te_status st = check_text(f[i], names[i], line, err);
        if (st != TE_OK)
            return st;
    }
    static const long no_offsets[4] = {-1, -1, -1, -1};
    te_status st = te_eval_add_row(ev, kind, quad->id, f, no_offsets, TE_MEMORY_NAME, line, err);
    if (st != TE_OK)
        return st;
    ev->n_added[kind] = line;
    ev->last_file[kind] = TE_MEMORY_NAME;
    return TE_OK;
}

te_status te_eval_add_review(te_eval *ev, long id, const char *text, te_error *err)
{
    if (!ev || !text)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no evaluator or no text");
    long line = ev->n_added[TE_INPUT_REVIEWS] + 1;
    if (id < 0)
        return te_fail(err, TE_ERR_ARG, TE_MEMORY_NAME, line, "id %ld is negative", id);
    te_status st = check_text(text, "review text", line, err);
    if (st != TE_OK)
        return st;
    /* Keep the array sorted: ids usually come in order, then this appends. */
    size_t lo = 0, hi = ev->n_reviews;
    if (hi && ev->reviews[hi - 1].id >= id) {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ev->reviews[mid].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (ev->reviews[lo].id == id)
            return te_fail(err, TE_ERR_ARG, TE_MEMORY_NAME, line,
                           "review id %ld appears twice (first at %s:%ld)", id,
                           ev->reviews[lo].file, ev->reviews[lo].line);
    } else
        lo = hi;
    if ((st = add_review(ev, id, text, strlen(text), TE_MEMORY_NAME, line, err)) != TE_OK)
        return st;
    te_review r = ev->reviews[ev->n_reviews - 1];
    memmove(&ev->reviews[lo + 1], &ev->reviews[lo], (ev->n_reviews - 1 - lo) * sizeof r);
    ev->reviews[lo] = r;
    ev->n_added[TE_INPUT_REVIEWS] = line;
    ev->last_file[TE_INPUT_REVIEWS] = TE_MEMORY_NAME;
    return TE_OK;
}

te_status te_eval_set_jsonl_fields(te_eval *ev, const char *names, te_error *err)
{
    if (!ev || !names)
        return te_fail(err, TE_ERR_ARG, NULL, 0, "invalid argument: no evaluator or no names");
    const char *f[TE_N_FIELDS];
    const char *p = names;
    for (int i = 0; i < TE_N_FIELDS; i++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || (i == TE_N_FIELDS - 1) != !end)
            return te_fail(err, TE_ERR_ARG, NULL, 0,
                           "JSONL fields \"%s\": expected four non-empty names, "
                           "aspect,opinion,category,polarity", names);
        if (!(f[i] = te_pool_strndup(&ev->pool, p, len)))
            return te_fail(err, TE_ERR_NOMEM, NULL, 0, "out of memory");
        p = end ? end + 1 : p + len;
    }
    memcpy(ev->jsonl_fields, f, sizeof f);
    return TE_OK;
}
