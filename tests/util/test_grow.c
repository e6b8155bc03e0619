/* test_grow.c - the library's one growth rule (pdi_grow) and the byte
 * string on it (pdi_buf): capacities, the need of zero, overflow refused with
 * the array left to its owner, a failed append that sticks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_internal.h"

#include <stdlib.h>
#include <string.h>

static void test_grow_capacities(void **state)
{
    (void)state;
    size_t cap = 0;
    int32_t *v = pdi_grow(NULL, &cap, 1, sizeof *v);
    assert_non_null(v);
    assert_int_equal(cap, 16); /* the first capacity */
    v[15] = 7;
    assert_ptr_equal(pdi_grow(v, &cap, 16, sizeof *v), v); /* room already: the same array */
    int32_t *w = pdi_grow(v, &cap, 17, sizeof *w);
    assert_non_null(w);
    assert_int_equal(cap, 32); /* doubled */
    assert_int_equal(w[15], 7); /* the contents kept */
    w = pdi_grow(w, &cap, 1000, sizeof *w);
    assert_non_null(w);
    assert_int_equal(cap, 1024); /* doubled until it holds the need */
    free(w);
    cap = 0;
    char *z = pdi_grow(NULL, &cap, 0, 1); /* a need of zero still gives an array: success is never NULL */
    assert_non_null(z);
    free(z);
}

static void test_grow_overflow(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = pdi_grow(NULL, &cap, 4, 1);
    assert_non_null(p);
    memcpy(p, "abc", 4);
    size_t before = cap;
    assert_null(pdi_grow(p, &cap, SIZE_MAX, 1));              /* the capacity would overflow */
    assert_null(pdi_grow(p, &cap, SIZE_MAX / 4, sizeof(double))); /* the bytes would */
    assert_int_equal(cap, before);                           /* untouched, and still the caller's */
    assert_string_equal(p, "abc");
    free(p);
}

static void test_buf(void **state)
{
    (void)state;
    pdi_buf b = {0};
    assert_true(pdi_buf_append(&b, "", 0));
    assert_string_equal(b.data, ""); /* NUL-terminated once anything was appended */
    for (int i = 0; i < 100; i++) assert_true(pdi_buf_append(&b, "ab", 2));
    assert_int_equal(b.len, 200);
    assert_int_equal(strlen(b.data), 200);
    assert_false(pdi_buf_append(&b, "x", SIZE_MAX)); /* too long: fails and sticks */
    assert_true(b.failed);
    assert_false(pdi_buf_append(&b, "c", 1));
    assert_int_equal(b.len, 200);
    free(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_capacities),
        cmocka_unit_test(test_grow_overflow),
        cmocka_unit_test(test_buf),
    };
    return cmocka_run_group_tests_name("grow", tests, NULL, NULL);
}
