"""The host side of online runs on simulated DPUs.

:class:`OnlineTrainer` pushes the environment tables (a broadcast when every DPU steps the
same environment, one table per DPU for independent agents), the parameters and the lanes'
streams, then runs rounds: launch (each DPU takes its share of the round's environment
steps), gather the Q-tables, aggregate them on the host, evaluate the aggregate exactly, and
broadcast it back for the next round. No dataset is pushed. With ``agents="independent"``
every DPU is its own agent (its own environment and/or hyperparameters) and nothing is
aggregated: the result is one table per DPU.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from pimrl.envs.core import TabularEnv
from pimrl.learners.variants import OP_STEPS
from pimrl.online import kernels
from pimrl.online.envtable import dpu_env
from pimrl.online.params import OnlineParams
from pimrl.partition import even_bounds
from pimrl.learners.aggregate import AGGREGATORS, float_to_raw, parse_aggregate, raw_scale
from pimrl.learners.rounds import RoundLoop
from pimrl.pim.hardware import Hardware, get_hardware
from pimrl.online.program import OnlineProgram
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME
from pimrl.registry import Registry
from pimrl.rng import lane_seed, lane_seeds


def _c_kernel(*args, **kwargs):
    from pimrl.online.cprogram import online_c_program   # needs a C compiler: imported on demand

    return online_c_program(*args, **kwargs)


#: The DPU programs that run the online kernel: the numba one built into the simulator, or
#: kernels/online.c run by the DPU runtime. Both take (variant, S, A, K, M, tasklets,
#: hardware, count_visits=, force_mram=).
ONLINE_KERNELS = Registry("online DPU programs")
ONLINE_KERNELS.add("numba", OnlineProgram, "the online kernel built into the simulator (numba)")
ONLINE_KERNELS.add("c", _c_kernel, "kernels/online.c, run by pimrl's DPU runtime (needs a C "
                   "compiler)")


def _lane_rng(params_per_dpu, tasklets):
    """The lanes' initial streams: lane t of DPU d is lane ``d * T + t`` under its DPU's seed."""
    seeds = [p.seed for p in params_per_dpu]
    n = len(seeds)
    if len(set(seeds)) == 1:
        return lane_seeds(seeds[0], np.arange(n * tasklets)).reshape(n, tasklets)
    return np.array([[lane_seed(seeds[d], d * tasklets + t) for t in range(tasklets)]
                     for d in range(n)], dtype=np.uint32)


def online_aggregate(aggregate: str, agents: str = "shared"):
    """The :class:`~pimrl.learners.aggregate.AggregateSpec` of an online run, checked before
    any work: shared agents take ``mean``, ``weighted``, ``sync:R`` or ``sync:R:weighted``;
    independent agents are not aggregated and take none."""
    spec = parse_aggregate(aggregate)
    if agents == "independent" and aggregate != "mean":
        raise ValueError(f"--agents independent: each DPU is its own agent and nothing is "
                         f"aggregated; drop --aggregate {aggregate}")
    if spec.name not in AGGREGATORS:
        # own:R splits a dataset's states over the DPUs; online DPUs step whole environments
        raise ValueError(f"--aggregate {aggregate}: state-owned learning partitions a dataset "
                         f"by state (docs/state-owned.md); --online takes mean, weighted, "
                         f"sync:R or sync:R:weighted")
    return spec


class OnlineRounds:
    """Online learning as rounds of :class:`~pimrl.learners.rounds.RoundLoop`: in each round
    every DPU's lanes step their environment copies for the round's steps, learning as they
    go; the host gathers the tables (and visit counts) and, for shared agents, aggregates
    them and broadcasts the aggregate back between rounds (independent agents: each DPU's
    table, scaled to float64). After the rounds: ``q``, ``raw`` (the DPUs' last tables) and
    ``counters`` (summed over the launches). ``heap``: the MRAM heap ranges a checkpoint
    keeps (:meth:`OnlineTrainer._heap_ranges`)."""

    def __init__(self, dpus, layout, words, spec, p0, steps: int, agents: str, heap: dict):
        self.dpus, self.layout, self.words, self.spec, self.p0 = dpus, layout, words, spec, p0
        self.name = f"online-{agents}"
        self.independent = agents == "independent"
        self.heap = heap
        self.round_steps = np.diff(even_bounds(steps, spec.rounds))
        self.counters = np.zeros((len(words), len(kernels.ONLINE_COUNTERS)), dtype=np.int64)
        self.visits_before = 0
        self.done = 0
        self.q = self.raw = None

    def run_round(self, r: int, last: bool) -> float:
        dpus, L, p0, words, host_s = self.dpus, self.layout, self.p0, self.words, 0.0
        n, k = len(words), self.round_steps[r]
        words[:, OP_STEPS] = k
        with dpus.phase("cpu_dpu" if r == 0 else "inter_dpu"):
            dpus.push_rows("params", words.view(np.uint8).reshape(n, -1))
        dpus.run()
        self.done += int(k)
        raw_dtype = np.int32 if p0.dtype == "int32" else np.float32
        with dpus.phase("dpu_cpu" if last else "inter_dpu"):
            # on real DPUs a read of the kernel's stats, booked with the gather
            self.counters += dpus.counters(len(kernels.ONLINE_COUNTERS))
            self.raw = OnlineTrainer._gather_q(dpus, L, raw_dtype)
            visits = OnlineTrainer._gather_visits(dpus, L) if self.spec.needs_visits else None
        if self.independent:
            self.q = self.raw.astype(np.float64) * raw_scale(p0.dtype, p0.frac_bits)
            return host_s
        t0 = time.perf_counter()
        if visits is not None:
            visits, self.visits_before = visits - self.visits_before, visits
        self.q = AGGREGATORS[self.spec.name](self.raw, raw_scale(p0.dtype, p0.frac_bits), visits)
        host_s += time.perf_counter() - t0
        if not last:
            with dpus.phase("inter_dpu"):
                OnlineTrainer._broadcast_q(dpus, L, float_to_raw(self.q, p0.dtype, p0.frac_bits))
        return host_s

    def progress(self, r: int) -> dict:
        return {"steps_per_dpu": self.done, "env_steps": self.done * len(self.words)}

    def elapsed_s(self, last: bool) -> float:
        return self.dpus.elapsed_s()

    def table(self, r: int, last: bool):
        return self.q

    def snapshot(self, r: int, last: bool) -> dict:
        from pimrl import checkpoint as ckpt

        return ckpt.round_arrays(self.dpus, self.heap, counters=self.counters,
                                 visits_before=self.visits_before,
                                 **(dict(q=self.q, raw=self.raw) if last else {}))

    def resume(self, meta: dict, arrays: dict) -> int:
        from pimrl import checkpoint as ckpt

        ckpt.check_scheme(meta, self.name, len(self.round_steps))
        ckpt.poke_dpus(self.dpus, arrays, self.heap)
        ckpt.restore_ledger(self.dpus.ledger(), meta)
        start = int(meta["round"])
        self.counters = arrays["counters"].copy()
        if "visits_before" in arrays:
            self.visits_before = arrays["visits_before"].copy()
        self.done = int(self.round_steps[:start].sum())
        if start == len(self.round_steps):       # a finished run
            self.q, self.raw = arrays["q"].copy(), arrays["raw"].copy()
        return start


class OnlineTrainer:
    """Online learning on ``n_dpus`` simulated DPUs.

    ``fit(envs, steps)``: ``envs`` one :class:`TabularEnv` (every DPU steps it) or one per
    DPU (``agents="independent"``); ``steps`` environment steps per DPU in all, split evenly
    over the rounds of ``aggregate`` (``mean`` | ``weighted`` | ``sync:R`` |
    ``sync:R:weighted``). ``params``: one :class:`OnlineParams`, or one per DPU (a
    hyperparameter grid; independent agents only). ``on_round(round, q, ledger)`` is called
    after each round (:data:`pimrl.learners.aggregate.OnRound`): ``q`` the aggregate as
    float64, or each DPU's table for independent agents.

    After ``fit``: ``q_`` (float64 aggregate, or (n_dpus, S, A) for independent agents),
    ``timings_`` (the ledger), ``counters_`` (summed over launches), ``rounds_`` (per round:
    steps so far, modelled seconds so far, and what ``on_round`` returned).

    ``checkpoint`` (a :class:`~pimrl.checkpoint.Checkpoint`): written after each
    round's broadcast (its every-N rule, the end, a signal), holding the DPUs' globals (the
    lanes' environment states, episode counters and streams, the tables in WRAM), the
    tables and visit counts the MRAM heap holds, the counters, the ledger and the rounds so
    far; with a saved state, the fit goes on from it and ends as an uninterrupted one would,
    bit for bit (``on_round`` is called for the remaining rounds only).

    ``placement(n_dpus, hw)`` allocates the DPU set elsewhere: a
    :class:`~pimrl.pim.distributed.DaskPlacement` spreads its ranks over Dask workers, with
    the same tables and modelled times; ``worker_transfers_`` then gives the bytes and
    measured wall time of the traffic with the workers (never a PIM time).

    ``device="upmem"`` runs ``kernels/online.c`` (``kernel="c"``), built by the UPMEM SDK's
    compiler, on real DPUs through the SDK's ``dpu`` package (:mod:`pimrl.online.device`):
    ``timings_.measured_s`` holds each phase's host wall clock, nothing is modelled, and the
    rounds carry ``measured_s`` where the simulator's carry ``modelled_s``.
    """

    def __init__(self, params, n_dpus: int = 64, tasklets: int = 16, aggregate: str = "mean",
                 agents: str = "shared", hardware: Hardware | str = "upmem-2556",
                 kernel="numba", force_mram: bool = False, checkpoint=None, placement=None,
                 device: str = "simulator", on_round=None):
        self.params = params
        self.n_dpus = n_dpus
        self.tasklets = tasklets
        self.aggregate = aggregate
        self.agents = agents
        self.hardware = hardware
        self.kernel = kernel
        self.force_mram = force_mram
        # a pimrl.checkpoint.Checkpoint: written at round boundaries, resumed from
        self.checkpoint = checkpoint
        # placement(n_dpus, hw): a DPU set elsewhere (pimrl.pim.distributed.DaskPlacement)
        self.placement = placement
        self.device = device        # a key of pimrl.devices.DEVICES
        self.on_round = on_round    # instrumentation (pimrl.learners.aggregate.OnRound)

    def fit(self, envs, steps: int) -> "OnlineTrainer":
        t_start = time.perf_counter()
        n = self.n_dpus
        if self.agents not in ("shared", "independent"):
            raise ValueError(f"agents must be shared or independent; got {self.agents!r}")
        independent = self.agents == "independent"
        if n < 1:
            raise ValueError(f"--dpus must be at least 1; got {n}")
        if int(steps) != steps or steps < 1:
            raise ValueError(f"--steps must be a positive integer; got {steps!r}")
        envs = [envs] if isinstance(envs, TabularEnv) else list(envs)
        if len(envs) not in (1, n):
            raise ValueError(f"{len(envs)} environments for {n} DPUs: give one, or one per DPU")
        if len(envs) > 1 and not independent:
            raise ValueError("one environment per DPU needs --agents independent")
        plist = [self.params] * n if isinstance(self.params, OnlineParams) else list(self.params)
        if len(plist) != n:
            raise ValueError(f"{len(plist)} parameter sets for {n} DPUs")
        if len(set(plist)) > 1 and not independent:
            raise ValueError("per-DPU hyperparameters need --agents independent")
        p0 = plist[0]
        if any((p.algo, p.dtype, p.frac_bits) != (p0.algo, p0.dtype, p0.frac_bits) for p in plist):
            raise ValueError("every DPU runs one kernel: algo, dtype and frac_bits must agree")
        spec = online_aggregate(self.aggregate, self.agents)
        if int(steps) < spec.rounds:
            raise ValueError(f"--aggregate {self.aggregate}: {spec.rounds} rounds need at least "
                             f"as many steps per DPU; got --steps {steps}")
        hw = get_hardware(self.hardware) if isinstance(self.hardware, str) else self.hardware
        if n > hw.n_dpus:
            raise ValueError(f"--dpus {n}: {hw.name} has {hw.n_dpus} functional DPUs")
        denvs = [dpu_env(e) for e in envs]
        shape = denvs[0].shape
        for e in denvs:
            if e.shape != shape:
                raise ValueError(f"environments of one run must have equal tables: {e.env_id} "
                                 f"has {e.shape}, {denvs[0].env_id} has {shape}")
        S, A, K = shape
        M = max(e.n_start for e in denvs)
        from pimrl.devices import DEVICES

        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; use {' or '.join(DEVICES)}")
        real = self.device != "simulator"
        if real and (self.kernel != "c" or self.placement is not None
                     or self.checkpoint is not None):
            raise ValueError(f"--device {self.device} runs kernels/online.c (--kernel c) on this "
                             "machine's DPUs: no Dask placement, no checkpoint")
        if self.placement is not None and self.kernel != "numba":
            raise ValueError(f"--kernel {self.kernel}: a DPU set on Dask workers runs the numba "
                             "kernel only")
        if self.placement is not None and self.checkpoint is not None:
            raise ValueError("--checkpoint: runs on the simulator in this process only "
                             "(--executor local)")
        from pimrl.devices import dpu_package
        from pimrl.dpuset import DpuPackageSet, SystemSetDpus

        # the dpu package first: a wrong one is reported before any build
        dpu = dpu_package(self.device) if self.placement is None else None
        if real:        # kernels/online.c, built by the SDK's compiler
            from pimrl.online.device import build_online_with_compiler
            from pimrl.online.program import online_layout

            layout = online_layout(S, A, K, M, self.tasklets, hw, spec.needs_visits,
                                   self.force_mram)
            binary = build_online_with_compiler(p0.variant, layout)
            program = SimpleNamespace(layout=layout, path=binary, name=f"{p0.variant.name}-upmem")
        else:
            factory = ONLINE_KERNELS.get(self.kernel, self.kernel)
            if not callable(factory):
                raise ValueError(f"unknown kernel {self.kernel!r}; use "
                                 f"{' or '.join(ONLINE_KERNELS)}")
            program = factory(p0.variant, S, A, K, M, self.tasklets, hw,
                              count_visits=spec.needs_visits, force_mram=self.force_mram)
        if self.placement is not None:
            dpus = SystemSetDpus(self.placement(n, hw), program)
        else:
            dpus = DpuPackageSet(dpu, n, program.path if real else program, hw)
        L = program.layout
        try:
            with dpus.phase("cpu_dpu"):
                self._push_env(dpus, denvs, L, p0)
                if len(set(plist)) == 1 and len(denvs) == 1:
                    words = np.tile(p0.words(denvs[0].max_episode_steps, denvs[0].n_start), (n, 1))
                else:                                     # per-DPU maps or hyperparameters
                    own = [denvs[d] if len(denvs) > 1 else denvs[0] for d in range(n)]
                    words = np.stack([p.words(e.max_episode_steps, e.n_start)
                                      for p, e in zip(plist, own)])
                dpus.push_rows("rng_state", _lane_rng(plist, self.tasklets).view(np.uint8).reshape(n, -1))
                dpus.push_all("lanes", kernels.new_lanes(1, self.tasklets).view(np.uint8).ravel())
                if not L.q_in_wram:                       # a zero table, rows padded to 8 B
                    dpus.push_all(DPU_MRAM_HEAP_POINTER_NAME,
                                  np.zeros(S * L.row_bytes, dtype=np.uint8), L.q_mram)
                if spec.needs_visits and L.visits_mram is not None:
                    dpus.push_all(DPU_MRAM_HEAP_POINTER_NAME, np.zeros(4 * S * A, dtype=np.uint8),
                                  L.visits_mram)
            scheme = OnlineRounds(dpus, L, words, spec, p0, int(steps), self.agents,
                                  self._heap_ranges(L, spec.needs_visits))
            loop = RoundLoop(spec.rounds, dpus.ledger,
                             "measured_s" if real else "modelled_s", self.on_round,
                             self.checkpoint)
            loop.run(scheme)
        finally:
            dpus.free()
        self.q_ = scheme.q
        self.raw_ = scheme.raw
        self.timings_ = dpus.ledger()
        self.timings_.measure("host_aggregation", loop.host_s)
        self.timings_.measure("host_evaluation", loop.eval_s)
        self.timings_.measure("run_wall" if real else "simulation_wall",
                              time.perf_counter() - t_start)
        counters = scheme.counters
        self.counters_ = counters
        self.rounds_ = loop.history
        self.program_ = program
        self.layout_ = L
        self.hardware_ = hw
        transfers = getattr(dpus.set, "transfers", None) if self.placement is not None else None
        if transfers is not None:        # a distributed set: its traffic with the workers
            self.worker_transfers_ = dict(transfers, workers=list(dpus.set.workers),
                                          dpus_per_worker=list(dpus.set.shard_dpus))
            self.timings_.measure("worker_transfer", transfers["transfer_measured_s"])
            self.timings_.measure("worker_launch", transfers["launch_measured_s"])
        self.env_steps_ = int(counters[:, kernels.OC_STEPS].sum())
        self.saturations_ = int(counters[:, kernels.OC_SAT].sum())
        return self

    # -- transfers ---------------------------------------------------------------------------
    @staticmethod
    def _heap_ranges(L, visits: bool) -> dict:
        """{name: (offset, size)} of the MRAM heap a checkpoint keeps: the Q-table and the
        visit counts where the layout puts them in MRAM (the environment tables are pushed
        again)."""
        out = {}
        if not L.q_in_wram:
            out["q_table"] = (L.q_mram, L.n_states * L.row_bytes)
        if visits and L.visits_mram is not None:
            out["visits"] = (L.visits_mram, 4 * L.n_states * L.n_actions)
        return out

    @staticmethod
    def _push_env(dpus, denvs, L, p):
        """The outcome and start tables: one broadcast when shared, else one row per DPU."""
        recs = [e.outcome_records(p.dtype, p.frac_bits).view(np.uint8) for e in denvs]
        starts = []
        for e in denvs:
            s = e.start_records()
            pad = np.repeat(s[-1:], L.n_start - len(s))
            starts.append(np.concatenate([s, pad]).view(np.uint8))
        where = (DPU_MRAM_HEAP_POINTER_NAME, L.env_mram) if not L.env_in_wram else ("env_table", 0)
        if len(denvs) == 1:
            dpus.push_all(where[0], recs[0], where[1])
            dpus.push_all("start_table", starts[0])
        else:
            dpus.push_rows(where[0], np.stack(recs), where[1])
            dpus.push_rows("start_table", np.stack(starts))

    @staticmethod
    def _gather_q(dpus, L, raw_dtype):
        n, S, A = dpus.n_dpus, L.n_states, L.n_actions
        if L.q_in_wram:
            return dpus.pull_rows("q_table", 4 * S * A).view(raw_dtype).reshape(n, S, A)
        rows = dpus.pull_rows(DPU_MRAM_HEAP_POINTER_NAME, S * L.row_bytes, L.q_mram)
        rows = rows.reshape(n, S, L.row_bytes)[:, :, :4 * A]
        return np.ascontiguousarray(rows).view(raw_dtype).reshape(n, S, A)

    @staticmethod
    def _gather_visits(dpus, L):
        n, S, A = dpus.n_dpus, L.n_states, L.n_actions
        if L.visits_mram is None:
            return dpus.pull_rows("visits", 4 * S * A).view(np.uint32).reshape(n, S, A).astype(np.int64)
        return dpus.pull_rows(DPU_MRAM_HEAP_POINTER_NAME, 4 * S * A, L.visits_mram).view(
            np.uint32).reshape(n, S, A).astype(np.int64)

    @staticmethod
    def _broadcast_q(dpus, L, raw):
        S, A = L.n_states, L.n_actions
        if L.q_in_wram:
            dpus.push_all("q_table", raw)
        else:
            rows = np.zeros((S, L.row_bytes), dtype=np.uint8)
            rows[:, :4 * A] = np.ascontiguousarray(raw).view(np.uint8).reshape(S, 4 * A)
            dpus.push_all(DPU_MRAM_HEAP_POINTER_NAME, rows.ravel(), L.q_mram)
