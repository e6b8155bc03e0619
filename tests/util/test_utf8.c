/* test_utf8.c - the library's one UTF-8 reader (lib/utf8.c) against Table 3-7
 * of the Unicode standard (the well-formed byte sequences, written out here as
 * byte ranges, a second reading that shares no code with the first): every
 * sequence of 1 to 3 bytes and a sweep of 4-byte ones; code points written
 * back by pdi_utf8_put; characters counted. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_internal.h"

#include <string.h>

/* Length of the well-formed sequence at s by Table 3-7, or 0. */
static size_t table_3_7(const uint8_t *s, size_t n)
{
    static const struct {
        uint8_t lo0, hi0, lo1, hi1;
        size_t len;
    } rows[] = {{0x00, 0x7F, 0, 0, 1},       {0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3},
                {0xE1, 0xEC, 0x80, 0xBF, 3}, {0xED, 0xED, 0x80, 0x9F, 3}, {0xEE, 0xEF, 0x80, 0xBF, 3},
                {0xF0, 0xF0, 0x90, 0xBF, 4}, {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (s[0] < rows[r].lo0 || s[0] > rows[r].hi0) continue;
        size_t len = rows[r].len;
        if (len == 1) return 1;
        if (n < len || s[1] < rows[r].lo1 || s[1] > rows[r].hi1) return 0;
        for (size_t k = 2; k < len; k++)
            if (s[k] < 0x80 || s[k] > 0xBF) return 0;
        return len;
    }
    return 0;
}

static void agree(const uint8_t *s, size_t n)
{
    uint32_t cp = 0;
    size_t want = table_3_7(s, n), got = pdi_utf8_char(s, n, &cp);
    if (got != want) fail_msg("%02x %02x %02x %02x (%zu bytes): %zu, Table 3-7 says %zu", s[0], n > 1 ? s[1] : 0,
                              n > 2 ? s[2] : 0, n > 3 ? s[3] : 0, n, got, want);
    if (got) { /* the code point written back gives the same bytes */
        char out[4];
        assert_int_equal(pdi_utf8_put(cp, out), got);
        assert_memory_equal(out, s, got);
    }
}

static void test_every_short_sequence(void **state)
{
    (void)state;
    uint8_t s[3];
    for (uint32_t v = 0; v < (1u << 24); v++) {
        s[0] = (uint8_t)(v >> 16), s[1] = (uint8_t)(v >> 8), s[2] = (uint8_t)v;
        agree(s, 3);
        if ((v & 0xFFFF) == 0) agree(s, 1);
        if ((v & 0xFF) == 0) agree(s, 2);
    }
}

static void test_four_byte_sequences(void **state)
{
    (void)state;
    uint8_t s[4];
    for (uint32_t b0 = 0xE8; b0 <= 0xFF; b0++)
        for (uint32_t b1 = 0x70; b1 <= 0xC8; b1++)
            for (uint32_t b2 = 0x78; b2 <= 0xC4; b2 += 3)
                for (uint32_t b3 = 0x00; b3 <= 0xFF; b3++) {
                    s[0] = (uint8_t)b0, s[1] = (uint8_t)b1, s[2] = (uint8_t)b2, s[3] = (uint8_t)b3;
                    agree(s, 4);
                    agree(s, 3); /* cut short */
                }
}

static void test_check_and_count(void **state)
{
    (void)state;
    assert_int_equal(pdi_utf8_check("abc", 3), 3);
    assert_int_equal(pdi_utf8_check("\xe8\xb4\xa8\xf0\x9f\x98\x80", 7), 7); /* 质, U+1F600 */
    assert_int_equal(pdi_utf8_check("a\xe8\xb4", 3), 1);                   /* cut short */
    assert_int_equal(pdi_utf8_check("ab\xf4\x90\x80\x80", 6), 2);          /* above U+10FFFF */
    assert_int_equal(pdi_utf8_check("\xe0\x80\x80", 3), 0);                /* overlong */
    assert_int_equal(pdi_utf8_check("x\xed\xa0\x80", 4), 1);               /* a surrogate */
    assert_int_equal(pdi_utf8_check("\x80", 1), 0);                        /* a lone continuation */
    assert_int_equal(pdi_utf8_check("", 0), 0);
    /* the public names read the same */
    uint32_t cp = 0;
    assert_int_equal(pd_utf8_valid_prefix("x\xed\xa0\x80", 4), 1);
    assert_int_equal(pd_utf8_valid_prefix("\xe8\xb4\xa8", 3), 3);
    assert_int_equal(pd_utf8_valid_prefix(NULL, 3), 0);
    assert_int_equal(pd_utf8_char("\xe8\xb4\xa8x", 4, &cp), 3);
    assert_int_equal(cp, 0x8D28);
    assert_int_equal(pd_utf8_char("\xc0\xaf", 2, &cp), 0);
    assert_int_equal(pd_utf8_char("a", 1, NULL), 1);
    assert_int_equal(pdi_utf8_count("质量a😀", strlen("质量a😀")), 4);
    assert_int_equal(pdi_utf8_count("", 0), 0);
    assert_true(pdi_utf8_is_continuation(0x80) && pdi_utf8_is_continuation(0xBF));
    assert_false(pdi_utf8_is_continuation(0x7F) || pdi_utf8_is_continuation(0xC0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_and_count),
        cmocka_unit_test(test_every_short_sequence),
        cmocka_unit_test(test_four_byte_sequences),
    };
    return cmocka_run_group_tests_name("utf8", tests, NULL, NULL);
}
