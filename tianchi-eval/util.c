/* util.c - error object, string pool, growable arrays, UTF-8 helpers. */
#include "te_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ errors */

const char *te_status_name(te_status code)
{
    switch (code) {
    case TE_OK: return "ok";
    case TE_ERR_IO: return "i/o error";
    case TE_ERR_FORMAT: return "format error";
    case TE_ERR_NOMEM: return "out of memory";
    case TE_ERR_ARG: return "invalid argument";
    }
    return "unknown status";
}

void te_free(void *ptr)
{
    free(ptr);
}

te_status te_fail(te_error *err, te_status code, const char *file, long line, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    size_t used = 0;
    int n = 0;
    if (file && line > 0)
        n = snprintf(err->message, sizeof err->message, "%s:%ld: ", file, line);
    else if (file)
        n = snprintf(err->message, sizeof err->message, "%s: ", file);
    if (n > 0)
        used = (size_t)n < sizeof err->message ? (size_t)n : sizeof err->message - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + used, sizeof err->message - used, fmt, ap);
    va_end(ap);
    /* A long file name may have cut a character: keep the message valid UTF-8. */
    size_t len = strlen(err->message);
    err->message[te_utf8_valid_prefix(err->message, len)] = '\0';
    return code;
}

const char *te_snippet(const char *s, size_t len, char *buf, size_t bufsize, size_t max)
{
    if (bufsize < 4) {
        if (bufsize)
            buf[0] = '\0';
        return buf;
    }
    if (max > bufsize - 4)
        max = bufsize - 4;
    size_t n = len;
    int cut = 0;
    if (n > max) {
        n = max;
        cut = 1;
        /* Back up to the first byte of a character. */
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    n = te_utf8_valid_prefix(s, n);
    memcpy(buf, s, n);
    if (cut)
        memcpy(buf + n, "...", 3), n += 3;
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------------------------------ memory */

struct te_pool_block {
    te_pool_block *next;
    size_t used, cap;
    char data[];
};

#define TE_POOL_BLOCK 65536

static char *pool_alloc(te_pool *pool, size_t size)
{
    te_pool_block *b = pool->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > TE_POOL_BLOCK ? size : TE_POOL_BLOCK;
        if (cap > SIZE_MAX - sizeof *b)
            return NULL;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        /* A big string gets its own block behind the head, so the head's free
         * space stays usable. */
        if (pool->head && size > TE_POOL_BLOCK) {
            b->next = pool->head->next;
            pool->head->next = b;
        } else {
            b->next = pool->head;
            pool->head = b;
        }
    }
    char *p = b->data + b->used;
    b->used += size;
    return p;
}

char *te_pool_strndup(te_pool *pool, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *p = pool_alloc(pool, len + 1);
    if (!p)
        return NULL;
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *te_pool_printf(te_pool *pool, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = pool_alloc(pool, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void te_pool_free(te_pool *pool)
{
    te_pool_block *b = pool->head;
    while (b) {
        te_pool_block *next = b->next;
        free(b);
        b = next;
    }
    pool->head = NULL;
}

int te_grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*ptr, n * elem);
    if (!p)
        return -1;
    *ptr = p;
    *cap = n;
    return 0;
}

/* ------------------------------------------------------------------- UTF-8 */

size_t te_utf8_valid_prefix(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            if (c == 0xE0)
                lo = 0xA0; /* overlong */
            else if (c == 0xED)
                hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            if (c == 0xF0)
                lo = 0x90; /* overlong */
            else if (c == 0xF4)
                hi = 0x8F; /* past U+10FFFF */
        } else
            return i;
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += n;
    }
    return i;
}

size_t te_utf8_next(const char *str, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] < 0xE0) {
        *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (s[0] < 0xF0) {
        *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
          ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}

/* East Asian wide and fullwidth ranges (the common blocks, enough for tables). */
static int is_wide(uint32_t c)
{
    return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
           (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
           (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
           (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
           (c >= 0x20000 && c <= 0x3FFFD);
}

size_t te_display_width(const char *s)
{
    size_t w = 0;
    while (*s) {
        uint32_t cp;
        s += te_utf8_next(s, &cp);
        w += is_wide(cp) ? 2 : 1;
    }
    return w;
}

/* ------------------------------------------------------------------ labels */

const char *const te_categories[] = {
    "包装", "成分", "尺寸", "服务", "功效", "价格", "气味",
    "使用体验", "物流", "新鲜度", "真伪", "整体", "其他",
};
const size_t te_n_categories = sizeof te_categories / sizeof te_categories[0];

const char *const te_polarities[] = {"正面", "中性", "负面"};
const size_t te_n_polarities = sizeof te_polarities / sizeof te_polarities[0];

int te_label_index(te_axis axis, const char *label)
{
    const char *const *set = axis == TE_AXIS_CATEGORY ? te_categories : te_polarities;
    size_t n = axis == TE_AXIS_CATEGORY ? te_n_categories : te_n_polarities;
    for (size_t i = 0; i < n; i++)
        if (strcmp(set[i], label) == 0)
            return (int)i;
    return -1;
}
