/* encoding.c - reviews read through iconv (encoding.h). */
#define _GNU_SOURCE /* fopencookie */
#include "pd_encoding.h"
#include "pd_internal.h"

#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct decoder {
    FILE *src;
    iconv_t cd;
    char in[16384];
    size_t n;  /* bytes waiting in in[] */
    bool eof;
} decoder;

static ssize_t decode_read(void *cookie, char *buf, size_t size)
{
    decoder *d = cookie;
    for (;;) {
        char *ip = d->in, *op = buf;
        size_t left = size;
        if (d->n) {
            size_t r = iconv(d->cd, &ip, &d->n, &op, &left);
            int e = errno;
            memmove(d->in, ip, d->n);
            if (op > buf) return op - buf;
            if (r == (size_t)-1 && e == EILSEQ) {
                errno = EILSEQ;
                return -1;
            }
            if (r == (size_t)-1 && e == E2BIG) {
                errno = EIO; /* no room for one character: not with stdio's buffers */
                return -1;
            }
            /* EINVAL: a character cut at the buffer's end: read more */
        }
        if (d->eof) {
            if (d->n == 0) return 0;
            errno = EILSEQ; /* the file ends inside a character */
            return -1;
        }
        size_t got = fread(d->in + d->n, 1, sizeof d->in - d->n, d->src);
        if (got == 0 && ferror(d->src)) return -1;
        d->eof = got == 0;
        d->n += got;
    }
}

static int decode_close(void *cookie)
{
    decoder *d = cookie;
    int rc = d->src == stdin ? 0 : fclose(d->src);
    iconv_close(d->cd);
    free(d);
    return rc;
}

FILE *pd_decoded(FILE *f, const char *encoding, pd_error *err)
{
    decoder *d = calloc(1, sizeof *d);
    if (!d) {
        pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->src = f;
    d->cd = iconv_open("UTF-8", encoding);
    if (d->cd == (iconv_t)-1) {
        pdi_set_error(err, PD_ERR_ARG, "--encoding %s: not an encoding this system's iconv knows (e.g. gb18030, gbk, utf-16)",
                 encoding);
        free(d);
        return NULL;
    }
    cookie_io_functions_t io = {.read = decode_read, .close = decode_close};
    FILE *out = fopencookie(d, "r", io);
    if (!out) {
        pdi_set_error(err, PD_ERR_NOMEM, "out of memory");
        iconv_close(d->cd);
        free(d);
    }
    return out;
}

/* The length of the longest prefix of s[0..n) that is UTF-8, a character
 * cut at the end counted as valid (the buffer ends inside the file). */
static size_t utf8_prefix(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                  : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len) return i;
        for (size_t k = 1; k < len; k++) {
            if (i + k == n) return n; /* cut at the end */
            if ((s[i + k] & 0xC0) != 0x80) return i;
        }
        i += len;
    }
    return n;
}

/* Whether s[0..n) reads as GB18030 (a character cut at the end allowed). */
static bool reads_as_gb18030(const char *s, size_t n)
{
    iconv_t cd = iconv_open("UTF-8", "GB18030");
    if (cd == (iconv_t)-1) return false;
    char out[4096], *ip = (char *)s;
    bool ok = true;
    while (n) {
        char *op = out;
        size_t left = sizeof out;
        if (iconv(cd, &ip, &n, &op, &left) != (size_t)-1) break;
        if (errno == E2BIG) continue;
        ok = errno == EINVAL; /* a character cut at the end is fine; EILSEQ is not GB18030 */
        break;
    }
    iconv_close(cd);
    return ok;
}

bool pd_encoding_check(FILE *f, const char *name, pd_error *err)
{
    char buf[65536];
    long at = ftell(f);
    if (at < 0) return true; /* a pipe: not looked at */
    size_t n = fread(buf, 1, sizeof buf, f);
    bool ok = true;
    if ((n >= 2 && (unsigned char)buf[0] == 0xFF && (unsigned char)buf[1] == 0xFE) ||
        (n >= 2 && (unsigned char)buf[0] == 0xFE && (unsigned char)buf[1] == 0xFF)) {
        pdi_set_error(err, PD_ERR_FORMAT, "%s: the file is UTF-16 (it starts with UTF-16's byte order mark), not UTF-8: read it with "
                 "--encoding utf-16", name);
        ok = false;
    } else {
        size_t valid = utf8_prefix((const unsigned char *)buf, n);
        if (valid < n && reads_as_gb18030(buf, n)) {
            pdi_set_error(err, PD_ERR_FORMAT, "%s: the file is not UTF-8 (byte %zu) but reads cleanly as GB18030 (as Excel saves a "
                     "CSV on a Chinese Windows machine): read it with --encoding gb18030", name, valid + 1);
            ok = false;
        }
    }
    clearerr(f);
    fseek(f, at, SEEK_SET);
    return ok;
}
