/* fuzz_serve_request.c - the HTTP server's request bodies (serve/request.c)
 * on arbitrary bytes, as the endpoints read them (/v1/summarize's summarized): a body is accepted or
 * refused with 400 or 413 and a message; everything accepted is valid UTF-8
 * without a NUL, within the limits; every message makes a valid JSON error
 * body. */
#include "request.h"
#include "pd_internal.h"

#include <stdlib.h>
#include <string.h>

static void check_text(const char *s, size_t len)
{
    if (!s || strlen(s) != len || pdi_utf8_check(s, len) != len) abort();
}

static void check_refusal(int st, const char *msg)
{
    if (st != 400 && st != 413) abort();
    if (!msg[0]) abort();
    char *body = serve_error_body(msg);
    if (!body) abort();
    json_error_t je;
    json_t *v = json_loads(body, 0, &je);
    if (!v || !json_is_string(json_object_get(v, "error"))) abort();
    json_decref(v);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    size_t max = 1 + size % 7;
    char msg[SERVE_MESSAGE_SIZE] = "";
    serve_extract_req ex;
    int st = serve_parse_extract(body, size, max, &ex, msg);
    if (st == 0) {
        if (ex.n == 0 || ex.n > max || (!ex.many && ex.n != 1)) abort();
        for (size_t i = 0; i < ex.n; i++) check_text(ex.texts[i], ex.lens[i]);
        serve_extract_req_free(&ex);
    } else {
        check_refusal(st, msg);
    }
    serve_score_req sc;
    msg[0] = 0;
    st = serve_parse_score(body, size, max, &sc, msg);
    if (st == 0) {
        check_text(sc.text, strlen(sc.text));
        check_text(sc.question, strlen(sc.question));
        if (sc.n > max) abort();
        for (size_t i = 0; i < sc.n; i++) check_text(sc.cands[i], strlen(sc.cands[i]));
        serve_score_req_free(&sc);
    } else {
        check_refusal(st, msg);
    }
    char *path = NULL;
    msg[0] = 0;
    st = serve_parse_reload(body, size, &path, msg);
    if (st == 0 && path) check_text(path, strlen(path));
    else if (st) check_refusal(st, msg);
    free(path);
    /* /v1/summarize: accepted and summarized into valid JSON, or refused */
    json_t *root = NULL;
    const json_t *reviews;
    msg[0] = 0;
    st = serve_parse_summarize(body, size, &root, &reviews, msg);
    if (st == 0) {
        char *out = NULL;
        st = serve_summarize(reviews, NULL, NULL, &out, msg);
        if (st == 200) {
            json_t *v = out ? json_loads(out, 0, NULL) : NULL;
            if (!v) abort();
            json_decref(v);
        } else {
            check_refusal(st, msg);
        }
        free(out);
        json_decref(root);
    } else {
        check_refusal(st, msg);
    }
    /* the key comparison on the same bytes as a header */
    char *header = malloc(size + 1);
    if (!header) return 0;
    memcpy(header, data, size);
    header[size] = 0;
    if (serve_auth_ok(header, "k") != (strcmp(header, "Bearer k") == 0)) abort();
    free(header);
    return 0;
}
