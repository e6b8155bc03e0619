/* reviews.c - the command's side of the reader of reviews (reviews.h): the
 * options given to the library's reader, its rows copied for the commands. */
#include "reviews.h"

#include <stdlib.h>
#include <string.h>

bool cli_reviews_next(cli_reviews *r, cli_review *w)
{
    pd_review row;
    memset(w, 0, sizeof *w);
    int got = pd_reviews_next(r->h, &row, &r->err);
    if (got == 0) return false;
    r->rows = pd_reviews_rows(r->h);
    if (got < 0) {
        r->failed = true;
        return true;
    }
    w->line = row.line;
    w->ordinal = row.ordinal;
    w->id = row.id;
    w->text = row.text;
    w->text_len = row.text_len;
    w->keep_id = row.keep_id;
    w->header = row.header;
    if (row.problem) snprintf(w->problem, sizeof w->problem, "%s", row.problem);
    w->extra = row.extra ? strdup(row.extra) : NULL;
    return true;
}

void cli_review_release(cli_review *w)
{
    free(w->extra);
    w->extra = NULL;
}

int cli_reviews_params(cli_args *a, const char *ifmt, pd_reviews_params *p)
{
    if (ifmt && strcmp(ifmt, "jsonl") && strcmp(ifmt, "csv")) return cli_usage(a, "--input-format must be csv or jsonl");
    *p = pd_reviews_default_params();
    p->format = !ifmt ? PD_REVIEWS_AUTO : strcmp(ifmt, "jsonl") == 0 ? PD_REVIEWS_JSONL : PD_REVIEWS_CSV;
    p->id_column = cli_opt(a, "--id-column");
    p->text_column = cli_opt(a, "--text-column");
    p->encoding = cli_opt(a, "--encoding");
    return 0;
}

int cli_reviews_open(cli_args *a, cli_reviews *r, const char *in, const char *ifmt)
{
    pd_reviews_params p;
    int rc = cli_reviews_params(a, ifmt, &p);
    if (rc) return rc;
    p.keep_extra = r->keep_extra;
    if (!(r->h = pd_reviews_open(in, &p, &r->err))) return cli_failf("%s", r->err.message);
    r->name = pd_reviews_name(r->h);
    r->jsonl = pd_reviews_get_format(r->h) == PD_REVIEWS_JSONL;
    return 0;
}

int cli_reviews_fail(const cli_reviews *r)
{
    return cli_failf("%s", r->err.message);
}

void cli_reviews_close(cli_reviews *r)
{
    pd_reviews_free(r->h);
    r->h = NULL;
}

const char *cli_reviews_column(const cli_reviews *r, const char *name, char *buf)
{
    return pd_reviews_column(r->h, name, buf);
}
