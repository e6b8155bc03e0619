/* page.c - the playground at / of `pocketdec serve` (web/playground.html,
 * .css, .js), the annotation page at /teach (web/teach.*) and the why view's renderer (web/why.js, why.css), carried in
 * the binary and served without the API key (the page asks for the key and
 * its calls carry it). The Content-Security-Policy lets the page load and
 * call this server only: nothing a page shows is sent anywhere else. */
#include "page.h"

#include "playground.h"
#include "why_page.h"

#include <string.h>

typedef struct asset {
    const char *path, *type;
    const unsigned char *data;
    const size_t *len;
} asset;

static const asset assets[] = {
    {"/", "text/html; charset=utf-8", pdw_playground_html, &pdw_playground_html_len},
    {"/playground.css", "text/css; charset=utf-8", pdw_playground_css, &pdw_playground_css_len},
    {"/playground.js", "text/javascript; charset=utf-8", pdw_playground_js, &pdw_playground_js_len},
    {"/common.js", "text/javascript; charset=utf-8", pdw_common_js, &pdw_common_js_len},
    {"/why.css", "text/css; charset=utf-8", pdw_why_css, &pdw_why_css_len},
    {"/why.js", "text/javascript; charset=utf-8", pdw_why_js, &pdw_why_js_len},
    {"/teach", "text/html; charset=utf-8", pdw_teach_html, &pdw_teach_html_len},
    {"/teach.css", "text/css; charset=utf-8", pdw_teach_css, &pdw_teach_css_len},
    {"/teach.js", "text/javascript; charset=utf-8", pdw_teach_js, &pdw_teach_js_len},
};

const char serve_page_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                              "img-src 'self' data: blob:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

bool serve_page_find(const char *path, const char **data, size_t *len, const char **type)
{
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
        if (strcmp(path, assets[i].path) == 0) {
            *data = (const char *)assets[i].data;
            *len = *assets[i].len;
            *type = assets[i].type;
            return true;
        }
    return false;
}
