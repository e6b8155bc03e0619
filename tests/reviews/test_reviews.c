/* test_reviews.c - the one reader of review files (reviews/pocketdec_reviews.h)
 * on hand-made files: the Tianchi CSV with and without its header, a shop's
 * export with named and default columns, a header with no obvious text
 * column, broken rows in the middle, JSONL and a piece of a JSONL file, GB18030 and UTF-16 (bytes written
 * by hand from the encodings' tables), an unknown encoding, files and memory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pocketdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pd_reviews *open_mem(const char *data, size_t len, const char *name, const pd_reviews_params *p)
{
    pd_error err = {0};
    pd_reviews *r = pd_reviews_open_memory(data, len, name, p, &err);
    if (!r) fail_msg("%s", err.message);
    return r;
}

/* The next row, which must be a review with this id and text at this line. */
static void expect_review(pd_reviews *r, const char *id, const char *text, long line)
{
    pd_review w;
    pd_error err = {0};
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_null(w.problem);
    assert_false(w.header);
    assert_string_equal(w.id, id);
    assert_int_equal(w.text_len, strlen(text));
    assert_memory_equal(w.text, text, w.text_len);
    assert_int_equal(w.line, line);
}

static void expect_end(pd_reviews *r)
{
    pd_review w;
    pd_error err = {0};
    assert_int_equal(pd_reviews_next(r, &w, &err), 0);
}

static void test_tianchi_with_header(void **state)
{
    (void)state;
    const char *csv = "id,Reviews\n1,很好\n2,\"a,\"\"b\"\"\nc\"\n";
    pd_reviews *r = open_mem(csv, strlen(csv), "t.csv", NULL);
    assert_int_equal(pd_reviews_get_format(r), PD_REVIEWS_CSV);
    pd_review w;
    pd_error err;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_true(w.header);
    assert_int_equal(w.ordinal, 1);
    expect_review(r, "1", "很好", 2);
    expect_review(r, "2", "a,\"b\"\nc", 3);
    expect_end(r);
    assert_int_equal(pd_reviews_rows(r), 3);
    pd_reviews_free(r);
}

static void test_tianchi_without_header(void **state)
{
    (void)state;
    const char *csv = "1,很好\r\n2,差\r\n";
    pd_reviews *r = open_mem(csv, strlen(csv), "t.csv", NULL);
    expect_review(r, "1", "很好", 1);
    expect_review(r, "2", "差", 2);
    expect_end(r);
    pd_reviews_free(r);
}

static const char shop[] = "review_id,rating,content,date,sku\n"
                           "r1,5,质量很好,2024-05-01,A1\n"
                           "r2,1,\"差,退货\",2024-05-02,B2\n";

static void test_shop_export_named(void **state)
{
    (void)state;
    pd_reviews_params p = pd_reviews_default_params();
    p.id_column = "review_id";
    p.text_column = "content";
    p.keep_extra = 1;
    pd_reviews *r = open_mem(shop, strlen(shop), "shop.csv", &p);
    pd_review w;
    pd_error err;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_true(w.header);
    assert_null(w.extra);
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.id, "r1");
    assert_string_equal(w.text, "质量很好");
    assert_string_equal(w.extra, "\"rating\":\"5\",\"date\":\"2024-05-01\",\"sku\":\"A1\"");
    char buf[32];
    assert_string_equal(pd_reviews_column(r, "sku", buf), "A1");
    assert_null(pd_reviews_column(r, "nope", buf));
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.text, "差,退货");
    assert_string_equal(w.extra, "\"rating\":\"1\",\"date\":\"2024-05-02\",\"sku\":\"B2\"");
    expect_end(r);
    pd_reviews_free(r);
}

static void test_shop_export_default_columns(void **state)
{
    (void)state;
    /* "id" and the one usual text name, "content": no option needed */
    const char *csv = "id,rating,content\n7,4,还行\n";
    pd_reviews *r = open_mem(csv, strlen(csv), "shop.csv", NULL);
    pd_review w;
    pd_error err;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_true(w.header);
    expect_review(r, "7", "还行", 2);
    assert_null(w.extra); /* keep_extra off */
    expect_end(r);
    pd_reviews_free(r);
}

/* No text column found, or two usual names: the first row fails the reading, naming the columns. */
static void test_no_obvious_text_column(void **state)
{
    (void)state;
    const char *files[] = {"review_id,rating,body\nr1,5,x\n", "id,text,content\n1,a,b\n", "review_id,rating,content\nr1,5,x\n"};
    const char *cols[] = {"review_id,rating,body", "id,text,content", "review_id,rating,content"};
    for (int i = 0; i < 3; i++) {
        pd_reviews *r = open_mem(files[i], strlen(files[i]), "shop.csv", NULL);
        pd_review w;
        pd_error err = {0};
        assert_int_equal(pd_reviews_next(r, &w, &err), -1);
        assert_int_equal(err.code, PD_ERR_FORMAT);
        assert_non_null(strstr(err.message, "shop.csv:1: which columns hold the id and the review?"));
        assert_non_null(strstr(err.message, cols[i]));
        assert_non_null(strstr(err.message, "--text-column NAME"));
        err = (pd_error){0};
        assert_int_equal(pd_reviews_next(r, &w, &err), -1); /* and it stays failed */
        assert_int_equal(err.code, PD_ERR_FORMAT);
        pd_reviews_free(r);
    }
}

/* Broken rows in the middle: each reported with its line, the id kept when known, reading going on. */
static void test_broken_rows(void **state)
{
    (void)state;
    const char *csv = "id,Reviews\n1,ok\n2,a,b\n3,\"q\"x\n,empty id\n4,fine\n";
    pd_reviews *r = open_mem(csv, strlen(csv), "t.csv", NULL);
    pd_review w;
    pd_error err;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    expect_review(r, "1", "ok", 2);
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.problem, "t.csv:3: broken row: expected 2 fields (id,Reviews), got 3");
    assert_true(w.keep_id);
    assert_string_equal(w.id, "2");
    assert_null(w.text);
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_non_null(w.problem);
    assert_int_equal(strncmp(w.problem, "t.csv:4: ", 9), 0);
    assert_string_equal(w.id, "3");
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.problem, "t.csv:5: broken row: the id is empty");
    assert_false(w.keep_id);
    expect_review(r, "4", "fine", 6);
    expect_end(r);
    assert_int_equal(pd_reviews_rows(r), 6);
    pd_reviews_free(r);
}

static void test_jsonl(void **state)
{
    (void)state;
    const char *jl = "{\"id\":1,\"text\":\"好\",\"sku\":\"A1\",\"n\":3}\n\n[1]\n{\"id\":\"b\",\"text\":\"x\"}\n"
                     "{\"id\":\"c\"}\n";
    pd_reviews *r = open_mem(jl, strlen(jl), "t.jsonl", NULL);
    assert_int_equal(pd_reviews_get_format(r), PD_REVIEWS_JSONL);
    expect_review(r, "1", "好", 1);
    char buf[32];
    assert_string_equal(pd_reviews_column(r, "sku", buf), "A1");
    assert_string_equal(pd_reviews_column(r, "n", buf), "3");
    pd_review w;
    pd_error err;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.problem, "t.jsonl:3: broken row skipped: expected a JSON object, got an array");
    expect_review(r, "b", "x", 4);
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_string_equal(w.problem, "t.jsonl:5: broken row skipped: missing key \"text\"");
    expect_end(r);
    pd_reviews_free(r);
    /* named keys, and format JSONL whatever the name */
    pd_reviews_params p = pd_reviews_default_params();
    p.format = PD_REVIEWS_JSONL;
    p.id_column = "rid";
    p.text_column = "body";
    const char *named = "{\"rid\":\"r9\",\"body\":\"b\"}\n";
    r = open_mem(named, strlen(named), "upload", &p);
    expect_review(r, "r9", "b", 1);
    expect_end(r);
    pd_reviews_free(r);
}

/* 很好 in GB18030 (GB2312's codes: 很 BA DC, 好 BA C3), 质量 (D6 CA, C1 BF). */
static const char gb[] = "id,Reviews\n1,\xBA\xDC\xBA\xC3\n2,\xD6\xCA\xC1\xBF\n";

static void test_gb18030(void **state)
{
    (void)state;
    pd_error err = {0};
    assert_null(pd_reviews_open_memory(gb, strlen(gb), "gb.csv", NULL, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    assert_non_null(strstr(err.message, "gb.csv: the file is not UTF-8 (byte 14)"));
    assert_non_null(strstr(err.message, "--encoding gb18030"));
    pd_reviews_params p = pd_reviews_default_params();
    p.encoding = "gb18030";
    pd_reviews *r = open_mem(gb, strlen(gb), "gb.csv", &p);
    pd_review w;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_true(w.header);
    expect_review(r, "1", "很好", 2);
    expect_review(r, "2", "质量", 3);
    expect_end(r);
    pd_reviews_free(r);
}

/* id,Reviews / 1,好 in UTF-16LE after its byte order mark (好 is U+597D). */
static const char u16[] = "\xFF\xFE" "i\0d\0,\0R\0e\0v\0i\0e\0w\0s\0\n\0" "1\0,\0\x7D\x59\n\0";

static void test_utf16(void **state)
{
    (void)state;
    pd_error err = {0};
    assert_null(pd_reviews_open_memory(u16, sizeof u16 - 1, "u.csv", NULL, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    assert_non_null(strstr(err.message, "u.csv: the file is UTF-16"));
    assert_non_null(strstr(err.message, "--encoding utf-16"));
    pd_reviews_params p = pd_reviews_default_params();
    p.encoding = "utf-16";
    pd_reviews *r = open_mem(u16, sizeof u16 - 1, "u.csv", &p);
    pd_review w;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_true(w.header);
    expect_review(r, "1", "好", 2);
    expect_end(r);
    pd_reviews_free(r);
}

static void test_unknown_encoding_and_bad_args(void **state)
{
    (void)state;
    pd_reviews_params p = pd_reviews_default_params();
    p.encoding = "no-such-encoding";
    pd_error err = {0};
    assert_null(pd_reviews_open_memory("1,a\n", 4, "t.csv", &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_string_equal(err.message,
                        "--encoding no-such-encoding: not an encoding this system's iconv knows (e.g. gb18030, gbk, utf-16)");
    p = pd_reviews_default_params();
    p.format = (pd_reviews_format)7;
    assert_null(pd_reviews_open_memory("1,a\n", 4, "t.csv", &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_reviews_open_memory(NULL, 4, "t.csv", NULL, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_null(pd_reviews_open("/nonexistent/dir/r.csv", NULL, &err));
    assert_int_equal(err.code, PD_ERR_IO);
    assert_non_null(strstr(err.message, "/nonexistent/dir/r.csv: cannot open: "));
    /* no bytes: no rows */
    pd_reviews *r = open_mem("", 0, "empty.csv", NULL);
    expect_end(r);
    pd_reviews_free(r);
}

/* A piece of a JSONL file (first_line): numbered from there, no sniffing of
 * the encoding, a byte order mark dropped on the file's line 1 alone. */
static void test_jsonl_piece(void **state)
{
    (void)state;
    pd_reviews_params p = pd_reviews_default_params();
    p.first_line = 41;
    /* 很好 in GB18030 on line 42: a broken row of this piece, not a refused file */
    const char piece[] = "{\"id\":7,\"text\":\"a\"}\n{\"id\":8,\"text\":\"\xBA\xDC\xBA\xC3\"}\n\n"
                         "\xEF\xBB\xBF{\"id\":9,\"text\":\"b\"}\n{\"id\":10,\"text\":\"c\"}\n";
    pd_reviews *r = open_mem(piece, sizeof piece - 1, "big.jsonl", &p);
    expect_review(r, "7", "a", 41);
    pd_review w;
    pd_error err = {0};
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_int_equal(w.line, 42);
    assert_string_equal(w.problem, "big.jsonl:42: broken row skipped: invalid UTF-8 at byte 17");
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    assert_int_equal(w.line, 44);
    assert_non_null(strstr(w.problem, "big.jsonl:44: broken row skipped: malformed JSON"));
    expect_review(r, "10", "c", 45);
    expect_end(r);
    pd_reviews_free(r);
    /* the same bytes as a whole file: refused, naming --encoding */
    p.first_line = 0;
    assert_null(pd_reviews_open_memory(piece, sizeof piece - 1, "big.jsonl", &p, &err));
    assert_int_equal(err.code, PD_ERR_FORMAT);
    /* a piece at line 1: its byte order mark is the file's, dropped */
    p.first_line = 1;
    const char start[] = "\xEF\xBB\xBF{\"id\":1,\"text\":\"x\"}\n";
    r = open_mem(start, sizeof start - 1, "big.jsonl", &p);
    expect_review(r, "1", "x", 1);
    expect_end(r);
    pd_reviews_free(r);
    /* refused: CSV, an encoding, a line below 1 */
    p.first_line = 3;
    assert_null(pd_reviews_open_memory("1,a\n", 4, "t.csv", &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_string_equal(err.message, "t.csv: first_line reads a piece of a UTF-8 JSONL file, not CSV");
    p.encoding = "gb18030";
    assert_null(pd_reviews_open_memory(start, sizeof start - 1, "big.jsonl", &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
    assert_non_null(strstr(err.message, "not a file in another encoding"));
    p = pd_reviews_default_params();
    p.first_line = -1;
    assert_null(pd_reviews_open_memory(start, sizeof start - 1, "big.jsonl", &p, &err));
    assert_int_equal(err.code, PD_ERR_ARG);
}

/* A file on disk: the same rows as from memory, its position and size known. */
static void test_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_reviews_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, shop, strlen(shop)), (ssize_t)strlen(shop));
    close(fd);
    pd_reviews_params p = pd_reviews_default_params();
    p.format = PD_REVIEWS_CSV;
    p.id_column = "review_id";
    pd_error err = {0};
    pd_reviews *r = pd_reviews_open(path, &p, &err);
    assert_non_null(r);
    assert_string_equal(pd_reviews_name(r), path);
    pd_review w;
    assert_int_equal(pd_reviews_next(r, &w, &err), 1);
    expect_review(r, "r1", "质量很好", 2);
    long pos, size;
    pd_reviews_position(r, &pos, &size);
    assert_int_equal(size, (long)strlen(shop));
    assert_true(pos > 0 && pos <= size);
    pd_reviews_free(r);
    unlink(path);
}

static void test_join_extra(void **state)
{
    (void)state;
    const char line[] = "{\"id\":\"1\",\"records\":[]}\n";
    size_t n = 0;
    char *j = pd_reviews_join_extra(line, strlen(line), "\"rating\":\"5\"", &n);
    assert_string_equal(j, "{\"id\":\"1\",\"records\":[],\"rating\":\"5\"}\n");
    assert_int_equal(n, strlen(j));
    pd_free(j);
    j = pd_reviews_join_extra(line, strlen(line), NULL, &n);
    assert_string_equal(j, line);
    assert_int_equal(n, strlen(line));
    pd_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tianchi_with_header),
        cmocka_unit_test(test_tianchi_without_header),
        cmocka_unit_test(test_shop_export_named),
        cmocka_unit_test(test_shop_export_default_columns),
        cmocka_unit_test(test_no_obvious_text_column),
        cmocka_unit_test(test_broken_rows),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_jsonl_piece),
        cmocka_unit_test(test_gb18030),
        cmocka_unit_test(test_utf16),
        cmocka_unit_test(test_unknown_encoding_and_bad_args),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_join_extra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
