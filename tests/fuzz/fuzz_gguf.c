/* fuzz_gguf.c - any bytes as a .gguf model: accepted or refused, never a crash. */
#include "fuzz_util.h"
#include "pd_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".gguf", data, size);
    pdi_tensor_store st;
    pd_config cfg;
    pdi_vocab_parts vocab;
    pd_error err;
    pdi_store_init(&st);
    if (pdi_gguf_load(path, &st, &cfg, &vocab, &err) == PD_OK) {
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < st.n_tensors; i++)
            for (size_t b = 0; b < st.tensors[i].nbytes; b++) sum ^= st.tensors[i].data[b];
        (void)sum;
        pdi_vocab_parts_free(&vocab);
    }
    pdi_store_free(&st);
    /* the whole model path too: weights bound, tokenizer built from the vocabulary */
    pd_model *m = pd_model_load(path, NULL, &err);
    if (m) {
        pd_context_params cp = {8, 1, 4, 0, PD_KV_AUTO};
        pd_context *ctx = pd_context_new(m, &cp, &err);
        int32_t ids[2] = {0, 1};
        if (ctx) pd_eval_tokens(ctx, ids, pd_model_config(m)->vocab > 1 ? 2 : 1, &err);
        pd_context_free(ctx);
        pd_model_free(m);
    }
    return 0;
}
