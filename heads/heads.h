/* heads.h - what head.c (head files) and decide.c (prompts, scoring) share. */
#ifndef PD_HEADS_H
#define PD_HEADS_H

#include "pd_internal.h"

/* Marker token ids of the prompt layout, in prompt order of appearance. */
enum { PD_MK_PREFIX, PD_MK_MIDDLE, PD_MK_CAND_START, PD_MK_CAND_END, PD_MK_SUFFIX, PD_MK_COUNT };

/* Default marker names (llama.cpp's pointer-head decision adapters). */
extern const char *const pd_marker_default_names[PD_MK_COUNT];

/* Look up the marker names in the model's tokenizer: each must be one token
 * with an id inside the model's embedding. src names the file for errors. */
pd_status pd_markers_resolve(const pd_model *model, const char *const names[PD_MK_COUNT], int32_t ids[PD_MK_COUNT],
                             const char *src, pd_error *err);

struct pd_head {
    char *source;     /* the directory it was loaded from */
    pd_head_type type;
    pd_layout layout; /* SEQUENTIAL or PARALLEL */
    int32_t hidden, head_dim;
    float temperature;
    int32_t markers[PD_MK_COUNT];
    float *wq, *bq, *wk, *bk; /* pointer: [head_dim][hidden], [head_dim] */
    float *w, *b;             /* classifier: [n_labels][hidden], [n_labels] */
    int32_t n_labels;
    char **labels;
};

#endif
