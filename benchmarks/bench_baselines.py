"""The CPU baseline (numba) against the plain-C loop, every variant, 1 and N threads, one run.

    python benchmarks/bench_baselines.py [--n 1000000] [--epochs 20] [--env Taxi-v3]
        [--variants all] [--threads 2] [--repeats 3] [--json]

For each variant and thread count, the numba CPU baseline (``pimrl train --backend cpu``) and
``kernels/cpu_loop.c`` (built here with the system C compiler, ``-O3 -march=native
-ffp-contract=off``, pthreads) learn the same partitions of the same records in the same
update order; their tables are checked equal bit for bit, and the table prints each one's
updates per second and the ratio numba / C. The two are timed alternately (best of
``--repeats`` rounds each, a round the better of two trainings in one process, so both are
timed with warm caches), and a load on this shared machine hits both alike. Times are *measured*
wall clock of the training loops only (numba's compilation and the C program's start and
file reading excluded). Where a GPU is present the GPU baseline is added; elsewhere it says
"GPU: not measured". Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from c_baseline import compiler, run_c_loop  # noqa: E402

from pimrl.baselines.cpu import cpu_baseline, max_threads  # noqa: E402
from pimrl.baselines.gpu import gpu_baseline, gpu_status  # noqa: E402
from pimrl.data import generate_dataset  # noqa: E402
from pimrl.envs import make  # noqa: E402
from pimrl.learners.params import LearnerParams  # noqa: E402
from pimrl.learners.variants import ALL_VARIANTS, expand_variants, parse_variant  # noqa: E402


def compare(records, env, params, threads, repeats):
    """Best-of numba and C timings of one variant at one thread count: ``repeats`` rounds,
    alternately, each the best of two trainings in one process (the first warms the caches
    for the second, on both sides)."""
    best_nb = best_c = float("inf")
    res = c = None
    for _ in range(repeats):
        res = cpu_baseline(records, env.n_states, env.n_actions, params, threads=threads,
                           repeats=2, check=False)
        best_nb = min(best_nb, *res.repeat_train_seconds)
        c = run_c_loop(records, env.n_states, env.n_actions, params, partitions=res.partitions,
                       threads=threads, repeats=2)
        best_c = min(best_c, c["train_measured_s"])
    same = (np.array_equal(res.q_raw, c["q_raw"]) and c["saturations"] == res.saturations)
    updates = len(records) * params.epochs
    return {"threads": threads, "numba_train_measured_s": best_nb, "c_train_measured_s": best_c,
            "numba_updates_per_s": updates / best_nb, "c_updates_per_s": updates / best_c,
            "ratio_numba_to_c": best_c / best_nb, "tables_equal": bool(same)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="transitions")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--env", default="Taxi-v3")
    ap.add_argument("--variants", default="all", help="comma-separated names, or all")
    ap.add_argument("--threads", type=int, default=max_threads(), help="the multi-thread count")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if compiler() is None:
        print("no C compiler (cc, gcc or $CC): the C loop cannot be built", file=sys.stderr)
        return 2
    variants = ALL_VARIANTS if args.variants == "all" else expand_variants(args.variants.split(","))
    env = make(args.env)
    rec = generate_dataset(env, args.n, seed=0)
    thread_counts = sorted({1, args.threads})
    ok, reason = gpu_status()
    rows = []
    if not args.json:
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical "
              f"CPUs, numba threads {max_threads()}; GPU: "
              f"{'measured, ' + reason if ok else 'not measured (' + reason + ')'}")
        print(f"{args.env}: {args.n:,} transitions x {args.epochs} epochs, one partition per "
              f"thread; measured wall clock of the training loops, best of {args.repeats} "
              f"rounds (each the better of two trainings in one process), numba and C timed "
              f"alternately\n")
        print(f"{'variant':<16} {'threads':>7} {'numba M/s':>10} {'C M/s':>8} {'numba/C':>8}  tables")
    for v in variants:
        params = LearnerParams(**parse_variant(v), epochs=args.epochs)
        for th in thread_counts:
            row = {"variant": v, **compare(rec, env, params, th, args.repeats)}
            if ok:
                g = gpu_baseline(rec, env.n_states, env.n_actions, params, partitions=2000,
                                 lanes=16, repeats=args.repeats, check=False)
                row["gpu_kernel_measured_s"] = g.kernel_seconds
                row["gpu_total_measured_s"] = g.seconds
            rows.append(row)
            if not args.json:
                print(f"{v:<16} {th:>7} {row['numba_updates_per_s'] / 1e6:10.1f} "
                      f"{row['c_updates_per_s'] / 1e6:8.1f} {row['ratio_numba_to_c']:7.2f}x  "
                      f"{'equal' if row['tables_equal'] else 'DIFFER'}", flush=True)
    if args.json:
        print(json.dumps({"env": args.env, "transitions": args.n, "epochs": args.epochs,
                          "gpu": reason if ok else None, "rows": rows}))
        return 0
    worst = min(rows, key=lambda r: r["ratio_numba_to_c"])
    print(f"\nlowest numba/C ratio: {worst['ratio_numba_to_c']:.2f}x ({worst['variant']}, "
          f"{worst['threads']} thread{'s' if worst['threads'] > 1 else ''})")
    if not all(r["tables_equal"] for r in rows):
        print("WARNING: some C tables differ from numba's (see the tables column)")
    if not ok:
        print("GPU: not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
