"""The online contract (docs/design.md, "Online learning") restated in plain, slow Python.

It shares no code with the compiled loops (no numba, no shared update function), only the
written contract and the host-side tables, so the tests can hold the numba loop, the
simulator's DPU program and the C kernel to it bit for bit, on small inputs.
"""
from __future__ import annotations

import numpy as np

from pimrl.online.envtable import DpuEnv
from pimrl.online.params import OnlineParams
from pimrl.rng import epsilon_threshold, lane_seed

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
M32 = 0xFFFFFFFF


def _xs(x):
    x ^= (x << 13) & M32
    x ^= x >> 17
    x ^= (x << 5) & M32
    return x


def _f32(v):
    return np.float32(v)


class ReferenceAgent:
    """One item (a DPU's Q-table and its ``n_lanes`` lanes) of an online run. ``lane_ids``:
    the global lane numbers seeding the lanes' streams (``lane_seed(params.seed, id)``)."""

    def __init__(self, env: DpuEnv, params: OnlineParams, n_lanes: int, lane_ids):
        self.env, self.p, self.n_lanes = env, params, n_lanes
        self.int = params.dtype == "int32"
        S, A = env.n_states, env.n_actions
        self.q = [[0] * A for _ in range(S)] if self.int else [[_f32(0)] * A for _ in range(S)]
        self.rewards = env.rewards(params.dtype, params.frac_bits)
        self.x = [lane_seed(params.seed, int(i)) for i in lane_ids]
        self.state = [-1] * n_lanes
        self.ep_steps = [0] * n_lanes
        self.pending = [-1] * n_lanes
        self.steps = [0] * n_lanes
        self.saturations = 0
        self.eps0 = epsilon_threshold(params.epsilon)
        self.eps1 = self.eps0 if params.epsilon_end is None else epsilon_threshold(params.epsilon_end)
        self.decay = 0 if params.epsilon_end is None else params.decay_steps
        F = params.frac_bits
        self.F = F
        self.alpha_fx = int(np.rint(params.alpha * (1 << F)))
        self.gamma_fx = int(np.rint(params.gamma * (1 << F)))

    # -- the arithmetic of docs/design.md ----------------------------------------------
    def _sat(self, v):
        if v > INT32_MAX:
            self.saturations += 1
            return INT32_MAX
        if v < INT32_MIN:
            self.saturations += 1
            return INT32_MIN
        return v

    def _mul(self, a, b):
        return self._sat((a * b + (1 << (self.F - 1))) >> self.F)

    def _update(self, s, a, r, boot):
        """Q[s][a] += alpha (target - Q[s][a]); ``boot`` is None when terminated."""
        cur = self.q[s][a]
        if self.int:
            r = int(r)
            target = r if boot is None else self._sat(r + self._mul(self.gamma_fx, boot))
            td = self._sat(target - cur)
            self.q[s][a] = self._sat(cur + self._mul(self.alpha_fx, td))
        else:
            r = _f32(r)
            target = r if boot is None else _f32(r + _f32(_f32(self.p.gamma) * boot))
            self.q[s][a] = _f32(cur + _f32(_f32(self.p.alpha) * _f32(target - cur)))

    def _eps(self, n):
        if self.decay <= 0:
            return self.eps0
        if n >= self.decay:
            return self.eps1
        return self.eps1 + ((self.eps0 - self.eps1) * (self.decay - n)) // self.decay

    def _greedy(self, s):
        row = self.q[s]
        best = 0
        for a in range(1, len(row)):
            if row[a] > row[best]:
                best = a
        return best

    def _choose(self, t, s, n):
        self.x[t] = _xs(self.x[t])
        if self.x[t] < self._eps(n):
            self.x[t] = _xs(self.x[t])
            return (self.x[t] * self.env.n_actions) >> 32
        return self._greedy(s)

    @staticmethod
    def _first_below(x, thresholds):
        for k in range(len(thresholds) - 1):
            if x < int(thresholds[k]):
                return k
        return len(thresholds) - 1

    # -- one step of lane t --------------------------------------------------------------
    def step(self, t):
        env, p = self.env, self.p
        s = self.state[t]
        if s < 0:
            m = 0
            if env.n_start > 1:
                self.x[t] = _xs(self.x[t])
                m = self._first_below(self.x[t], env.start_threshold)
            s = int(env.start_state[m])
            self.ep_steps[t] = 0
            self.pending[t] = -1
        n = self.steps[t]
        a = self.pending[t] if self.pending[t] >= 0 else self._choose(t, s, n)
        k = 0
        if env.n_outcomes > 1:
            self.x[t] = _xs(self.x[t])
            k = self._first_below(self.x[t], env.threshold[s, a])
        s2 = int(env.next_state[s, a, k])
        r = self.rewards[s, a, k]
        d = bool(env.terminated[s, a, k])
        n += 1
        ep = self.ep_steps[t] + 1
        b = -1
        if d:
            boot = None
        elif p.algo == "q":
            boot = self.q[s2][self._greedy(s2)]
        else:
            b = self._choose(t, s2, n)
            boot = self.q[s2][b]
        self._update(s, a, r, boot)
        if d or ep >= env.max_episode_steps:
            self.state[t], self.pending[t] = -1, -1
        else:
            self.state[t], self.pending[t] = s2, b
        self.ep_steps[t] = ep
        self.steps[t] = n

    def run(self, steps: int):
        """``steps`` environment steps of this item: lane t takes the t-th share (the first
        ``steps % T`` lanes one more), round-robin over lanes."""
        base, extra = divmod(int(steps), self.n_lanes)
        longest = base + (1 if extra else 0)
        for i in range(longest):
            for t in range(self.n_lanes):
                if i < base + (1 if t < extra else 0):
                    self.step(t)
        return self

    def table(self) -> np.ndarray:
        return np.array(self.q, dtype=np.int32 if self.int else np.float32)
