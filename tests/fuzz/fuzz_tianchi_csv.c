/* fuzz_tianchi_csv.c - any bytes as each of the evaluator's inputs, then scoring. */
#include "fuzz_util.h"
#include "tianchi_eval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    te_error err;
    te_eval *ev = te_eval_new(&err);
    if (!ev) return 0;
    /* one input split three ways: gold, predictions, reviews */
    size_t a = size / 3, b = 2 * size / 3;
    te_eval_load_buffer(ev, TE_INPUT_GOLD, "gold.csv", (const char *)data, a, &err);
    te_eval_load_buffer(ev, TE_INPUT_PREDICTIONS, "pred.csv", (const char *)data + a, b - a, &err);
    te_eval_load_buffer(ev, TE_INPUT_REVIEWS, "reviews.csv", (const char *)data + b, size - b, &err);
    te_result *res = te_eval_score(ev, &err);
    if (res) {
        te_free(te_result_json(res, TE_REPORT_ERRORS, &err));
        te_result_free(res);
    }
    te_eval_free(ev);
    return 0;
}
