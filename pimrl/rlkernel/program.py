"""The SwiftRL DPU program, built into the simulator as a numba kernel.

One program, its variant chosen when it is built (as ``-D`` flags choose the C kernel's):
Q-learning or SARSA, FP32 or INT32, SEQ, STR or RAN, ``tasklets`` tasklets; the launch
kernel is compiled per variant (:func:`dpu_kernel`), with the variant's choices as
compile-time constants and the update primitives of :mod:`pimrl.learners.kernels`. Each DPU
keeps its Q-table in WRAM and streams its transitions from MRAM into per-tasklet WRAM buffers
with DMA transfers that obey ``mram_read``'s rules; under SEQ every lane needs its next block
at the same step, so the blocks are fetched together once per block. The simulator counts and
checks every DMA, but when the records' MRAM pages follow one another in the page pool (a
host push in one transfer) it reads them in place rather than copying them into the buffers,
whose contents no host-visible symbol exposes, and checks them all once before the first
update: such DPUs run a fast kernel whose hot loop has neither test. The others (pages
missing or out of order, or a record outside the table) run the general kernel, which copies
each DMA and checks each record as it reads it. The DPUs run at once on the numba threads
(:func:`pimrl.parallel.run_ranges`), each on its own memories, so results never depend on
the number of threads.

WRAM layout (host-visible symbols first, in this order, each 8-byte aligned):
``params`` (PARAMS_WORDS int64: the learner's kernel scalars, then the host's per-DPU words),
``rng_state`` (uint32 per tasklet), ``stats`` (int64 counters, see ``kcost.COUNTERS``),
``q_table`` (S x A float32 or Q-format int32), ``visits`` (S x A uint32, counted only when
the program is built with ``count_visits``, as the weighted aggregator needs), then the tasklets'
DMA buffers and stacks. Transitions live at the start of the MRAM heap
(``__sys_used_mram_end``), 16-byte records (docs/design.md).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.kernels import (
    RAN, SEQ, STR, as_table, bootstrap, f32_scalar, fields_at, learning_rates_f32,
    learning_rates_i32, next_index, outside_table, owns_row, policy_value_f32, policy_value_i32,
    row_max, step_f32, step_i32, take_snapshot, target_i32,
    update_f32, update_f32_owned, update_i32, update_i32_owned,
)
from pimrl.learners.variants import (
    P_ALGO, P_DTYPE, P_EPOCH_CONTINUES, P_EPOCHS, P_EPS, P_FRAC, P_N_RECORDS, P_OWN_HI,
    P_OWN_LO, P_OWN_SHARED, P_POLICY_MAX32, P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX, P_SAMPLING,
    P_SARSA_DRAW, P_STRIDE, P_TASKLET_MODE, PARAMS_WORDS, Variant,
)
from pimrl.parallel import run_ranges
from pimrl.partition import NO_OWNER, SPLIT
from pimrl.rng import below, xorshift32
from pimrl.rlkernel import costs as kcost
from pimrl.rlkernel.costs import C
from pimrl.pim.memory import PAGE_BYTES, PAGE_SHIFT, mram_words_to_wram
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, DpuProgram, LaunchResult, Symbol

RECORD_BYTES = 16
N_COUNTERS = len(kcost.COUNTERS)
DMA_MIN, DMA_MAX = 8, 2048
# Fault reasons (the ``fault`` counter holds reason * 256 + tasklet + 1).
FAULT_DMA, FAULT_RECORD, FAULT_LANE = 1, 2, 3

(C_UPDATES, C_TERMINAL, C_SCANNED, C_RNG, C_BELOW, C_DMA_R, C_DMA_RB, C_DMA_W, C_DMA_WB, C_SAT,
 C_FAULT, C_STEPS, C_SNAP, C_SNAP_READS, C_LANE_EPOCHS, C_CONFLICTS, C_WIDE) = (
    C[n] for n in kcost.COUNTERS)
#: RAN draws from a lane of this many records or more take the 64-bit product (below).
WIDE_LANE = 1 << 16


def _align8(n: int) -> int:
    return (n + 7) & ~7


def _build_kernel(variant: Variant, count_visits: bool, n_actions: int, fast: bool):
    """The launch kernel of one variant for tables of ``n_actions`` actions: a numba closure
    whose flags and action count are compile-time constants (as the C kernel is built with
    ``-DN_ACTIONS``; the same update primitives as :func:`pimrl.learners.kernels.compiled`'s
    loops), cached by numba across runs.

    ``fast``: the kernel for DPUs whose records it reads in place and has checked (the usual
    case); it leaves the others untouched and marks them in ``skipped``, for the general
    kernel (``fast`` false), which copies each DMA or checks each record as needed. With
    both tests gone from its hot loop, LLVM keeps its values in registers (launches ran
    15-35 % faster)."""
    IS_INT = variant.is_int
    IS_Q = variant.algo == "q"
    DRAW = variant.draws_next_action
    SAMPLING = {"seq": SEQ, "str": STR, "ran": RAN}[variant.sampling]
    VISITS = bool(count_visits)
    USES_RNG = variant.uses_rng
    OWNED = variant.owned
    RAW = np.int32 if IS_INT else np.float32        # the table's raw type in WRAM
    EG = variant.epsilon_greedy                           # owned SARSA's target policy
    CHECK_B = variant.algo == "sarsa" and not DRAW and not OWNED    # reads the logged b
    N_ACTIONS = int(n_actions)      # a constant row length: row maxima unrolled, no length tests
    FAST = bool(fast)
    ROWS = variant.rows             # tasklets own state ranges (docs/design.md)
    UNLOCKED = variant.tasklet_mode == "unlocked"
    SNAP_ROWS = variant.snapshot_rows
    # Under SEQ and STR every record is read once an epoch: the fast kernel counts the
    # terminal ones in its up-front check instead of at each update (rows: per lane, at
    # each update).
    TERMINALS_PER_UPDATE = SAMPLING == RAN or not FAST or ROWS

    @njit(nogil=True, cache=True)
    def launch(slots, page_table, pool, wram, n_states, n_actions, tasklets, block_bytes,
               heap_off, off_params, off_rng, off_stats, off_q, off_visits, off_buf, off_v,
               off_vout, off_w, off_lanes, off_owner, off_list, off_snap, copied, skipped,
               tcount):
        """Every DPU of ``slots``, each its updates in the order of docs/design.md on its own
        memories (callers run disjoint slices of the DPUs on several threads). ``copied[0]``
        is set when a DPU copied records into its WRAM buffers; the fast kernel sets
        ``skipped[k]`` for the DPUs ``slots[k]`` it leaves to the general one. ``n_actions``
        must be the kernel's (it is built for one). Tasklet mode ``rows`` also leaves each
        tasklet's counters in ``tcount[k, t]`` (its own work: the pace of the DPU)."""
        if n_actions != N_ACTIONS:
            raise ValueError("this launch kernel was built for another number of actions")
        n_actions = N_ACTIONS
        nq = n_states * n_actions
        # The table's sizes as uint32, for the record checks: compared with the uint32
        # fields in one type (numba compares a uint with an int64 in float64).
        ns_u, na_u = np.uint32(n_states), np.uint32(n_actions)
        # Every DMA's MRAM address is heap_off plus a multiple of 16: aligned or not, all alike.
        misaligned = heap_off % 8 != 0
        buf_len = tasklets * block_bytes
        block_records = block_bytes // RECORD_BYTES
        block_words = block_bytes >> 2
        pool64 = pool.view(np.uint64)         # 8-byte words: the unit the DMA engine moves
        pool_i32 = pool.view(np.int32).reshape(-1)          # records read where they lie
        pool_r = pool_i32.view(RAW)
        page_words = PAGE_BYTES >> 2
        # unlocked: the step at which each entry was last updated, to count two tasklets'
        # updates of one entry at one step (steps numbered across this call's DPUs)
        stamp = np.full(nq if UNLOCKED else 1, -1, np.int64)
        gstep = np.int64(0)
        for k in range(len(slots)):
            d = slots[k]
            row = wram[d]
            row64 = row.view(np.uint64)
            page_row = page_table[d]
            params = row[off_params:off_params + 8 * PARAMS_WORDS].view(np.int64)
            rng = row[off_rng:off_rng + 4 * tasklets].view(np.uint32)
            stats = row[off_stats:off_stats + 8 * N_COUNTERS].view(np.int64)
            visits = as_table(row[off_visits:off_visits + 4 * nq].view(np.uint32), n_states,
                              n_actions)
            buf_i32 = row[off_buf:off_buf + buf_len].view(np.int32)
            q = as_table(row[off_q:off_q + 4 * nq].view(RAW), n_states, n_actions)
            buf_r = row[off_buf:off_buf + buf_len].view(RAW)
            vv = row[off_v:off_v + 4 * n_states].view(RAW)
            edges = row[off_vout:off_vout + 8 * n_actions].view(RAW)
            vout = row[off_vout + 8 * n_actions:off_vout + 8 * n_actions + 4 * n_states].view(RAW)
            wt = as_table(row[off_w:off_w + 4 * nq].view(RAW), n_states, n_actions)
            # rows: each lane's records [rec_b[t], rec_b[t + 1]) and the states it owns,
            # lane_states[list_b[t]:list_b[t + 1]] (WRAM symbols lane_bounds, lane_states),
            # each state's owner (state_owner), and the epoch's snapshot
            lane_b = row[off_lanes:off_lanes + 8 * (tasklets + 1)].view(np.int32)
            rec_b, list_b = lane_b[:tasklets + 1], lane_b[tasklets + 1:]
            owner = row[off_owner:off_owner + n_states]
            slist = row[off_list:off_list + 2 * n_states].view(np.uint16)
            snap_v = row[off_snap:off_snap + 4 * n_states].view(RAW)
            snap_q = as_table(row[off_snap:off_snap + 4 * (nq if SNAP_ROWS else n_states)].view(RAW),
                              n_states if SNAP_ROWS else 1, n_actions if SNAP_ROWS else n_states)
            if IS_INT:
                alpha, gamma = learning_rates_i32(params)
                cmax = np.int32(params[P_POLICY_MAX_FX])
                cmean = np.int32(params[P_POLICY_MEAN_FX])
            else:
                alpha, gamma = learning_rates_f32(params)
                cmax = f32_scalar(params[P_POLICY_MAX32])
                cmean = f32_scalar(params[P_POLICY_MEAN32])
            own_lo, own_hi = params[P_OWN_LO], params[P_OWN_HI]
            fresh_lo = own_lo + (params[P_OWN_SHARED] & 1)        # rows no other DPU shares
            fresh_hi = own_hi - ((params[P_OWN_SHARED] >> 1) & 1)
            if ROWS and not OWNED:
                fresh_lo, fresh_hi = 0, n_states
            for c in range(N_COUNTERS):
                stats[c] = 0
            eps = params[P_EPS]
            frac = params[P_FRAC]
            stride = params[P_STRIDE]
            n_records = params[P_N_RECORDS]

            # Records are read where they lie in MRAM when their pages exist and follow one
            # another in the page pool (as they do once the host has pushed them in one
            # transfer): each DMA is still checked and counted, but not copied into the
            # tasklet's WRAM buffer, which no host-visible symbol exposes. 16 buffers of 2 KB
            # plus the table overflow a host core's L1 cache; reading the records in place
            # streams 16 at a time (FP32 SEQ launches ran ~40 % slower).
            first_page = heap_off >> PAGE_SHIFT
            direct = n_records > 0 and page_row[first_page] > 0
            if direct:
                for pg in range(first_page + 1,
                                ((heap_off + n_records * RECORD_BYTES - 1) >> PAGE_SHIFT) + 1):
                    if page_row[pg] != page_row[first_page] + (pg - first_page):
                        direct = False
            # Record j's first word in the pool, when direct: rec_base + 4 j.
            rec_base = ((page_row[first_page] - 1) * page_words
                        + ((heap_off & (PAGE_BYTES - 1)) >> 2)) if direct else 0
            # Records read in place are checked once, before any update: if all hold states
            # and actions of the table (rows: of their lane's states), the loop checks none
            # (it checks each record read, and faults on the first bad one in the update
            # order, otherwise).
            checked = False
            terminal_records = 0
            if direct:
                checked = True
                for t in range(tasklets if ROWS else 1):
                    lo_r = rec_b[t] if ROWS else 0
                    hi_r = rec_b[t + 1] if ROWS else n_records
                    for rec in range(lo_r, hi_r):
                        s, a, _, s2, b, term = fields_at(pool_i32, pool_r,
                                                         np.uint64(rec_base + 4 * rec))
                        if outside_table(s, a, s2, b, term, ns_u, na_u, CHECK_B) or (
                                ROWS and owner[s] != t and owner[s] != SPLIT):
                            checked = False
                            break
                        terminal_records += term
                    if not checked:
                        break
            if FAST and not (direct and checked):
                skipped[k] = 1                  # only its counters zeroed: the general
                continue                        # kernel's
            if not direct:
                copied[0] = 1
            in_place = FAST or direct           # constants in the fast kernel
            check_each = not FAST and not checked

            # Counters live in locals (registers) and reach WRAM once at the end; the updates
            # are counted after the loop (every lane makes its length of them an epoch).
            n_terminal = n_scanned = n_rng = n_below = n_dma = n_dma_bytes = 0
            n_sat = n_snap = n_sreads = n_conflicts = n_wide = 0
            fault = 0
            # RAN, and STR whose stride leaps past a buffer, fetch one record per DMA.
            per_record = SAMPLING == RAN or (SAMPLING == STR and stride * RECORD_BYTES >= block_bytes)
            if ROWS:
                # Tasklet mode rows (docs/design.md): every epoch, each tasklet's share of
                # the snapshot, then each tasklet's lane to its end; the lanes write disjoint
                # rows, so running them one after the other is running them at once.
                for t in range(tasklets):
                    for c in range(N_COUNTERS):
                        tcount[k, t, c] = 0
                for _ in range(params[P_EPOCHS]):
                    for t in range(tasklets if params[P_EPOCH_CONTINUES] == 0 else 0):
                        n_sat = take_snapshot(q, snap_v, snap_q, slist, list_b[t], list_b[t + 1],
                                              SNAP_ROWS, IS_Q, OWNED, IS_INT, EG, wt, own_lo,
                                              cmean, cmax, frac, n_sat)
                        tcount[k, t, C_SNAP] += list_b[t + 1] - list_b[t]
                        tcount[k, t, C_LANE_EPOCHS] += 1
                    for t in range(tasklets):
                        start, end = np.int64(rec_b[t]), np.int64(rec_b[t + 1])
                        x = rng[t] if USES_RNG else np.uint32(0)
                        cur, off = start, np.int64(0)
                        blk_lo = blk_hi = np.int64(-1)
                        t_term = t_sc = t_dr = t_below = t_sr = t_dma = t_dmab = 0
                        for _ in range(end - start):
                            j, cur, off, x = next_index(SAMPLING, stride, start, end, cur, off, x)
                            if j < blk_lo or j >= blk_hi:
                                n = 1 if per_record else min(block_records, end - j)
                                nbytes = n * RECORD_BYTES
                                addr = heap_off + j * RECORD_BYTES
                                if nbytes < DMA_MIN or nbytes > DMA_MAX or nbytes % 8 or misaligned:
                                    fault = FAULT_DMA * 256 + 1 + t
                                    break
                                if not in_place:
                                    mram_words_to_wram(page_row, pool64, addr, row64,
                                                       off_buf + t * block_bytes, nbytes)
                                t_dma += 1
                                t_dmab += nbytes
                                blk_lo = j
                                blk_hi = j + n
                            if in_place:
                                w = np.uint64(rec_base + (j << 2))
                                src_i32, src_r = pool_i32, pool_r
                            else:
                                w = np.uint64(t * block_words + ((j - blk_lo) << 2))
                                src_i32, src_r = buf_i32, buf_r
                            s, a, r, s2, b, term = fields_at(src_i32, src_r, w)
                            if check_each:
                                if outside_table(s, a, s2, b, term, ns_u, na_u, CHECK_B):
                                    fault = FAULT_RECORD * 256 + 1 + t
                                    stats[C_STEPS] = j
                                    break
                                if owner[s] != t and owner[s] != SPLIT:
                                    fault = FAULT_LANE * 256 + 1 + t
                                    stats[C_STEPS] = j
                                    break
                            # One update (docs/design.md, "Tasklet modes"), written out
                            # with the flags as captured constants: numba drops the other
                            # variants' branches before typing. Through an inlined helper
                            # taking them as arguments (update_rows_f32, the CPU loop's),
                            # every branch is typed and lowered, and this loop ran 7-18x
                            # slower (FrozenLake q-fp32-seq, 2,000 DPUs: 2.3 s, now 0.13 s).
                            sc = dr = sr = 0
                            if term:
                                target = r
                            else:
                                if OWNED and (s2 < fresh_lo or s2 >= fresh_hi):
                                    m = vv[s2]              # not alone here: the broadcast
                                elif owns_row(owner, s2, t):
                                    if OWNED and not IS_Q:
                                        if IS_INT:
                                            m, sc, n_sat = policy_value_i32(
                                                q, s2, EG, wt, s2 - own_lo, cmean, cmax, frac,
                                                n_sat)
                                        else:
                                            m, sc = policy_value_f32(q, s2, EG, wt, s2 - own_lo,
                                                                     cmean, cmax)
                                    else:
                                        m, x, sc, dr = bootstrap(q, s2, b, IS_Q, DRAW, eps, x)
                                else:
                                    sr = 1
                                    if SNAP_ROWS:
                                        m, x, sc, dr = bootstrap(snap_q, s2, b, IS_Q, DRAW, eps, x)
                                    else:
                                        m = snap_v[s2]
                                if IS_INT:
                                    target, n_sat = target_i32(r, gamma, m, frac, n_sat)
                                else:
                                    target = np.float32(r + np.float32(gamma * m))
                            if IS_INT:
                                n_sat = step_i32(q, s, a, target, alpha, frac, n_sat)
                            else:
                                step_f32(q, s, a, target, alpha)
                            if VISITS:
                                visits[s, a] += 1
                            t_term += term
                            t_sc += sc
                            t_dr += dr
                            t_below += dr == 2
                            t_sr += sr
                        if USES_RNG:
                            rng[t] = x
                        if SAMPLING == RAN:
                            t_dr += end - start
                            t_below += end - start
                            if end - start >= WIDE_LANE:
                                tcount[k, t, C_WIDE] += end - start
                        tcount[k, t, C_UPDATES] += end - start
                        tcount[k, t, C_TERMINAL] += t_term
                        tcount[k, t, C_SCANNED] += t_sc
                        tcount[k, t, C_RNG] += t_dr
                        tcount[k, t, C_BELOW] += t_below
                        tcount[k, t, C_SNAP_READS] += t_sr
                        tcount[k, t, C_DMA_R] += t_dma
                        tcount[k, t, C_DMA_RB] += t_dmab
                        if fault:
                            break
                    if fault:
                        break
                for t in range(tasklets):
                    n_terminal += tcount[k, t, C_TERMINAL]
                    n_scanned += tcount[k, t, C_SCANNED]
                    n_rng += tcount[k, t, C_RNG]
                    n_below += tcount[k, t, C_BELOW]
                    n_dma += tcount[k, t, C_DMA_R]
                    n_dma_bytes += tcount[k, t, C_DMA_RB]
                    n_snap += tcount[k, t, C_SNAP]
                    n_sreads += tcount[k, t, C_SNAP_READS]
                    n_wide += tcount[k, t, C_WIDE]
            else:
                # Lanes: the DPU's records split evenly over tasklets, first n % T one longer.
                base, extra = n_records // tasklets, n_records % tasklets
                start = np.empty(tasklets, dtype=np.int64)
                length = np.empty(tasklets, dtype=np.int64)
                pos = 0
                for t in range(tasklets):
                    length[t] = base + (1 if t < extra else 0)
                    start[t] = pos
                    pos += length[t]
                longest = base + (1 if extra else 0)
                cur = np.zeros(tasklets, dtype=np.int64)
                off = np.zeros(tasklets, dtype=np.int64)
                blk_lo = np.zeros(tasklets, dtype=np.int64)
                blk_hi = np.zeros(tasklets, dtype=np.int64)
                # SEQ walks every lane in step: one block per tasklet every block_records steps.
                chunked = SAMPLING == SEQ
                for _ in range(params[P_EPOCHS]):
                    for t in range(tasklets):
                        cur[t] = start[t]
                        off[t] = 0
                        blk_lo[t] = -1
                        blk_hi[t] = -1
                    next_block = 0
                    for i in range(longest):
                        gstep += 1
                        if chunked and i == next_block:
                            next_block += block_records
                            # Each unfinished lane's next block, before the step that needs it.
                            for t in range(tasklets):
                                if i < length[t]:
                                    n = min(block_records, length[t] - i)
                                    nbytes = n * RECORD_BYTES
                                    addr = heap_off + (start[t] + i) * RECORD_BYTES
                                    if nbytes < DMA_MIN or nbytes > DMA_MAX or nbytes % 8 or misaligned:
                                        fault = FAULT_DMA * 256 + 1 + t
                                        break
                                    if not in_place:
                                        mram_words_to_wram(page_row, pool64, addr, row64,
                                                           off_buf + t * block_bytes, nbytes)
                                    n_dma += 1
                                    n_dma_bytes += nbytes
                                    blk_lo[t] = start[t] + i
                            if fault:
                                break
                        # The lanes still running: all of them, then at the last step the first
                        # ``extra`` (the longer ones), so no lane tests its length.
                        for t in range(tasklets if i < base else extra):
                            x = rng[t] if USES_RNG else np.uint32(0)
                            if SAMPLING == SEQ:
                                j = start[t] + i
                            elif SAMPLING == RAN:          # next_index's draw, no cursor to keep
                                x = xorshift32(x)
                                j = start[t] + below(x, length[t])
                            else:
                                j, cur[t], off[t], x = next_index(SAMPLING, stride, start[t],
                                                                  start[t] + length[t], cur[t],
                                                                  off[t], x)
                            if not chunked and (j < blk_lo[t] or j >= blk_hi[t]):
                                n = 1 if per_record else min(block_records, start[t] + length[t] - j)
                                nbytes = n * RECORD_BYTES
                                addr = heap_off + j * RECORD_BYTES
                                if nbytes < DMA_MIN or nbytes > DMA_MAX or nbytes % 8 or misaligned:
                                    fault = FAULT_DMA * 256 + 1 + t
                                    break
                                if not in_place:
                                    mram_words_to_wram(page_row, pool64, addr, row64,
                                                       off_buf + t * block_bytes, nbytes)
                                n_dma += 1
                                n_dma_bytes += nbytes
                                blk_lo[t] = j
                                blk_hi[t] = j + n
                            # The record's four words (unsigned offsets: indexing with them needs
                            # no negative-index wraparound): in its MRAM page, or in the
                            # tasklet's buffer.
                            if in_place:
                                w = np.uint64(rec_base + (j << 2))
                                src_i32, src_r = pool_i32, pool_r
                            else:
                                w = np.uint64(t * block_words + ((j - blk_lo[t]) << 2))
                                src_i32, src_r = buf_i32, buf_r
                            s, a, r, s2, b, term = fields_at(src_i32, src_r, w)
                            if check_each and outside_table(s, a, s2, b, term, ns_u, na_u, CHECK_B):
                                fault = FAULT_RECORD * 256 + 1 + t
                                stats[C_STEPS] = j                  # the offending record
                                break
                            if UNLOCKED:
                                e = np.int64(s) * n_actions + np.int64(a)
                                if stamp[e] == gstep:
                                    n_conflicts += 1
                                stamp[e] = gstep
                            dr = 0
                            if OWNED and IS_INT:
                                sc, n_sat = update_i32_owned(q, vv, fresh_lo, fresh_hi, s, a,
                                                             r, s2, term, alpha, gamma,
                                                             frac, IS_Q, EG, wt, own_lo, cmean,
                                                             cmax, n_sat)
                            elif OWNED:
                                sc = update_f32_owned(q, vv, fresh_lo, fresh_hi, s, a, r, s2,
                                                      term, alpha, gamma, IS_Q, EG, wt, own_lo,
                                                      cmean, cmax)
                            elif IS_INT:
                                x, sc, dr, n_sat = update_i32(q, s, a, r, s2, b, term,
                                                              IS_Q, DRAW, eps, alpha, gamma, frac,
                                                              x, n_sat)
                            else:
                                x, sc, dr = update_f32(q, s, a, r, s2, b, term, IS_Q, DRAW,
                                                       eps, alpha, gamma, x)
                            if USES_RNG:
                                rng[t] = x
                            if VISITS:
                                visits[s, a] += 1
                            if TERMINALS_PER_UPDATE:
                                n_terminal += term
                            if DRAW or OWNED:           # otherwise derived after the loop
                                n_scanned += sc
                                n_rng += dr
                                n_below += dr == 2
                        if fault:
                            break
                    if fault:
                        break
            if fault:
                stats[C_SAT] = n_sat
                stats[C_FAULT] = fault
                continue
            n_updates = params[P_EPOCHS] * n_records
            if not TERMINALS_PER_UPDATE:
                n_terminal = params[P_EPOCHS] * terminal_records
            if not ROWS:
                if IS_Q and not OWNED:                  # the max scans every action
                    n_scanned = n_actions * (n_updates - n_terminal)
                if SAMPLING == RAN:
                    n_rng += n_updates
                    n_below += n_updates
                    for t in range(tasklets):
                        if length[t] >= WIDE_LANE:
                            n_wide += params[P_EPOCHS] * length[t]
            if OWNED and own_hi > own_lo:
                # The owner's output, one gather for the host: its first and last rows (the
                # ones another DPU may share, for the host's merge), then V of its states.
                # Its values are the bootstrap's: max for Q-learning, SARSA's policy value.
                for st in range(own_lo, own_hi):
                    if IS_Q:
                        _, m = row_max(q, st)
                    elif IS_INT:
                        m, _, n_sat = policy_value_i32(q, st, EG, wt, st - own_lo, cmean, cmax,
                                                       frac, n_sat)
                    else:
                        m, _ = policy_value_f32(q, st, EG, wt, st - own_lo, cmean, cmax)
                    vout[st - own_lo] = m
                n_scanned += (own_hi - own_lo) * n_actions
                for kk in range(n_actions):
                    edges[kk] = q[own_lo, kk]
                    edges[n_actions + kk] = q[own_hi - 1, kk]
            stats[C_SAT] = n_sat
            stats[C_UPDATES] = n_updates
            stats[C_TERMINAL] = n_terminal
            stats[C_SCANNED] = n_scanned
            stats[C_RNG] = n_rng
            stats[C_BELOW] = n_below
            stats[C_DMA_R] = n_dma
            stats[C_DMA_RB] = n_dma_bytes
            stats[C_STEPS] = n_updates
            stats[C_SNAP] = n_snap
            stats[C_SNAP_READS] = n_sreads
            stats[C_LANE_EPOCHS] = (params[P_EPOCHS] * tasklets
                                    if ROWS and params[P_EPOCH_CONTINUES] == 0 else 0)
            stats[C_CONFLICTS] = n_conflicts
            stats[C_WIDE] = n_wide

    return launch


_KERNELS: dict = {}


def dpu_kernel(variant: Variant, count_visits: bool, n_actions: int, fast: bool = False):
    """The compiled launch kernel of ``variant`` for ``n_actions`` actions, the fast or the
    general one (see :func:`_build_kernel`; each built once per process, compiled on first
    use)."""
    key = (variant, bool(count_visits), int(n_actions), bool(fast))
    if key not in _KERNELS:
        _KERNELS[key] = _build_kernel(variant, count_visits, n_actions, fast)
    return _KERNELS[key]


def wram_layout(n_states: int, n_actions: int, tasklets: int, variant: Variant,
                count_visits: bool) -> list:
    """The kernel's WRAM globals in order, [(name, bytes)] (the C kernel declares the same)."""
    nq = n_states * n_actions
    policy_weights = variant.owned and variant.algo == "sarsa"
    layout = [("params", 8 * PARAMS_WORDS), ("rng_state", 4 * tasklets),
              ("stats", 8 * N_COUNTERS), ("q_table", 4 * nq)]
    if policy_weights:
        layout.append(("policy_weights", 4 * nq))
    elif count_visits:
        layout.append(("visits", 4 * nq))
    if variant.owned:      # state-owned learning's exchange buffers
        layout += [("v_table", 4 * n_states), ("v_out", 4 * (2 * n_actions + n_states))]
    if variant.rows:       # the lanes and their states (from the host), the epoch's snapshot
        # (whole 8-byte words: a host transfer moves multiples of 4 bytes)
        layout += [("lane_bounds", 8 * (tasklets + 1)), ("state_owner", _align8(n_states)),
                   ("lane_states", _align8(2 * n_states)),
                   ("snapshot", 4 * (nq if variant.snapshot_rows else n_states))]
    return layout


def wram_needed(n_states: int, n_actions: int, tasklets: int, variant: Variant,
                count_visits: bool, block_bytes: int, stack_bytes: int) -> int:
    """WRAM bytes the kernel needs: its globals, then every tasklet's DMA buffer and stack."""
    globals_ = sum(_align8(b) for _, b in wram_layout(n_states, n_actions, tasklets, variant,
                                                        count_visits))
    return globals_ + tasklets * (block_bytes + stack_bytes)


def fitting_block(n_states, n_actions, tasklets, variant, count_visits, hardware) -> int:
    """The DMA block a kernel takes when none is asked for: 2,048 B (the DMA's most), or the
    largest multiple of 16 below it whose buffers fit WRAM beside the globals (2,048 when
    none fits: the program then refuses, saying what would)."""
    stack = hardware.stack_bytes_per_tasklet if hardware is not None else 256
    wram = hardware.wram_bytes if hardware is not None else 65536
    for block in range(DMA_MAX, RECORD_BYTES - 1, -RECORD_BYTES):
        if wram_needed(n_states, n_actions, tasklets, variant, count_visits, block,
                       stack) <= wram:
            return block
    return DMA_MAX


def wram_advice(n_states, n_actions, tasklets, variant, count_visits, block_bytes, stack_bytes,
                wram_bytes) -> str:
    """What would fit when ``tasklets`` tasklets with ``block_bytes`` blocks do not: the most
    tasklets at this block size, the largest block at this tasklet count."""
    need = lambda t, b: wram_needed(n_states, n_actions, t, variant, count_visits, b,  # noqa: E731
                                    stack_bytes)
    fits_t = [t for t in range(tasklets - 1, 0, -1) if need(t, block_bytes) <= wram_bytes]
    fits_b = [b for b in range(block_bytes - RECORD_BYTES, RECORD_BYTES - 1, -RECORD_BYTES)
              if need(tasklets, b) <= wram_bytes]
    options = []
    if fits_t:
        options.append(f"--tasklets {fits_t[0]} (the most that fit with {block_bytes} B blocks)")
    if fits_b:
        options.append(f"--block-bytes {fits_b[0]} (the largest block that fits "
                       f"{tasklets} tasklets)")
    if variant.rows and variant.snapshot_rows:
        options.append("--tasklet-mode ring (no snapshot)")
    return "; use " + " or ".join(options) if options else "; the table alone does not fit"


class RlProgram(DpuProgram):
    """The SwiftRL kernel for ``n_states`` x ``n_actions`` tables, ``tasklets`` tasklets and
    ``block_bytes`` DMA blocks (8..2,048, a multiple of 16), in tasklet mode ``tasklet_mode``
    (docs/design.md)."""

    def __init__(self, n_states: int, n_actions: int, tasklets: int, algo: str, dtype: str,
                 sampling: str, block_bytes: int = 2048, hardware=None, count_visits: bool = True,
                 bootstrap: str = "table", tasklet_mode: str = "ring"):
        if not 1 <= tasklets <= 24:
            raise ValueError(f"tasklets must lie in [1, 24]; got {tasklets}")
        if hardware is not None and tasklets > hardware.max_tasklets:
            raise ValueError(f"{hardware.name} runs at most {hardware.max_tasklets} tasklets; "
                             f"got {tasklets}")
        if block_bytes % RECORD_BYTES or not DMA_MIN <= block_bytes <= DMA_MAX:
            raise ValueError(f"DMA block of {block_bytes} B: must be a multiple of "
                             f"{RECORD_BYTES} between 16 and {DMA_MAX}")
        self.n_states, self.n_actions, self.tasklets = n_states, n_actions, tasklets
        self.algo, self.dtype, self.sampling = algo, dtype, sampling
        self.block_bytes = block_bytes
        self.count_visits = count_visits
        self.variant = Variant(algo, dtype, sampling, bootstrap=bootstrap,
                               tasklet_mode=tasklet_mode)
        self.bootstrap = bootstrap
        self.tasklet_mode = tasklet_mode
        self.name = f"swiftrl-{algo}-{dtype}-{sampling}-t{tasklets}" + (
            "-owned" if self.variant.owned else "") + (
            f"-{tasklet_mode}" if tasklet_mode != "ring" else "")
        # State-owned SARSA holds its target policy's weights where visits would be (it
        # counts no visits): the host writes the rows of states own_lo, own_lo + 1, ...
        self.policy_weights = self.variant.owned and algo == "sarsa"
        if self.policy_weights and count_visits:
            raise ValueError("state-owned SARSA counts no visits (count_visits=False)")
        self.symbols, addr = {}, 0
        for name, size in wram_layout(n_states, n_actions, tasklets, self.variant, count_visits):
            self.symbols[name] = Symbol(name, addr, size)
            addr += _align8(size)
        self.off_buf = addr
        self.globals_bytes = addr          # initialised at load; DMA buffers and stacks are not
        # Where the globals the kernel itself writes end (the host writes the others): the
        # WRAM a later allocation of this memory clears.
        written = ["rng_state", "stats", "q_table"] + (["visits"] if count_visits else []) + (
            ["v_out"] if self.variant.owned else []) + (
            ["snapshot"] if self.variant.rows else [])
        self.kernel_globals_end = max(self.symbols[n].offset + self.symbols[n].size
                                      for n in written)
        stack = hardware.stack_bytes_per_tasklet if hardware is not None else 256
        self.wram_used = addr + tasklets * (block_bytes + stack)
        wram_bytes = hardware.wram_bytes if hardware is not None else 65536
        if self.wram_used > wram_bytes:
            what = "a Q-table and visit counts" if count_visits else "a Q-table"
            if self.variant.rows:
                what += " and the rows snapshot"
            raise ValueError(
                f"WRAM overflow: {what} of {n_states} x {n_actions} plus {tasklets} tasklets' "
                f"{block_bytes} B DMA buffers and {stack} B stacks need {self.wram_used} B; WRAM "
                f"holds {wram_bytes} B"
                + wram_advice(n_states, n_actions, tasklets, self.variant, count_visits,
                              block_bytes, stack, wram_bytes))
        mram = hardware.mram_bytes if hardware is not None else 64 << 20
        self.symbols[DPU_MRAM_HEAP_POINTER_NAME] = Symbol(DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, mram)
        self.mram_used = 0

    def costs(self, hw, next_action: str = "logged", wide_alpha: bool = False,
              wide_gamma: bool = False):
        """Instruction costs; SARSA's depend on its next action (``next_action``, a launch
        parameter: drawn b' or, owned, the target policy), INT32's on whether alpha and gamma
        take the 64-bit product (:func:`pimrl.rlkernel.costs.wide_products`)."""
        pv = (("uniform" if next_action == "epsilon-greedy" else "weighted")
              if self.policy_weights else None)
        return kcost.update_instruction_costs(hw, self.dtype, self.algo, self.sampling,
                                             self.n_actions, self.tasklets, self.count_visits,
                                             policy_value=pv, tasklet_mode=self.tasklet_mode,
                                             wide_alpha=wide_alpha, wide_gamma=wide_gamma,
                                             bootstrap=self.bootstrap, next_action=next_action)

    def cycles(self, hw, counters: np.ndarray, params: np.ndarray,
               tasklet_counters: np.ndarray | None = None) -> np.ndarray:
        """Modelled cycles of each DPU from its counters and parameters (each DPU priced with
        its own launch parameters: SARSA's target policy, INT32's products)."""
        cycles = np.zeros(len(counters))
        eg = (params[:, P_SARSA_DRAW] != 0) if self.algo == "sarsa" else np.zeros(len(params), bool)
        wide_a, wide_g = (kcost.wide_products(params) if self.dtype == "int32"
                          else (np.zeros(len(params), bool),) * 2)
        for key in set(zip(eg.tolist(), wide_a.tolist(), wide_g.tolist())):
            mask = (eg == key[0]) & (wide_a == key[1]) & (wide_g == key[2])
            costs = self.costs(hw, "epsilon-greedy" if key[0] else "logged", key[1], key[2])
            cycles[mask] = kcost.kernel_cycles(
                hw, counters[mask], costs, self.tasklets, self.tasklet_mode,
                None if tasklet_counters is None else tasklet_counters[mask])
        return cycles

    def check_params(self, params: np.ndarray, lane_bounds: np.ndarray | None = None,
                     lanes=None) -> dict:
        """{row: reason} for the DPUs whose ``params`` (and, in tasklet mode rows,
        ``lane_bounds`` and ``lanes``, their ``state_owner`` and ``lane_states``) would make
        the kernel misbehave (the kernel trusts them, as a DPU program trusts its host); empty
        when all are fine."""
        heap_records = self.symbols[DPU_MRAM_HEAP_POINTER_NAME].size // RECORD_BYTES
        codes = self.variant.codes()
        checks = (
            (params[:, P_ALGO] != codes["algo"], f"params.algo is not {self.algo}"),
            (params[:, P_DTYPE] != codes["dtype"], f"params.dtype is not {self.dtype}"),
            (params[:, P_SAMPLING] != codes["sampling"], f"params.sampling is not {self.sampling}"),
            (params[:, P_TASKLET_MODE] != codes["tasklet_mode"],
             f"params.tasklet_mode is not {self.tasklet_mode}"),
            (params[:, P_STRIDE] < 1, "params.stride < 1"),
            (params[:, P_EPOCHS] < 0, "params.epochs < 0"),
            ((params[:, P_EPOCH_CONTINUES] != 0) & (params[:, P_EPOCH_CONTINUES] != 1),
             "params.epoch_continues is not 0 or 1"),
            ((params[:, P_EPS] < 0) | (params[:, P_EPS] > 2**32),
             "params.eps_threshold outside [0, 2^32]"),
            ((params[:, P_FRAC] < 1) | (params[:, P_FRAC] > 30), "params.frac_bits outside [1, 30]"),
            ((params[:, P_N_RECORDS] < 0) | (params[:, P_N_RECORDS] > heap_records),
             f"params.n_records outside [0, {heap_records}] (the MRAM heap)"),
        )
        if self.variant.owned:
            checks += (((params[:, P_OWN_LO] < 0) | (params[:, P_OWN_HI] < params[:, P_OWN_LO])
                        | (params[:, P_OWN_HI] > self.n_states),
                        f"params.own_lo, own_hi not a range of [0, {self.n_states}]"),)
        if self.variant.rows and lane_bounds is not None:
            t, n_s = self.tasklets, self.n_states
            rec, lst = lane_bounds[:, :t + 1].astype(np.int64), lane_bounds[:, t + 1:].astype(np.int64)
            owner, states = lanes[0][:, :n_s], lanes[1][:, :n_s]
            used = np.arange(n_s)[None, :] < lst[:, -1:]
            checks += (((rec[:, 0] != 0) | (np.diff(rec, axis=1) < 0).any(axis=1)
                        | (rec[:, -1] != params[:, P_N_RECORDS]),
                        "lane_bounds' record ranges do not split [0, params.n_records)"),
                       ((lst[:, 0] != 0) | (np.diff(lst, axis=1) < 0).any(axis=1)
                        | (lst[:, -1] > n_s) | ((states >= n_s) & used).any(axis=1),
                        f"lane_bounds' state lists are not lists of states of [0, {n_s})"),
                       (((owner >= t) & (owner != NO_OWNER) & (owner != SPLIT)).any(axis=1),
                        f"state_owner names a tasklet outside [0, {t})"))
        out = {}
        for bad, why in checks:
            for i in np.flatnonzero(bad):                   # only the DPUs at fault
                out.setdefault(int(i), why)
        return out

    def launch(self, alloc, slots) -> LaunchResult:
        slots = np.asarray(slots, dtype=np.int64)
        sym = self.symbols
        po = sym["params"].offset
        params = alloc.wram[slots, po:po + 8 * PARAMS_WORDS].copy().view(np.int64)
        lane_bounds = lanes = None
        if self.variant.rows:
            def read(name, dtype):
                lo = sym[name].offset
                return alloc.wram[slots, lo:lo + sym[name].size].copy().view(dtype)
            lane_bounds = read("lane_bounds", np.int32)
            lanes = (read("state_owner", np.uint8), read("lane_states", np.uint16))
        problems = self.check_params(params, lane_bounds, lanes)
        ok = np.ones(len(slots), dtype=bool)
        ok[list(problems)] = False
        faults = [(int(slots[i]), 0, f"bad parameters: {why}") for i, why in problems.items()]
        run = slots[ok]
        # SARSA's next action is a launch parameter (params.sarsa_draw), as in the C kernel:
        # each DPU runs the compiled loop of the choice its parameters make.
        draws = params[ok, P_SARSA_DRAW] != 0
        copied = np.zeros(1, dtype=np.uint8)
        owned = self.variant.owned
        rows = self.variant.rows
        # each tasklet's counters (rows: the tasklets' shares differ), by position in slots
        tcount = np.zeros((len(slots), self.tasklets if rows else 1, N_COUNTERS), np.int64)
        position = np.full(int(slots.max()) + 1 if len(slots) else 0, -1, np.int64)
        position[slots] = np.arange(len(slots))
        for next_action, group in (("logged", run[~draws]), ("epsilon-greedy", run[draws])):
            variant = Variant(self.algo, self.dtype, self.sampling, next_action, self.bootstrap,
                              self.tasklet_mode)
            # The fast kernel first; the DPUs it skips (records not in place, or not all
            # valid) then run the general one.
            for fast in (True, False):
                if not len(group):
                    break
                kernel = dpu_kernel(variant, self.count_visits, self.n_actions, fast)
                skipped = np.zeros(len(group), dtype=np.uint8)
                gcount = np.zeros((len(group),) + tcount.shape[1:], np.int64)
                run_ranges(lambda lo, hi: kernel(
                    group[lo:hi], alloc.mram.page_table, alloc.mram.pool, alloc.wram,
                    self.n_states, self.n_actions, self.tasklets, self.block_bytes, 0, po,
                    sym["rng_state"].offset, sym["stats"].offset, sym["q_table"].offset,
                    sym["visits"].offset if "visits" in sym else 0, self.off_buf,
                    sym["v_table"].offset if owned else 0, sym["v_out"].offset if owned else 0,
                    sym["policy_weights"].offset if self.policy_weights else 0,
                    sym["lane_bounds"].offset if rows else 0,
                    sym["state_owner"].offset if rows else 0,
                    sym["lane_states"].offset if rows else 0,
                    sym["snapshot"].offset if rows else 0, copied, skipped[lo:hi],
                    gcount[lo:hi]), len(group))
                done = skipped == 0
                tcount[position[group[done]]] = gcount[done]
                group = group[~done]
        so = sym["stats"].offset
        counters = alloc.wram[slots, so:so + 8 * N_COUNTERS].copy().view(np.int64)
        counters[~ok] = 0
        tcount[~ok] = 0
        faulted = ok & (counters[:, C_FAULT] != 0)         # usually none: no loop per DPU
        for s, c in zip(slots[faulted], counters[faulted]):
            code = int(c[C_FAULT])
            if code:
                reason, tasklet = divmod(code - 1, 256)
                why = ("mram_read outside its rules (size a multiple of 8 in [8, 2048], "
                       "addresses 8-byte aligned)" if reason == FAULT_DMA else
                       f"record {int(c[C_STEPS])} of this DPU holds a state or action outside "
                       f"the {self.n_states} x {self.n_actions} table" if reason == FAULT_RECORD
                       else f"record {int(c[C_STEPS])} of this DPU holds a state its tasklet "
                       f"does not own (state_owner)")
                faults.append((int(s), tasklet, why))
        cycles = self.cycles(alloc.hw, counters, params, tcount if rows else None)
        # The kernel writes its globals and, when it copied records, its DMA buffers.
        written = (self.off_buf + self.tasklets * self.block_bytes if copied[0]
                   else self.kernel_globals_end)
        return LaunchResult(cycles=cycles, faults=faults, counters=counters, wram_written=written,
                            tasklet_counters=tcount if rows else None)
