/*
 * mnn.h - MNN's LLM export (llm.mnn, llm.mnn.weight, llm_config.json,
 * tokenizer.txt) read onto the Qwen3 forward. Internal to lib/formats, its
 * tests and its fuzz target.
 *
 * mnn_graph.c reads the graph (a FlatBuffer of MNN's schema/default/ files)
 * for what the forward needs: per layer the fused q/k/v, o, fused gate/up and
 * down projections with where their int4 blocks and scales lie in the weight
 * file, the norms, the head counts of the RoPE op, the RoPE table's theta;
 * any op or setting the forward cannot honour is refused naming the op.
 * mnn.c checks those against llm_config.json and the weight file and maps
 * them into the tensor store as Q4_64 (the same bits, repacked once).
 */
#ifndef PD_MNN_H
#define PD_MNN_H

#include "formats.h"

/* A 4-bit asymmetric linear weight of the graph (MNN IDSTQuan, external). */
typedef struct pdi_mnn_linear {
    const char *op;       /* op name, in the graph's mapping */
    int64_t offset;       /* of its header in llm.mnn.weight */
    int64_t weight_bytes; /* header + packed nibbles */
    int64_t alpha_bytes;  /* F16 (zero, scale) pairs, one per block */
    int32_t rows, cols;   /* outputCount, inputCount */
    int32_t header;       /* bytes before the nibbles */
    bool dims32;          /* the header's dims are int32 (shapeInt32) */
} pdi_mnn_linear;

/* A norm's gamma: in the weight file (offset) or inline in the graph (at). */
typedef struct pdi_mnn_norm {
    const char *op;
    int64_t offset, beta_offset; /* -1 when inline / absent */
    const uint8_t *at;           /* inline F32 gamma, or NULL */
    int32_t n;
    float eps;
} pdi_mnn_norm;

typedef struct pdi_mnn_layer {
    pdi_mnn_norm attn_norm, ffn_norm, q_norm, k_norm;
    pdi_mnn_linear q, k, v, o, gate, up, down;
} pdi_mnn_layer;

typedef struct pdi_mnn_graph {
    pdi_mnn_layer *layers;
    int32_t n_layers;
    pdi_mnn_norm final_norm;
    pdi_mnn_linear lm_head;
    int32_t n_heads, n_kv_heads, head_dim;
    float rope_theta; /* 0 when the graph holds no RoPE table */
} pdi_mnn_graph;

/* Read an llm.mnn graph held in data[0..size) (path for messages). Names in
 * g point into data. PD_ERR_FORMAT for a malformed buffer or a graph that is
 * not a sequence of Qwen3 layers, PD_ERR_UNSUPPORTED for an op or setting the
 * forward does not run (another bit width, block, symmetric scales, a bias,
 * an unknown op...); the message names the op and what differs. */
pd_status pdi_mnn_graph_read(const uint8_t *data, size_t size, const char *path, pdi_mnn_graph *g, pd_error *err);

void pdi_mnn_graph_free(pdi_mnn_graph *g);

#endif /* PD_MNN_H */
