/* cmd_rank.c - `pocketdec rank`: the reviews of --input, most useful to
 * label first, by an ordering of the library's (pd_ranker: the one the
 * annotation queue of `pocketdec serve --teach` uses). */
#include "cli.h"
#include "reviews.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cmd_rank(cli_args *a)
{
    const char *schema_path = cli_opt(a, "--schema"), *order_name = cli_opt(a, "--order"),
               *out_path = cli_opt(a, "--output");
    pd_pipeline_params pp = pd_pipeline_default_params();
    pd_rank_order order;
    pd_error err;
    int32_t seed;
    int rc;
    if (!schema_path) return cli_usage(a, "--schema FILE is required");
    if (order_name && pd_rank_order_parse(order_name, &order, &err)) return cli_usage(a, err.message);
    if ((rc = cli_int_opt(a, "--seed", 0, 0, INT32_MAX, &seed)) || (rc = cli_threads_opt(a, &pp.n_threads)) ||
        (rc = cli_pipeline_opts(a, &pp)))
        return rc;
    pp.parallel = 1; /* one review at a time: one context */
    pd_schema *schema = pd_schema_load(schema_path, &err);
    if (!schema) return cli_fail(&err);
    cli_model m = {0};
    cli_review_list v = {0};
    pd_ranker *rk = NULL;
    double *scores = NULL;
    size_t *idx = NULL;
    FILE *out = NULL;
    if ((rc = cli_review_list_load(a, "--input", &v)) || (rc = cli_model_open(a, &m, true))) goto done;
    if (!order_name) order = pd_rank_default_order(m.head);
    if (!(rk = pd_ranker_new(m.model, schema, m.head, order, (uint64_t)seed, &pp, &err))) {
        rc = cli_fail(&err);
        goto done;
    }
    scores = malloc(v.n * sizeof *scores);
    idx = malloc(v.n * sizeof *idx);
    if (!scores || !idx) {
        rc = cli_failf("out of memory");
        goto done;
    }
    for (size_t i = 0; i < v.n; i++)
        if (pd_ranker_score(rk, v.ids[i], v.texts[i], v.lens[i], &scores[i], NULL, &err)) {
            rc = cli_failf("%s: id %s: %s", cli_opt(a, "--input"), v.ids[i], err.message);
            goto done;
        }
    if (pd_rank_sort(scores, v.n, idx, &err)) {
        rc = cli_fail(&err);
        goto done;
    }
    out = !out_path || strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "wb");
    if (!out) {
        rc = cli_failf("%s: cannot create: %s", out_path, strerror(errno));
        goto done;
    }
    for (size_t k = 0; k < v.n; k++) {
        json_t *line = json_pack("{s:s,s:f}", "id", v.ids[idx[k]], "score", scores[idx[k]]);
        if (!line || json_dumpf(line, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) ||
            fputc('\n', out) == EOF)
            rc = cli_failf("%s: cannot write: %s", out_path ? out_path : "stdout", strerror(errno));
        json_decref(line);
        if (rc) break;
    }
    if ((fflush(out) || ferror(out)) && !rc) rc = cli_failf("%s: cannot write: %s", out_path, strerror(errno));
    if (out != stdout && fclose(out) && !rc) rc = cli_failf("%s: cannot write: %s", out_path, strerror(errno));
    if (!rc)
        fprintf(stderr, "pocketdec rank: %zu reviews ordered by %s\n", v.n, pd_rank_order_name(order));
done:
    free(scores);
    free(idx);
    pd_ranker_free(rk);
    cli_model_close(&m);
    cli_review_list_free(&v);
    pd_schema_free(schema);
    return rc;
}
