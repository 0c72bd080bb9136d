"""The host side of a PIM training run: partition, push, launch, gather, aggregate.

``PimTrainer(...).fit(records, n_states, n_actions)`` drives a DPU set through the UPMEM
SDK's Python host API (the ``dpu`` package, by way of :mod:`pimrl.dpuset`) exactly as
a host program would, and leaves the aggregated table in ``q_`` and the times in
``timings_``: modelled on pimrl's simulator (``device="simulator"``), measured on real DPUs
(``device="upmem"``, with the SDK's ``dpu`` package).
"""
from __future__ import annotations

import time

import numpy as np

from pimrl.learners.aggregate import AGGREGATORS, float_to_raw, parse_aggregate, raw_scale
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import check_records
from pimrl.learners.rounds import RoundLoop
from pimrl.learners.variants import P_EPOCHS, P_N_RECORDS, P_SAMPLING, PARAMS_WORDS, SAMPLING
from pimrl.partition import even_bounds
from pimrl.pim.hardware import Hardware, get_hardware
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME
from pimrl.registry import Registry
from pimrl.rlkernel import costs as kcost
from pimrl.rlkernel.layout import RECORD_BYTES
from pimrl.rlkernel.program import RlProgram
from pimrl.rng import lane_seeds
from pimrl.devices import DEVICES, dpu_package
from pimrl.dpuset import DpuPackageSet, SystemSetDpus, add_tasklet_counters, check_resumable
from pimrl.swiftrl.records import check_dpu_records, dpu_records, partition_records
from pimrl.swiftrl.windows import WindowStream, check_window, plan_windows


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


class AveragingRounds:
    """SwiftRL's schemes as rounds of :class:`~pimrl.learners.rounds.RoundLoop` (``mean``,
    ``weighted``, ``sync:R``, ``sync:R:weighted``): in each round the DPUs learn their
    partitions for the round's epochs (window by window where ``windows`` is set), the host
    gathers their tables (and visit counts), aggregates them and, between rounds, broadcasts
    the aggregate back. After the rounds: ``q`` (the aggregate), ``raw`` (the DPUs' last
    tables), ``counters`` and ``tasklet_counters`` (summed over the launches)."""

    name = "mean"        # the checkpoints' tag of every averaging scheme

    def __init__(self, dpus, spec, p, params, windows, stream, n_states, n_actions):
        self.dpus, self.spec, self.p, self.params = dpus, spec, p, params
        self.windows, self.stream = windows, stream
        self.shape = (len(params), n_states, n_actions)
        self.round_epochs = np.diff(even_bounds(p.epochs, spec.rounds))
        self.counters = np.zeros((len(params), len(kcost.COUNTERS)), dtype=np.int64)
        self.tasklet_counters = None
        self.visits_before = 0
        self.q = self.raw = None

    def _add_counters(self):
        self.counters += self.dpus.counters(len(kcost.COUNTERS))
        self.tasklet_counters = add_tasklet_counters(self.tasklet_counters, self.dpus)

    def run_round(self, r: int, last: bool) -> float:
        dpus, p, params, windows = self.dpus, self.p, self.params, self.windows
        n, nq = len(params), self.shape[1] * self.shape[2]
        epochs = self.round_epochs[r]
        if windows is None:
            params[:, P_EPOCHS] = epochs
            with dpus.phase("cpu_dpu" if r == 0 else "inter_dpu"):
                dpus.push_rows("params", params.view(np.uint8).reshape(n, -1))
            dpus.run()
        else:           # each epoch window by window; the last run's counters below
            for k in range(epochs * windows.n_windows):
                if k:
                    with dpus.phase("dpu_cpu" if last else "inter_dpu"):
                        self._add_counters()
                self.stream.push(k % windows.n_windows)
                dpus.run()
        with dpus.phase("dpu_cpu" if last else "inter_dpu"):
            self._add_counters()
            raw_dtype = np.int32 if p.dtype == "int32" else np.float32
            self.raw = dpus.pull_rows("q_table", 4 * nq).view(raw_dtype).reshape(self.shape)
            visits = (dpus.pull_rows("visits", 4 * nq).view(np.uint32).reshape(self.shape)
                      if self.spec.needs_visits else None)
        t0 = time.perf_counter()
        if visits is not None:          # weight by this round's updates only
            visits, self.visits_before = visits - self.visits_before, visits
        self.q = AGGREGATORS[self.spec.name](self.raw, raw_scale(p.dtype, p.frac_bits), visits)
        host_s = time.perf_counter() - t0
        if not last:
            with dpus.phase("inter_dpu"):
                dpus.push_all("q_table", float_to_raw(self.q, p.dtype, p.frac_bits))
        return host_s

    def progress(self, r: int) -> dict:
        return {"epochs_done": int(self.round_epochs[: r + 1].sum())}

    def elapsed_s(self, last: bool) -> float:
        return self.dpus.elapsed_s()

    def table(self, r: int, last: bool):
        return self.q

    def snapshot(self, r: int, last: bool) -> dict:
        from pimrl import checkpoint as ckpt

        return ckpt.round_arrays(self.dpus, counters=self.counters,
                                 tasklet_counters=self.tasklet_counters,
                                 visits_before=self.visits_before,
                                 **(dict(q=self.q, tables=self.raw) if last else {}))

    def resume(self, meta: dict, arrays: dict) -> int:
        from pimrl import checkpoint as ckpt

        start, self.counters, self.tasklet_counters = ckpt.resume_dpus(
            self.dpus, {"meta": meta, "arrays": arrays}, self.name, len(self.round_epochs))
        if "visits_before" in arrays:
            self.visits_before = arrays["visits_before"].copy()
        if start == len(self.round_epochs):      # a finished run
            self.q, self.raw = arrays["q"].copy(), arrays["tables"].copy()
        return start


class PimTrainer:
    """Train on ``n_dpus`` DPUs: one Q-table per DPU, aggregated on the host.

    Parameters are stored as given; ``fit`` does the work and sets ``q_`` (float64
    aggregate), ``timings_`` (:class:`~pimrl.pim.cost.TimeBreakdown`), ``counters_`` (per-DPU
    work counters summed over launches), ``saturations_``, ``n_updates_`` and, with
    ``keep_dpu_tables=True``, ``dpu_tables_`` (raw per-DPU tables after the last round).
    ``kernel`` names the DPU program (a key of ``KERNELS``) or is a factory with their
    signature. ``block_bytes``: the kernel's DMA block; None takes 2,048 B, or the largest
    block whose buffers fit WRAM beside the kernel's globals (``block_`` says which). ``device`` (a key of :data:`~pimrl.devices.DEVICES`) says where the DPUs
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
                 device: str = "simulator", own_layout: str = "auto", checkpoint=None,
                 mram_window: int | None = None):
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
        self.on_round = on_round     # instrumentation (pimrl.learners.aggregate.OnRound)
        self.device = device
        self.own_layout = own_layout  # own:R: "auto", "global" or "local" (swiftrl/owned.py)
        # a pimrl.checkpoint.Checkpoint: written at round boundaries, resumed from
        self.checkpoint = checkpoint
        # MRAM bytes of a window of records (swiftrl/windows.py); None: windows only where a
        # partition exceeds the MRAM
        self.mram_window = mram_window

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
            if self.mram_window is not None:
                check_window(self.mram_window, self.tasklets, 1 << 62, "own")
            if not simulated:
                raise ValueError(f"{self.aggregate}: state-owned learning runs on the simulator "
                                 "only (--device simulator)")
            from pimrl.swiftrl.owned import fit_owned

            own = fit_owned(self, self._kernel_factory(), records, n_states, n_actions,
                            spec.rounds)
            self.q_, self.timings_, self.rounds_ = own.q, own.timings, own.history
            self.plan_, self.own_layout_, self.program_states_ = (own.plan, own.layout,
                                                                  own.program_states)
            return self._set_learned(own.counters, own.plan.bounds, own.program, own.hw,
                                     own.tables, tasklet_counters=own.tasklet_counters)
        hw = get_hardware(self.hardware) if isinstance(self.hardware, str) else self.hardware
        if simulated and self.n_dpus > hw.n_dpus:
            raise ValueError(too_many_dpus(self.n_dpus, hw))
        # The dpu package first: a wrong one is reported before any build.
        dpu = dpu_package(self.device) if self.placement is None else None
        block = self.block_for(n_states, n_actions, hw, spec.needs_visits)
        longest = int(np.diff(even_bounds(len(records), self.n_dpus)).max())
        streams = self.mram_window is not None or longest * RECORD_BYTES > hw.mram_bytes
        # STR in windows: the host gathers each lane's window in stride order and the DPU
        # reads it in sequence (swiftrl/windows.py)
        dpu_sampling = "seq" if streams and p.sampling == "str" else p.sampling
        if not simulated:       # real DPUs: the C kernel, built by the SDK's compiler
            from pimrl.rlkernel.cprogram import build_kernel_with_compiler

            program = build_kernel_with_compiler(n_states, n_actions, self.tasklets, p.algo,
                                                 p.dtype, dpu_sampling, block,
                                                 count_visits=spec.needs_visits,
                                                 tasklet_mode=p.tasklet_mode)
        else:
            program = self._kernel_factory()(n_states, n_actions, self.tasklets, p.algo, p.dtype, dpu_sampling,
                              block, hw, count_visits=spec.needs_visits,
                              tasklet_mode=p.tasklet_mode)
        ordered, bounds = partition_records(records, self.n_dpus, self.partition, self.shuffle_seed)
        # windows outside tasklet mode rows read the records in place (a dataset file's
        # mapping, a window at a time); else the host's buffers: a fresh, writable matrix
        # (the SDK's copy takes writable buffers only), built in one pass from the records
        in_place = streams and p.tasklet_mode != "rows"
        matrix = lane_words = None
        if not in_place:
            matrix, lane_words = dpu_records(ordered, bounds, self.tasklets, n_states,
                                             n_actions, p)
            del ordered
        windows = None
        if streams:
            windows = plan_windows(np.diff(bounds), self.tasklets, self.mram_window,
                                   hw.mram_bytes, RECORD_BYTES,
                                   None if lane_words is None else lane_words["lane_bounds"],
                                   p.sampling, p.stride)
        self.windows_ = windows

        n = self.n_dpus
        stream = None
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
                if windows is None:
                    dpus.push_rows(DPU_MRAM_HEAP_POINTER_NAME, matrix.view(np.uint8).reshape(n, -1))
                    matrix = None       # pushed: the DPUs' copy is the one the run needs
                lanes = np.arange(n * self.tasklets).reshape(n, self.tasklets)
                dpus.push_rows("rng_state", lane_seeds(p.seed, lanes.ravel()).reshape(n, -1).view(np.uint8))
                if lane_words is not None:
                    for symbol, words in lane_words.items():
                        dpus.push_rows(symbol, words.view(np.uint8).reshape(n, -1))
            params = np.zeros((n, PARAMS_WORDS), dtype=np.int64)
            scalars = p.kernel_scalars()
            params[:, : len(scalars)] = scalars
            params[:, P_N_RECORDS] = np.diff(bounds)
            if windows is not None:
                params[:, P_SAMPLING] = SAMPLING.code(dpu_sampling)
                if in_place:
                    stream = WindowStream(windows, ordered, bounds[:-1], None, dpus, params,
                                          float(1 << p.frac_bits) if p.dtype == "int32" else 0.0)
                    del ordered
                else:
                    stream = WindowStream(windows, matrix, np.arange(n) * matrix.shape[1],
                                          lane_words, dpus, params)
                matrix = None

            rounds = AveragingRounds(dpus, spec, p, params, windows, stream, n_states,
                                     n_actions)
            if self.checkpoint is not None:
                check_resumable(dpus)
            loop = RoundLoop(spec.rounds, dpus.ledger,
                             "modelled_s" if dpus.modelled else "measured_s", self.on_round,
                             self.checkpoint)
            self.rounds_ = loop.history     # filled as the rounds end (and on a resume)
            loop.run(rounds)
        finally:
            if stream is not None:
                stream.close()
            dpus.free()

        self.q_ = rounds.q
        self.timings_ = dpus.ledger()
        self.timings_.measure("host_aggregation", loop.host_s)
        self.timings_.measure("simulation_wall" if dpus.modelled else "run_wall",
                              time.perf_counter() - t_start)
        transfers = getattr(dpus.set, "transfers", None) if isinstance(dpus, SystemSetDpus) else None
        if transfers is not None:        # a distributed set: its traffic with the workers
            self.worker_transfers_ = dict(transfers, workers=list(dpus.set.workers),
                                          dpus_per_worker=list(dpus.set.shard_dpus))
            self.timings_.measure("worker_transfer", transfers["transfer_measured_s"])
            self.timings_.measure("worker_launch", transfers["launch_measured_s"])
        return self._set_learned(rounds.counters, bounds, program, hw, rounds.raw, fresh=True,
                                 tasklet_counters=rounds.tasklet_counters)

    def _kernel_factory(self):
        """The DPU program factory ``kernel`` names (a key of :data:`KERNELS`), or ``kernel``
        itself where it is one."""
        if callable(self.kernel):
            return self.kernel
        if self.kernel in KERNELS:
            return KERNELS[self.kernel]
        raise ValueError(f"unknown kernel {self.kernel!r}; use {' or '.join(KERNELS)}")

    def block_for(self, n_states, n_actions, hw, count_visits, bootstrap="table") -> int:
        """The DMA block of this run (sets ``block_``): ``block_bytes``, or when None the
        largest that fits (:func:`pimrl.rlkernel.layout.fitting_block`)."""
        from pimrl.learners.variants import Variant
        from pimrl.rlkernel.layout import fitting_block

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
        self.report_ = self._report()
        return self

    def _report(self) -> dict:
        """The run's report (``report_``, the contract of :mod:`pimrl.backends`): its set-up,
        the modelled (simulator) or measured (real DPUs) time of every phase, and what it
        streamed or laid out where that applies."""
        p = self.params
        kernel = (self.kernel if isinstance(self.kernel, str)
                  else getattr(self.kernel, "__name__", "custom"))
        run = {"dpus": self.n_dpus, "tasklets": self.tasklets, "tasklet_mode": p.tasklet_mode,
               "block_bytes": self.block_,
               "conflicts": (self.conflicts_ if p.tasklet_mode == "unlocked"
                             and kernel == "numba" else None),
               "aggregate": self.aggregate, "kernel": kernel, "device": self.device,
               "hardware": ("UPMEM (real DPUs)" if self.device == "upmem"
                            else self.hardware_.name),
               **self.timings_.as_dict(),
               "saturations": self.saturations_, "n_updates": self.n_updates_,
               "max_partition": int(np.diff(self.bounds_).max())}
        if hasattr(self, "worker_transfers_"):
            run["worker_transfers"] = self.worker_transfers_
        if hasattr(self, "own_layout_"):      # own:R: whole table or each DPU's share
            run.update(own_layout=self.own_layout_, program_states=self.program_states_)
        if getattr(self, "windows_", None) is not None:    # records streamed in windows
            run["windows"] = self.windows_.as_dict()
        return run
