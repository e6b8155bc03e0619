/* kernels.c - the choice of kernels: the table for this CPU, or the one
 * PD_KERNELS names. The tables are in the per-CPU files; what they share in
 * kernels_shared.c. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

const pdi_kernels *pdi_kernels_select(void)
{
    const char *force = getenv("PD_KERNELS");
    if (force && strcmp(force, "portable") == 0) return pdi_kernels_portable();
    const pdi_kernels *k = force && strcmp(force, "avx2") == 0 ? NULL : pdi_kernels_avx512();
    if (!k) k = pdi_kernels_avx2();
    if (!k) k = pdi_kernels_neon();
    return k ? k : pdi_kernels_portable();
}
