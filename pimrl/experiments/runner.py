"""``pimrl scale``: run a study's sweeps, one CSV row a run, resumable.

For each run: the dataset (generated once per environment at the largest size any run
needs; smaller runs take its prefix, which is exactly the smaller dataset since record ``i``
depends on ``i`` alone), the PIM training on the simulated UPMEM system (times *modelled*),
the exact evaluation of the aggregated greedy policy against the optimum, and the CPU
baselines (single- and multi-threaded, times *measured*) and the GPU baseline (measured
with CUDA events where a GPU exists, otherwise left empty with ``gpu_status`` saying "not
measured") on the same data. Baselines that do not depend on the DPU count are computed
once and shared by the rows that use them.

After each finished row ``results.csv`` is rewritten atomically (a temporary file, then
``os.replace``), so an interrupted sweep loses at most the row in progress; rerunning the
same command reads the file, keys every row by its parameters and computes only the rows
still missing.
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pimrl.experiments.config import (
    PARAM_COLUMNS, StudyConfig, expand_runs, learner_params, load_config, run_key,
)

#: Result columns after the parameters. Unit and provenance are in every time's name:
#: ``_modelled_s`` comes from the PIM cost model, ``_measured_s`` is wall clock (CPU) or
#: CUDA events (GPU) on the machine named in meta.json.
RESULT_COLUMNS = (
    "pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s", "pim_inter_dpu_modelled_s",
    "pim_dpu_cpu_modelled_s", "pim_total_modelled_s", "pim_updates",
    "pim_updates_per_s_modelled", "pim_saturations", "pim_host_aggregation_measured_s",
    "pim_simulation_wall_measured_s",
    "success_rate", "mean_return", "optimal_success_rate", "optimal_mean_return",
    "eval_method", "eval_horizon",
    "quality_round", "time_to_quality_modelled_s", "quality_curve",
    "cpu_threads", "cpu_partitions", "cpu_1t_measured_s", "cpu_1t_updates_per_s_measured",
    "cpu_mt_measured_s", "cpu_mt_updates_per_s_measured",
    "cpu_1t_success_rate", "cpu_1t_mean_return", "cpu_mt_success_rate", "cpu_mt_mean_return",
    "gpu_status", "gpu_partitions", "gpu_lanes", "gpu_h2d_measured_s", "gpu_kernel_measured_s",
    "gpu_d2h_measured_s", "gpu_aggregate_measured_s", "gpu_total_measured_s",
    "gpu_updates_per_s_measured", "gpu_success_rate", "gpu_mean_return",
)
COLUMNS = ("row_key",) + PARAM_COLUMNS + RESULT_COLUMNS + ("finished_at", "session")
CPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("cpu_"))
GPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("gpu_"))

COLUMN_NOTES = {
    "_modelled_s": "seconds, modelled by pimrl's UPMEM cost model (not measured)",
    "_measured_s": "seconds, measured on the machine in meta.json (wall clock for the CPU, "
                   "CUDA events for GPU transfers and kernel); compilation excluded, except in "
                   "pim_simulation_wall_measured_s",
    "pim_simulation_wall_measured_s": "wall clock of the simulator itself (not a PIM time); "
                                      "the first row of a session includes numba compilation",
    "pim_updates_per_s_modelled": "Q-updates per modelled second of the whole PIM run",
    "_updates_per_s_measured": "Q-updates per measured second",
    "success_rate": "exact probability that the aggregated greedy policy reaches the goal",
    "mean_return": "exact expected undiscounted return of the aggregated greedy policy",
    "optimal_": "the same for the optimal policy (value iteration, same gamma)",
    "quality_round": "first round whose greedy policy reaches the optimum within tolerance "
                     "(pimrl.experiments.quality); empty if none",
    "time_to_quality_modelled_s": "modelled time of the run up to that round, plus the "
                                  "table gather that stopping there needs (modelled)",
    "quality_curve": "per round: modelled_s:mean_return:success_rate, '|'-separated",
    "cpu_1t": "CPU baseline, 1 thread, one partition (the whole dataset in order)",
    "cpu_mt": "CPU baseline, cpu_threads threads, cpu_partitions partitions averaged",
    "gpu_status": "'measured: <device>' or 'not measured: <reason>' (no figure is invented)",
    "session": "index in meta.json's sessions of the run that computed the row (its machine)",
}


class SweepInterrupted(RuntimeError):
    """Raised by the stop hook; everything finished so far is saved."""


@dataclass
class ScaleReport:
    out_dir: str
    total_rows: int
    reused_rows: int = 0
    computed_rows: int = 0
    pim_runs: int = 0
    cpu_runs: int = 0
    gpu_runs: int = 0
    wall_s: float = 0.0
    gpu_status: str = ""
    dropped_rows: int = 0
    interrupted: bool = False
    files: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# ----------------------------------------------------------------------------- files
def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return "" if np.isnan(v) else repr(v)
    if isinstance(v, (np.integer,)):
        return str(int(v))
    return str(v)


def write_atomic(path: Path, text: str):
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_csv_atomic(path: Path, rows: list[dict]):
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: _fmt(r.get(c)) for c in COLUMNS})
    write_atomic(path, buf.getvalue())


def read_results(path) -> list[dict]:
    """results.csv as a list of dicts of strings (empty list if absent)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------- machine
def versions() -> dict:
    import importlib.metadata as md

    import matplotlib
    import numba

    import pimrl

    out = {"pimrl": pimrl.__version__, "python": platform.python_version(),
           "numpy": np.__version__, "numba": numba.__version__,
           "matplotlib": matplotlib.__version__}
    for dist in ("llvmlite", "numba-cuda"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def machine() -> dict:
    import numba

    info = {"platform": platform.platform(), "machine": platform.machine(),
            "logical_cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "numba_threads": int(numba.config.NUMBA_NUM_THREADS)}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    return info


# ----------------------------------------------------------------------------- progress
class Progress:
    """A one-line progress bar on stderr (a line every 5 % when stderr is not a terminal)."""

    def __init__(self, total: int, done: int, enabled: bool = True, stream=None):
        self.total, self.done, self.start_done = total, done, done
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.step = max(1, total // 20)

    def update(self, label: str):
        self.done += 1
        if not self.enabled:
            return
        if not self.tty and self.done % self.step and self.done != self.total:
            return
        el = time.perf_counter() - self.t0
        fresh = self.done - self.start_done
        eta = el / fresh * (self.total - self.done) if fresh else 0.0
        width = 28
        fill = int(width * self.done / self.total)
        line = (f"scale [{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                f"{el:5.0f}s elapsed, ETA {eta:5.0f}s | {label}")
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        if self.enabled and self.tty and self.done != self.total:
            self.stream.write("\n")
            self.stream.flush()


# ----------------------------------------------------------------------------- the sweep
class _Data:
    """Environments, datasets (largest size per env, prefixes for smaller runs), optima."""

    def __init__(self, runs):
        self.need = {}
        for r in runs:
            k = (r["env"], r["seed"], r["data_policy"])
            self.need[k] = max(self.need.get(k, 0), int(r["n_transitions"]))
        self.envs, self.records = {}, {}

    def env(self, env_id):
        from pimrl.envs import make

        if env_id not in self.envs:
            self.envs[env_id] = make(env_id)
        return self.envs[env_id]

    def dataset(self, run):
        from pimrl.data import generate_dataset

        k = (run["env"], run["seed"], run["data_policy"])
        if k not in self.records:
            self.records[k] = generate_dataset(self.env(run["env"]), self.need[k], int(run["seed"]),
                                               policy=run["data_policy"])
        return self.records[k][: int(run["n_transitions"])]


def _quality(env, q, gamma):
    from pimrl.envs import evaluate_against_optimum

    ev = evaluate_against_optimum(env, q, gamma)
    return ev


def _cpu_key(run, threads):
    return (run["env"], run["seed"], run["data_policy"], run["n_transitions"], run["variant"],
            run["next_action"], run["epochs"], run["alpha"], run["gamma"], run["epsilon"],
            run["stride"], run["frac_bits"], threads)


def _gpu_key(run, partitions, lanes):
    return _cpu_key(run, None) + (partitions, lanes)


def _resolve_threads(spec) -> int:
    from pimrl.baselines.cpu import max_threads

    if spec in ("all", None):
        return max_threads()
    return min(int(spec), max_threads())


def run_scale(config, out_dir, *, progress: bool = True, on_row=None,
              stop_after: int | None = None) -> ScaleReport:
    """Run (or resume) the study ``config`` (a path or a :class:`StudyConfig`) into ``out_dir``.

    ``on_row(row, report)`` is called after each finished row is saved; ``stop_after`` (or
    the environment variable ``PIMRL_SCALE_STOP_AFTER``) raises :class:`SweepInterrupted`
    after that many rows have been computed in this call (for tests of resumption).
    """
    t_start = time.perf_counter()
    cfg = config if isinstance(config, StudyConfig) else load_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, meta_path = out / "results.csv", out / "meta.json"
    if stop_after is None and os.environ.get("PIMRL_SCALE_STOP_AFTER"):
        stop_after = int(os.environ["PIMRL_SCALE_STOP_AFTER"])

    runs = expand_runs(cfg)
    keys = [run_key(r) for r in runs]
    wanted = set(keys)
    previous = {}
    dropped = []
    for row in read_results(csv_path):
        k = row.get("row_key") or run_key(row)
        if k in wanted:
            previous[k] = row
        else:
            dropped.append(row)
    if dropped:
        # Keep every row ever dropped (earlier sessions' too), then take them out of the CSV.
        dropped_path = out / "results.dropped.csv"
        write_csv_atomic(dropped_path, read_results(dropped_path) + dropped)
        write_csv_atomic(csv_path, [previous[k] for k in keys if k in previous])
        print(f"pimrl scale: {len(dropped)} row(s) of {csv_path} are not in this config; moved "
              f"to {dropped_path.name}", file=sys.stderr)

    from pimrl.baselines import gpu as gpu_mod

    bl = cfg.baselines
    gpu_ok, gpu_reason = gpu_mod.gpu_status() if bl["gpu"] else (False, "disabled in the config")
    gpu_status = f"measured: {gpu_reason}" if gpu_ok else f"not measured: {gpu_reason}"
    threads = _resolve_threads(bl["cpu_threads"])
    # A finished row lacking a baseline this config asks for (and can measure) is not
    # finished: it is computed again, its memoised parts reused.
    incomplete = [k for k, row in previous.items()
                  if (bl["cpu"] and not row.get("cpu_1t_measured_s"))
                  or (gpu_ok and not row.get("gpu_total_measured_s"))]
    stale = {k: previous.pop(k) for k in incomplete}
    report = ScaleReport(str(out), len(runs), reused_rows=len(previous), gpu_status=gpu_status,
                         dropped_rows=len(dropped),
                         files={"results": str(csv_path), "meta": str(meta_path)})

    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    session = {"started": _dt.datetime.now().isoformat(timespec="seconds"), "status": "running"}
    meta.update({
        "study": cfg.study.get("name"), "config_path": cfg.path, "config_sha256": cfg.sha256,
        "config": cfg.as_dict(), "versions": versions(), "machine": machine(),
        "seeds": {"dataset_seed": cfg.study["seed"], "learner_seed": cfg.study["seed"],
                  "rule": "datasets: generate_dataset(env, n, seed) (PCG64); learners: xorshift32 "
                          "lane streams lane_seed(seed, lane) (docs/design.md)"},
        "gpu": {"measured": gpu_ok, "status": gpu_status},
        "cpu_baseline": {"threads_multi": threads, "partitions_multi": threads,
                         "timing": "wall clock (perf_counter) of training + host average, after "
                                   "an untimed warm-up call (numba compilation excluded); median "
                                   f"of {bl['cpu_repeats']} repeat(s)"},
        "pim": {"timing": "modelled by pimrl's cost model of the UPMEM system (docs/cost-model.md);"
                          " pim_simulation_wall_measured_s is only the simulator's own run time"},
        "columns": {"order": list(COLUMNS), "notes": COLUMN_NOTES},
        "n_rows_planned": len(runs),
    })
    # Each session keeps its own machine and versions: rows name their session, so measured
    # times of a resumed sweep stay tied to the machine that measured them.
    session.update(machine=meta["machine"], versions=meta["versions"])
    meta.setdefault("sessions", []).append(session)
    session_index = len(meta["sessions"]) - 1
    write_atomic(meta_path, json.dumps(meta, indent=2, default=str) + "\n")
    if not gpu_ok:
        print(f"GPU: {gpu_status}", file=sys.stderr)

    # Baseline results already in the file are reused, not recomputed.
    cpu_memo, gpu_memo = {}, {}
    run_of = dict(zip(keys, runs))
    for k, row in list(previous.items()) + list(stale.items()):
        run = run_of[k]
        if row.get("cpu_1t_measured_s"):
            # Only a measurement with the thread count of this session stands for it.
            cpu_memo.setdefault(_cpu_key(run, int(row["cpu_threads"] or 0)),
                                {c: row[c] for c in CPU_COLUMNS})
        if row.get("gpu_partitions"):
            gpu_memo.setdefault(_gpu_key(run, row["gpu_partitions"], row["gpu_lanes"]),
                                {c: row[c] for c in GPU_COLUMNS})

    data = _Data(runs)
    rows = {k: previous[k] for k in keys if k in previous}
    bar = Progress(len(runs), len(previous), enabled=progress)
    computed = 0
    try:
        for run, k in zip(runs, keys):
            if k in rows:
                continue
            row = _compute_row(run, k, data, cfg, threads, gpu_ok, gpu_status, cpu_memo,
                               gpu_memo, report)
            row["session"] = session_index
            rows[k] = row
            computed += 1
            report.computed_rows = computed
            write_csv_atomic(csv_path, [rows[x] for x in keys if x in rows])
            bar.update(f"{run['sweep']} {run['env']} {run['variant']} {run['n_dpus']} DPUs "
                       f"{run['aggregator']} t{run['tasklets']}")
            if on_row is not None:
                on_row(row, report)
            if stop_after is not None and computed >= stop_after and computed < len(runs) - len(previous):
                raise SweepInterrupted(f"stopped after {computed} row(s) as asked")
    except (SweepInterrupted, KeyboardInterrupt):
        report.interrupted = True
        session.update(status="interrupted", rows_computed=computed,
                       wall_s=round(time.perf_counter() - t_start, 3))
        write_atomic(meta_path, json.dumps(meta, indent=2, default=str) + "\n")
        raise
    except Exception as exc:
        session.update(status="failed", error=str(exc), rows_computed=computed,
                       wall_s=round(time.perf_counter() - t_start, 3))
        write_atomic(meta_path, json.dumps(meta, indent=2, default=str) + "\n")
        raise
    finally:
        bar.close()
    if not csv_path.exists():
        write_csv_atomic(csv_path, [rows[x] for x in keys if x in rows])
    report.wall_s = time.perf_counter() - t_start
    session.update(status="complete", finished=_dt.datetime.now().isoformat(timespec="seconds"),
                   rows_computed=computed, rows_reused=len(previous),
                   pim_runs=report.pim_runs, cpu_runs=report.cpu_runs, gpu_runs=report.gpu_runs,
                   wall_s=round(report.wall_s, 3))
    write_atomic(meta_path, json.dumps(meta, indent=2, default=str) + "\n")
    return report


def _compute_row(run, key, data, cfg, threads, gpu_ok, gpu_status, cpu_memo, gpu_memo, report):
    from pimrl.baselines.cpu import cpu_baseline
    from pimrl.pim.trainer import PimTrainer

    env = data.env(run["env"])
    records = data.dataset(run)
    params = learner_params(run)
    S, A = env.n_states, env.n_actions
    row = dict(run)
    row["row_key"] = key

    from pimrl.experiments.quality import curve_text, round_evaluator, time_to_quality

    tr = PimTrainer(params, n_dpus=run["n_dpus"], tasklets=run["tasklets"],
                    aggregate=run["aggregator"], hardware=run["hardware"],
                    on_round=round_evaluator(env, params.gamma)).fit(records, S, A)
    row.update(time_to_quality(tr.rounds_), quality_curve=curve_text(tr.rounds_))
    report.pim_runs += 1
    m = tr.timings_.modelled_s
    total = tr.timings_.modelled_total_s
    row.update(pim_cpu_dpu_modelled_s=m["cpu_dpu"], pim_kernel_modelled_s=m["dpu_kernel"],
               pim_inter_dpu_modelled_s=m["inter_dpu"], pim_dpu_cpu_modelled_s=m["dpu_cpu"],
               pim_total_modelled_s=total, pim_updates=tr.n_updates_,
               pim_updates_per_s_modelled=tr.n_updates_ / total if total > 0 else float("nan"),
               pim_saturations=tr.saturations_,
               pim_host_aggregation_measured_s=tr.timings_.measured_s.get("host_aggregation"),
               pim_simulation_wall_measured_s=tr.timings_.measured_s.get("simulation_wall"))
    ev = _quality(env, tr.q_, params.gamma)
    row.update(success_rate=ev["success_rate"], mean_return=ev["mean_return"],
               optimal_success_rate=ev["optimal_success_rate"],
               optimal_mean_return=ev["optimal_mean_return"], eval_method=ev["method"],
               eval_horizon=ev["horizon"])

    bl = cfg.baselines
    if bl["cpu"]:
        ck = _cpu_key(run, threads)
        if ck not in cpu_memo:
            one = cpu_baseline(records, S, A, params, threads=1, repeats=int(bl["cpu_repeats"]))
            multi = cpu_baseline(records, S, A, params, threads=threads,
                                 repeats=int(bl["cpu_repeats"]), check=False)
            report.cpu_runs += 2
            e1 = _quality(env, one.q, params.gamma)
            em = _quality(env, multi.q, params.gamma)
            cpu_memo[ck] = {
                "cpu_threads": threads, "cpu_partitions": multi.partitions,
                "cpu_1t_measured_s": one.seconds, "cpu_1t_updates_per_s_measured": one.updates_per_s,
                "cpu_mt_measured_s": multi.seconds,
                "cpu_mt_updates_per_s_measured": multi.updates_per_s,
                "cpu_1t_success_rate": e1["success_rate"], "cpu_1t_mean_return": e1["mean_return"],
                "cpu_mt_success_rate": em["success_rate"], "cpu_mt_mean_return": em["mean_return"]}
        row.update(cpu_memo[ck])

    row["gpu_status"] = gpu_status
    if gpu_ok:
        from pimrl.baselines.gpu import gpu_baseline

        if bl["gpu_partitions"] == "dpus":
            parts, lanes = run["n_dpus"], run["tasklets"]
        else:
            parts, lanes = int(bl["gpu_partitions"]), 1
        gk = _gpu_key(run, str(parts), str(lanes))
        if gk not in gpu_memo:
            g = gpu_baseline(records, S, A, params, partitions=parts, lanes=lanes,
                             threads_per_block=int(bl["gpu_threads_per_block"]),
                             repeats=int(bl["gpu_repeats"]), check=False)
            report.gpu_runs += 1
            eg = _quality(env, g.q, params.gamma)
            gpu_memo[gk] = {
                "gpu_status": gpu_status, "gpu_partitions": parts, "gpu_lanes": lanes,
                "gpu_h2d_measured_s": g.h2d_seconds, "gpu_kernel_measured_s": g.kernel_seconds,
                "gpu_d2h_measured_s": g.d2h_seconds,
                "gpu_aggregate_measured_s": g.aggregate_seconds, "gpu_total_measured_s": g.seconds,
                "gpu_updates_per_s_measured": g.updates_per_s,
                "gpu_success_rate": eg["success_rate"], "gpu_mean_return": eg["mean_return"]}
        row.update(gpu_memo[gk])
    row["finished_at"] = _dt.datetime.now().isoformat(timespec="seconds")
    return row
