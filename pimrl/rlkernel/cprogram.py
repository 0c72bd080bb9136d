"""The SwiftRL kernels of ``kernels/swiftrl.c``, built and loaded as simulator programs.

:func:`swiftrl_program` has the signature of :class:`pimrl.rlkernel.program.RlProgram`, so it
is a drop-in program factory: the same host code (``PimTrainer``, ``host/app.c``) drives the
C kernel or the numba one. The C kernel's WRAM symbols (``params``, ``rng_state``,
``stats``, ``q_table``, ``visits``) have the numba program's names and sizes; its launch
results carry the ``stats`` counters like the numba program's, plus the DPU runtime's own
cycle estimate (basic blocks + DMA), which :func:`model_agreement` compares with the numba
path's counted model.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from pimrl.dpurt.cache import build_dir, cached_build, sources_key
from pimrl.io import atomic_write_text
from pimrl.dpurt.program import DpuRtProgram
from pimrl.learners.variants import HEADER, P_SARSA_DRAW, PARAMS_WORDS, Variant, c_header
from pimrl.rlkernel import costs as kcost
from pimrl.pim.system import LaunchResult
from pimrl.resources import KERNEL_DIR

SOURCE = KERNEL_DIR / "swiftrl.c"
#: The headers swiftrl.c includes from kernels/ (its build key covers them).
DEPENDS = (KERNEL_DIR / "swiftrl_common.h", KERNEL_DIR / HEADER, KERNEL_DIR / "swiftrl_arith.h")
N_COUNTERS = len(kcost.COUNTERS)


def header_is_current() -> bool:
    """Whether ``kernels/swiftrl_variants.h`` says what the variant registry says."""
    path = KERNEL_DIR / HEADER
    return path.exists() and path.read_text() == c_header()


def write_header() -> Path:
    """(Re)generate ``kernels/swiftrl_variants.h`` from the variant registry."""
    return atomic_write_text(KERNEL_DIR / HEADER, c_header())


def kernel_defines(n_states, n_actions, algo, dtype, sampling, block_bytes=2048,
                   count_visits=True, bootstrap="table", tasklet_mode="ring") -> dict:
    """The ``-D`` flags choosing a variant (the same names a Makefile passes)."""
    return {"N_STATES": int(n_states), "N_ACTIONS": int(n_actions),
            **Variant(algo, dtype, sampling, bootstrap=bootstrap,
                      tasklet_mode=tasklet_mode).c_defines(),
            "BLOCK_BYTES": int(block_bytes),
            "COUNT_VISITS": 1 if count_visits else 0}


def build_kernel(n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes=2048,
                 count_visits=True, opt="-O2", bootstrap="table", tasklet_mode="ring",
                 perfcounter: str | None = None, tasklet_stats: bool = False) -> Path:
    """Build (once; cached under kernels/build) one variant; returns the program file.
    ``perfcounter`` (``COUNT_CYCLES`` or ``COUNT_INSTRUCTIONS``): the kernel leaves its
    launch's ``perfcounter_get()`` in the symbol ``perf``; ``tasklet_stats``: each tasklet's
    counters in ``tasklet_stats`` (what the cost model of tasklet mode rows needs)."""
    if not header_is_current():
        raise RuntimeError(f"{KERNEL_DIR / HEADER} does not match pimrl.learners.variants: run "
                           f"python -m pimrl.rlkernel.cprogram --write-header")
    defs = kernel_defines(n_states, n_actions, algo, dtype, sampling, block_bytes, count_visits,
                          bootstrap, tasklet_mode)
    if perfcounter is not None:
        defs["SWIFTRL_PERFCOUNTER"] = perfcounter
    if tasklet_stats:
        defs["SWIFTRL_TASKLET_STATS"] = 1
    name = (f"swiftrl-{algo}-{dtype}-{sampling}{'-owned' if bootstrap == 'owned' else ''}"
            f"{'-' + tasklet_mode if tasklet_mode != 'ring' else ''}"
            f"-s{n_states}-a{n_actions}-t{tasklets}"
            f"-b{block_bytes}{'-v' if count_visits else ''}{opt.replace('-', '')}"
            f"{'-' + perfcounter.lower() if perfcounter else ''}{'-ts' if tasklet_stats else ''}")
    return cached_build(name, SOURCE, DEPENDS, nr_tasklets=tasklets, defines=defs, opt=opt)


def compiler_line(compiler: str, out, n_states, n_actions, tasklets, algo, dtype, sampling,
                  block_bytes=2048, count_visits=True, opt="-O2", bootstrap="table",
                  tasklet_mode="ring") -> list:
    """The DPU compiler's command line for one variant, as kernels/Makefile writes it:
    ``dpu-upmem-dpurte-clang -DNR_TASKLETS=T -DN_STATES=S ... -O2 -o OUT swiftrl.c``."""
    defs = kernel_defines(n_states, n_actions, algo, dtype, sampling, block_bytes, count_visits,
                          bootstrap, tasklet_mode)
    return [compiler, f"-DNR_TASKLETS={int(tasklets)}", *(f"-D{k}={v}" for k, v in defs.items()),
            opt, "-I", str(KERNEL_DIR), "-o", str(out), str(SOURCE)]


def build_kernel_with_compiler(n_states, n_actions, tasklets, algo, dtype, sampling,
                               block_bytes=2048, count_visits=True, opt="-O2",
                               compiler: str = "dpu-upmem-dpurte-clang",
                               tasklet_mode: str = "ring") -> Path:
    """Build one variant with the DPU compiler ``compiler`` found on PATH (on a UPMEM machine
    the SDK's, which makes a DPU ELF binary), once per sources and compiler, under
    ``<kernel build folder>/upmem``; returns the binary's path."""
    from pimrl.dpurt.cache import build_once, sdk_compiler

    if not header_is_current():
        raise RuntimeError(f"{KERNEL_DIR / HEADER} does not match pimrl.learners.variants: run "
                           f"python -m pimrl.rlkernel.cprogram --write-header")
    found, which = sdk_compiler(compiler)
    key = hashlib.sha256(f"{which}:{sources_key([SOURCE, *DEPENDS])}".encode()).hexdigest()[:12]
    mode = f"-{tasklet_mode}" if tasklet_mode != "ring" else ""
    out = build_dir() / "upmem" / (f"swiftrl-{algo}-{dtype}-{sampling}{mode}-s{n_states}"
                                   f"-a{n_actions}-t{tasklets}-b{block_bytes}"
                                   f"{'-v' if count_visits else ''}{opt.replace('-', '')}-{key}")
    return build_once(out, lambda tmp: compiler_line(
        found, tmp, n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes,
        count_visits, opt, tasklet_mode=tasklet_mode))


class SwiftRlCProgram(DpuRtProgram):
    """A built variant of kernels/swiftrl.c; launches report the ``stats`` counters."""

    def __init__(self, path, n_states, n_actions, tasklets, algo, dtype, sampling,
                 block_bytes, hardware=None, count_visits=True, workers=None, bootstrap="table",
                 tasklet_mode="ring"):
        super().__init__(path, hardware, workers)
        self.bootstrap = bootstrap
        self.tasklet_mode = tasklet_mode
        self.n_states, self.n_actions, self.tasklets = n_states, n_actions, tasklets
        self.algo, self.dtype, self.sampling = algo, dtype, sampling
        self.block_bytes, self.count_visits = block_bytes, count_visits
        self.name = f"swiftrl-c-{algo}-{dtype}-{sampling}-t{tasklets}" + (
            f"-{tasklet_mode}" if tasklet_mode != "ring" else "")
        if hardware is not None and self.wram_used + tasklets * block_bytes > hardware.wram_bytes:
            from pimrl.rlkernel.layout import wram_advice

            variant = Variant(algo, dtype, sampling, bootstrap=bootstrap, tasklet_mode=tasklet_mode)
            raise ValueError(
                f"WRAM overflow: the kernel's globals ({self.image_size} B, a {n_states} x "
                f"{n_actions} Q-table among them) plus {tasklets} tasklets' "
                f"{block_bytes} B DMA buffers and stacks need "
                f"{self.wram_used + tasklets * block_bytes} B; WRAM holds {hardware.wram_bytes} B"
                + wram_advice(n_states, n_actions, tasklets, variant, count_visits, block_bytes,
                              hardware.stack_bytes_per_tasklet, hardware.wram_bytes))

    def costs(self, hw, next_action: str = "logged", wide_alpha=False, wide_gamma=False):
        """The numba path's instruction costs for this variant (for comparisons)."""
        pv = None
        if self.bootstrap == "owned" and self.algo == "sarsa":
            pv = "uniform" if next_action == "epsilon-greedy" else "weighted"
        return kcost.update_instruction_costs(hw, self.dtype, self.algo, self.sampling,
                                             self.n_actions, self.tasklets, self.count_visits,
                                             policy_value=pv, tasklet_mode=self.tasklet_mode,
                                             wide_alpha=wide_alpha, wide_gamma=wide_gamma,
                                             bootstrap=self.bootstrap, next_action=next_action)

    def launch(self, alloc, slots) -> LaunchResult:
        result = super().launch(alloc, slots)
        so = self.symbols["stats"].offset
        slots = np.asarray(slots, dtype=np.int64)
        result.counters = alloc.wram[slots, so:so + 8 * N_COUNTERS].copy().view(np.int64)
        if "perf" in self.symbols:                 # built with SWIFTRL_PERFCOUNTER
            po = self.symbols["perf"].offset
            self.last_launch["perf"] = alloc.wram[slots, po:po + 8].copy().view(np.uint64)[:, 0]
        tasklet_counters = None
        if "tasklet_stats" in self.symbols:        # built with SWIFTRL_TASKLET_STATS
            to = self.symbols["tasklet_stats"].offset
            tasklet_counters = alloc.wram[slots, to:to + 8 * N_COUNTERS * self.tasklets].copy(
                ).view(np.int64).reshape(len(slots), self.tasklets, N_COUNTERS)
            result.tasklet_counters = tasklet_counters if self.tasklet_mode == "rows" else None
        if self.tasklet_mode == "rows" and tasklet_counters is None:
            # the model needs each tasklet's counters: build with tasklet_stats=True
            model = np.full(len(slots), np.nan)
        else:
            po = self.symbols["params"].offset
            params = alloc.wram[slots, po:po + 8 * PARAMS_WORDS].copy().view(np.int64)
            eg = (params[:, P_SARSA_DRAW] != 0) if self.algo == "sarsa" else np.zeros(len(slots), bool)
            wide_a, wide_g = (kcost.wide_products(params) if self.dtype == "int32"
                              else (np.zeros(len(slots), bool),) * 2)
            model = np.zeros(len(slots))
            for key in set(zip(eg.tolist(), wide_a.tolist(), wide_g.tolist())):
                mask = (eg == key[0]) & (wide_a == key[1]) & (wide_g == key[2])
                model[mask] = kcost.kernel_cycles(
                    alloc.hw, result.counters[mask],
                    self.costs(alloc.hw, "epsilon-greedy" if key[0] else "logged", *key[1:]),
                    self.tasklets, self.tasklet_mode,
                    None if tasklet_counters is None else tasklet_counters[mask])
        self.last_launch["model_cycles"] = model
        return result


def swiftrl_program(n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes=2048,
                    hardware=None, count_visits=True, workers=None,
                    bootstrap="table", tasklet_mode="ring",
                    perfcounter: str | None = None,
                    tasklet_stats: bool = False) -> SwiftRlCProgram:
    """Drop-in for ``RlProgram(...)``: the C kernel of that variant, built and loaded
    (``perfcounter``, ``tasklet_stats``: :func:`build_kernel`'s). The numba program's
    checks come first, so a table or buffers that do not fit WRAM are refused in its words
    before the compiler runs."""
    from pimrl.rlkernel.program import RlProgram

    RlProgram(n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes, hardware,
              count_visits, bootstrap, tasklet_mode)
    path = build_kernel(n_states, n_actions, tasklets, algo, dtype, sampling, block_bytes,
                        count_visits, bootstrap=bootstrap, tasklet_mode=tasklet_mode,
                        perfcounter=perfcounter, tasklet_stats=tasklet_stats)
    return SwiftRlCProgram(path, n_states, n_actions, tasklets, algo, dtype, sampling,
                           block_bytes, hardware, count_visits, workers, bootstrap, tasklet_mode)


def model_agreement(program: SwiftRlCProgram) -> dict:
    """After a launch: the runtime's cycle estimate against the numba model's, per DPU."""
    ll = program.last_launch
    est, model = np.asarray(ll["cycles"]), np.asarray(ll["model_cycles"])
    ratio = est / np.where(model > 0, model, 1.0)
    return {"estimate": est, "model": model, "ratio": ratio,
            "max_rel_diff": float(np.max(np.abs(ratio - 1.0))) if len(ratio) else 0.0}


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write-header"]:
        print(write_header())
    else:
        sys.exit("usage: python -m pimrl.rlkernel.cprogram --write-header")
