"""The compiled online loops, one per online variant (Q-learning or on-policy SARSA x FP32 or
INT32), following docs/design.md's "Online learning" step for step.

:func:`compiled` returns a loop over *items* (a DPU, or a CPU partition: one Q-table each,
``T`` lanes each) that runs each item's lanes round-robin for its ``steps`` environment
steps. The same loop is the CPU baseline (:mod:`pimrl.online.cpu`) and the core of the
simulator's DPU program (:mod:`pimrl.online.program`, which hands it the tables it reads
from the DPUs' memories); the reference (:mod:`.reference`) states the same in plain Python.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.kernels import f32_scalar, row_max, update_f32, update_i32
from pimrl.learners.variants import (
    OP_ALPHA32, OP_ALPHA_FX, OP_EPS_DECAY, OP_EPS_END, OP_EPS_START, OP_FRAC, OP_GAMMA32,
    OP_GAMMA_FX, OP_MAX_STEPS, OP_N_START, OP_STEPS, ONLINE_COUNTERS, OnlineVariant,
)
from pimrl.parallel import run_ranges
from pimrl.rng import below, xorshift32

OC = {name: i for i, name in enumerate(ONLINE_COUNTERS)}
(OC_STEPS, OC_TERMINAL, OC_EPISODES, OC_RESETS, OC_START_SCANS, OC_OUTCOME_SCANS, OC_ROWS,
 OC_ENTRIES, OC_RNG, OC_BELOW, OC_SAT, OC_FAULT) = range(len(ONLINE_COUNTERS))
#: Words of a lane's state: its current state (-1: no episode running), steps of the current
#: episode, SARSA's pending action (-1: none) and the lane's steps since training began.
LANE_WORDS = 4
L_STATE, L_EP_STEPS, L_PENDING, L_STEPS = range(LANE_WORDS)


@njit(cache=True, inline="always")
def eps_at(eps_start, eps_end, decay, n):
    """The epsilon threshold of a lane's step ``n`` (integer linear decay)."""
    if decay <= 0:
        return eps_start
    if n >= decay:
        return eps_end
    return eps_end + ((eps_start - eps_end) * (decay - n)) // decay


@njit(cache=True, inline="always")
def eps_greedy(q, s, thr, x):
    """Epsilon-greedy action at ``s``: (action, rng state, draws, below draws, rows scanned)."""
    x = xorshift32(x)
    if np.uint64(x) < np.uint64(thr):
        x = xorshift32(x)
        return below(x, q.shape[1]), x, 2, 1, 0
    a, _ = row_max(q, s)
    return a, x, 1, 0, 1


@njit(cache=True, inline="always")
def first_below(thr_row, n, x):
    """The first index k < n - 1 with x < thr_row[k], else n - 1: (k, compares)."""
    for k in range(n - 1):
        if np.uint64(x) < np.uint64(thr_row[k]):
            return k, k + 1
    return n - 1, n - 1


def _build(variant: OnlineVariant):
    IS_INT = variant.is_int
    IS_Q = variant.algo == "q"

    @njit(nogil=True, cache=True)
    def items(threshold, next_state, reward, terminated, start_threshold, start_state, env_of,
              params, lanes, rng, q, visits, counters, lo, hi):
        """Items ``lo`` to ``hi - 1``: item ``p`` steps the environment ``env_of[p]`` (index
        into the leading axis of the tables) with its lanes ``lanes[p]`` / ``rng[p]`` and
        learns ``q[p]``; ``visits[p]`` counts updates per (s, a) when it is not empty;
        ``counters[p]`` gets this launch's :data:`ONLINE_COUNTERS`."""
        K = threshold.shape[3]
        n_lanes = lanes.shape[1]
        count_visits = visits.shape[0] > 0
        for p in range(lo, hi):
            w = params[p]
            e = env_of[p]
            qp = q[p]
            thr_e = threshold[e]
            ns_e = next_state[e]
            rw_e = reward[e]
            tm_e = terminated[e]
            eps0, eps1, decay = w[OP_EPS_START], w[OP_EPS_END], w[OP_EPS_DECAY]
            frac = w[OP_FRAC]
            max_steps = w[OP_MAX_STEPS]
            m_start = w[OP_N_START]
            if IS_INT:
                alpha, gamma = np.int32(w[OP_ALPHA_FX]), np.int32(w[OP_GAMMA_FX])
            else:
                alpha, gamma = f32_scalar(w[OP_ALPHA32]), f32_scalar(w[OP_GAMMA32])
            base, extra = w[OP_STEPS] // n_lanes, w[OP_STEPS] % n_lanes
            longest = base + (1 if extra else 0)
            n_steps = n_term = n_ep = n_reset = n_sscan = n_oscan = n_rows = n_entries = 0
            n_rng = n_below = n_sat = 0
            for i in range(longest):
                for t in range(n_lanes):
                    if i >= base + (1 if t < extra else 0):
                        continue
                    ln = lanes[p, t]
                    x = rng[p, t]
                    s = ln[L_STATE]
                    if s < 0:                                   # a new episode
                        m = 0
                        if m_start > 1:
                            x = xorshift32(x)
                            n_rng += 1
                            m, c = first_below(start_threshold[e], m_start, x)
                            n_sscan += c
                        s = start_state[e, m]
                        ln[L_EP_STEPS] = 0
                        ln[L_PENDING] = -1
                        n_reset += 1
                    n = ln[L_STEPS]
                    if ln[L_PENDING] >= 0:                      # SARSA's chosen next action
                        a = ln[L_PENDING]
                    else:
                        a, x, dr, bl, rows = eps_greedy(qp, s, eps_at(eps0, eps1, decay, n), x)
                        n_rng += dr
                        n_below += bl
                        n_rows += rows
                    k = 0
                    if K > 1:
                        x = xorshift32(x)
                        n_rng += 1
                        k, c = first_below(thr_e[s, a], K, x)
                        n_oscan += c
                    s2 = ns_e[s, a, k]
                    r = rw_e[s, a, k]
                    d = tm_e[s, a, k] != 0
                    n += 1
                    ep = ln[L_EP_STEPS] + 1
                    b = 0
                    if not IS_Q and not d:                      # a' before the update
                        b, x, dr, bl, rows = eps_greedy(qp, s2, eps_at(eps0, eps1, decay, n), x)
                        n_rng += dr
                        n_below += bl
                        n_rows += rows
                        n_entries += 1
                    if IS_INT:
                        x, _, _, n_sat = update_i32(qp, s, a, r, s2, b, d, IS_Q, False, 0,
                                                    alpha, gamma, frac, x, n_sat)
                    else:
                        x, _, _ = update_f32(qp, s, a, r, s2, b, d, IS_Q, False, 0, alpha,
                                             gamma, x)
                    if IS_Q and not d:
                        n_rows += 1
                    if count_visits:
                        visits[p, s, a] += 1
                    n_steps += 1
                    if d:
                        n_term += 1
                    if d or ep >= max_steps:                    # terminated or truncated
                        ln[L_STATE] = -1
                        ln[L_PENDING] = -1
                        n_ep += 1
                    else:
                        ln[L_STATE] = s2
                        ln[L_PENDING] = -1 if IS_Q else b
                    ln[L_EP_STEPS] = ep
                    ln[L_STEPS] = n
                    rng[p, t] = x
            c = counters[p]
            c[OC_STEPS] = n_steps
            c[OC_TERMINAL] = n_term
            c[OC_EPISODES] = n_ep
            c[OC_RESETS] = n_reset
            c[OC_START_SCANS] = n_sscan
            c[OC_OUTCOME_SCANS] = n_oscan
            c[OC_ROWS] = n_rows
            c[OC_ENTRIES] = n_entries
            c[OC_RNG] = n_rng
            c[OC_BELOW] = n_below
            c[OC_SAT] = n_sat
            c[OC_FAULT] = 0

    return items


_COMPILED: dict = {}


def compiled(variant: OnlineVariant):
    """The compiled loop of ``variant`` (``items(..., lo, hi)``, GIL released)."""
    if variant not in _COMPILED:
        _COMPILED[variant] = _build(variant)
    return _COMPILED[variant]


def run_items(variant: OnlineVariant, tables: dict, env_of, params, lanes, rng, q, visits=None,
              threads: int | None = None) -> np.ndarray:
    """Run every item once (``params[p, OP_STEPS]`` steps each) on ``threads`` threads;
    returns the (items, len(ONLINE_COUNTERS)) counters. ``tables``: :func:`pimrl.online.
    envtable.stack_envs`' dict (its reward array in the variant's dtype)."""
    loop = compiled(variant)
    n = q.shape[0]
    counters = np.zeros((n, len(ONLINE_COUNTERS)), dtype=np.int64)
    if visits is None:
        visits = np.zeros((0, 1, 1), dtype=np.uint32)
    env_of = np.ascontiguousarray(env_of, dtype=np.int64)
    run_ranges(lambda lo, hi: loop(tables["threshold"], tables["next_state"], tables["reward"],
                                   tables["terminated"], tables["start_threshold"],
                                   tables["start_state"], env_of, params, lanes, rng, q, visits,
                                   counters, lo, hi), n, threads)
    return counters


def new_lanes(n_items: int, n_lanes: int) -> np.ndarray:
    """Lane states before training: no episode running, no pending action, step 0."""
    lanes = np.zeros((n_items, n_lanes, LANE_WORDS), dtype=np.int64)
    lanes[:, :, L_STATE] = -1
    lanes[:, :, L_PENDING] = -1
    return lanes
