"""The SwiftRL DPU program, built into the simulator: :class:`RlProgram`, one variant
(Q-learning or SARSA, FP32 or INT32, SEQ, STR or RAN, a tasklet mode) for one table size and
tasklet count. It lays out WRAM (:mod:`pimrl.rlkernel.layout`), checks the host's launch
parameters as the kernel trusts them, runs the compiled launch kernel over the DPUs on the
numba threads (:mod:`pimrl.rlkernel.launch`; each DPU on its own memories, so results never
depend on the number of threads) and prices each DPU's counters in cycles
(:mod:`pimrl.rlkernel.costs`).
"""
from __future__ import annotations

import numpy as np

from pimrl.learners.variants import (
    P_ALGO, P_DTYPE, P_EPOCH_CONTINUES, P_EPOCHS, P_EPS, P_FRAC, P_N_RECORDS, P_OWN_HI,
    P_OWN_LO, P_SAMPLING, P_SARSA_DRAW, P_STRIDE, P_TASKLET_MODE, PARAMS_WORDS, Variant,
)
from pimrl.parallel import run_ranges
from pimrl.partition import NO_OWNER, SPLIT
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, DpuProgram, LaunchResult, Symbol
from pimrl.rlkernel import costs as kcost
from pimrl.rlkernel.launch import C_FAULT, C_STEPS, build_kernel
from pimrl.rlkernel.layout import (
    DMA_MAX, DMA_MIN, FAULT_DMA, FAULT_RECORD, N_COUNTERS, RECORD_BYTES, align8, wram_advice,
    wram_layout,
)


_KERNELS: dict = {}


def dpu_kernel(variant: Variant, count_visits: bool, n_actions: int, fast: bool = False):
    """The compiled launch kernel of ``variant`` for ``n_actions`` actions, the fast or the
    general one (:func:`pimrl.rlkernel.launch.build_kernel`; each built once per process,
    compiled or loaded from numba's cache on first use)."""
    key = (variant, bool(count_visits), int(n_actions), bool(fast))
    if key not in _KERNELS:
        _KERNELS[key] = build_kernel(variant, count_visits, n_actions, fast)
    return _KERNELS[key]


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
            addr += align8(size)
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
