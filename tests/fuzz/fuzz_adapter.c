/* fuzz_adapter.c - a PEFT adapter directory from arbitrary bytes: the input up
 * to its first NUL byte is adapter_config.json, the rest
 * adapter_model.safetensors. What loads is applied to a small model in both
 * modes. */
#include "fuzz_util.h"
#include "pd_internal.h"
#include "pocketdec.h"

static pd_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pd_error err;
    const char *path = getenv("PD_FUZZ_MODEL");
    model = path ? pd_model_load(path, NULL, &err) : NULL; /* without one, loading alone is fuzzed */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_write_pair("adapter", "adapter_config.json", "adapter_model.safetensors", data, size);
    pd_error err;
    pd_adapter *a = pd_adapter_load(dir, &err);
    if (a && model) {
        for (int mode = PD_APPLY_MERGE; mode <= PD_APPLY_RUNTIME; mode++) {
            const pd_adapter *list[1] = {a};
            pd_model *m = pd_model_apply_adapters(model, list, NULL, 1, (pd_apply_mode)mode, &err);
            pd_model_free(m);
        }
    }
    pd_adapter_free(a);
    return 0;
}
