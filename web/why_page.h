/* why_page.h - the "why" view of one review as a page: web/why.html with
 * why.css, why.js and a pd_tag_explain document put in (web/embed.py carries
 * the three files into the binary). Shared by `pocketdec tag --html` and the
 * playground, so both draw the one JSON shape with the one renderer. */
#ifndef PD_WEB_WHY_PAGE_H
#define PD_WEB_WHY_PAGE_H

#include <stddef.h>

/* The page for JSON document json[0..len) (malloc'ed, NUL-terminated, its
 * length in *out_len); NULL when out of memory. Every '<' of the JSON is
 * written \u003c, so no "</script>" in a string can end the data early. */
char *pdw_why_page(const char *json, size_t len, size_t *out_len);

/* The renderer alone (for a page that fetches the JSON): why.js, why.css. */
extern const unsigned char pdw_why_js[], pdw_why_css[];
extern const size_t pdw_why_js_len, pdw_why_css_len;

#endif
