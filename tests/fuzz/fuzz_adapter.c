/* fuzz_adapter.c - a PEFT adapter directory from arbitrary bytes: the input up
 * to its first NUL byte is adapter_config.json, the rest
 * adapter_model.safetensors. What loads is applied to a small model in both
 * modes. */
#include "fuzz_util.h"
#include "pd_internal.h"

#include <sys/stat.h>

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
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "/tmp/pocketdec-fuzz-adapter-%ld", (long)getpid());
    mkdir(dir, 0700);
    const uint8_t *nul = memchr(data, 0, size);
    size_t cfg_len = nul ? (size_t)(nul - data) : size;
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, cfg_len, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    f = fopen(path, "wb");
    if (!f) abort();
    if (nul) fwrite(nul + 1, 1, size - cfg_len - 1, f);
    fclose(f);

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
