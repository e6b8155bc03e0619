/* why_page.c - web/why.html with its placeholders filled: the style, the
 * script, the JSON (its '<' escaped). */
#include "why_page.h"

#include <stdlib.h>
#include <string.h>

extern const unsigned char pdw_why_html[];
extern const size_t pdw_why_html_len;

typedef struct piece {
    const char *mark;
    const char *bytes;
    size_t len;
    int escape; /* '<' as \u003c: the JSON */
} piece;

/* The bytes of p once put in (with escaping). */
static size_t piece_len(const piece *p)
{
    size_t n = p->len;
    for (size_t i = 0; p->escape && i < p->len; i++) n += p->bytes[i] == '<' ? 5 : 0;
    return n;
}

char *pdw_why_page(const char *json, size_t len, size_t *out_len)
{
    const piece pieces[3] = {{"/*@WHY_CSS@*/", (const char *)pdw_why_css, pdw_why_css_len, 0},
                             {"@WHY_JSON@", json, len, 1},
                             {"/*@WHY_JS@*/", (const char *)pdw_why_js, pdw_why_js_len, 0}};
    const char *tpl = (const char *)pdw_why_html, *at = tpl;
    size_t n = pdw_why_html_len;
    for (int k = 0; k < 3; k++) n += piece_len(&pieces[k]);
    char *out = malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (int k = 0; k < 3; k++) { /* the marks come in this order in why.html */
        const char *m = strstr(at, pieces[k].mark);
        if (!m) { /* a template without the mark: the build put in the wrong file */
            free(out);
            return NULL;
        }
        memcpy(o, at, (size_t)(m - at));
        o += m - at;
        for (size_t i = 0; i < pieces[k].len; i++) {
            if (pieces[k].escape && pieces[k].bytes[i] == '<') o += (memcpy(o, "\\u003c", 6), 6);
            else *o++ = pieces[k].bytes[i];
        }
        at = m + strlen(pieces[k].mark);
    }
    size_t rest = pdw_why_html_len - (size_t)(at - tpl);
    memcpy(o, at, rest);
    o += rest;
    *o = '\0';
    if (out_len) *out_len = (size_t)(o - out);
    return out;
}
