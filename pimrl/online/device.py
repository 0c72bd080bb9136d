"""Online training on real DPUs (``pimrl train --online --device upmem``): the online kernel
``kernels/online.c`` built by the UPMEM SDK's compiler. The trainer drives the DPUs through
the SDK's ``dpu`` package as it drives the simulator's (:class:`pimrl.dpuset.DpuPackageSet`):
every phase timed by the host's clock (*measured*: ``ledger.measured_s``), nothing modelled.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


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
