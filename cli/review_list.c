/* review_list.c - every review of a file in memory, for the commands that
 * order them before any is run (rank, serve --teach); read row by row by
 * the one reader of reviews (reviews.c), so the columns, --encoding and the
 * errors are extract's. */
#include "reviews.h"

#include <stdlib.h>
#include <string.h>

void cli_review_list_free(cli_review_list *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->ids[i]);
        free(v->texts[i]);
    }
    free(v->ids);
    free(v->texts);
    free(v->lens);
    *v = (cli_review_list){0};
}

static int by_id(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* A repeated id: named with the line of its second row. */
static int repeated_id(const cli_review_list *v, const long *lines, const char *name)
{
    char ***by = malloc((v->n ? v->n : 1) * sizeof *by);
    if (!by) return cli_failf("out of memory");
    for (size_t i = 0; i < v->n; i++) by[i] = &v->ids[i];
    qsort(by, v->n, sizeof *by, by_id);
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < v->n; i++)
        if (strcmp(*by[i - 1], *by[i]) == 0) {
            size_t k = (size_t)(by[i] - v->ids), j = (size_t)(by[i - 1] - v->ids);
            rc = cli_failf("%s:%ld: the id %s is also the id of line %ld: each review needs an id of its own", name,
                           lines[k > j ? k : j], *by[i], lines[k > j ? j : k]);
        }
    free(by);
    return rc;
}

/* Room for one more review (and its line); 0, or the exit code after the message. */
static int grow(cli_review_list *v, long **lines, size_t *cap, const char *name)
{
    if (v->n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : 256;
    char **ids = realloc(v->ids, c * sizeof *ids);
    if (ids) v->ids = ids;
    char **texts = ids ? realloc(v->texts, c * sizeof *texts) : NULL;
    if (texts) v->texts = texts;
    size_t *lens = texts ? realloc(v->lens, c * sizeof *lens) : NULL;
    if (lens) v->lens = lens;
    long *l = lens ? realloc(*lines, c * sizeof *l) : NULL;
    if (!l) return cli_failf("out of memory reading %s", name);
    *lines = l;
    *cap = c;
    return 0;
}

int cli_review_list_load(cli_args *a, const char *option, cli_review_list *out)
{
    *out = (cli_review_list){0};
    cli_reviews r = {0};
    int rc = cli_reviews_open(a, &r, cli_opt(a, option), cli_opt(a, "--input-format"));
    size_t cap = 0;
    long *lines = NULL;
    cli_review w;
    while (rc == 0 && cli_reviews_next(&r, &w)) {
        if (r.failed) rc = cli_reviews_fail(&r);
        else if (w.problem[0]) rc = cli_failf("%s", w.problem);
        else if (!w.header && (rc = grow(out, &lines, &cap, r.name)) == 0) {
            out->ids[out->n] = strdup(w.id);
            out->texts[out->n] = strndup(w.text, w.text_len);
            out->lens[out->n] = w.text_len;
            lines[out->n] = w.line;
            if (!out->ids[out->n] || !out->texts[out->n]) {
                free(out->ids[out->n]);
                free(out->texts[out->n]);
                rc = cli_failf("out of memory reading %s", r.name);
            } else {
                out->n++;
            }
        }
        cli_review_release(&w);
    }
    if (rc == 0 && out->n == 0) rc = cli_failf("%s: no reviews found (the input is empty, or holds only a header)", r.name);
    if (rc == 0) rc = repeated_id(out, lines, r.name);
    free(lines);
    cli_reviews_close(&r);
    if (rc) cli_review_list_free(out);
    return rc;
}
