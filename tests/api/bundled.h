/* bundled.h - the bundled models and schemas of the source tree, for the
 * tests of this folder (cmocka's fail_msg on any error), and their main(). */
#ifndef PD_TESTS_BUNDLED_H
#define PD_TESTS_BUNDLED_H

#include <limits.h>
#include <stdio.h>

#include "pocketdec.h"

static const char *root;        /* the source tree: argv[1] */
static const char *bundled_arg; /* argv[2], a test's own argument (NULL when none) */

static pd_bundle *open_bundle(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/models/%s", root, name);
    pd_error err;
    pd_bundle *b = pd_bundle_open(path, NULL, &err);
    if (!b) fail_msg("%s", err.message);
    return b;
}

static pd_schema *open_schema(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/schemas/%s", root, name);
    pd_error err;
    pd_schema *s = pd_schema_load(path, &err);
    if (!s) fail_msg("%s", err.message);
    return s;
}

/* main(): the source tree from argv[1] (and argv[2] if given), then the tests. */
#define BUNDLED_MAIN(name, ...)                                                      \
    int main(int argc, char **argv)                                                   \
    {                                                                                 \
        if (argc != 2 && argc != 3) {                                                 \
            fprintf(stderr, "usage: %s SOURCE_ROOT [ARG]\n", name);                   \
            return 2;                                                                 \
        }                                                                             \
        root = argv[1];                                                               \
        bundled_arg = argc == 3 ? argv[2] : NULL;                                     \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                              \
        return cmocka_run_group_tests(tests, NULL, NULL);                             \
    }

#endif
