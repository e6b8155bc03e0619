/* kernels.h - the numeric inner loops, behind one seam.
 *
 * pd_kernels_select() picks an implementation once (portable C, or AVX2+FMA
 * when the CPU has it); the trunk only calls through the returned table. */
#ifndef PD_KERNELS_H
#define PD_KERNELS_H

#include "pd_internal.h"

typedef struct pd_kernels {
    const char *name;
    /* sum of a[i]*b[i] for i < n */
    float (*dot)(const float *a, const float *b, int64_t n);
    /* y[i] += s * x[i] */
    void (*axpy)(float *y, float s, const float *x, int64_t n);
    /* dot of one stored weight row of type t (n elements) with x, without
     * converting the row first: decode reads each weight once, so this is
     * where its time goes */
    float (*dot_row)(pd_dtype t, const void *row, const float *x, int64_t n);
} pd_kernels;

const pd_kernels *pd_kernels_select(void);
const pd_kernels *pd_kernels_portable(void);

/* out = v / sqrt(mean(v^2) + eps) * w, for n elements (in place allowed). */
void pd_rmsnorm(float *out, const float *v, const float *w, int64_t n, float eps);

#endif
