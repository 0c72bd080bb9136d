"""The online DPU program, built into the simulator: each DPU steps its own copy of an
environment table and learns from its own episodes (docs/design.md, "Online learning").

Layout (:class:`OnlineLayout`, shared with the C kernel ``kernels/online.c``, whose build
flags it chooses). WRAM symbols, in order, each 8-byte aligned: ``params``
(``ONLINE_PARAMS_WORDS`` int64), ``rng_state`` (uint32 per tasklet), ``lanes`` (4 int64 per
tasklet: state, episode steps, pending action, lane steps), ``stats`` (int64
``ONLINE_COUNTERS``), ``start_table`` (8-byte entries), then, while they fit beside the
tasklets' stacks and outcome-row buffers, ``q_table`` (S x A float32 or Q-format int32),
``visits`` (S x A uint32, only for the visit-weighted aggregator) and ``env_table`` (S x A x K
16-byte outcome records). What does not fit lives in MRAM at the start of the heap (Q-table,
then visits, then the environment table, each 8-byte aligned): the kernel then fetches an
outcome row (K records, one ``mram_read``) per step, and a Q row per greedy choice or
bootstrap, and reads and writes the 8 aligned bytes holding an entry per update; the cost
model charges those DMA transfers.

The launch gathers each DPU's tables from its own memories (WRAM rows, or MRAM pages),
runs the compiled online loop of :mod:`pimrl.online.kernels` on all DPUs at once (threads
over DPUs; a DPU's memories are its own, so results never depend on the thread count) and
writes the Q-table, visits, lanes, streams and counters back where they live.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimrl.learners.variants import (
    ONLINE_PARAMS_WORDS, OP_ALGO, OP_DTYPE, OP_EPS_DECAY, OP_EPS_END, OP_EPS_START, OP_FRAC,
    OP_MAX_STEPS, OP_N_START, OP_STEPS, OnlineVariant,
)
from pimrl.online import kernels
from pimrl.online.envtable import OUTCOME_BYTES, OUTCOME_DTYPE, START_BYTES, START_DTYPE
from pimrl.pim import cost
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, DpuProgram, LaunchResult, Symbol

N_COUNTERS = len(kernels.ONLINE_COUNTERS)


def _align8(n: int) -> int:
    return (n + 7) & ~7


@dataclass(frozen=True)
class OnlineLayout:
    """Where an online kernel keeps its tables: WRAM offsets of every WRAM symbol, and the
    MRAM heap offsets (``None`` when in WRAM) of the Q-table, visits and environment table."""

    n_states: int
    n_actions: int
    n_outcomes: int
    n_start: int
    tasklets: int
    count_visits: bool
    wram: dict                  # name -> (offset, size)
    q_mram: int | None
    visits_mram: int | None
    env_mram: int | None
    wram_used: int
    mram_used: int

    @property
    def q_in_wram(self) -> bool:
        return self.q_mram is None

    @property
    def env_in_wram(self) -> bool:
        return self.env_mram is None

    @property
    def row_bytes(self) -> int:
        """Bytes of one Q row in MRAM (rows padded to 8 bytes)."""
        return _align8(4 * self.n_actions)


def online_layout(n_states, n_actions, n_outcomes, n_start, tasklets, hardware,
                  count_visits=False, force_mram=False) -> OnlineLayout:
    """Place the tables: the fixed symbols first, then the Q-table (and visits), then the
    environment table, each in WRAM while it fits, else in MRAM. ``force_mram`` puts the
    Q-table, visits and environment table in MRAM whatever their size (for tests)."""
    if not 1 <= tasklets <= min(24, hardware.max_tasklets):
        raise ValueError(f"tasklets must lie in [1, {min(24, hardware.max_tasklets)}]; got {tasklets}")
    if n_actions > 255 or n_outcomes * OUTCOME_BYTES > 2048:
        raise ValueError(f"an online kernel takes at most 255 actions and 128 outcomes; got "
                         f"{n_actions} actions, {n_outcomes} outcomes")
    nq = n_states * n_actions
    # Each tasklet: its stack and a buffer for one outcome row (or one Q row) from MRAM.
    buf = max(_align8(n_outcomes * OUTCOME_BYTES), _align8(4 * n_actions), 8)
    reserve = tasklets * (hardware.stack_bytes_per_tasklet + buf)
    fixed = [("params", 8 * ONLINE_PARAMS_WORDS), ("rng_state", 4 * tasklets),
             ("lanes", 8 * kernels.LANE_WORDS * tasklets), ("stats", 8 * N_COUNTERS),
             ("start_table", START_BYTES * n_start)]
    wram, addr = {}, 0
    for name, size in fixed:
        wram[name] = (addr, size)
        addr += _align8(size)
    if addr + reserve > hardware.wram_bytes:
        raise ValueError(f"WRAM overflow: {tasklets} tasklets and a start table of {n_start} "
                         f"entries need {addr + reserve} B; WRAM holds {hardware.wram_bytes} B")
    mram = 0
    q_bytes = 4 * nq
    v_bytes = 4 * nq if count_visits else 0
    q_mram = v_mram = env_mram = None
    if not force_mram and addr + _align8(q_bytes) + _align8(v_bytes) + reserve <= hardware.wram_bytes:
        wram["q_table"] = (addr, q_bytes)
        addr += _align8(q_bytes)
        if count_visits:
            wram["visits"] = (addr, v_bytes)
            addr += _align8(v_bytes)
    else:
        q_mram = mram
        mram += n_states * _align8(4 * n_actions)
        if count_visits:
            v_mram = mram
            mram += _align8(v_bytes)
    env_bytes = OUTCOME_BYTES * nq * n_outcomes
    if not force_mram and addr + env_bytes + reserve <= hardware.wram_bytes:
        wram["env_table"] = (addr, env_bytes)
        addr += _align8(env_bytes)
    else:
        env_mram = mram
        mram += _align8(env_bytes)
    if mram > hardware.mram_bytes:
        raise ValueError(f"MRAM overflow: the tables need {mram} B; a DPU's MRAM holds "
                         f"{hardware.mram_bytes} B")
    return OnlineLayout(n_states, n_actions, n_outcomes, n_start, tasklets, bool(count_visits),
                        wram, q_mram, v_mram, env_mram, addr + reserve, mram)


def online_instruction_costs(hw, variant: OnlineVariant, layout: OnlineLayout) -> dict:
    """Instructions charged per counted event of the online kernel (docs/cost-model.md's
    per-operation figures; the update arithmetic as the offline kernel's)."""
    ops = hw.op_instructions
    if variant.dtype == "fp32":
        bootstrap = ops["float_mul"] + ops["float_add"]
        update = ops["float_sub"] + ops["float_mul"] + ops["float_add"]
        scan = 3.0 + ops["float_cmp"]
    else:
        fx_mul = ops["int64_mul"] + 4.0
        sat_add = ops["int32_add"] + 4.0
        bootstrap = fx_mul + sat_add
        update = sat_add + fx_mul + sat_add
        scan = 3.0 + ops["int32_sub"]
    # Per step: lane state load/store (8), outcome row index (s*A + a)*K (4), outcome
    # decode (6), Q entry load/store (4), episode bookkeeping (8), the update.
    per_step = 30.0 + update + (ops["mutex"] if layout.tasklets > 1 else 0.0)
    if layout.count_visits:
        per_step += 3.0
    return {
        "steps": per_step,
        "non_terminal": bootstrap,
        "row_entries": scan * layout.n_actions,       # a greedy choice or a max: one row
        "entry_reads": 3.0,
        "scans": 3.0,                                   # threshold load, compare, branch
        "resets": 6.0,
        "rng_draws": 6.0,                               # xorshift32
        "below_draws": ops["int64_mul"],                # (x * n) >> 32
        "dma_reads": 4.0,
        "dma_writes": 4.0,
    }


def online_dma(counters: np.ndarray, layout: OnlineLayout) -> tuple:
    """(reads, read bytes, writes, write bytes) per DPU of the MRAM transfers the counted
    work implies under ``layout``."""
    c = np.asarray(counters, dtype=np.float64)
    steps = c[:, kernels.OC_STEPS]
    reads = np.zeros(len(c))
    rbytes = np.zeros(len(c))
    writes = np.zeros(len(c))
    wbytes = np.zeros(len(c))
    if not layout.env_in_wram:                     # one outcome row per step
        reads += steps
        rbytes += steps * _align8(layout.n_outcomes * OUTCOME_BYTES)
    if not layout.q_in_wram:                       # rows, entries, and the update's 8 bytes
        rows = c[:, kernels.OC_ROWS]
        ent = c[:, kernels.OC_ENTRIES]
        reads += rows + ent + steps
        rbytes += rows * layout.row_bytes + (ent + steps) * 8
        writes += steps
        wbytes += steps * 8
        if layout.count_visits:
            reads += steps
            rbytes += steps * 8
            writes += steps
            wbytes += steps * 8
    return reads, rbytes, writes, wbytes


def online_kernel_cycles(hw, counters: np.ndarray, costs: dict, layout: OnlineLayout) -> np.ndarray:
    """Modelled cycles per DPU of one online launch from its counters, for one tasklet at a
    time: the online kernel's steps take turns through a handshake token ring (the order of
    docs/design.md), so the pipeline and the DMA engine serve one tasklet at a time, and each
    step with more than one tasklet pays the token's pass (:data:`pimrl.pim.cost.TOKEN_PASS`),
    as the SwiftRL kernel's updates do (:func:`pimrl.rlkernel.costs.kernel_cycles`)."""
    c = np.asarray(counters, dtype=np.float64)
    reads, rbytes, writes, wbytes = online_dma(counters, layout)
    steps = c[:, kernels.OC_STEPS]
    instr = (steps * costs["steps"]
             + (steps - c[:, kernels.OC_TERMINAL]) * costs["non_terminal"]
             + c[:, kernels.OC_ROWS] * costs["row_entries"]
             + c[:, kernels.OC_ENTRIES] * costs["entry_reads"]
             + (c[:, kernels.OC_START_SCANS] + c[:, kernels.OC_OUTCOME_SCANS]) * costs["scans"]
             + c[:, kernels.OC_RESETS] * costs["resets"]
             + c[:, kernels.OC_RNG] * costs["rng_draws"]
             + c[:, kernels.OC_BELOW] * costs["below_draws"]
             + reads * costs["dma_reads"] + writes * costs["dma_writes"])
    if layout.tasklets > 1:
        instr = instr + steps * cost.TOKEN_PASS
    dma = reads * hw.dma_alpha_read + writes * hw.dma_alpha_write + (rbytes + wbytes) * hw.dma_beta
    return cost.dpu_cycles(hw, instr, dma, 1)


class OnlineProgram(DpuProgram):
    """The online kernel of ``variant`` for one environment shape (``n_states`` x
    ``n_actions`` x ``n_outcomes``, a start table of ``n_start`` entries) on ``tasklets``
    tasklets."""

    def __init__(self, variant: OnlineVariant, n_states, n_actions, n_outcomes, n_start,
                 tasklets, hardware, count_visits=False, force_mram=False):
        self.variant = variant
        self.layout = online_layout(n_states, n_actions, n_outcomes, n_start, tasklets, hardware,
                                    count_visits, force_mram)
        self.tasklets = tasklets
        self.name = f"{variant.name}-t{tasklets}"
        self.symbols = {name: Symbol(name, off, size) for name, (off, size) in self.layout.wram.items()}
        self.globals_bytes = max(off + _align8(size) for off, size in self.layout.wram.values())
        self.wram_used = self.layout.wram_used
        mram = hardware.mram_bytes
        self.symbols[DPU_MRAM_HEAP_POINTER_NAME] = Symbol(DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, mram)
        self.mram_used = 0

    def costs(self, hw) -> dict:
        return online_instruction_costs(hw, self.variant, self.layout)

    def check_params(self, params: np.ndarray) -> dict:
        """{row: reason} for the DPUs whose ``params`` would make the kernel misbehave."""
        codes = self.variant.codes()
        checks = (
            (params[:, OP_ALGO] != codes["algo"], f"params.algo is not {self.variant.algo}"),
            (params[:, OP_DTYPE] != codes["dtype"], f"params.dtype is not {self.variant.dtype}"),
            ((params[:, OP_EPS_START] < 0) | (params[:, OP_EPS_START] > 2**32)
             | (params[:, OP_EPS_END] < 0) | (params[:, OP_EPS_END] > params[:, OP_EPS_START]),
             "params.eps_start/eps_end outside 0 <= eps_end <= eps_start <= 2^32"),
            ((params[:, OP_EPS_DECAY] < 0) | (params[:, OP_EPS_DECAY] >= 2**31),
             "params.eps_decay_steps outside [0, 2^31)"),
            ((params[:, OP_FRAC] < 1) | (params[:, OP_FRAC] > 30), "params.frac_bits outside [1, 30]"),
            (params[:, OP_MAX_STEPS] < 1, "params.max_episode_steps < 1"),
            ((params[:, OP_N_START] < 1) | (params[:, OP_N_START] > self.layout.n_start),
             f"params.n_start outside [1, {self.layout.n_start}]"),
            (params[:, OP_STEPS] < 0, "params.steps < 0"),
        )
        out = {}
        for bad, why in checks:
            for i in np.flatnonzero(bad):
                out.setdefault(int(i), why)
        return out

    # -- the DPUs' memories as arrays ------------------------------------------------------
    def _region(self, alloc, slots, name, mram_off, nbytes):
        if mram_off is None:
            off = self.layout.wram[name][0]
            return alloc.wram[slots, off:off + nbytes].copy()
        return alloc.mram.read(slots, mram_off, nbytes)

    def _store(self, alloc, slots, name, mram_off, data):
        data = np.ascontiguousarray(data).view(np.uint8).reshape(len(slots), -1)
        if mram_off is None:
            off = self.layout.wram[name][0]
            alloc.wram[slots, off:off + data.shape[1]] = data
        else:
            alloc.mram.write(slots, mram_off, data)

    def launch(self, alloc, slots) -> LaunchResult:
        L = self.layout
        slots = np.asarray(slots, dtype=np.int64)
        S, A, K, T = L.n_states, L.n_actions, L.n_outcomes, L.tasklets
        po = L.wram["params"][0]
        params = alloc.wram[slots, po:po + 8 * ONLINE_PARAMS_WORDS].copy().view(np.int64)
        problems = self.check_params(params)
        ok_ = np.ones(len(slots), dtype=bool)
        ok_[list(problems)] = False
        faults = [(int(slots[i]), 0, f"bad parameters: {why}") for i, why in problems.items()]

        env = self._region(alloc, slots, "env_table", L.env_mram, OUTCOME_BYTES * S * A * K)
        env = env.view(OUTCOME_DTYPE).reshape(len(slots), S, A, K)
        start = alloc.wram[slots, L.wram["start_table"][0]:L.wram["start_table"][0]
                           + START_BYTES * L.n_start].copy().view(START_DTYPE)
        # The kernel trusts its tables as a DPU program does; a table that would index
        # outside the Q-table is a fault of that DPU (checked vectorised, no loop per DPU).
        n_start = np.clip(params[:, OP_N_START], 1, L.n_start)
        in_start = np.arange(L.n_start)[None, :] < n_start[:, None]
        bad_env = (((env["next_state"] < 0) | (env["next_state"] >= S)).reshape(len(slots), -1).any(axis=1)
                   | (((start["state"] < 0) | (start["state"] >= S)) & in_start).any(axis=1))
        for i in np.flatnonzero(bad_env & ok_):
            faults.append((int(slots[i]), 0, "its environment table names a state outside the "
                           f"{S}-state Q-table"))
        ok_ &= ~bad_env
        run = np.flatnonzero(ok_)
        q_dtype = np.int32 if self.variant.is_int else np.float32
        if L.q_in_wram:
            q = self._region(alloc, slots, "q_table", None, 4 * S * A).view(q_dtype).reshape(len(slots), S, A)
        else:
            rows = alloc.mram.read(slots, L.q_mram, S * L.row_bytes).reshape(len(slots), S, L.row_bytes)
            q = np.ascontiguousarray(rows[:, :, :4 * A]).view(q_dtype).reshape(len(slots), S, A)
        if L.count_visits:
            visits = self._region(alloc, slots, "visits", L.visits_mram, 4 * S * A).view(
                np.uint32).reshape(len(slots), S, A)
        else:
            visits = np.zeros((0, 1, 1), dtype=np.uint32)
        ro, lo_ = L.wram["rng_state"][0], L.wram["lanes"][0]
        rng = alloc.wram[slots, ro:ro + 4 * T].copy().view(np.uint32)
        lanes = alloc.wram[slots, lo_:lo_ + 8 * kernels.LANE_WORDS * T].copy().view(np.int64).reshape(
            len(slots), T, kernels.LANE_WORDS)
        counters = np.zeros((len(slots), N_COUNTERS), dtype=np.int64)
        if len(run):
            reward = env["reward"].view(np.int32) if self.variant.is_int else env["reward"]
            tables = {"threshold": env["threshold"], "next_state": env["next_state"],
                      "reward": reward, "terminated": env["terminated"],
                      "start_threshold": np.ascontiguousarray(start["threshold"]),
                      "start_state": np.ascontiguousarray(start["state"])}
            sub = lambda x: x if len(run) == len(slots) else x[run]     # noqa: E731
            sub_visits = visits if not L.count_visits else sub(visits)
            q_r, lanes_r, rng_r = sub(q), sub(lanes), sub(rng)
            tables_r = {k: sub(v) for k, v in tables.items()}
            counters[run] = kernels.run_items(self.variant, tables_r, np.arange(len(run)), sub(params),
                                         lanes_r, rng_r, q_r, sub_visits)
            if len(run) != len(slots):
                q[run], lanes[run], rng[run] = q_r, lanes_r, rng_r
                if L.count_visits:
                    visits[run] = sub_visits
        # Write back what the kernel changed, where it lives.
        if L.q_in_wram:
            self._store(alloc, slots, "q_table", None, q)
        else:
            rows = np.zeros((len(slots), S, L.row_bytes), dtype=np.uint8)
            rows[:, :, :4 * A] = q.view(np.uint8).reshape(len(slots), S, 4 * A)
            alloc.mram.write(slots, L.q_mram, rows.reshape(len(slots), -1))
        if L.count_visits:
            self._store(alloc, slots, "visits", L.visits_mram, visits)
        alloc.wram[slots, ro:ro + 4 * T] = rng.view(np.uint8).reshape(len(slots), -1)
        alloc.wram[slots, lo_:lo_ + 8 * kernels.LANE_WORDS * T] = lanes.view(np.uint8).reshape(len(slots), -1)
        so = L.wram["stats"][0]
        alloc.wram[slots, so:so + 8 * N_COUNTERS] = counters.view(np.uint8).reshape(len(slots), -1)
        cycles = online_kernel_cycles(alloc.hw, counters, self.costs(alloc.hw), L)
        return LaunchResult(cycles=cycles, faults=faults, counters=counters)
