"""Reference offline learners: the oracle every other backend is checked against.

``learn_partition`` runs one partition (one simulated DPU) split into tasklet lanes, in the
round-robin order of docs/design.md; ``OfflineLearner`` is the whole-dataset learner behind
``pimrl train --backend reference``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from pimrl.data.records import NO_ACTION, TRANSITION_DTYPE
from pimrl.learners import fixedpoint
from pimrl.learners.params import P_EPOCHS, LearnerParams
from pimrl.learners.update import (
    lane_next_index, lane_reset, unpack_scalars, update_f32, update_i32,
)
from pimrl.partition import even_bounds, lane_bounds
from pimrl.rng import lane_seeds


@njit(cache=True)
def run_lanes(state, action, reward_f, reward_x, next_state, next_action, terminated,
              lanes, rng, q_f, q_x, scalars, sat):
    """Apply every update of one partition's lanes (``lanes``: (T, 2) start/end) in order.

    Exactly one of ``q_f`` (float32) / ``q_x`` (int32) is used, by the scalars' dtype.
    ``rng`` (uint32, one per lane) is advanced in place; saturations add to ``sat[0]``.
    """
    (algo, is_int, sampling, stride, draw, eps, frac, alpha_f, gamma_f, alpha_x,
     gamma_x) = unpack_scalars(scalars)
    n_lanes = lanes.shape[0]
    cursor = np.zeros(n_lanes, dtype=np.int64)
    offset = np.zeros(n_lanes, dtype=np.int64)
    longest = 0
    for t in range(n_lanes):
        longest = max(longest, lanes[t, 1] - lanes[t, 0])
    for _ in range(scalars[P_EPOCHS]):
        for t in range(n_lanes):
            lane_reset(lanes[t, 0], cursor, offset, t)
        for i in range(longest):
            for t in range(n_lanes):
                start = lanes[t, 0]
                end = lanes[t, 1]
                if i >= end - start:
                    continue
                j = lane_next_index(sampling, stride, start, end, cursor, offset, rng, t)
                if is_int:
                    update_i32(q_x, state[j], action[j], reward_x[j], next_state[j],
                               next_action[j], terminated[j] != 0, algo, draw, eps,
                               alpha_x, gamma_x, frac, rng, t, sat)
                else:
                    update_f32(q_f, state[j], action[j], reward_f[j], next_state[j],
                               next_action[j], terminated[j] != 0, algo, draw, eps,
                               alpha_f, gamma_f, rng, t)


def check_records(records: np.ndarray, n_states: int, n_actions: int, params: LearnerParams):
    """Reject records a learner cannot use, naming the first offending index."""
    if records.dtype != TRANSITION_DTYPE:
        raise ValueError(f"records must have dtype TRANSITION_DTYPE, got {records.dtype}")
    if len(records) == 0:
        raise ValueError("the dataset holds no transitions")
    for field, limit in (("state", n_states), ("next_state", n_states), ("action", n_actions)):
        col = records[field]
        bad = (col < 0) | (col >= limit)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"record {i}: {field}={int(col[i])} outside [0, {limit})")
    if params.algo == "sarsa" and params.next_action == "logged":
        na = records["next_action"]
        bad = (records["terminated"] == 0) & ((na >= n_actions) | (na == NO_ACTION))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"record {i}: next_action={int(na[i])} is unknown or out of range, which SARSA "
                f"with the logged next action cannot use (use --next-action epsilon-greedy)")


def columns(records: np.ndarray, params: LearnerParams):
    """The record fields as arrays a compiled kernel takes (reward also in Q format)."""
    reward_f = np.ascontiguousarray(records["reward"], dtype=np.float32)
    if params.dtype == "int32":
        reward_x = fixedpoint.to_fixed(reward_f, params.frac_bits, "reward")
    else:
        reward_x = np.zeros(1, dtype=np.int32)
    return (np.ascontiguousarray(records["state"]), np.ascontiguousarray(records["action"]),
            reward_f, reward_x, np.ascontiguousarray(records["next_state"]),
            np.ascontiguousarray(records["next_action"]),
            np.ascontiguousarray(records["terminated"]))


@dataclass
class PartitionResult:
    """Raw outcome of one partition: Q in the kernel's own dtype, lane RNG states, saturations."""

    q_raw: np.ndarray
    rng: np.ndarray
    saturations: int

    def q_float(self, params: LearnerParams) -> np.ndarray:
        if params.dtype == "int32":
            return fixedpoint.from_fixed(self.q_raw, params.frac_bits)
        return self.q_raw.astype(np.float64)


def learn_partition(records, n_states, n_actions, params: LearnerParams, lanes,
                    lane_ids=None, q_init=None, rng=None, cols=None) -> PartitionResult:
    """Learn one partition. ``lanes``: (T, 2) record ranges, one per tasklet.

    ``lane_ids`` (global lane numbers) seed the lanes' streams unless ``rng`` (their current
    states) is given; ``q_init`` (raw dtype) continues from an earlier table.
    """
    lanes = np.ascontiguousarray(lanes, dtype=np.int64).reshape(-1, 2)
    if rng is None:
        ids = np.arange(len(lanes)) if lane_ids is None else np.asarray(lane_ids)
        rng = lane_seeds(params.seed, ids)
    rng = np.array(rng, dtype=np.uint32)
    raw_dtype = np.int32 if params.dtype == "int32" else np.float32
    q = (np.zeros((n_states, n_actions), raw_dtype) if q_init is None
         else np.array(q_init, dtype=raw_dtype).reshape(n_states, n_actions))
    dummy_f = np.zeros((1, 1), np.float32)
    dummy_x = np.zeros((1, 1), np.int32)
    sat = np.zeros(1, np.int64)
    cols = columns(records, params) if cols is None else cols
    run_lanes(*cols, lanes, rng, dummy_f if params.dtype == "int32" else q,
              q if params.dtype == "int32" else dummy_x, params.kernel_scalars(), sat)
    return PartitionResult(q, rng, int(sat[0]))


class OfflineLearner:
    """Tabular Q-learning / SARSA over a whole offline dataset (one partition, one lane).

    Parameters are those of :class:`LearnerParams`. ``fit`` sets ``q_`` (float64, states x
    actions), ``q_raw_`` (float32 or Q-format int32), ``saturations_`` and ``n_updates_``.
    """

    def __init__(self, params: LearnerParams | None = None, **kwargs):
        self.params = params if params is not None else LearnerParams(**kwargs)

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "OfflineLearner":
        check_records(records, n_states, n_actions, self.params)
        lanes = lane_bounds(even_bounds(len(records), 1), 1)[0]
        res = learn_partition(records, n_states, n_actions, self.params, lanes)
        self.q_raw_ = res.q_raw
        self.q_ = res.q_float(self.params)
        self.saturations_ = res.saturations
        self.n_updates_ = len(records) * self.params.epochs
        return self
