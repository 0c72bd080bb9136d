/* perfcounter.h: the DPU performance counter (pimrl DPU runtime).
 * The counter returns *modelled* cycles (or instructions) of this DPU since it was last
 * reset: pimrl counts the program's basic blocks and DMA transfers and applies the cost
 * model of docs/dpu-runtime.md. CLOCKS_PER_SEC is a run-time value (the DPU frequency). */
#ifndef PIMRL_DPURT_PERFCOUNTER_H
#define PIMRL_DPURT_PERFCOUNTER_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t perfcounter_t;
typedef enum _perfcounter_config_t {
    COUNT_SAME = 0,
    COUNT_CYCLES = 1,
    COUNT_INSTRUCTIONS = 2,
    COUNT_NOTHING = 3,
    COUNT_DISABLE_BOTH = 6,
    COUNT_ENABLE_BOTH = 7,
} perfcounter_config_t;

perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value);
perfcounter_t perfcounter_get(void);

/* Both counters at once (a v1B DPU's): modelled cycles and instructions since the last
 * perfcounter_get_both(true) (or since boot). */
typedef struct {
    perfcounter_t cycles;
    perfcounter_t instr;
} perfcounter_pair_t;
perfcounter_pair_t perfcounter_get_both(bool should_reset);

extern uint32_t __dpurt_clocks_per_sec;
#ifdef CLOCKS_PER_SEC
#undef CLOCKS_PER_SEC
#endif
#define CLOCKS_PER_SEC (__dpurt_clocks_per_sec)

#endif
