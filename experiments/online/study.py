"""The online study's comparisons (run after run.sh; writes data/*.json):

- online against offline at equal sample budgets: environment steps taken on the DPUs
  against the same number of transitions from a uniformly random behaviour policy pushed as
  a dataset (offline: 10 epochs, sync:10; online: sync:10), 200 DPUs, exact evaluation;
- weak scaling of independent agents: 1 to 2,000 DPUs, each its own seeded 8x8 lake and the
  same steps per DPU: modelled time per phase.

    python experiments/online/study.py
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pimrl.data import generate_dataset
from pimrl.envs import evaluate_against_optimum, make
from pimrl.io import atomic_write_text
from pimrl.learners.params import LearnerParams
from pimrl.online.params import OnlineParams
from pimrl.online.trainer import OnlineTrainer
from pimrl.swiftrl.trainer import PimTrainer

HERE = Path(__file__).parent
DATA = HERE / "data"


def online_vs_offline(n_dpus=200, budgets=(400_000, 1_600_000, 6_400_000)):
    rows = []
    cases = {"Taxi-v3": dict(alpha=0.5, epsilon=0.1),
             "FrozenLake8x8-v1": dict(alpha=0.1, epsilon=1.0)}
    for env_id, hp in cases.items():
        env = make(env_id)
        for budget in budgets:
            t0 = time.perf_counter()
            on = OnlineTrainer(OnlineParams(alpha=hp["alpha"], gamma=0.95, epsilon=hp["epsilon"]),
                               n_dpus=n_dpus, tasklets=16, aggregate="sync:10:weighted"
                               ).fit(env, budget // n_dpus)
            ev = evaluate_against_optimum(env, on.q_, 0.95)
            rows.append({"env_id": env_id, "mode": "online", "samples": budget, "dpus": n_dpus,
                         "updates": on.env_steps_, **on.timings_.as_dict(),
                         "success_rate": ev["success_rate"], "mean_return": ev["mean_return"],
                         "optimal_success_rate": ev["optimal_success_rate"],
                         "optimal_mean_return": ev["optimal_mean_return"],
                         "simulation_measured_s": time.perf_counter() - t0})
            t0 = time.perf_counter()
            recs = generate_dataset(env, budget, 0)
            off = PimTrainer(LearnerParams(alpha=hp["alpha"], gamma=0.95, epochs=10), n_dpus=n_dpus,
                             tasklets=16, aggregate="sync:10:weighted").fit(recs, env.n_states, env.n_actions)
            ev = evaluate_against_optimum(env, off.q_, 0.95)
            rows.append({"env_id": env_id, "mode": "offline", "samples": budget, "dpus": n_dpus,
                         "updates": off.n_updates_, **off.timings_.as_dict(),
                         "success_rate": ev["success_rate"], "mean_return": ev["mean_return"],
                         "optimal_success_rate": ev["optimal_success_rate"],
                         "optimal_mean_return": ev["optimal_mean_return"],
                         "simulation_measured_s": time.perf_counter() - t0})
            print(env_id, budget, [(r["mode"], round(r["success_rate"], 4), round(r["modelled_total_s"], 4))
                                   for r in rows[-2:]], file=sys.stderr, flush=True)
    return rows


def weak_scaling(counts=(1, 10, 100, 500, 1000, 2000), steps=100_000):
    rows = []
    for n in counts:
        envs = [make("FrozenLake-v1:size=8", seed=d) for d in range(n)]
        t0 = time.perf_counter()
        tr = OnlineTrainer(OnlineParams(alpha=0.1, gamma=0.99, epsilon=1.0, epsilon_end=0.05,
                                        decay_steps=3750), n_dpus=n, tasklets=16,
                           agents="independent").fit(envs, steps)
        rows.append({"dpus": n, "steps_per_dpu": steps, "env_steps": tr.env_steps_,
                     **tr.timings_.as_dict(), "simulation_measured_s": time.perf_counter() - t0})
        print("weak", n, round(rows[-1]["modelled_total_s"], 5), file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    DATA.mkdir(exist_ok=True)
    which = sys.argv[1:] or ["offline", "weak"]
    if "weak" in which:
        atomic_write_text(DATA / "weak_scaling.json", json.dumps(weak_scaling(), indent=1, default=float))
    if "offline" in which:
        atomic_write_text(DATA / "online_vs_offline.json",
                          json.dumps(online_vs_offline(), indent=1, default=float))
