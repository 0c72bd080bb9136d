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


# --------------------------------------------------------------------------- the host
def fit_owned(trainer, records, n_states, n_actions, rounds, on_round=None):
    """``PimTrainer.fit`` for ``own:R``: sets the same attributes, plus ``rounds_``."""
    from dataclasses import replace

    from pimrl.pim.hardware import get_hardware
    from pimrl.learners.variants import Variant
    from pimrl.rlkernel.layout import RECORD_BYTES, wram_needed
    from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME
    from pimrl.swiftrl.dpus import DpuPackageSet, dpu_package
    from pimrl.swiftrl.records import dpu_record_matrix, rows_layout
    from pimrl.swiftrl.trainer import KERNELS, add_tasklet_counters

    t_start = time.perf_counter()
    p = replace(trainer.params, bootstrap="owned")
    hw = get_hardware(trainer.hardware) if isinstance(trainer.hardware, str) else trainer.hardware
    factory = trainer.kernel if callable(trainer.kernel) else KERNELS[trainer.kernel]
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
    nq = program_states * n_actions
    out_words = 2 * n_actions + plan.longest_range
    global_states = None if ids is None else n_states     # assemble_table's local layout
    dpus = DpuPackageSet(dpu_package("simulator"), n, program, hw)
    history = []
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
        v = np.zeros(n_states, raw_dtype)       # V0 = 0: the WRAM globals' load-time zeros
        counters = np.zeros((n, len(kcost.COUNTERS)), dtype=np.int64)
        tasklet_counters = None
        round_epochs = np.diff(even_bounds(p.epochs, rounds))
        agg_s = 0.0
        sent = None
        # What stopping after a round would add: gathering the tables (as the last round does).
        stop_s = cost.parallel_transfer_seconds(hw, 4 * nq, n, dpus.n_ranks(), False)
        ck = getattr(trainer, "checkpoint", None)
        start = 0
        if ck is not None:
            from pimrl import checkpoint as ckpt
            from pimrl.swiftrl.dpus import check_resumable

            check_resumable(dpus)
            if ck.state is not None:    # resume: the DPUs' memories, the ledger, V, ...
                meta, arrays = ck.state["meta"], ck.state["arrays"]
                if not (np.array_equal(arrays["own_bounds"], plan.bounds)
                        and np.array_equal(arrays["own_ranges"], plan.own)):
                    raise ckpt.CheckpointMismatch("--resume: the checkpoint's owner plan "
                                                  "differs from this run's")
                start, counters, tasklet_counters = ckpt.resume_dpus(dpus, ck.state, "own",
                                                                     len(round_epochs))
                v = arrays["v"].copy()
                sent = arrays["sent"].copy()
                agg_s = float(meta["host_aggregation_s"])
                history = list(meta["history"])
                if start == len(round_epochs):      # a finished run
                    tables = arrays["tables"].copy()

            def snapshot():
                arrays = dict(ckpt.peek_dpus(dpus), counters=counters, v=v, sent=sent,
                              own_bounds=plan.bounds, own_ranges=plan.own)
                if tasklet_counters is not None:
                    arrays["tasklet_counters"] = tasklet_counters
                if r == len(round_epochs) - 1:
                    arrays["tables"] = tables
                meta = {"scheme": "own", "ledger": ckpt.ledger_meta(dpus.ledger()),
                        "history": history, "host_aggregation_s": agg_s}
                return meta, arrays
        for r in range(start, len(round_epochs)):
            epochs = round_epochs[r]
            last = r == len(round_epochs) - 1
            params[:, P_EPOCHS] = epochs
            if sent is None or not np.array_equal(sent, params):    # only when they change
                with dpus.phase("cpu_dpu" if r == 0 else "inter_dpu"):
                    dpus.push_rows("params", params.view(np.uint8).reshape(n, -1))
                sent = params.copy()
            dpus.run()
            tasklet_counters = add_tasklet_counters(tasklet_counters, dpus)
            if last:
                with dpus.phase("dpu_cpu"):
                    counters += dpus.counters(len(kcost.COUNTERS))
                    tables = dpus.pull_rows("q_table", 4 * nq).view(raw_dtype).reshape(
                        n, program_states, n_actions)
            else:
                with dpus.phase("inter_dpu"):
                    counters += dpus.counters(len(kcost.COUNTERS))
                    out = dpus.pull_rows("v_out", 4 * out_words).view(raw_dtype).reshape(
                        n, out_words)
                t0 = time.perf_counter()
                edges = out[:, : 2 * n_actions].reshape(n, 2, n_actions)
                v = _values_of(plan, edges, out[:, 2 * n_actions:], v, p, n_states, policy)
                agg_s += time.perf_counter() - t0
                with dpus.phase("inter_dpu"):
                    if ids is None:
                        dpus.push_all("v_table", v)
                    else:       # each DPU the values of its own states and its halo
                        dpus.push_rows("v_table", ids.values(v).view(np.uint8).reshape(n, -1))
            entry = {"round": r + 1, "epochs_done": int(round_epochs[: r + 1].sum()),
                     "modelled_s": dpus.elapsed_s() + (0.0 if last else stop_s)}
            if on_round is not None:
                # Instrumentation, outside the modelled run: the tables as they stand.
                snap = tables if last else dpus.peek_rows("q_table", 4 * nq).view(
                    raw_dtype).reshape(n, program_states, n_actions)
                entry.update(on_round(assemble_table(plan, snap, p.dtype, p.frac_bits,
                                                     global_states)))
            history.append(entry)
            if ck is not None:              # a round boundary: after the broadcast of V
                ck.boundary(r + 1, len(round_epochs), snapshot)
        t0 = time.perf_counter()
        q = assemble_table(plan, tables, p.dtype, p.frac_bits, global_states)
        agg_s += time.perf_counter() - t0
    finally:
        dpus.free()
    trainer.q_ = q
    trainer.timings_ = dpus.ledger()
    trainer.timings_.measure("host_aggregation", agg_s)
    trainer.timings_.measure("simulation_wall", time.perf_counter() - t_start)
    trainer.plan_ = plan
    trainer.own_layout_ = layout
    trainer.program_states_ = program_states
    trainer.rounds_ = history
    return trainer._set_learned(counters, plan.bounds, program, hw, tables,
                                tasklet_counters=tasklet_counters)
