"""State-owned learning (``--aggregate own:R``), Q-learning and SARSA: every state's row is
learned by the DPUs that own it, from all of its data, and the DPUs exchange only values.

The host sorts the transitions by state ``s`` (stably) and cuts the sorted array into equal
contiguous parts, one per DPU: each DPU owns the contiguous state range its part covers, and
the parts are balanced by transition count whatever the skew of the data. A state with more
transitions than one part straddles a cut and is *split* over several DPUs; a split state can
only be the first or the last state of a DPU's range.

Each of R rounds: every DPU runs its epochs of learning, bootstrapping from its own fresh
rows for the states it alone holds and from the broadcast value vector
``V(s') = max_a Q(s', a)`` (SARSA: the expected value of its target policy,
:func:`policy_weights`) for the others (split states included: a copy of a split row has
seen only part of the state's data, and actions it never saw would still hold stale values) (the kernel variant ``bootstrap=owned``); it then leaves its first and last
rows and the values of its states in ``v_out``, which the host gathers (one transfer); the
host merges the copies of each split state's row (weighted by how many of the state's
transitions each copy holds, per action), takes their values, and broadcasts the new ``V``
(``S`` words to each DPU). After the last round the host gathers the tables and keeps, for
every state, its owner's row (or the merged row of a split state). docs/state-owned.md says
what it converges to and what it costs.

:func:`reference_owned` is the same computation with the reference learner's compiled
loops instead of simulated DPUs: the bit-exact oracle of the scheme. The host-side pieces
(plan, merge, values, table assembly, local layout) are in :mod:`pimrl.swiftrl.ownership`.
"""
from __future__ import annotations

import time

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.learners.kernels import compiled
from pimrl.learners.reference import record_words
from pimrl.learners.rounds import RoundLoop
from pimrl.learners.variants import (
    P_EPOCHS, P_N_RECORDS, P_OWN_HI, P_OWN_LO, P_OWN_SHARED, PARAMS_WORDS,
)
from pimrl.partition import even_bounds, lane_bounds, state_lanes
from pimrl.pim import cost
from pimrl.rlkernel import costs as kcost
from pimrl.rng import lane_seeds
# The scheme's host-side pieces live in ownership.py; their names are this module's too.
from pimrl.swiftrl.ownership import (
    LocalIds, OwnerPlan, TargetPolicy, _values_of, assemble_table, build_values,
    choose_layout, kernel_values, local_ids, merge_edges, plan_owners, policy_weights,
)

__all__ = ["reference_owned", "fit_owned", "LocalIds", "OwnerPlan", "TargetPolicy",
           "assemble_table", "build_values", "choose_layout", "kernel_values", "local_ids",
           "merge_edges", "plan_owners", "policy_weights"]


# --------------------------------------------------------------------------- the oracle
def reference_owned(records, n_states: int, n_actions: int, params, n_dpus: int,
                    tasklets: int, rounds: int):
    """State-owned learning with the reference learner's compiled loops: (q float64,
    raw per-DPU tables after the last round, plan). The lanes and their random streams are
    the simulated DPUs' (lane ``d * tasklets + t``)."""
    from dataclasses import replace

    p = replace(params, bootstrap="owned")
    plan = plan_owners(records, n_states, n_actions, n_dpus)
    ordered = records[plan.order]
    lanes, owners = lane_bounds(plan.bounds, tasklets), None
    if p.tasklet_mode == "rows":
        order, lanes, *owners = state_lanes(ordered["state"], plan.bounds, tasklets, n_states,
                                            ordered["action"], n_actions)
        ordered = ordered[order]
    cols = record_words(ordered, p)
    rng = lane_seeds(p.seed, np.arange(n_dpus * tasklets)).reshape(n_dpus, tasklets)
    raw_dtype = np.int32 if p.dtype == "int32" else np.float32
    q = np.zeros((n_dpus, n_states, n_actions), raw_dtype)
    v = np.zeros(n_states, raw_dtype)
    sat = np.zeros(n_dpus, np.int64)
    loop = compiled(p.variant)
    scalars = np.zeros(PARAMS_WORDS, np.int64)
    scalars[: len(p.kernel_scalars())] = p.kernel_scalars()
    policy = policy_weights(records, n_states, n_actions, p)
    w_raw = words = None
    if policy is not None:
        w_raw = policy.raw_weights(p.dtype, p.frac_bits)
        words = policy.param_words(p.frac_bits)
        for i, word in words.items():
            scalars[i] = word
    for r, epochs in enumerate(np.diff(even_bounds(p.epochs, rounds))):
        sc = scalars.copy()
        sc[P_EPOCHS] = epochs
        loop.partitions(*cols, lanes, rng, q, sc, sat, v=v, own=plan.fresh, w=w_raw,
                        owners=owners)
        if r < rounds - 1:
            d = np.arange(n_dpus)
            edges = np.stack([q[d, plan.own[:, 0]], q[d, plan.own[:, 1] - 1]], axis=1)
            longest = plan.longest_range
            idx = np.minimum(plan.own[:, :1] + np.arange(longest)[None, :], n_states - 1)
            rows = q[d[:, None], idx]
            v_out = kernel_values(rows, p.dtype, p.frac_bits, words,
                                  None if w_raw is None else w_raw[idx])
            v = _values_of(plan, edges, v_out, v, p, n_states, policy)
    return assemble_table(plan, q, p.dtype, p.frac_bits), q, plan


# --------------------------------------------------------------------------- the rounds
class OwnRounds:
    """``own:R`` as rounds of :class:`~pimrl.learners.rounds.RoundLoop`: in each round the
    DPUs learn their states' rows for the round's epochs; between rounds the host gathers
    each DPU's values at the edges of its range and its halo (``v_out``), computes the
    values of every state (:func:`_values_of`) and sends each DPU the ones it reads; the last
    round gathers the tables. After the rounds: ``tables`` (the DPUs' last tables),
    ``counters`` and ``tasklet_counters`` (summed over the launches)."""

    name = "own"

    def __init__(self, dpus, plan, ids, policy, p, params, rounds, n_states, n_actions,
                 program_states, hw):
        self.dpus, self.plan, self.ids, self.policy, self.p = dpus, plan, ids, policy, p
        self.params, self.n_states, self.n_actions = params, n_states, n_actions
        self.program_states = program_states
        self.raw_dtype = np.int32 if p.dtype == "int32" else np.float32
        self.nq = program_states * n_actions
        self.out_words = 2 * n_actions + plan.longest_range
        self.global_states = None if ids is None else n_states    # assemble_table's local layout
        self.v = np.zeros(n_states, self.raw_dtype)   # V0 = 0: the WRAM globals' load-time zeros
        self.counters = np.zeros((len(params), len(kcost.COUNTERS)), dtype=np.int64)
        self.tasklet_counters = None
        self.round_epochs = np.diff(even_bounds(p.epochs, rounds))
        self.sent = None
        self.tables = None
        # What stopping after a round would add: gathering the tables (as the last round does).
        self.stop_s = cost.parallel_transfer_seconds(hw, 4 * self.nq, len(params),
                                                     dpus.n_ranks(), False)

    def _tables(self, rows):
        return rows.view(self.raw_dtype).reshape(len(self.params), self.program_states,
                                                 self.n_actions)

    def run_round(self, r: int, last: bool) -> float:
        from pimrl.dpuset import add_tasklet_counters

        dpus, params, n, host_s = self.dpus, self.params, len(self.params), 0.0
        params[:, P_EPOCHS] = self.round_epochs[r]
        if self.sent is None or not np.array_equal(self.sent, params):   # only when they change
            with dpus.phase("cpu_dpu" if r == 0 else "inter_dpu"):
                dpus.push_rows("params", params.view(np.uint8).reshape(n, -1))
            self.sent = params.copy()
        dpus.run()
        self.tasklet_counters = add_tasklet_counters(self.tasklet_counters, dpus)
        if last:
            with dpus.phase("dpu_cpu"):
                self.counters += dpus.counters(len(kcost.COUNTERS))
                self.tables = self._tables(dpus.pull_rows("q_table", 4 * self.nq))
            return host_s
        with dpus.phase("inter_dpu"):
            self.counters += dpus.counters(len(kcost.COUNTERS))
            out = dpus.pull_rows("v_out", 4 * self.out_words).view(self.raw_dtype).reshape(
                n, self.out_words)
        t0 = time.perf_counter()
        na = self.n_actions
        edges = out[:, : 2 * na].reshape(n, 2, na)
        self.v = _values_of(self.plan, edges, out[:, 2 * na:], self.v, self.p, self.n_states,
                            self.policy)
        host_s += time.perf_counter() - t0
        with dpus.phase("inter_dpu"):
            if self.ids is None:
                dpus.push_all("v_table", self.v)
            else:       # each DPU the values of its own states and its halo
                dpus.push_rows("v_table", self.ids.values(self.v).view(np.uint8).reshape(n, -1))
        return host_s

    def progress(self, r: int) -> dict:
        return {"epochs_done": int(self.round_epochs[: r + 1].sum())}

    def elapsed_s(self, last: bool) -> float:
        return self.dpus.elapsed_s() + (0.0 if last else self.stop_s)

    def table(self, r: int, last: bool):
        # Instrumentation, outside the modelled run: the tables as they stand.
        snap = self.tables if last else self._tables(self.dpus.peek_rows("q_table", 4 * self.nq))
        return assemble_table(self.plan, snap, self.p.dtype, self.p.frac_bits,
                              self.global_states)

    def snapshot(self, r: int, last: bool) -> dict:
        from pimrl import checkpoint as ckpt

        return ckpt.round_arrays(self.dpus, counters=self.counters, v=self.v, sent=self.sent,
                                 own_bounds=self.plan.bounds, own_ranges=self.plan.own,
                                 tasklet_counters=self.tasklet_counters,
                                 tables=self.tables if last else None)

    def resume(self, meta: dict, arrays: dict) -> int:
        from pimrl import checkpoint as ckpt

        if not (np.array_equal(arrays["own_bounds"], self.plan.bounds)
                and np.array_equal(arrays["own_ranges"], self.plan.own)):
            raise ckpt.CheckpointMismatch("--resume: the checkpoint's owner plan "
                                          "differs from this run's")
        start, self.counters, self.tasklet_counters = ckpt.resume_dpus(
            self.dpus, {"meta": meta, "arrays": arrays}, self.name, len(self.round_epochs))
        self.v = arrays["v"].copy()
        self.sent = arrays["sent"].copy()
        if start == len(self.round_epochs):      # a finished run
            self.tables = arrays["tables"].copy()
        return start


# --------------------------------------------------------------------------- the host
def fit_owned(trainer, factory, records, n_states, n_actions, rounds):
    """``PimTrainer.fit``'s work for ``own:R`` with the trainer's parameters (``trainer``) and
    DPU program ``factory``: what the trainer keeps, as a namespace (``q``, ``timings``,
    ``history``, ``plan``, ``layout``, ``program_states``, ``counters``,
    ``tasklet_counters``, ``program``, ``hw``, ``tables``)."""
    from types import SimpleNamespace
    from dataclasses import replace

    from pimrl.pim.hardware import get_hardware
    from pimrl.learners.variants import Variant
    from pimrl.rlkernel.layout import RECORD_BYTES, wram_needed
    from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME
    from pimrl.devices import dpu_package
    from pimrl.dpuset import DpuPackageSet, check_resumable
    from pimrl.swiftrl.records import dpu_record_matrix, rows_layout

    t_start = time.perf_counter()
    p = replace(trainer.params, bootstrap="owned")
    hw = get_hardware(trainer.hardware) if isinstance(trainer.hardware, str) else trainer.hardware
    plan = plan_owners(records, n_states, n_actions, trainer.n_dpus)
    n = trainer.n_dpus
    longest = int(np.diff(plan.bounds).max())
    if longest * RECORD_BYTES > hw.mram_bytes:
        raise ValueError(f"a partition of {longest} transitions ({longest * RECORD_BYTES} B) "
                         f"exceeds a DPU's {hw.mram_bytes} B MRAM; use more DPUs")
    ordered = records[plan.order]
    variant = Variant(p.algo, p.dtype, p.sampling, bootstrap="owned",
                      tasklet_mode=p.tasklet_mode)
    global_fits = (wram_needed(n_states, n_actions, trainer.tasklets, variant, False,
                               trainer.block_bytes or RECORD_BYTES, hw.stack_bytes_per_tasklet)
                   <= hw.wram_bytes and (p.tasklet_mode != "rows" or n_states < 1 << 16))
    layout = choose_layout(trainer.own_layout, global_fits)
    ids = None
    program_states = n_states
    if layout == "local":
        ids = local_ids(plan, ordered, n_states)
        ordered, program_states = ids.records, ids.n_local
    block = trainer.block_for(program_states, n_actions, hw, False, bootstrap="owned")
    program = factory(program_states, n_actions, trainer.tasklets, p.algo, p.dtype,
                      p.sampling, block, hw, count_visits=False, bootstrap="owned",
                      tasklet_mode=p.tasklet_mode)
    lane_words = None
    if p.tasklet_mode == "rows":        # each DPU's states split over its tasklets
        ordered, lane_words = rows_layout(ordered, plan.bounds, trainer.tasklets,
                                          program_states, n_actions)
    matrix = dpu_record_matrix(ordered, plan.bounds)
    if p.dtype == "int32":
        matrix = fixedpoint.records_with_fixed_rewards(matrix, p.frac_bits)
    if not matrix.flags.writeable:      # the SDK's copy takes writable buffers only
        matrix = matrix.copy()
    raw_dtype = np.int32 if p.dtype == "int32" else np.float32
    dpus = DpuPackageSet(dpu_package("simulator"), n, program, hw)
    try:
        with dpus.phase("cpu_dpu"):
            dpus.push_rows(DPU_MRAM_HEAP_POINTER_NAME, matrix.view(np.uint8).reshape(n, -1))
        params = np.zeros((n, PARAMS_WORDS), dtype=np.int64)
        scalars = p.kernel_scalars()
        params[:, : len(scalars)] = scalars
        params[:, P_N_RECORDS] = np.diff(plan.bounds)
        base = 0 if ids is None else plan.own[:, 0]      # the local layout counts from 0
        params[:, P_OWN_LO] = plan.own[:, 0] - base
        params[:, P_OWN_HI] = plan.own[:, 1] - base
        params[:, P_OWN_SHARED] = plan.shared
        policy = policy_weights(records, n_states, n_actions, p)
        if policy is not None:
            # SARSA's target policy: epsilon-greedy's two weights in params; the logged
            # policy's action frequencies, each DPU the rows of its states from own_lo on,
            # pushed once with the data.
            for i, word in policy.param_words(p.frac_bits).items():
                params[:, i] = word
        if policy is not None and not policy.uniform:
            w_raw = policy.raw_weights(p.dtype, p.frac_bits)
            idx = np.minimum(plan.own[:, :1] + np.arange(plan.longest_range)[None, :],
                             n_states - 1)
            rows = np.where((idx < plan.own[:, 1:])[:, :, None], w_raw[idx], 0)
            with dpus.phase("cpu_dpu"):
                dpus.push_rows("policy_weights", np.ascontiguousarray(
                    rows.astype(raw_dtype)).view(np.uint8).reshape(n, -1))
        lanes = np.arange(n * trainer.tasklets)
        with dpus.phase("cpu_dpu"):
            dpus.push_rows("rng_state", lane_seeds(p.seed, lanes).reshape(n, -1).view(np.uint8))
            if lane_words is not None:
                for symbol, words in lane_words.items():
                    dpus.push_rows(symbol, words.view(np.uint8).reshape(n, -1))
        scheme = OwnRounds(dpus, plan, ids, policy, p, params, rounds, n_states, n_actions,
                           program_states, hw)
        ck = getattr(trainer, "checkpoint", None)
        if ck is not None:
            check_resumable(dpus)
        loop = RoundLoop(rounds, dpus.ledger, "modelled_s", trainer.on_round, ck)
        loop.run(scheme)
        t0 = time.perf_counter()
        q = assemble_table(plan, scheme.tables, p.dtype, p.frac_bits, scheme.global_states)
        agg_s = loop.host_s + time.perf_counter() - t0
    finally:
        dpus.free()
    timings = dpus.ledger()
    timings.measure("host_aggregation", agg_s)
    timings.measure("simulation_wall", time.perf_counter() - t_start)
    return SimpleNamespace(q=q, timings=timings, history=loop.history, plan=plan, layout=layout,
                           program_states=program_states, counters=scheme.counters,
                           tasklet_counters=scheme.tasklet_counters, program=program, hw=hw,
                           tables=scheme.tables)
