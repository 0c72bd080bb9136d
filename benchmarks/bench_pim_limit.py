"""PIM against its physical limit and against the best CPU loop, in one run.

    python benchmarks/bench_pim_limit.py [--transitions 1000000] [--dpus 2000] [--tasklets 16]
        [--epochs 4] [--variants all] [--modes ring,rows,unlocked] [--threads 2] [--json]

For every variant and tasklet mode, on Taxi (uniformly random transitions, seed 0):

- **modelled cycles per update** on the slowest DPU of a ``--dpus`` run (the launch's
  kernel time, less its fixed boot and completion latencies, at the clock, over that DPU's
  updates), and **per DPU** (updates per modelled second of kernel);
- **the limit**: the instructions per update the cost model counts for the same work. With
  the pipeline full a DPU retires one instruction a cycle, so no schedule of these
  instructions is faster; ``cycles / limit`` says how far the mode is from it (the ring runs
  at 1/11 of the pipeline, so about 11x; the parallel modes near 1x, above it by their
  imbalance, barriers and DMA);
- **2,000-DPU throughput**: updates per modelled second of kernel, and end to end (the four
  PrIM categories, transfers included);
- **the C loop** (kernels/cpu_loop.c, one partition per thread, tables averaged: the CPU
  baseline in C) on the same data, measured on this machine in the same run at 1 and
  ``--threads`` threads.

PIM figures are modelled (pimrl's cost model of the 2,556-DPU PrIM server); CPU figures are
measured wall clock here, best of two trainings in one process.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from c_baseline import compiler, run_c_loop  # noqa: E402

from pimrl.data import generate_dataset  # noqa: E402
from pimrl.envs import make  # noqa: E402
from pimrl.learners.params import LearnerParams  # noqa: E402
from pimrl.learners.variants import ALL_VARIANTS, TASKLET_MODES, parse_variant  # noqa: E402
from pimrl.rlkernel import costs as kcost  # noqa: E402
from pimrl.swiftrl.trainer import PimTrainer  # noqa: E402


def pim_figures(records, env, params, n_dpus, tasklets) -> dict:
    """One modelled run: cycles and instructions per update on its slowest DPU, throughputs."""
    tr = PimTrainer(params, n_dpus=n_dpus, tasklets=tasklets).fit(records, env.n_states,
                                                                  env.n_actions)
    hw, prog = tr.hardware_, tr.program_
    counts = tr.counters_
    cycles = prog.cycles(hw, counts, np.tile(_params_words(params, tr), (len(counts), 1)),
                         tr.tasklet_counters_)
    slow = int(np.argmax(cycles))
    costs = prog.costs(hw, params.next_action)
    instr = kcost.instructions(counts, costs)
    updates = counts[:, kcost.C["updates"]].astype(float)
    kernel_s = tr.timings_.modelled_s["dpu_kernel"]
    total_s = tr.timings_.modelled_total_s
    return {
        "cycles_per_update": float(cycles[slow] / updates[slow]),
        "limit_instructions_per_update": float(instr[slow] / updates[slow]),
        "updates_per_dpu_per_s_modelled": float(updates[slow] * hw.frequency_hz / cycles[slow]),
        "kernel_modelled_s": kernel_s, "total_modelled_s": total_s,
        "kernel_updates_per_s_modelled": tr.n_updates_ / kernel_s,
        "total_updates_per_s_modelled": tr.n_updates_ / total_s,
        "conflicts": tr.conflicts_ if params.tasklet_mode == "unlocked" else None,
        "block_bytes": tr.block_,
    }


def _params_words(params, tr):
    """The launch's parameter words (what the trainer pushed) for pricing its counters."""
    from pimrl.learners.variants import PARAMS_WORDS

    words = np.zeros(PARAMS_WORDS, np.int64)
    scalars = params.kernel_scalars()
    words[:len(scalars)] = scalars
    return words


def c_loop(records, env, params, threads) -> dict:
    res = run_c_loop(records, env.n_states, env.n_actions, params, threads, threads, repeats=2)
    n = len(records) * params.epochs
    return {"measured_s": res["train_measured_s"],
            "updates_per_s_measured": n / res["train_measured_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transitions", type=int, default=1_000_000)
    ap.add_argument("--dpus", type=int, default=2000)
    ap.add_argument("--tasklets", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--variants", default="all", help="'all' or a comma list (q-int32-seq,...)")
    ap.add_argument("--modes", default=",".join(TASKLET_MODES))
    ap.add_argument("--threads", type=int, default=2, help="the C loop's threads besides 1")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    variants = ALL_VARIANTS if args.variants == "all" else args.variants.split(",")
    modes = args.modes.split(",")
    env = make("Taxi-v3")
    records = generate_dataset(env, args.transitions, seed=0)
    have_cc = compiler() is not None
    rows = []
    for v in variants:
        row = {"variant": v, "modes": {}}
        base = LearnerParams(**parse_variant(v), epochs=args.epochs)
        for mode in modes:
            p = LearnerParams(**{**base.as_dict(), "tasklet_mode": mode})
            row["modes"][mode] = pim_figures(records, env, p, args.dpus, args.tasklets)
            print(f"{v} {mode} done", file=sys.stderr, flush=True)
        if have_cc:
            row["c_loop"] = {t: c_loop(records, env, base, t) for t in sorted({1, args.threads})}
        rows.append(row)
    out = {"env": "Taxi-v3", "transitions": args.transitions, "epochs": args.epochs,
           "dpus": args.dpus, "tasklets": args.tasklets, "rows": rows,
           "c_loop": "measured here" if have_cc else "not measured: no C compiler"}
    if args.json:
        print(json.dumps(out, indent=1, default=float))
        return 0
    print(f"Taxi-v3, {args.transitions} transitions x {args.epochs} epochs; PIM: {args.dpus} DPUs "
          f"x {args.tasklets} tasklets (modelled, upmem-2556); C loop: measured on this machine")
    head = ("variant", "mode", "cycles/upd", "limit (instr/upd)", "x limit",
            "M upd/s per DPU", "G upd/s kernel", "G upd/s end-to-end",
            f"C loop 1t / {args.threads}t (M upd/s)", "PIM e2e / C best")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        c = row.get("c_loop")
        best = max(x["updates_per_s_measured"] for x in c.values()) if c else float("nan")
        ctext = (" / ".join(f"{c[t]['updates_per_s_measured'] / 1e6:.0f}" for t in sorted(c))
                 if c else "not measured")
        for mode, f in row["modes"].items():
            print(f"| {row['variant']} | {mode} | {f['cycles_per_update']:.0f} | "
                  f"{f['limit_instructions_per_update']:.0f} | "
                  f"{f['cycles_per_update'] / f['limit_instructions_per_update']:.2f} | "
                  f"{f['updates_per_dpu_per_s_modelled'] / 1e6:.2f} | "
                  f"{f['kernel_updates_per_s_modelled'] / 1e9:.2f} | "
                  f"{f['total_updates_per_s_modelled'] / 1e9:.3f} | {ctext} | "
                  f"{f['total_updates_per_s_modelled'] / best:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
