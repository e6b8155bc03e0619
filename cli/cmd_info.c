/* cmd_info.c - `pocketdec info`: a JSON summary of a model. */
#include "cli.h"

#include <stdlib.h>

int cmd_info(cli_args *a)
{
    const char *path = cli_opt(a, "--model");
    if (!path) return cli_usage(a, "--model PATH is required");
    char *file = cli_model_path(path);
    if (!file) return cli_failf("out of memory");
    pd_error err;
    pd_model *model = pd_model_load(file, NULL, &err);
    free(file);
    if (!model) return cli_fail(&err);
    char *s = pd_model_info_json(model);
    int rc = s ? (puts(s), 0) : cli_failf("out of memory");
    pd_free(s);
    pd_model_free(model);
    return rc;
}
