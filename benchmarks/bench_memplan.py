"""The memory plan (pimrl/memplan.py) against the measured peak resident set, phase by phase.

    python benchmarks/bench_memplan.py [--transitions 4000000,16000000] [--dpus 2000]
        [--aggregate mean] [--dtype fp32] [--partition contiguous] [--generated] [--json]
    python benchmarks/bench_memplan.py --calibrate

Each run is ``pimrl train DATA --backend pim ... --epochs 1 --no-eval`` (or the options
given) in a fresh process that marks the phases of the fit (load, prep, push, run; own:R: its
sort and reorder too) and reads, for each, the process's peak resident set within it (Linux:
VmHWM, reset between phases by writing 5 to /proc/self/clear_refs): measured. Beside it, the
plan of the same run (planned). The dataset is a Taxi file made by ``pimrl data generate``
(kept in --workdir), or, with --generated, the command's own ``--env``.

``--calibrate`` runs small trainings (20,000 transitions, 8 and 64 DPUs; the reference and
CPU backends) and prints, for each phase, the measured peak less the plan's data parts: the
figures of ``pimrl.memplan.BASELINE``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


# --------------------------------------------------------------------------- child process
def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Phases:
    """Peak resident set per phase: VmHWM read and reset at each mark."""

    def __init__(self):
        self.current, self.peaks, self.order = "load", {}, []

    def mark(self, name: str) -> None:
        self.peaks[self.current] = max(self.peaks.get(self.current, 0), _status("VmHWM"))
        if self.current not in self.order:
            self.order.append(self.current)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        self.current = name


def child(argv) -> int:
    """Run ``pimrl train ARGV`` with the phases marked; print {phase: peak bytes} as JSON on
    the last line of stderr."""
    import pimrl.swiftrl.records as rm
    import pimrl.swiftrl.trainer as tm
    import pimrl.swiftrl.owned as om
    import pimrl.baselines.cpu as cpu
    from pimrl.cli import main
    from pimrl.learners.reference import OfflineLearner
    from pimrl.dpuset import DpuPackageSet

    ph = Phases()
    runs = [0]                  # fits begun: a scaling run's later fits mark "prep 2", ...
    ran = set()                 # fits whose first launch was marked

    def named(phase):
        return phase if runs[0] <= 1 else f"{phase} {runs[0]}"

    def at_entry(obj, name, phase, once=False):
        fn = getattr(obj, name)

        def wrapped(*a, **k):
            if not (once and runs[0] in ran):
                ph.mark(named(phase))
                ran.add(runs[0]) if once else None
            return fn(*a, **k)
        setattr(obj, name, wrapped)

    def at_exit(obj, name, phase):
        fn = getattr(obj, name)

        def wrapped(*a, **k):
            out = fn(*a, **k)
            ph.mark(named(phase))
            return out
        setattr(obj, name, wrapped)

    fit = tm.PimTrainer.fit

    def counted_fit(self, *a, **k):
        runs[0] += 1
        return fit(self, *a, **k)
    tm.PimTrainer.fit = counted_fit
    at_entry(tm, "check_dpu_records", "prep")
    at_exit(tm, "dpu_records", "push")
    at_entry(om, "plan_owners", "owner_sort")
    at_exit(om, "plan_owners", "reorder")
    at_entry(rm, "dpu_record_matrix", "prep")
    at_entry(DpuPackageSet, "__init__", "push")
    at_entry(DpuPackageSet, "run", "run", once=True)
    at_entry(OfflineLearner, "fit", "train")
    at_entry(cpu, "cpu_baseline", "train")
    rc = main(["train", *argv])
    ph.mark("end")
    peaks = {k: v for k, v in ph.peaks.items() if k != "end"}
    print(json.dumps({"rc": rc, "phases": peaks, "order": ph.order}), file=sys.stderr)
    return rc


# -------------------------------------------------------------------------- parent process
def measure(train_args) -> dict:
    p = subprocess.run([sys.executable, __file__, "--child", *train_args], capture_output=True,
                       text=True)
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    try:
        got = json.loads(last)
    except ValueError:
        raise SystemExit(f"the run failed (status {p.returncode}):\n{p.stderr[-3000:]}")
    got["stdout"] = p.stdout
    return got


def dataset(workdir: Path, n: int) -> Path:
    path = workdir / f"taxi-{n}.pimrl"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pimrl", "data", "generate", "--env", "Taxi-v3",
                        "--n", str(n), "--seed", "0", "--out", str(path)], check=True)
    return path


def plan_of(n, dpus, args, backend="pim", source="file"):
    from pimrl.memplan import plan_memory

    if isinstance(dpus, str):
        dpus = [int(x) for x in dpus.split(",")]
    return plan_memory(n, 500, 6, backend=backend, n_dpus=dpus, tasklets=args.tasklets,
                       aggregate=args.aggregate, dtype=args.dtype, partition=args.partition,
                       source=source, tasklet_mode=args.tasklet_mode)


def phase_plans(n, dpus, args, backend="pim", source="file") -> dict:
    """Each phase's planned parts (not only the peak's)."""
    from pimrl import memplan

    saved = memplan._finish
    seen = {}

    def keep(phases, source):
        seen.update(phases)
        return saved(phases, source)
    memplan._finish = keep
    try:
        plan = plan_of(n, dpus, args, backend, source)
    finally:
        memplan._finish = saved
    return plan, seen


def calibrate(args, workdir: Path) -> None:
    from pimrl.memplan import BASELINE

    n = 20_000
    path = dataset(workdir, n)
    rows = []
    for backend, dpus in (("pim", 8), ("pim", 64), ("reference", 1), ("cpu", 1)):
        extra = ["--backend", backend] + (["--dpus", str(dpus)] if backend == "pim" else [])
        got = measure([str(path), *extra, "--epochs", "1"])
        plan, phases = phase_plans(n, dpus, args, backend)
        for phase, peak in got["phases"].items():
            parts = phases.get(phase, {})
            data = sum(v for k, v in parts.items() if k != "baseline")
            rows.append((backend, dpus, phase, peak, data, peak - data,
                         BASELINE.get(phase if backend == "pim" or phase == "load" else backend)))
    print(f"{'backend':<10}{'DPUs':>5}  {'phase':<10}{'peak MiB':>10}{'data MiB':>10}"
          f"{'baseline MiB':>14}{'in memplan':>12}")
    for b, d, ph, peak, data, base, now in rows:
        print(f"{b:<10}{d:>5}  {ph:<10}{peak / 2**20:10.1f}{data / 2**20:10.1f}"
              f"{base / 2**20:14.1f}{(now or 0) / 2**20:12.1f}")
    print("peak: measured (VmHWM of the phase); data: planned; baseline = peak - data")


def compare(args, workdir: Path) -> list:
    out = []
    for n in args.transitions:
        for dpus in args.dpus:
            if args.generated:
                data = ["--env", "Taxi-v3", "--transitions", str(n)]
                source = "generated"
            else:
                data = [str(dataset(workdir, n))]
                source = "file"
            got = measure([*data, "--backend", "pim", "--dpus", dpus, "--epochs", str(args.epochs),
                           "--no-eval", "--aggregate", args.aggregate, "--dtype", args.dtype,
                           "--partition", args.partition, "--tasklets", str(args.tasklets),
                           "--tasklet-mode", args.tasklet_mode, "--json"])
            report = json.loads(got["stdout"])
            assert report["memory_plan"]["total_planned_bytes"] == plan_of(
                n, dpus, args, source=source).total
            plan, phases = phase_plans(n, dpus, args, source=source)
            # the phases' peaks: the process's peak (resetting VmHWM resets ru_maxrss too,
            # so the report's peak_rss_measured_bytes is only the last phase's here)
            row = {"transitions": n, "dpus": dpus, "source": source,
                   "total_planned_bytes": plan.total, "peak_phase_planned": plan.peak_phase,
                   "peak_rss_measured_bytes": max(got["phases"].values()),
                   "phases_measured_bytes": got["phases"],
                   "phases_planned_bytes": plan.phases}
            row["ratio"] = row["peak_rss_measured_bytes"] / plan.total
            out.append(row)
            if not args.json:
                print(f"{n:>11,} transitions, {dpus} DPUs ({source}): planned "
                      f"{plan.total / 2**30:.3f} GiB, measured {row['peak_rss_measured_bytes'] / 2**30:.3f}"
                      f" GiB (measured/planned {row['ratio']:.3f})")
                for ph in got["order"]:
                    planned = (f"{plan.phases[ph] / 2**20:9.1f} MiB" if ph in plan.phases
                               else "        -    ")
                    print(f"    {ph:<10} planned {planned}   measured "
                          f"{got['phases'][ph] / 2**20:9.1f} MiB")
    if args.json:
        print(json.dumps(out))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", default="4000000",
                    type=lambda s: [int(float(x)) for x in s.split(",")])
    ap.add_argument("--dpus", default="2000", type=lambda s: s.split(";"),
                    help="DPU counts, one run each, separated by ';' (a comma list is one "
                    "scaling run: --dpus '125,2000;2000')")
    ap.add_argument("--tasklets", type=int, default=16)
    ap.add_argument("--tasklet-mode", default="rows")
    ap.add_argument("--aggregate", default="mean")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--partition", default="contiguous")
    ap.add_argument("--generated", action="store_true", help="--env Taxi-v3 instead of a file")
    ap.add_argument("--workdir", help="where the dataset files are kept (default: a temporary "
                    "folder, removed)")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.calibrate:
            calibrate(args, workdir)
        else:
            compare(args, workdir)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
