/* fuzz_safetensors.c - any bytes as a .safetensors file: accepted or refused, never a crash. */
#include "fuzz_util.h"
#include "pd_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(".safetensors", data, size);
    pdi_tensor_store st;
    pd_error err;
    pdi_store_init(&st);
    if (pdi_safetensors_add(&st, path, &err) == PD_OK) {
        /* touch every byte of every tensor the loader vouched for */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < st.n_tensors; i++)
            for (size_t b = 0; b < st.tensors[i].nbytes; b++) sum ^= st.tensors[i].data[b];
        (void)sum;
    }
    pdi_store_free(&st);
    return 0;
}
