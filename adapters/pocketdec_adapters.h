/*
 * pocketdec_adapters.h - PEFT LoRA adapters (adapters/): load one, apply
 * adapters to a model. Part of libpocketdec; include pocketdec.h for all of it.
 */
#ifndef POCKETDEC_ADAPTERS_H
#define POCKETDEC_ADAPTERS_H

#include "pocketdec_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- adapters */

/* PEFT LoRA adapters, applied exactly as PEFT defines them: W' = W + scale * B A
 * with scale = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora), on any
 * of the q, k, v, o, gate, up and down projections of any layers. Applying
 * adapters makes a new model that shares the base's mapped weights; the base
 * is never modified, so freeing the adapted model ("unmerge") leaves the base
 * exactly as loaded, and switching adapters is applying another set to the
 * same base (no reload). */
typedef struct pd_adapter pd_adapter;

/* Load a PEFT directory: adapter_config.json (peft_type "LORA", r, lora_alpha,
 * use_rslora, target_modules) and adapter_model.safetensors (keys with or
 * without the "base_model.model." prefix and with or without an adapter name,
 * "lora_A.default.weight"). What PEFT can write but pocketdec cannot apply
 * exactly is refused with PD_ERR_UNSUPPORTED: DoRA, LoRA biases,
 * modules_to_save, rank_pattern/alpha_pattern, fan_in_fan_out, layer
 * replication, embedding or lm_head targets. A lora_A without its lora_B, or
 * a rank other than r, gives PD_ERR_SHAPE naming the tensor. */
PD_API pd_adapter *pd_adapter_load(const char *dir, pd_error *err);
PD_API void pd_adapter_free(pd_adapter *adapter);

/* r, the scale (lora_alpha / r or lora_alpha / sqrt(r)), the number of
 * adapted matrices, and base_model_name_or_path ("" when absent); 0 or ""
 * for a NULL adapter. */
PD_API int32_t pd_adapter_rank(const pd_adapter *adapter);
PD_API float pd_adapter_scale(const pd_adapter *adapter);
PD_API size_t pd_adapter_n_targets(const pd_adapter *adapter);
PD_API const char *pd_adapter_base_model(const pd_adapter *adapter);

typedef enum pd_apply_mode {
    /* merge into F32 copies the matrices stored as F32, and 16-bit ones whose
     * update is large for them (rank x (rows + cols) > rows x cols / 8: at
     * runtime it would add more than an eighth of the product's work;
     * widening BF16/F16 is exact); add the others' B (A x) at runtime
     * (quantized bases and small updates of 16-bit ones: no copy, no
     * re-rounding of weights, e.g. of quantization-aware-trained 4-bit ones) */
    PD_APPLY_AUTO = 0,
    PD_APPLY_MERGE = 1,   /* every adapted matrix becomes an F32 copy W + scale B A */
    PD_APPLY_RUNTIME = 2  /* no copies: y = W x + scale B (A x) */
} pd_apply_mode;

/* A model with adapters[0..n) applied on top of base, adapter i scaled by
 * weights[i] (weights NULL: all 1); adapters of one matrix add up. base must
 * outlive the result; the adapters need not (their tensors are copied). Free
 * the result with pd_model_free (before base). Like a loaded model it is
 * immutable and may be shared by contexts in any threads. Shapes that do not
 * fit the base (another hidden size, a layer the base lacks) give
 * PD_ERR_SHAPE naming the tensor and both shapes; a rank above 1024 applied at
 * runtime gives PD_ERR_UNSUPPORTED. */
PD_API pd_model *pd_model_apply_adapters(const pd_model *base, const pd_adapter *const *adapters, const float *weights,
                                         size_t n, pd_apply_mode mode, pd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* POCKETDEC_ADAPTERS_H */
