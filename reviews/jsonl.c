/* jsonl.c - one JSON value per line, read safely: bounded line length,
 * UTF-8 checked before parsing, types checked with messages that name the
 * key, the line and the file. */
#include "pd_jsonl.h"
#include "pd_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void pd_jsonl_init(pd_jsonl *r, FILE *f, const char *name)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->name = name;
}

void pd_jsonl_free(pd_jsonl *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

pd_jsonl_status pd_jsonl_bad(pd_jsonl *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->what, sizeof r->what, fmt, ap);
    va_end(ap);
    return PD_JSONL_BAD;
}

typedef enum { LINE_OK, LINE_END, LINE_LONG, LINE_ERROR } line_status;

/* The next physical line into r->buf (NUL-terminated, without its line break
 * or a CR before it). A line over the limit is read to its end but not kept,
 * so memory stays bounded whatever the input. */
static line_status read_line(pd_jsonl *r, size_t *len)
{
    size_t max = r->max_line ? r->max_line : PD_JSONL_MAX_LINE, n = 0;
    bool too_long = false;
    int c = getc(r->f);
    if (c == EOF) {
        if (!ferror(r->f)) return LINE_END;
        snprintf(r->what, sizeof r->what, "cannot read: %s", strerror(errno));
        return LINE_ERROR;
    }
    r->line++;
    for (; c != EOF && c != '\n'; c = getc(r->f)) {
        if (too_long) continue;
        if (n > max) { /* one byte over is kept: it may be the CR of a CRLF */
            too_long = true;
            continue;
        }
        if (n + 1 >= r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 256;
            if (cap > max + 2) cap = max + 2;
            char *b = realloc(r->buf, cap);
            if (!b) {
                snprintf(r->what, sizeof r->what, "out of memory for a line of %zu bytes", n + 1);
                return LINE_ERROR;
            }
            r->buf = b;
            r->cap = cap;
        }
        r->buf[n++] = (char)c;
    }
    if (ferror(r->f)) {
        snprintf(r->what, sizeof r->what, "cannot read: %s", strerror(errno));
        return LINE_ERROR;
    }
    if (!too_long && n && r->buf[n - 1] == '\r') n--;
    if (too_long || n > max) {
        snprintf(r->what, sizeof r->what, "the line is longer than %zu bytes (the limit)", max);
        return LINE_LONG;
    }
    if (!r->buf) { /* an empty first line: nothing allocated yet */
        if (!(r->buf = malloc(1))) {
            snprintf(r->what, sizeof r->what, "out of memory");
            return LINE_ERROR;
        }
        r->cap = 1;
    }
    r->buf[n] = '\0';
    *len = n;
    return LINE_OK;
}

/* A NUL byte or invalid UTF-8 anywhere in the line, by 1-based byte offset. */
static bool check_bytes(pd_jsonl *r, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (p[i] == 0) {
            pd_jsonl_bad(r, "a NUL byte at byte %zu", i + 1);
            return false;
        }
        uint32_t cp;
        size_t k = pdi_utf8_char(p + i, n - i, &cp);
        if (k == 0) {
            pd_jsonl_bad(r, "invalid UTF-8 at byte %zu", i + 1);
            return false;
        }
        i += k;
    }
    return true;
}

pd_jsonl_status pd_jsonl_next(pd_jsonl *r, json_t **value)
{
    *value = NULL;
    size_t n = 0;
    for (;;) {
        line_status ls = read_line(r, &n);
        if (ls == LINE_END) return PD_JSONL_END;
        if (ls == LINE_ERROR) return PD_JSONL_FAIL;
        if (ls == LINE_LONG) return PD_JSONL_BAD;
        if (strspn(r->buf, " \t\r") < n) break; /* blank lines separate nothing */
    }
    const char *s = r->buf;
    if (r->line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) { /* a byte order mark */
        s += 3;
        n -= 3;
    }
    if (!check_bytes(r, s, n)) return PD_JSONL_BAD;
    json_error_t je;
    *value = json_loadb(s, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!*value) return pd_jsonl_bad(r, "malformed JSON at column %d: %s", je.column, je.text);
    return PD_JSONL_OK;
}

/* ------------------------------------------------------------ type checks */

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

bool pd_jsonl_object(pd_jsonl *r, const json_t *v)
{
    if (json_is_object(v)) return true;
    pd_jsonl_bad(r, "expected a JSON object, got %s", type_name(v));
    return false;
}

/* obj[key], or NULL (with r->what set when it is required). */
static json_t *member(pd_jsonl *r, const json_t *obj, const char *key, bool required, bool *ok)
{
    json_t *v = json_object_get(obj, key);
    *ok = v || !required;
    if (!v && required) pd_jsonl_bad(r, "missing key \"%s\"", key);
    return v;
}

bool pd_jsonl_string(pd_jsonl *r, const json_t *obj, const char *key, bool required, const char **s, size_t *len)
{
    bool ok;
    json_t *v = member(r, obj, key, required, &ok);
    *s = NULL;
    if (len) *len = 0;
    if (!v) return ok;
    if (!json_is_string(v)) {
        pd_jsonl_bad(r, "\"%s\" must be a string, got %s", key, type_name(v));
        return false;
    }
    *s = json_string_value(v);
    if (len) *len = json_string_length(v);
    return true;
}

bool pd_jsonl_strings(pd_jsonl *r, const json_t *obj, const char *key, bool required, size_t max,
                       const char ***out, size_t *n)
{
    bool ok;
    json_t *v = member(r, obj, key, required, &ok);
    *out = NULL;
    *n = 0;
    if (!v) return ok;
    if (!json_is_array(v)) {
        pd_jsonl_bad(r, "\"%s\" must be an array of strings, got %s", key, type_name(v));
        return false;
    }
    size_t len = json_array_size(v);
    if (len > max) {
        pd_jsonl_bad(r, "\"%s\" has %zu entries, more than the limit of %zu", key, len, max);
        return false;
    }
    const char **s = malloc((len ? len : 1) * sizeof *s);
    if (!s) {
        pd_jsonl_bad(r, "out of memory for %zu entries of \"%s\"", len, key);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e)) {
            pd_jsonl_bad(r, "\"%s\"[%zu] must be a string, got %s", key, i, type_name(e));
            free(s);
            return false;
        }
        s[i] = json_string_value(e);
    }
    *out = s;
    *n = len;
    return true;
}

bool pd_jsonl_ids(pd_jsonl *r, const json_t *v, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (!json_is_array(v)) {
        pd_jsonl_bad(r, "expected a JSON array of integer ids, got %s", type_name(v));
        return false;
    }
    size_t len = json_array_size(v);
    int32_t *out = malloc((len ? len : 1) * sizeof *out);
    if (!out) {
        pd_jsonl_bad(r, "out of memory for %zu ids", len);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(v, i);
        json_int_t x = json_integer_value(e);
        if (!json_is_integer(e) || x < INT32_MIN || x > INT32_MAX) {
            if (json_is_integer(e)) pd_jsonl_bad(r, "id %zu (%lld) is outside the 32-bit range", i, (long long)x);
            else pd_jsonl_bad(r, "id %zu must be an integer, got %s", i, type_name(e));
            free(out);
            return false;
        }
        out[i] = (int32_t)x;
    }
    *ids = out;
    *n = len;
    return true;
}

bool pd_jsonl_id(pd_jsonl *r, const json_t *obj, const char *key, char *buf, const char **s)
{
    bool ok;
    json_t *v = member(r, obj, key, true, &ok);
    *s = NULL;
    if (!v) return false;
    if (json_is_integer(v)) {
        snprintf(buf, 24, "%lld", (long long)json_integer_value(v));
        *s = buf;
        return true;
    }
    if (!json_is_string(v)) {
        pd_jsonl_bad(r, "\"%s\" must be a string or an integer, got %s", key, type_name(v));
        return false;
    }
    *s = json_string_value(v);
    return true;
}
