/* fuzz_mnn_graph.c - any bytes as an llm.mnn graph (the flatbuffer reader and
 * the graph walk), and as an MNN tokenizer.txt: read or refused, never a crash. */
#include "fuzz_util.h"
#include "mnn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pdi_mnn_graph g;
    pd_error err;
    if (pdi_mnn_graph_read(data, size, "llm.mnn", &g, &err) == PD_OK) {
        volatile int64_t sum = g.lm_head.offset + g.final_norm.n;
        for (int32_t l = 0; l < g.n_layers; l++) {
            const pdi_mnn_layer *L = &g.layers[l];
            sum += L->q.offset + L->down.rows + L->attn_norm.offset + L->q_norm.n;
            if (L->q_norm.at) sum += L->q_norm.at[4 * (size_t)L->q_norm.n - 1]; /* inline gamma: in the buffer */
        }
        (void)sum;
        pdi_mnn_graph_free(&g);
    }
    const char *path = fuzz_write_file(".txt", data, size);
    pdi_vocab_parts parts;
    int32_t eos;
    if (pdi_mnn_vocab_parts(path, &parts, &eos, &err) == PD_OK) {
        pd_tokenizer *tok = pdi_tokenizer_from_parts(&parts, path, &err);
        pd_tokenizer_free(tok);
        pdi_vocab_parts_free(&parts);
    }
    return 0;
}
