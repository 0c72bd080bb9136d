/* swiftrl.c: the SwiftRL DPU kernel, tabular Q-learning and SARSA over offline
 * transitions, in UPMEM C. One source for the twelve variants, chosen when it is built:
 *
 *   dpu-upmem-dpurte-clang -O2 -DNR_TASKLETS=16 -DN_STATES=16 -DN_ACTIONS=4 \
 *       -DSWIFTRL_ALGO=0 -DSWIFTRL_DTYPE=0 -DSWIFTRL_SAMPLING=0 -DSWIFTRL_TASKLET_MODE=1 \
 *       -o swiftrl swiftrl.c
 *
 * SWIFTRL_ALGO 0 Q-learning | 1 SARSA; SWIFTRL_DTYPE 0 FP32 | 1 INT32 (Q format);
 * SWIFTRL_SAMPLING 0 SEQ | 1 STR | 2 RAN; SWIFTRL_TASKLET_MODE 0 ring | 1 rows | 2 unlocked;
 * BLOCK_BYTES the DMA block (default 2048); COUNT_VISITS 1 to count visits per (s, a) (for
 * the visit-weighted aggregator); SWIFTRL_BOOTSTRAP 1 (OWNED): state-owned learning,
 * bootstrapping from the DPU's own rows for the states of [params.own_lo, params.own_hi) it
 * alone holds and from v_table otherwise; SARSA then bootstraps from its target policy's
 * expected value (policy_value, the weights in policy_weights and params.policy_max_*) and
 * draws nothing. SWIFTRL_PERFCOUNTER COUNT_CYCLES or COUNT_INSTRUCTIONS: the launch's
 * perfcounter_get() in the WRAM symbol perf; SWIFTRL_TASKLET_STATS: each tasklet's counters
 * in tasklet_stats.
 *
 * It follows docs/design.md exactly, as the simulator's built-in kernel
 * (pimrl/rlkernel/program.py) and the reference learner do. The tasklet modes:
 * - ring: the DPU's records are split into NR_TASKLETS contiguous lanes and the updates are
 *   applied round-robin over tasklets (step i of tasklet 0, then of tasklet 1, ...), enforced
 *   by a handshake token ring, so each update reads and writes the shared Q-table alone;
 * - unlocked: the same lanes, every tasklet at once on the shared table with no lock
 *   (SwiftRL's own scheme: updates of one entry can be lost or reordered on hardware);
 * - rows: the host gives each state the DPU has records of to one tasklet (state_owner) and
 *   groups the records by the tasklet that owns their state (lane t: the record range
 *   [lane_bounds[t], lane_bounds[t + 1])); every tasklet at once updates only its own rows,
 *   reading its own rows (and the rows nobody writes) live and its siblings' from a snapshot
 *   the tasklets take of their states at the start of every epoch, between two barriers:
 *   deterministic, whatever the interleaving.
 * The same xorshift32 streams and the same saturating Q-format arithmetic everywhere, the
 * products by alpha and gamma made of the DPU's 8x8 multiplies (fx_mul_u16). Records are
 * streamed from the MRAM heap into a per-tasklet WRAM buffer with mram_read, refetched when
 * the next record of a lane is not in it (one record per transfer for RAN, and for STR when
 * the stride leaps past a block). Symbols and counters: swiftrl_common.h. Builds unchanged
 * with the UPMEM SDK.
 */
#include <alloc.h>
#include <barrier.h>
#include <built_ins.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>
#ifdef SWIFTRL_PERFCOUNTER
#include <perfcounter.h>
#endif

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
#ifndef SWIFTRL_TASKLET_MODE
#define SWIFTRL_TASKLET_MODE SWIFTRL_MODE_RING
#endif
#ifndef BLOCK_BYTES
#define BLOCK_BYTES 2048
#endif
#define OWNED (SWIFTRL_BOOTSTRAP == SWIFTRL_BOOTSTRAP_OWNED)
#define OWNED_SARSA (OWNED && SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA)
#define RING (SWIFTRL_TASKLET_MODE == SWIFTRL_MODE_RING)
#define ROWS (SWIFTRL_TASKLET_MODE == SWIFTRL_MODE_ROWS)
/* rows: the snapshot holds whole rows for table-bootstrap SARSA (it reads Q[s'][b']), else
 * one value per state (the bootstrap value: Q-learning's max, owned SARSA's policy value) */
#define SNAP_ROWS (ROWS && SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA && !OWNED)
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
#elif COUNT_VISITS
__host uint32_t visits[N_STATES][N_ACTIONS];
#endif
#if OWNED
/* State-owned learning (docs/state-owned.md): the broadcast V(s') for states other DPUs
 * own; after the launch, rows own_lo and own_hi - 1 then V of the owned states. */
__host q_t v_table[N_STATES];
__host q_t v_out[2 * N_ACTIONS + N_STATES];
#endif
#if ROWS
/* The lanes (from the host): tasklet t's records [lane_bounds[t], lane_bounds[t + 1]) of the
 * MRAM heap, the states it owns lane_states[lane_bounds[T + 1 + t] .. lane_bounds[T + 2 + t]),
 * and each state's owner (NO_OWNER: no tasklet writes it in this launch; 254: several
 * tasklets write its entries, so every tasklet reads it from the snapshot). */
#define NO_OWNER 255
__host int32_t lane_bounds[2 * (NR_TASKLETS + 1)];
__host uint8_t state_owner[(N_STATES + 7) / 8 * 8];      /* whole 8-byte words */
__host uint16_t lane_states[(N_STATES + 3) / 4 * 4];
#if SNAP_ROWS
q_t snapshot[N_STATES][N_ACTIONS];
#else
q_t snapshot[N_STATES];
#endif
BARRIER_INIT(epoch_barrier, NR_TASKLETS);
#endif
#ifdef SWIFTRL_PERFCOUNTER
__host uint64_t perf;        /* perfcounter_get() over the launch's updates */
#endif
#ifdef SWIFTRL_TASKLET_STATS
/* Each tasklet's own counters, as stats holds their sums (-DSWIFTRL_TASKLET_STATS: for the
 * cost model's checks of tasklet mode rows, whose tasklets do unequal shares). */
__host int64_t tasklet_stats[NR_TASKLETS][SWIFTRL_N_COUNTERS];
#endif
#if OWNED || defined(SWIFTRL_PERFCOUNTER)
BARRIER_INIT(end_barrier, NR_TASKLETS);
#endif

BARRIER_INIT(start_barrier, NR_TASKLETS);
MUTEX_INIT(stats_mutex);

/* below(x, n) of swiftrl_arith.h for n < 2^16, in 32-bit operations and 8x8 multiplies:
 * with x = xh 2^16 + xl, floor(x n / 2^32) = floor((xh n + floor(xl n / 2^16)) / 2^16)
 * exactly, and xh n + floor(xl n / 2^16) < 2^32. */
static inline uint32_t below_u16(uint32_t x, uint32_t n)
{
    uint32_t low, high, p, q;
    const uint32_t xh = x >> 16;
    __builtin_mul_ul_ul_rrr(low, x, n);
    __builtin_mul_ul_uh_rrr(p, x, n);
    __builtin_mul_uh_ul_rrr(q, x, n);
    low += (p + q) << 8;
    __builtin_mul_uh_uh_rrr(p, x, n);
    low += p << 16;
    __builtin_mul_ul_ul_rrr(high, xh, n);
    __builtin_mul_ul_uh_rrr(p, xh, n);
    __builtin_mul_uh_ul_rrr(q, xh, n);
    high += (p + q) << 8;
    __builtin_mul_uh_uh_rrr(p, xh, n);
    high += p << 16;
    return (high + (low >> 16)) >> 16;
}
/* RAN's index: below_u16 for lanes below 2^16 records, else the 64-bit product. */
#define BELOW(x, n) ((n) < 65536 ? below_u16(x, n) : below(x, n))

#if SWIFTRL_DTYPE == SWIFTRL_INT32
/* The greedy value of row s (the max starts at Q[s][0]). */
static inline q_t row_max(const q_t *row)
{
    q_t m = row[0];
    for (int k = 1; k < N_ACTIONS; k++)
        if (row[k] > m)
            m = row[k];
    return m;
}

/* x * c in Q15.16 (fx_mul with frac = 16), rounded half up, for 0 <= c < 2^16, in 32-bit
 * operations and the DPU's 8x8 multiplies (docs/design.md): with x = xh 2^16 + xl (xh
 * signed, xl unsigned), x c = xh c 2^16 + xl c, so round(x c / 2^16) = xh c + ((xl c + 2^15)
 * >> 16) exactly; xl c + 2^15 < 2^32 and |xh c| < 2^31. Never saturates: c < 2^16. */
static inline int32_t fx_mul_u16(int32_t x, uint32_t c)
{
    uint32_t low, high, p, q;
    const uint32_t xh = (uint32_t)(x >> 16);
    __builtin_mul_ul_ul_rrr(low, x, c);           /* xl c = x0 c0 + (x0 c1 + x1 c0) 2^8 */
    __builtin_mul_ul_uh_rrr(p, x, c);             /*        + x1 c1 2^16 */
    __builtin_mul_uh_ul_rrr(q, x, c);
    low += (p + q) << 8;
    __builtin_mul_uh_uh_rrr(p, x, c);
    low += p << 16;
    __builtin_mul_ul_ul_rrr(high, xh, c);         /* xh c, xh's upper byte signed */
    __builtin_mul_ul_uh_rrr(p, xh, c);
    __builtin_mul_sh_ul_rrr(q, xh, c);
    high += (p + q) << 8;
    __builtin_mul_sh_uh_rrr(p, xh, c);
    high += p << 16;
    return (int32_t)(high + ((low + 0x8000u) >> 16));
}

/* The product by a launch constant: fx_mul_u16 where it applies (Q15.16, pimrl's default,
 * and a constant below 2^16: any alpha < 1 and gamma < 1), else the 64-bit product of
 * swiftrl_arith.h. Both give fx_mul's value. */
#define MUL_CONST(x, c, wide) \
    (__builtin_expect(wide, 0) ? fx_mul(c, x, frac, &n_sat) : fx_mul_u16(x, (uint32_t)(c)))
#else
/* The greedy value of row s, compared as integers: the float32 bits b mapped to
 * b ^ ((uint32)(b >> 31) >> 1) order every float as IEEE compares do except -0.0 below +0.0
 * and NaN; a Q-table holds neither (docs/design.md), so this is IEEE's max, lowest index on
 * ties, without the soft-float compare. */
static inline int32_t float_key(float f)
{
    union {
        float f;
        int32_t i;
    } u;
    u.f = f;
    return u.i ^ (int32_t)((uint32_t)(u.i >> 31) >> 1);
}

static inline q_t row_max(const q_t *row)
{
    int best = 0;
    int32_t m = float_key(row[0]);
    for (int k = 1; k < N_ACTIONS; k++) {
        const int32_t v = float_key(row[k]);
        if (v > m) {
            m = v;
            best = k;
        }
    }
    return row[best];
}
#endif

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

/* What one tasklet's updates need besides the table: its launch's constants and its
 * counters (update() is inlined, so the compiler keeps them in registers). */
struct lane {
    uint32_t rng;
#if ROWS
    uint32_t me;                           /* the tasklet: the owner of its states */
#endif
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    int32_t alpha, gamma;
    int frac, alpha_wide, gamma_wide;
#else
    float alpha, gamma;
#endif
#if SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA && !OWNED_SARSA
    int draw;
    uint64_t eps;
#endif
#if OWNED
    uint32_t own_lo, fresh_lo, fresh_hi;
#endif
#if OWNED_SARSA
    int eg, pv_frac;
    q_t cmax, cmean;
#endif
    int64_t n_terminal, n_scanned, n_rng, n_below, n_sreads, n_sat;
};

/* One update, of the record rec (docs/design.md). */
static inline __attribute__((always_inline)) void update(struct lane *L,
                                                         const swiftrl_transition_t *rec)
{
    const uint32_t s = (uint32_t)rec->state, s2 = (uint32_t)rec->next_state;
    const uint32_t a = rec->action;
    q_t target;
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    const q_t r = rec->reward.fx;
    const int frac = L->frac;
    int64_t n_sat = 0;
#else
    const q_t r = rec->reward.f;
#endif
    if (rec->terminated) {
        target = r;
        L->n_terminal++;
    } else {
        q_t m;
#if ROWS
        /* rows: this tasklet's own states (and those nobody writes) live, its siblings'
         * from the snapshot */
        const uint32_t owner = state_owner[s2];
        const int own_row = owner == L->me || owner == NO_OWNER;
#endif
#if SNAP_ROWS
        const q_t *row = own_row ? q_table[s2] : snapshot[s2];
#else
        const q_t *row = q_table[s2];
#endif
#if OWNED
        if (s2 >= L->fresh_lo && s2 < L->fresh_hi) {
#if ROWS
            if (own_row) {
#endif
#if OWNED_SARSA
                m = policy_value(row, L->eg, policy_weights[s2 - L->own_lo], L->cmean, L->cmax,
                                 L->pv_frac, &L->n_sat);
#else
                m = row_max(row);
#endif
                L->n_scanned += N_ACTIONS;
#if ROWS
            } else {
                m = snapshot[s2];
                L->n_sreads++;
            }
#endif
        } else {
            m = v_table[s2];
        }
#elif SWIFTRL_ALGO == SWIFTRL_ALGO_Q
#if ROWS
        if (own_row) {
            m = row_max(row);
        } else {
            m = snapshot[s2];
            L->n_sreads++;
        }
#else
        m = row_max(row);
#endif
#else
#if ROWS
        L->n_sreads += !own_row;
#endif
        if (!L->draw) {
            m = row[rec->next_action];
        } else {
            uint32_t rng = xorshift32(L->rng);
            if ((uint64_t)rng < L->eps) {
                rng = xorshift32(rng);
                m = row[below(rng, N_ACTIONS)];
                L->n_rng += 2;
                L->n_below++;
            } else {
                m = row_max(row);
                L->n_scanned += N_ACTIONS;
                L->n_rng += 1;
            }
            L->rng = rng;
        }
#endif
#if SWIFTRL_DTYPE == SWIFTRL_INT32
        target = add_sat32(r, MUL_CONST(m, L->gamma, L->gamma_wide), &n_sat);
#else
        q_t t1 = L->gamma * m;
        target = r + t1;
#endif
    }
    q_t *const entry = &q_table[s][a];
    const q_t cur = *entry;
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    const int32_t td = sub_sat32(target, cur, &n_sat);
    *entry = add_sat32(cur, MUL_CONST(td, L->alpha, L->alpha_wide), &n_sat);
    L->n_sat += n_sat;
#else
    const float td = target - cur;
    const float step = L->alpha * td;
    *entry = cur + step;
#endif
#if COUNT_VISITS
    visits[s][a]++;
#endif
}

int main(void)
{
    const uint32_t t = me();
    if (t == 0) {
        mem_reset();
        for (int c = 0; c < SWIFTRL_N_COUNTERS; c++)
            stats[c] = 0;
#ifdef SWIFTRL_PERFCOUNTER
        perfcounter_config(SWIFTRL_PERFCOUNTER, true);
#endif
    }
    barrier_wait(&start_barrier);
    if (params.algo != SWIFTRL_ALGO || params.dtype != SWIFTRL_DTYPE
        || params.sampling != SWIFTRL_SAMPLING || params.tasklet_mode != SWIFTRL_TASKLET_MODE)
        __builtin_trap();          /* the host's parameters are for another variant */

    swiftrl_transition_t *buf = mem_alloc(BLOCK_BYTES);
    struct lane L = {0};
    /* 32-bit record indices: a DPU's 64 MiB of MRAM holds at most 2^22 records */
#if ROWS
    const uint32_t start = (uint32_t)lane_bounds[t], end = (uint32_t)lane_bounds[t + 1];
    const uint32_t list_lo = (uint32_t)lane_bounds[NR_TASKLETS + 1 + t];
    const uint32_t list_hi = (uint32_t)lane_bounds[NR_TASKLETS + 2 + t];
    const uint32_t size = end - start;
    const uint32_t longest = size;                 /* each lane runs to its own end */
    L.me = t;
#else
    const uint32_t n_records = (uint32_t)params.n_records;
    const uint32_t base = n_records / NR_TASKLETS, extra = n_records % NR_TASKLETS;
    const uint32_t start = t * base + (t < extra ? t : extra);
    const uint32_t size = base + (t < extra ? 1 : 0);
    const uint32_t end = start + size;
    const uint32_t longest = base + (extra ? 1 : 0);
#endif
    const int64_t epochs = params.epochs;
    const uint32_t stride = (uint32_t)params.stride;
    const uint32_t heap = (uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER;
    const int per_record = SWIFTRL_SAMPLING == SWIFTRL_RAN
                           || (SWIFTRL_SAMPLING == SWIFTRL_STR
                               && (uint64_t)stride * RECORD_BYTES >= BLOCK_BYTES);
    (void)per_record, (void)longest;
#if SWIFTRL_DTYPE == SWIFTRL_INT32
    L.alpha = (int32_t)params.alpha_fx;
    L.gamma = (int32_t)params.gamma_fx;
    L.frac = (int)params.frac_bits;
    /* the 64-bit product where the 8x8 one does not apply (docs/design.md) */
    L.alpha_wide = L.frac != 16 || L.alpha < 0 || L.alpha >= 65536;
    L.gamma_wide = L.frac != 16 || L.gamma < 0 || L.gamma >= 65536;
#else
    union {
        int32_t i;
        float f;
    } ua, ug;
    ua.i = (int32_t)params.alpha_f32_bits;
    ug.i = (int32_t)params.gamma_f32_bits;
    L.alpha = ua.f;
    L.gamma = ug.f;
#endif
#if SWIFTRL_ALGO == SWIFTRL_ALGO_SARSA && !OWNED_SARSA
    L.draw = params.sarsa_draw == SWIFTRL_NEXT_EPSILON_GREEDY;
    L.eps = (uint64_t)params.eps_threshold;
#endif
#if OWNED
    const uint32_t own_lo = (uint32_t)params.own_lo, own_hi = (uint32_t)params.own_hi;
    L.own_lo = own_lo;
    /* fresh rows only for the states no other DPU shares */
    L.fresh_lo = own_lo + (uint32_t)(params.own_shared & 1);
    L.fresh_hi = own_hi - (uint32_t)((params.own_shared >> 1) & 1);
#endif
#if OWNED_SARSA && SWIFTRL_DTYPE == SWIFTRL_INT32
    L.cmax = (q_t)params.policy_max_fx;
    L.cmean = (q_t)params.policy_mean_fx;
    L.pv_frac = L.frac;
#elif OWNED_SARSA
    union {
        int32_t i;
        float f;
    } uc, um;
    uc.i = (int32_t)params.policy_max_f32_bits;
    um.i = (int32_t)params.policy_mean_f32_bits;
    L.cmax = uc.f;
    L.cmean = um.f;
    L.pv_frac = 0;
#endif
#if OWNED_SARSA
    L.eg = params.sarsa_draw == SWIFTRL_NEXT_EPSILON_GREEDY;
#endif
    L.rng = rng_state[t];
    int64_t n_dma = 0, n_dma_bytes = 0, n_snap = 0, n_lane_epochs = 0;

    for (int64_t e = 0; e < epochs; e++) {
#if ROWS
        /* the epoch's snapshot of this tasklet's states, once every tasklet has finished
         * the previous epoch; then every update may read it (not in a later window of an
         * epoch: its snapshot is the one the epoch's first window took) */
        if (!params.epoch_continues) {
        barrier_wait(&epoch_barrier);
        for (uint32_t k = list_lo; k < list_hi; k++) {
            const uint32_t st = lane_states[k];
#if SNAP_ROWS
            for (int k = 0; k < N_ACTIONS; k++)
                snapshot[st][k] = q_table[st][k];
#elif OWNED_SARSA
            snapshot[st] = policy_value(q_table[st], L.eg, policy_weights[st - own_lo], L.cmean,
                                        L.cmax, L.pv_frac, &L.n_sat);
#else
            snapshot[st] = row_max(q_table[st]);
#endif
        }
        n_snap += list_hi - list_lo;
        n_lane_epochs++;
        barrier_wait(&epoch_barrier);
        }
#endif
#if SWIFTRL_SAMPLING == SWIFTRL_SEQ && !RING
        /* SEQ with every tasklet at once: the lane a block at a time, every record of the
         * block in turn */
        for (uint32_t j = start; j < end;) {
            const uint32_t n = end - j < BLOCK_RECORDS ? end - j : BLOCK_RECORDS;
            mram_read((__mram_ptr void *)(uintptr_t)(heap + j * RECORD_BYTES), buf,
                      n * RECORD_BYTES);
            n_dma++;
            n_dma_bytes += n * RECORD_BYTES;
            j += n;
            for (const swiftrl_transition_t *rec = buf, *last = buf + n; rec != last; rec++)
                update(&L, rec);
        }
#else
        uint32_t cursor = start, offset = 0, blk_lo = 0, blk_hi = 0;   /* no block yet */
        (void)cursor, (void)offset;                /* RAN draws; only STR walks offsets */
        for (uint32_t i = 0; i < longest; i++) {
#if RING
            /* the token ring: tasklet t - 1 has applied its i-th update */
            if (NR_TASKLETS > 1 && (t != 0 || e != 0 || i != 0))
                handshake_wait_for((t + NR_TASKLETS - 1) % NR_TASKLETS);
            if (i < size) {
#else
            {
#endif
                /* the lane's next record */
                uint32_t j;
#if SWIFTRL_SAMPLING == SWIFTRL_RAN
                L.rng = xorshift32(L.rng);
                j = start + BELOW(L.rng, size);
#elif SWIFTRL_SAMPLING == SWIFTRL_SEQ
                j = cursor++;
#else
                j = cursor;
                uint32_t nxt = j + stride;
                while (nxt >= end) {
                    offset++;
                    nxt = start + offset;
                    if (offset >= stride)
                        break;
                }
                cursor = nxt;
#endif
                if (j - blk_lo >= blk_hi - blk_lo) {      /* j outside [blk_lo, blk_hi) */
                    const uint32_t n = per_record ? 1 : (end - j < BLOCK_RECORDS ? end - j : BLOCK_RECORDS);
                    mram_read((__mram_ptr void *)(uintptr_t)(heap + j * RECORD_BYTES), buf,
                              n * RECORD_BYTES);
                    n_dma++;
                    n_dma_bytes += n * RECORD_BYTES;
                    blk_lo = j;
                    blk_hi = j + n;
                }
                update(&L, &buf[j - blk_lo]);
            }
#if RING
            /* pass the token to tasklet t + 1 (not after the very last step of the ring) */
            if (NR_TASKLETS > 1 && (t != NR_TASKLETS - 1 || e != epochs - 1 || i != longest - 1))
                handshake_notify();
#endif
        }
#endif
    }
    const int64_t n_updates = epochs * (int64_t)size;
    int64_t n_scanned = L.n_scanned, n_rng = L.n_rng, n_below = L.n_below;
#if SWIFTRL_ALGO == SWIFTRL_ALGO_Q && !OWNED
    /* every non-terminal update's max scanned its row, but those read from the snapshot */
    n_scanned = (n_updates - L.n_terminal - L.n_sreads) * N_ACTIONS;
#endif
#if SWIFTRL_SAMPLING == SWIFTRL_RAN
    n_rng += n_updates;
    n_below += n_updates;
    const int64_t n_wide = size >= 65536 ? n_updates : 0;     /* the 64-bit product */
#else
    const int64_t n_wide = 0;
#endif
    rng_state[t] = L.rng;
#if OWNED || defined(SWIFTRL_PERFCOUNTER)
    barrier_wait(&end_barrier);            /* every update applied */
#endif
#ifdef SWIFTRL_PERFCOUNTER
    if (t == 0)
        perf = perfcounter_get();
#endif
#if OWNED
    if (t == 0 && own_hi > own_lo) {
        for (int k = 0; k < N_ACTIONS; k++) {
            v_out[k] = q_table[own_lo][k];
            v_out[N_ACTIONS + k] = q_table[own_hi - 1][k];
        }
        for (uint32_t st = own_lo; st < own_hi; st++)
#if OWNED_SARSA
            v_out[2 * N_ACTIONS + (st - own_lo)] = policy_value(
                q_table[st], L.eg, policy_weights[st - own_lo], L.cmean, L.cmax, L.pv_frac,
                &L.n_sat);
#else
            v_out[2 * N_ACTIONS + (st - own_lo)] = row_max(q_table[st]);
#endif
        n_scanned += (int64_t)(own_hi - own_lo) * N_ACTIONS;
    }
#endif
#ifdef SWIFTRL_TASKLET_STATS
    for (int c = 0; c < SWIFTRL_N_COUNTERS; c++)
        tasklet_stats[t][c] = 0;
    tasklet_stats[t][SWIFTRL_C_UPDATES] = n_updates;
    tasklet_stats[t][SWIFTRL_C_TERMINAL] = L.n_terminal;
    tasklet_stats[t][SWIFTRL_C_SCANNED] = n_scanned;
    tasklet_stats[t][SWIFTRL_C_RNG] = n_rng;
    tasklet_stats[t][SWIFTRL_C_BELOW] = n_below;
    tasklet_stats[t][SWIFTRL_C_DMA_READS] = n_dma;
    tasklet_stats[t][SWIFTRL_C_DMA_READ_BYTES] = n_dma_bytes;
    tasklet_stats[t][SWIFTRL_C_SATURATIONS] = L.n_sat;
    tasklet_stats[t][SWIFTRL_C_STEPS] = n_updates;
    tasklet_stats[t][SWIFTRL_C_SNAPSHOT_ROWS] = n_snap;
    tasklet_stats[t][SWIFTRL_C_SNAPSHOT_READS] = L.n_sreads;
    tasklet_stats[t][SWIFTRL_C_LANE_EPOCHS] = n_lane_epochs;
    tasklet_stats[t][SWIFTRL_C_WIDE_DRAWS] = n_wide;
#endif
    mutex_lock(stats_mutex);
    stats[SWIFTRL_C_UPDATES] += n_updates;
    stats[SWIFTRL_C_TERMINAL] += L.n_terminal;
    stats[SWIFTRL_C_SCANNED] += n_scanned;
    stats[SWIFTRL_C_RNG] += n_rng;
    stats[SWIFTRL_C_BELOW] += n_below;
    stats[SWIFTRL_C_DMA_READS] += n_dma;
    stats[SWIFTRL_C_DMA_READ_BYTES] += n_dma_bytes;
    stats[SWIFTRL_C_SATURATIONS] += L.n_sat;
    stats[SWIFTRL_C_STEPS] += n_updates;
    stats[SWIFTRL_C_SNAPSHOT_ROWS] += n_snap;
    stats[SWIFTRL_C_SNAPSHOT_READS] += L.n_sreads;
    stats[SWIFTRL_C_LANE_EPOCHS] += n_lane_epochs;
    stats[SWIFTRL_C_WIDE_DRAWS] += n_wide;
    mutex_unlock(stats_mutex);
    return 0;
}
