"""``pimrl scale``: run a study's sweeps, one CSV row a run, resumable, here or on a cluster.

For each run: the dataset (generated at the largest size any run of its environment needs;
smaller runs take its prefix, which is exactly the smaller dataset since record ``i``
depends on ``i`` alone), the PIM training on the simulated UPMEM system (times *modelled*),
the exact evaluation of the aggregated greedy policy against the optimum, and the CPU
baselines (single- and multi-threaded, times *measured*) and the GPU baseline (measured
with CUDA events where a GPU exists, otherwise left empty with ``gpu_status`` saying "not
measured") on the same data. Baselines that do not depend on the DPU count are computed
once and shared by the rows that use them.

Work is a set of tasks: one per row (PIM run and evaluation) and one per distinct baseline.
An executor (:mod:`pimrl.cluster`) runs them: ``local`` here, one after another; ``dask``
on the workers of a Dask cluster, each task on one worker, a task whose worker dies run
again elsewhere. Finished tasks stream back to this process, which alone writes
``results.csv`` (rows in the config's order, whatever order they finish in) and
``meta.json``, atomically after each finished row (:mod:`pimrl.io`): an interrupted sweep
loses at most the rows in progress. Rerunning the same command validates the rows already
in the file, keys every row by its parameters and computes only the rows still missing
(or found invalid). A lock on the results folder keeps two sweeps out of one ``--out``.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pimrl.experiments.config import (
    PARAM_COLUMNS, StudyConfig, expand_runs, learner_params, load_config, run_key,
)
from pimrl.io import atomic_write_text

#: Result columns after the parameters. Unit and provenance are in every time's name:
#: ``_modelled_s`` comes from the PIM cost model, ``_measured_s`` is wall clock (CPU) or
#: CUDA events (GPU) on the worker the row names (its machine is in meta.json).
RESULT_COLUMNS = (
    "pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s", "pim_inter_dpu_modelled_s",
    "pim_dpu_cpu_modelled_s", "pim_total_modelled_s", "pim_updates",
    "pim_updates_per_s_modelled", "pim_saturations", "pim_conflicts",
    "pim_host_aggregation_measured_s",
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
) + (
    # younger columns: a results file written before them lacks them (read as empty)
    "cpu_c_1t_measured_s", "cpu_c_1t_updates_per_s_measured", "cpu_c_mt_measured_s",
    "cpu_c_mt_updates_per_s_measured", "cpu_1t_quality_epoch",
    "cpu_1t_time_to_quality_measured_s", "cpu_mt_quality_epoch",
    "cpu_mt_time_to_quality_measured_s", "cpu_1t_epochs_run", "cpu_mt_epochs_run",
    "peak_rss_measured_bytes",
)
#: Result columns a results file may lack (written before they existed).
YOUNGER_COLUMNS = RESULT_COLUMNS[RESULT_COLUMNS.index("cpu_c_1t_measured_s"):]
#: Who measured a row: the worker of its PIM run, and of its baselines (``local`` or a Dask
#: worker's address; meta.json's session lists the workers and their hosts).
WORKER_COLUMNS = ("worker", "baseline_worker")
COLUMNS = ("row_key",) + PARAM_COLUMNS + RESULT_COLUMNS + WORKER_COLUMNS + ("finished_at", "session")
CPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("cpu_"))
GPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("gpu_"))

COLUMN_NOTES = {
    "_modelled_s": "seconds, modelled by pimrl's UPMEM cost model (not measured)",
    "_measured_s": "seconds, measured by the worker the row names (wall clock for the CPU, "
                   "CUDA events for GPU transfers and kernel); compilation excluded, except in "
                   "pim_simulation_wall_measured_s",
    "pim_simulation_wall_measured_s": "wall clock of the simulator itself (not a PIM time); "
                                      "a worker's first row includes numba compilation",
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
    "cpu_c_": "the same CPU baseline written in plain C (kernels/cpu_loop.c; baselines.c_loop)",
    "_quality_epoch": "first epoch whose greedy policy reaches the optimum within tolerance "
                      "(baselines.cpu_quality: the CPU run one epoch at a time); empty if none",
    "_epochs_run": "passes the CPU baseline ran (baselines.cpu_quality: until the optimum, at "
                   "most epochs); its time and updates/s are those of these passes, and the C "
                   "loop at that thread count runs as many",
    "_time_to_quality_measured_s": "measured training time up to that epoch (evaluation "
                                   "excluded)",
    "peak_rss_measured_bytes": "peak resident memory of the process that ran the row, so far "
                               "(getrusage ru_maxrss; measured)",
    "gpu_status": "'measured: <device>' or 'not measured: <reason>' (no figure is invented)",
    "worker": "the process that ran the PIM simulation and evaluation ('local', or a Dask "
              "worker's address listed in meta.json's session)",
    "baseline_worker": "the process that measured the CPU/GPU baselines (as worker)",
    "session": "index in meta.json's sessions of the run that computed the row (its machine)",
}


class SweepInterrupted(RuntimeError):
    """Raised by the stop hook; everything finished so far is saved."""


class OutputBusy(ValueError):
    """Another sweep holds the results folder."""


class InvalidResults(ValueError):
    """A results.csv that cannot be read as pimrl scale results; names file, line, column."""


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
    invalid_rows: int = 0
    failed_rows: list = field(default_factory=list)   # {"row_key", "run", "error"}
    executor: str = "local"
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


def _header() -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(COLUMNS)
    return buf.getvalue()


def csv_line(row: dict) -> str:
    """One row as a line of results.csv."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
    w.writerow({c: _fmt(row.get(c)) for c in COLUMNS})
    return buf.getvalue()


def csv_text(rows: list[dict], lines: dict | None = None) -> str:
    """results.csv's text. ``lines`` (row_key -> line) memoises finished rows' lines: a sweep
    rewrites the whole file after every row, and formatting every row again each time made
    the full study's writes grow with the square of its rows (about 30 s of 672 rows)."""
    parts = [_header()]
    for r in rows:
        key = r.get("row_key")
        line = lines.get(key) if lines is not None and key else None
        if line is None:
            line = csv_line(r)
            if lines is not None and key:
                lines[key] = line
        parts.append(line)
    return "".join(parts)


def write_csv_atomic(path: Path, rows: list[dict], lines: dict | None = None):
    atomic_write_text(path, csv_text(rows, lines))


def write_json_atomic(path: Path, obj):
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def read_results(path) -> list[dict]:
    """results.csv as a list of dicts of strings (empty list if absent), unchecked; see
    :func:`load_results` for the validated rows."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# What each result column must hold. Empty is allowed only where a baseline may be off, a
# GPU absent, or the column younger than the file.
_REQUIRED = ("row_key", *(c for c in PARAM_COLUMNS if c != "transitions_per_dpu"),
             "pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s",
             "pim_inter_dpu_modelled_s", "pim_dpu_cpu_modelled_s", "pim_total_modelled_s",
             "pim_updates", "pim_saturations", "success_rate", "mean_return",
             "optimal_success_rate", "optimal_mean_return", "eval_method", "finished_at", "session")
_NONNEG = tuple(c for c in RESULT_COLUMNS if c.endswith("_s") or "_per_s_" in c)
_COUNTS = ("pim_updates", "pim_saturations", "session", "peak_rss_measured_bytes")
_POSITIVE_INTS = ("cpu_threads", "cpu_partitions", "gpu_partitions", "gpu_lanes", "eval_horizon",
                  "cpu_1t_quality_epoch", "cpu_mt_quality_epoch", "cpu_1t_epochs_run",
                  "cpu_mt_epochs_run")
_RATES = tuple(c for c in RESULT_COLUMNS if c.endswith("success_rate"))
_FINITE = tuple(c for c in RESULT_COLUMNS if c.endswith("mean_return"))


def _finite(text):
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def row_problem(row: dict, n_fields: int | None = None) -> str | None:
    """Why a results row cannot be trusted (one phrase naming the column and value), or None."""
    if None in row:
        return f"{len(row) - 1 + len(row[None])} fields where the header has {len(row) - 1}"
    missing = [c for c in COLUMNS if c in row and row[c] is None]
    if missing:
        have = sum(v is not None for v in row.values())
        return f"truncated: {have} of {n_fields or len(row)} fields (no {missing[0]})"
    for c in _REQUIRED:
        if not row.get(c):
            return f"{c} is empty"
    try:
        key = run_key(row)
    except KeyError as exc:
        return f"no column {exc}"
    if row["row_key"] != key:
        return f"row_key {row['row_key']!r} does not match the row's parameters (key {key})"
    for c in _NONNEG:
        v = row.get(c)
        if v:
            x = _finite(v)
            if x is None or x < 0:
                return f"{c} = {v!r} is not a finite non-negative number"
    for c in _COUNTS + _POSITIVE_INTS:
        v = row.get(c)
        if v:
            try:
                x = int(v)
            except ValueError:
                return f"{c} = {v!r} is not an integer"
            if x < (1 if c in _POSITIVE_INTS else 0):
                return f"{c} = {v!r} is out of range"
    for c in _RATES:
        v = row.get(c)
        if v:
            x = _finite(v)
            if x is None or not 0.0 <= x <= 1.0:
                return f"{c} = {v!r} is not a probability in [0, 1]"
    for c in _FINITE:
        v = row.get(c)
        if v and _finite(v) is None:
            return f"{c} = {v!r} is not a finite number"
    parts = sum(float(row[c]) for c in ("pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s",
                                         "pim_inter_dpu_modelled_s", "pim_dpu_cpu_modelled_s"))
    if not math.isclose(parts, float(row["pim_total_modelled_s"]), rel_tol=1e-9, abs_tol=1e-15):
        return (f"pim_total_modelled_s = {row['pim_total_modelled_s']!r} is not the sum of its "
                f"four categories ({parts!r})")
    return None


def load_results(path, strict: bool = True):
    """(valid rows, [(line, row, problem)]) of a results.csv; with ``strict`` the first
    invalid row raises :class:`InvalidResults` naming the file, line and column."""
    path = Path(path)
    if not path.exists():
        return [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        lacking = [c for c in COLUMNS if c not in header and c not in WORKER_COLUMNS
                   and c not in YOUNGER_COLUMNS]
        if lacking:
            raise InvalidResults(f"{path}: header lacks column(s) {', '.join(lacking[:4])}"
                                 f"{' ...' if len(lacking) > 4 else ''}: not the results of this "
                                 f"pimrl scale (move the file away to start afresh)")
        good, bad = [], []
        first_line = {}                        # row_key -> the line that has it
        for row in reader:
            line = reader.line_num
            problem = row_problem(row, len(header))
            if problem is None:
                key = row["row_key"]
                if key in first_line:          # one row a run: a second copy is not a result
                    problem = f"duplicate of line {first_line[key]} (row_key {key})"
                else:
                    first_line[key] = line
            if problem is None:
                good.append(row)
            elif strict:
                raise InvalidResults(f"{path} line {line}: {problem}; run pimrl scale on this "
                                     f"folder to set it aside and compute the row again")
            else:
                bad.append((line, row, problem))
    return good, bad


# ----------------------------------------------------------------------------- lock
class OutputLock:
    """An exclusive lock on a results folder (``.pimrl-scale.lock``, ``flock``): held while
    a sweep runs, released by the kernel if the process dies. A second sweep is refused."""

    NAME = ".pimrl-scale.lock"

    def __init__(self, folder: Path):
        self.path = Path(folder) / self.NAME
        self.fd = None

    def __enter__(self):
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            finally:
                os.close(fd)
            raise OutputBusy(f"{self.path.parent}: another pimrl scale is writing here ({holder}); "
                             f"wait for it to finish, or give another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {platform.node()}, since "
                     f"{_dt.datetime.now().isoformat(timespec='seconds')}\n".encode())
        self.fd = fd
        return self

    def __exit__(self, *exc):
        os.close(self.fd)          # releases the lock; the file stays (removing it would race)
        self.fd = None


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

    def update(self, label: str, work: str = ""):
        """One more row done; ``work`` says what the executor is doing (the cluster's work)."""
        self.done += 1
        if work:
            label = f"{work} | {label}"
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


# ----------------------------------------------------------------------------- tasks
# Tasks run in a worker process (or here, for the local executor). Each keeps a small cache
# of environments and datasets so that rows of one environment on one worker share them.
_ENVS: dict = {}
_DATASETS: "OrderedDict" = OrderedDict()
_DATASETS_KEPT = 4


def _env(env_id):
    from pimrl.envs import make

    if env_id not in _ENVS:
        _ENVS[env_id] = make(env_id)
    return _ENVS[env_id]


def _dataset(run, need: int):
    """The run's records: the prefix of its environment's dataset of ``need`` transitions."""
    from pimrl.data import generate_dataset

    k = (run["env"], int(run["seed"]), run["data_policy"], int(need))
    if k not in _DATASETS:
        _DATASETS[k] = generate_dataset(_env(run["env"]), int(need), int(run["seed"]),
                                        policy=run["data_policy"])
        while len(_DATASETS) > _DATASETS_KEPT:
            _DATASETS.popitem(last=False)
    _DATASETS.move_to_end(k)
    return _DATASETS[k][: int(run["n_transitions"])]


def _quality(env, q, gamma):
    from pimrl.envs import evaluate_against_optimum

    return evaluate_against_optimum(env, q, gamma)


def pim_task(run: dict, need: int, numba_threads: int | None = None) -> dict:
    """A row's PIM simulation and the exact quality of its policy."""
    from pimrl.cluster import worker_facts
    from pimrl.swiftrl.trainer import PimTrainer

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    from pimrl.experiments.quality import curve_text, round_evaluator, time_to_quality

    tr = PimTrainer(params, n_dpus=run["n_dpus"], tasklets=run["tasklets"],
                    aggregate=run["aggregator"], hardware=run["hardware"],
                    on_round=round_evaluator(env, params.gamma)).fit(
        records, env.n_states, env.n_actions)
    m = tr.timings_.modelled_s
    total = tr.timings_.modelled_total_s
    ev = _quality(env, tr.q_, params.gamma)
    cols = dict(pim_cpu_dpu_modelled_s=m["cpu_dpu"], pim_kernel_modelled_s=m["dpu_kernel"],
                pim_inter_dpu_modelled_s=m["inter_dpu"], pim_dpu_cpu_modelled_s=m["dpu_cpu"],
                pim_total_modelled_s=total, pim_updates=tr.n_updates_,
                pim_updates_per_s_modelled=tr.n_updates_ / total if total > 0 else float("nan"),
                pim_saturations=tr.saturations_,
                pim_conflicts=tr.conflicts_ if params.tasklet_mode == "unlocked" else "",
                pim_host_aggregation_measured_s=tr.timings_.measured_s.get("host_aggregation"),
                pim_simulation_wall_measured_s=tr.timings_.measured_s.get("simulation_wall"),
                success_rate=ev["success_rate"], mean_return=ev["mean_return"],
                optimal_success_rate=ev["optimal_success_rate"],
                optimal_mean_return=ev["optimal_mean_return"], eval_method=ev["method"],
                eval_horizon=ev["horizon"])
    cols.update(time_to_quality(tr.rounds_), quality_curve=curve_text(tr.rounds_),
                peak_rss_measured_bytes=peak_rss_bytes())
    return {"columns": cols, "worker": facts}


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far (``ru_maxrss``: KiB on Linux, bytes on
    macOS); 0 where the platform does not say."""
    try:
        import resource
    except ImportError:                 # Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) * (1 if sys.platform == "darwin" else 1024)


def cpu_task(run: dict, need: int, threads: int, repeats: int,
             numba_threads: int | None = None, c_loop: bool = False,
             quality: bool = False) -> dict:
    """The CPU baselines (1 thread, and ``threads`` threads) of a row's data and learner;
    with ``c_loop`` the plain-C loop at both thread counts too; with ``quality`` the numba
    baselines run one epoch at a time, evaluated after each (evaluation off the clock), and
    stop at the first within tolerance of the optimum: their times and updates/s are those
    of the epochs run, and the C loop runs as many."""
    from pimrl.baselines.cpu import cpu_baseline, cpu_time_to_quality
    from pimrl.cluster import worker_facts
    from pimrl.learners.params import LearnerParams
    from pimrl.learners.reference import check_records

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    S, A = env.n_states, env.n_actions
    cols = {"cpu_threads": threads}
    epochs_run = {"1t": params.epochs, "mt": params.epochs}
    if quality:
        from pimrl.experiments.quality import round_evaluator

        check_records(records, S, A, params)
        evaluate = round_evaluator(env, params.gamma)
        for tag, n in (("1t", 1), ("mt", threads)):
            res = cpu_time_to_quality(records, S, A, params, evaluate, threads=n,
                                      stop_at_quality=True)
            ev = _quality(env, res["q"], params.gamma)
            epochs_run[tag] = res["epochs_run"]
            cols.update({f"cpu_{tag}_measured_s": res["seconds"],
                         f"cpu_{tag}_updates_per_s_measured":
                             len(records) * res["epochs_run"] / res["seconds"],
                         f"cpu_{tag}_epochs_run": res["epochs_run"],
                         f"cpu_{tag}_success_rate": ev["success_rate"],
                         f"cpu_{tag}_mean_return": ev["mean_return"],
                         f"cpu_{tag}_quality_epoch": res["quality_epoch"],
                         f"cpu_{tag}_time_to_quality_measured_s":
                             res["time_to_quality_measured_s"]})
        cols["cpu_partitions"] = threads
    else:
        one = cpu_baseline(records, S, A, params, threads=1, repeats=repeats)
        multi = cpu_baseline(records, S, A, params, threads=threads, repeats=repeats,
                             check=False)
        e1 = _quality(env, one.q, params.gamma)
        em = _quality(env, multi.q, params.gamma)
        cols.update({
            "cpu_partitions": multi.partitions,
            "cpu_1t_measured_s": one.seconds, "cpu_1t_updates_per_s_measured": one.updates_per_s,
            "cpu_mt_measured_s": multi.seconds,
            "cpu_mt_updates_per_s_measured": multi.updates_per_s,
            "cpu_1t_success_rate": e1["success_rate"], "cpu_1t_mean_return": e1["mean_return"],
            "cpu_mt_success_rate": em["success_rate"], "cpu_mt_mean_return": em["mean_return"]})
    if c_loop:
        from pimrl.baselines.c_loop import run_c_loop

        for tag, n in (("1t", 1), ("mt", threads)):
            same = LearnerParams(**{**params.as_dict(), "epochs": epochs_run[tag]})
            c = run_c_loop(records, S, A, same, partitions=n, threads=n, repeats=repeats)
            cols[f"cpu_c_{tag}_measured_s"] = c["train_measured_s"]
            cols[f"cpu_c_{tag}_updates_per_s_measured"] = (len(records) * epochs_run[tag]
                                                           / c["train_measured_s"])
    return {"columns": cols, "worker": facts}


def gpu_task(run: dict, need: int, parts: int, lanes: int, threads_per_block: int, repeats: int,
             gpu_status: str, numba_threads: int | None = None) -> dict:
    """The GPU baseline of a row's data and learner (CUDA events)."""
    from pimrl.baselines.gpu import gpu_baseline
    from pimrl.cluster import worker_facts

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    g = gpu_baseline(records, env.n_states, env.n_actions, params, partitions=parts, lanes=lanes,
                     threads_per_block=threads_per_block, repeats=repeats, check=False)
    eg = _quality(env, g.q, params.gamma)
    cols = {"gpu_status": gpu_status, "gpu_partitions": parts, "gpu_lanes": lanes,
            "gpu_h2d_measured_s": g.h2d_seconds, "gpu_kernel_measured_s": g.kernel_seconds,
            "gpu_d2h_measured_s": g.d2h_seconds, "gpu_aggregate_measured_s": g.aggregate_seconds,
            "gpu_total_measured_s": g.seconds, "gpu_updates_per_s_measured": g.updates_per_s,
            "gpu_success_rate": eg["success_rate"], "gpu_mean_return": eg["mean_return"]}
    return {"columns": cols, "worker": facts}


# ----------------------------------------------------------------------------- executors
class LocalTasks:
    """The local executor: tasks run here, in the order submitted, when results are asked for."""

    name = "local"
    numba_threads = None

    def __init__(self):
        self.queue = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cancel()

    def cancel(self):
        """Forget the tasks not yet run (a sweep that stops early leaves none behind)."""
        self.queue.clear()

    def describe(self) -> dict:
        from pimrl.cluster import worker_facts

        return {"executor": "local", "n_workers": 1, "workers": [worker_facts()]}

    def max_threads(self) -> int:
        from pimrl.baselines.cpu import max_threads

        return max_threads()

    def gpu_status(self) -> tuple[bool, str]:
        from pimrl.baselines import gpu as gpu_mod

        return gpu_mod.gpu_status()

    def submit(self, task_id, fn, *args):
        self.queue.append((task_id, fn, args))

    def results(self):
        """(task_id, result, None) or (task_id, None, exception) as tasks finish."""
        while self.queue:
            task_id, fn, args = self.queue.pop(0)
            try:
                result = fn(*args)
            except Exception as exc:          # the row fails on its own: recorded, not fatal
                yield task_id, None, exc
                continue
            yield task_id, result, None

    def work(self) -> str:
        return ""


class DaskTasks:
    """The dask executor: each task on one worker of a Dask cluster; results as they finish.

    A task whose worker dies is run again on another worker by the scheduler (up to
    ``distributed.scheduler.allowed-failures`` times; then it is a failed row)."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None,
                 numba_threads: int | None = None):
        # A LocalCluster's workers get 1 numba thread unless told; a joined cluster's keep theirs.
        if address is None and numba_threads is None:
            numba_threads = 1
        self.address, self.workers, self.numba_threads = address, workers, numba_threads
        self.futures = {}
        self._ctx = None
        self.client = None

    def __enter__(self):
        from pimrl.cluster import dask_client

        self._ctx = dask_client(self.address, self.workers, self.numba_threads)
        self.client = self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self.cancel()
        finally:
            self._ctx.__exit__(*exc)

    def cancel(self):
        """Cancel the tasks not yet collected (a sweep that stops early leaves none behind);
        bounded in time, so Ctrl-C stays prompt."""
        from pimrl.cluster import cancel_futures

        try:
            cancel_futures(self.client, self.futures)
        finally:
            self.futures.clear()

    def describe(self) -> dict:
        from pimrl.cluster import describe_cluster

        return describe_cluster(self.client, self.numba_threads)

    def max_threads(self) -> int:
        from pimrl.cluster import worker_facts

        facts = self.client.run(worker_facts, self.numba_threads).values()
        return min(f["numba_threads"] for f in facts)

    def gpu_status(self) -> tuple[bool, str]:
        from pimrl.baselines.gpu import gpu_status

        status = self.client.run(gpu_status)
        reasons = {why for ok, why in status.values()}
        if all(ok for ok, _ in status.values()) or len(reasons) == 1:
            return sorted(status.values())[0]      # the same on every worker
        for addr, (ok, why) in sorted(status.items()):
            if not ok:
                return False, f"worker {addr}: {why}"
        raise AssertionError("unreachable")

    def submit(self, task_id, fn, *args):
        import uuid

        fut = self.client.submit(fn, *args, pure=False,
                                 key=f"pimrl-{task_id[0]}-{uuid.uuid4().hex[:12]}")
        self.futures[fut] = task_id

    def results(self):
        from distributed import as_completed

        for fut in as_completed(list(self.futures)):
            task_id = self.futures.pop(fut)
            try:
                result = fut.result()
            except Exception as exc:          # includes KilledWorker: died too often
                yield task_id, None, exc
                continue
            finally:
                fut.release()
            yield task_id, result, None

    def work(self) -> str:
        try:
            processing = self.client.processing()
        except Exception:                     # the bar must never stop the sweep
            return ""
        busy = sum(1 for keys in processing.values() if keys)
        running = sum(len(keys) for keys in processing.values())
        return (f"{len(processing)} workers, {busy} busy, "
                f"{max(0, len(self.futures) - running)} queued")


def make_executor(spec="local", workers: int | None = None, numba_threads: int | None = None):
    """The executor named by ``spec`` (``local`` | ``dask`` | ``dask:ADDRESS``)."""
    from pimrl.cluster import check_sizes, parse_executor

    s = parse_executor(spec)
    check_sizes(s, workers, numba_threads)
    if s.kind == "local":
        return LocalTasks()
    return DaskTasks(s.address, workers, numba_threads)


# ----------------------------------------------------------------------------- the sweep
def _cpu_key(run, threads):
    return (run["env"], run["seed"], run["data_policy"], run["n_transitions"], run["variant"],
            run["next_action"], run["epochs"], run["alpha"], run["gamma"], run["epsilon"],
            run["stride"], run["frac_bits"], threads)


def _gpu_key(run, partitions, lanes):
    # rows groups each partition's records by state: other work than the ring's lanes
    mode = "rows" if run.get("tasklet_mode") == "rows" and str(lanes) != "1" else "ring"
    return _cpu_key(run, None) + (partitions, lanes, mode)


def _resolve_threads(spec, available: int) -> int:
    if spec in ("all", None):
        return available
    return min(int(spec), available)


def _describe_run(run) -> str:
    return (f"{run['sweep']} {run['env']} {run['variant']} {run['n_dpus']} DPUs "
            f"{run['aggregator']} t{run['tasklets']}")


def _set_aside(path: Path, rows: list[dict]):
    """Append ``rows`` to ``path`` (rows set aside by every session accumulate there)."""
    write_csv_atomic(path, read_results(path) + rows)


def run_scale(config, out_dir, *, progress: bool = True, on_row=None,
              stop_after: int | None = None, executor="local", workers: int | None = None,
              threads_per_worker: int | None = None) -> ScaleReport:
    """Run (or resume) the study ``config`` (a path or a :class:`StudyConfig`) into ``out_dir``.

    ``executor`` is ``local``, ``dask`` (a LocalCluster of ``workers`` processes with
    ``threads_per_worker`` numba threads each), ``dask:ADDRESS``, or an executor object
    (:class:`LocalTasks`, :class:`DaskTasks`). ``on_row(row, report)`` is called after each
    finished row is saved; ``stop_after`` (or the environment variable
    ``PIMRL_SCALE_STOP_AFTER``) raises :class:`SweepInterrupted` after that many rows have
    been computed in this call (for tests of resumption). Rows that fail are listed in
    ``report.failed_rows`` and in meta.json; the others are kept.
    """
    t_start = time.perf_counter()
    cfg = config if isinstance(config, StudyConfig) else load_config(config)
    if stop_after is None and os.environ.get("PIMRL_SCALE_STOP_AFTER"):
        from pimrl.limits import INT64_MAX, parse_int

        stop_after = parse_int(os.environ["PIMRL_SCALE_STOP_AFTER"], "PIMRL_SCALE_STOP_AFTER",
                               1, INT64_MAX)
    ex = (make_executor(executor, workers, threads_per_worker) if isinstance(executor, str)
          else executor)
    runs = expand_runs(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with OutputLock(out):
        if isinstance(executor, str):
            with ex:
                return _sweep(cfg, runs, out, ex, progress, on_row, stop_after, t_start)
        return _sweep(cfg, runs, out, ex, progress, on_row, stop_after, t_start)


def _sweep(cfg, runs, out, ex, progress, on_row, stop_after, t_start) -> ScaleReport:
    csv_path, meta_path = out / "results.csv", out / "meta.json"
    keys = [run_key(r) for r in runs]
    wanted = set(keys)
    good, bad = load_results(csv_path, strict=False)
    previous, dropped = {}, []
    for row in good:
        if row["row_key"] in wanted:
            previous[row["row_key"]] = row
        else:
            dropped.append(row)
    if bad:
        invalid_path = out / "results.invalid.csv"
        _set_aside(invalid_path, [{c: (row.get(c) or "") for c in COLUMNS} for _, row, _ in bad])
        for line, _, problem in bad[:10]:
            print(f"pimrl scale: {csv_path} line {line}: {problem}; the row is computed again",
                  file=sys.stderr)
        if len(bad) > 10:
            print(f"pimrl scale: ... and {len(bad) - 10} more invalid row(s)", file=sys.stderr)
        print(f"pimrl scale: {len(bad)} invalid row(s) set aside in {invalid_path.name}",
              file=sys.stderr)
    if dropped:
        # Keep every row ever dropped (earlier sessions' too), then take them out of the CSV.
        dropped_path = out / "results.dropped.csv"
        _set_aside(dropped_path, dropped)
        print(f"pimrl scale: {len(dropped)} row(s) of {csv_path} are not in this config; moved "
              f"to {dropped_path.name}", file=sys.stderr)
    if bad or dropped:
        write_csv_atomic(csv_path, [previous[k] for k in keys if k in previous])

    bl = cfg.baselines
    gpu_ok, gpu_reason = ex.gpu_status() if bl["gpu"] else (False, "disabled in the config")
    gpu_status = f"measured: {gpu_reason}" if gpu_ok else f"not measured: {gpu_reason}"
    threads = _resolve_threads(bl["cpu_threads"], ex.max_threads())
    # A finished row lacking a baseline this config asks for (and can measure) is not
    # finished: it is computed again, its memoised parts reused.
    incomplete = [k for k, row in previous.items()
                  if (bl["cpu"] and not row.get("cpu_1t_measured_s"))
                  or (gpu_ok and not row.get("gpu_total_measured_s"))]
    stale = {k: previous.pop(k) for k in incomplete}
    report = ScaleReport(str(out), len(runs), reused_rows=len(previous), gpu_status=gpu_status,
                         dropped_rows=len(dropped), invalid_rows=len(bad), executor=ex.name,
                         files={"results": str(csv_path), "meta": str(meta_path)})

    meta = {}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except (ValueError, RecursionError) as exc:
            raise InvalidResults(f"{meta_path}: not valid JSON ({exc}); move it away to start "
                                 f"a new record") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("sessions", []), list):
            raise InvalidResults(f"{meta_path}: not a pimrl scale record (an object with a list "
                                 f"of sessions); move it away to start a new record")
    # A session still "running" here ended without saying so (killed: we hold the lock, so
    # no other process runs it): say so, rather than leave it running forever.
    for old in meta.get("sessions", []):
        if isinstance(old, dict) and old.get("status") == "running":
            old["status"] = "killed"
            old["note"] = ("ended without recording its end (killed, or the machine stopped); "
                           "its finished rows are kept")
    session = {"started": _dt.datetime.now().isoformat(timespec="seconds"), "status": "running",
               "executor": ex.name}
    cluster = ex.describe()
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
                                   f"of {bl['cpu_repeats']} repeat(s), on the worker each row "
                                   "names in baseline_worker"},
        "pim": {"timing": "modelled by pimrl's cost model of the UPMEM system (docs/cost-model.md);"
                          " pim_simulation_wall_measured_s is only the simulator's own run time"},
        "columns": {"order": list(COLUMNS), "notes": COLUMN_NOTES},
        "n_rows_planned": len(runs),
    })
    # Each session keeps its own machine, versions and cluster: rows name their session and
    # worker, so measured times of a resumed sweep stay tied to the machine that measured them.
    session.update(machine=meta["machine"], versions=meta["versions"], cluster=cluster)
    meta.setdefault("sessions", []).append(session)
    session_index = len(meta["sessions"]) - 1
    write_json_atomic(meta_path, meta)
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
                                ({c: row[c] for c in CPU_COLUMNS}, row.get("baseline_worker", "")))
        if row.get("gpu_partitions"):
            gpu_memo.setdefault(_gpu_key(run, row["gpu_partitions"], row["gpu_lanes"]),
                                ({c: row[c] for c in GPU_COLUMNS}, row.get("baseline_worker", "")))

    # Every dataset is generated at the largest size its environment needs in this config.
    need = {}
    for r in runs:
        dk = (r["env"], r["seed"], r["data_policy"])
        need[dk] = max(need.get(dk, 0), int(r["n_transitions"]))

    def need_of(run):
        return need[(run["env"], run["seed"], run["data_policy"])]

    # The tasks: per missing row its PIM run, and each baseline it needs (once).
    nt = ex.numba_threads
    deps, waiting, submitted = {}, {}, set()
    todo = [k for k in keys if k not in previous]
    for k in todo:
        run = run_of[k]
        dep = []
        if bl["cpu"]:
            ck = _cpu_key(run, threads)
            if ck not in cpu_memo:
                dep.append(("cpu", ck))
                if ("cpu", ck) not in submitted:
                    ex.submit(("cpu", ck), cpu_task, run, need_of(run), threads,
                              int(bl["cpu_repeats"]), nt, bool(bl["c_loop"]),
                              bool(bl["cpu_quality"]))
        if gpu_ok:
            if bl["gpu_partitions"] == "dpus":
                parts, lanes = run["n_dpus"], run["tasklets"]
            else:
                parts, lanes = int(bl["gpu_partitions"]), 1
            gk = _gpu_key(run, str(parts), str(lanes))
            if gk not in gpu_memo:
                dep.append(("gpu", gk))
                if ("gpu", gk) not in submitted:
                    ex.submit(("gpu", gk), gpu_task, run, need_of(run), parts, lanes,
                              int(bl["gpu_threads_per_block"]), int(bl["gpu_repeats"]),
                              gpu_status, nt)
        for d in dep:
            submitted.add(d)
            waiting.setdefault(d, []).append(k)
        ex.submit(("pim", k), pim_task, run, need_of(run), nt)
        waiting[("pim", k)] = [k]
        deps[k] = (bl["cpu"] and _cpu_key(run, threads), gpu_ok and gk)

    rows = {k: previous[k] for k in keys if k in previous}
    csv_lines: dict = {}             # row_key -> its CSV line, formatted once
    pim_done, failed = {}, {}
    workers_seen = {}
    bar = Progress(len(runs), len(previous), enabled=progress)
    computed = 0

    def save_meta(status, **extra):
        session.update(status=status, rows_computed=computed, failed_rows=list(failed.values()),
                       workers_seen=sorted(workers_seen.values(), key=lambda w: w["address"]),
                       wall_s=round(time.perf_counter() - t_start, 3), **extra)
        write_json_atomic(meta_path, meta)

    def finish(k):
        """Assemble row ``k`` once its PIM run and baselines are in; save it."""
        nonlocal computed
        if k in failed or k in rows or k not in pim_done:
            return
        ck, gk = deps[k]
        if (ck and ck not in cpu_memo) or (gk and gk not in gpu_memo):
            return
        row = dict(run_of[k])
        row["row_key"] = k
        result = pim_done.pop(k)
        row.update(result["columns"])
        row["worker"] = result["worker"]["address"]
        measured_by = []
        if ck:
            row.update(cpu_memo[ck][0])
            measured_by.append(cpu_memo[ck][1])
        row["gpu_status"] = gpu_status
        if gk:
            row.update(gpu_memo[gk][0])
            measured_by.append(gpu_memo[gk][1])
        row["baseline_worker"] = " ".join(dict.fromkeys(w for w in measured_by if w))
        row["finished_at"] = _dt.datetime.now().isoformat(timespec="seconds")
        row["session"] = session_index
        rows[k] = row
        computed += 1
        report.computed_rows = computed
        write_csv_atomic(csv_path, [rows[x] for x in keys if x in rows], csv_lines)
        bar.update(_describe_run(run_of[k]), ex.work())
        if on_row is not None:
            on_row(row, report)
        remaining = len(runs) - len(previous) - len(failed)
        if stop_after is not None and stop_after <= computed < remaining:
            raise SweepInterrupted(f"stopped after {computed} row(s) as asked")

    def fail(k, task, exc):
        if k in failed or k in rows:
            return
        msg = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
        if task[0] != "pim":
            msg = f"{task[0].upper()} baseline: {msg}"
        failed[k] = {"row_key": k, "run": _describe_run(run_of[k]), "error": msg}
        report.failed_rows.append(failed[k])
        print(f"pimrl scale: row {_describe_run(run_of[k])} failed: {msg}", file=sys.stderr)

    try:
        for task, result, error in ex.results():
            kind, ident = task
            if error is not None:
                for k in waiting.pop(task, []):
                    fail(k, task, error)
                continue
            w = result["worker"]
            workers_seen.setdefault(w["address"], w)
            if kind == "pim":
                report.pim_runs += 1
                pim_done[ident] = result
            elif kind == "cpu":
                report.cpu_runs += 2
                cpu_memo[ident] = (result["columns"], w["address"])
            else:
                report.gpu_runs += 1
                gpu_memo[ident] = (result["columns"], w["address"])
            for k in waiting.pop(task, []):
                finish(k)
    except (SweepInterrupted, KeyboardInterrupt):
        report.interrupted = True
        save_meta("interrupted")
        raise
    except Exception as exc:
        save_meta("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        ex.cancel()
        bar.close()
    if not csv_path.exists():
        write_csv_atomic(csv_path, [rows[x] for x in keys if x in rows])
    report.wall_s = time.perf_counter() - t_start
    save_meta("failed" if failed else "complete",
              finished=_dt.datetime.now().isoformat(timespec="seconds"),
              rows_reused=len(previous), pim_runs=report.pim_runs, cpu_runs=report.cpu_runs,
              gpu_runs=report.gpu_runs)
    return report
