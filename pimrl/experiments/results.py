"""``pimrl scale``'s record on disk: results.csv (written, read, validated), the lock on a
results folder, and the machine and versions that meta.json records.

results.csv is written whole and atomically (:mod:`pimrl.io`) after each finished row;
:func:`load_results` checks every row (its key against its parameters, every figure's
range, the PIM times' sum) and names the file, line and column of what it refuses.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
from pathlib import Path

import numpy as np

from pimrl.experiments.columns import COLUMNS, RESULT_COLUMNS, WORKER_COLUMNS, YOUNGER_COLUMNS
from pimrl.experiments.config import PARAM_COLUMNS, run_key
from pimrl.io import atomic_write_text


class OutputBusy(ValueError):
    """Another sweep holds the results folder."""


class InvalidResults(ValueError):
    """A results.csv that cannot be read as pimrl scale results; names file, line, column."""


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
    from pimrl.baselines.energy import cpu_model_name

    model = cpu_model_name()
    if model is not None:
        info["cpu_model"] = model
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    return info
