"""Simulator throughput against the plain-C CPU loop and a bare numba loop, same run.

    python benchmarks/bench_simulator.py [--transitions 1000000] [--dpus 2000] [--tasklets 16]
        [--epochs 20] [--threads 2] [--repeats 3] [--json]

The simulator runs the full PIM path (``PimTrainer``: records pushed into paged MRAM through
the SDK layer, each DPU's kernel streaming them by (counted, checked) DMA, the Q-table in
WRAM, counters, the gather and the host average). The bare loop runs the same updates in the
same order (the same partitions and lanes) straight from one array: the variant's compiled
CPU loop. The C loop (``benchmarks/cpu_loop.c``) is the CPU baseline written in C, one
partition per thread: the figure a PIM-vs-CPU comparison must beat. All three are timed on
this machine, alternately, best of ``--repeats`` (measured wall clock; numba compilation
excluded by a warm-up run). Each side is timed warm, as the better of two trainings in a row:
the C loop's two in its process (as in ``bench_baselines.py``), the bare loop's and the
simulator's two calls (the simulator's time is the whole ``fit``, host side included).
Timed cold, right after the others have run, every side loses 10-30 % on this machine.
The bars the project sets: simulator >= 0.8x the C loop at the same thread count.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from c_baseline import compiler, run_c_loop  # noqa: E402

from pimrl.data import generate_dataset  # noqa: E402
from pimrl.envs import make  # noqa: E402
from pimrl.learners.kernels import compiled  # noqa: E402
from pimrl.learners.params import LearnerParams  # noqa: E402
from pimrl.learners.reference import record_words  # noqa: E402
from pimrl.partition import even_bounds, lane_bounds  # noqa: E402
from pimrl.swiftrl.trainer import PimTrainer  # noqa: E402
from pimrl.rng import lane_seeds  # noqa: E402


def time_bare(records, env, params, n_dpus, tasklets):
    words = record_words(records, params)
    lanes = lane_bounds(even_bounds(len(records), n_dpus), tasklets)
    rng = lane_seeds(params.seed, np.arange(n_dpus * tasklets)).reshape(n_dpus, tasklets)
    q = np.zeros((n_dpus, env.n_states, env.n_actions),
                 np.int32 if params.dtype == "int32" else np.float32)
    sat = np.zeros(n_dpus, np.int64)
    t0 = time.perf_counter()
    compiled(params.variant).partitions(*words, lanes, rng, q, params.kernel_scalars(), sat)
    return time.perf_counter() - t0, q


def time_sim(records, env, params, n_dpus, tasklets):
    t0 = time.perf_counter()
    tr = PimTrainer(params, n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True).fit(
        records, env.n_states, env.n_actions)
    return time.perf_counter() - t0, tr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Taxi-v3")
    ap.add_argument("--transitions", type=int, default=1_000_000)
    ap.add_argument("--dpus", type=int, default=2000)
    ap.add_argument("--tasklets", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS,
                    help="the multi-thread count (1 is always measured too)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if compiler() is None:
        print("no C compiler (cc, gcc or $CC): the C loop cannot be built", file=sys.stderr)
        return 2
    env = make(args.env)
    records = generate_dataset(env, args.transitions, 0)
    updates = args.transitions * args.epochs
    rows = []
    if not args.json:
        print(f"{args.env}, {args.transitions:,} transitions x {args.epochs} epochs; simulator and "
              f"bare loop over {args.dpus} DPUs x {args.tasklets} tasklets, C loop one partition "
              f"per thread; best of {args.repeats}, timed alternately; all times measured (wall "
              f"clock), compilation excluded")
        print(f"{'dtype':6} {'threads':>7} {'C loop':>11} {'bare loop':>11} {'simulator':>11} "
              f"{'sim/C':>6} {'sim/bare':>8}")
    for dtype in ("fp32", "int32"):
        params = LearnerParams(dtype=dtype, epochs=args.epochs)
        warm = LearnerParams(dtype=dtype, epochs=1)
        time_bare(records[:4096], env, warm, 64, args.tasklets)                   # compile
        time_sim(records[:4096], env, warm, 64, args.tasklets)
        for threads in sorted({1, args.threads}):
            numba.set_num_threads(threads)
            best = {"c": float("inf"), "bare": float("inf"), "sim": float("inf")}
            for _ in range(args.repeats):
                c = run_c_loop(records, env.n_states, env.n_actions, params, partitions=threads,
                               threads=threads, repeats=2)      # warm, as bench_baselines
                best["c"] = min(best["c"], c["train_measured_s"])
                for _ in range(2):                  # warm, as the C loop's two trainings
                    t, q_bare = time_bare(records, env, params, args.dpus, args.tasklets)
                    best["bare"] = min(best["bare"], t)
                for _ in range(2):
                    t, tr = time_sim(records, env, params, args.dpus, args.tasklets)
                    best["sim"] = min(best["sim"], t)
            if not np.array_equal(tr.dpu_tables_, q_bare):
                raise SystemExit("simulator and bare loop disagree")
            row = {"dtype": dtype, "threads": threads, "updates": updates,
                   **{f"{k}_measured_s": v for k, v in best.items()},
                   **{f"{k}_updates_per_s": updates / v for k, v in best.items()},
                   "sim_to_c": best["c"] / best["sim"], "sim_to_bare": best["bare"] / best["sim"]}
            rows.append(row)
            if not args.json:
                print(f"{dtype:6} {threads:>7} " + " ".join(
                    f"{row[k + '_updates_per_s'] / 1e6:7.1f} M/s" for k in ("c", "bare", "sim"))
                    + f" {row['sim_to_c']:5.2f}x {row['sim_to_bare']:7.2f}x", flush=True)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    if args.json:
        print(json.dumps({"env": args.env, "dpus": args.dpus, "tasklets": args.tasklets,
                          "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
