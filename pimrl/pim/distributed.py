"""One simulated UPMEM system spread over the workers of a Dask cluster, by whole ranks.

A system too big for one host's memory (10 servers of 2,560 DPUs: ``--hw n_ranks=400``)
keeps each rank's memories (MRAM pages, WRAM) on one worker. :class:`DistributedDpuSet` is
the host's view: the same allocation as :func:`~pimrl.pim.system.dpu_alloc` (same ranks,
same enabled slots, same slot numbers), the same SDK checks in the same order, and the same
modelled times, which it computes itself from the whole set's shape exactly as a local
:class:`~pimrl.pim.system.DpuSet` does. Each worker holds a :class:`RankShard` (a Dask
actor): a local allocation of its ranks that receives its DPUs' rows of every push, runs
launches on its DPUs with its own numba threads, and returns its rows of every gather.
Every DPU computes on its own memories only, so tables, counters and cycles are bit-identical
to a local run.

The traffic between this process and the workers is real, not modelled: its bytes and wall
time are counted in ``transfers`` (and reported as ``*_measured_s``), apart from the modelled
PIM time, which they never enter.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from pimrl.pim import cost
from pimrl.pim.errors import fail
from pimrl.pim.hardware import Hardware
from pimrl.pim.system import (
    DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS, Allocation, DpuProgram, DpuSet, LaunchResult, Machine,
    _fault_error, book_launch, choose_ranks,
)


class RankShard:
    """Worker side: whole ranks of an allocation, with their memories and loaded program.

    ``ranks`` are the machine's rank numbers and ``enabled`` the enabled flag of each of
    their DPU slots, as the host chose them. Local slot ``i`` is global slot ``first_slot + i``.
    """

    def __init__(self, hw: Hardware, ranks, enabled, first_slot: int,
                 numba_threads: int | None = None):
        machine = Machine(hw)
        ranks = np.asarray(ranks, dtype=np.int64)
        machine.rank_free[ranks] = False
        self.alloc = Allocation(machine, ranks, np.asarray(enabled, dtype=bool))
        self.set = DpuSet(self.alloc, np.flatnonzero(self.alloc.enabled), "all")
        self.first_slot = int(first_slot)
        self.numba_threads = numba_threads        # None: the worker's own

    def facts(self) -> dict:
        from pimrl.cluster import worker_facts

        return {**worker_facts(self.numba_threads), "ranks": [int(r) for r in self.alloc.ranks],
                "dpus": int(self.set.nr_dpus)}

    def load(self, program: DpuProgram) -> int:
        self.set.load(program)
        return self.set.nr_dpus

    def scatter(self, symbol: str, offset: int, data: np.ndarray) -> None:
        self.set.scatter_to(symbol, offset, data)

    def broadcast(self, symbol: str, offset: int, data: np.ndarray) -> None:
        self.set.broadcast_to(symbol, offset, data)

    def gather(self, symbol: str, offset: int, length: int) -> np.ndarray:
        return self.set.gather_from(symbol, offset, length)

    def launch(self):
        """Run the loaded program on this shard's DPUs: (cycles, counters, faults with
        global slot numbers, each tasklet's counters or None)."""
        from pimrl.cluster import _set_numba_threads

        if self.numba_threads:
            _set_numba_threads(self.numba_threads)
        program = self.set.program()
        result = program.launch(self.alloc, self.set.slots)
        faults = [(self.first_slot + int(s), t, why) for s, t, why in result.faults]
        return result.cycles, result.counters, faults, result.tasklet_counters


class _HostAllocation:
    """What the host keeps of a distributed allocation: shape, ledger and transfer phase
    (the memories are on the workers)."""

    def __init__(self, machine: Machine, ranks: np.ndarray, enabled: np.ndarray):
        self.machine, self.hw, self.ranks, self.enabled = machine, machine.hw, ranks, enabled
        self.n_slots = len(ranks) * machine.hw.dpus_per_rank
        self.ledger = cost.TimeBreakdown()
        self.phase = None
        self.freed = False
        self.program = None

    def rank_of(self, slots):
        return np.asarray(slots) // self.hw.dpus_per_rank

    def category(self, to_dpu: bool) -> str:
        return self.phase or ("cpu_dpu" if to_dpu else "dpu_cpu")


class DistributedDpuSet(DpuSet):
    """``dpu_alloc(nr_dpus)`` whose ranks live on Dask workers (see the module docstring).

    Supported: ``load``, ``scatter_to``, ``broadcast_to``/``copy_to`` (the same bytes to
    every DPU), ``gather_from``, ``launch`` (synchronous), ``phase``, ``free``: what a host
    loop that pushes, launches and gathers whole sets needs. ``transfers`` counts the bytes
    and wall time of the data moved between this process and the workers.
    """

    def __init__(self, client, nr_dpus: int, hw: Hardware, workers=None,
                 numba_threads: int | None = None):
        machine = Machine(hw)
        ranks, enabled = choose_ranks(machine, nr_dpus)
        machine.rank_free[ranks] = False
        alloc = _HostAllocation(machine, ranks, enabled)
        super().__init__(alloc, np.flatnonzero(enabled), "all")
        addresses = sorted(workers or client.scheduler_info()["workers"])
        if not addresses:
            raise ValueError("the Dask cluster has no workers")
        # Whole ranks per worker, in order: worker i holds ranks [lo_i, hi_i) of the set.
        groups = [g for g in np.array_split(np.arange(len(ranks)), len(addresses)) if len(g)]
        dpr = hw.dpus_per_rank
        self.shards, self.shard_dpus, self.workers = [], [], []
        futures = []
        for addr, g in zip(addresses, groups):
            lo, hi = int(g[0]), int(g[-1]) + 1
            futures.append(client.submit(RankShard, hw, ranks[lo:hi], enabled[lo * dpr:hi * dpr],
                                         lo * dpr, numba_threads, actor=True, workers=[addr],
                                         allow_other_workers=False, pure=False))
            self.shard_dpus.append(int(enabled[lo * dpr:hi * dpr].sum()))
            self.workers.append(addr)
        self._futures = futures
        self.shards = [f.result() for f in futures]
        self.client = client
        self.transfers = {"to_workers_bytes": 0, "from_workers_bytes": 0,
                          "transfer_measured_s": 0.0, "launch_measured_s": 0.0, "calls": 0}
        self._bounds = np.concatenate([[0], np.cumsum(self.shard_dpus)])

    # ---------------------------------------------------------------- plumbing
    def _all(self, method: str, args_of, kind: str, nbytes: int = 0):
        """Call ``method`` on every shard at once (``args_of(i)``); wait; count the time."""
        t0 = time.perf_counter()
        calls = [getattr(s, method)(*args_of(i)) for i, s in enumerate(self.shards)]
        out = [c.result() for c in calls]
        dt = time.perf_counter() - t0
        if kind == "launch":
            self.transfers["launch_measured_s"] += dt
        else:
            self.transfers["transfer_measured_s"] += dt
            self.transfers["to_workers_bytes" if kind == "to" else "from_workers_bytes"] += nbytes
        self.transfers["calls"] += len(calls)
        return out

    def worker_facts(self) -> list:
        return [s.facts().result() for s in self.shards]

    def program(self) -> DpuProgram:
        if self.alloc.program is None:
            raise fail("NO_PROGRAM_LOADED", "no program is loaded on this DPU set")
        return self.alloc.program

    def _unsupported(self, what):
        raise fail("INVALID_DPU_SET", f"{what} is not available on a DPU set spread over Dask "
                   f"workers (it supports load, scatter_to, broadcast_to, gather_from, launch)")

    # ---------------------------------------------------------------- the SDK operations
    def load(self, program: DpuProgram) -> DpuProgram:
        self._check_alive()
        if program.wram_used > self.alloc.hw.wram_bytes:
            raise fail("ELF_INVALID_FILE", f"program {program.name} needs {program.wram_used} B of "
                       f"WRAM; {self.alloc.hw.name} has {self.alloc.hw.wram_bytes} B")
        self._all("load", lambda i: (program,), "to")
        self.alloc.program = program
        return program

    def scatter_to(self, symbol, offset: int, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data).view(np.uint8).reshape(self.nr_dpus, -1)
        sym = self._resolve(symbol, offset, data.shape[1])
        b = self._bounds
        self._all("scatter", lambda i: (sym.name, offset, data[b[i]:b[i + 1]]), "to", data.nbytes)
        self._account(True, data.shape[1], what=f"push_xfer to {sym.name}")

    def broadcast_to(self, symbol, offset: int, src, flags: int = 0) -> None:
        data = self._bytes(src)
        sym = self._resolve(symbol, offset, len(data))
        self._all("broadcast", lambda i: (sym.name, offset, data), "to",
                  data.nbytes * len(self.shards))
        self._account(True, len(data), broadcast=True, what=f"broadcast {sym.name}")

    def copy_to(self, symbol, offset: int, src) -> None:
        data = self._bytes(src)
        sym = self._resolve(symbol, offset, len(data))
        self._all("broadcast", lambda i: (sym.name, offset, data), "to",
                  data.nbytes * len(self.shards))
        self._account(True, len(data), serial=self.nr_dpus == 1, broadcast=self.nr_dpus > 1,
                      what=f"copy_to {sym.name}")

    def gather_from(self, symbol, offset: int, length: int) -> np.ndarray:
        sym = self._resolve(symbol, offset, length)
        parts = self._all("gather", lambda i: (sym.name, offset, length), "from",
                          self.nr_dpus * length)
        self._account(False, length, what=f"push_xfer from {sym.name}")
        return np.concatenate(parts, axis=0)

    def launch(self, policy: int = DPU_SYNCHRONOUS) -> LaunchResult:
        """Every shard launches at once; the slowest DPU of the whole set bounds the time.
        Asynchronous launches complete before returning (faults are then reported by sync)."""
        self._check_alive()
        if policy not in (DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS):
            raise fail("INVALID_LAUNCH_POLICY", f"unknown launch policy {policy}")
        program = self.program()
        parts = self._all("launch", lambda i: (), "launch")
        cycles = np.concatenate([p[0] for p in parts])
        counters = np.concatenate([p[1] for p in parts], axis=0)
        faults = [f for p in parts for f in p[2]]
        tasklet_counters = (None if any(p[3] is None for p in parts)
                            else np.concatenate([p[3] for p in parts], axis=0))
        # Asynchronous launches complete here, so their completion wait is booked here too.
        book_launch(self.alloc, program.name, cycles, self.nr_dpus, True)
        result = LaunchResult(cycles=cycles, faults=faults, counters=counters,
                              tasklet_counters=tasklet_counters)
        if policy == DPU_ASYNCHRONOUS:
            self._pending = faults
        elif faults:
            raise _fault_error(faults)
        return result

    def sync(self) -> None:
        self._check_alive()
        faults, self._pending = getattr(self, "_pending", []), []
        if faults:
            raise _fault_error(faults)

    def free(self):
        self._check_alive()
        self.alloc.freed = True
        self.shards = []
        self._futures = []            # releasing the futures ends the actors, freeing memory

    def copy_from(self, *a, **k):
        self._unsupported("dpu_copy_from")

    def prepare_xfer(self, *a, **k):
        self._unsupported("dpu_prepare_xfer")

    def push_xfer(self, *a, **k):
        self._unsupported("dpu_push_xfer with prepared buffers")

    def dpu_sets(self):
        self._unsupported("DPU_FOREACH")

    def rank_sets(self):
        self._unsupported("DPU_RANK_FOREACH")

    def log(self):
        self._unsupported("dpu_log_read")


class DaskPlacement:
    """Allocates DPU sets over the workers of ``client`` (a PimTrainer's ``placement``)."""

    name = "dask"

    def __init__(self, client, numba_threads: int | None = None):
        from pimrl.cluster import describe_cluster

        self.client, self.numba_threads = client, numba_threads
        self.cluster = describe_cluster(client, numba_threads)   # checks the workers' pimrl
        self.last = None

    def __call__(self, nr_dpus: int, hw: Hardware) -> DistributedDpuSet:
        self.last = DistributedDpuSet(self.client, nr_dpus, hw, numba_threads=self.numba_threads)
        return self.last


@contextlib.contextmanager
def placement_for(executor: str = "local", workers: int | None = None,
                  numba_threads: int | None = None):
    """``None`` (DPU sets in this process) for ``local``; a :class:`DaskPlacement` on a
    LocalCluster or the cluster at the address for ``dask[:ADDRESS]``."""
    from pimrl.cluster import check_sizes, dask_client, parse_executor

    spec = parse_executor(executor)
    check_sizes(spec, workers, numba_threads)
    if spec.kind == "local":
        yield None
        return
    if spec.address is None and numba_threads is None:
        numba_threads = 1
    with dask_client(spec.address, workers, numba_threads) as client:
        yield DaskPlacement(client, numba_threads)
