/* swiftrl_variants.h: the SwiftRL kernels' variant codes and parameter words.
 * Generated from pimrl/learners/variants.py (python -m pimrl.rlkernel.cprogram --write-header);
 * do not edit: a test checks that it matches. Plain C99. */
#ifndef SWIFTRL_VARIANTS_H
#define SWIFTRL_VARIANTS_H

/* algo: learning rule (-DSWIFTRL_ALGO=code) */
#define SWIFTRL_ALGO_Q 0 /* q: Q-learning: bootstraps from max_a' Q[s', a'] */
#define SWIFTRL_ALGO_SARSA 1 /* sarsa: SARSA: bootstraps from Q[s', b'], b' the next action */
#define SWIFTRL_ALGO_NAMES "q", "sarsa" /* by code */
#define SWIFTRL_N_ALGOS 2

/* dtype: arithmetic of the Q-table (-DSWIFTRL_DTYPE=code) */
#define SWIFTRL_FP32 0 /* fp32: IEEE float32, no fused multiply-add */
#define SWIFTRL_INT32 1 /* int32: saturating Q-format fixed point (F fractional bits) */
#define SWIFTRL_DTYPE_NAMES "fp32", "int32" /* by code */
#define SWIFTRL_N_DTYPES 2

/* sampling: order in which a lane visits its records (-DSWIFTRL_SAMPLING=code) */
#define SWIFTRL_SEQ 0 /* seq: sequential: start, start+1, ... */
#define SWIFTRL_STR 1 /* str: strided: offsets 0..k-1 in turn, each in steps of k */
#define SWIFTRL_RAN 2 /* ran: random: n draws with replacement from the lane's xorshift32 stream */
#define SWIFTRL_SAMPLING_NAMES "seq", "str", "ran" /* by code */
#define SWIFTRL_N_SAMPLINGS 3

/* next_action: SARSA's next action b' (a launch parameter, params.sarsa_draw) */
#define SWIFTRL_NEXT_LOGGED 0 /* logged: the behaviour policy's action stored in the record */
#define SWIFTRL_NEXT_EPSILON_GREEDY 1 /* epsilon-greedy: drawn epsilon-greedily from Q[s'] with the lane's stream */
#define SWIFTRL_NEXT_ACTION_NAMES "logged", "epsilon-greedy" /* by code */
#define SWIFTRL_N_NEXT_ACTIONS 2

/* bootstrap: where a non-terminal update reads the value of s' (-DSWIFTRL_BOOTSTRAP=code) */
#define SWIFTRL_BOOTSTRAP_TABLE 0 /* table: the DPU's own table, every state */
#define SWIFTRL_BOOTSTRAP_OWNED 1 /* owned: own rows for the s' it alone holds, else the broadcast V[s'] (state-owned learning, --aggregate own:R; SARSA bootstraps from the expected value of its target policy, drawing nothing) */
#define SWIFTRL_BOOTSTRAP_NAMES "table", "owned" /* by code */
#define SWIFTRL_N_BOOTSTRAPS 2

/* tasklet_mode: how a DPU's tasklets share its Q-table (docs/design.md) (-DSWIFTRL_TASKLET_MODE=code) */
#define SWIFTRL_MODE_RING 0 /* ring: one tasklet at a time: a token passed round the tasklets applies the updates round-robin on one table (1/11 of the pipeline) */
#define SWIFTRL_MODE_ROWS 1 /* rows: every tasklet at once: each writes the rows of the states the host gives it (a heavy state's entries may be spread), bootstrapping from a snapshot taken each epoch for its siblings' states (deterministic) */
#define SWIFTRL_MODE_UNLOCKED 2 /* unlocked: every tasklet at once on one table with no lock, SwiftRL's scheme: pimrl computes the ring's table, prices the full pipeline and counts the conflicts where hardware could lose an update */
#define SWIFTRL_TASKLET_MODE_NAMES "ring", "rows", "unlocked" /* by code */
#define SWIFTRL_N_TASKLET_MODES 3

#define SWIFTRL_PARAMS_WORDS 24
/* The word index of each field of the WRAM symbol "params". */
enum swiftrl_param_index {
    SWIFTRL_P_ALGO = 0, /* ALGO axis code */
    SWIFTRL_P_DTYPE = 1, /* DTYPE axis code */
    SWIFTRL_P_SAMPLING = 2, /* SAMPLING axis code */
    SWIFTRL_P_STRIDE = 3, /* STR's stride k */
    SWIFTRL_P_EPOCHS = 4, /* epochs of this launch */
    SWIFTRL_P_SARSA_DRAW = 5, /* NEXT_ACTION axis code (1: SARSA draws b' epsilon-greedily) */
    SWIFTRL_P_EPS = 6, /* floor(epsilon * 2^32) */
    SWIFTRL_P_FRAC = 7, /* F, the Q format's fractional bits */
    SWIFTRL_P_ALPHA32 = 8, /* alpha as float32 bits */
    SWIFTRL_P_GAMMA32 = 9, /* gamma as float32 bits */
    SWIFTRL_P_ALPHA_FX = 10, /* alpha in Q format */
    SWIFTRL_P_GAMMA_FX = 11, /* gamma in Q format */
    SWIFTRL_P_N_RECORDS = 12, /* this DPU's transitions, at the start of its MRAM heap */
    SWIFTRL_P_OWN_LO = 13, /* first state this DPU owns (bootstrap owned) */
    SWIFTRL_P_OWN_HI = 14, /* one past the last state this DPU owns (bootstrap owned) */
    SWIFTRL_P_OWN_SHARED = 15, /* bit 0: state own_lo, bit 1: state own_hi - 1 is shared with another DPU (bootstraps from the broadcast V, not the DPU's partial row) */
    SWIFTRL_P_POLICY_MAX32 = 16, /* owned epsilon-greedy SARSA: the weight 1 - p of max_a Q[s', a] in V(s'), float32 bits */
    SWIFTRL_P_POLICY_MAX_FX = 17, /* owned epsilon-greedy SARSA: the same weight in Q format */
    SWIFTRL_P_POLICY_MEAN32 = 18, /* owned epsilon-greedy SARSA: the weight p / A of sum_a Q[s', a] in V(s'), float32 bits */
    SWIFTRL_P_POLICY_MEAN_FX = 19, /* owned epsilon-greedy SARSA: the same weight in Q format */
    SWIFTRL_P_TASKLET_MODE = 20, /* TASKLET_MODE axis code */
    SWIFTRL_P_EPOCH_CONTINUES = 21, /* 1: this launch goes on with the epoch of the launch before it (a later window of the records, docs/design.md): no snapshot; 0: every epoch starts here */
};

#endif /* SWIFTRL_VARIANTS_H */
