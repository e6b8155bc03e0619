/* cmocka.h - the few cmocka calls of tests/model/test_kernels.c, for the
 * aarch64 build under qemu (scripts/test-arm.sh), where no arm64 libcmocka is
 * installed. Same names and meaning; a failed check ends the program. */
#ifndef PD_CMOCKA_SHIM_H
#define PD_CMOCKA_SHIM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CMUnitTest {
    const char *name;
    void (*fn)(void **state);
};

#define cmocka_unit_test(f) {#f, f}
#define fail_msg(...)                                                                                              \
    do {                                                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                                           \
        fprintf(stderr, __VA_ARGS__);                                                                              \
        fprintf(stderr, "\n");                                                                                     \
        exit(1);                                                                                                   \
    } while (0)
#define assert_true(c)                                                                                             \
    do {                                                                                                           \
        if (!(c)) fail_msg("assertion failed: %s", #c);                                                            \
    } while (0)
#define assert_int_equal(a, b) assert_true((long long)(a) == (long long)(b))
#define assert_memory_equal(a, b, n) assert_true(memcmp((a), (b), (n)) == 0)

static inline int pd_shim_run(const char *group, const struct CMUnitTest *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        printf("[ RUN      ] %s\n", t[i].name);
        t[i].fn(NULL);
        printf("[       OK ] %s\n", t[i].name);
    }
    printf("[  PASSED  ] %zu test(s) of %s.\n", n, group);
    return 0;
}
#define cmocka_run_group_tests_name(group, tests, setup, teardown)                                                \
    pd_shim_run(group, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
