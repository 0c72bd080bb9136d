"""The trainers' DPU set: what :class:`~pimrl.swiftrl.trainer.PimTrainer` and
:class:`~pimrl.online.trainer.OnlineTrainer` ask of their DPUs, said in the UPMEM SDK's
Python host API (the ``dpu`` package, docs/python-api.md).

:class:`DpuPackageSet` uses nothing but that API: ``DpuSet(nr_dpus=, profile=, binary=)``,
``copy`` to the DPUs (one buffer per DPU, or one for all: a broadcast) and from them (one
writable buffer per DPU), at an offset of a symbol, ``exec()`` and ``free()``. Two packages
answer it:

- pimrl's ``dpu`` (``dpu.PIMRL_SIMULATOR``), the simulator, on the ``simulator`` device.
  There the trainers also use four calls of pimrl's extension :mod:`dpu.simulator`, for
  what hardware has no notion of: ``load`` (a program object built in this process: a
  numba kernel, or a C kernel with its work counters), ``phase`` (which PrIM category
  the modelled ledger books the transfers of a block as: the gathers and broadcasts
  between rounds are inter-DPU), ``last_launch`` (the launch's work counters, which the
  simulator reports without a transfer the modelled run does not make) and ``ledger``
  (the modelled times). The results and modelled times are those of driving
  :mod:`pimrl.pim.system` directly, bit for bit.
- the UPMEM SDK's ``dpu`` on a UPMEM machine, on the ``upmem`` device. No modelled time
  exists there: each phase is timed with the host's wall clock, into the ledger's
  ``measured_s`` under the PrIM category's name (``modelled_s`` stays empty), and the work
  counters are read from the kernel's ``stats`` symbol.

:class:`SystemSetDpus` drives a set that is not in this process (a
:class:`~pimrl.pim.distributed.DaskPlacement` spreads the ranks of one
:mod:`pimrl.pim.system` set over Dask workers; the ``dpu`` package holds its DPUs in the
process that allocated them) through the same interface.
"""
from __future__ import annotations

import contextlib
import importlib
import time

import numpy as np

from pimrl.pim import cost
from pimrl.devices import DeviceError

class DpuPackageSet:
    """``n_dpus`` DPUs through a ``dpu`` package: pimrl's simulator, or the SDK's hardware.

    ``program``: on the simulator a :class:`pimrl.pim.system.DpuProgram` object; on hardware
    the path of a DPU binary built by the SDK's compiler. ``hardware``: the simulated machine
    (its preset and numbers travel as the ``profile``); hardware takes the SDK's default.
    """

    def __init__(self, dpu, n_dpus: int, program, hardware=None):
        self.dpu = dpu
        self.modelled = bool(getattr(dpu, "PIMRL_SIMULATOR", False))
        self.n_dpus = n_dpus
        try:
            if self.modelled:
                self._sim = importlib.import_module(dpu.__name__ + ".simulator")
                self.set = dpu.DpuSet(nr_dpus=n_dpus, profile=self._sim.profile(hardware))
                try:
                    self._sim.load(self.set, program)
                except BaseException:
                    self.set.free()
                    raise
                self._ledger = self._sim.ledger(self.set)
            else:
                self._sim = None
                self.set = dpu.DpuSet(nr_dpus=n_dpus, binary=str(program))
                self._ledger = cost.TimeBreakdown(modelled_s={})
        except dpu.DpuError as exc:          # no such DPUs, a program that does not load
            where = "simulator" if self.modelled else "UPMEM SDK"
            raise DeviceError(f"{n_dpus} DPUs ({where}): {exc}") from None
        if len(self.set) != n_dpus:
            self.set.free()
            raise RuntimeError(f"asked the dpu package for {n_dpus} DPUs, got {len(self.set)}")

    # ------------------------------------------------------------------ transfers
    def _rows(self, matrix: np.ndarray) -> list:
        """One host buffer per DPU, the rows of ``matrix``: on the simulator a list it moves
        in one copy (``dpu.simulator.rows``), on hardware ``list(matrix)``."""
        return self._sim.rows(matrix) if self.modelled else list(matrix)

    def push_rows(self, symbol: str, rows: np.ndarray, offset: int = 0) -> None:
        """Row ``i`` of ``rows`` (uint8, one row per DPU) into DPU ``i``'s ``symbol`` at
        ``offset``."""
        rows = np.asarray(rows)
        if not rows.flags.writeable:            # the SDK's copy takes writable buffers only
            rows = rows.copy()
        self.set.copy(symbol, self._rows(rows), offset=int(offset))   # row views: no copy

    def push_all(self, symbol: str, data: np.ndarray, offset: int = 0) -> None:
        """The same bytes into every DPU's ``symbol`` at ``offset`` (a broadcast)."""
        buf = np.ascontiguousarray(data)
        if not buf.flags.writeable:             # the SDK's copy takes writable buffers only
            buf = buf.copy()
        self.set.copy(symbol, buf.view(np.uint8).ravel(), offset=int(offset))

    def pull_rows(self, symbol: str, nbytes: int, offset: int = 0) -> np.ndarray:
        """``nbytes`` of every DPU's ``symbol`` from ``offset``: (n_dpus, nbytes) uint8."""
        out = np.empty((self.n_dpus, nbytes), dtype=np.uint8)
        self.set.copy(self._rows(out), symbol, offset=int(offset))
        return out

    def peek_rows(self, symbol: str, nbytes: int) -> np.ndarray:
        """Like :meth:`pull_rows`, for instrumentation outside the run: on the simulator the
        bytes are read without booking a transfer (through ``dpu.simulator.system_set``); on
        hardware it is a real read, timed in no phase."""
        if not self.modelled:
            return self.pull_rows(symbol, nbytes)
        inner = self._sim.system_set(self.set)
        return inner._read(inner.slots, inner.get_symbol(symbol), 0, nbytes)

    def n_ranks(self) -> int:
        """How many ranks hold the DPUs."""
        if self.modelled:
            return self._sim.system_set(self.set).nr_ranks
        return len(self.set.ranks())

    # ------------------------------------------------------------------ launches
    def run(self) -> None:
        """Run the loaded program on every DPU, synchronously."""
        if self.modelled:
            self.set.exec()
        else:
            t0 = time.perf_counter()
            self.set.exec()
            self._ledger.measure("dpu_kernel", time.perf_counter() - t0)

    def counters(self, n_counters: int) -> np.ndarray:
        """The last run's work counters per DPU, (n_dpus, n_counters) int64: the simulator
        reports them with the launch; on hardware they are read from the ``stats`` symbol
        (call it inside the phase of the gather that follows the run)."""
        if self.modelled:
            return self._sim.last_launch(self.set).counters
        return self.pull_rows("stats", 8 * n_counters).view(np.int64)

    def tasklet_counters(self):
        """The last run's counters of each tasklet, (n_dpus, tasklets, n_counters), where the
        simulated program keeps them (tasklet mode rows); else None."""
        if self.modelled:
            return self._sim.last_launch(self.set).tasklet_counters
        return None

    # ------------------------------------------------------------------ time
    @contextlib.contextmanager
    def phase(self, category: str):
        """Book the block's transfers as ``category``, one of PrIM's four: modelled on the
        simulator, measured (host wall clock) on hardware."""
        if category not in cost.CATEGORIES:
            raise ValueError(f"unknown time category {category!r}")
        if self.modelled:
            with self._sim.phase(self.set, category):
                yield
            return
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._ledger.measure(category, time.perf_counter() - t0)

    def ledger(self) -> cost.TimeBreakdown:
        """Modelled times (simulator) or measured phase times (hardware) so far."""
        return self._ledger

    def elapsed_s(self) -> float:
        """The run's PIM time so far: modelled total, or the measured phases' sum."""
        if self.modelled:
            return self._ledger.modelled_total_s
        return sum(self._ledger.measured_s.get(c, 0.0) for c in cost.CATEGORIES)

    def free(self) -> None:
        self.set.free()


class SystemSetDpus:
    """The same interface over a :class:`pimrl.pim.system.DpuSet`-shaped set (a Dask
    placement's :class:`~pimrl.pim.distributed.DistributedDpuSet`); always modelled."""

    modelled = True

    def __init__(self, system_set, program):
        self.set = system_set
        self.n_dpus = system_set.nr_dpus
        self._last = None
        try:
            system_set.load(program)
        except BaseException:
            system_set.free()
            raise

    def push_rows(self, symbol, rows, offset=0):
        self.set.scatter_to(symbol, offset, rows)

    def push_all(self, symbol, data, offset=0):
        self.set.broadcast_to(symbol, offset, data)

    def pull_rows(self, symbol, nbytes, offset=0):
        return self.set.gather_from(symbol, offset, nbytes)

    def run(self):
        self._last = self.set.launch()

    def counters(self, n_counters):
        return self._last.counters

    def tasklet_counters(self):
        return self._last.tasklet_counters

    def phase(self, category):
        return self.set.phase(category)

    def ledger(self):
        return self.set.alloc.ledger

    def elapsed_s(self):
        return self.set.alloc.ledger.modelled_total_s

    def free(self):
        self.set.free()


def check_resumable(dpus) -> None:
    """Checkpoints need the simulator's peek and poke: simulated DPUs in this process."""
    if not isinstance(dpus, DpuPackageSet) or not dpus.modelled:
        raise ValueError("--checkpoint: runs on the simulator in this process only "
                         "(--device simulator, --executor local)")


def add_tasklet_counters(total, dpus):
    """``total`` plus the last run's counters of each tasklet (None where the program keeps
    none)."""
    last = dpus.tasklet_counters() if hasattr(dpus, "tasklet_counters") else None
    if last is None:
        return total
    return last.copy() if total is None else total + last
