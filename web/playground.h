/* playground.h - the playground page of `pocketdec serve` (playground.html,
 * .css, .js; web/embed.py carries them into the binary). Its "why" view
 * draws with why.js and why.css (why_page.h). */
#ifndef PD_WEB_PLAYGROUND_H
#define PD_WEB_PLAYGROUND_H

#include <stddef.h>

extern const unsigned char pdw_playground_html[], pdw_playground_css[], pdw_playground_js[];
extern const size_t pdw_playground_html_len, pdw_playground_css_len, pdw_playground_js_len;

/* What both pages load first (common.js: the API calls, the key). */
extern const unsigned char pdw_common_js[];
extern const size_t pdw_common_js_len;

/* The annotation page of `pocketdec serve --teach` (teach.html, .css, .js), at /teach. */
extern const unsigned char pdw_teach_html[], pdw_teach_css[], pdw_teach_js[];
extern const size_t pdw_teach_html_len, pdw_teach_css_len, pdw_teach_js_len;

#endif
