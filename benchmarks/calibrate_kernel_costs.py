"""Fit the plain instructions of pimrl.rlkernel.costs.PLAIN on the C kernel, and check the
cost model against the DPU runtime for every variant and tasklet mode.

    python benchmarks/calibrate_kernel_costs.py fit      # print a new PLAIN table
    python benchmarks/calibrate_kernel_costs.py check    # model / runtime, every case

The DPU runtime counts the C kernel (kernels/swiftrl.c) block by block (docs/dpu-runtime.md,
"Time"). ``fit`` runs every variant (SARSA with both next actions) in every tasklet mode on
random transitions at several tasklet counts, terminal fractions, table shapes and DMA
blocks, removes from the runtime's instructions what the model prices otherwise (the
operations of the hardware's table and the structural costs of pimrl.rlkernel.costs: scans,
snapshots, transfers, barriers, random actions) and fits, by least squares, the plain
instructions per update, per non-terminal update and per token pass that remain. ``check``
compares the modelled cycles with the runtime's at 1, 4, 11 and 16 tasklets for two table
shapes (the tests assert 5 %). Needs a C compiler; a few minutes on 2 cores.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pimrl.data.records import TRANSITION_DTYPE  # noqa: E402
from pimrl.learners.params import LearnerParams  # noqa: E402
from pimrl.pim.hardware import get_hardware  # noqa: E402
from pimrl.rlkernel import costs as kcost  # noqa: E402
from pimrl.rlkernel.cprogram import model_agreement, swiftrl_program  # noqa: E402
from pimrl.swiftrl.trainer import PimTrainer  # noqa: E402

C = kcost.C
MODES = ("ring", "rows", "unlocked")
CASES = [(a, d, s, na) for a in ("q", "sarsa") for d in ("fp32", "int32") for s in ("seq", "str", "ran")
         for na in (("logged", "epsilon-greedy") if a == "sarsa" else ("logged",))]


def transitions(n, n_states, n_actions, seed=11, p_terminal=0.1):
    """Uniformly random transitions (every field drawn, terminal with ``p_terminal``)."""
    rs = np.random.default_rng(seed)
    rec = np.zeros(n, TRANSITION_DTYPE)
    rec["state"] = rs.integers(0, n_states, n)
    rec["next_state"] = rs.integers(0, n_states, n)
    rec["action"] = rs.integers(0, n_actions, n)
    rec["next_action"] = rs.integers(0, n_actions, n)
    rec["reward"] = rs.integers(-3, 5, n)
    rec["terminated"] = rs.random(n) < p_terminal
    return rec


def run(algo, dtype, sampling, mode, next_action, tasklets, n_states, n_actions, p_terminal=0.1,
        block=2048, n=12000, epochs=2):
    """(counters (D, K), tasklet counters or None, runtime instructions (D,), the program)."""
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=epochs, stride=5,
                      tasklet_mode=mode, next_action=next_action)
    made = []

    def factory(*a, **k):
        made.append(swiftrl_program(*a, tasklet_stats=True, **k))
        return made[-1]
    tr = PimTrainer(p, n_dpus=2, tasklets=tasklets, block_bytes=block, kernel=factory).fit(
        transitions(n, n_states, n_actions, p_terminal=p_terminal), n_states, n_actions)
    return tr, made[-1]


def structural(hw, algo, dtype, sampling, mode, next_action, counts, n_actions):
    """What the model prices outside PLAIN, for counters ``counts`` (..., K)."""
    costs = kcost.update_instruction_costs(hw, dtype, algo, sampling, n_actions, 1, False,
                                           tasklet_mode=mode, next_action=next_action)
    rule = algo if algo == "q" or next_action != "epsilon-greedy" else "sarsa-eg"
    u_plain, n_plain, x_plain, e_plain = kcost.PLAIN[(dtype, rule, sampling)][mode]
    costs = dict(costs, updates=costs["updates"] - u_plain,
                 non_terminal=costs["non_terminal"] - n_plain,
                 scanned_entries=costs["scanned_entries"] - e_plain,
                 snapshot_reads=costs["snapshot_reads"] - (x_plain if mode == "rows" else 0))
    return kcost.instructions(counts, costs)


def fit():
    hw = get_hardware()
    settings = ((16, 500, 6, 0.1, 2048), (16, 500, 6, 0.6, 2048), (16, 500, 6, 0.1, 256),
                (1, 500, 6, 0.1, 2048), (4, 13, 4, 0.1, 2048), (11, 13, 4, 0.3, 1024),
                (16, 13, 4, 0.1, 2048), (4, 500, 6, 0.2, 512), (1, 13, 4, 0.1, 2048))
    print("PLAIN = {")
    worst = 0.0
    for algo, dtype, sampling, na in CASES:
        rule = algo if algo == "q" or na != "epsilon-greedy" else "sarsa-eg"
        row = {}
        for mode in MODES:
            X, y, tot = [], [], []
            for tasklets, n_states, n_actions, pt, block in settings:
                tr, prog = run(algo, dtype, sampling, mode, na, tasklets, n_states, n_actions,
                               pt, block)
                c = tr.counters_.astype(float)
                instr = np.asarray(prog.last_launch["instructions"], float)
                rest = instr - structural(hw, algo, dtype, sampling, mode, na, c, n_actions)
                u = c[:, C["updates"]]
                nt = u - c[:, C["terminal_updates"]]
                third = (u * (tasklets > 1) if mode == "ring" else
                         c[:, C["snapshot_reads"]] if mode == "rows" else 0 * u)
                # a scan's own plain instructions only for epsilon-greedy SARSA: Q-learning
                # scans A entries for every non-terminal update it does not read from the
                # snapshot, which the other columns already count
                scans = c[:, C["scanned_entries"]] if rule == "sarsa-eg" else 0 * u
                for k in range(len(u)):
                    X.append([u[k], nt[k], third[k], scans[k]])
                    y.append(rest[k])
                    tot.append(instr[k])
            X, y, tot = np.array(X), np.array(y), np.array(tot)
            keep = [j for j in range(X.shape[1]) if np.abs(X[:, j]).max() > 0]
            coef = np.zeros(X.shape[1])
            coef[keep] = np.round(np.linalg.lstsq(X[:, keep], y, rcond=None)[0], 1)
            err = float(np.max(np.abs((tot - y + X @ coef) / tot - 1)))
            worst = max(worst, err)
            row[mode] = tuple(float(v) for v in coef)
        cells = ", ".join(f'"{m}": ({", ".join(f"{v:g}" for v in row[m])})' for m in MODES)
        print(f'    ("{dtype}", "{rule}", "{sampling}"): {{{cells}}},', flush=True)
    print("}")
    print(f"# largest error of the fitted instructions: {100 * worst:.1f} %")


def check():
    worst = 0.0
    for n_states, n_actions in ((13, 4), (500, 6)):
        for algo, dtype, sampling, na in CASES:
            line = f"{algo}-{dtype}-{sampling}{'+eg' if na != 'logged' else ''} S={n_states}:"
            for mode in MODES:
                for tasklets in (1, 4, 11, 16):
                    _, prog = run(algo, dtype, sampling, mode, na, tasklets, n_states, n_actions,
                                  n=20000, epochs=1)
                    ratio = model_agreement(prog)["ratio"]
                    worst = max(worst, float(np.max(np.abs(ratio - 1))))
                    line += f" {mode[:2]}{tasklets}={ratio.mean():.3f}"
            print(line, flush=True)
    print(f"largest |runtime / model - 1|: {100 * worst:.1f} %")


if __name__ == "__main__":
    {"fit": fit, "check": check}[sys.argv[1] if len(sys.argv) > 1 else "check"]()
