/* tok_test_util.h - small helpers shared by the tokenizer tests. */
#ifndef TOK_TEST_UTIL_H
#define TOK_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pd_internal.h"

/* Encode text (NUL-terminated) and compare with want[n_want]. */
#define assert_encodes(tok, text, ...)                                                       \
    do {                                                                                     \
        const int32_t want_[] = {__VA_ARGS__};                                               \
        check_encode((tok), (text), strlen(text), want_, sizeof want_ / sizeof want_[0]);    \
    } while (0)

/* Encode and expect no ids at all. */
#define assert_encodes_nothing(tok, text) check_encode((tok), (text), strlen(text), NULL, 0)

static inline void check_encode(const pd_tokenizer *tok, const char *text, size_t len, const int32_t *want,
                                size_t n_want)
{
    pd_error err = {0};
    int32_t *ids = NULL;
    size_t n = 0;
    pd_status st = pd_tokenizer_encode(tok, text, len, &ids, &n, &err);
    if (st != PD_OK) fail_msg("encode \"%s\": %s", text, err.message);
    int same = n == n_want;
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    if (!same) {
        char got[512] = "", exp[512] = "";
        for (size_t i = 0; i < n && strlen(got) < 480; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), " %d", (int)ids[i]);
        for (size_t i = 0; i < n_want && strlen(exp) < 480; i++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", (int)want[i]);
        pd_free(ids);
        fail_msg("encode \"%s\": got [%s ] want [%s ]", text, got, exp);
    }
    pd_free(ids);
}

#endif /* TOK_TEST_UTIL_H */
