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

#include <math.h>
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
    assert_null(req.extras);
    serve_extract_req_free(&req);
    /* extras: checked and written back compact, in the order sent ("2024" stays after "sku"); "" and null: none */
    assert_int_equal(extract("{\"texts\": [\"a\", \"b\", \"c\"], \"ids\": [1, 2, 3], \"extras\": "
                             "[\"\\\"sku\\\": \\\"A1\\\", \\\"2024\\\":\\\"x\\\"\", \"\", null]}",
                             3, &req, msg), 0);
    assert_non_null(req.extras);
    assert_string_equal(req.extras[0], "\"sku\":\"A1\",\"2024\":\"x\"");
    assert_null(req.extras[1]);
    assert_null(req.extras[2]);
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
        {"{\"texts\": [\"a\"], \"extras\": [\"\\\"r\\\":\\\"5\\\"\"]}", 400, "\"extras\" goes with \"ids\""},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": []}", 400, "an array of 1 entries"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [5]}", 400, "\"extras\"[0] must be a string"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [\"\\\"r\\\":\"]}", 400, "\"extras\"[0] is not JSON members"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [\"}{\"]}", 400, "\"extras\"[0] is not JSON members"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [\"\\\"r\\\":1,\\\"r\\\":2\"]}", 400, "not JSON members"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [\"\\\"records\\\":[]\"]}", 400, "holds already"},
        {"{\"texts\": [\"a\"], \"ids\": [1], \"extras\": [\"\\\"id\\\":\\\"9\\\"\"]}", 400, "holds already"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        serve_extract_req req;
        char msg[SERVE_MESSAGE_SIZE] = "";
        int st = extract(cases[i].body, 4, &req, msg);
        if (st != cases[i].status || !strstr(msg, cases[i].words))
            fail_msg("case %zu: %d \"%s\", expected %d and \"%s\"", i, st, msg, cases[i].status, cases[i].words);
        assert_null(req.root);
        assert_null(req.texts);
        assert_null(req.extras);
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

/* /v1/summarize by hand: review 1 holds 价格/负面 (贵, [4, 5)) and 整体/正面,
 * review 2 (an integer id) 整体/正面, review 3 nothing: 3 reviews, 3 records;
 * 整体/正面 2 records in 2 reviews (share 0.6667), listed 1 then 2; 价格/负面
 * listed 1 with its opinion marked. Without rates, estimates are the counts. */
static void test_summarize(void **state)
{
    (void)state;
    static const char body[] =
        "{\"reviews\": [{\"id\": \"1\", \"text\": \"很好用，贵\", \"records\": ["
        "{\"aspect\": \"_\", \"opinion\": \"贵\", \"category\": \"价格\", \"polarity\": \"负面\","
        " \"spans\": {\"opinion\": [4, 5]}, \"probs\": {}, \"confidence\": 0.9},"
        "{\"aspect\": \"_\", \"opinion\": \"好用\", \"category\": \"整体\", \"polarity\": \"正面\"}]},"
        "{\"id\": 2, \"text\": \"好\", \"records\": [{\"opinion\": \"好\", \"category\": \"整体\", \"polarity\": \"正面\"}]},"
        "{\"id\": \"3\", \"text\": \"嗯\", \"records\": []}]}";
    char msg[SERVE_MESSAGE_SIZE], *out = NULL;
    json_t *root;
    const json_t *reviews;
    assert_int_equal(serve_parse_summarize(body, strlen(body), &root, &reviews, msg), 0);
    assert_int_equal(serve_summarize(reviews, NULL, NULL, &out, msg), 200);
    json_decref(root);
    json_t *j = json_loads(out, 0, NULL);
    free(out);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "reviews")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "records")), 3);
    json_t *cells = json_object_get(j, "cells"), *whole = json_array_get(cells, 0), *price = json_array_get(cells, 1);
    assert_string_equal(json_string_value(json_object_get(whole, "category")), "整体");
    assert_int_equal(json_integer_value(json_object_get(whole, "reviews")), 2);
    assert_true(fabs(json_number_value(json_object_get(whole, "share")) - 0.6667) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(whole, "estimate")) - 2) < 1e-9);
    json_t *listed = json_object_get(whole, "listed");
    assert_int_equal(json_array_size(listed), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(listed, 1), "id")), "2");
    json_t *marks = json_object_get(json_array_get(json_object_get(price, "listed"), 0), "marks");
    assert_int_equal(json_array_size(marks), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(marks, 0), "start")), 4);
    json_decref(j);
    static const struct {
        const char *body, *says;
    } bad[] = {{"{\"reviews\": 3}", "\"reviews\" must be"},
               {"{\"reviews\": [{\"id\": [], \"records\": []}]}", "reviews[0] must be"},
               {"{\"reviews\": [{\"id\": 1, \"records\": [{\"category\": \"x\"}]}]}", "reviews[0].records[0]"},
               {"{\"reviews\": [{\"id\": 1, \"records\": [{\"polarity\": \"x\", \"spans\": {\"aspect\": [3, 1]}}]}]}",
                "\"spans\""},
               {"{\"texts\": []}", "unknown field"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = serve_parse_summarize(bad[i].body, strlen(bad[i].body), &root, &reviews, msg);
        if (st == 0) {
            st = serve_summarize(reviews, NULL, NULL, &out, msg);
            json_decref(root);
        }
        assert_int_equal(st, 400);
        if (!strstr(msg, bad[i].says)) fail_msg("%s: got \"%s\", wanted it to say \"%s\"", bad[i].body, msg, bad[i].says);
    }
    /* rates of another schema (polarity "negative"): 400 naming the record and the rates' file */
    pds_calibration *cal = pds_calibration_new();
    pds_record other = {"_", "bad", "Price", "negative", -1, -1, -1, -1};
    pds_error err;
    assert_non_null(cal);
    assert_int_equal(pds_calibration_add(cal, &other, 1, &other, 1, &err), 0);
    assert_int_equal(serve_parse_summarize(body, strlen(body), &root, &reviews, msg), 0);
    out = NULL;
    assert_int_equal(serve_summarize(reviews, cal, "B/calibration.json", &out, msg), 400);
    assert_null(out);
    if (!strstr(msg, "reviews[0].records[0]: polarity '负面' is not among the labels of the calibration B/calibration.json"))
        fail_msg("got \"%s\"", msg);
    json_decref(root);
    pds_calibration_free(cal);
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

/* POST /v1/reviews/read: a shop's export by its named columns (the others
 * as "extra"), a broken row as a problem with reading going on, a GB18030
 * file refused without its encoding and read with it, bad options. */
static void test_read_reviews(void **state)
{
    (void)state;
    const char *shop = "review_id,rating,content\nr1,5,\"好,用\"\nr2,1\nr3,2,差\n";
    serve_reviews_opts o = {"shop.csv", "", "review_id", "content", ""};
    char *out = NULL;
    assert_int_equal(serve_read_reviews(shop, strlen(shop), &o, &out), 200);
    assert_string_equal(out, "{\"rows\":[{\"id\":\"r1\",\"text\":\"好,用\",\"line\":2,\"extra\":{\"rating\":\"5\"},"
                             "\"extra_json\":\"\\\"rating\\\":\\\"5\\\"\"},"
                             "{\"id\":\"r3\",\"text\":\"差\",\"line\":4,\"extra\":{\"rating\":\"2\"},"
                             "\"extra_json\":\"\\\"rating\\\":\\\"2\\\"\"}],"
                             "\"problems\":[\"shop.csv:3: broken row: expected 3 fields (review_id,rating,content), got 2\"]}");
    free(out);
    o = (serve_reviews_opts){"shop.csv", NULL, NULL, NULL, NULL}; /* no id column named: the columns listed */
    assert_int_equal(serve_read_reviews(shop, strlen(shop), &o, &out), 400);
    assert_non_null(strstr(out, "shop.csv:1: which columns hold the id and the review? the header has review_id,rating,content"));
    free(out);
    const char *gb = "id,Reviews\n1,\xBA\xC3\n"; /* 好 in GB18030 */
    o = (serve_reviews_opts){"gb.csv", NULL, NULL, NULL, NULL};
    assert_int_equal(serve_read_reviews(gb, strlen(gb), &o, &out), 400);
    assert_non_null(strstr(out, "gb.csv: the file is not UTF-8"));
    assert_non_null(strstr(out, "--encoding gb18030"));
    free(out);
    o.encoding = "gb18030";
    assert_int_equal(serve_read_reviews(gb, strlen(gb), &o, &out), 200);
    assert_string_equal(out, "{\"rows\":[{\"id\":\"1\",\"text\":\"好\",\"line\":2,\"extra\":{}}],\"problems\":[]}");
    free(out);
    const char *jl = "{\"id\":7,\"text\":\"ok\"}\n{\"id\":8}\n";
    o = (serve_reviews_opts){"upload", "jsonl", NULL, NULL, NULL};
    assert_int_equal(serve_read_reviews(jl, strlen(jl), &o, &out), 200);
    assert_string_equal(out, "{\"rows\":[{\"id\":\"7\",\"text\":\"ok\",\"line\":1,\"extra\":{}}],"
                             "\"problems\":[\"upload:2: broken row skipped: missing key \\\"text\\\"\"]}");
    free(out);
    o.format = "xml";
    assert_int_equal(serve_read_reviews(jl, strlen(jl), &o, &out), 400);
    assert_non_null(strstr(out, "format must be csv or jsonl"));
    free(out);
    o = (serve_reviews_opts){"e.csv", NULL, NULL, NULL, "no-such-encoding"};
    assert_int_equal(serve_read_reviews(gb, strlen(gb), &o, &out), 400);
    assert_non_null(strstr(out, "no-such-encoding"));
    free(out);
    o = (serve_reviews_opts){NULL, NULL, NULL, NULL, NULL}; /* no bytes: no rows */
    assert_int_equal(serve_read_reviews(NULL, 0, &o, &out), 200);
    assert_string_equal(out, "{\"rows\":[],\"problems\":[]}");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extract_ok), cmocka_unit_test(test_extract_refused), cmocka_unit_test(test_score),
        cmocka_unit_test(test_auth),            cmocka_unit_test(test_error_body), cmocka_unit_test(test_reload),
        cmocka_unit_test(test_summarize),       cmocka_unit_test(test_read_reviews),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
