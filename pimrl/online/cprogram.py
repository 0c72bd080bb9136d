"""The online kernel of ``kernels/online.c``, built and loaded as a simulator program.

:func:`online_c_program` has the signature of :class:`pimrl.online.program.OnlineProgram`,
so :class:`pimrl.online.trainer.OnlineTrainer` drives either. The table placement (WRAM, or
MRAM offsets) comes from the same :func:`~pimrl.online.program.online_layout` and
reaches the C kernel as ``-D`` flags; launches report the kernel's ``stats`` counters, the
DPU runtime's own cycle estimate as the launch time, and the counted model's in
``last_launch["model_cycles"]``.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from pimrl.dpurt.cache import cached_build
from pimrl.dpurt.program import DpuRtProgram
from pimrl.io import atomic_write_text
from pimrl.learners.variants import HEADER, ONLINE_COUNTERS, ONLINE_HEADER, OnlineVariant, online_c_header
from pimrl.online.program import online_instruction_costs, online_kernel_cycles, online_layout
from pimrl.pim.system import LaunchResult
from pimrl.resources import KERNEL_DIR

SOURCE = KERNEL_DIR / "online.c"
#: The headers online.c includes from kernels/ (its build key covers them).
DEPENDS = (KERNEL_DIR / ONLINE_HEADER, KERNEL_DIR / HEADER, KERNEL_DIR / "swiftrl_arith.h")


def header_is_current() -> bool:
    path = KERNEL_DIR / ONLINE_HEADER
    return path.exists() and path.read_text() == online_c_header()


def write_header() -> Path:
    return atomic_write_text(KERNEL_DIR / ONLINE_HEADER, online_c_header())


def online_defines(variant: OnlineVariant, layout) -> dict:
    """The ``-D`` flags of one online kernel build."""
    d = {"N_STATES": layout.n_states, "N_ACTIONS": layout.n_actions,
         "N_OUTCOMES": layout.n_outcomes, "N_START": layout.n_start, **variant.c_defines(),
         "COUNT_VISITS": 1 if layout.count_visits else 0}
    for name, off in (("Q_MRAM", layout.q_mram), ("VISITS_MRAM", layout.visits_mram),
                      ("ENV_MRAM", layout.env_mram)):
        if off is not None:
            d[name] = int(off)
    return d


def build_online_kernel(variant: OnlineVariant, layout, opt="-O2") -> Path:
    """Build (once; cached) the online kernel for ``layout``; returns the program file."""
    if not header_is_current():
        raise RuntimeError(f"{KERNEL_DIR / ONLINE_HEADER} does not match pimrl.learners.variants: "
                           f"run python -m pimrl.online.cprogram --write-header")
    defs = online_defines(variant, layout)
    tag = "-".join(f"{k.lower()}{v}" for k, v in sorted(defs.items()))
    name = (f"{variant.name}-t{layout.tasklets}-{hashlib.sha256(tag.encode()).hexdigest()[:10]}"
            f"{opt.replace('-', '')}")
    return cached_build(name, SOURCE, DEPENDS, nr_tasklets=layout.tasklets, defines=defs, opt=opt)


class OnlineCProgram(DpuRtProgram):
    """A built online kernel; launches report the ``stats`` counters."""

    def __init__(self, path, variant, layout, hardware=None, workers=None):
        super().__init__(path, hardware, workers)
        self.variant, self.layout, self.tasklets = variant, layout, layout.tasklets
        self.name = f"{variant.name}-c-t{layout.tasklets}"

    def costs(self, hw) -> dict:
        return online_instruction_costs(hw, self.variant, self.layout)

    def launch(self, alloc, slots) -> LaunchResult:
        result = super().launch(alloc, slots)
        so = self.symbols["stats"].offset
        slots = np.asarray(slots, dtype=np.int64)
        result.counters = alloc.wram[slots, so:so + 8 * len(ONLINE_COUNTERS)].copy().view(np.int64)
        self.last_launch["model_cycles"] = online_kernel_cycles(alloc.hw, result.counters,
                                                                self.costs(alloc.hw), self.layout)
        return result


def online_c_program(variant, n_states, n_actions, n_outcomes, n_start, tasklets, hardware,
                     count_visits=False, force_mram=False, workers=None) -> OnlineCProgram:
    """Drop-in for ``OnlineProgram(...)``: the C kernel, built for the same layout."""
    layout = online_layout(n_states, n_actions, n_outcomes, n_start, tasklets, hardware,
                           count_visits, force_mram)
    return OnlineCProgram(build_online_kernel(variant, layout), variant, layout, hardware, workers)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write-header"]:
        print(write_header())
    else:
        sys.exit("usage: python -m pimrl.online.cprogram --write-header")
