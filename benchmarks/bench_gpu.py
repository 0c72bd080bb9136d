"""The GPU baseline on a real GPU, beside the CPU baselines of the same machine, one run.

    python benchmarks/bench_gpu.py [--envs Taxi-v3,...] [--n 1000000[,4000000,...]] [--epochs 32]
        [--dpus 125,250,500,1000,2000] [--tasklets 16] [--variants all] [--repeats 3]
        [--pim-results experiments/results/swiftrl-results.csv] [--out FILE.csv] [--json]

For every environment and variant (SwiftRL's datasets: uniformly random behaviour, SARSA
bootstrapping from the logged action, as in ``experiments/swiftrl.toml``):

* **GPU** (numba-cuda, one CUDA thread per partition): partitions = DPUs and lanes =
  tasklets, so the GPU computes exactly the tables of the PIM run with that many DPUs.
  CUDA events time the host-to-device copies, the learning kernel, the average (on the
  device) and the device-to-host copies (median of ``--repeats``). ``--dpus`` beyond the
  PIM system's 2,556 shows the GPU with the partition counts that suit it best.
* **CPU, numba** (``pimrl train --backend cpu``) and **CPU, C** (``kernels/cpu_loop.c``):
  every core of this machine, one partition per thread (their fastest form), best of
  ``--repeats``, timed alternately; their tables are checked equal bit for bit.
* At the largest DPU count the GPU's tables and their average are checked bit for bit
  against the numba CPU loop given the same partitions and lanes.
* **PIM**: the *modelled* end-to-end time of the same run (mean aggregation), read from a
  study's results (``--pim-results``) where it holds a row with the same settings; never
  computed here.

* **Energy**: the GPU board's per run, measured through NVML's energy counter over a window
  of at least a second of runs (``pimrl.baselines.nvml``; "not measured" where the driver
  cannot read it), beside PIM's modelled energy from the same study row.

Every time is *measured* wall clock on this machine except the PIM column, which is
*modelled*. Without a GPU the script says why and exits 2: no GPU figure is ever estimated.

The scale study's sizes (``experiments/scale.toml``): ``--envs Taxi-v3 --n
65536,262144,1048576,4194304,16777216,67108864,268435456 --epochs 20 --dpus 2000
--variants q-fp32-seq,q-fp32-ran,q-int32-seq,q-int32-ran --pim-results
experiments/scale/results.csv``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from c_baseline import compiler, run_c_loop  # noqa: E402

from pimrl.baselines.cpu import cpu_baseline, max_threads  # noqa: E402
from pimrl.baselines.gpu import gpu_baseline, gpu_status  # noqa: E402
from pimrl.data import generate_dataset  # noqa: E402
from pimrl.envs import make  # noqa: E402
from pimrl.io import atomic_writer  # noqa: E402
from pimrl.learners.params import LearnerParams  # noqa: E402
from pimrl.learners.variants import ALL_VARIANTS, expand_variants, parse_variant  # noqa: E402

COLUMNS = ("env", "variant", "transitions", "epochs", "n_dpus", "tasklets",
           "gpu_h2d_measured_s", "gpu_kernel_measured_s", "gpu_d2h_measured_s",
           "gpu_aggregate_measured_s", "gpu_total_measured_s", "gpu_updates_per_s_measured",
           "cpu_threads", "cpu_numba_train_measured_s", "cpu_c_train_measured_s", "cpu_tables_equal",
           "gpu_equals_cpu_same_partitions", "pim_total_modelled_s", "gpu_energy_measured_j",
           "gpu_energy_status", "pim_energy_modelled_j", "gpu_device", "cpu")


def pim_times(path: str | None) -> dict:
    """(env, variant, transitions, epochs, dpus, tasklets) -> (modelled PIM seconds, modelled
    PIM joules or NaN) of the study's mean row."""
    if not path or not Path(path).exists():
        return {}
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("aggregator") != "mean" or not r.get("pim_total_modelled_s"):
                continue
            key = (r["env"], r["variant"], int(r["n_transitions"]), int(r["epochs"]),
                   int(r["n_dpus"]), int(r["tasklets"]))
            out[key] = (float(r["pim_total_modelled_s"]),
                        float(r.get("pim_energy_modelled_j") or "nan"))
    return out


def cpu_best(rec, env, params, threads, repeats):
    """Best-of-``repeats`` numba and C training seconds, timed alternately."""
    best_nb = best_c = float("inf")
    res = c = None
    for _ in range(repeats):
        res = cpu_baseline(rec, env.n_states, env.n_actions, params, threads=threads, check=False)
        best_nb = min(best_nb, res.train_seconds)
        c = run_c_loop(rec, env.n_states, env.n_actions, params, partitions=threads,
                       threads=threads)
        best_c = min(best_c, c["train_measured_s"])
    equal = bool(np.array_equal(res.q_raw, c["q_raw"]) and c["saturations"] == res.saturations)
    return best_nb, best_c, equal


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", default="Taxi-v3,FrozenLake-v1,CliffWalking-v1")
    ap.add_argument("--n", default="1000000", help="transitions, or a comma list of sizes")
    ap.add_argument("--epochs", type=int, default=32)
    ap.add_argument("--dpus", default="125,250,500,1000,2000")
    ap.add_argument("--tasklets", type=int, default=16)
    ap.add_argument("--variants", default="all", help="comma-separated names, or all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pim-results", default="experiments/results/swiftrl-results.csv")
    ap.add_argument("--out", help="write the rows to this CSV (atomically, after each variant)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    ok, device = gpu_status()
    if not ok:
        print(f"GPU: not measured ({device})", file=sys.stderr)
        return 2
    sizes = [int(x) for x in str(args.n).split(",")]
    variants = ALL_VARIANTS if args.variants == "all" else expand_variants(args.variants.split(","))
    dpus = sorted(int(d) for d in args.dpus.split(","))
    threads = max_threads()
    have_c = compiler() is not None
    pim = pim_times(args.pim_results)
    cpu_name = f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs"
    rows = []
    t_start = time.perf_counter()
    if not args.json:
        print(f"GPU: {device}; CPU: {cpu_name}, numba threads {threads}; C loop: "
              f"{'built' if have_c else 'no C compiler'}")
        print(f"{', '.join(f'{n:,}' for n in sizes)} transitions x {args.epochs} epochs; GPU "
              f"partitions = DPUs, lanes = "
              f"{args.tasklets}; CPU one partition per thread. Measured wall clock; PIM modelled.\n")
        print(f"{'env':<16} {'variant':<16} {'n':>11} {'DPUs':>5} {'GPU kern ms':>11} {'GPU all ms':>10} "
              f"{'CPU nb ms':>9} {'CPU C ms':>8} {'PIM ms*':>8} {'GPU/CPU':>7} {'GPU mJ':>10} "
              f"{'PIM mJ*':>8}  checks")
    for env_id, n in ((e, n) for e in args.envs.split(",") for n in sizes):
        env = make(env_id)
        rec = generate_dataset(env, n, seed=0)
        for v in variants:
            params = LearnerParams(**parse_variant(v), epochs=args.epochs)
            nb_s, c_s, cpu_eq = cpu_best(rec, env, params, threads, args.repeats) if have_c else (
                cpu_baseline(rec, env.n_states, env.n_actions, params, threads=threads,
                             repeats=args.repeats, check=False).seconds, float("nan"), None)
            for d in dpus:
                g = gpu_baseline(rec, env.n_states, env.n_actions, params, partitions=d,
                                 lanes=args.tasklets, repeats=args.repeats, check=False,
                                 keep_tables=d == dpus[-1])
                same = ""
                if d == dpus[-1]:
                    ref = cpu_baseline(rec, env.n_states, env.n_actions, params, threads=threads,
                                       partitions=d, lanes=args.tasklets, check=False)
                    same = bool(np.array_equal(ref.q_raw, g.q_raw) and np.array_equal(ref.q, g.q)
                                and ref.saturations == g.saturations)
                key = (env_id, v, n, args.epochs, d, args.tasklets)
                row = {"env": env_id, "variant": v, "transitions": n, "epochs": args.epochs,
                       "n_dpus": d, "tasklets": args.tasklets,
                       "gpu_h2d_measured_s": g.h2d_seconds, "gpu_kernel_measured_s": g.kernel_seconds,
                       "gpu_d2h_measured_s": g.d2h_seconds,
                       "gpu_aggregate_measured_s": g.aggregate_seconds,
                       "gpu_total_measured_s": g.seconds, "gpu_updates_per_s_measured": g.updates_per_s,
                       "cpu_threads": threads, "cpu_numba_train_measured_s": nb_s, "cpu_c_train_measured_s": c_s,
                       "cpu_tables_equal": cpu_eq, "gpu_equals_cpu_same_partitions": same,
                       "pim_total_modelled_s": pim[key][0] if key in pim else "",
                       "gpu_energy_measured_j": g.energy_measured_j,
                       "gpu_energy_status": g.energy_status,
                       "pim_energy_modelled_j": pim[key][1] if key in pim else "",
                       "gpu_device": device,
                       "cpu": cpu_name}
                rows.append(row)
                if not args.json:
                    best_cpu = min(nb_s, c_s) if have_c else nb_s
                    pim_ms = f"{pim[key][0] * 1e3:8.1f}" if key in pim else f"{'-':>8}"
                    pim_mj = f"{pim[key][1] * 1e3:8.1f}" if key in pim else f"{'-':>8}"
                    checks = " ".join(x for x in (
                        "" if cpu_eq is None else ("C=numba" if cpu_eq else "C!=numba"),
                        "" if same == "" else ("GPU=CPU" if same else "GPU!=CPU")) if x)
                    print(f"{env_id:<16} {v:<16} {n:>11,} {d:>5} {g.kernel_seconds * 1e3:11.2f} "
                          f"{g.seconds * 1e3:10.2f} {nb_s * 1e3:9.2f} {c_s * 1e3:8.2f} {pim_ms} "
                          f"{best_cpu / g.seconds:6.2f}x {g.energy_measured_j * 1e3:10.1f} {pim_mj} "
                          f" {checks}", flush=True)
            if args.out:
                with atomic_writer(args.out, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
                    w.writeheader()
                    w.writerows(rows)
    if args.json:
        print(json.dumps({"gpu": device, "cpu": cpu_name, "rows": rows}))
    else:
        print(f"\n* PIM: modelled (cost model), read from {args.pim_results}; every other time "
              f"measured here. GPU/CPU: the faster CPU loop's time over the GPU's (all phases). "
              f"GPU mJ: the board's energy per run, measured through NVML (nan: not readable; "
              f"{rows[-1]['gpu_energy_status'] if rows else ''}). "
              f"Bench wall time {time.perf_counter() - t_start:.0f} s.")
        if any(r["cpu_tables_equal"] is False or r["gpu_equals_cpu_same_partitions"] is False
               for r in rows):
            print("WARNING: some tables differ (see the checks column)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
