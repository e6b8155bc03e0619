/* fuzz_head.c - a head directory from arbitrary bytes: the input up to its
 * first NUL byte is head.json, the rest head.safetensors; what loads decides
 * once on a small model. */
#include "fuzz_util.h"
#include "pd_internal.h"

static pd_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pd_error err;
    const char *path = getenv("PD_FUZZ_HEAD_MODEL");
    model = path ? pd_model_load(path, NULL, &err) : NULL;
    if (!model) {
        fprintf(stderr, "fuzz_head: set PD_FUZZ_HEAD_MODEL to a model with the marker tokens\n");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_write_pair("head", "head.json", "head.safetensors", data, size);
    pd_error err;
    pd_head *h = pd_head_load(dir, model, &err);
    if (h) {
        pd_decider_params p = pd_decider_default_params();
        p.n_ctx = 64;
        pd_decider *d = pd_decider_new(model, h, &p, &err);
        static const char *const cands[2] = {"ab", "c"};
        pd_decision *dec = NULL;
        int32_t n_labels = 0;
        bool classifier = pd_head_get_type(h) == PD_HEAD_CLASSIFIER;
        if (classifier) pd_head_labels(h, &n_labels);
        if (d && pd_decide(d, "text", "q", classifier ? NULL : cands, classifier ? 0 : 2, &dec, &err) == PD_OK)
            pd_decision_free(dec);
        pd_decider_free(d);
        pd_head_free(h);
    }
    return 0;
}
