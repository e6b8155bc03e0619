/* utf8.c - the one reading of UTF-8 (RFC 3629: no overlong form, no
 * surrogate, nothing past U+10FFFF) for the library and the programs over it. */
#include "pd_internal.h"

size_t pdi_utf8_char(const uint8_t *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if (!pdi_utf8_is_continuation(s[i])) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    /* overlong forms, surrogates, beyond U+10FFFF */
    if (v < min || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF) return 0;
    *cp = v;
    return len;
}

size_t pdi_utf8_put(uint32_t cp, char *out)
{
    uint8_t *o = (uint8_t *)out;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

size_t pdi_utf8_check(const void *text, size_t n)
{
    const uint8_t *s = text;
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = pdi_utf8_char(s + i, n - i, &cp);
        if (len == 0) return i;
        i += len;
    }
    return n;
}

int32_t pdi_utf8_count(const char *s, size_t n)
{
    int32_t c = 0;
    for (size_t i = 0; i < n; i++) c += !pdi_utf8_is_continuation((uint8_t)s[i]);
    return c;
}

size_t pd_utf8_valid_prefix(const char *s, size_t n)
{
    return s ? pdi_utf8_check(s, n) : 0;
}

size_t pd_utf8_char(const char *s, size_t n, uint32_t *cp)
{
    uint32_t ignored;
    return s ? pdi_utf8_char((const uint8_t *)s, n, cp ? cp : &ignored) : 0;
}
