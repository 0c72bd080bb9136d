/* profiling_internals.h: the profiling context (pimrl DPU runtime; the SDK's layout). */
#ifndef PIMRL_DPURT_PROFILING_INTERNALS_H
#define PIMRL_DPURT_PROFILING_INTERNALS_H

#include <stdint.h>
#include "dpu_characteristics.h"

#ifndef NR_THREADS
#define NR_THREADS DPU_NR_THREADS
#endif

typedef struct {
    uint32_t start[NR_THREADS];   /* perfcounter at profiling_start, per tasklet */
    uint32_t count[NR_THREADS];   /* cycles spent in the section, per tasklet */
} dpu_profiling_t;

#endif
