"""The SwiftRL DPU program, built into the simulator as a numba kernel.

One program, its variant chosen when it is built (as ``-D`` flags choose the C kernel's):
Q-learning or SARSA, FP32 or INT32, SEQ, STR or RAN, ``tasklets`` tasklets. Each DPU keeps
its Q-table in WRAM and streams its transitions from MRAM into per-tasklet WRAM buffers with
DMA transfers that obey ``mram_read``'s rules. All DPUs run at once in a ``prange`` loop,
each on its own memories, so results never depend on the number of numba threads.

WRAM layout (host-visible symbols first, in this order, each 8-byte aligned):
``params`` (16 x int64: the learner's kernel scalars, then the DPU's record count),
``rng_state`` (uint32 per tasklet), ``stats`` (int64 counters, see ``cost.COUNTERS``),
``q_table`` (S x A float32 or Q-format int32), ``visits`` (S x A uint32, counted only when
the program is built with ``count_visits``, as the weighted aggregator needs), then the tasklets'
DMA buffers and stacks. Transitions live at the start of the MRAM heap
(``__sys_used_mram_end``), 16-byte records (docs/design.md).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from pimrl.learners.params import ALGO_CODE, DTYPE_CODE, P_EPOCHS, SAMPLING_CODE
from pimrl.learners.update import (
    RAN, STR, lane_next_index, lane_reset, unpack_scalars, update_f32, update_i32,
)
from pimrl.pim import cost
from pimrl.pim.cost import C
from pimrl.pim.memory import mram_copy_to_wram
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, DpuProgram, LaunchResult, Symbol

RECORD_BYTES = 16
PARAMS_WORDS = 16
P_N_RECORDS = 12
N_COUNTERS = len(cost.COUNTERS)
DMA_MIN, DMA_MAX = 8, 2048
# Fault reasons (the ``fault`` counter holds reason * 256 + tasklet + 1).
FAULT_DMA, FAULT_RECORD = 1, 2

(C_UPDATES, C_TERMINAL, C_SCANNED, C_RNG, C_BELOW, C_DMA_R, C_DMA_RB, C_DMA_W, C_DMA_WB, C_SAT,
 C_FAULT, C_STEPS) = (C[n] for n in cost.COUNTERS)


def _align8(n: int) -> int:
    return (n + 7) & ~7


@njit(cache=True)
def _run_dpu(page_row, pool, row, n_states, n_actions, tasklets, block_bytes, heap_off,
             off_params, off_rng, off_stats, off_q, off_visits, off_buf, count_visits):
    """One DPU's launch: every update of its lanes in the order of docs/design.md."""
    params = row[off_params:off_params + 8 * PARAMS_WORDS].view(np.int64)
    rng = row[off_rng:off_rng + 4 * tasklets].view(np.uint32)
    stats = row[off_stats:off_stats + 8 * N_COUNTERS].view(np.int64)
    nq = n_states * n_actions
    visits = row[off_visits:off_visits + 4 * nq].view(np.uint32).reshape((n_states, n_actions))
    buf_len = tasklets * block_bytes
    buf_i32 = row[off_buf:off_buf + buf_len].view(np.int32)
    buf_f32 = row[off_buf:off_buf + buf_len].view(np.float32)
    for c in range(N_COUNTERS):
        stats[c] = 0
    sat = stats[C_SAT:C_SAT + 1]

    (algo, is_int, sampling, stride, draw, eps, frac, alpha_f, gamma_f, alpha_x,
     gamma_x) = unpack_scalars(params)
    n_records = params[P_N_RECORDS]
    q_f = row[off_q:off_q + 4 * nq].view(np.float32).reshape((n_states, n_actions))
    q_x = row[off_q:off_q + 4 * nq].view(np.int32).reshape((n_states, n_actions))

    # Lanes: the DPU's records split evenly over tasklets, first n % T one longer.
    base, extra = n_records // tasklets, n_records % tasklets
    lanes = np.empty((tasklets, 2), dtype=np.int64)
    pos = 0
    for t in range(tasklets):
        size = base + (1 if t < extra else 0)
        lanes[t, 0] = pos
        lanes[t, 1] = pos + size
        pos += size
    longest = base + (1 if extra else 0)
    check_b = algo == 1 and not draw              # SARSA reads the logged next action
    cursor = np.zeros(tasklets, dtype=np.int64)
    offset = np.zeros(tasklets, dtype=np.int64)
    blk_lo = np.zeros(tasklets, dtype=np.int64)
    blk_hi = np.zeros(tasklets, dtype=np.int64)
    # RAN, and STR whose stride leaps past a buffer, fetch one record per DMA.
    per_record = sampling == RAN or (sampling == STR and stride * RECORD_BYTES >= block_bytes)
    block_records = block_bytes // RECORD_BYTES

    # Counters live in locals (registers) and reach WRAM once at the end.
    n_updates = n_terminal = n_scanned = n_rng = n_below = n_dma = n_dma_bytes = n_steps = 0
    for _ in range(params[P_EPOCHS]):
        for t in range(tasklets):
            lane_reset(lanes[t, 0], cursor, offset, t)
            blk_lo[t] = -1
            blk_hi[t] = -1
        for i in range(longest):
            for t in range(tasklets):
                start = lanes[t, 0]
                end = lanes[t, 1]
                if i >= end - start:
                    continue
                j = lane_next_index(sampling, stride, start, end, cursor, offset, rng, t)
                n_steps += 1
                if j < blk_lo[t] or j >= blk_hi[t]:
                    n = 1 if per_record else min(block_records, end - j)
                    nbytes = n * RECORD_BYTES
                    addr = heap_off + j * RECORD_BYTES
                    if nbytes < DMA_MIN or nbytes > DMA_MAX or nbytes % 8 or addr % 8:
                        stats[C_FAULT] = FAULT_DMA * 256 + 1 + t
                        return
                    mram_copy_to_wram(page_row, pool, addr, row, off_buf + t * block_bytes, nbytes)
                    n_dma += 1
                    n_dma_bytes += nbytes
                    blk_lo[t] = j
                    blk_hi[t] = j + n
                w = (t * block_bytes + (j - blk_lo[t]) * RECORD_BYTES) // 4
                s = buf_i32[w]
                s2 = buf_i32[w + 1]
                bo = off_buf + 4 * w + 12
                a = row[bo]
                b = row[bo + 1]
                term = row[bo + 2] != 0
                # One unsigned compare per field also catches negative states.
                if ((np.uint32(s) >= n_states) | (np.uint32(s2) >= n_states) | (a >= n_actions)
                        | (check_b & (b >= n_actions) & (not term))):
                    stats[C_FAULT] = FAULT_RECORD * 256 + 1 + t
                    stats[C_STEPS] = j                  # the offending record
                    return
                if is_int:
                    sc, dr = update_i32(q_x, s, a, buf_i32[w + 2], s2, b, term, algo, draw, eps,
                                        alpha_x, gamma_x, frac, rng, t, sat)
                else:
                    sc, dr = update_f32(q_f, s, a, buf_f32[w + 2], s2, b, term, algo, draw, eps,
                                        alpha_f, gamma_f, rng, t)
                if count_visits:
                    visits[s, a] += 1
                n_updates += 1
                n_scanned += sc
                n_rng += dr
                if dr == 2:
                    n_below += 1
                if term:
                    n_terminal += 1
    if sampling == RAN:
        n_rng += n_steps
        n_below += n_steps
    stats[C_UPDATES] = n_updates
    stats[C_TERMINAL] = n_terminal
    stats[C_SCANNED] = n_scanned
    stats[C_RNG] = n_rng
    stats[C_BELOW] = n_below
    stats[C_DMA_R] = n_dma
    stats[C_DMA_RB] = n_dma_bytes
    stats[C_STEPS] = n_steps


@njit(parallel=True, cache=True)
def rl_kernel(slots, page_table, pool, wram, n_states, n_actions, tasklets, block_bytes,
              heap_off, off_params, off_rng, off_stats, off_q, off_visits, off_buf, count_visits):
    """Launch on every DPU of ``slots`` at once: one numba worker per DPU at a time."""
    for k in prange(len(slots)):
        d = slots[k]
        _run_dpu(page_table[d], pool, wram[d], n_states, n_actions, tasklets, block_bytes,
                 heap_off, off_params, off_rng, off_stats, off_q, off_visits, off_buf, count_visits)


class RlProgram(DpuProgram):
    """The SwiftRL kernel for ``n_states`` x ``n_actions`` tables, ``tasklets`` tasklets and
    ``block_bytes`` DMA blocks (8..2,048, a multiple of 16)."""

    def __init__(self, n_states: int, n_actions: int, tasklets: int, algo: str, dtype: str,
                 sampling: str, block_bytes: int = 2048, hardware=None, count_visits: bool = True):
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
        self.name = f"swiftrl-{algo}-{dtype}-{sampling}-t{tasklets}"
        nq = n_states * n_actions
        layout = [("params", 8 * PARAMS_WORDS), ("rng_state", 4 * tasklets),
                  ("stats", 8 * N_COUNTERS), ("q_table", 4 * nq), ("visits", 4 * nq)]
        self.symbols, addr = {}, 0
        for name, size in layout:
            self.symbols[name] = Symbol(name, addr, size)
            addr += _align8(size)
        self.off_buf = addr
        self.globals_bytes = addr          # initialised at load; DMA buffers and stacks are not
        stack = hardware.stack_bytes_per_tasklet if hardware is not None else 256
        self.wram_used = addr + tasklets * (block_bytes + stack)
        wram_bytes = hardware.wram_bytes if hardware is not None else 65536
        if self.wram_used > wram_bytes:
            raise ValueError(
                f"WRAM overflow: a {n_states} x {n_actions} Q-table and visit counts "
                f"({2 * 4 * nq} B) plus {tasklets} tasklets' {block_bytes} B DMA buffers and "
                f"{stack} B stacks need {self.wram_used} B; WRAM holds {wram_bytes} B. Use fewer "
                f"tasklets or smaller DMA blocks (--block-bytes)")
        mram = hardware.mram_bytes if hardware is not None else 64 << 20
        self.symbols[DPU_MRAM_HEAP_POINTER_NAME] = Symbol(DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, mram)
        self.mram_used = 0

    def costs(self, hw):
        return cost.update_instruction_costs(hw, self.dtype, self.algo, self.sampling,
                                             self.n_actions, self.tasklets, self.count_visits)

    def check_params(self, params: np.ndarray) -> dict:
        """{row: reason} for the DPUs whose ``params`` would make the kernel misbehave (the
        kernel trusts them, as a DPU program trusts its host); empty when all are fine."""
        heap_records = self.symbols[DPU_MRAM_HEAP_POINTER_NAME].size // RECORD_BYTES
        checks = (
            (params[:, 0] != ALGO_CODE[self.algo], f"params.algo is not {self.algo}"),
            (params[:, 1] != DTYPE_CODE[self.dtype], f"params.dtype is not {self.dtype}"),
            (params[:, 2] != SAMPLING_CODE[self.sampling], f"params.sampling is not {self.sampling}"),
            (params[:, 3] < 1, "params.stride < 1"),
            (params[:, 4] < 0, "params.epochs < 0"),
            ((params[:, 6] < 0) | (params[:, 6] > 2**32), "params.eps_threshold outside [0, 2^32]"),
            ((params[:, 7] < 1) | (params[:, 7] > 30), "params.frac_bits outside [1, 30]"),
            ((params[:, P_N_RECORDS] < 0) | (params[:, P_N_RECORDS] > heap_records),
             f"params.n_records outside [0, {heap_records}] (the MRAM heap)"),
        )
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
        problems = self.check_params(params)
        ok = np.ones(len(slots), dtype=bool)
        ok[list(problems)] = False
        faults = [(int(slots[i]), 0, f"bad parameters: {why}") for i, why in problems.items()]
        run = slots[ok]
        rl_kernel(run, alloc.mram.page_table, alloc.mram.pool,
                  alloc.wram, self.n_states, self.n_actions, self.tasklets, self.block_bytes,
                  0, po, sym["rng_state"].offset, sym["stats"].offset,
                  sym["q_table"].offset, sym["visits"].offset, self.off_buf, self.count_visits)
        so = sym["stats"].offset
        counters = alloc.wram[slots, so:so + 8 * N_COUNTERS].copy().view(np.int64)
        counters[~ok] = 0
        faulted = ok & (counters[:, C_FAULT] != 0)         # usually none: no loop per DPU
        for s, c in zip(slots[faulted], counters[faulted]):
            code = int(c[C_FAULT])
            if code:
                reason, tasklet = divmod(code - 1, 256)
                why = ("mram_read outside its rules (size a multiple of 8 in [8, 2048], "
                       "addresses 8-byte aligned)" if reason == FAULT_DMA else
                       f"record {int(c[C_STEPS])} of this DPU holds a state or action outside "
                       f"the {self.n_states} x {self.n_actions} table")
                faults.append((int(s), tasklet, why))
        cycles = cost.kernel_cycles(alloc.hw, counters, self.costs(alloc.hw), self.tasklets)
        return LaunchResult(cycles=cycles, faults=faults, counters=counters)
