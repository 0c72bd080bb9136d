"""Throughput of the CPU baseline, single- against multi-threaded (and the GPU where present).

    python benchmarks/bench_baselines.py [--n 1000000] [--epochs 4] [--env Taxi-v3] [--repeats 3]

Figures are printed, never asserted. Times are wall clock after an untimed warm-up call
(numba compilation excluded), median of ``--repeats``; throughput is Q-updates per second.
"""
from __future__ import annotations

import argparse
import os
import platform

import numpy as np

from pimrl.baselines import ALL_VARIANTS, parse_variant
from pimrl.baselines.cpu import cpu_baseline, max_threads
from pimrl.baselines.gpu import gpu_baseline, gpu_status
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners.params import LearnerParams


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="transitions")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--env", action="append", help="environment(s); default all three")
    ap.add_argument("--variants", default="all", help="comma-separated, or all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=max_threads(), help="multi-thread count")
    args = ap.parse_args(argv)
    envs = args.env or ["FrozenLake-v1", "Taxi-v3", "CliffWalking-v1"]
    variants = ALL_VARIANTS if args.variants == "all" else args.variants.split(",")
    ok, reason = gpu_status()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
          f"numba threads {max_threads()}; GPU: {'measured, ' + reason if ok else 'not measured (' + reason + ')'}")
    print(f"{args.n:,} transitions x {args.epochs} epochs; wall clock, compilation excluded, "
          f"median of {args.repeats}\n")
    head = f"{'env':<16} {'variant':<16} {'1 thread':>20} {f'{args.threads} threads':>20} {'gain':>6}"
    if ok:
        head += f" {'GPU kernel':>12} {'GPU total':>12}"
    print(head)
    for env_id in envs:
        env = make(env_id)
        rec = generate_dataset(env, args.n, seed=0)
        for v in variants:
            p = LearnerParams(**parse_variant(v), epochs=args.epochs)
            one = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=1, repeats=args.repeats)
            many = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=args.threads,
                                repeats=args.repeats, check=False)
            line = (f"{env_id:<16} {v:<16} {one.seconds:8.3f} s {one.updates_per_s / 1e6:6.1f} M/s "
                    f"{many.seconds:8.3f} s {many.updates_per_s / 1e6:6.1f} M/s "
                    f"{one.seconds / many.seconds:5.2f}x")
            if ok:
                g = gpu_baseline(rec, env.n_states, env.n_actions, p, partitions=2000, lanes=16,
                                 repeats=args.repeats, check=False)
                line += f" {g.kernel_seconds:10.4f} s {g.seconds:10.4f} s"
            print(line, flush=True)
    if not ok:
        print("\nGPU: not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
