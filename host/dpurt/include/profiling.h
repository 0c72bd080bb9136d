/* profiling.h: code-section profiling (pimrl DPU runtime). With DPU_PROFILING defined,
 * profiling_start/profiling_stop add the *modelled* cycles a tasklet spends between them to
 * context.count[me()]; without it they do nothing, as in the SDK. The context is a WRAM
 * global the host reads by name. */
#ifndef PIMRL_DPURT_PROFILING_H
#define PIMRL_DPURT_PROFILING_H

#include <limits.h>
#include "attributes.h"
#include "profiling_internals.h"

#define PROFILING_RESET_VALUE (UINT32_MAX)

#define PROFILING_INIT(_name) \
    __host dpu_profiling_t _name = { \
        .start = {[0 ...(NR_THREADS - 1)] = PROFILING_RESET_VALUE}, \
        .count = {[0 ...(NR_THREADS - 1)] = 0}, \
    }

#ifdef DPU_PROFILING
#include "defs.h"
#include "perfcounter.h"
static inline void profiling_start(dpu_profiling_t *context)
{
    context->start[me()] = (uint32_t)perfcounter_get();
}

static inline void profiling_stop(dpu_profiling_t *context)
{
    uint32_t now = (uint32_t)perfcounter_get();
    if (context->start[me()] != PROFILING_RESET_VALUE)
        context->count[me()] += now - context->start[me()];
    context->start[me()] = PROFILING_RESET_VALUE;
}
#else
#define profiling_start(context) do { (void)(context); } while (0)
#define profiling_stop(context) do { (void)(context); } while (0)
#endif

#endif
