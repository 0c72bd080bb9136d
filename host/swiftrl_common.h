/* swiftrl_common.h: what the SwiftRL host program and its DPU kernel agree on.
 *
 * The layout of the kernel's host-visible symbols (pimrl/pim/rlprogram.py, docs/design.md):
 *   params     SWIFTRL_PARAMS_WORDS x int64: the learner's scalars (indices below), then the
 *              DPU's record count at SWIFTRL_P_N_RECORDS
 *   rng_state  one uint32 xorshift32 state per tasklet
 *   stats      SWIFTRL_N_STATS x int64 work counters
 *   q_table    states x actions float32 (FP32) or Q-format int32 (INT32)
 *   visits     states x actions uint32
 *   the MRAM heap (DPU_MRAM_HEAP_POINTER_NAME): the DPU's partition, 16-byte records.
 * Only <stdint.h>: the DPU compiler includes this file too. tests/test_shim.py checks the
 * values against pimrl's Python definitions.
 */
#ifndef SWIFTRL_COMMON_H
#define SWIFTRL_COMMON_H

#include <stdint.h>

#define SWIFTRL_SYM_PARAMS "params"
#define SWIFTRL_SYM_RNG "rng_state"
#define SWIFTRL_SYM_STATS "stats"
#define SWIFTRL_SYM_Q "q_table"
#define SWIFTRL_SYM_VISITS "visits"

#define SWIFTRL_PARAMS_WORDS 16

/* Indices into params (pimrl.learners.params.KERNEL_SCALARS, then the record count). */
enum swiftrl_param {
    SWIFTRL_P_ALGO = 0,       /* SWIFTRL_ALGO_* */
    SWIFTRL_P_DTYPE = 1,      /* SWIFTRL_DTYPE_* */
    SWIFTRL_P_SAMPLING = 2,   /* SWIFTRL_SAMPLING_* */
    SWIFTRL_P_STRIDE = 3,     /* STR stride k */
    SWIFTRL_P_EPOCHS = 4,     /* epochs of this launch */
    SWIFTRL_P_SARSA_DRAW = 5, /* 1: SARSA draws b' epsilon-greedily; 0: logged next action */
    SWIFTRL_P_EPS = 6,        /* floor(epsilon * 2^32) */
    SWIFTRL_P_FRAC = 7,       /* INT32 fractional bits F */
    SWIFTRL_P_ALPHA32 = 8,    /* bits of float32 alpha */
    SWIFTRL_P_GAMMA32 = 9,    /* bits of float32 gamma */
    SWIFTRL_P_ALPHA_FX = 10,  /* alpha in Q format */
    SWIFTRL_P_GAMMA_FX = 11,  /* gamma in Q format */
    SWIFTRL_P_N_RECORDS = 12, /* records of this DPU's partition */
};

#define SWIFTRL_ALGO_Q 0
#define SWIFTRL_ALGO_SARSA 1
#define SWIFTRL_DTYPE_FP32 0
#define SWIFTRL_DTYPE_INT32 1
#define SWIFTRL_SAMPLING_SEQ 0
#define SWIFTRL_SAMPLING_STR 1
#define SWIFTRL_SAMPLING_RAN 2

/* Work counters in stats (pimrl.pim.cost.COUNTERS). */
enum swiftrl_stat {
    SWIFTRL_STAT_UPDATES,
    SWIFTRL_STAT_TERMINAL_UPDATES,
    SWIFTRL_STAT_SCANNED_ENTRIES,
    SWIFTRL_STAT_RNG_DRAWS,
    SWIFTRL_STAT_BELOW_DRAWS,
    SWIFTRL_STAT_DMA_READS,
    SWIFTRL_STAT_DMA_READ_BYTES,
    SWIFTRL_STAT_DMA_WRITES,
    SWIFTRL_STAT_DMA_WRITE_BYTES,
    SWIFTRL_STAT_SATURATIONS,
    SWIFTRL_STAT_FAULT,
    SWIFTRL_STAT_SAMPLING_STEPS,
    SWIFTRL_N_STATS
};

/* The 16-byte transition record of dataset files, host memory and MRAM (little-endian). */
#define SWIFTRL_RECORD_BYTES 16
#define SWIFTRL_NO_ACTION 255

struct swiftrl_transition {
    int32_t state;
    int32_t next_state;
    union {
        float reward;       /* FP32 kernels */
        int32_t reward_fx;  /* INT32 kernels: the host rewrites it in Q format before the push */
    };
    uint8_t action;
    uint8_t next_action;    /* SWIFTRL_NO_ACTION when unknown */
    uint8_t terminated;
    uint8_t truncated;
};

_Static_assert(sizeof(struct swiftrl_transition) == SWIFTRL_RECORD_BYTES,
               "the transition record is 16 bytes");

#endif /* SWIFTRL_COMMON_H */
