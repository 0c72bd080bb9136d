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

The parts live beside this module: the columns (:mod:`~pimrl.experiments.columns`), the
record on disk (:mod:`~pimrl.experiments.results`), the tasks
(:mod:`~pimrl.experiments.tasks`) and the executors (:mod:`~pimrl.experiments.executors`);
their public names are importable from here too.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pimrl.experiments.columns import (
    COLUMN_NOTES, COLUMNS, CPU_COLUMNS, GPU_COLUMNS, RESULT_COLUMNS, WORKER_COLUMNS,
    YOUNGER_COLUMNS,
)
from pimrl.experiments.config import StudyConfig, expand_runs, load_config, run_key
from pimrl.experiments.executors import DaskTasks, LocalTasks, make_executor
from pimrl.experiments.results import (
    InvalidResults, OutputBusy, OutputLock, csv_line, csv_text, load_results, machine,
    read_results, row_problem, versions, write_csv_atomic, write_json_atomic,
)
from pimrl.experiments.tasks import cpu_task, gpu_task, peak_rss_bytes, pim_task

__all__ = [
    "COLUMN_NOTES", "COLUMNS", "CPU_COLUMNS", "GPU_COLUMNS", "RESULT_COLUMNS", "WORKER_COLUMNS",
    "YOUNGER_COLUMNS", "DaskTasks", "LocalTasks", "make_executor", "InvalidResults",
    "OutputBusy", "OutputLock", "csv_line", "csv_text", "load_results", "machine",
    "read_results", "row_problem", "versions", "write_csv_atomic", "write_json_atomic",
    "cpu_task", "gpu_task", "peak_rss_bytes", "pim_task", "SweepInterrupted", "ScaleReport",
    "Progress", "run_scale",
]


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
    invalid_rows: int = 0
    failed_rows: list = field(default_factory=list)   # {"row_key", "run", "error"}
    resumed_rows: list = field(default_factory=list)  # {"row_key", "round"}: from a checkpoint
    executor: str = "local"
    interrupted: bool = False
    files: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


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


def row_checkpoint_dir(out: Path, key: str) -> str:
    """The checkpoint folder of row ``key``'s PIM run (``OUT/checkpoints/<hash of the key>``:
    kept while the row is unfinished, so that a resumed sweep goes on with a half-done row)."""
    import hashlib

    return str(Path(out) / "checkpoints" / hashlib.sha256(key.encode()).hexdigest()[:16])


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

    # Baseline results already in the file are reused, not recomputed; but not one written
    # before its energy columns (its task writes them now): that one is measured again.
    cpu_memo, gpu_memo = {}, {}
    run_of = dict(zip(keys, runs))
    for k, row in list(previous.items()) + list(stale.items()):
        run = run_of[k]
        if row.get("cpu_1t_measured_s") and (row.get("cpu_1t_energy_modelled_j")
                                             or row.get("cpu_1t_energy_measured_j")):
            # Only a measurement with the thread count of this session stands for it.
            cpu_memo.setdefault(_cpu_key(run, int(row["cpu_threads"] or 0)),
                                ({c: row.get(c, "") for c in CPU_COLUMNS}, row.get("baseline_worker", "")))
        if row.get("gpu_partitions") and row.get("gpu_energy_status"):
            gpu_memo.setdefault(_gpu_key(run, row["gpu_partitions"], row["gpu_lanes"]),
                                ({c: row.get(c, "") for c in GPU_COLUMNS}, row.get("baseline_worker", "")))

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
        ex.submit(("pim", k), pim_task, run, need_of(run), nt, row_checkpoint_dir(out, k))
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
                if "resumed_from_round" in result:
                    r = result["resumed_from_round"]
                    report.resumed_rows.append({"row_key": ident, "round": r})
                    if progress:
                        print(f"pimrl scale: row {_describe_run(run_of[ident])} went on from "
                              f"its checkpoint (round {r})", file=sys.stderr)
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
    if not failed:              # every row done: no half-done run to go on with
        import shutil

        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    report.wall_s = time.perf_counter() - t_start
    save_meta("failed" if failed else "complete",
              finished=_dt.datetime.now().isoformat(timespec="seconds"),
              rows_reused=len(previous), pim_runs=report.pim_runs, cpu_runs=report.cpu_runs,
              gpu_runs=report.gpu_runs)
    return report
