/* text_width.c - display columns of UTF-8 text (pd_text_width), so that
 * tables of Chinese labels line up: a byte count pads a 2-column character
 * as if it took 3. */
#include "pocketdec_runtime.h"

#include <utf8proc.h>

size_t pd_text_width(const char *text, size_t len)
{
    size_t cols = 0, i = 0;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)text;
    while (text && i < len && p[i]) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0) { /* an invalid byte: one column, as a terminal shows U+FFFD */
            cols++;
            i++;
            continue;
        }
        cols += (size_t)utf8proc_charwidth(c);
        i += (size_t)n;
    }
    return cols;
}
