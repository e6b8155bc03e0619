/* test_csv.c - the CSV reader (te_csv.h): quoting, line breaks, BOM, UTF-8,
 * broken records and resynchronising, each read both from a buffer and from a
 * stream, which must agree. */
#include "te_test.h"
#include "te_internal.h"

#include <signal.h>

/* Every event of a reader as text: "@LINE f1|f2\n" for a row, "!MESSAGE
 * [f1|f2]\n" for a broken record (with the fields it kept), "#MESSAGE\n" for
 * a failure (which ends the dump). */
static char *dump_reader(te_csv *csv)
{
    size_t cap = 1 << 16, used = 0;
    char *out = calloc(1, cap);
    te_error err = {TE_OK, ""};
    te_csv_result r;
    while ((r = te_csv_next(csv, &err)) != TE_CSV_END) {
        if (r == TE_CSV_FAIL) {
            used += (size_t)snprintf(out + used, cap - used, "#%s\n", err.message);
            break;
        }
        if (r == TE_CSV_ROW)
            used += (size_t)snprintf(out + used, cap - used, "@%ld ", te_csv_line(csv));
        else
            used += (size_t)snprintf(out + used, cap - used, "!%s [", err.message);
        for (size_t i = 0; i < te_csv_n_fields(csv); i++)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "|" : "",
                                     te_csv_field(csv, i, NULL));
        used += (size_t)snprintf(out + used, cap - used, r == TE_CSV_ROW ? "\n" : "]\n");
        assert_true(used < cap);
    }
    return out;
}

/* The dump of text read from a buffer; the same text read from a stream must
 * give the same dump. */
static char *dump(const char *text, size_t len, size_t expect, int *bom)
{
    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_new("t.csv", text, len, &err);
    assert_non_null(csv);
    te_csv_expect_fields(csv, expect);
    if (bom)
        *bom = te_csv_had_bom(csv);
    char *mem = dump_reader(csv);
    te_csv_free(csv);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    rewind(f);
    csv = te_csv_open("t.csv", f, &err);
    assert_non_null(csv);
    te_csv_expect_fields(csv, expect);
    char *stream = dump_reader(csv);
    if (bom)
        assert_int_equal(te_csv_had_bom(csv), *bom);
    te_csv_free(csv);
    fclose(f);
    assert_string_equal(stream, mem);
    free(stream);
    return mem;
}

static void expect_n(const char *text, size_t len, size_t fields, const char *want)
{
    char *got = dump(text, len, fields, NULL);
    assert_string_equal(got, want);
    free(got);
}

static void expect(const char *text, const char *want)
{
    expect_n(text, strlen(text), 0, want);
}

/* Rows of `fields` fields expected (what resynchronising looks for). */
static void expect_rows(const char *text, size_t fields, const char *want)
{
    expect_n(text, strlen(text), fields, want);
}

static void test_plain(void **state)
{
    (void)state;
    expect("a,b,c\n1,2,3\n", "@1 a|b|c\n@2 1|2|3\n");
    expect("a,b\n1,2", "@1 a|b\n@2 1|2\n"); /* no final line break */
    expect("x", "@1 x\n");
    expect("", "");
    expect("\n\r\n", "");
}

static void test_quoted(void **state)
{
    (void)state;
    expect("1,\"a,b\",c\n", "@1 1|a,b|c\n");
    expect("1,\"say \"\"hi\"\"\",2\n", "@1 1|say \"hi\"|2\n");
    expect("\"\",\"\"\"\"\n", "@1 |\"\n");
    /* Line breaks inside quotes belong to the field and still count as lines. */
    expect("1,\"two\nlines\",x\n2,y,z\n", "@1 1|two\nlines|x\n@3 2|y|z\n");
    expect("1,\"a\r\nb\"\r\n2,c\r\n", "@1 1|a\r\nb\n@3 2|c\n");
    expect("1,\"a\rb\"\r2,c", "@1 1|a\rb\n@3 2|c\n");
    expect("1,\"\"\"正品\"\"吗\n第二行\"\n2,x\n", "@1 1|\"正品\"吗\n第二行\n@3 2|x\n");
}

/* A quote inside an unquoted field is an ordinary character. */
static void test_stray_quotes(void **state)
{
    (void)state;
    expect("1,ab\"c,2\n", "@1 1|ab\"c|2\n");
    expect("id,Reviews\n1,我买的是\"正品\"吗\n", "@1 id|Reviews\n@2 1|我买的是\"正品\"吗\n");
    expect("1,a\"\"b\"\n2,\"\n", "@1 1|a\"\"b\"\n!t.csv:2: a quoted field opened here is never closed [2]\n");
    expect("1,x\"\r\n2,\"y\"\r\n", "@1 1|x\"\n@2 2|y\n");
}

static void test_line_breaks(void **state)
{
    (void)state;
    expect("a,b\r\nc,d\r\n", "@1 a|b\n@2 c|d\n");
    expect("a,b\rc,d\r", "@1 a|b\n@2 c|d\n");
    expect("a\n\n\nb\n", "@1 a\n@4 b\n"); /* blank lines skipped, counted */
    expect("\r\n\r\na,b\r\n", "@3 a|b\n");
    /* CRLF after a quoted review (as spreadsheet programs write it). */
    expect("id,Reviews\r\n1,很好\r\n2,\"包装很好，物流很快\"\r\n3,很好用\r\n",
           "@1 id|Reviews\n@2 1|很好\n@3 2|包装很好，物流很快\n@4 3|很好用\n");
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
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
    size_t len = 99;
    assert_string_equal(te_csv_field(csv, 1, &len), "");
    assert_int_equal(len, 0);
    assert_string_equal(te_csv_field(csv, 2, &len), "");
    assert_int_equal(len, 0);
    assert_null(te_csv_field(csv, 3, &len));
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_END);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_END);
    te_csv_free(csv);
}

static void test_bom(void **state)
{
    (void)state;
    int bom = -1;
    char *got = dump("\xEF\xBB\xBFid,x\n1,2\n", 12, 0, &bom);
    assert_int_equal(bom, 1);
    assert_string_equal(got, "@1 id|x\n@2 1|2\n");
    free(got);
    got = dump("id,x\n", 5, 0, &bom);
    assert_int_equal(bom, 0);
    free(got);
    got = dump("\xEF\xBB\xBF", 3, 0, &bom);
    assert_int_equal(bom, 1);
    assert_string_equal(got, "");
    free(got);
    got = dump("\xEF\xBB", 2, 0, &bom); /* half a BOM is text, and not UTF-8 */
    assert_int_equal(bom, 0);
    assert_string_equal(got, "!t.csv:1: invalid UTF-8 (byte 0xEF at byte 1 of the line); the files "
                             "must be UTF-8 []\n");
    free(got);
}

#define BAD_UTF8(line, byte, at) \
    "!t.csv:" #line ": invalid UTF-8 (byte " byte " at byte " #at " of the line); the files must be UTF-8"

/* Text that is not UTF-8 breaks its record only; the next is read as usual. */
static void test_invalid_utf8(void **state)
{
    (void)state;
    expect_n("a\nb\n\xFF\nc\n", 8, 0, "@1 a\n@2 b\n" BAD_UTF8(3, "0xFF", 1) " []\n@4 c\n");
    /* Overlong "/" (C0 AF), a surrogate (ED A0 80), past U+10FFFF (F4 90 80 80). */
    expect_n("ok\r\nx,\xC0\xAF\n", 8, 0, "@1 ok\n" BAD_UTF8(2, "0xC0", 3) " [x]\n");
    expect_n("\xED\xA0\x80", 3, 0, BAD_UTF8(1, "0xED", 1) " []\n");
    expect_n("1\r2\r\xF4\x90\x80\x80", 8, 0, "@1 1\n@2 2\n" BAD_UTF8(3, "0xF4", 1) " []\n");
    /* A character cut by the end of the file. */
    expect_n("好\n\xE5\xA5", 6, 0, "@1 好\n" BAD_UTF8(2, "0xE5", 1) " []\n");
    /* Line numbers count breaks inside quoted fields too. */
    expect_n("1,\"a\nb\"\n2,\xFE\n", 12, 0, "@1 1|a\nb\n" BAD_UTF8(3, "0xFE", 3) " [2]\n");
    expect_n("1,\"a\nb\xFE\",c\n", 11, 0, BAD_UTF8(2, "0xFE", 2) " [1]\n");
    /* Valid multibyte text passes: 2, 3 and 4 bytes. */
    expect("é,好,\xF0\x9F\x98\x80\n", "@1 é|好|\xF0\x9F\x98\x80\n");
}

static void test_nul(void **state)
{
    (void)state;
    expect_n("a\nb\0c\n1,x\n", 10, 0, "@1 a\n!t.csv:2: NUL byte: not a text file []\n@3 1|x\n");
}

#define NEVER_CLOSED(line) "!t.csv:" #line ": a quoted field opened here is never closed"
#define AFTER_QUOTE(line) \
    "!t.csv:" #line ": text after the closing quote of a field (write a quote inside quotes as \"\")"

/* A broken record costs that record: reading resumes at the next line that
 * starts a well-formed row. */
static void test_broken_records(void **state)
{
    (void)state;
    expect("1,2\n3,\"open\nnever closed\n", "@1 1|2\n" NEVER_CLOSED(2) " [3]\n@3 never closed\n");
    /* With the row's field count known, a line of another count is skipped. */
    expect_rows("1,2\n3,\"open\nnever closed\n4,ok\n", 2,
             "@1 1|2\n" NEVER_CLOSED(2) " [3]\n!t.csv:3: line skipped: 1 field where a row has 2 "
             "(after the broken record of line 2) []\n@4 4|ok\n");
    expect("1,\"ab\"c,2\n5,x\n", AFTER_QUOTE(1) " [1]\n@2 5|x\n");
    expect("\"ab\"c\n", AFTER_QUOTE(1) " []\n");
    /* The quote of id 2 runs over lines 3 and 4 and closes with text after it on line 4. */
    expect_rows("id,Reviews\n1,很好\n2,\"包装很好\n3,很好用\n4,\"a,b\"\n", 2,
             "@1 id|Reviews\n@2 1|很好\n!t.csv:3: a quoted field opened here ends on line 5 with "
             "text after its closing quote (write a quote inside quotes as \"\") [2]\n@4 3|很好用\n"
             "@5 4|a,b\n");
    /* Two unclosed quotes in a row: each reported, each with its id. */
    expect_rows("1,\"x\n2,\"y\n3,z\n", 2,
             "!t.csv:1: a quoted field opened here ends on line 2 with text after its closing "
             "quote (write a quote inside quotes as \"\") [1]\n" NEVER_CLOSED(2) " [2]\n@3 3|z\n");
    /* A line that is itself broken while resynchronising is reported as such. */
    expect_rows("1,\"a\nb\"x\n2,\"c\n", 2,
             "!t.csv:1: a quoted field opened here ends on line 2 with text after its closing "
             "quote (write a quote inside quotes as \"\") [1]\n!t.csv:2: line skipped: 1 field "
             "where a row has 2 (after the broken record of line 1) []\n" NEVER_CLOSED(3) " [2]\n");
}

/* The 7-review file of a spreadsheet: BOM, CRLF, stray quotes, an unclosed
 * quote, a quoted review with a comma; every id comes back, in order. */
static void test_messy_file(void **state)
{
    (void)state;
    const char *text = "\xEF\xBB\xBFid,Reviews\r\n1,很好\r\n2,我买的是\"正品\"吗\r\n"
                       "3,\"包装很好，物流很快\"\r\n4,\"没有结束\r\n5,好\"用\"\r\n6,不错, 真的\r\n"
                       "7,\"一般,还行\"\r\n";
    int bom = 0;
    char *got = dump(text, strlen(text), 2, &bom);
    assert_int_equal(bom, 1);
    assert_string_equal(got, "@1 id|Reviews\n@2 1|很好\n@3 2|我买的是\"正品\"吗\n"
                             "@4 3|包装很好，物流很快\n"
                             "!t.csv:5: a quoted field opened here ends on line 6 with text after "
                             "its closing quote (write a quote inside quotes as \"\") [4]\n"
                             "@6 5|好\"用\"\n@7 6|不错| 真的\n@8 7|一般,还行\n");
    free(got);
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
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n + 7, f), n + 7);
    rewind(f);
    te_csv *readers[2] = {te_csv_new("big.csv", text, n + 7, &err), te_csv_open("big.csv", f, &err)};
    for (int k = 0; k < 2; k++) {
        te_csv *csv = readers[k];
        assert_non_null(csv);
        assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
        size_t len = 0;
        const char *fld = te_csv_field(csv, 1, &len);
        assert_int_equal(len, n);
        assert_int_equal(fld[n - 1], 'a' + (n - 1) % 26);
        assert_string_equal(te_csv_field(csv, 2, NULL), "z");
        te_csv_free(csv);
    }
    fclose(f);
    free(text);
}

/* A stream holds at most TE_CSV_MAX_RECORD bytes of a record: an unclosed
 * quote over a long input is reported and the rows after it still come. */
static void test_stream_limit(void **state)
{
    (void)state;
    size_t n = TE_CSV_MAX_RECORD + 4096;
    FILE *f = tmpfile();
    assert_non_null(f);
    fputs("1,\"", f);
    for (size_t i = 0; i < n; i++)
        putc(i % 100 == 99 ? '\n' : 'x', f);
    fputs("\n2,ok\n", f);
    rewind(f);
    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_open("long.csv", f, &err);
    te_csv_expect_fields(csv, 2);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_BROKEN);
    assert_string_equal(err.message, "long.csv:1: a record longer than 16 MiB (a quote never closed?)");
    assert_int_equal(te_csv_n_fields(csv), 1);
    te_csv_result r;
    long skipped = 0;
    while ((r = te_csv_next(csv, &err)) == TE_CSV_BROKEN)
        skipped++;
    assert_int_equal(skipped, (long)(n / 100)); /* each line of x: 1 field where a row has 2 */
    assert_int_equal(r, TE_CSV_ROW);
    assert_string_equal(te_csv_field(csv, 0, NULL), "2");
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_END);
    te_csv_free(csv);
    fclose(f);
}

static void on_alarm(int sig)
{
    (void)sig;
    _exit(3); /* a reader that waits for input it does not need */
}

/* A record is handed on as soon as its line has come, without waiting for
 * more input: what lets a producer wait for the answer to each line. */
static void test_stream_latency(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    FILE *f = fdopen(fds[0], "r");
    assert_non_null(f);
    const char *lines = "id,Reviews\r\n1,\"a\nb\"\r\n";
    assert_int_equal(write(fds[1], lines, strlen(lines)), (ssize_t)strlen(lines));
    signal(SIGALRM, on_alarm);
    alarm(10);
    te_error err = {TE_OK, ""};
    te_csv *csv = te_csv_open("pipe", f, &err);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
    assert_string_equal(te_csv_field(csv, 1, NULL), "a\nb");
    assert_int_equal(write(fds[1], "2,c", 3), 3);
    close(fds[1]);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
    assert_int_equal(te_csv_line(csv), 4);
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_END);
    alarm(0);
    te_csv_free(csv);
    fclose(f);
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
    assert_int_equal(te_csv_next(csv, &err), TE_CSV_ROW);
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
    assert_null(te_csv_open("x", NULL, &err));
    assert_int_equal(err.code, TE_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),          cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_stray_quotes),   cmocka_unit_test(test_line_breaks),
        cmocka_unit_test(test_empty_fields),   cmocka_unit_test(test_bom),
        cmocka_unit_test(test_invalid_utf8),   cmocka_unit_test(test_nul),
        cmocka_unit_test(test_broken_records), cmocka_unit_test(test_messy_file),
        cmocka_unit_test(test_huge_field),     cmocka_unit_test(test_stream_limit),
        cmocka_unit_test(test_stream_latency), cmocka_unit_test(test_many_fields),
        cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
