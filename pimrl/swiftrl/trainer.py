"""The host side of a PIM training run: partition, push, launch, gather, aggregate.

``PimTrainer(...).fit(records, n_states, n_actions)`` drives a DPU set through the UPMEM
SDK's Python host API (the ``dpu`` package, by way of :mod:`pimrl.swiftrl.dpus`) exactly as
a host program would, and leaves the aggregated table in ``q_`` and the times in
``timings_``: modelled on pimrl's simulator (``device="simulator"``), measured on real DPUs
(``device="upmem"``, with the SDK's ``dpu`` package).
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit

from pimrl.data.records import TRANSITION_DTYPE
from pimrl.learners import fixedpoint
from pimrl.learners.fixedpoint import fits_int32, fixed_value
from pimrl.learners.params import LearnerParams
from pimrl.learners.variants import P_EPOCHS
from pimrl.learners.reference import (
    check_record_array, check_records, record_fault, record_fault_error,
)
from pimrl.parallel import run_ranges
from pimrl.partition import (
    LANE_WORK_ROWS, NO_OWNER, check_lanes, even_bounds, part_lanes, state_lanes,
)
from pimrl.rlkernel import costs as kcost
from pimrl.learners.aggregate import AGGREGATORS, float_to_raw, parse_aggregate, raw_scale
from pimrl.pim.hardware import Hardware, get_hardware
from pimrl.rlkernel.program import PARAMS_WORDS, P_N_RECORDS, RECORD_BYTES, RlProgram
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME
from pimrl.swiftrl.dpus import DEVICES, DpuPackageSet, SystemSetDpus, dpu_package
from pimrl.registry import Registry
from pimrl.rng import lane_seeds


def partition_records(records: np.ndarray, n_dpus: int, partition: str = "contiguous",
                      shuffle_seed: int = 0):
    """Records in DPU order and the DPUs' bounds. ``shuffle`` permutes them first (seeded)."""
    if partition == "shuffle":
        records = records[np.random.Generator(np.random.PCG64(shuffle_seed)).permutation(len(records))]
    elif partition != "contiguous":
        raise ValueError(f"unknown partitioning {partition!r}; use contiguous or shuffle")
    return records, even_bounds(len(records), n_dpus)


def rows_layout(records: np.ndarray, bounds: np.ndarray, tasklets: int, n_states: int,
                n_actions: int):
    """Tasklet mode ``rows`` (docs/design.md): the records of each DPU grouped by the tasklet
    that owns their state (:func:`pimrl.partition.state_lanes`), and each DPU's words of the
    kernel's symbols ``lane_bounds`` (D, 2 (T + 1)) int32 (its lanes' record offsets, then
    where their state lists start), ``state_owner`` (D, S) uint8 and ``lane_states`` (D, S)
    uint16: (records, {symbol: words})."""
    order, lanes, owner, state_list, list_bounds = state_lanes(
        records["state"], bounds, tasklets, n_states, records["action"], n_actions)
    words = np.empty((len(bounds) - 1, 2 * (tasklets + 1)), np.int64)
    words[:, 0] = lanes[:, 0, 0] - bounds[:-1]
    words[:, 1:tasklets + 1] = lanes[:, :, 1] - bounds[:-1, None]
    words[:, tasklets + 1:] = list_bounds
    # the byte and uint16 arrays in whole 8-byte words, as the kernel declares them
    pad = -n_states % 8, -(2 * n_states) % 8 // 2
    owner = np.pad(owner, ((0, 0), (0, pad[0])), constant_values=NO_OWNER)
    state_list = np.pad(state_list, ((0, 0), (0, pad[1])))
    return records[order], {"lane_bounds": words.astype(np.int32), "state_owner": owner,
                            "lane_states": state_list}


def dpu_record_matrix(records: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(n_dpus, longest partition) records, each DPU's partition left-aligned, zero padded:
    the buffers of one push_xfer (one length for every DPU)."""
    sizes = np.diff(bounds)
    longest = int(sizes.max())
    if np.all(sizes == longest):
        return records.reshape(len(sizes), longest)
    idx = bounds[:-1, None] + np.arange(longest)[None, :]
    valid = idx < bounds[1:, None]
    out = np.zeros((len(sizes), longest), dtype=TRANSITION_DTYPE)
    out[valid] = records[idx[valid]]
    return out


#: Records above which the data preparation hands a read-only dataset mapping's pages back
#: once it has read them (:func:`pimrl.data.format.drop_mapped_pages`): a big run then holds
#: the DPUs' records and the simulated MRAM, not the file's pages as well.
DROP_MAPPED_BYTES = 256 << 20


@njit(nogil=True, cache=True)
def _dpu_records(words, rewards, bounds, lo, hi, lay_out, n_states, n_actions, check_next,
                 scale, tasklets, rows, out, lane_words, owner, state_list):
    """The data preparation of DPUs ``lo..hi-1`` (records ``bounds[lo]..bounds[hi]-1``;
    ``words``/``rewards``: the 16-byte records as (n, 4) int32 and float32).

    Unless ``lay_out``: the checks, as :func:`pimrl.learners.reference.check_records` makes
    them (:func:`~pimrl.learners.reference.record_fault`), then, when ``scale`` > 0 (INT32),
    whether each reward fits Q format. Returns (field, index) of the first record outside
    the table; else (4, index) of the first reward that does not fit; else (-1, -1).

    With ``lay_out``: each DPU's records into its row of ``out`` (DPUs x longest x 4 words),
    in tasklet mode rows grouped by lane (:func:`pimrl.partition.part_lanes`, writing the
    DPU's rows of ``lane_words``, ``owner`` and ``state_list``), their rewards in Q format
    when ``scale`` > 0, the rest of the row zero: one pass, reading the records once."""
    if not lay_out:
        late_reward = -1
        for i in range(bounds[lo], bounds[hi]):
            w = words[i, 3]
            field = record_fault(words[i, 0], words[i, 1], w & 0xFF, (w >> 8) & 0xFF,
                                 (w >> 16) & 0xFF, n_states, n_actions, check_next)
            if field >= 0:
                return field, i
            if (scale > 0 and late_reward < 0
                    and not fits_int32(fixed_value(rewards[i, 2], scale))):
                late_reward = i
        return (4, late_reward) if late_reward >= 0 else (-1, -1)
    longest = out.shape[1]
    span = max(longest, tasklets) + 1 if rows else 1
    work = np.empty((LANE_WORK_ROWS, span), np.int64)
    hist = np.empty(256, np.int64)
    keys = np.empty(span, np.int64)
    dest = np.empty(span, np.int64)
    ends = np.empty(tasklets, np.int64)
    lists = np.empty(tasklets + 1, np.int64)
    for p in range(lo, hi):
        a0 = bounds[p]
        n = bounds[p + 1] - a0
        if rows:
            for i in range(n):
                keys[i] = np.int64(words[a0 + i, 0]) * n_actions + (words[a0 + i, 3] & 0xFF)
            part_lanes(keys, n, tasklets, n_states, n_actions, work, hist, owner[p],
                       state_list[p], lists, ends, dest)
            lane_words[p, 0] = 0
            for t in range(tasklets):
                lane_words[p, 1 + t] = ends[t]
            for t in range(tasklets + 1):
                lane_words[p, tasklets + 1 + t] = lists[t]
        row = out[p]
        for i in range(n):
            d = dest[i] if rows else i
            row[d, 0] = words[a0 + i, 0]
            row[d, 1] = words[a0 + i, 1]
            row[d, 2] = (np.int32(fixed_value(rewards[a0 + i, 2], scale)) if scale > 0
                         else words[a0 + i, 2])
            row[d, 3] = words[a0 + i, 3]
        for i in range(n, longest):
            for k in range(4):
                row[i, k] = 0
    return -1, -1


def _words(records: np.ndarray):
    """The records as (n, 4) int32 words and the same bytes as float32 (no copy when they
    are contiguous)."""
    words = np.ascontiguousarray(records).view(np.int32).reshape(-1, 4)
    return words, words.view(np.float32)


def _lane_arrays(n_dpus: int, tasklets: int, n_states: int, rows: bool):
    """The arrays :func:`_dpu_records` fills in tasklet mode rows: ``lane_bounds`` words,
    ``state_owner`` and ``lane_states``, as the kernel declares them (whole 8-byte words: the
    byte and uint16 arrays padded), or empty ones of the same types."""
    if not rows:
        return (np.zeros((0, 0), np.int32), np.zeros((0, 0), np.uint8),
                np.zeros((0, 0), np.uint16))
    return (np.zeros((n_dpus, 2 * (tasklets + 1)), np.int32),
            np.full((n_dpus, n_states + -n_states % 8), NO_OWNER, np.uint8),
            np.zeros((n_dpus, n_states + -(2 * n_states) % 8 // 2), np.uint16))


def check_dpu_records(records: np.ndarray, n_states: int, n_actions: int,
                      params: LearnerParams) -> None:
    """:func:`~pimrl.learners.reference.check_records`, and for INT32 whether every reward
    fits Q format (naming the first that does not, as
    :func:`~pimrl.learners.fixedpoint.to_fixed` does), in one pass over the records by the
    compiled function that lays them out."""
    check_record_array(records)
    words, rewards = _words(records)
    scale = float(1 << params.frac_bits) if params.dtype == "int32" else 0.0
    check_next = params.algo == "sarsa" and params.next_action == "logged"
    parts = even_bounds(len(records), max(1, min(len(records) >> 16, 64)))
    empty = np.zeros((0, 0, 4), np.int32), *_lane_arrays(0, 1, 0, False)
    found = {}

    def search(lo, hi):
        found[lo] = _dpu_records(words, rewards, parts, lo, hi, False, n_states, n_actions,
                                 check_next, scale, 1, False, *empty)
    run_ranges(search, len(parts) - 1)
    faults = [found[lo] for lo in sorted(found) if found[lo][0] >= 0]
    fault = next((f for f in faults if f[0] < 4), faults[0] if faults else None)
    if fault is None:
        return
    field, i = int(fault[0]), int(fault[1])
    if field == 4:
        raise fixedpoint._does_not_fit("reward", i, np.float64(records["reward"][i]),
                                       params.frac_bits)
    raise record_fault_error(records, field, i, n_states, n_actions)


def dpu_records(records: np.ndarray, bounds: np.ndarray, tasklets: int, n_states: int,
                n_actions: int, params: LearnerParams):
    """The buffers a host pushes: ``(matrix, lane_words)``. ``matrix`` (n_dpus, longest
    partition) of records, each DPU's partition left-aligned and zero padded, grouped by
    lane in tasklet mode rows (as :func:`rows_layout`), rewards in Q format for INT32 (as
    :func:`~pimrl.learners.fixedpoint.records_with_fixed_rewards`); ``lane_words`` as
    :func:`rows_layout` gives them, or None outside tasklet mode rows. One compiled pass
    over records already checked (:func:`check_dpu_records`), writing nothing but the
    matrix: no permutation, no reordered or converted copy. Past
    :data:`DROP_MAPPED_BYTES`, the pages of a read-only dataset mapping go back to the OS
    once read."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    n_dpus = len(bounds) - 1
    rows = params.tasklet_mode == "rows"
    if rows:
        check_lanes(tasklets, n_states)
    words, rewards = _words(records)
    scale = float(1 << params.frac_bits) if params.dtype == "int32" else 0.0
    matrix = np.empty((n_dpus, int(np.diff(bounds).max())), TRANSITION_DTYPE)
    out = matrix.view(np.int32).reshape(n_dpus, -1, 4)
    lane_words, owner, state_list = _lane_arrays(n_dpus, tasklets, n_states, rows)
    run_ranges(lambda lo, hi: _dpu_records(words, rewards, bounds, lo, hi, True, n_states,
                                           n_actions, False, scale, int(tasklets), rows, out,
                                           lane_words, owner, state_list), n_dpus)
    if records.nbytes > DROP_MAPPED_BYTES:
        from pimrl.data.format import drop_mapped_pages

        drop_mapped_pages(records)
    if not rows:
        return matrix, None
    return matrix, {"lane_bounds": lane_words, "state_owner": owner, "lane_states": state_list}


def _c_kernel(*args, **kwargs):
    """The SwiftRL kernel in UPMEM C (kernels/swiftrl.c) run by the DPU runtime; needs a C
    compiler, slower to simulate, equal bit for bit."""
    from pimrl.rlkernel.cprogram import swiftrl_program   # needs a C compiler: imported on demand

    return swiftrl_program(*args, **kwargs)


#: The DPU programs that can run the SwiftRL kernel, by name (``--kernel``). Each factory
#: takes (n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes, hardware,
#: count_visits=, tasklet_mode=) and returns a :class:`~pimrl.pim.system.DpuProgram`.
KERNELS = Registry("SwiftRL DPU programs")
KERNELS.add("numba", RlProgram, "the simulator's built-in kernel, compiled per variant (numba)")
KERNELS.add("c", _c_kernel, "the UPMEM C kernel of kernels/swiftrl.c, built and run by the DPU "
            "runtime (needs a C compiler; slower)", needs_compiler=True)


def too_many_dpus(n_dpus: int, hw: Hardware) -> str:
    """Why ``n_dpus`` do not fit on ``hw``, and what would hold them (never ``hw`` itself)."""
    from pimrl.pim.hardware import PRESETS

    ranks = -(-(n_dpus + hw.n_faulty_dpus) // hw.dpus_per_rank)     # faulty DPUs stay faulty
    fits = [name for name, p in PRESETS.items() if p.n_dpus >= n_dpus and name != hw.name]
    advice = (f"use --hardware {fits[0]}, or --hw n_ranks={ranks} for a bigger what-if" if fits
              else f"use --hw n_ranks={ranks} (or more) for a bigger what-if")
    return f"--dpus {n_dpus}: {hw.name} has {hw.n_dpus} functional DPUs ({advice})"


def add_tasklet_counters(total, dpus):
    """``total`` plus the last run's counters of each tasklet (None where the program keeps
    none)."""
    last = dpus.tasklet_counters() if hasattr(dpus, "tasklet_counters") else None
    if last is None:
        return total
    return last.copy() if total is None else total + last


class PimTrainer:
    """Train on ``n_dpus`` DPUs: one Q-table per DPU, aggregated on the host.

    Parameters are stored as given; ``fit`` does the work and sets ``q_`` (float64
    aggregate), ``timings_`` (:class:`~pimrl.pim.cost.TimeBreakdown`), ``counters_`` (per-DPU
    work counters summed over launches), ``saturations_``, ``n_updates_`` and, with
    ``keep_dpu_tables=True``, ``dpu_tables_`` (raw per-DPU tables after the last round).
    ``kernel`` names the DPU program (a key of ``KERNELS``) or is a factory with their
    signature. ``block_bytes``: the kernel's DMA block; None takes 2,048 B, or the largest
    block whose buffers fit WRAM beside the kernel's globals (``block_`` says which). ``device`` (a key of :data:`~pimrl.swiftrl.dpus.DEVICES`) says where the DPUs
    are: ``simulator`` (pimrl's ``dpu`` package; ``timings_.modelled_s`` holds the modelled
    PrIM phases) or ``upmem`` (the SDK's ``dpu`` package on a UPMEM machine; the C kernel
    built by the SDK's compiler; ``timings_.measured_s`` holds each phase's host wall clock
    and ``modelled_s`` is empty). ``placement(n_dpus, hw)`` allocates a simulated DPU set
    elsewhere: a :class:`~pimrl.pim.distributed.DaskPlacement` spreads its ranks over Dask
    workers, with the same tables and modelled times, and sets ``worker_transfers_`` (bytes
    and measured wall time of the traffic with the workers, never a PIM time).
    ``own_layout`` (``own:R`` only): ``global`` puts the whole table in every DPU's WRAM
    (SwiftRL's layout), ``local`` only each DPU's own rows and the values its data leads to
    (:class:`~pimrl.swiftrl.owned.LocalIds`: tables larger than WRAM), ``auto`` the global
    one where it fits; ``own_layout_`` and ``program_states_`` say which ran.
    """

    def __init__(self, params: LearnerParams, n_dpus: int = 64, tasklets: int = 16,
                 aggregate: str = "mean", partition: str = "contiguous", shuffle_seed: int = 0,
                 hardware: Hardware | str = "upmem-2556", block_bytes: int | None = None,
                 keep_dpu_tables: bool = False, kernel="numba", placement=None, on_round=None,
                 device: str = "simulator", own_layout: str = "auto", checkpoint=None):
        self.params = params
        self.n_dpus = n_dpus
        self.tasklets = tasklets
        self.aggregate = aggregate
        self.partition = partition
        self.shuffle_seed = shuffle_seed
        self.hardware = hardware
        self.block_bytes = block_bytes
        self.keep_dpu_tables = keep_dpu_tables
        self.kernel = kernel
        self.placement = placement
        self.on_round = on_round     # q (float64) -> dict, after every round (instrumentation)
        self.device = device
        self.own_layout = own_layout  # own:R: "auto", "global" or "local" (swiftrl/owned.py)
        # a pimrl.swiftrl.checkpoint.Checkpoint: written at round boundaries, resumed from
        self.checkpoint = checkpoint

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "PimTrainer":
        t_start = time.perf_counter()
        p = self.params
        spec = parse_aggregate(self.aggregate)
        if spec.rounds > p.epochs:
            raise ValueError(f"{self.aggregate}: {spec.rounds} rounds need at least as many "
                             f"epochs; got {p.epochs}")
        if self.n_dpus < 1:
            raise ValueError(f"--dpus must be at least 1; got {self.n_dpus}")
        if len(records) < self.n_dpus:
            raise ValueError(f"{len(records)} transitions cannot feed {self.n_dpus} DPUs")
        if spec.name == "own":
            check_records(records, n_states, n_actions, p)
        else:       # the records' and (INT32) the rewards' checks, before any work
            check_dpu_records(records, n_states, n_actions, p)
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; use {' or '.join(DEVICES)}")
        simulated = self.device == "simulator"
        if not simulated and self.placement is not None:
            raise ValueError(f"--device {self.device}: the DPUs are this machine's; a Dask "
                             "placement spreads simulated DPUs only (use --executor local)")
        if not simulated and self.kernel != "c":
            raise ValueError(f"--device {self.device} runs the C kernel of kernels/swiftrl.c, "
                             f"not {self.kernel!r}: use --kernel c")
        if spec.name == "own":
            if not simulated:
                raise ValueError(f"{self.aggregate}: state-owned learning runs on the simulator "
                                 "only (--device simulator)")
            from pimrl.swiftrl.owned import fit_owned

            return fit_owned(self, records, n_states, n_actions, spec.rounds, self.on_round)
        hw = get_hardware(self.hardware) if isinstance(self.hardware, str) else self.hardware
        if simulated and self.n_dpus > hw.n_dpus:
            raise ValueError(too_many_dpus(self.n_dpus, hw))
        # The dpu package first: a wrong one is reported before any build.
        dpu = dpu_package(self.device) if self.placement is None else None
        block = self.block_for(n_states, n_actions, hw, spec.needs_visits)
        if not simulated:       # real DPUs: the C kernel, built by the SDK's compiler
            from pimrl.rlkernel.cprogram import build_kernel_with_compiler

            program = build_kernel_with_compiler(n_states, n_actions, self.tasklets, p.algo,
                                                 p.dtype, p.sampling, block,
                                                 count_visits=spec.needs_visits,
                                                 tasklet_mode=p.tasklet_mode)
        else:
            if callable(self.kernel):
                factory = self.kernel
            elif self.kernel in KERNELS:
                factory = KERNELS[self.kernel]
            else:
                raise ValueError(f"unknown kernel {self.kernel!r}; use {' or '.join(KERNELS)}")
            program = factory(n_states, n_actions, self.tasklets, p.algo, p.dtype, p.sampling,
                              block, hw, count_visits=spec.needs_visits,
                              tasklet_mode=p.tasklet_mode)
        bounds = even_bounds(len(records), self.n_dpus)
        longest = int(np.diff(bounds).max())
        if longest * RECORD_BYTES > hw.mram_bytes:
            raise ValueError(f"a partition of {longest} transitions ({longest * RECORD_BYTES} B) "
                             f"exceeds a DPU's {hw.mram_bytes} B MRAM; use more DPUs")
        ordered, bounds = partition_records(records, self.n_dpus, self.partition, self.shuffle_seed)
        # the host's buffers: a fresh, writable matrix (the SDK's copy takes writable
        # buffers only), built in one pass from the records (or their mapping)
        matrix, lane_words = dpu_records(ordered, bounds, self.tasklets, n_states, n_actions, p)
        del ordered

        n = self.n_dpus
        if self.placement is None:
            dpus = DpuPackageSet(dpu, n, program, hw)
        else:
            if self.kernel != "numba":
                raise ValueError(f"--kernel {self.kernel}: a DPU set on Dask workers runs the "
                                 f"numba kernel only")
            dpus = SystemSetDpus(self.placement(n, hw), program)
        try:
            # CPU-DPU: the partitions, each DPU's parameters and its lanes' random streams.
            with dpus.phase("cpu_dpu"):
                dpus.push_rows(DPU_MRAM_HEAP_POINTER_NAME, matrix.view(np.uint8).reshape(n, -1))
                matrix = None           # pushed: the DPUs' copy is the one the run needs
                lanes = np.arange(n * self.tasklets).reshape(n, self.tasklets)
                dpus.push_rows("rng_state", lane_seeds(p.seed, lanes.ravel()).reshape(n, -1).view(np.uint8))
                if lane_words is not None:
                    for symbol, words in lane_words.items():
                        dpus.push_rows(symbol, words.view(np.uint8).reshape(n, -1))
            params = np.zeros((n, PARAMS_WORDS), dtype=np.int64)
            scalars = p.kernel_scalars()
            params[:, : len(scalars)] = scalars
            params[:, P_N_RECORDS] = np.diff(bounds)

            round_epochs = np.diff(even_bounds(p.epochs, spec.rounds))
            counters = np.zeros((n, len(kcost.COUNTERS)), dtype=np.int64)
            tasklet_counters = None
            agg_s = 0.0
            visits_before = 0
            self.rounds_ = []
            nq = n_states * n_actions
            raw_dtype = np.int32 if p.dtype == "int32" else np.float32
            time_key = "modelled_s" if dpus.modelled else "measured_s"
            ck = self.checkpoint
            start = 0
            if ck is not None:
                from pimrl.swiftrl import checkpoint as ckpt

                ckpt.check_resumable(self, dpus)
                if ck.state is not None:        # resume: the DPUs' memories, the ledger, ...
                    meta, arrays = ck.state["meta"], ck.state["arrays"]
                    start, counters, tasklet_counters = ckpt.resume_dpus(
                        dpus, ck.state, "mean", len(round_epochs))
                    if "visits_before" in arrays:
                        visits_before = arrays["visits_before"].copy()
                    agg_s = float(meta["host_aggregation_s"])
                    self.rounds_ = list(meta["history"])
                    if start == len(round_epochs):      # a finished run
                        q, raw = arrays["q"].copy(), arrays["tables"].copy()

                def snapshot():
                    arrays = dict(ckpt.peek_dpus(dpus), counters=counters)
                    if tasklet_counters is not None:
                        arrays["tasklet_counters"] = tasklet_counters
                    if not np.isscalar(visits_before):
                        arrays["visits_before"] = visits_before
                    if r == len(round_epochs) - 1:
                        arrays.update(q=q, tables=raw)
                    meta = {"scheme": "mean", "ledger": ckpt.ledger_meta(dpus.ledger()),
                            "history": self.rounds_, "host_aggregation_s": agg_s}
                    return meta, arrays
            for r in range(start, len(round_epochs)):
                epochs = round_epochs[r]
                last = r == len(round_epochs) - 1
                params[:, P_EPOCHS] = epochs
                with dpus.phase("cpu_dpu" if r == 0 else "inter_dpu"):
                    dpus.push_rows("params", params.view(np.uint8).reshape(n, -1))
                dpus.run()
                with dpus.phase("dpu_cpu" if last else "inter_dpu"):
                    counters += dpus.counters(len(kcost.COUNTERS))
                    tasklet_counters = add_tasklet_counters(tasklet_counters, dpus)
                    raw = dpus.pull_rows("q_table", 4 * nq).view(raw_dtype).reshape(
                        n, n_states, n_actions)
                    visits = (dpus.pull_rows("visits", 4 * nq).view(np.uint32).reshape(
                        n, n_states, n_actions) if spec.needs_visits else None)
                t0 = time.perf_counter()
                if visits is not None:          # weight by this round's updates only
                    visits, visits_before = visits - visits_before, visits
                q = AGGREGATORS[spec.name](raw, raw_scale(p.dtype, p.frac_bits), visits)
                agg_s += time.perf_counter() - t0
                if not last:
                    with dpus.phase("inter_dpu"):
                        dpus.push_all("q_table", float_to_raw(q, p.dtype, p.frac_bits))
                entry = {"round": r + 1, "epochs_done": int(round_epochs[: r + 1].sum()),
                         time_key: dpus.elapsed_s()}
                if self.on_round is not None:
                    entry.update(self.on_round(q))
                self.rounds_.append(entry)
                if ck is not None:          # a round boundary: after the broadcast
                    ck.boundary(r + 1, len(round_epochs), snapshot)
        finally:
            dpus.free()

        self.q_ = q
        self.timings_ = dpus.ledger()
        self.timings_.measure("host_aggregation", agg_s)
        self.timings_.measure("simulation_wall" if dpus.modelled else "run_wall",
                              time.perf_counter() - t_start)
        transfers = getattr(dpus.set, "transfers", None) if isinstance(dpus, SystemSetDpus) else None
        if transfers is not None:        # a distributed set: its traffic with the workers
            self.worker_transfers_ = dict(transfers, workers=list(dpus.set.workers),
                                          dpus_per_worker=list(dpus.set.shard_dpus))
            self.timings_.measure("worker_transfer", transfers["transfer_measured_s"])
            self.timings_.measure("worker_launch", transfers["launch_measured_s"])
        return self._set_learned(counters, bounds, program, hw, raw, fresh=True,
                                 tasklet_counters=tasklet_counters)

    def block_for(self, n_states, n_actions, hw, count_visits, bootstrap="table") -> int:
        """The DMA block of this run (sets ``block_``): ``block_bytes``, or when None the
        largest that fits (:func:`pimrl.rlkernel.program.fitting_block`)."""
        from pimrl.learners.variants import Variant
        from pimrl.rlkernel.program import fitting_block

        if self.block_bytes is not None:
            self.block_ = int(self.block_bytes)
        else:
            variant = Variant(self.params.algo, self.params.dtype, self.params.sampling,
                              bootstrap=bootstrap, tasklet_mode=self.params.tasklet_mode)
            self.block_ = fitting_block(n_states, n_actions, self.tasklets, variant,
                                        count_visits, hw)
        return self.block_

    def _set_learned(self, counters, bounds, program, hw, tables, fresh=False,
                     tasklet_counters=None) -> "PimTrainer":
        """The state every scheme's ``fit`` ends with: the launches' summed work counters and
        what follows from them (``tasklet_counters_``: each tasklet's, in tasklet mode rows;
        else None), the partition, the program, the hardware and (with ``keep_dpu_tables``)
        the DPUs' last tables: ``tables`` itself when ``fresh`` (an array nothing else
        holds), else a copy."""
        self.counters_ = counters
        self.tasklet_counters_ = tasklet_counters
        self.conflicts_ = int(counters[:, kcost.C["conflicts"]].sum())
        self.saturations_ = int(counters[:, kcost.C["saturations"]].sum())
        self.n_updates_ = int(counters[:, kcost.C["updates"]].sum())
        self.bounds_ = bounds
        self.program_ = program
        self.hardware_ = hw
        if self.keep_dpu_tables:
            self.dpu_tables_ = tables if fresh else tables.copy()
        return self
