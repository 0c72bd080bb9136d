"""The CPU baseline: every variant on the host, single- and multi-threaded (numba).

As in SwiftRL's threaded CPU version, the dataset is split into ``partitions`` contiguous
parts (by default one per thread); each part learns its own Q-table and the host averages
the tables at the end. The loop is the variant's own compiled loop
(:func:`pimrl.learners.kernels.compiled`: the variant's choices are compile-time constants,
a lane's cursor and stream stay in registers), a numba ``prange`` over partitions, so the
tables are bit-identical to :func:`~pimrl.learners.reference.learn_partition` on the same
partitions, with the same global lane numbers (partition ``p``'s lane ``t`` is lane
``p * lanes + t``) seeding the xorshift32 streams. The single-threaded baseline is one
partition (the whole dataset in order: what ``OfflineLearner`` computes) with numba's thread
count set to 1. ``benchmarks/bench_baselines.py`` times it against a plain C loop doing the
same work (``kernels/cpu_loop.c``).

Timing: wall clock (``time.perf_counter``) around the training kernel and the host average,
*after* a warm-up call on a two-record slice with the same argument types, so numba's
compilation or cache loading is excluded; so is the preparation of the record columns (the
dataset is already in memory, as on the DPUs where the push is counted separately). With
``repeats > 1`` the reported time is the median; every repeat starts from zero tables and
fresh streams and yields the same tables. Where the RAPL package counters can be read
(pimrl.baselines.energy), each repeat's training and averaging energy is read around the
same two timed parts (the reading between them off the clock), the median reported.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba
import numpy as np

from pimrl.baselines.energy import Rapl
from pimrl.learners.fixedpoint import raw_to_float
from pimrl.learners.kernels import compiled
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import check_records, record_words
from pimrl.partition import even_bounds, lane_bounds
from pimrl.rng import lane_seeds


@dataclass
class CpuResult:
    """Outcome of a CPU baseline run. Times are *measured* wall-clock seconds on this host."""

    q: np.ndarray                  # float64 (S, A): the average of the partitions' tables
    q_raw: np.ndarray              # (P, S, A) float32 or Q-format int32
    seconds: float                 # median over repeats: training + host average
    train_seconds: float           # median training part
    aggregate_seconds: float       # median averaging part
    repeat_seconds: list = field(default_factory=list)
    repeat_train_seconds: list = field(default_factory=list)   # training part of each repeat
    threads: int = 1
    partitions: int = 1
    lanes: int = 1
    n_updates: int = 0
    saturations: int = 0
    #: {"train": J, "aggregate": J} read from the RAPL package counters (median over repeats),
    #: None where they cannot be read here (pimrl.baselines.energy)
    energy_measured_j: dict | None = None

    @property
    def updates_per_s(self) -> float:
        return self.n_updates / self.seconds if self.seconds > 0 else float("nan")


def max_threads() -> int:
    """Threads numba may use in this process (``NUMBA_NUM_THREADS``, default: the cores)."""
    return int(numba.config.NUMBA_NUM_THREADS)


_WARM = set()


def _prepared(records, params, partitions, lanes):
    cols = record_words(records, params)
    part_lanes = lane_bounds(even_bounds(len(records), partitions), lanes)
    seeds = lane_seeds(params.seed, np.arange(partitions * lanes)).reshape(partitions, lanes)
    return cols, np.ascontiguousarray(part_lanes), seeds


def _tables(params, partitions, n_states, n_actions):
    return np.zeros((partitions, n_states, n_actions),
                    np.int32 if params.dtype == "int32" else np.float32)


def _warm_up(params: LearnerParams, records, n_states, n_actions):
    """Compile (or load from numba's cache) the variant's loop, untimed."""
    if params.variant in _WARM:
        return
    p1 = LearnerParams(**{**params.as_dict(), "epochs": 1})
    cols, part_lanes, seeds = _prepared(records[:2], p1, 1, 1)
    compiled(p1.variant).partitions(*cols, part_lanes, seeds, _tables(p1, 1, n_states, n_actions),
                                    p1.kernel_scalars(), np.zeros(1, np.int64))
    _WARM.add(params.variant)


def cpu_baseline(records: np.ndarray, n_states: int, n_actions: int, params: LearnerParams,
                 threads: int | None = 1, partitions: int | None = None, lanes: int = 1,
                 repeats: int = 1, check: bool = True) -> CpuResult:
    """Train on the host CPU and time it.

    ``threads``: numba threads (1 = single-threaded; ``None`` = :func:`max_threads`). ``partitions`` defaults to
    ``threads``; ``lanes`` splits each partition into round-robin lanes as a DPU's tasklets
    (1 = SwiftRL's CPU version). Returns :class:`CpuResult` (measured seconds, compilation
    excluded)."""
    if check:
        check_records(records, n_states, n_actions, params)
    threads = max_threads() if threads is None else int(threads)
    if threads < 1:
        raise ValueError(f"threads must be at least 1; got {threads}")
    if threads > max_threads():
        raise ValueError(f"{threads} threads requested; numba may use {max_threads()} here "
                         f"(set NUMBA_NUM_THREADS to raise it)")
    partitions = threads if partitions is None else int(partitions)
    if partitions < 1 or lanes < 1 or repeats < 1:
        raise ValueError("partitions, lanes and repeats must be at least 1")
    if len(records) < partitions:
        raise ValueError(f"{len(records)} transitions cannot feed {partitions} partitions")
    _warm_up(params, records, n_states, n_actions)
    cols, part_lanes, seeds = _prepared(records, params, partitions, lanes)
    scalars = params.kernel_scalars()
    run = compiled(params.variant).partitions

    times, train_t, agg_t = [], [], []
    rapl = Rapl()                      # the package energy counters, where readable
    train_j, agg_j = [], []
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(threads)
        for _ in range(repeats):
            q_raw = _tables(params, partitions, n_states, n_actions)
            rng = seeds.copy()
            sat = np.zeros(partitions, np.int64)
            e0 = rapl.read() if rapl.available else None
            t0 = time.perf_counter()
            run(*cols, part_lanes, rng, q_raw, scalars, sat)
            t1 = time.perf_counter()
            if e0 is not None:         # read between the two timed parts, off the clock
                e1 = rapl.read()
                t1b = time.perf_counter()
            else:
                t1b = t1
            q = raw_to_float(q_raw, params.dtype, params.frac_bits).mean(axis=0)
            t2 = time.perf_counter()
            if e0 is not None:
                e2 = rapl.read()
                train_j.append(rapl.joules(e0, e1))
                agg_j.append(rapl.joules(e1, e2))
            times.append((t1 - t0) + (t2 - t1b))
            train_t.append(t1 - t0)
            agg_t.append(t2 - t1b)
    finally:
        numba.set_num_threads(previous)
    energy = ({"train": float(np.median(train_j)), "aggregate": float(np.median(agg_j))}
              if train_j else None)
    return CpuResult(q=q, q_raw=q_raw, seconds=float(np.median(times)),
                     train_seconds=float(np.median(train_t)),
                     aggregate_seconds=float(np.median(agg_t)), repeat_seconds=times,
                     repeat_train_seconds=train_t,
                     threads=threads, partitions=partitions, lanes=lanes,
                     n_updates=len(records) * params.epochs, saturations=int(sat.sum()),
                     energy_measured_j=energy)


def cpu_time_to_quality(records: np.ndarray, n_states: int, n_actions: int,
                        params: LearnerParams, evaluate, threads: int = 1,
                        partitions: int | None = None, stop_at_quality: bool = False) -> dict:
    """The CPU baseline run one epoch at a time, its averaged table evaluated after each.

    Each call of the compiled loop does one pass over every partition and carries the tables
    and the lanes' streams on to the next, so the tables after epoch ``e`` are those of an
    ``e``-epoch run, bit for bit. ``evaluate(epoch - 1, q, None)`` (an ``on_round``
    callback, such as :func:`pimrl.experiments.quality.round_evaluator`'s) runs between
    epochs, off the clock. Returns ``curve`` ([{epoch, measured_s (cumulative
    wall clock of training and averaging), mean_return, success_rate, reached}]),
    ``quality_epoch`` and ``time_to_quality_measured_s`` (of the first epoch within
    tolerance; None if none is), the final ``q``, ``seconds`` (the epochs run) and
    ``epochs_run``: all of ``params.epochs``, or with ``stop_at_quality`` up to the first
    within tolerance."""
    threads = int(threads)
    if not 1 <= threads <= max_threads():
        raise ValueError(f"threads must be in [1, {max_threads()}]; got {threads}")
    partitions = threads if partitions is None else int(partitions)
    one = LearnerParams(**{**params.as_dict(), "epochs": 1})
    _warm_up(one, records, n_states, n_actions)
    cols, part_lanes, rng = _prepared(records, one, partitions, 1)
    scalars = one.kernel_scalars()
    run = compiled(one.variant).partitions
    q_raw = _tables(one, partitions, n_states, n_actions)
    sat = np.zeros(partitions, np.int64)
    curve, elapsed, q = [], 0.0, None
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(threads)
        for epoch in range(1, params.epochs + 1):
            t0 = time.perf_counter()
            run(*cols, part_lanes, rng, q_raw, scalars, sat)
            q = raw_to_float(q_raw, params.dtype, params.frac_bits).mean(axis=0)
            elapsed += time.perf_counter() - t0
            curve.append({"epoch": epoch, "measured_s": elapsed,
                          **(evaluate(epoch - 1, q, None) or {})})
            if stop_at_quality and curve[-1].get("reached"):
                break
    finally:
        numba.set_num_threads(previous)
    first = next((e for e in curve if e.get("reached")), None)
    return {"curve": curve, "q": q, "seconds": elapsed, "threads": threads,
            "epochs_run": len(curve),
            "partitions": partitions,
            "quality_epoch": None if first is None else first["epoch"],
            "time_to_quality_measured_s": None if first is None else first["measured_s"]}
