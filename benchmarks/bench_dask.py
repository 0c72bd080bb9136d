"""Sweep throughput on the local executor and on a Dask LocalCluster of 1 and 2 workers,
and one large simulation spread over 2 workers against the local run.

Every figure is measured wall clock on this machine. The sweep is run into a fresh folder
per executor; rows per second count the rows computed, from the first task to the last row
(the cluster's start is printed apart), after an untimed local warm-up sweep. Dask
workers are fresh processes: their first sweep ("cold") includes loading numba's cached
kernels, the figures are of a second sweep on the same, warm, workers. The modelled columns and the policy quality of every
row are compared with the local executor's (they must be identical). The simulation part
times ``PimTrainer`` on ``--sim-dpus`` DPUs here and over 2 workers, checks the tables are
bit-identical, and prints the measured traffic with the workers.

    python benchmarks/bench_dask.py [--config experiments/demo.toml] [--workers 1,2]
                                    [--sim-dpus 10000] [--json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

# A reduced sweep: three environments, every variant, 200k transitions, two DPU counts.
DEFAULT_CONFIG = """
[study]
name = "bench-dask"
seed = 0

[learner]
epochs = 4

[baselines]
cpu_threads = 1

[[sweep]]
name = "strong"
envs = ["FrozenLake-v1", "Taxi-v3", "CliffWalking-v1"]
transitions = 200_000
dpus = [125, 2000]
variants = "all"
tasklets = [16]
aggregators = ["mean"]
"""


def sweep(config, executor, workers=None, local_threads=None):
    import numba

    from pimrl.experiments.runner import DaskTasks, LocalTasks, read_results, run_scale

    out = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    t0 = time.perf_counter()
    ex = LocalTasks() if executor == "local" else DaskTasks(workers=workers, numba_threads=1)
    threads = numba.get_num_threads()
    if local_threads:
        numba.set_num_threads(local_threads)
    try:
        with ex:
            started = time.perf_counter() - t0
            t1 = time.perf_counter()
            report = run_scale(config, out, progress=False, executor=ex)
            work = cold = time.perf_counter() - t1
            if executor != "local":          # again on the same, now warm, workers
                out = Path(tempfile.mkdtemp(prefix="bench-dask-"))
                t1 = time.perf_counter()
                report = run_scale(config, out, progress=False, executor=ex)
                work = time.perf_counter() - t1
    finally:
        numba.set_num_threads(threads)
    rows = read_results(out / "results.csv")
    name = (f"local, {local_threads or threads} thread(s)" if executor == "local"
            else f"dask, {workers} worker(s)")
    return {"executor": name,
            "rows": report.computed_rows, "start_measured_s": started,
            "cold_sweep_measured_s": cold, "sweep_measured_s": work,
            "rows_per_s_measured": report.computed_rows / work,
            "workers_used": len({r["worker"] for r in rows})}, rows


def simulation(n_dpus):
    from pimrl.cluster import dask_client
    from pimrl.data import generate_dataset
    from pimrl.envs import make
    from pimrl.learners.params import LearnerParams
    from pimrl.pim.distributed import DaskPlacement
    from pimrl.pim.hardware import get_hardware
    from pimrl.swiftrl.trainer import PimTrainer

    env = make("Taxi-v3")
    records = generate_dataset(env, 40 * n_dpus, 0)
    ranks = -(-n_dpus // 64)
    hw = get_hardware("upmem-2560", {"n_ranks": max(ranks, 40)})
    params = LearnerParams(epochs=4)
    kw = dict(n_dpus=n_dpus, tasklets=16, aggregate="sync:2", hardware=hw)
    PimTrainer(params, **dict(kw, n_dpus=64)).fit(records[:6400], env.n_states, env.n_actions)
    t0 = time.perf_counter()
    here = PimTrainer(params, **kw).fit(records, env.n_states, env.n_actions)
    local_s = time.perf_counter() - t0
    with dask_client(workers=2, numba_threads=1) as client:
        placement = DaskPlacement(client)
        PimTrainer(params, placement=placement, **dict(kw, n_dpus=64)).fit(
            records[:6400], env.n_states, env.n_actions)          # the workers' numba warm-up
        t0 = time.perf_counter()
        there = PimTrainer(params, placement=placement, **kw).fit(records, env.n_states, env.n_actions)
        dask_s = time.perf_counter() - t0
    same = (here.q_.tobytes() == there.q_.tobytes()
            and here.timings_.modelled_s == there.timings_.modelled_s)
    w = there.worker_transfers_
    return {"dpus": n_dpus, "transitions": len(records), "local_measured_s": local_s,
            "dask_2_workers_measured_s": dask_s, "bit_identical": same,
            "worker_traffic_mb": (w["to_workers_bytes"] + w["from_workers_bytes"]) / 1e6,
            "worker_transfer_measured_s": w["transfer_measured_s"],
            "worker_launch_measured_s": w["launch_measured_s"],
            "pim_total_modelled_s": there.timings_.modelled_total_s}


def main():
    from pimrl.experiments.config import load_config, parse_config
    from pimrl.experiments.runner import COLUMNS

    try:
        import tomllib
    except ModuleNotFoundError:
        import tomli as tomllib

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="study config (default: a reduced demo, 72 rows)")
    ap.add_argument("--workers", default="1,2", help="Dask worker counts (default 1,2)")
    ap.add_argument("--sim-dpus", type=int, default=10_000, help="DPUs of the simulation (0: skip)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    config = (load_config(a.config) if a.config
              else parse_config(tomllib.loads(DEFAULT_CONFIG), "<bench_dask>", DEFAULT_CONFIG))
    keep = [c for c in COLUMNS if ("modelled" in c or c.startswith("pim_updates") or
                                   c.endswith("success_rate") or c.endswith("mean_return"))
            and not c.startswith(("cpu_", "gpu_"))]
    import numba

    results = []
    sweep(config, "local")                   # warm-up: numba compiles or loads its cache here
    base, ref = sweep(config, "local")
    results.append(dict(base, same_modelled_and_quality=True))
    if numba.get_num_threads() > 1:          # the local executor with a worker's one thread
        r, rows = sweep(config, "local", local_threads=1)
        r["same_modelled_and_quality"] = [{c: x[c] for c in keep} for x in rows] == \
            [{c: x[c] for c in keep} for x in ref]
        r["speedup_vs_local"] = r["rows_per_s_measured"] / base["rows_per_s_measured"]
        results.append(r)
    for n in [int(x) for x in a.workers.split(",") if x.strip()]:
        r, rows = sweep(config, "dask", n)
        r["same_modelled_and_quality"] = [{c: x[c] for c in keep} for x in rows] == \
            [{c: x[c] for c in keep} for x in ref]
        r["speedup_vs_local"] = r["rows_per_s_measured"] / base["rows_per_s_measured"]
        results.append(r)
    sim = simulation(a.sim_dpus) if a.sim_dpus else None
    if a.json:
        print(json.dumps({"sweeps": results, "simulation": sim}, indent=2))
        return
    import numba

    print(f"sweep of {base['rows']} rows (measured wall clock on this machine; each Dask "
          f"worker has 1 numba thread; cold: the first sweep of fresh workers)")
    print("  executor                start s   cold s   sweep s   rows/s   vs local  workers used  "
          "same modelled+quality")
    for r in results:
        print(f"  {r['executor']:<22}{r['start_measured_s']:8.1f} {r['cold_sweep_measured_s']:8.1f}  "
              f"{r['sweep_measured_s']:8.1f}  "
              f"{r['rows_per_s_measured']:7.2f}  {r.get('speedup_vs_local', 1.0):8.2f}x  "
              f"{r['workers_used']:12d}  {r['same_modelled_and_quality']}")
    if sim:
        print(f"\none simulation: {sim['dpus']} DPUs, {sim['transitions']} transitions, 4 epochs, "
              f"sync:2 (measured wall clock, numba warm)")
        print(f"  local            {sim['local_measured_s']:8.2f} s")
        print(f"  2 Dask workers   {sim['dask_2_workers_measured_s']:8.2f} s   bit-identical: "
              f"{sim['bit_identical']}")
        print(f"  worker traffic   {sim['worker_traffic_mb']:8.1f} MB in "
              f"{sim['worker_transfer_measured_s']:.2f} s measured; launches on the workers "
              f"{sim['worker_launch_measured_s']:.2f} s measured")
        print(f"  PIM total        {sim['pim_total_modelled_s'] * 1e3:8.3f} ms modelled (the same "
              f"for both)")


if __name__ == "__main__":
    main()
