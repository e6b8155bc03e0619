/* server_stub.c - `pocketdec serve` in a build without libmicrohttpd: the
 * command says so (scripts/setup.sh installs libmicrohttpd-dev). */
#include "pocketdec_serve.h"

#include <stdio.h>

bool serve_available(void)
{
    return false;
}

int serve_run(const pd_model *model, const pd_schema *schema, const pd_head *head, const serve_config *cfg, char *msg,
              size_t msg_size)
{
    (void)model;
    (void)schema;
    (void)head;
    (void)cfg;
    snprintf(msg, msg_size, "this pocketdec was built without libmicrohttpd, so it cannot serve HTTP; "
                            "install libmicrohttpd-dev (scripts/setup.sh build) and build again");
    return 1;
}
