"""Sweeps and simulations on a real Dask ``LocalCluster`` of worker processes (no mocks):
the same modelled columns and policy quality as the local executor, no row lost or
duplicated when a worker is killed mid-sweep, and meta.json naming the cluster."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from pimrl.cli import main
from pimrl.experiments.runner import COLUMNS, DaskTasks, read_results, run_scale

CONFIG = """
[study]
name = "dask"
seed = 5

[learner]
epochs = 2

[baselines]
cpu_threads = 1          # the same on this machine and on the workers

[[sweep]]
name = "strong"
envs = ["FrozenLake-v1", "CliffWalking-v1"]
transitions = 1600
dpus = [1, 4]
variants = ["q-fp32-seq", "sarsa-int32-ran"]
tasklets = [2]
aggregators = ["mean", "sync:2"]

[[sweep]]
name = "weak"
kind = "weak"
envs = ["Taxi-v3"]
transitions_per_dpu = 200
dpus = [1, 2]
variants = ["q-int32-str"]
tasklets = [4]
"""
N_ROWS = 2 * 2 * 2 * 2 + 2
DETERMINISTIC = [c for c in COLUMNS if "measured" not in c
                 and c not in ("finished_at", "session", "worker", "baseline_worker")]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    p = tmp_path_factory.mktemp("cfg") / "dask.toml"
    p.write_text(CONFIG)
    return p


@pytest.fixture(scope="module")
def local_rows(config, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    run_scale(config, out, progress=False)
    return read_results(out / "results.csv")


def _same(rows, ref):
    assert [r["row_key"] for r in rows] == [r["row_key"] for r in ref]
    for a, b in zip(rows, ref):
        assert {c: a[c] for c in DETERMINISTIC} == {c: b[c] for c in DETERMINISTIC}


def test_dask_sweep_equals_local(config, local_rows, tmp_path, capsys):
    out = tmp_path / "dask"
    assert main(["scale", str(config), "--out", str(out), "--executor", "dask", "--workers", "2",
                 "--threads-per-worker", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["executor"] == "dask" and report["computed_rows"] == N_ROWS
    rows = read_results(out / "results.csv")
    _same(rows, local_rows)
    assert all(r["worker"] == "local" for r in local_rows)
    session = json.loads((out / "meta.json").read_text())["sessions"][-1]
    cluster = session["cluster"]
    assert cluster["executor"] == "dask" and cluster["n_workers"] == 2
    addresses = {w["address"] for w in cluster["workers"]}
    assert all(w["numba_threads"] == 1 and w["host"] and w["pid"] != os.getpid()
               for w in cluster["workers"])
    # Each row names the workers that measured it, and they are the cluster's.
    assert {r["worker"] for r in rows} <= addresses
    assert {r["baseline_worker"] for r in rows} <= addresses
    assert {w["address"] for w in session["workers_seen"]} <= addresses
    # Resuming on the local executor finds every row done.
    rep = run_scale(config, out, progress=False)
    assert rep.computed_rows == 0 and rep.reused_rows == N_ROWS


def test_killing_a_worker_loses_no_row_and_duplicates_none(config, local_rows, tmp_path):
    out = tmp_path / "killed"
    killed = []

    with DaskTasks(workers=2, numba_threads=1) as ex:
        def kill_one(row, report):
            if killed:
                return
            busy = [a for a, keys in ex.client.processing().items() if keys]
            target = (busy or sorted(ex.client.scheduler_info()["workers"]))[0]
            pid = ex.client.run(os.getpid, workers=[target])[target]
            os.kill(pid, signal.SIGKILL)
            killed.append((target, pid, bool(busy)))

        report = run_scale(config, out, progress=False, executor=ex, on_row=kill_one)
    assert killed and report.computed_rows == N_ROWS and not report.failed_rows
    rows = read_results(out / "results.csv")
    assert len({r["row_key"] for r in rows}) == len(rows) == N_ROWS
    _same(rows, local_rows)


def test_unknown_executor_and_unreachable_cluster_are_clear_errors(config, tmp_path, capsys):
    assert main(["scale", str(config), "--out", str(tmp_path / "a"), "--executor", "spark"]) == 2
    assert "unknown executor" in capsys.readouterr().err
    assert main(["scale", str(config), "--out", str(tmp_path / "b"), "--executor",
                 "dask:tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the scheduler" in err and len(err.strip().splitlines()) == 1
