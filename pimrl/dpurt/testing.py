"""Unit-testing your own DPU kernels: build, load on N simulated DPUs, write symbols, launch,
read symbols and the log.

    from pimrl.dpurt.testing import DpuSim

    def test_my_kernel(tmp_path):
        with DpuSim("dpu/task.c", nr_dpus=4, nr_tasklets=8, defines={"BLOCK": 256},
                    include_dirs=["support"]) as sim:
            sim.write("n_elems", np.uint32(1000))                     # every DPU
            sim.write_each(DPU_MRAM_HEAP_POINTER_NAME, data_per_dpu)  # one row per DPU
            sim.launch()                                              # DpuError on a fault
            assert sim.read("sum_out", np.uint64, dpu=2)[0] == expected
            print(sim.log(0), sim.cycles)

or with the pytest fixture (add ``pytest_plugins = ["pimrl.dpurt.testing"]`` to your
``conftest.py``, or import ``dpu_sim`` from here into it)::

    def test_my_kernel(dpu_sim):
        sim = dpu_sim("dpu/task.c", nr_dpus=2, nr_tasklets=4)
        ...

The fixture builds into the test's temporary folder, frees the DPUs afterwards and skips
the test (saying why) on a machine without a C compiler. A fault raises
:class:`pimrl.pim.errors.DpuError` (``code`` ``DPU_ERR_DPU_FAULT``, message naming the DPU,
the tasklet and the reason).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from pimrl.dpurt.cc import build, have_compiler
from pimrl.dpurt.program import DpuRtProgram, load_program
from pimrl.pim.hardware import Hardware, get_hardware
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, LaunchResult, Machine, dpu_alloc

__all__ = ["DpuSim", "dpu_sim", "DPU_MRAM_HEAP_POINTER_NAME"]


class DpuSim:
    """A DPU program (sources to build, or a built file) loaded on ``nr_dpus`` simulated DPUs.

    ``source``: a C file (or list of them) to build with ``nr_tasklets``, ``defines``,
    ``include_dirs``, ``opt``; or ``program=`` a file already built by
    ``dpu-upmem-dpurte-clang``. ``hardware``: a preset name or a :class:`Hardware`.
    """

    _count = 0

    def __init__(self, source=None, nr_dpus: int = 1, nr_tasklets: int | None = None,
                 defines: dict | None = None, include_dirs=(), opt: str = "-O2",
                 program=None, hardware: str | Hardware = "upmem-2556", build_dir=None,
                 workers: int | None = None):
        self.hw = get_hardware(hardware) if isinstance(hardware, str) else hardware
        self._tmp = None
        if program is None:
            if source is None:
                raise ValueError("give source files to build or program= a built file")
            if build_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="pimrl-dpusim-")
                build_dir = self._tmp.name
            srcs = [source] if isinstance(source, (str, Path)) else list(source)
            DpuSim._count += 1
            program = Path(build_dir) / f"{Path(srcs[0]).stem}-{os.getpid()}-{DpuSim._count}.dpu"
            build(srcs, program, nr_tasklets=nr_tasklets, defines=defines, opt=opt,
                  include_dirs=include_dirs)
        self.program: DpuRtProgram = load_program(program, self.hw, workers)
        self.dpus = dpu_alloc(nr_dpus, machine=Machine(self.hw))
        self.dpus.load(self.program)
        self.result: LaunchResult | None = None

    # ------------------------------------------------------------ symbols
    @property
    def nr_dpus(self) -> int:
        return self.dpus.nr_dpus

    def _dpu(self, i: int):
        return self.dpus.dpu_sets()[i]

    def write(self, symbol: str, value, dpu: int | None = None, offset: int = 0) -> None:
        """Write ``value`` (a numpy scalar/array or bytes) to ``symbol`` of every DPU, or
        of DPU ``dpu`` only."""
        data = np.frombuffer(value, dtype=np.uint8) if isinstance(value, (bytes, bytearray)) \
            else np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        target = self.dpus if dpu is None else self._dpu(dpu)
        target.copy_to(symbol, offset, data)

    def write_each(self, symbol: str, rows, offset: int = 0) -> None:
        """One row per DPU (an (nr_dpus, ...) array, rows of equal size): prepare + push."""
        arr = np.ascontiguousarray(rows)
        self.dpus.scatter_to(symbol, offset, arr.reshape(self.nr_dpus, -1).view(np.uint8))

    def read(self, symbol: str, dtype=np.uint8, count: int | None = None, dpu: int = 0,
             offset: int = 0) -> np.ndarray:
        """``count`` items of ``dtype`` from ``symbol`` of one DPU (all of it by default)."""
        dtype = np.dtype(dtype)
        size = self.program.symbols[symbol].size - offset if count is None else count * dtype.itemsize
        size -= size % dtype.itemsize
        return self._dpu(dpu).copy_from(symbol, offset, size).view(dtype)

    def read_each(self, symbol: str, dtype=np.uint8, count: int | None = None,
                  offset: int = 0) -> np.ndarray:
        """The same items from every DPU: (nr_dpus, count) array."""
        dtype = np.dtype(dtype)
        size = self.program.symbols[symbol].size - offset if count is None else count * dtype.itemsize
        size -= size % dtype.itemsize
        return self.dpus.gather_from(symbol, offset, size).view(dtype)

    # ------------------------------------------------------------ running
    def launch(self, timeout: float | None = None) -> LaunchResult:
        """Run every DPU once (raises DpuError on a fault). ``timeout``: the launch's time
        limit in wall-clock seconds (default ``PIMRL_DPU_TIMEOUT``, else one hour); past it
        the DPUs fault, naming the tasklet and the function it was in."""
        self.result = self.dpus.launch(timeout=timeout)
        return self.result

    def log(self, dpu: int = 0) -> str:
        """What DPU ``dpu`` printed during the last launch."""
        return self._dpu(dpu).log()

    @property
    def cycles(self) -> np.ndarray:
        """Modelled cycles per DPU of the last launch."""
        return None if self.result is None else self.result.cycles

    @property
    def details(self) -> dict:
        """Per-DPU instructions, DMA transfers and bytes, sync calls, heap peak (last launch)."""
        return self.program.last_launch["per_dpu"] if self.program.last_launch else {}

    def free(self) -> None:
        if not self.dpus.alloc.freed:
            self.dpus.free()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


try:
    import pytest

    @pytest.fixture
    def dpu_sim(tmp_path):
        """A factory of :class:`DpuSim` objects built into ``tmp_path``, freed afterwards."""
        if not have_compiler():
            pytest.skip("no host C compiler: pimrl cannot build DPU programs here "
                        "(install gcc or set PIMRL_DPURT_CC)")
        made = []

        def make(source=None, **kwargs):
            kwargs.setdefault("build_dir", tmp_path)
            sim = DpuSim(source, **kwargs)
            made.append(sim)
            return sim

        yield make
        for sim in made:
            sim.free()
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pass
