"""Online training on real DPUs (``pimrl train --online --device upmem``): the online kernel
``kernels/online.c`` built by the UPMEM SDK's compiler, and the set the online trainer drives
made of the SDK's ``dpu`` package.

:class:`SdkOnlineSet` gives :class:`~pimrl.online.trainer.OnlineTrainer` the calls it makes
of a simulated set (``broadcast_to``, ``scatter_to``, ``gather_from`` at an offset of a
symbol, ``launch``, ``phase``) through the SDK's ``DpuSet.copy`` and ``exec``; every phase is
timed by the host's clock (*measured*: ``ledger.measured_s``), and nothing is modelled.
"""
from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from pimrl.learners.variants import ONLINE_COUNTERS
from pimrl.pim import cost

COMPILER = "dpu-upmem-dpurte-clang"


def build_online_with_compiler(variant, layout, opt: str = "-O2",
                               compiler: str = COMPILER) -> Path:
    """Build the online kernel for ``layout`` with the DPU compiler ``compiler`` on PATH (on
    a UPMEM machine the SDK's), once per sources, flags and compiler, under ``<kernel build
    folder>/upmem``; returns the binary's path."""
    from pimrl.dpurt.cache import build_dir, build_once, sdk_compiler, sources_key
    from pimrl.online.cprogram import DEPENDS, SOURCE, header_is_current, online_defines
    from pimrl.resources import KERNEL_DIR

    if not header_is_current():
        raise RuntimeError("kernels/online_params.h does not match pimrl.learners.variants: "
                           "run python -m pimrl.online.cprogram --write-header")
    found, which = sdk_compiler(compiler)
    defs = online_defines(variant, layout)
    line_defs = [f"-DNR_TASKLETS={int(layout.tasklets)}", *(f"-D{k}={v}" for k, v in defs.items())]
    key = hashlib.sha256(f"{which}:{sources_key([SOURCE, *DEPENDS])}:{' '.join(line_defs)}:"
                         f"{opt}".encode()).hexdigest()[:12]
    out = build_dir() / "upmem" / f"{variant.name}-t{layout.tasklets}-{key}"
    return build_once(out, lambda tmp: [found, *line_defs, opt, "-I", str(KERNEL_DIR), "-o",
                                        str(tmp), str(SOURCE)])


class SdkOnlineSet:
    """``n_dpus`` DPUs of the SDK's ``dpu`` package running ``binary``, with the calls the
    online trainer makes of a simulated set; ``alloc.ledger`` holds each phase's measured
    host wall clock (``dpu_kernel``: the launches)."""

    def __init__(self, dpu, n_dpus: int, binary: Path):
        self.set = dpu.DpuSet(nr_dpus=n_dpus, binary=str(binary))
        if len(self.set) != n_dpus:
            self.set.free()
            raise RuntimeError(f"asked the dpu package for {n_dpus} DPUs, got {len(self.set)}")
        self.nr_dpus = n_dpus
        self.alloc = SimpleNamespace(ledger=cost.TimeBreakdown(modelled_s={}))
        self._phase = None

    def load(self, program) -> None:
        """The binary was loaded with the set (the SDK's ``DpuSet(binary=...)``)."""

    @contextlib.contextmanager
    def phase(self, category: str):
        if category not in cost.CATEGORIES:
            raise ValueError(f"unknown time category {category!r}")
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.alloc.ledger.measure(category, time.perf_counter() - t0)

    @staticmethod
    def _bytes(data) -> np.ndarray:
        buf = np.ascontiguousarray(data).view(np.uint8)
        return buf if buf.flags.writeable else buf.copy()   # the SDK's copy takes writable ones

    def broadcast_to(self, symbol: str, offset: int, data) -> None:
        self.set.copy(symbol, self._bytes(data).ravel(), offset=int(offset))

    def scatter_to(self, symbol: str, offset: int, rows) -> None:
        rows = self._bytes(rows).reshape(self.nr_dpus, -1)
        self.set.copy(symbol, list(rows), offset=int(offset))

    def gather_from(self, symbol: str, offset: int, length: int) -> np.ndarray:
        out = np.empty((self.nr_dpus, int(length)), np.uint8)
        self.set.copy(list(out), symbol, offset=int(offset))
        return out

    def launch(self):
        """Run the kernel on every DPU (timed as ``dpu_kernel``), then read each DPU's
        ``stats`` counters (booked in no phase: pimrl's instrumentation)."""
        t0 = time.perf_counter()
        self.set.exec()
        self.alloc.ledger.measure("dpu_kernel", time.perf_counter() - t0)
        counters = self.gather_from("stats", 0, 8 * len(ONLINE_COUNTERS)).view(np.int64)
        return SimpleNamespace(counters=counters.copy())

    def free(self) -> None:
        self.set.free()
