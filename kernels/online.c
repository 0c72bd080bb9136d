/* online.c: the online DPU kernel, tabular Q-learning or on-policy SARSA with the
 * environment stepped on the DPU itself (no dataset), in UPMEM C. It follows
 * docs/design.md's "Online learning" exactly, as the simulator's built-in program
 * (pimrl/online/program.py) and the plain-Python reference (pimrl/online/reference.py) do:
 *
 *   dpu-upmem-dpurte-clang -O2 -DNR_TASKLETS=16 -DN_STATES=64 -DN_ACTIONS=4 -DN_OUTCOMES=3 \
 *       -DN_START=1 -DSWIFTRL_ALGO=0 -DSWIFTRL_DTYPE=0 -o online online.c
 *
 * SWIFTRL_ALGO 0 Q-learning | 1 on-policy SARSA; SWIFTRL_DTYPE 0 FP32 | 1 INT32 (Q format);
 * COUNT_VISITS 1 counts updates per (s, a); Q_MRAM / ENV_MRAM / VISITS_MRAM give the MRAM heap
 * offsets of the tables that do not fit WRAM (pimrl.online.program.online_layout chooses).
 *
 * Each tasklet is a lane with its own episodes and xorshift32 stream; the steps of a launch
 * are applied round-robin over tasklets (step i of tasklet 0, then of tasklet 1, ...),
 * enforced by a handshake token ring, so each step reads and writes the shared Q-table alone
 * and in the contract's order. Builds unchanged with the UPMEM SDK.
 */
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#include "online_params.h"
#include "swiftrl_variants.h"
#include "swiftrl_arith.h"

#ifndef N_STATES
#error "define N_STATES, N_ACTIONS, N_OUTCOMES and N_START (the environment's table)"
#endif
#ifndef SWIFTRL_ALGO
#define SWIFTRL_ALGO SWIFTRL_ALGO_Q
#endif
#ifndef SWIFTRL_DTYPE
#define SWIFTRL_DTYPE SWIFTRL_FP32
#endif
#ifndef COUNT_VISITS
#define COUNT_VISITS 0
#endif

#define ROW_BYTES (((N_ACTIONS * 4) + 7) & ~7)
#define OUTCOME_ROW_BYTES (((N_OUTCOMES * 16) + 7) & ~7)

#if SWIFTRL_DTYPE == SWIFTRL_INT32
typedef int32_t q_t;
#else
typedef float q_t;
#endif

/* One outcome of (s, a): 16 bytes (pimrl/online/envtable.py). */
typedef struct {
    uint32_t threshold;
    int32_t next_state;
    union {
        float f;
        int32_t fx;
    } reward;
    uint32_t terminated;
} outcome_t;

typedef struct {
    uint32_t threshold;
    int32_t state;
} start_t;

enum { L_STATE, L_EP_STEPS, L_PENDING, L_STEPS };

__host int64_t params[ONLINE_PARAMS_WORDS];
__host uint32_t rng_state[NR_TASKLETS];
__host int64_t lanes[NR_TASKLETS][4];
__host int64_t stats[ONLINE_N_COUNTERS];
__host start_t start_table[N_START];
#ifndef Q_MRAM
__host q_t q_table[N_STATES][N_ACTIONS];
#endif
#if COUNT_VISITS && !defined(VISITS_MRAM)
__host uint32_t visits[N_STATES][N_ACTIONS];
#endif
#ifndef ENV_MRAM
__host outcome_t env_table[N_STATES * N_ACTIONS * N_OUTCOMES];
#endif

BARRIER_INIT(start_barrier, NR_TASKLETS);
MUTEX_INIT(stats_mutex);

/* Per-tasklet WRAM buffers for rows fetched from MRAM. */
static outcome_t outcome_buf[NR_TASKLETS][N_OUTCOMES + 1] __attribute__((aligned(8)));
static uint64_t row_buf[NR_TASKLETS][ROW_BYTES / 8 + 1];

#ifdef Q_MRAM
#define Q_ADDR(s) ((uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER + Q_MRAM + (uint32_t)(s) * ROW_BYTES)
/* Row s of the Q-table, fetched into the tasklet's buffer. */
static inline const q_t *q_row(int32_t s, uint32_t t)
{
    mram_read((__mram_ptr void *)(uintptr_t)Q_ADDR(s), row_buf[t], ROW_BYTES);
    return (const q_t *)row_buf[t];
}
/* Entry (s, a): the 8 aligned bytes that hold it. */
static inline q_t q_get(int32_t s, int32_t a, uint32_t t)
{
    uint32_t addr = Q_ADDR(s) + (uint32_t)a * 4;
    mram_read((__mram_ptr void *)(uintptr_t)(addr & ~7u), row_buf[t], 8);
    return ((const q_t *)row_buf[t])[(addr & 7u) / 4];
}
static inline void q_set(int32_t s, int32_t a, q_t v, uint32_t t)
{
    uint32_t addr = Q_ADDR(s) + (uint32_t)a * 4;
    ((q_t *)row_buf[t])[(addr & 7u) / 4] = v;       /* the buffer still holds the pair */
    mram_write(row_buf[t], (__mram_ptr void *)(uintptr_t)(addr & ~7u), 8);
}
#else
static inline const q_t *q_row(int32_t s, uint32_t t)
{
    (void)t;
    return q_table[s];
}
static inline q_t q_get(int32_t s, int32_t a, uint32_t t)
{
    (void)t;
    return q_table[s][a];
}
static inline void q_set(int32_t s, int32_t a, q_t v, uint32_t t)
{
    (void)t;
    q_table[s][a] = v;
}
#endif

/* The greedy action of a row: the max starts at entry 0; the lowest index among ties. */
static inline int32_t argmax(const q_t *row)
{
    int32_t best = 0;
    q_t m = row[0];
    for (int32_t k = 1; k < N_ACTIONS; k++)
        if (row[k] > m) {
            m = row[k];
            best = k;
        }
    return best;
}

static inline int64_t eps_at(int64_t n)
{
    const int64_t e0 = params[ONLINE_P_EPS_START], e1 = params[ONLINE_P_EPS_END];
    const int64_t decay = params[ONLINE_P_EPS_DECAY_STEPS];
    if (decay <= 0)
        return e0;
    if (n >= decay)
        return e1;
    return e1 + ((e0 - e1) * (decay - n)) / decay;
}

typedef struct {
    int64_t rng, below, rows, start_scans, outcome_scans, entries, sat;
} counts_t;

static inline int32_t eps_greedy(int32_t s, int64_t thr, uint32_t *x, uint32_t t, counts_t *c)
{
    *x = xorshift32(*x);
    if ((uint64_t)*x < (uint64_t)thr) {
        *x = xorshift32(*x);
        c->rng += 2;
        c->below++;
        return (int32_t)below(*x, N_ACTIONS);
    }
    c->rng++;
    c->rows++;
    return argmax(q_row(s, t));
}

int main(void)
{
    const uint32_t t = me();
    if (t == 0)
        for (int c = 0; c < ONLINE_N_COUNTERS; c++)
            stats[c] = 0;
    barrier_wait(&start_barrier);
    if (params[ONLINE_P_ALGO] != SWIFTRL_ALGO || params[ONLINE_P_DTYPE] != SWIFTRL_DTYPE)
        __builtin_trap();          /* the host's parameters are for another variant */

    const int64_t steps = params[ONLINE_P_STEPS];
    const int64_t base = steps / NR_TASKLETS, extra = steps % NR_TASKLETS;
    const int64_t mine = base + (t < extra ? 1 : 0);
    const int64_t longest = base + (extra ? 1 : 0);
    const int64_t max_steps = params[ONLINE_P_MAX_EPISODE_STEPS];
    const int64_t n_start = params[ONLINE_P_N_START];
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    const int32_t alpha = (int32_t)params[ONLINE_P_ALPHA_FX], gamma = (int32_t)params[ONLINE_P_GAMMA_FX];
    const int frac = (int)params[ONLINE_P_FRAC_BITS];
#else
    union {
        int32_t i;
        float f;
    } ua, ug;
    ua.i = (int32_t)params[ONLINE_P_ALPHA_F32_BITS];
    ug.i = (int32_t)params[ONLINE_P_GAMMA_F32_BITS];
    const float alpha = ua.f, gamma = ug.f;
#endif
    uint32_t x = rng_state[t];
    int64_t *ln = lanes[t];
    counts_t c = {0, 0, 0, 0, 0, 0, 0};
    int64_t n_steps = 0, n_term = 0, n_ep = 0, n_reset = 0;

    for (int64_t i = 0; i < longest; i++) {
        if (NR_TASKLETS > 1 && (t != 0 || i != 0))
            handshake_wait_for((t + NR_TASKLETS - 1) % NR_TASKLETS);
        if (i < mine) {
            int32_t s = (int32_t)ln[L_STATE];
            if (s < 0) {                                         /* a new episode */
                int64_t m = 0;
                if (n_start > 1) {
                    x = xorshift32(x);
                    c.rng++;
                    for (m = 0; m < n_start - 1; m++)
                        if ((uint64_t)x < (uint64_t)start_table[m].threshold)
                            break;
                    c.start_scans += m < n_start - 1 ? m + 1 : n_start - 1;
                }
                s = start_table[m].state;
                ln[L_EP_STEPS] = 0;
                ln[L_PENDING] = -1;
                n_reset++;
            }
            int64_t n = ln[L_STEPS];
            int32_t a;
            if (ln[L_PENDING] >= 0)
                a = (int32_t)ln[L_PENDING];
            else
                a = eps_greedy(s, eps_at(n), &x, t, &c);
            /* the outcome row of (s, a) */
            const uint32_t row = ((uint32_t)s * N_ACTIONS + (uint32_t)a) * N_OUTCOMES;
#ifdef ENV_MRAM
            mram_read((__mram_ptr void *)(uintptr_t)((uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER
                                                     + ENV_MRAM + row * 16),
                      outcome_buf[t], OUTCOME_ROW_BYTES);
            const outcome_t *out = outcome_buf[t];
#else
            const outcome_t *out = &env_table[row];
#endif
            int32_t k = 0;
            if (N_OUTCOMES > 1) {
                x = xorshift32(x);
                c.rng++;
                for (k = 0; k < N_OUTCOMES - 1; k++)
                    if ((uint64_t)x < (uint64_t)out[k].threshold)
                        break;
                c.outcome_scans += k < N_OUTCOMES - 1 ? k + 1 : N_OUTCOMES - 1;
            }
            const int32_t s2 = out[k].next_state;
            const int d = out[k].terminated != 0;
#if SWIFTRL_DTYPE == SWIFTRL_INT32
            const q_t r = out[k].reward.fx;
#else
            const q_t r = out[k].reward.f;
#endif
            n++;
            const int64_t ep = ln[L_EP_STEPS] + 1;
            int32_t b = 0;
            q_t target;
            if (d) {
                target = r;
            } else {
                q_t m;
#if SWIFTRL_ALGO == SWIFTRL_ALGO_Q
                const q_t *r2 = q_row(s2, t);
                m = r2[argmax(r2)];
                c.rows++;
#else
                b = eps_greedy(s2, eps_at(n), &x, t, &c);   /* a' before the update */
                m = q_get(s2, b, t);
                c.entries++;
#endif
#if SWIFTRL_DTYPE == SWIFTRL_INT32
                target = sat32((int64_t)r + fx_mul(gamma, m, frac, &c.sat), &c.sat);
#else
                q_t t1 = gamma * m;
                target = r + t1;
#endif
            }
            const q_t cur = q_get(s, a, t);
#if SWIFTRL_DTYPE == SWIFTRL_INT32
            const int32_t td = sat32((int64_t)target - cur, &c.sat);
            q_set(s, a, sat32((int64_t)cur + fx_mul(alpha, td, frac, &c.sat), &c.sat), t);
#else
            const float td = target - cur;
            const float step = alpha * td;
            q_set(s, a, cur + step, t);
#endif
#if COUNT_VISITS
#ifdef VISITS_MRAM
            {
                uint32_t addr = (uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER + VISITS_MRAM
                                + ((uint32_t)s * N_ACTIONS + (uint32_t)a) * 4;
                mram_read((__mram_ptr void *)(uintptr_t)(addr & ~7u), row_buf[t], 8);
                ((uint32_t *)row_buf[t])[(addr & 7u) / 4]++;
                mram_write(row_buf[t], (__mram_ptr void *)(uintptr_t)(addr & ~7u), 8);
            }
#else
            visits[s][a]++;
#endif
#endif
            n_steps++;
            n_term += d;
            if (d || ep >= max_steps) {                              /* terminated or truncated */
                ln[L_STATE] = -1;
                ln[L_PENDING] = -1;
                n_ep++;
            } else {
                ln[L_STATE] = s2;
                ln[L_PENDING] = SWIFTRL_ALGO == SWIFTRL_ALGO_Q ? -1 : b;
            }
            ln[L_EP_STEPS] = ep;
            ln[L_STEPS] = n;
        }
        if (NR_TASKLETS > 1 && (t != NR_TASKLETS - 1 || i != longest - 1))
            handshake_notify();
    }
    rng_state[t] = x;
    mutex_lock(stats_mutex);
    stats[ONLINE_C_STEPS] += n_steps;
    stats[ONLINE_C_TERMINAL_STEPS] += n_term;
    stats[ONLINE_C_EPISODES] += n_ep;
    stats[ONLINE_C_RESETS] += n_reset;
    stats[ONLINE_C_START_SCANS] += c.start_scans;
    stats[ONLINE_C_OUTCOME_SCANS] += c.outcome_scans;
    stats[ONLINE_C_ROW_READS] += c.rows;
    stats[ONLINE_C_ENTRY_READS] += c.entries;
    stats[ONLINE_C_RNG_DRAWS] += c.rng;
    stats[ONLINE_C_BELOW_DRAWS] += c.below;
    stats[ONLINE_C_SATURATIONS] += c.sat;
    mutex_unlock(stats_mutex);
    return 0;
}
