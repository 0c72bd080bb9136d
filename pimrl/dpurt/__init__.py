"""DPU programs in UPMEM C, run by the simulator (docs/dpu-runtime.md).

- :func:`build_program` / ``bin/dpu-upmem-dpurte-clang``: compile UPMEM C for host execution;
- :func:`load_program`: the simulator program (:class:`DpuRtProgram`) for a built file,
  loadable on a ``pimrl.pim.system.dpu_alloc`` set like any ``DpuProgram``;
- :mod:`pimrl.dpurt.testing`: a small API and pytest fixture to unit-test kernels;
- :mod:`pimrl.dpurt.cache`: the build cache of pimrl's own kernels (``kernels/*.c``),
  keyed by every source linked into a program;
- :mod:`pimrl.rlkernel.cprogram`: the twelve SwiftRL kernels of ``kernels/`` built and loaded.
"""
from __future__ import annotations

__all__ = ["build_program", "load_program", "file_loader", "is_dpurt_file", "DpuRtProgram",
           "BuildError", "have_compiler"]


def __getattr__(name):
    if name in ("load_program", "file_loader", "is_dpurt_file", "DpuRtProgram"):
        from pimrl.dpurt import program
        return getattr(program, name)
    if name in ("BuildError", "have_compiler"):
        from pimrl.dpurt import cc
        return getattr(cc, name)
    if name == "build_program":
        from pimrl.dpurt.cc import build
        return build
    raise AttributeError(name)
