"""The CPU baseline of online learning: the same work as the DPUs (``n_items`` Q-tables of
``tasklets`` lanes each, the same rounds and aggregation) run by the compiled online loop on
this machine's cores, timed with the wall clock (*measured*). Its tables equal the DPUs' bit
for bit: the loop is the one the simulator's DPU program runs."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pimrl.learners.variants import OP_STEPS
from pimrl.online import kernels
from pimrl.online.envtable import dpu_env, stack_envs
from pimrl.online.params import OnlineParams
from pimrl.parallel import threads as default_threads
from pimrl.partition import even_bounds
from pimrl.learners.aggregate import AGGREGATORS, float_to_raw, parse_aggregate, raw_scale
from pimrl.rng import lane_seeds


@dataclass
class CpuOnlineResult:
    q: np.ndarray                 # float64 aggregate
    raw: np.ndarray               # the items' raw tables after the last round
    train_measured_s: float       # the compiled loops, all rounds
    aggregate_measured_s: float
    env_steps: int
    threads: int

    @property
    def env_steps_per_s_measured(self) -> float:
        return self.env_steps / self.train_measured_s if self.train_measured_s > 0 else float("nan")


def cpu_online(env, params: OnlineParams, n_items: int, tasklets: int, steps: int,
               aggregate: str = "mean", threads: int | None = None, warmup: bool = True) -> CpuOnlineResult:
    """``n_items`` tables, each ``steps`` environment steps over ``tasklets`` lanes, in the
    rounds of ``aggregate``; lanes seeded as on the DPUs (lane ``i * T + t``)."""
    spec = parse_aggregate(aggregate)
    de = dpu_env(env)
    tables = stack_envs([de], params.dtype, params.frac_bits)
    variant = params.variant
    threads = default_threads() if threads is None else int(threads)
    env_of = np.zeros(n_items, dtype=np.int64)
    words = np.tile(params.words(de.max_episode_steps, de.n_start), (n_items, 1))
    raw_dtype = np.int32 if variant.is_int else np.float32
    if warmup:                     # compile (or load from numba's cache) outside the timing
        w1 = words[:1].copy()
        w1[:, OP_STEPS] = 1
        kernels.run_items(variant, tables, env_of[:1], w1, kernels.new_lanes(1, tasklets),
                     lane_seeds(0, np.arange(tasklets)).reshape(1, -1),
                     np.zeros((1, de.n_states, de.n_actions), raw_dtype),
                     np.zeros((1, de.n_states, de.n_actions), np.uint32) if spec.needs_visits else None)
    lanes = kernels.new_lanes(n_items, tasklets)
    rng = lane_seeds(params.seed, np.arange(n_items * tasklets)).reshape(n_items, tasklets)
    q = np.zeros((n_items, de.n_states, de.n_actions), dtype=raw_dtype)
    visits = np.zeros_like(q, dtype=np.uint32) if spec.needs_visits else None
    train_s = agg_s = 0.0
    visits_before = 0
    n_steps = 0
    round_steps = np.diff(even_bounds(int(steps), spec.rounds))
    agg = None
    for r, k in enumerate(round_steps):
        words[:, OP_STEPS] = k
        t0 = time.perf_counter()
        c = kernels.run_items(variant, tables, env_of, words, lanes, rng, q, visits, threads)
        train_s += time.perf_counter() - t0
        n_steps += int(c[:, kernels.OC_STEPS].sum())
        t0 = time.perf_counter()
        v = None
        if visits is not None:
            cur = visits.astype(np.int64)
            v, visits_before = cur - visits_before, cur
        agg = AGGREGATORS[spec.name](q, raw_scale(params.dtype, params.frac_bits), v)
        if r < len(round_steps) - 1:
            q[:] = float_to_raw(agg, params.dtype, params.frac_bits)[None]
        agg_s += time.perf_counter() - t0
    return CpuOnlineResult(agg, q, train_s, agg_s, n_steps, threads)
