"""The SwiftRL DPU program's launch kernel, built into the simulator with numba.

One kernel per variant (as ``-D`` flags choose the C kernel's): Q-learning or SARSA, FP32 or
INT32, SEQ, STR or RAN, the tasklet mode, with the variant's choices as compile-time
constants and the update primitives of :mod:`pimrl.learners.kernels`. Each DPU keeps its
Q-table in WRAM and streams its transitions from MRAM into per-tasklet WRAM buffers with DMA
transfers that obey ``mram_read``'s rules; under SEQ every lane needs its next block at the
same step, so the blocks are fetched together once per block. The simulator counts and checks
every DMA, but when the records' MRAM pages follow one another in the page pool (a host push
in one transfer) it reads them in place rather than copying them into the buffers, whose
contents no host-visible symbol exposes, and checks them all once before the first update
(:mod:`pimrl.rlkernel.mram`): such DPUs run a fast kernel whose hot loop
has neither test. The others (pages missing or out of order, or a record outside the table)
run the general kernel, which copies each DMA and checks each record as it reads it. The
memory layout is :mod:`pimrl.rlkernel.layout`'s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.kernels import (
    RAN, SEQ, STR, as_table, bootstrap, f32_scalar, fields_at, learning_rates_f32,
    learning_rates_i32, next_index, outside_table, owner_output, owns_row, policy_value_f32,
    policy_value_i32, step_f32, step_i32, take_snapshot, target_i32,
    update_f32, update_f32_owned, update_i32, update_i32_owned,
)
from pimrl.learners.variants import (
    P_EPOCH_CONTINUES, P_EPOCHS, P_EPS, P_FRAC, P_N_RECORDS, P_OWN_HI, P_OWN_LO, P_OWN_SHARED,
    P_POLICY_MAX32, P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX, P_STRIDE, PARAMS_WORDS,
    Variant,
)
from pimrl.partition import SPLIT
from pimrl.rng import below, xorshift32
from pimrl.rlkernel import costs as kcost
from pimrl.rlkernel.costs import C
from pimrl.rlkernel.layout import (
    DMA_MAX, DMA_MIN, FAULT_DMA, FAULT_LANE, FAULT_RECORD, N_COUNTERS, RECORD_BYTES,
)
from pimrl.pim.memory import mram_words_to_wram
from pimrl.rlkernel.mram import lane_split, records_in_place, records_valid, stepped_lanes

(C_UPDATES, C_TERMINAL, C_SCANNED, C_RNG, C_BELOW, C_DMA_R, C_DMA_RB, C_DMA_W, C_DMA_WB, C_SAT,
 C_FAULT, C_STEPS, C_SNAP, C_SNAP_READS, C_LANE_EPOCHS, C_CONFLICTS, C_WIDE) = (
    C[n] for n in kcost.COUNTERS)
#: RAN draws from a lane of this many records or more take the 64-bit product (below).
WIDE_LANE = 1 << 16


def build_kernel(variant: Variant, count_visits: bool, n_actions: int, fast: bool):
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
    # rows' fast kernel under SEQ with no draws runs the lanes in steps, each lane's counts
    # the same every epoch (counted once per launch)
    STEPPED = ROWS and FAST and SAMPLING == SEQ and not OWNED and not DRAW

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
            direct, rec_base = records_in_place(page_row, heap_off, n_records)
            # Records read in place are checked once, before any update: if all hold states
            # and actions of the table (rows: of their lane's states), the loop checks none
            # (it checks each record read, and faults on the first bad one in the update
            # order, otherwise).
            checked = False
            terminal_records = 0
            if direct:
                checked, terminal_records = records_valid(
                    pool_i32, pool_r, rec_base, rec_b, owner, tasklets if ROWS else 1,
                    n_records, ns_u, na_u, ROWS, CHECK_B)
            # steps only where no DMA can fault (the lane-at-a-time order picks the first)
            if FAST and (not (direct and checked) or (STEPPED and (
                    misaligned or block_records * RECORD_BYTES > DMA_MAX))):
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
                if STEPPED:
                    order, lane_counts = stepped_lanes(pool_i32, pool_r, rec_base, rec_b, owner,
                                                       tasklets, block_records,
                                                       n_actions if IS_Q else 0)
                for _ in range(params[P_EPOCHS]):
                    for t in range(tasklets if params[P_EPOCH_CONTINUES] == 0 else 0):
                        n_sat = take_snapshot(q, snap_v, snap_q, slist, list_b[t], list_b[t + 1],
                                              SNAP_ROWS, IS_Q, OWNED, IS_INT, EG, wt, own_lo,
                                              cmean, cmax, frac, n_sat)
                        tcount[k, t, C_SNAP] += list_b[t + 1] - list_b[t]
                        tcount[k, t, C_LANE_EPOCHS] += 1
                    if STEPPED:
                        # The lanes in steps, one update of each lane still running (longest
                        # first: a prefix of ``order``) a step; any order gives the same
                        # tables (docs/design.md, "Tasklet modes").
                        running = tasklets
                        for i in range(rec_b[order[0] + 1] - rec_b[order[0]]):
                            while rec_b[order[running - 1] + 1] - rec_b[order[running - 1]] <= i:
                                running -= 1
                            for kk in range(running):
                                t = order[kk]
                                s, a, r, s2, b, term = fields_at(
                                    pool_i32, pool_r, np.uint64(rec_base + ((rec_b[t] + i) << 2)))
                                if term:
                                    target = r
                                else:
                                    if owns_row(owner, s2, t):
                                        m = bootstrap(q, s2, b, IS_Q, False, eps, np.uint32(0))[0]
                                    elif SNAP_ROWS:
                                        m = bootstrap(snap_q, s2, b, IS_Q, False, eps,
                                                      np.uint32(0))[0]
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
                        for t in range(tasklets):
                            for c in range(N_COUNTERS):
                                tcount[k, t, c] += lane_counts[t, c]
                        continue
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
                tot = tcount[k].sum(axis=0)         # the DPU's: its tasklets' together
                (n_terminal, n_scanned, n_rng, n_below, n_dma, n_dma_bytes, n_snap, n_sreads,
                 n_wide) = (tot[C_TERMINAL], tot[C_SCANNED], tot[C_RNG], tot[C_BELOW], tot[C_DMA_R],
                            tot[C_DMA_RB], tot[C_SNAP], tot[C_SNAP_READS], tot[C_WIDE])
            else:
                # Lanes: the DPU's records split evenly over tasklets, first n % T one longer.
                base, extra = n_records // tasklets, n_records % tasklets
                start, length = lane_split(n_records, tasklets)
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
            if OWNED and own_hi > own_lo:       # the owner's output, one gather for the host
                n_sat = owner_output(q, vout, edges, own_lo, own_hi, IS_Q, IS_INT, EG, wt, cmean,
                                     cmax, frac, n_sat)
                n_scanned += (own_hi - own_lo) * n_actions
            lane_epochs = (params[P_EPOCHS] * tasklets
                           if ROWS and params[P_EPOCH_CONTINUES] == 0 else 0)
            for c, v in ((C_SAT, n_sat), (C_UPDATES, n_updates), (C_TERMINAL, n_terminal),
                         (C_SCANNED, n_scanned), (C_RNG, n_rng), (C_BELOW, n_below),
                         (C_DMA_R, n_dma), (C_DMA_RB, n_dma_bytes), (C_STEPS, n_updates),
                         (C_SNAP, n_snap), (C_SNAP_READS, n_sreads), (C_LANE_EPOCHS, lane_epochs),
                         (C_CONFLICTS, n_conflicts), (C_WIDE, n_wide)):
                stats[c] = v

    return launch
