"""One Q-learning / SARSA update, FP32 and INT32, and the lane cursors of the three
sampling orders: compiled once, shared by the reference learner, the simulated DPU kernels
and the CPU baseline so that there is one definition of the arithmetic (docs/design.md).
A plain-Python oracle in ``oracle.py`` re-derives it independently for the tests.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.fixedpoint import fx_add, fx_mul, fx_sub
from pimrl.learners.params import (
    P_ALGO, P_ALPHA32, P_ALPHA_FX, P_DTYPE, P_EPS, P_FRAC, P_GAMMA32, P_GAMMA_FX, P_SAMPLING,
    P_SARSA_DRAW, P_STRIDE,
)
from pimrl.rng import below, xorshift32

SEQ, STR, RAN = 0, 1, 2


@njit(cache=True, inline="always")
def unpack_scalars(scalars):
    """``LearnerParams.kernel_scalars()`` (int64 array) back into typed values:
    (algo, is_int, sampling, stride, sarsa_draw, eps_threshold, frac_bits,
    alpha_f32, gamma_f32, alpha_fx, gamma_fx)."""
    bits = np.empty(2, dtype=np.int32)
    bits[0] = scalars[P_ALPHA32]
    bits[1] = scalars[P_GAMMA32]
    floats = bits.view(np.float32)
    return (scalars[P_ALGO], scalars[P_DTYPE] == 1, scalars[P_SAMPLING], scalars[P_STRIDE],
            scalars[P_SARSA_DRAW] == 1, scalars[P_EPS], scalars[P_FRAC], floats[0], floats[1],
            np.int32(scalars[P_ALPHA_FX]), np.int32(scalars[P_GAMMA_FX]))


@njit(cache=True, inline="always")
def greedy(q, s):
    """Greedy action at ``s`` (lowest index among ties) and its value; the max starts at Q[s, 0]."""
    best = 0
    m = q[s, 0]
    for a in range(1, q.shape[1]):
        if q[s, a] > m:
            m = q[s, a]
            best = a
    return best, m


@njit(cache=True, inline="always")
def bootstrap_value(q, s2, b, algo, sarsa_draw, eps_thr, rng, t):
    """The value of s' a non-terminal update bootstraps from.

    Returns (value, Q entries scanned, random draws): Q-learning takes the max over a';
    SARSA takes Q[s', b'] with b' the logged action or an epsilon-greedy choice (one draw,
    and a second one only when exploring; the greedy scan only when exploiting).
    """
    if algo == 0:
        _, m = greedy(q, s2)
        return m, q.shape[1], 0
    if not sarsa_draw:
        return q[s2, b], 0, 0
    rng[t] = xorshift32(rng[t])
    if np.uint64(rng[t]) < np.uint64(eps_thr):
        rng[t] = xorshift32(rng[t])
        return q[s2, below(rng[t], q.shape[1])], 0, 2
    _, m = greedy(q, s2)
    return m, q.shape[1], 1


@njit(cache=True, inline="always")
def update_f32(q, s, a, r, s2, b, term, algo, sarsa_draw, eps_thr, alpha, gamma, rng, t):
    """Apply one FP32 update to ``q`` (float32, (S, A)); r, alpha, gamma are float32.
    Returns (Q entries scanned, random draws) for the cost model."""
    scanned, draws = 0, 0
    if term:
        target = r
    else:
        m, scanned, draws = bootstrap_value(q, s2, b, algo, sarsa_draw, eps_thr, rng, t)
        t1 = np.float32(gamma * m)
        target = np.float32(r + t1)
    cur = q[s, a]
    td = np.float32(target - cur)
    q[s, a] = np.float32(cur + np.float32(alpha * td))
    return scanned, draws


@njit(cache=True, inline="always")
def update_i32(q, s, a, r, s2, b, term, algo, sarsa_draw, eps_thr, alpha, gamma, frac, rng, t, sat):
    """Apply one INT32 fixed-point update to ``q`` (int32, (S, A)); r, alpha, gamma Q-format.
    Returns (Q entries scanned, random draws)."""
    scanned, draws = 0, 0
    if term:
        target = r
    else:
        m, scanned, draws = bootstrap_value(q, s2, b, algo, sarsa_draw, eps_thr, rng, t)
        target = fx_add(r, fx_mul(gamma, m, frac, sat), sat)
    cur = q[s, a]
    td = fx_sub(target, cur, sat)
    q[s, a] = fx_add(cur, fx_mul(alpha, td, frac, sat), sat)
    return scanned, draws


@njit(cache=True, inline="always")
def lane_next_index(sampling, stride, start, end, cursor, offset, rng, t):
    """The next record index of lane ``t`` in its epoch order.

    ``cursor``/``offset`` (int64 arrays, per lane) carry the SEQ/STR position; RAN draws from
    ``rng[t]``. Must be called exactly (end - start) times per epoch after ``lane_reset``.
    """
    if sampling == RAN:
        rng[t] = xorshift32(rng[t])
        return start + below(rng[t], end - start)
    idx = cursor[t]
    if sampling == SEQ:
        cursor[t] = idx + 1
        return idx
    # STR: walk offset, offset + k, ...; then the next offset.
    nxt = idx + stride
    while nxt >= end:
        offset[t] += 1
        nxt = start + offset[t]
        if offset[t] >= stride:
            break
    cursor[t] = nxt
    return idx


@njit(cache=True, inline="always")
def lane_reset(start, cursor, offset, t):
    cursor[t] = start
    offset[t] = 0
