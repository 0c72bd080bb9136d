"""Environment tables laid out for a DPU (docs/design.md, "Online learning").

A :class:`TabularEnv`'s outcome probabilities become integer thresholds for the xorshift32
streams, so a DPU draws an outcome with integer compares only:

- outcome record (16 bytes, little-endian): ``threshold`` uint32, ``next_state`` int32,
  ``reward`` float32 (or Q-format int32 for INT32 kernels), ``terminated`` uint32; one per
  (state, action, outcome slot), row-major (S, A, K);
- ``threshold[k] = min(floor(cum_prob[k] * 2^32), 2^32 - 1)``; the slot of the last outcome
  with a positive probability gets ``2^32 - 1`` and every padding slot after it is a copy of
  that outcome, so "the first k < K - 1 with u < threshold[k], else K - 1" always picks an
  outcome of positive probability;
- start table (8 bytes an entry): ``threshold`` uint32, ``state`` int32 over the states of
  positive start probability, in state order, with the same rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimrl.envs.core import TabularEnv
from pimrl.learners import fixedpoint

OUTCOME_DTYPE = np.dtype([("threshold", "<u4"), ("next_state", "<i4"), ("reward", "<f4"),
                          ("terminated", "<u4")])
START_DTYPE = np.dtype([("threshold", "<u4"), ("state", "<i4")])
OUTCOME_BYTES = OUTCOME_DTYPE.itemsize
START_BYTES = START_DTYPE.itemsize
TOP = 2**32 - 1


def _thresholds(cum: np.ndarray) -> np.ndarray:
    return np.minimum(np.floor(cum * 4294967296.0), TOP).astype(np.uint32)


@dataclass(frozen=True)
class DpuEnv:
    """One environment as DPU tables. Arrays: ``threshold`` uint32 (S, A, K), ``next_state``
    int32, ``reward`` float64 (converted per dtype by :meth:`rewards`), ``terminated`` uint8,
    ``start_threshold`` uint32 (M,), ``start_state`` int32 (M,)."""

    env_id: str
    threshold: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    start_threshold: np.ndarray
    start_state: np.ndarray
    max_episode_steps: int

    @property
    def shape(self) -> tuple:
        return self.threshold.shape

    @property
    def n_states(self) -> int:
        return self.threshold.shape[0]

    @property
    def n_actions(self) -> int:
        return self.threshold.shape[1]

    @property
    def n_outcomes(self) -> int:
        return self.threshold.shape[2]

    @property
    def n_start(self) -> int:
        return len(self.start_state)

    @property
    def table_bytes(self) -> int:
        return self.threshold.size * OUTCOME_BYTES

    @property
    def start_bytes(self) -> int:
        return self.n_start * START_BYTES

    def rewards(self, dtype: str, frac_bits: int) -> np.ndarray:
        """Rewards as the kernel of ``dtype`` reads them: float32, or Q-format int32."""
        if dtype == "int32":
            return fixedpoint.to_fixed(self.reward, frac_bits, f"{self.env_id} reward")
        return self.reward.astype(np.float32)

    def outcome_records(self, dtype: str, frac_bits: int) -> np.ndarray:
        """The (S * A * K) 16-byte outcome records, as pushed to a DPU."""
        rec = np.zeros(self.threshold.size, dtype=OUTCOME_DTYPE)
        rec["threshold"] = self.threshold.ravel()
        rec["next_state"] = self.next_state.ravel()
        rec["reward"] = self.rewards(dtype, frac_bits).ravel().view(np.float32)
        rec["terminated"] = self.terminated.ravel()
        return rec

    def start_records(self) -> np.ndarray:
        rec = np.zeros(self.n_start, dtype=START_DTYPE)
        rec["threshold"] = self.start_threshold
        rec["state"] = self.start_state
        return rec


def dpu_env(env: TabularEnv) -> DpuEnv:
    """The DPU tables of ``env`` (see the module docstring)."""
    prob = env.prob
    K = env.n_outcomes
    k = np.arange(K)
    last = np.where(prob > 0, k, -1).max(axis=2)                      # (S, A)
    if (last < 0).any():
        s, a = np.argwhere(last < 0)[0]
        raise ValueError(f"{env.env_id}: state {s} action {a} has no outcome of positive probability")
    src = np.minimum(k[None, None, :], last[:, :, None])              # padding -> last outcome
    take = lambda x: np.take_along_axis(np.asarray(x), src, axis=2)   # noqa: E731
    thr = _thresholds(env.cum_prob)
    thr = np.where(k[None, None, :] >= last[:, :, None], np.uint32(TOP), thr).astype(np.uint32)
    support = np.flatnonzero(env.initial_dist > 0)
    sthr = _thresholds(env.cum_initial[support])
    sthr[-1] = TOP
    return DpuEnv(env.env_id, thr, take(env.next_state).astype(np.int32),
                  take(env.reward).astype(np.float64), take(env.terminated).astype(np.uint8),
                  sthr.astype(np.uint32), support.astype(np.int32), int(env.max_episode_steps))


def stack_envs(envs, dtype: str, frac_bits: int) -> dict:
    """Several equal-shaped :class:`DpuEnv` as the compiled loops' arrays (E leading): the
    keys ``threshold``, ``next_state``, ``reward``, ``terminated`` (E, S, A, K) and
    ``start_threshold``, ``start_state`` (E, M) (shorter start tables padded with their last
    entry, which the rule never passes), ``n_start`` (E,)."""
    envs = list(envs)
    shape = envs[0].shape
    for e in envs:
        if e.shape != shape:
            raise ValueError(f"environments of one run must have equal tables: {e.env_id} has "
                             f"{e.shape}, {envs[0].env_id} has {shape}")
    m = max(e.n_start for e in envs)

    def pad(x):
        return np.concatenate([x, np.repeat(x[-1:], m - len(x))])

    return {
        "threshold": np.stack([e.threshold for e in envs]),
        "next_state": np.stack([e.next_state for e in envs]),
        "reward": np.stack([e.rewards(dtype, frac_bits) for e in envs]),
        "terminated": np.stack([e.terminated for e in envs]),
        "start_threshold": np.stack([pad(e.start_threshold) for e in envs]),
        "start_state": np.stack([pad(e.start_state) for e in envs]),
        "n_start": np.array([e.n_start for e in envs], dtype=np.int64),
    }
