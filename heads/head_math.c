/* head_math.c - the arithmetic every head shares: dot products in double,
 * affine maps, argmax. A leaf: the head files (head.c), the decisions
 * (decider.c) and the tagger (tagger.c, tag_run.c) call it, it calls nothing. */
#include "heads.h"

#include <math.h>

double pdi_head_dot(const float *a, const float *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

void pdi_head_affine(const float *w, const float *b, const float *x, int64_t rows, int64_t cols, double *y)
{
    for (int64_t r = 0; r < rows; r++) y[r] = pdi_head_dot(w + r * cols, x, cols) + (double)b[r];
}

double pdi_softmax_at(const float *v, int32_t n, int32_t k)
{
    float top = v[pdi_argmax(v, n)];
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)v[i] - top);
    return exp((double)v[k] - top) / sum;
}

int32_t pdi_argmax(const float *v, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}
