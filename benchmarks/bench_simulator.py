"""Simulator throughput against a bare numba loop doing the same updates.

The simulator runs the full PIM path (records in paged MRAM, DMA into WRAM buffers, the
Q-table in WRAM, counters, transfers through the SDK layer). The bare loop runs the same
updates in the same order with a ``prange`` over DPUs, reading the records straight from
contiguous arrays. Both are timed on this machine (measured wall clock, numba compilation
excluded by a warm-up run). Target: the simulator at >= 70 % of the bare loop.

    python benchmarks/bench_simulator.py [--transitions 1000000] [--dpus 2000] [--epochs 20]
"""
from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np

from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners.kernels import compiled
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import record_words
from pimrl.partition import even_bounds, lane_bounds
from pimrl.pim.trainer import PimTrainer
from pimrl.rng import lane_seeds


def time_bare(records, env, params, n_dpus, tasklets):
    cols = record_words(records, params)
    lanes = lane_bounds(even_bounds(len(records), n_dpus), tasklets)
    rng = lane_seeds(params.seed, np.arange(n_dpus * tasklets)).reshape(n_dpus, tasklets)
    q = np.zeros((n_dpus, env.n_states, env.n_actions),
                 np.int32 if params.dtype == "int32" else np.float32)
    sat = np.zeros(n_dpus, np.int64)
    t0 = time.perf_counter()
    compiled(params.variant).partitions(*cols, lanes, rng, q, params.kernel_scalars(), sat)
    return time.perf_counter() - t0, q


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Taxi-v3")
    ap.add_argument("--transitions", type=int, default=1_000_000)
    ap.add_argument("--dpus", type=int, default=2000)
    ap.add_argument("--tasklets", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = make(args.env)
    records = generate_dataset(env, args.transitions, 0)
    rows = []
    for dtype in ("fp32", "int32"):
        params = LearnerParams(dtype=dtype, epochs=args.epochs)
        warm = LearnerParams(dtype=dtype, epochs=1)
        time_bare(records, env, warm, args.dpus, args.tasklets)                  # compile
        PimTrainer(warm, n_dpus=args.dpus, tasklets=args.tasklets, keep_dpu_tables=True).fit(
            records, env.n_states, env.n_actions)
        best_bare = best_sim = float("inf")
        for _ in range(args.repeats):
            t, q_bare = time_bare(records, env, params, args.dpus, args.tasklets)
            best_bare = min(best_bare, t)
            t0 = time.perf_counter()
            tr = PimTrainer(params, n_dpus=args.dpus, tasklets=args.tasklets,
                            keep_dpu_tables=True).fit(records, env.n_states, env.n_actions)
            best_sim = min(best_sim, time.perf_counter() - t0)
        assert np.array_equal(tr.dpu_tables_, q_bare), "simulator and bare loop disagree"
        updates = args.transitions * args.epochs
        rows.append({"dtype": dtype, "updates": updates, "bare_measured_s": best_bare,
                     "simulator_measured_s": best_sim, "bare_updates_per_s": updates / best_bare,
                     "simulator_updates_per_s": updates / best_sim,
                     "ratio": best_bare / best_sim})
    if args.json:
        print(json.dumps({"threads": numba.get_num_threads(), "rows": rows}))
        return
    print(f"{args.env}, {args.transitions} transitions x {args.epochs} epochs over {args.dpus} DPUs "
          f"x {args.tasklets} tasklets; {numba.get_num_threads()} numba threads; best of "
          f"{args.repeats}; all times measured (wall clock), compilation excluded")
    print(f"{'dtype':6} {'bare loop':>14} {'simulator':>14} {'simulator/bare':>15}")
    for r in rows:
        print(f"{r['dtype']:6} {r['bare_updates_per_s'] / 1e6:9.1f} M/s {r['simulator_updates_per_s'] / 1e6:9.1f} M/s "
              f"{r['ratio'] * 100:14.0f}%")


if __name__ == "__main__":
    main()
