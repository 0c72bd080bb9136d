"""``TabularEnv``: an environment as dense outcome tables, with a small Gymnasium-like API.

The tables follow docs/design.md: for every (state, action) there are ``K`` outcome slots,
in Gymnasium's order (repeats kept), padded with ``prob = 0``, ``next_state = s``,
``reward = 0``, ``terminated = False``.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
from numba import njit


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class TabularEnv:
    """A finite MDP as dense arrays (see docs/design.md), plus ``reset``/``step``.

    Arrays (read-only): ``next_state`` int32 (S, A, K), ``prob`` float64 (S, A, K),
    ``reward`` float64 (S, A, K), ``terminated`` bool (S, A, K), ``initial_dist`` float64
    (S,), ``goal`` bool (S,): the states that count as a success when an episode
    terminates there. ``max_episode_steps`` is the truncation limit and ``env_id`` the
    canonical spec string (``pimrl.envs.make(env.env_id)`` rebuilds the same tables).
    ``description`` is the environment's Gymnasium-style description and ``desc`` the
    FrozenLake map (rows of ``S F H G``) or None.
    """

    def __init__(self, *, next_state, prob, reward, terminated, initial_dist, goal,
                 max_episode_steps: int, env_id: str, description: str = "", desc=None):
        self.next_state = _readonly(np.asarray(next_state, dtype=np.int32))
        self.prob = _readonly(np.asarray(prob, dtype=np.float64))
        self.reward = _readonly(np.asarray(reward, dtype=np.float64))
        self.terminated = _readonly(np.asarray(terminated, dtype=np.bool_))
        self.initial_dist = _readonly(np.asarray(initial_dist, dtype=np.float64))
        self.goal = _readonly(np.asarray(goal, dtype=np.bool_))
        self.env_id = str(env_id)
        self.description = description
        self.desc = None if desc is None else tuple(desc)
        shape = self.next_state.shape
        if len(shape) != 3:
            raise ValueError(f"next_state must have shape (S, A, K), got {shape}")
        for name in ("prob", "reward", "terminated"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {shape}")
        if self.initial_dist.shape != (shape[0],) or self.goal.shape != (shape[0],):
            raise ValueError("initial_dist and goal must have shape (S,)")
        from pimrl.limits import EPISODE_STEPS

        # bounded: exact evaluation and the DPUs' int64 words follow an episode step by step
        self.max_episode_steps = EPISODE_STEPS.parse(max_episode_steps,
                                                     f"{self.env_id}: max_episode_steps")
        # episode state of the stateful API
        self._rng: np.random.Generator | None = None
        self._state: int | None = None
        self._steps = 0
        self._done = True

    # ---- sizes -------------------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return self.next_state.shape[0]

    @property
    def n_actions(self) -> int:
        return self.next_state.shape[1]

    @property
    def n_outcomes(self) -> int:
        return self.next_state.shape[2]

    def __repr__(self) -> str:
        return (f"TabularEnv({self.env_id!r}, S={self.n_states}, A={self.n_actions}, "
                f"K={self.n_outcomes}, max_episode_steps={self.max_episode_steps})")

    # ---- sampling tables ---------------------------------------------------------------
    @cached_property
    def cum_prob(self) -> np.ndarray:
        """Cumulative outcome probabilities (S, A, K), float64, read-only.

        Equal to ``cumsum(prob, axis=2)`` except that the slot of the last outcome with a
        positive probability, and every slot after it, hold exactly 1.0. The outcome drawn
        for a uniform ``u`` in [0, 1) is the first ``k`` with ``u < cum_prob[s, a, k]``: it
        always has a positive probability, even when the probabilities sum to 1 - 1e-16.
        """
        c = np.cumsum(self.prob, axis=2)
        k = np.arange(self.n_outcomes)
        last = (np.where(self.prob > 0, k, -1)).max(axis=2)
        c[k[None, None, :] >= last[:, :, None]] = 1.0
        return _readonly(c)

    @cached_property
    def cum_initial(self) -> np.ndarray:
        """Cumulative start distribution (S,) with the last positive slot (and after) = 1.0."""
        c = np.cumsum(self.initial_dist)
        last = np.flatnonzero(self.initial_dist > 0)[-1]
        c[last:] = 1.0
        return _readonly(c)

    # ---- Gymnasium-like stateful API ---------------------------------------------------
    def reset(self, seed: int | None = None):
        """Start an episode: returns ``(state, info)``; ``seed`` reseeds the env's generator."""
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self._state = int(np.searchsorted(self.cum_initial, self._rng.random(), side="right"))
        self._steps = 0
        self._done = False
        return self._state, {"prob": float(self.initial_dist[self._state])}

    def step(self, action: int):
        """Apply ``action``: returns ``(state, reward, terminated, truncated, info)``."""
        if self._done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        s, a = self._state, int(action)
        if not 0 <= a < self.n_actions:
            raise ValueError(f"action {action} outside [0, {self.n_actions})")
        k = int(sample_outcome(self, s, a, self._rng.random()))
        self._state = int(self.next_state[s, a, k])
        term = bool(self.terminated[s, a, k])
        self._steps += 1
        trunc = (not term) and self._steps >= self.max_episode_steps
        self._done = term or trunc
        return self._state, float(self.reward[s, a, k]), term, trunc, {"prob": float(self.prob[s, a, k])}


def sample_outcome(env: TabularEnv, s, a, u):
    """Outcome slot ``k`` of (``s``, ``a``) for a uniform draw ``u`` in [0, 1).

    ``k`` is the first slot with ``u < env.cum_prob[s, a, k]`` (inverse-CDF sampling in
    Gymnasium's outcome order). ``s``, ``a`` and ``u`` may be scalars or broadcastable
    arrays; the result is int64 of their broadcast shape. Numba kernels can use
    ``sample_outcome_nb(env.cum_prob, s, a, u)`` instead.
    """
    s, a, u = np.broadcast_arrays(np.asarray(s), np.asarray(a), np.asarray(u, dtype=np.float64))
    c = env.cum_prob[s, a]  # (..., K)
    k = (u[..., None] >= c).sum(axis=-1)
    return k if k.ndim else k[()]


@njit(cache=False, nogil=True)
def sample_outcome_nb(cum_prob, s, a, u):  # pragma: no cover - compiled
    """Numba twin of ``sample_outcome`` for one draw: ``cum_prob`` is ``env.cum_prob``."""
    K = cum_prob.shape[2]
    for k in range(K - 1):
        if u < cum_prob[s, a, k]:
            return k
    return K - 1
