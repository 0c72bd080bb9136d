/* swiftrl_common.h: what the SwiftRL DPU kernels (kernels/swiftrl.c) and their host
 * program (host/app.c, which includes this file as "../kernels/swiftrl_common.h", as PrIM's
 * programs include their support headers) share: the symbol names, the transition record,
 * the kernel parameters, the work counters and the variant codes. The same layout as the
 * simulator's built-in kernel (pimrl/rlkernel/program.py) and the same codes as
 * pimrl/learners/params.py, so one host program drives either; tests/test_shim.py checks
 * the values against pimrl's Python definitions. Plain C99 and <stdint.h> only: it builds
 * for the DPU (pimrl's or the UPMEM SDK's dpu-upmem-dpurte-clang), the host and pimrl. */
#ifndef SWIFTRL_COMMON_H
#define SWIFTRL_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Variant codes and the parameter words' indices, generated from pimrl's variant registry
 * (pimrl/learners/variants.py): the values of the kernel's -DSWIFTRL_ALGO, -DSWIFTRL_DTYPE,
 * -DSWIFTRL_SAMPLING and of params.algo, params.dtype, params.sampling, params.sarsa_draw. */
#include "swiftrl_variants.h"

/* The kernel's host-visible symbols. The records: the MRAM heap
 * (DPU_MRAM_HEAP_POINTER_NAME, "__sys_used_mram_end"), params.n_records of them. */
#define SWIFTRL_SYM_PARAMS "params"    /* swiftrl_params_t */
#define SWIFTRL_SYM_RNG "rng_state"    /* uint32 per tasklet: the lanes' xorshift32 streams */
#define SWIFTRL_SYM_STATS "stats"      /* int64 x SWIFTRL_N_COUNTERS */
#define SWIFTRL_SYM_Q "q_table"        /* N_STATES x N_ACTIONS float32, or Q-format int32 */
#define SWIFTRL_SYM_VISITS "visits"    /* N_STATES x N_ACTIONS uint32 (COUNT_VISITS=1) */
/* SWIFTRL_BOOTSTRAP_OWNED only (state-owned learning, docs/state-owned.md): */
#define SWIFTRL_SYM_V "v_table"        /* N_STATES: the broadcast V(s') (host -> DPU) */
#define SWIFTRL_SYM_V_OUT "v_out"      /* 2 x N_ACTIONS + N_STATES (DPU -> host): rows own_lo
                                          and own_hi - 1, then V(own_lo .. own_hi - 1) */
#define SWIFTRL_SYM_POLICY_W "policy_weights" /* SARSA only, in place of visits: N_STATES x
                                          N_ACTIONS, row k the logged policy's action
                                          frequencies at state own_lo + k (host -> DPU, before
                                          the first launch) */
/* SWIFTRL_TASKLET_MODE rows only (docs/design.md, "Tasklet modes"), host -> DPU: */
#define SWIFTRL_SYM_LANES "lane_bounds" /* int32 x 2 (NR_TASKLETS + 1): lane t's records
                                          [b[t], b[t + 1]) of the MRAM heap, then where its
                                          states start in lane_states: [b[T + 1 + t],
                                          b[T + 2 + t]) */
#define SWIFTRL_SYM_OWNER "state_owner" /* uint8 x N_STATES: the tasklet that owns (writes)
                                          each state, 255 for none */
#define SWIFTRL_SYM_LANE_STATES "lane_states" /* uint16 x N_STATES: each lane's states */

/* One transition, 16 bytes, little-endian: dataset files (docs/dataset-format.md), host
 * memory and MRAM alike. For INT32 kernels the host rewrites `reward` as a Q-format int32
 * before pushing the records. */
#define SWIFTRL_RECORD_BYTES 16
#define SWIFTRL_NO_ACTION 255
typedef struct swiftrl_transition {
    int32_t state;
    int32_t next_state;
    union {
        float f;             /* FP32 kernels */
        int32_t fx;          /* INT32 kernels */
    } reward;
    uint8_t action;
    uint8_t next_action;     /* SWIFTRL_NO_ACTION: unknown */
    uint8_t terminated;
    uint8_t truncated;
} swiftrl_transition_t;

/* WRAM symbol "params": SWIFTRL_PARAMS_WORDS int64 words, indexed by enum
 * swiftrl_param_index (swiftrl_variants.h). */
typedef struct swiftrl_params {
    int64_t algo;            /* SWIFTRL_ALGO_* */
    int64_t dtype;           /* SWIFTRL_FP32 / SWIFTRL_INT32 */
    int64_t sampling;        /* SWIFTRL_SEQ / STR / RAN */
    int64_t stride;          /* STR's stride */
    int64_t epochs;          /* epochs of this launch */
    int64_t sarsa_draw;      /* SWIFTRL_NEXT_EPSILON_GREEDY: SARSA draws b'; else logged b' */
    int64_t eps_threshold;   /* floor(epsilon * 2^32) */
    int64_t frac_bits;       /* F of the Q format */
    int64_t alpha_f32_bits;  /* alpha as float32 bits */
    int64_t gamma_f32_bits;
    int64_t alpha_fx;        /* alpha in Q format */
    int64_t gamma_fx;
    int64_t n_records;       /* this DPU's transitions, at the start of the MRAM heap */
    int64_t own_lo;          /* SWIFTRL_BOOTSTRAP_OWNED: the states [own_lo, own_hi) */
    int64_t own_hi;          /* this DPU holds */
    int64_t own_shared;      /* bit 0: own_lo, bit 1: own_hi - 1 is shared with another DPU */
    int64_t policy_max_f32_bits; /* owned epsilon-greedy SARSA: weight of max_a Q[s'] in V(s') */
    int64_t policy_max_fx;   /* the same weight in Q format */
    int64_t policy_mean_f32_bits; /* owned epsilon-greedy SARSA: weight of sum_a Q[s'] in V(s') */
    int64_t policy_mean_fx;  /* the same weight in Q format */
    int64_t tasklet_mode;    /* SWIFTRL_MODE_RING / ROWS / UNLOCKED */
    int64_t epoch_continues; /* 1: a later window of the epoch begun by the last launch */
    int64_t reserved[SWIFTRL_PARAMS_WORDS - 22];
} swiftrl_params_t;

/* WRAM symbol "stats": int64 work counters per DPU (pimrl.rlkernel.costs.COUNTERS). The
 * conflicts of tasklet mode unlocked are counted by the simulator's built-in kernel only (it
 * knows the interleaving it models; a DPU does not). */
enum swiftrl_counter {
    SWIFTRL_C_UPDATES, SWIFTRL_C_TERMINAL, SWIFTRL_C_SCANNED, SWIFTRL_C_RNG, SWIFTRL_C_BELOW,
    SWIFTRL_C_DMA_READS, SWIFTRL_C_DMA_READ_BYTES, SWIFTRL_C_DMA_WRITES,
    SWIFTRL_C_DMA_WRITE_BYTES, SWIFTRL_C_SATURATIONS, SWIFTRL_C_FAULT, SWIFTRL_C_STEPS,
    SWIFTRL_C_SNAPSHOT_ROWS, SWIFTRL_C_SNAPSHOT_READS, SWIFTRL_C_LANE_EPOCHS,
    SWIFTRL_C_CONFLICTS, SWIFTRL_C_WIDE_DRAWS, SWIFTRL_N_COUNTERS
};

/* Layout checks (C11). */
_Static_assert(sizeof(swiftrl_transition_t) == SWIFTRL_RECORD_BYTES, "record size");
_Static_assert(sizeof(swiftrl_params_t) == 8 * SWIFTRL_PARAMS_WORDS, "params words");
_Static_assert(__builtin_offsetof(swiftrl_params_t, n_records) == 8 * SWIFTRL_P_N_RECORDS,
               "params: n_records");
_Static_assert(__builtin_offsetof(swiftrl_params_t, own_hi) == 8 * SWIFTRL_P_OWN_HI,
               "params: own_hi");
_Static_assert(__builtin_offsetof(swiftrl_params_t, tasklet_mode) == 8 * SWIFTRL_P_TASKLET_MODE,
               "params: tasklet_mode");
_Static_assert(__builtin_offsetof(swiftrl_params_t, epoch_continues)
               == 8 * SWIFTRL_P_EPOCH_CONTINUES, "params: epoch_continues");

#endif /* SWIFTRL_COMMON_H */
