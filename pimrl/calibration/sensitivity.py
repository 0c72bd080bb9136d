"""Which hardware parameters move the SwiftRL study's modelled conclusions.

The study: Taxi-v3, 1M transitions, the twelve variants (Q-learning/SARSA x FP32/INT32 x
SEQ/STR/RAN), 16 tasklets in pimrl's default tasklet mode, trained on 125 and on 2,000 DPUs.
Two conclusions are checked:
the modelled speedup from 125 to 2,000 DPUs (T125 / T2000, all four time categories), and
PIM against a fixed CPU time (CPU / T2000: its relative change does not depend on the CPU
figure, so none is needed). Each parameter is varied by +-delta via
``Hardware.with_overrides``.

Each (variant, DPU count) is trained once with ``PimTrainer``; the work it counted (the
kernel's per-DPU counters and the ledger's transfers) does not depend on these parameters,
so every what-if is re-costed from it with the same ``cost`` functions. A test checks that
the re-costing reproduces the trainer's own modelled time.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from pimrl.calibration.calibrate import percent
from pimrl.learners.params import LearnerParams
from pimrl.learners.variants import DEFAULT_TASKLET_MODE, PARAMS_WORDS, all_variants
from pimrl.pim import cost
from pimrl.pim.hardware import Hardware, get_hardware
from pimrl.pim.system import Machine, dpu_alloc
from pimrl.swiftrl.trainer import PimTrainer

VARIANTS = [(v.algo, v.dtype, v.sampling) for v in all_variants()]
DPU_COUNTS = (125, 2000)
TASKLETS = 16
ENV = "Taxi-v3"
# Parameters varied (hardware fields, or op_<name> instruction counts).
PARAMETERS = (
    "frequency_hz", "issue_interval", "dma_alpha_read", "dma_beta",
    "op_int32_mul", "op_int64_mul", "op_mul8", "op_float_add", "op_float_sub", "op_float_mul",
    "op_float_cmp", "op_mutex",
    "parallel_to_dpu_gbps_1r", "parallel_from_dpu_gbps_1r", "broadcast_gbps_1r",
    "serial_to_dpu_gbps", "serial_from_dpu_gbps",
    "xfer_to_dpu_gbps_32r", "xfer_from_dpu_gbps_32r",
)


def base_value(hw: Hardware, name: str):
    """The value of the varied parameter ``name``; ValueError naming it if there is none."""
    try:
        value = hw.op_instructions[name[3:]] if name.startswith("op_") else getattr(hw, name)
    except (KeyError, AttributeError):
        value = None
    numeric = isinstance(value, (int, float)) or (
        isinstance(value, tuple) and value and all(isinstance(v, (int, float)) for v in value))
    if not numeric or isinstance(value, bool):
        raise ValueError(f"parameter {name!r}: not a numeric hardware parameter of {hw.name} "
                         f"(the study varies {', '.join(PARAMETERS)}; or op_<instruction>)")
    return value


def varied(hw: Hardware, name: str, factor: float) -> tuple[Hardware, float]:
    """``hw`` with ``name`` times ``factor`` (integers rounded); the factor really applied."""
    value = base_value(hw, name)
    if isinstance(value, tuple):
        new = tuple(v * factor for v in value)
        return hw.with_overrides(**{name: new}), factor
    new = value * factor
    if isinstance(value, int) and not name.startswith("op_"):
        new = int(round(new))
    return hw.with_overrides(**{name: new}), new / value


@dataclasses.dataclass
class Run:
    """The counted work of one training run: enough to re-cost it on any hardware."""

    variant: tuple
    n_dpus: int
    n_ranks: int
    program: object
    counters: np.ndarray
    tasklet_counters: np.ndarray | None
    params: np.ndarray
    events: list
    modelled_s: float
    categories: dict


def record_runs(records, n_states, n_actions, hw: Hardware, epochs: int = 1, variants=VARIANTS,
                dpu_counts=DPU_COUNTS, tasklets: int = TASKLETS) -> list:
    runs = []
    for algo, dtype, sampling in variants:
        params = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=epochs,
                               tasklet_mode=DEFAULT_TASKLET_MODE)
        words = np.zeros(PARAMS_WORDS, np.int64)
        words[:len(params.kernel_scalars())] = params.kernel_scalars()
        for n in dpu_counts:
            tr = PimTrainer(params, n_dpus=n, tasklets=tasklets, hardware=hw).fit(records, n_states, n_actions)
            probe = dpu_alloc(n, machine=Machine(hw))
            n_ranks = probe.nr_ranks
            probe.free()
            runs.append(Run((algo, dtype, sampling), n, n_ranks, tr.program_, tr.counters_,
                            tr.tasklet_counters_, np.tile(words, (n, 1)),
                            list(tr.timings_.events), tr.timings_.modelled_total_s,
                            dict(tr.timings_.modelled_s)))
    return runs


def recost(run: Run, hw: Hardware) -> dict:
    """Modelled seconds of ``run`` on ``hw``, by category."""
    out = {c: 0.0 for c in cost.CATEGORIES}
    for ev in run.events:
        what, b, n = ev["what"], ev.get("bytes_per_dpu", 0), ev.get("dpus", 0)
        if what == "latency: launch":
            secs = hw.launch_latency_s
        elif what == "latency: synchronisation":
            secs = hw.sync_latency_s
        elif what.startswith("launch"):
            cyc = run.program.cycles(hw, run.counters, run.params, run.tasklet_counters)
            secs = float(cyc.max()) / hw.frequency_hz
        elif what.startswith("broadcast"):
            secs = cost.broadcast_seconds(hw, b, n, run.n_ranks)
        elif what.startswith("copy_"):
            secs = cost.serial_transfer_seconds(hw, b * n, what.startswith("copy_to"))
        else:
            secs = cost.parallel_transfer_seconds(hw, b, n, run.n_ranks, " to " in what)
        out[ev["category"]] += secs
    return out


def _metrics(runs, hw):
    """Per variant: (T125, T2000, scaling speedup)."""
    times = {}
    for run in runs:
        times.setdefault(run.variant, {})[run.n_dpus] = sum(recost(run, hw).values())
    lo, hi = min(DPU_COUNTS), max(DPU_COUNTS)
    return {v: (t[lo], t[hi], t[lo] / t[hi]) for v, t in times.items()}


def run_sensitivity(n_transitions: int = 1_000_000, epochs: int = 1, delta: float = 0.2,
                    hw: Hardware | None = None, seed: int = 0, parameters=PARAMETERS,
                    variants=VARIANTS) -> dict:
    """The study (module docstring). ``variants`` (default all twelve) is for quick checks:
    a variant's baseline row does not depend on the others, the parameter means do."""
    from pimrl.data import generate_dataset
    from pimrl.envs import make

    hw = hw or get_hardware()
    for name in parameters:             # refuse a bad name before the long training runs
        base_value(hw, name)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    env = make(ENV)
    n_states, n_actions = env.next_state.shape[:2]
    records = generate_dataset(env, n_transitions, seed)
    variants = [tuple(v) for v in variants]
    runs = record_runs(records, n_states, n_actions, hw, epochs, variants=variants)
    base = _metrics(runs, hw)
    lo, hi = min(DPU_COUNTS), max(DPU_COUNTS)
    baseline = []
    for run_v in variants:
        r125 = next(r for r in runs if r.variant == run_v and r.n_dpus == lo)
        r2k = next(r for r in runs if r.variant == run_v and r.n_dpus == hi)
        baseline.append({"variant": "-".join(run_v), f"t{lo}_s": base[run_v][0],
                         f"t{hi}_s": base[run_v][1], "scaling_speedup": base[run_v][2],
                         f"kernel_share_{lo}": r125.categories["dpu_kernel"] / r125.modelled_s,
                         f"kernel_share_{hi}": r2k.categories["dpu_kernel"] / r2k.modelled_s})
    rows = []
    for name in parameters:
        entry = {"parameter": name, "base": base_value(hw, name)}
        for sign, factor in (("minus", 1 - delta), ("plus", 1 + delta)):
            hw2, applied = varied(hw, name, factor)
            m = _metrics(runs, hw2)
            d_scal = np.array([m[v][2] / base[v][2] - 1 for v in variants])
            d_cpu = np.array([base[v][1] / m[v][1] - 1 for v in variants])
            entry[sign] = {"factor": applied,
                           "scaling_mean": float(d_scal.mean()),
                           "scaling_maxabs": float(d_scal[np.argmax(np.abs(d_scal))]),
                           "vs_cpu_mean": float(d_cpu.mean()),
                           "vs_cpu_maxabs": float(d_cpu[np.argmax(np.abs(d_cpu))])}
        entry["impact"] = max(abs(entry[s][k]) for s in ("minus", "plus")
                              for k in ("scaling_maxabs", "vs_cpu_maxabs"))
        rows.append(entry)
    rows.sort(key=lambda e: -e["impact"])
    return {"study": {"env": ENV, "transitions": n_transitions, "epochs": epochs,
                      "tasklets": TASKLETS, "dpus": list(DPU_COUNTS), "delta": delta,
                      "seed": seed, "hardware": hw.name, "variants": len(variants)},
            "baseline": baseline, "parameters": rows}


def format_sensitivity(result: dict, markdown: bool = False) -> str:
    from pimrl.calibration.calibrate import _table

    d = result["study"]["delta"]
    head = ("parameter", "base value", f"-{d:.0%}: 125->2000 speedup", f"+{d:.0%}: 125->2000 speedup",
            f"-{d:.0%}: PIM vs CPU", f"+{d:.0%}: PIM vs CPU")
    lines = []
    for e in result["parameters"]:
        base = e["base"]
        bv = (f"{base[0]:g}..{base[-1]:g} ({len(base)} pts)" if isinstance(base, tuple)
              else f"{base:.4g}")
        cells = []
        for key in ("scaling", "vs_cpu"):
            for s in ("minus", "plus"):
                r = e[s]
                cells.append(f"{percent(r[key + '_mean'])} (max {percent(r[key + '_maxabs'])})")
        lines.append((e["parameter"], bv, cells[0], cells[1], cells[2], cells[3]))
    return _table(head, lines, markdown)


def format_baseline(result: dict, markdown: bool = False) -> str:
    from pimrl.calibration.calibrate import _table

    lo, hi = result["study"]["dpus"]
    head = ("variant", f"T{lo} (ms)", f"T{hi} (ms)", f"speedup {lo}->{hi}",
            f"kernel share @{lo}", f"kernel share @{hi}")
    lines = [(b["variant"], f"{1e3 * b[f't{lo}_s']:.3g}", f"{1e3 * b[f't{hi}_s']:.3g}",
              f"{b['scaling_speedup']:.3g}x", f"{b[f'kernel_share_{lo}']:.0%}",
              f"{b[f'kernel_share_{hi}']:.0%}") for b in result["baseline"]]
    return _table(head, lines, markdown)
