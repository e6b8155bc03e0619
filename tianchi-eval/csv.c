/* csv.c - the CSV reader (rules in te_csv.h) over a buffer or a stream, and
 * file reading. One byte-driven state machine reads both: a stream refills the
 * buffer where a buffer would end, and the record under way keeps its state,
 * so a record is read once however it arrives. */
#include "te_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Where the reader is inside a record. */
typedef enum rec_state {
    S_FIELD,  /* at the start of a field */
    S_PLAIN,  /* in an unquoted field */
    S_QUOTED, /* in a quoted field */
    S_QUOTE   /* just after a quote inside a quoted field: closing, or "" */
} rec_state;

/* How a record ended. */
typedef enum rec_end {
    R_ROW,      /* a clean record */
    R_MORE,     /* the stream must be read further first */
    R_UNCLOSED, /* a quoted field reached the end of the input */
    R_AFTER,    /* text after the closing quote of a field */
    R_NOMEM
} rec_end;

struct te_csv {
    const char *name;
    FILE *in;         /* NULL: the whole text is data[0..len) */
    const char *data; /* the bytes in hand; for a stream, own */
    char *own;
    size_t len, cap, pos; /* pos: the start of the record under way */
    int eof;
    int bom, started;
    long line;   /* physical line at pos, from 1 */
    int prev_cr; /* the byte before pos was a CR (an LF after it ends no line) */
    size_t expect;
    long resync; /* > 0: the line of the broken record being recovered from */
    /* The record under way: its state, how far it is read (scan, from pos)
     * and the line there; its fields back to back in buf, each NUL-terminated,
     * as offsets since buf moves when it grows. */
    rec_state st;
    size_t scan;
    long scan_line, opened, after_line;
    int scan_cr;
    char *buf;
    size_t used, cap_buf;
    struct te_csv_field { size_t off, len, raw_end; } *fields;
    size_t n_fields, cap_fields;
    long rec_line;
};

static te_csv *make(const char *name, te_error *err)
{
    te_csv *csv = calloc(1, sizeof *csv);
    if (!csv) {
        te_fail(err, TE_ERR_NOMEM, name, 0, "out of memory");
        return NULL;
    }
    csv->name = name;
    csv->line = 1;
    return csv;
}

static void check_bom(te_csv *csv)
{
    csv->started = 1;
    if (csv->len - csv->pos >= 3 && memcmp(csv->data + csv->pos, "\xEF\xBB\xBF", 3) == 0) {
        csv->pos += 3;
        csv->bom = 1;
    }
}

te_csv *te_csv_new(const char *name, const char *data, size_t len, te_error *err)
{
    if (!data && len) {
        te_fail(err, TE_ERR_ARG, name, 0, "no data");
        return NULL;
    }
    te_csv *csv = make(name, err);
    if (!csv)
        return NULL;
    csv->data = data ? data : "";
    csv->len = len;
    csv->eof = 1;
    check_bom(csv); /* known at once, as the callers of a buffer expect */
    return csv;
}

te_csv *te_csv_open(const char *name, FILE *f, te_error *err)
{
    if (!f) {
        te_fail(err, TE_ERR_ARG, name, 0, "no stream");
        return NULL;
    }
    te_csv *csv = make(name, err);
    if (csv) {
        csv->in = f;
        csv->data = "";
    }
    return csv;
}

void te_csv_free(te_csv *csv)
{
    if (!csv)
        return;
    free(csv->own);
    free(csv->buf);
    free(csv->fields);
    free(csv);
}

void te_csv_expect_fields(te_csv *csv, size_t n)
{
    csv->expect = n;
}

int te_csv_had_bom(const te_csv *csv)
{
    return csv->bom;
}

size_t te_csv_n_fields(const te_csv *csv)
{
    return csv->n_fields;
}

const char *te_csv_field(const te_csv *csv, size_t i, size_t *len)
{
    if (i >= csv->n_fields)
        return NULL;
    if (len)
        *len = csv->fields[i].len;
    return csv->buf + csv->fields[i].off;
}

long te_csv_line(const te_csv *csv)
{
    return csv->rec_line;
}

/* ------------------------------------------------------------- the input */

/* Stream: drop the bytes before pos and read more, up to a line break so that
 * a record is handed on as soon as its line has come. 0, or -1 (err set). */
static int refill(te_csv *csv, te_error *err)
{
    size_t keep = csv->len - csv->pos;
    if (csv->pos && keep)
        memmove(csv->own, csv->own + csv->pos, keep);
    csv->len = keep;
    csv->pos = 0;
    if (te_grow((void **)&csv->own, &csv->cap, keep + 65536, 1) != 0) {
        te_fail(err, TE_ERR_NOMEM, csv->name, csv->line, "out of memory");
        return -1;
    }
    csv->data = csv->own;
    int c = 0;
    while (csv->len < csv->cap && (c = getc(csv->in)) != EOF) {
        csv->own[csv->len++] = (char)c;
        if (c == '\n')
            break;
    }
    if (c == EOF) {
        if (ferror(csv->in)) {
            te_fail(err, TE_ERR_IO, csv->name, csv->line, "cannot read: %s", strerror(errno));
            return -1;
        }
        csv->eof = 1;
    }
    return 0;
}

/* Consume the byte at pos (between records), counting line breaks as LF, CRLF
 * or a lone CR. */
static void consume(te_csv *csv)
{
    char c = csv->data[csv->pos++];
    if (c == '\r' || (c == '\n' && !csv->prev_cr))
        csv->line++;
    csv->prev_cr = c == '\r';
}

/* 1 when there is a byte at pos, 0 at the end of the input, -1 on error. */
static int have_byte(te_csv *csv, te_error *err)
{
    while (csv->pos >= csv->len) {
        if (csv->eof)
            return 0;
        if (refill(csv, err) != 0)
            return -1;
    }
    return 1;
}

/* Skip blank lines (and the LF of a CRLF that ended the last record). 1 when
 * a record starts at pos, 0 at the end, -1 on error. */
static int skip_blank(te_csv *csv, te_error *err)
{
    int r;
    while ((r = have_byte(csv, err)) == 1) {
        char c = csv->data[csv->pos];
        if (c != '\r' && c != '\n')
            return 1;
        consume(csv);
    }
    return r;
}

/* Skip the rest of the line at pos, its line break included. 0, or -1. */
static int skip_line(te_csv *csv, te_error *err)
{
    int r;
    while ((r = have_byte(csv, err)) == 1) {
        char c = csv->data[csv->pos];
        consume(csv);
        if (c == '\r' || c == '\n')
            return 0;
    }
    return r;
}

/* ------------------------------------------------------------ a record */

static int push(te_csv *csv, const char *s, size_t n)
{
    if (n > SIZE_MAX - csv->used - 1 ||
        te_grow((void **)&csv->buf, &csv->cap_buf, csv->used + n + 1, 1) != 0)
        return -1;
    memcpy(csv->buf + csv->used, s, n);
    csv->used += n;
    return 0;
}

/* Close the field that started at buf offset `start`, raw end at scan. */
static int end_field(te_csv *csv, size_t start)
{
    if (te_grow((void **)&csv->fields, &csv->cap_fields, csv->n_fields + 1,
                sizeof *csv->fields) != 0 ||
        push(csv, "", 1) != 0)
        return -1;
    csv->fields[csv->n_fields++] =
        (struct te_csv_field){start, csv->used - 1 - start, csv->scan};
    return 0;
}

static void begin_record(te_csv *csv)
{
    csv->st = S_FIELD;
    csv->scan = 0;
    csv->scan_line = csv->rec_line = csv->line;
    csv->scan_cr = 0; /* a record never starts with a line break */
    csv->used = 0;
    csv->n_fields = 0;
}

/* Read the record at pos on from where it was left (scan). Runs of ordinary
 * bytes are copied at once; each special byte moves the state. */
static rec_end read_record(te_csv *csv)
{
    const char *d = csv->data + csv->pos;
    size_t n = csv->len - csv->pos;
    size_t start = csv->n_fields ? csv->fields[csv->n_fields - 1].off +
                                       csv->fields[csv->n_fields - 1].len + 1
                                 : 0;
    for (;;) {
        if (csv->scan >= n) {
            if (!csv->eof)
                return R_MORE;
            if (csv->st == S_QUOTED)
                return R_UNCLOSED;
            return end_field(csv, start) != 0 ? R_NOMEM : R_ROW;
        }
        size_t i = csv->scan;
        char c = d[i];
        if (csv->st == S_QUOTED) {
            size_t run = i;
            while (run < n && d[run] != '"' && d[run] != '\r' && d[run] != '\n')
                run++;
            if (run > i) {
                if (push(csv, d + i, run - i) != 0)
                    return R_NOMEM;
                csv->scan = run;
                csv->scan_cr = 0;
                continue;
            }
            csv->scan++;
            if (c == '"') {
                csv->st = S_QUOTE;
                csv->scan_cr = 0;
                continue;
            }
            /* A line break inside quotes belongs to the field, as written. */
            if (c == '\r' || !csv->scan_cr)
                csv->scan_line++;
            csv->scan_cr = c == '\r';
            if (push(csv, &c, 1) != 0)
                return R_NOMEM;
            continue;
        }
        if (csv->st == S_FIELD && c == '"') {
            csv->st = S_QUOTED;
            csv->opened = csv->scan_line;
            csv->scan++;
            continue;
        }
        if (csv->st == S_QUOTE && c == '"') { /* "" inside quotes */
            csv->st = S_QUOTED;
            csv->scan++;
            if (push(csv, &c, 1) != 0)
                return R_NOMEM;
            continue;
        }
        if (c == ',' || c == '\r' || c == '\n') {
            if (end_field(csv, start) != 0)
                return R_NOMEM;
            start = csv->used;
            csv->scan++;
            csv->st = S_FIELD;
            if (c == ',')
                continue;
            csv->scan_line++;
            csv->scan_cr = c == '\r';
            return R_ROW;
        }
        if (csv->st == S_QUOTE) {
            csv->after_line = csv->scan_line;
            return R_AFTER;
        }
        /* Unquoted text, quotes included, up to a separator. */
        size_t run = i;
        while (run < n && d[run] != ',' && d[run] != '\r' && d[run] != '\n')
            run++;
        if (push(csv, d + i, run - i) != 0)
            return R_NOMEM;
        csv->scan = run;
        csv->st = S_PLAIN;
    }
}

/* The first byte of data[from..to) that is a NUL or not UTF-8, or to. */
static size_t first_bad(const char *data, size_t from, size_t to)
{
    size_t valid = from + te_utf8_valid_prefix(data + from, to - from);
    const char *nul = memchr(data + from, '\0', valid - from);
    return nul ? (size_t)(nul - data) : valid;
}

/* Report the bad byte at offset `bad` of the record at pos. */
static void bad_text(te_csv *csv, size_t bad, te_error *err)
{
    const char *d = csv->data;
    long line = csv->rec_line;
    size_t ls = csv->pos;
    for (size_t i = csv->pos; i < bad; i++) {
        if (d[i] == '\n' || (d[i] == '\r' && (i + 1 >= csv->len || d[i + 1] != '\n'))) {
            line++;
            ls = i + 1;
        }
    }
    if (d[bad] == '\0')
        te_fail(err, TE_ERR_FORMAT, csv->name, line, "NUL byte: not a text file");
    else
        te_fail(err, TE_ERR_FORMAT, csv->name, line,
                "invalid UTF-8 (byte 0x%02X at byte %zu of the line); the files must be UTF-8",
                (unsigned)(unsigned char)d[bad], bad - ls + 1);
}

/* Keep only the fields wholly before raw offset `limit` (from pos) that are
 * clean text: what a caller may still use of a broken record. */
static void keep_clean_fields(te_csv *csv, size_t limit)
{
    size_t bad = first_bad(csv->data, csv->pos, csv->pos + limit) - csv->pos;
    size_t k = 0;
    while (k < csv->n_fields && csv->fields[k].raw_end <= bad)
        k++;
    csv->n_fields = k;
}

/* A broken record: reading goes on at the line after its first line, looking
 * for a well-formed row. */
static te_csv_result broken_syntax(te_csv *csv, te_error *err)
{
    keep_clean_fields(csv, csv->scan);
    csv->resync = csv->rec_line;
    csv->line = csv->rec_line;
    return skip_line(csv, err) != 0 ? TE_CSV_FAIL : TE_CSV_BROKEN;
}

/* A record read in full: check its text; while resynchronising, a line
 * whose record has the wrong number of fields is skipped. */
static te_csv_result finish(te_csv *csv, te_error *err)
{
    size_t end = csv->pos + csv->scan;
    if (csv->resync && csv->expect && csv->n_fields != csv->expect) {
        te_fail(err, TE_ERR_FORMAT, csv->name, csv->rec_line,
                "line skipped: %zu field%s where a row has %zu (after the broken record of "
                "line %ld)",
                csv->n_fields, csv->n_fields == 1 ? "" : "s", csv->expect, csv->resync);
        csv->n_fields = 0;
        return skip_line(csv, err) != 0 ? TE_CSV_FAIL : TE_CSV_BROKEN;
    }
    csv->resync = 0;
    size_t bad = first_bad(csv->data, csv->pos, end);
    te_csv_result res = TE_CSV_ROW;
    if (bad < end) {
        bad_text(csv, bad, err);
        keep_clean_fields(csv, end - csv->pos);
        res = TE_CSV_BROKEN;
    }
    csv->pos = end;
    csv->line = csv->scan_line;
    csv->prev_cr = csv->scan_cr;
    return res;
}

te_csv_result te_csv_next(te_csv *csv, te_error *err)
{
    if (!csv->started) {
        /* Enough bytes to tell a BOM, without waiting on a short first line. */
        while (!csv->eof && csv->len < 3 && memcmp(csv->data, "\xEF\xBB\xBF", csv->len) == 0)
            if (refill(csv, err) != 0)
                return TE_CSV_FAIL;
        check_bom(csv);
    }
    int r = skip_blank(csv, err);
    if (r <= 0) {
        csv->n_fields = 0;
        return r < 0 ? TE_CSV_FAIL : TE_CSV_END;
    }
    begin_record(csv);
    for (;;) {
        switch (read_record(csv)) {
        case R_ROW:
            return finish(csv, err);
        case R_NOMEM:
            te_fail(err, TE_ERR_NOMEM, csv->name, csv->rec_line, "out of memory");
            return TE_CSV_FAIL;
        case R_UNCLOSED:
            te_fail(err, TE_ERR_FORMAT, csv->name, csv->opened,
                    "a quoted field opened here is never closed");
            return broken_syntax(csv, err);
        case R_AFTER:
            if (csv->after_line == csv->opened)
                te_fail(err, TE_ERR_FORMAT, csv->name, csv->opened,
                        "text after the closing quote of a field (write a quote inside "
                        "quotes as \"\")");
            else
                te_fail(err, TE_ERR_FORMAT, csv->name, csv->opened,
                        "a quoted field opened here ends on line %ld with text after its "
                        "closing quote (write a quote inside quotes as \"\")",
                        csv->after_line);
            return broken_syntax(csv, err);
        case R_MORE:
            if (csv->len - csv->pos >= TE_CSV_MAX_RECORD) {
                te_fail(err, TE_ERR_FORMAT, csv->name, csv->rec_line,
                        "a record longer than %zu MiB (a quote never closed?)",
                        TE_CSV_MAX_RECORD >> 20);
                return broken_syntax(csv, err);
            }
            if (refill(csv, err) != 0)
                return TE_CSV_FAIL;
            break;
        }
    }
}

/* ---------------------------------------------------------------- files */

te_status te_read_file(const char *path, char **data, size_t *len, te_error *err)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return te_fail(err, TE_ERR_IO, path, 0, "cannot open: %s", strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    te_status st = TE_OK;
    for (;;) {
        if (te_grow((void **)&buf, &cap, n + 65536 + 1, 1) != 0) {
            st = te_fail(err, TE_ERR_NOMEM, path, 0, "out of memory reading the file");
            break;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                st = te_fail(err, TE_ERR_IO, path, 0, "cannot read: %s", strerror(errno));
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    if (st != TE_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return TE_OK;
}
