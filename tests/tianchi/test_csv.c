/* test_csv.c - the RFC 4180 reader: quoting, line breaks, BOM, UTF-8. */
#include "te_test.h"
#include "te_internal.h"

/* Read all records of text into "f1|f2|...\n" lines with "@LINE " prefixes. */
static char *dump(const char *text, size_t len, int *bom, te_error *err)
{
    te_csv *csv = te_csv_new("t.csv", text, len, err);
    if (!csv)
        return NULL;
    if (bom)
        *bom = te_csv_had_bom(csv);
    size_t cap = 4096, used = 0;
    char *out = calloc(1, cap);
    int r;
    while ((r = te_csv_next(csv, err)) == 1) {
        used += (size_t)snprintf(out + used, cap - used, "@%ld ", te_csv_line(csv));
        for (size_t i = 0; i < te_csv_n_fields(csv); i++)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "|" : "",
                                     te_csv_field(csv, i, NULL));
        used += (size_t)snprintf(out + used, cap - used, "\n");
        assert_true(used < cap);
    }
    te_csv_free(csv);
    if (r < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void expect(const char *text, const char *want)
{
    te_error err = {TE_OK, ""};
    char *got = dump(text, strlen(text), NULL, &err);
    if (!got)
        fail_msg("unexpected error: %s", err.message);
    assert_string_equal(got, want);
    free(got);
}

static void expect_error(const char *text, size_t len, const char *message)
{
    te_error err = {TE_OK, ""};
    char *got = dump(text, len, NULL, &err);
    assert_null(got);
    assert_int_equal(err.code, TE_ERR_FORMAT);
    assert_string_equal(err.message, message);
}

static void test_plain(void **state)
{
    (void)state;
    expect("a,b,c\n1,2,3\n", "@1 a|b|c\n@2 1|2|3\n");
    expect("a,b\n1,2", "@1 a|b\n@2 1|2\n"); /* no final line break */
    expect("x", "@1 x\n");
    expect("", "");
}

static void test_quoted(void **state)
{
    (void)state;
    expect("1,\"a,b\",c\n", "@1 1|a,b|c\n");
    expect("1,\"say \"\"hi\"\"\",2\n", "@1 1|say \"hi\"|2\n");
    expect("\"\",\"\"\"\"\n", "@1 |\"\n");
    /* A quote inside an unquoted field is kept as it is. */
    expect("1,ab\"c,2\n", "@1 1|ab\"c|2\n");
    /* Line breaks inside quotes belong to the field and still count as lines. */
    expect("1,\"two\nlines\",x\n2,y,z\n", "@1 1|two\nlines|x\n@3 2|y|z\n");
    expect("1,\"a\r\nb\"\r\n2,c\r\n", "@1 1|a\r\nb\n@3 2|c\n");
}

static void test_line_breaks(void **state)
{
    (void)state;
    expect("a,b\r\nc,d\r\n", "@1 a|b\n@2 c|d\n");
    expect("a,b\rc,d\r", "@1 a|b\n@2 c|d\n");
    expect("a\n\n\nb\n", "@1 a\n@4 b\n"); /* blank lines skipped, counted */
    expect("\r\n\r\na,b\r\n", "@3 a|b\n");
}

static void test_empty_fields(void **state)
{
    (void)state;
    expect("1,,3\n", "@1 1||3\n");
    expect(",,\n", "@1 ||\n");
    expect("1,2,\n", "@1 1|2|\n");
    expect("1, , ,x\n", "@1 1| | |x\n");

    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_new("t.csv", "a,,\"\"\n", 6, &err);
    assert_non_null(csv);
    assert_int_equal(te_csv_next(csv, &err), 1);
    size_t len = 99;
    assert_string_equal(te_csv_field(csv, 1, &len), "");
    assert_int_equal(len, 0);
    assert_string_equal(te_csv_field(csv, 2, &len), "");
    assert_int_equal(len, 0);
    assert_null(te_csv_field(csv, 3, &len));
    assert_int_equal(te_csv_next(csv, &err), 0);
    te_csv_free(csv);
}

static void test_bom(void **state)
{
    (void)state;
    te_error err = {TE_OK, ""};
    int bom = -1;
    char *got = dump("\xEF\xBB\xBFid,x\n1,2\n", 12, &bom, &err);
    assert_non_null(got);
    assert_int_equal(bom, 1);
    assert_string_equal(got, "@1 id|x\n@2 1|2\n");
    free(got);
    got = dump("id,x\n", 5, &bom, &err);
    assert_non_null(got);
    assert_int_equal(bom, 0);
    free(got);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    expect_error("a\nb\n\xFF\n", 6,
                 "t.csv:3: invalid UTF-8 (byte 0xFF at byte 1 of the line); the files must be UTF-8");
    /* Overlong "/" (C0 AF), a surrogate (ED A0 80), past U+10FFFF (F4 90 80 80). */
    expect_error("ok\r\nx,\xC0\xAF\n", 8,
                 "t.csv:2: invalid UTF-8 (byte 0xC0 at byte 3 of the line); the files must be UTF-8");
    expect_error("\xED\xA0\x80", 3,
                 "t.csv:1: invalid UTF-8 (byte 0xED at byte 1 of the line); the files must be UTF-8");
    expect_error("1\r2\r\xF4\x90\x80\x80", 8,
                 "t.csv:3: invalid UTF-8 (byte 0xF4 at byte 1 of the line); the files must be UTF-8");
    /* A character cut by the end of the file. */
    expect_error("好\n\xE5\xA5", 6,
                 "t.csv:2: invalid UTF-8 (byte 0xE5 at byte 1 of the line); the files must be UTF-8");
    /* Line numbers count breaks inside quoted fields too. */
    expect_error("1,\"a\nb\"\n2,\xFE\n", 12,
                 "t.csv:3: invalid UTF-8 (byte 0xFE at byte 3 of the line); the files must be UTF-8");
    /* Valid multibyte text passes: 2, 3 and 4 bytes. */
    expect("é,好,\xF0\x9F\x98\x80\n", "@1 é|好|\xF0\x9F\x98\x80\n");
}

static void test_nul_and_syntax(void **state)
{
    (void)state;
    expect_error("a\nb\0c\n", 6, "t.csv:2: NUL byte: not a text file");
    expect_error("1,2\n3,\"open\nnever closed\n", 25,
                 "t.csv:2: a quoted field opened here is never closed");
    expect_error("1,\"ab\"c,2\n", 10,
                 "t.csv:1: text after the closing quote of a field (write a quote inside quotes as \"\")");
}

/* A field far larger than any buffer a reader might fix. */
static void test_huge_field(void **state)
{
    (void)state;
    size_t n = 3 * 1024 * 1024;
    char *text = malloc(n + 16);
    memcpy(text, "1,\"", 3);
    for (size_t i = 0; i < n; i++)
        text[3 + i] = (char)('a' + i % 26);
    memcpy(text + 3 + n, "\",z\n", 4);
    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_new("big.csv", text, n + 7, &err);
    assert_non_null(csv);
    assert_int_equal(te_csv_next(csv, &err), 1);
    size_t len = 0;
    const char *f = te_csv_field(csv, 1, &len);
    assert_int_equal(len, n);
    assert_int_equal(f[n - 1], 'a' + (n - 1) % 26);
    assert_string_equal(te_csv_field(csv, 2, NULL), "z");
    te_csv_free(csv);
    free(text);
}

static void test_many_fields(void **state)
{
    (void)state;
    size_t n = 100000;
    char *text = malloc(2 * n + 2);
    for (size_t i = 0; i < n; i++)
        text[2 * i] = 'x', text[2 * i + 1] = ',';
    text[2 * n - 1] = '\n';
    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_new("wide.csv", text, 2 * n, &err);
    assert_non_null(csv);
    assert_int_equal(te_csv_next(csv, &err), 1);
    assert_int_equal(te_csv_n_fields(csv), n);
    te_csv_free(csv);
    free(text);
}

static void test_read_file(void **state)
{
    (void)state;
    char path[64];
    write_temp(path, "1,2\n", 4);
    char *data = NULL;
    size_t len = 0;
    te_error err = {TE_OK, ""};
    assert_int_equal(te_read_file(path, &data, &len, &err), TE_OK);
    assert_int_equal(len, 4);
    assert_string_equal(data, "1,2\n");
    free(data);
    unlink(path);
    assert_int_equal(te_read_file(path, &data, &len, &err), TE_ERR_IO);
    assert_contains(err.message, path);
    assert_contains(err.message, "cannot open");
    assert_int_equal(te_read_file("/", &data, &len, &err), TE_ERR_IO);
    assert_contains(err.message, "/: cannot read");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),        cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_line_breaks),  cmocka_unit_test(test_empty_fields),
        cmocka_unit_test(test_bom),          cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_nul_and_syntax), cmocka_unit_test(test_huge_field),
        cmocka_unit_test(test_many_fields),  cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
