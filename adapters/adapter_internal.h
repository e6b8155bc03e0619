/* adapter_internal.h - what the two halves of the adapter module share. */
#ifndef PD_ADAPTER_INTERNAL_H
#define PD_ADAPTER_INTERNAL_H

#include "pd_internal.h"
#include "pocketdec_adapters.h"

/* The parts of adapter_config.json that change the numbers. */
typedef struct peft_config {
    int64_t r;
    double lora_alpha;
    bool use_rslora;
    char *base_model; /* base_model_name_or_path, "" when absent */
} peft_config;

/* Read and check path (an adapter_config.json): refuses, with
 * PD_ERR_UNSUPPORTED, every setting that PEFT applies in a way pocketdec does
 * not (DoRA, biases, modules_to_save, per-module ranks, ...). */
pd_status peft_config_load(const char *path, peft_config *cfg, pd_error *err);

#endif
