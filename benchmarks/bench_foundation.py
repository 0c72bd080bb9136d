"""Data generation and learning throughput against plain numpy implementations.

pimrl's generator and reference learner (numba) against straightforward numpy/Python
versions of the same work, timed in the same run on this machine (measured wall clock;
numba compilation excluded by a warm-up call). The numpy versions run on fewer transitions
(they are slow) and are reported per second.

    python benchmarks/bench_foundation.py [--env Taxi-v3] [--transitions 10000000]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from pimrl.data import generate_dataset
from pimrl.data.records import TRANSITION_DTYPE
from pimrl.envs import make
from pimrl.learners.reference import OfflineLearner


def numpy_generate(env, n, seed):
    """Uniform-random behaviour, one Python step at a time over numpy tables."""
    rng = np.random.default_rng(seed)
    out = np.zeros(n, TRANSITION_DTYPE)
    cum = np.cumsum(env.prob, axis=2)
    s = int(rng.choice(env.n_states, p=env.initial_dist))
    steps = 0
    a = int(rng.integers(env.n_actions))
    for i in range(n):
        k = int(np.searchsorted(cum[s, a], rng.random(), side="right"))
        k = min(k, env.n_outcomes - 1)
        s2, r, term = int(env.next_state[s, a, k]), env.reward[s, a, k], env.terminated[s, a, k]
        b = int(rng.integers(env.n_actions))
        steps += 1
        trunc = (not term) and steps >= env.max_episode_steps
        out[i] = (s, s2, r, a, b, term, trunc)
        if term or trunc:
            s, steps = int(rng.choice(env.n_states, p=env.initial_dist)), 0
            a = int(rng.integers(env.n_actions))
        else:
            s, a = s2, b
    return out


def numpy_q_learning(records, n_states, n_actions, alpha=0.1, gamma=0.95):
    """Offline Q-learning, one Python update at a time on a float32 numpy table."""
    q = np.zeros((n_states, n_actions), np.float32)
    a32, g32 = np.float32(alpha), np.float32(gamma)
    s_, a_, r_, s2_, t_ = (records[f] for f in ("state", "action", "reward", "next_state", "terminated"))
    for i in range(len(records)):
        target = r_[i] if t_[i] else r_[i] + g32 * q[s2_[i]].max()
        q[s_[i], a_[i]] += a32 * (target - q[s_[i], a_[i]])
    return q


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="Taxi-v3")
    ap.add_argument("--transitions", type=int, default=10_000_000)
    ap.add_argument("--numpy-transitions", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = make(args.env)
    n, m = args.transitions, args.numpy_transitions

    generate_dataset(env, 1000, 0)                                       # compile
    t_gen, recs = best_of(lambda: generate_dataset(env, n, 0), args.repeats)
    t_np_gen, _ = best_of(lambda: numpy_generate(env, m, 0), 1)
    OfflineLearner().fit(recs[:1000], env.n_states, env.n_actions)       # compile
    t_learn, _ = best_of(lambda: OfflineLearner().fit(recs, env.n_states, env.n_actions), args.repeats)
    t_np_learn, q_np = best_of(lambda: numpy_q_learning(recs[:m], env.n_states, env.n_actions), 1)
    q_ref = OfflineLearner().fit(recs[:m], env.n_states, env.n_actions).q_raw_
    same = bool(np.array_equal(q_np, q_ref))

    rows = {
        "generate": {"pimrl_per_s": n / t_gen, "numpy_per_s": m / t_np_gen},
        "q_learning_fp32": {"pimrl_per_s": n / t_learn, "numpy_per_s": m / t_np_learn,
                            "numpy_equals_reference": same},
    }
    if args.json:
        print(json.dumps({"env": env.env_id, "transitions": n, "numpy_transitions": m, **rows}))
        return
    print(f"{env.env_id}: pimrl on {n:,} transitions (best of {args.repeats}), plain numpy on "
          f"{m:,}; all figures measured wall clock on this machine, compilation excluded")
    print(f"{'work':18} {'pimrl':>16} {'plain numpy':>16} {'speedup':>9}")
    for name, r in rows.items():
        print(f"{name:18} {r['pimrl_per_s'] / 1e6:10.2f} M/s {r['numpy_per_s'] / 1e6:10.3f} M/s "
              f"{r['pimrl_per_s'] / r['numpy_per_s']:8.0f}x")
    print(f"numpy Q-learning table equals the reference learner's bit for bit: {same}")


if __name__ == "__main__":
    main()
