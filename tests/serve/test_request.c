/* test_request.c - the server's request bodies checked apart from any socket
 * (serve/request.c): the accepted forms, each refusal with its status and
 * message, the UTF-8 check, the constant-time key comparison, the records
 * text as extract writes it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "request.h"

#include <stdlib.h>
#include <string.h>

static int extract(const char *body, size_t max, serve_extract_req *req, char *msg)
{
    return serve_parse_extract(body, strlen(body), max, req, msg);
}

static void test_extract_ok(void **state)
{
    (void)state;
    serve_extract_req req;
    char msg[SERVE_MESSAGE_SIZE];
    assert_int_equal(extract("{\"text\": \"质地很好\"}", 4, &req, msg), 0);
    assert_int_equal(req.n, 1);
    assert_false(req.many);
    assert_string_equal(req.texts[0], "质地很好");
    assert_int_equal(req.lens[0], strlen("质地很好"));
    serve_extract_req_free(&req);
    assert_int_equal(extract("{\"texts\": [\"a\", \"\", \"c\"]}", 3, &req, msg), 0);
    assert_int_equal(req.n, 3);
    assert_true(req.many);
    assert_string_equal(req.texts[2], "c");
    assert_int_equal(req.lens[1], 0);
    serve_extract_req_free(&req);
}

static void test_extract_refused(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int status;
        const char *words;
    } cases[] = {
        {"", 400, "empty"},
        {"{\"text\": \"\xff\"}", 400, "not valid UTF-8 (byte 10)"},
        {"{\"text\": \"\xed\xa0\x80\"}", 400, "UTF-8"}, /* a surrogate */
        {"{\"text\": \"\xc0\xaf\"}", 400, "UTF-8"},     /* overlong */
        {"{\"text\": ", 400, "not valid JSON"},
        {"[1]", 400, "must be a JSON object"},
        {"{}", 400, "missing field \"text\""},
        {"{\"text\": 1}", 400, "\"text\" must be a string"},
        {"{\"texts\": {}}", 400, "\"texts\" must be an array"},
        {"{\"texts\": [\"a\", 2]}", 400, "\"texts\"[1] must be a string"},
        {"{\"texts\": []}", 400, "\"texts\" is empty"},
        {"{\"texts\": [\"a\",\"b\",\"c\",\"d\",\"e\"]}", 413, "--max-texts"},
        {"{\"text\": \"a\", \"texts\": [\"a\"]}", 400, "not both"},
        {"{\"text\": \"a\", \"extra\": 1}", 400, "unknown field \"extra\""},
        {"{\"text\": \"a\\u0000\"}", 400, "not valid JSON"},
        {"{\"text\": \"a\", \"text\": \"b\"}", 400, "duplicate"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        serve_extract_req req;
        char msg[SERVE_MESSAGE_SIZE] = "";
        int st = extract(cases[i].body, 4, &req, msg);
        if (st != cases[i].status || !strstr(msg, cases[i].words))
            fail_msg("case %zu: %d \"%s\", expected %d and \"%s\"", i, st, msg, cases[i].status, cases[i].words);
        assert_null(req.root);
        assert_null(req.texts);
    }
}

static void test_score(void **state)
{
    (void)state;
    serve_score_req req;
    char msg[SERVE_MESSAGE_SIZE];
    const char *body = "{\"text\": \"t\", \"question\": \"q\", \"candidates\": [\"a\", \"b\"]}";
    assert_int_equal(serve_parse_score(body, strlen(body), 8, &req, msg), 0);
    assert_string_equal(req.text, "t");
    assert_string_equal(req.question, "q");
    assert_int_equal(req.n, 2);
    assert_string_equal(req.cands[1], "b");
    serve_score_req_free(&req);
    body = "{\"text\": \"t\"}";
    assert_int_equal(serve_parse_score(body, strlen(body), 8, &req, msg), 0);
    assert_string_equal(req.question, "");
    assert_int_equal(req.n, 0);
    serve_score_req_free(&req);
    body = "{\"question\": \"q\"}";
    assert_int_equal(serve_parse_score(body, strlen(body), 8, &req, msg), 400);
    assert_non_null(strstr(msg, "missing field \"text\""));
    body = "{\"text\": \"t\", \"candidates\": [\"a\", \"b\", \"c\"]}";
    assert_int_equal(serve_parse_score(body, strlen(body), 2, &req, msg), 413);
    body = "{\"text\": \"t\", \"question\": []}";
    assert_int_equal(serve_parse_score(body, strlen(body), 2, &req, msg), 400);
    assert_non_null(strstr(msg, "\"question\" must be a string"));
}

static void test_auth(void **state)
{
    (void)state;
    assert_true(serve_auth_ok("Bearer k3y", "k3y"));
    assert_false(serve_auth_ok(NULL, "k3y"));
    assert_false(serve_auth_ok("", "k3y"));
    assert_false(serve_auth_ok("Bearer k3", "k3y"));
    assert_false(serve_auth_ok("Bearer k3yy", "k3y"));
    assert_false(serve_auth_ok("bearer k3y", "k3y"));
    assert_false(serve_auth_ok("k3y", "k3y"));
    assert_false(serve_auth_ok("Bearer k3z", "k3y"));
}

/* POST /v1/reload: no body or {"model": DIR}; anything else 400 naming it. */
static void test_reload(void **state)
{
    (void)state;
    char msg[SERVE_MESSAGE_SIZE], *path = (char *)"x";
    assert_int_equal(serve_parse_reload("", 0, &path, msg), 0);
    assert_null(path);
    assert_int_equal(serve_parse_reload("{}", 2, &path, msg), 0);
    assert_null(path);
    const char *ok = "{\"model\": \"models/tianchi-gen\"}";
    assert_int_equal(serve_parse_reload(ok, strlen(ok), &path, msg), 0);
    assert_string_equal(path, "models/tianchi-gen");
    free(path);
    static const struct {
        const char *body, *says;
    } bad[] = {{"{\"model\": 3}", "\"model\" must be"},     {"{\"model\": \"\"}", "non-empty"},
               {"{\"model\": \"a\\u0000b\"}", "\\u0000"}, {"{\"head\": \"x\"}", "head"},
               {"[1]", "object"},                             {"{", "line 1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path = (char *)"x";
        assert_int_equal(serve_parse_reload(bad[i].body, strlen(bad[i].body), &path, msg), 400);
        assert_null(path);
        if (!strstr(msg, bad[i].says)) fail_msg("%s: got \"%s\", wanted it to say \"%s\"", bad[i].body, msg, bad[i].says);
    }
}

static void test_error_body(void **state)
{
    (void)state;
    char *s = serve_error_body("\"text\" must be a string");
    assert_non_null(strstr(s, "\"error\""));
    free(s);
    s = serve_error_body("bad \xff"); /* never invalid JSON, whatever the message */
    assert_non_null(s);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extract_ok), cmocka_unit_test(test_extract_refused), cmocka_unit_test(test_score),
        cmocka_unit_test(test_auth),            cmocka_unit_test(test_error_body), cmocka_unit_test(test_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
