"""Sweeps and simulations on a real Dask ``LocalCluster`` of worker processes (no mocks):
the same modelled columns and policy quality as the local executor, no row lost or
duplicated when a worker is killed mid-sweep, and meta.json naming the cluster."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from pimrl.cli import main
from pimrl.experiments.columns import REPRODUCIBLE_COLUMNS
from pimrl.experiments.runner import DaskTasks, read_results, run_scale

#: Worker processes and a 10,000-DPU simulation: left out of ``make test-fast``.
pytestmark = pytest.mark.slow

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
DETERMINISTIC = REPRODUCIBLE_COLUMNS


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
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["executor"] == "dask" and report["computed_rows"] == N_ROWS
    # The progress bar shows the cluster's work.
    assert f"{N_ROWS}/{N_ROWS}" in captured.err and "2 workers, " in captured.err
    assert " busy, " in captured.err and " queued |" in captured.err
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
            # A worker in the middle of a task: its task is lost and must run elsewhere.
            deadline = time.monotonic() + 10
            while not (busy := [a for a, keys in ex.client.processing().items() if keys]):
                assert time.monotonic() < deadline, "no worker ever busy"
                time.sleep(0.01)
            pid = ex.client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(busy[0])

        report = run_scale(config, out, progress=False, executor=ex, on_row=kill_one)
    assert killed and report.computed_rows == N_ROWS and not report.failed_rows
    rows = read_results(out / "results.csv")
    assert len({r["row_key"] for r in rows}) == len(rows) == N_ROWS
    _same(rows, local_rows)


def test_unknown_executor_and_unreachable_cluster_are_clear_errors(config, tmp_path, capsys):
    from pimrl.cluster import dask_client

    assert main(["scale", str(config), "--out", str(tmp_path / "a"), "--executor", "spark"]) == 2
    assert "unknown executor" in capsys.readouterr().err
    assert main(["scale", str(config), "--out", str(tmp_path / "a"), "--executor", "dask:"]) == 2
    assert "give the scheduler's address" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"dask:tcp://127.0.0.1:9: cannot reach the scheduler"):
        with dask_client("tcp://127.0.0.1:9", connect_timeout_s=1):
            pass


# ---------------------------------------------------------------- one simulation, many workers
@pytest.fixture(scope="module")
def client():
    from pimrl.cluster import dask_client

    with dask_client(workers=2, numba_threads=1) as c:
        yield c


def test_a_10000_dpu_simulation_on_two_workers_equals_the_local_run(client):
    import numpy as np

    from pimrl.data import generate_dataset
    from pimrl.envs import make
    from pimrl.learners.params import LearnerParams
    from pimrl.pim.distributed import DaskPlacement
    from pimrl.pim.hardware import get_hardware
    from pimrl.swiftrl.trainer import PimTrainer

    env = make("FrozenLake-v1")
    records = generate_dataset(env, 30_011, 4)         # 3 transitions a DPU, some 4
    hw = get_hardware("upmem-2560", {"n_ranks": 157})   # 10,048 DPUs, whole ranks
    params = LearnerParams(algo="sarsa", dtype="int32", sampling="ran", epochs=2, seed=9)
    kw = dict(n_dpus=10_000, tasklets=2, aggregate="sync:2:weighted", hardware=hw,
              block_bytes=64, keep_dpu_tables=True)
    here = PimTrainer(params, **kw).fit(records, env.n_states, env.n_actions)
    there = PimTrainer(params, placement=DaskPlacement(client), **kw).fit(
        records, env.n_states, env.n_actions)
    assert here.q_.tobytes() == there.q_.tobytes()
    assert here.dpu_tables_.tobytes() == there.dpu_tables_.tobytes()
    assert np.array_equal(here.counters_, there.counters_)
    assert here.timings_.modelled_s == there.timings_.modelled_s   # exactly, float for float
    assert here.timings_.events == there.timings_.events
    assert here.n_updates_ == there.n_updates_ == 2 * len(records)
    # The traffic with the workers is measured and kept apart from the modelled PIM time.
    w = there.worker_transfers_
    assert w["dpus_per_worker"] == [79 * 64, 78 * 64 - 48] and len(set(w["workers"])) == 2
    assert w["to_workers_bytes"] >= len(records) * 16 and w["from_workers_bytes"] >= 10_000 * 2 * 64
    assert w["transfer_measured_s"] > 0 and "worker_transfer" in there.timings_.measured_s
    assert "worker_transfer" not in there.timings_.modelled_s


def test_a_distributed_set_checks_as_the_sdk_does(client):
    from pimrl.pim.distributed import DistributedDpuSet
    from pimrl.pim.errors import DpuError
    from pimrl.pim.hardware import get_hardware
    from pimrl.rlkernel.program import RlProgram
    from pimrl.pim.system import Machine, dpu_alloc

    hw = get_hardware("upmem-640")
    here, there = dpu_alloc(130, machine=Machine(hw)), DistributedDpuSet(client, 130, hw)
    assert there.nr_dpus == here.nr_dpus == 130 and there.nr_ranks == here.nr_ranks == 3
    assert there.shard_dpus == [128, 2]                 # whole ranks: 2 on one worker, 1 on the other
    messages = []
    for s in (here, there):
        with pytest.raises(DpuError) as exc:
            s.gather_from("q_table", 0, 8)
        messages.append(str(exc.value))
        s.load(RlProgram(4, 2, 2, "q", "fp32", "seq", 64, hw))
        for args in (("nosuch", 0, 8), ("q_table", 2, 8), ("q_table", 0, 64)):
            with pytest.raises(DpuError) as exc:
                s.gather_from(*args)
            messages.append(str(exc.value))
        with pytest.raises(DpuError) as exc:       # params all zero: algo q, but stride 0
            s.launch()
        messages.append(str(exc.value))
    half = len(messages) // 2
    assert messages[:half] == messages[half:]
    assert "NO_PROGRAM_LOADED" in messages[0] and "UNKNOWN_SYMBOL" in messages[1]
    assert "DPU 0 tasklet 0: bad parameters" in messages[-1]
    there.free()


def test_train_on_dask_prints_the_local_tables(client, capsys):
    """pimrl train on the workers of a running cluster (dask:ADDRESS); the LocalCluster path
    of --executor dask is the sweep's, tested above."""
    args = ["train", "--env", "Taxi-v3", "--transitions", "4000", "--backend", "pim",
            "--dpus", "64,130", "--hardware", "upmem-640", "--tasklets", "4", "--epochs", "2",
            "--aggregate", "sync:2", "--json"]
    assert main(args) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(args + ["--executor", f"dask:{client.scheduler.address}",
                        "--threads-per-worker", "1"]) == 0
    dist = json.loads(capsys.readouterr().out)
    for a, b in zip(local["runs"], dist["runs"]):
        assert a["modelled_s"] == b["modelled_s"] and a["evaluation"] == b["evaluation"]
        assert b["worker_transfers"]["to_workers_bytes"] > 0 and "worker_transfers" not in a
    assert [r["worker_transfers"]["dpus_per_worker"] for r in dist["runs"]] == [[64], [128, 2]]
    assert local["evaluation"] == dist["evaluation"] and local["scaling"] == dist["scaling"]
    assert main(["train", "--env", "Taxi-v3", "--transitions", "100", "--executor", "dask"]) == 2
    assert "only applies to --backend pim" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--aggregate", "sync:3:weighted", "--force-mram"],
                                   ["--agents", "independent", "--grid", "alpha=0.05,0.1;seed=0-64",
                                    "--dtype", "int32"]])
def test_online_on_dask_equals_the_local_run(client, capsys, tmp_path, extra):
    """Online training on the workers: the same tables (bit for bit), modelled times, rounds
    and evaluation as in this process, the traffic with the workers measured apart; the C
    kernel and checkpoints are refused there in one line."""
    args = ["train", "--online", "--env", "FrozenLake-v1", "--dpus", "130", "--hardware",
            "upmem-640", "--tasklets", "4", "--steps", "900", "--json", *extra]
    assert main(args + ["--save-q", str(tmp_path / "local.npy")]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(args + ["--executor", f"dask:{client.scheduler.address}",
                        "--threads-per-worker", "1", "--save-q", str(tmp_path / "dask.npy")]) == 0
    dist = json.loads(capsys.readouterr().out)
    assert (tmp_path / "local.npy").read_bytes() == (tmp_path / "dask.npy").read_bytes()
    for key in ("modelled_s", "rounds", "env_steps", "episodes", "saturations",
                "evaluation", "agents_result"):
        assert local.get(key) == dist.get(key), key
    assert dist["worker_transfers"]["dpus_per_worker"] == [128, 2]
    assert "worker_transfers" not in local and dist["worker_transfers"]["to_workers_bytes"] > 0
    for refused, needle in ((["--kernel", "c"], "runs the numba kernel only"),
                            (["--checkpoint", str(tmp_path / "ck")], "--executor local")):
        assert main(args + ["--executor", f"dask:{client.scheduler.address}", *refused]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1


def test_joining_a_running_cluster(client, config, local_rows, tmp_path, capsys):
    """dask:ADDRESS joins the scheduler at ADDRESS (here: the fixture's LocalCluster)."""
    address = client.scheduler.address
    small = tmp_path / "small.toml"
    small.write_text(CONFIG.split("[[sweep]]\nname = \"weak\"")[0].replace(
        '"FrozenLake-v1", "CliffWalking-v1"', '"FrozenLake-v1"'))
    out = tmp_path / "joined"
    assert main(["scale", str(small), "--out", str(out), "--executor", f"dask:{address}",
                 "--no-progress"]) == 0
    rows = read_results(out / "results.csv")
    _same(rows, [r for r in local_rows if r["row_key"] in {x["row_key"] for x in rows}])
    session = json.loads((out / "meta.json").read_text())["sessions"][-1]
    assert session["cluster"]["scheduler"] == address and session["cluster"]["n_workers"] == 2
    assert {r["worker"] for r in rows} <= set(client.scheduler_info()["workers"])
    assert main(["scale", str(small), "--out", str(tmp_path / "x"), "--executor",
                 f"dask:{address}", "--workers", "3"]) == 2
    assert "a joined cluster has its own workers" in capsys.readouterr().err


def _set_pimrl_version(version):
    import pimrl

    old, pimrl.__version__ = pimrl.__version__, version
    return old


def test_workers_with_another_pimrl_are_refused(client, config, tmp_path, capsys):
    import pimrl

    client.run(_set_pimrl_version, "0.0.0-other")
    try:
        assert main(["scale", str(config), "--out", str(tmp_path / "o"), "--executor",
                     f"dask:{client.scheduler.address}"]) == 2
        err = capsys.readouterr().err
        assert f"runs pimrl 0.0.0-other, this process pimrl {pimrl.__version__}" in err
        assert not (tmp_path / "o" / "results.csv").exists()
    finally:
        client.run(_set_pimrl_version, pimrl.__version__)
