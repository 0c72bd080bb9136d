/* swiftrl.c: the SwiftRL DPU kernel, tabular Q-learning and SARSA over offline
 * transitions, in UPMEM C. One source for the twelve variants, chosen when it is built:
 *
 *   dpu-upmem-dpurte-clang -O2 -DNR_TASKLETS=16 -DN_STATES=16 -DN_ACTIONS=4 \
 *       -DSWIFTRL_ALGO=0 -DSWIFTRL_DTYPE=0 -DSWIFTRL_SAMPLING=0 -o swiftrl swiftrl.c
 *
 * SWIFTRL_ALGO 0 Q-learning | 1 SARSA; SWIFTRL_DTYPE 0 FP32 | 1 INT32 (Q format);
 * SWIFTRL_SAMPLING 0 SEQ | 1 STR | 2 RAN; BLOCK_BYTES the DMA block (default 2048);
 * COUNT_VISITS 1 to count visits per (s, a) (for the visit-weighted aggregator);
 * SWIFTRL_BOOTSTRAP 1 (OWNED): state-owned learning, bootstrapping from the DPU's own rows
 * for the states of [params.own_lo, params.own_hi) it alone holds and from v_table
 * otherwise; SARSA then bootstraps from its target policy's expected value (policy_value,
 * the weights in policy_weights and params.policy_max_*) and draws nothing.
 *
 * It follows docs/design.md exactly, as the simulator's built-in kernel
 * (pimrl/swiftrl/program.py) and the reference learner do: the DPU's records are split into
 * NR_TASKLETS contiguous lanes; the updates are applied round-robin over tasklets (step i of
 * tasklet 0, then of tasklet 1, ...), enforced by a handshake token ring, so each update
 * reads and writes the shared Q-table alone and in the contract's order; the same xorshift32
 * streams and the same saturating Q-format arithmetic. Records are streamed from the MRAM
 * heap into a per-tasklet WRAM buffer with mram_read, refetched when the next record of a
 * lane is not in it (one record per transfer for RAN, and for STR when the stride leaps past
 * a block). Symbols and counters: swiftrl_common.h. Builds unchanged with the UPMEM SDK.
 */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#include "swiftrl_common.h"
#include "swiftrl_arith.h"

#ifndef N_STATES
#error "define N_STATES (states of the Q-table), e.g. -DN_STATES=16"
#endif
#ifndef N_ACTIONS
#error "define N_ACTIONS (actions of the Q-table), e.g. -DN_ACTIONS=4"
#endif
#ifndef SWIFTRL_ALGO
#define SWIFTRL_ALGO SWIFTRL_ALGO_Q
#endif
#ifndef SWIFTRL_DTYPE
#define SWIFTRL_DTYPE SWIFTRL_FP32
#endif
#ifndef SWIFTRL_SAMPLING
#define SWIFTRL_SAMPLING SWIFTRL_SEQ
#endif
#ifndef SWIFTRL_BOOTSTRAP
#define SWIFTRL_BOOTSTRAP SWIFTRL_BOOTSTRAP_TABLE
#endif
#ifndef BLOCK_BYTES
#define BLOCK_BYTES 2048
#endif
#define OWNED_SARSA (SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED && SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA)
#ifndef COUNT_VISITS
#define COUNT_VISITS (!OWNED_SARSA)
#endif
#if OWNED_SARSA && COUNT_VISITS
#error "state-owned SARSA keeps its policy weights where visits would be: COUNT_VISITS=0"
#endif

#define RECORD_BYTES 16
#define BLOCK_RECORDS (BLOCK_BYTES / RECORD_BYTES)

#if BLOCK_BYTES % RECORD_BYTES || BLOCK_BYTES < 16 || BLOCK_BYTES > 2048
#error "BLOCK_BYTES must be a multiple of 16 in [16, 2048]"
#endif

#if SWIFTRL_DTYPE == SWIFTRL_INT32
typedef int32_t q_t;
#else
typedef float q_t;
#endif

__host swiftrl_params_t params;
__host uint32_t rng_state[NR_TASKLETS];
__host int64_t stats[SWIFTRL_N_COUNTERS];
__host q_t q_table[N_STATES][N_ACTIONS];
#if OWNED_SARSA
/* Row k: the target policy's weight of each action at state own_lo + k (from the host). */
__host q_t policy_weights[N_STATES][N_ACTIONS];
#else
__host uint32_t visits[N_STATES][N_ACTIONS];
#endif
#if SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED
/* State-owned learning (docs/state-owned.md): the broadcast V(s') for states other DPUs
 * own; after the launch, rows own_lo and own_hi - 1 then V of the owned states. */
__host q_t v_table[N_STATES];
__host q_t v_out[2 * N_ACTIONS + N_STATES];
BARRIER_INIT(end_barrier, NR_TASKLETS);
#endif

BARRIER_INIT(start_barrier, NR_TASKLETS);
MUTEX_INIT(stats_mutex);

/* The greedy value of row s (the max starts at Q[s][0]). */
static inline q_t row_max(const q_t *row)
{
    q_t m = row[0];
    for (int k = 1; k < N_ACTIONS; k++)
        if (row[k] > m)
            m = row[k];
    return m;
}

#if OWNED_SARSA
/* SARSA's bootstrap value under state ownership (docs/state-owned.md), one scan of the row:
 * epsilon-greedy (eg) cmean * sum + cmax * max; logged the sum of w[k] * Q[s][k]. */
#if SWIFTRL_DTYPE == SWIFTRL_INT32
static inline q_t policy_value(const q_t *row, int eg, const q_t *w, q_t cmean, q_t cmax,
                               int frac, int64_t *sat)
{
    int64_t acc = 0;
    if (eg) {
        q_t m = row[0];
        for (int k = 0; k < N_ACTIONS; k++) {
            if (row[k] > m)
                m = row[k];
            acc += row[k];
        }
        const int32_t tot = sat32(acc, sat);
        const int64_t g1 = fx_mul(cmean, tot, frac, sat);
        const int64_t g2 = fx_mul(cmax, m, frac, sat);
        return sat32(g1 + g2, sat);
    }
    for (int k = 0; k < N_ACTIONS; k++)
        acc += fx_mul(w[k], row[k], frac, sat);
    return sat32(acc, sat);
}
#else
static inline q_t policy_value(const q_t *row, int eg, const q_t *w, q_t cmean, q_t cmax,
                               int frac, int64_t *sat)
{
    float acc = 0.0f;
    (void)frac, (void)sat;
    if (eg) {
        q_t m = row[0];
        for (int k = 0; k < N_ACTIONS; k++) {
            if (row[k] > m)
                m = row[k];
            acc = acc + row[k];
        }
        const float g1 = cmean * acc;
        const float g2 = cmax * m;
        return g1 + g2;
    }
    for (int k = 0; k < N_ACTIONS; k++) {
        const float p = w[k] * row[k];
        acc = acc + p;
    }
    return acc;
}
#endif
#endif

int main(void)
{
    const uint32_t t = me();
    if (t == 0) {
        mem_reset();
        for (int c = 0; c < SWIFTRL_N_COUNTERS; c++)
            stats[c] = 0;
    }
    barrier_wait(&start_barrier);
    if (params.algo != SWIFTRL_ALGO || params.dtype != SWIFTRL_DTYPE
        || params.sampling != SWIFTRL_SAMPLING)
        __builtin_trap();          /* the host's parameters are for another variant */

    swiftrl_transition_t *buf = mem_alloc(BLOCK_BYTES);
    const int64_t n_records = params.n_records;
    const int64_t base = n_records / NR_TASKLETS, extra = n_records % NR_TASKLETS;
    const int64_t start = t * base + (t < extra ? t : extra);
    const int64_t size = base + (t < extra ? 1 : 0);
    const int64_t end = start + size;
    const int64_t longest = base + (extra ? 1 : 0);
    const int64_t epochs = params.epochs;
    const int64_t stride = params.stride;
    const uint32_t heap = (uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER;
    const int per_record = SWIFTRL_SAMPLING == SWIFTRL_RAN
                           || (SWIFTRL_SAMPLING == SWIFTRL_STR
                               && stride * RECORD_BYTES >= BLOCK_BYTES);
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    const int32_t alpha = (int32_t)params.alpha_fx, gamma = (int32_t)params.gamma_fx;
    const int frac = (int)params.frac_bits;
#else
    union {
        int32_t i;
        float f;
    } ua, ug;
    ua.i = (int32_t)params.alpha_f32_bits;
    ug.i = (int32_t)params.gamma_f32_bits;
    const float alpha = ua.f, gamma = ug.f;
#endif
#if SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA && !OWNED_SARSA
    const int draw = params.sarsa_draw == SWIFTRL_NEXT_EPSILON_GREEDY;
    const uint64_t eps = (uint64_t)params.eps_threshold;
#endif
#if SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED
    const int64_t own_lo = params.own_lo, own_hi = params.own_hi;
    /* fresh rows only for the states no other DPU shares */
    const int64_t fresh_lo = own_lo + (params.own_shared & 1);
    const int64_t fresh_hi = own_hi - ((params.own_shared >> 1) & 1);
#endif
#if OWNED_SARSA && SWIFTRL_DTYPE == SWIFTRL_INT32
    const q_t cmax = (q_t)params.policy_max_fx, cmean = (q_t)params.policy_mean_fx;
#elif OWNED_SARSA
    union {
        int32_t i;
        float f;
    } uc, um;
    uc.i = (int32_t)params.policy_max_f32_bits;
    um.i = (int32_t)params.policy_mean_f32_bits;
    const q_t cmax = uc.f, cmean = um.f;
#endif
#if OWNED_SARSA
    const int eg = params.sarsa_draw == SWIFTRL_NEXT_EPSILON_GREEDY;
#endif
#if OWNED_SARSA && SWIFTRL_DTYPE == SWIFTRL_INT32
    const int pv_frac = frac;
#elif OWNED_SARSA
    const int pv_frac = 0;
#endif
    uint32_t rng = rng_state[t];
    int64_t n_updates = 0, n_terminal = 0, n_scanned = 0, n_rng = 0, n_below = 0;
    int64_t n_dma = 0, n_dma_bytes = 0, n_sat = 0, n_steps = 0;

    for (int64_t e = 0; e < epochs; e++) {
        int64_t cursor = start, offset = 0, blk_lo = -1, blk_hi = -1;
        (void)cursor, (void)offset;                /* RAN draws; only STR walks offsets */
        for (int64_t i = 0; i < longest; i++) {
            /* the token ring: tasklet t - 1 has applied its i-th update */
            if (NR_TASKLETS > 1 && (t != 0 || e != 0 || i != 0))
                handshake_wait_for((t + NR_TASKLETS - 1) % NR_TASKLETS);
            if (i < size) {
                /* the lane's next record */
                int64_t j;
#if SWIFTRL_SAMPLING == SWIFTRL_RAN
                rng = xorshift32(rng);
                j = start + below(rng, (uint32_t)size);
#elif SWIFTRL_SAMPLING == SWIFTRL_SEQ
                j = cursor++;
#else
                j = cursor;
                int64_t nxt = j + stride;
                while (nxt >= end) {
                    offset++;
                    nxt = start + offset;
                    if (offset >= stride)
                        break;
                }
                cursor = nxt;
#endif
                n_steps++;
                if (j < blk_lo || j >= blk_hi) {
                    int64_t n = per_record ? 1 : (end - j < BLOCK_RECORDS ? end - j : BLOCK_RECORDS);
                    uint32_t nbytes = (uint32_t)(n * RECORD_BYTES);
                    mram_read((__mram_ptr void *)(uintptr_t)(heap + (uint32_t)j * RECORD_BYTES),
                              buf, nbytes);
                    n_dma++;
                    n_dma_bytes += nbytes;
                    blk_lo = j;
                    blk_hi = j + n;
                }
                const swiftrl_transition_t *rec = &buf[j - blk_lo];
                const int32_t s = rec->state, s2 = rec->next_state;
                const uint32_t a = rec->action;
                q_t target;
#if SWIFTRL_DTYPE == SWIFTRL_INT32
                const q_t r = rec->reward.fx;
#else
                const q_t r = rec->reward.f;
#endif
                if (rec->terminated) {
                    target = r;
                    n_terminal++;
                } else {
                    q_t m;
#if SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED
                    if (s2 >= fresh_lo && s2 < fresh_hi) {
#if OWNED_SARSA
                        m = policy_value(q_table[s2], eg, policy_weights[s2 - own_lo], cmean,
                                         cmax, pv_frac, &n_sat);
#else
                        m = row_max(q_table[s2]);
#endif
                        n_scanned += N_ACTIONS;
                    } else {
                        m = v_table[s2];
                    }
#elif SWIFTRL_ALGO == SWIFTRL_ALGO_Q
                    m = row_max(q_table[s2]);
                    n_scanned += N_ACTIONS;
#else
                    if (!draw) {
                        m = q_table[s2][rec->next_action];
                    } else {
                        rng = xorshift32(rng);
                        if ((uint64_t)rng < eps) {
                            rng = xorshift32(rng);
                            m = q_table[s2][below(rng, N_ACTIONS)];
                            n_rng += 2;
                            n_below++;
                        } else {
                            m = row_max(q_table[s2]);
                            n_scanned += N_ACTIONS;
                            n_rng += 1;
                        }
                    }
#endif
#if SWIFTRL_DTYPE == SWIFTRL_INT32
                    target = sat32((int64_t)r + fx_mul(gamma, m, frac, &n_sat), &n_sat);
#else
                    q_t t1 = gamma * m;
                    target = r + t1;
#endif
                }
                const q_t cur = q_table[s][a];
#if SWIFTRL_DTYPE == SWIFTRL_INT32
                const int32_t td = sat32((int64_t)target - cur, &n_sat);
                q_table[s][a] = sat32((int64_t)cur + fx_mul(alpha, td, frac, &n_sat), &n_sat);
#else
                const float td = target - cur;
                const float step = alpha * td;
                q_table[s][a] = cur + step;
#endif
#if COUNT_VISITS
                visits[s][a]++;
#endif
                n_updates++;
            }
            /* pass the token to tasklet t + 1 (not after the very last step of the ring) */
            if (NR_TASKLETS > 1 && (t != NR_TASKLETS - 1 || e != epochs - 1 || i != longest - 1))
                handshake_notify();
        }
    }
#if SWIFTRL_SAMPLING == SWIFTRL_RAN
    n_rng += n_steps;
    n_below += n_steps;
#endif
    rng_state[t] = rng;
#if SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED
    barrier_wait(&end_barrier);            /* every update applied */
    if (t == 0 && own_hi > own_lo) {
        for (int k = 0; k < N_ACTIONS; k++) {
            v_out[k] = q_table[own_lo][k];
            v_out[N_ACTIONS + k] = q_table[own_hi - 1][k];
        }
        for (int64_t st = own_lo; st < own_hi; st++)
#if OWNED_SARSA
            v_out[2 * N_ACTIONS + (st - own_lo)] = policy_value(
                q_table[st], eg, policy_weights[st - own_lo], cmean, cmax, pv_frac, &n_sat);
#else
            v_out[2 * N_ACTIONS + (st - own_lo)] = row_max(q_table[st]);
#endif
        n_scanned += (own_hi - own_lo) * N_ACTIONS;
    }
#endif
    mutex_lock(stats_mutex);
    stats[SWIFTRL_C_UPDATES] += n_updates;
    stats[SWIFTRL_C_TERMINAL] += n_terminal;
    stats[SWIFTRL_C_SCANNED] += n_scanned;
    stats[SWIFTRL_C_RNG] += n_rng;
    stats[SWIFTRL_C_BELOW] += n_below;
    stats[SWIFTRL_C_DMA_READS] += n_dma;
    stats[SWIFTRL_C_DMA_READ_BYTES] += n_dma_bytes;
    stats[SWIFTRL_C_SATURATIONS] += n_sat;
    stats[SWIFTRL_C_STEPS] += n_steps;
    mutex_unlock(stats_mutex);
    return 0;
}
