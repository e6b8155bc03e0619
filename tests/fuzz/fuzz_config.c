/* fuzz_config.c - any bytes as config.json: a Qwen3 config or a clear refusal. */
#include "fuzz_util.h"
#include "pd_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("-config.json", data, size);
    pd_config cfg;
    pd_error err;
    if (pdi_hf_config_load(path, &cfg, &err) == PD_OK) {
        /* what the loader accepted must be sane enough to size buffers from */
        if (cfg.hidden <= 0 || cfg.n_layers <= 0 || cfg.n_heads <= 0 || cfg.n_kv_heads <= 0 ||
            cfg.n_heads % cfg.n_kv_heads != 0 || cfg.head_dim <= 0 || cfg.vocab <= 0)
            abort();
    }
    return 0;
}
