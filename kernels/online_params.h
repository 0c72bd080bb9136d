/* online_params.h: the online kernel's parameter words (kernels/online.c).
 * Generated from pimrl/learners/variants.py (python -m pimrl.online.cprogram --write-header);
 * do not edit: a test checks that it matches. Plain C99. */
#ifndef ONLINE_PARAMS_H
#define ONLINE_PARAMS_H

#define ONLINE_PARAMS_WORDS 16
enum online_param_index {
    ONLINE_P_ALGO = 0, /* ALGO axis code */
    ONLINE_P_DTYPE = 1, /* DTYPE axis code */
    ONLINE_P_EPS_START = 2, /* floor(epsilon_start * 2^32): the threshold at a lane's step 0 */
    ONLINE_P_EPS_END = 3, /* floor(epsilon_end * 2^32): the threshold from step eps_decay_steps on */
    ONLINE_P_EPS_DECAY_STEPS = 4, /* steps of the linear decay (0: constant epsilon_start) */
    ONLINE_P_FRAC_BITS = 5, /* F, the Q format's fractional bits */
    ONLINE_P_ALPHA_F32_BITS = 6, /* alpha as float32 bits */
    ONLINE_P_GAMMA_F32_BITS = 7, /* gamma as float32 bits */
    ONLINE_P_ALPHA_FX = 8, /* alpha in Q format */
    ONLINE_P_GAMMA_FX = 9, /* gamma in Q format */
    ONLINE_P_MAX_EPISODE_STEPS = 10, /* truncation limit of an episode */
    ONLINE_P_N_START = 11, /* entries of the start table */
    ONLINE_P_STEPS = 12, /* environment steps of this DPU in this launch (split over its lanes) */
};

/* The work counters of WRAM symbol "stats" (int64 each). */
enum online_counter {
    ONLINE_C_STEPS = 0,
    ONLINE_C_TERMINAL_STEPS = 1,
    ONLINE_C_EPISODES = 2,
    ONLINE_C_RESETS = 3,
    ONLINE_C_START_SCANS = 4,
    ONLINE_C_OUTCOME_SCANS = 5,
    ONLINE_C_ROW_READS = 6,
    ONLINE_C_ENTRY_READS = 7,
    ONLINE_C_RNG_DRAWS = 8,
    ONLINE_C_BELOW_DRAWS = 9,
    ONLINE_C_SATURATIONS = 10,
    ONLINE_C_FAULT = 11,
    ONLINE_N_COUNTERS = 12
};

#endif /* ONLINE_PARAMS_H */
