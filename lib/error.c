/* error.c - the error object, status and weight type names, and small shared helpers. */
#include "pd_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pd_status_name(pd_status code)
{
    switch (code) {
    case PD_OK: return "ok";
    case PD_ERR_IO: return "i/o error";
    case PD_ERR_FORMAT: return "format error";
    case PD_ERR_UNSUPPORTED: return "unsupported";
    case PD_ERR_SHAPE: return "shape error";
    case PD_ERR_RANGE: return "out of range";
    case PD_ERR_NOMEM: return "out of memory";
    case PD_ERR_ARG: return "invalid argument";
    case PD_ERR_CONTEXT: return "context full";
    case PD_ERR_INTERNAL: return "internal error";
    case PD_ERR_LIMIT: return "limit exceeded";
    }
    return "unknown status";
}

static const char *const QUANT_NAMES[] = {[PD_QUANT_NONE] = "none", [PD_QUANT_Q8_0] = "q8_0", [PD_QUANT_Q4_0] = "q4_0",
                                          [PD_QUANT_Q4_1] = "q4_1", [PD_QUANT_Q4_64] = "q4_64"};
#define N_QUANT ((int)(sizeof QUANT_NAMES / sizeof QUANT_NAMES[0]))

const char *pd_quant_type_name(pd_weight_quant type)
{
    return (int)type >= 0 && (int)type < N_QUANT ? QUANT_NAMES[type] : NULL;
}

pd_status pd_quant_type_from_name(const char *name, pd_weight_quant *type, pd_error *err)
{
    if (!name || !type) return pdi_set_error(err, PD_ERR_ARG, "a weight type: NULL argument");
    for (int k = 0; k < N_QUANT; k++)
        if (strcmp(name, QUANT_NAMES[k]) == 0) {
            *type = (pd_weight_quant)k;
            return PD_OK;
        }
    char names[64] = "";
    for (int k = 0; k < N_QUANT; k++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k == 0 ? "" : k + 1 < N_QUANT ? ", " : " or ",
                 QUANT_NAMES[k]);
    return pdi_set_error(err, PD_ERR_ARG, "no weight type '%.64s' (%s)", name, names);
}

void pd_free(void *ptr) { free(ptr); }

pd_status pdi_set_error(pd_error *err, pd_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Append src to dst (capacity cap, length *len), truncating; dst stays NUL-terminated. */
static void append_truncated(char *dst, size_t cap, size_t *len, const char *src)
{
    size_t n = strlen(src);
    if (n > cap - 1 - *len) n = cap - 1 - *len;
    memcpy(dst + *len, src, n);
    *len += n;
    dst[*len] = '\0';
}

void pdi_error_prefix(pd_error *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[PD_ERROR_MESSAGE_SIZE], old[PD_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    old[sizeof old - 1] = '\0';
    size_t len = 0;
    err->message[0] = '\0';
    append_truncated(err->message, sizeof err->message, &len, prefix);
    append_truncated(err->message, sizeof err->message, &len, ": ");
    append_truncated(err->message, sizeof err->message, &len, old);
}

void *pdi_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need == 0) need = 1; /* so that success is never NULL */
    if (need <= *cap) return p;
    size_t c = *cap > 16 ? *cap : 16, bytes;
    while (c < need) {
        if (c > SIZE_MAX / 2) return NULL;
        c *= 2;
    }
    if (!pdi_mul_size(c, elem, &bytes)) return NULL;
    void *q = realloc(p, bytes);
    if (q) *cap = c;
    return q;
}

bool pdi_buf_append(pdi_buf *b, const void *s, size_t n)
{
    char *d = b->failed || n > SIZE_MAX - 1 - b->len ? NULL : pdi_grow(b->data, &b->cap, b->len + n + 1, 1);
    if (!d) {
        b->failed = true;
        return false;
    }
    b->data = d;
    if (n) memcpy(d + b->len, s, n);
    b->len += n;
    d[b->len] = '\0';
    return true;
}

void pdi_buf_csv_field(pdi_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        pdi_buf_append(b, s, strlen(s));
        return;
    }
    pdi_buf_append(b, "\"", 1);
    for (const char *q; (q = strchr(s, '"')); s = q + 1) {
        pdi_buf_append(b, s, (size_t)(q - s));
        pdi_buf_append(b, "\"\"", 2);
    }
    pdi_buf_append(b, s, strlen(s));
    pdi_buf_append(b, "\"", 1);
}

pd_status pdi_read_file(const char *path, char **data, size_t *len, pd_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pdi_set_error(err, PD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0, got = 1;
    while (got) {
        char *bigger = pdi_grow(buf, &cap, n + (1 << 16) + 1, 1); /* room for a read of 64 KiB and the NUL */
        if (!bigger) {
            free(buf);
            fclose(f);
            return pdi_set_error(err, PD_ERR_NOMEM, "%s: out of memory reading the file", path);
        }
        buf = bigger;
        got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return pdi_set_error(err, PD_ERR_IO, "%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return PD_OK;
}

char *pdi_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t at = a;
    if (a == 0 || dir[a - 1] != '/') p[at++] = '/';
    memcpy(p + at, name, b + 1);
    return p;
}
