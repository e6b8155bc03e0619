/* csv.c - an RFC 4180 reader that knows line numbers, and file reading. */
#include "te_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct te_csv {
    const char *name;
    const char *data;
    size_t len, pos;
    long line; /* physical line at pos, from 1 */
    int bom;
    /* The current record: fields back to back in buf, each NUL-terminated;
     * offsets rather than pointers because buf moves when it grows. */
    char *buf;
    size_t used, cap;
    struct te_csv_field { size_t off, len; } *fields;
    size_t n_fields, cap_fields;
    long rec_line;
};

/* Line of byte offset `upto`, counting LF, CRLF and a lone CR as one break
 * each (the same breaks the reader counts). */
static long line_of(const char *data, size_t upto)
{
    long line = 1;
    for (size_t i = 0; i < upto; i++) {
        if (data[i] == '\n' || (data[i] == '\r' && (i + 1 >= upto || data[i + 1] != '\n')))
            line++;
    }
    return line;
}

te_csv *te_csv_new(const char *name, const char *data, size_t len, te_error *err)
{
    if (!data && len) {
        te_fail(err, TE_ERR_ARG, name, 0, "no data");
        return NULL;
    }
    size_t start = 0;
    int bom = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        start = 3;
        bom = 1;
    }
    const char *nul = len ? memchr(data, '\0', len) : NULL;
    if (nul) {
        te_fail(err, TE_ERR_FORMAT, name, line_of(data, (size_t)(nul - data)),
                "NUL byte: not a text file");
        return NULL;
    }
    size_t valid = start + te_utf8_valid_prefix(data + start, len - start);
    if (valid < len) {
        /* Report the byte within its line, which is what an editor shows. */
        size_t ls = valid;
        while (ls > 0 && data[ls - 1] != '\n' && data[ls - 1] != '\r')
            ls--;
        te_fail(err, TE_ERR_FORMAT, name, line_of(data, valid),
                "invalid UTF-8 (byte 0x%02X at byte %zu of the line); the files must be UTF-8",
                (unsigned)(unsigned char)data[valid], valid - ls + 1);
        return NULL;
    }
    te_csv *csv = calloc(1, sizeof *csv);
    if (!csv) {
        te_fail(err, TE_ERR_NOMEM, name, 0, "out of memory");
        return NULL;
    }
    csv->name = name;
    csv->data = data;
    csv->len = len;
    csv->pos = start;
    csv->line = 1;
    csv->bom = bom;
    return csv;
}

void te_csv_free(te_csv *csv)
{
    if (!csv)
        return;
    free(csv->buf);
    free(csv->fields);
    free(csv);
}

int te_csv_had_bom(const te_csv *csv)
{
    return csv->bom;
}

static int nomem(const te_csv *csv, te_error *err)
{
    te_fail(err, TE_ERR_NOMEM, csv->name, csv->line, "out of memory");
    return -1;
}

static int append(te_csv *csv, const char *s, size_t n)
{
    if (n > SIZE_MAX - csv->used - 1 ||
        te_grow((void **)&csv->buf, &csv->cap, csv->used + n + 1, 1) != 0)
        return -1;
    if (n)
        memcpy(csv->buf + csv->used, s, n);
    csv->used += n;
    return 0;
}

/* Consume one line break at pos (CRLF, LF or CR); returns 1 if there was one. */
static int eat_break(te_csv *csv)
{
    if (csv->pos >= csv->len)
        return 0;
    char c = csv->data[csv->pos];
    if (c == '\r') {
        csv->pos++;
        if (csv->pos < csv->len && csv->data[csv->pos] == '\n')
            csv->pos++;
    } else if (c == '\n')
        csv->pos++;
    else
        return 0;
    csv->line++;
    return 1;
}

/* The body of a quoted field, pos just past the opening quote. */
static int read_quoted(te_csv *csv, te_error *err)
{
    long opened = csv->line;
    for (;;) {
        size_t run = csv->pos;
        while (run < csv->len && csv->data[run] != '"' && csv->data[run] != '\r' &&
               csv->data[run] != '\n')
            run++;
        if (append(csv, csv->data + csv->pos, run - csv->pos) != 0)
            return nomem(csv, err);
        csv->pos = run;
        if (run >= csv->len) {
            te_fail(err, TE_ERR_FORMAT, csv->name, opened,
                    "a quoted field opened here is never closed");
            return -1;
        }
        if (csv->data[run] == '"') {
            if (run + 1 < csv->len && csv->data[run + 1] == '"') {
                if (append(csv, "\"", 1) != 0)
                    return nomem(csv, err);
                csv->pos += 2;
                continue;
            }
            csv->pos++;
            break;
        }
        /* A line break inside quotes belongs to the field, as written. */
        size_t from = csv->pos;
        eat_break(csv);
        if (append(csv, csv->data + from, csv->pos - from) != 0)
            return nomem(csv, err);
    }
    if (csv->pos < csv->len && csv->data[csv->pos] != ',' && csv->data[csv->pos] != '\r' &&
        csv->data[csv->pos] != '\n') {
        te_fail(err, TE_ERR_FORMAT, csv->name, csv->line,
                "text after the closing quote of a field (write a quote inside quotes as \"\")");
        return -1;
    }
    return 0;
}

int te_csv_next(te_csv *csv, te_error *err)
{
    while (eat_break(csv))
        ; /* blank lines */
    if (csv->pos >= csv->len)
        return 0;
    csv->rec_line = csv->line;
    csv->n_fields = 0;
    csv->used = 0;
    for (;;) {
        if (te_grow((void **)&csv->fields, &csv->cap_fields, csv->n_fields + 1,
                    sizeof *csv->fields) != 0)
            return nomem(csv, err);
        size_t start = csv->used;
        if (csv->pos < csv->len && csv->data[csv->pos] == '"') {
            csv->pos++;
            if (read_quoted(csv, err) != 0)
                return -1;
        } else {
            /* A quote inside an unquoted field is taken literally, as most
             * readers do. */
            size_t run = csv->pos;
            while (run < csv->len && csv->data[run] != ',' && csv->data[run] != '\r' &&
                   csv->data[run] != '\n')
                run++;
            if (append(csv, csv->data + csv->pos, run - csv->pos) != 0)
                return nomem(csv, err);
            csv->pos = run;
        }
        if (append(csv, "", 0) != 0)
            return nomem(csv, err);
        csv->buf[csv->used++] = '\0';
        csv->fields[csv->n_fields].off = start;
        csv->fields[csv->n_fields].len = csv->used - 1 - start;
        csv->n_fields++;
        if (csv->pos < csv->len && csv->data[csv->pos] == ',') {
            csv->pos++;
            continue;
        }
        eat_break(csv);
        return 1;
    }
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
