"""The update rules shared by the compiled learners (:mod:`pimrl.learners.kernels`) and the
simulator's DPU kernel (:mod:`pimrl.rlkernel.launch`): the bootstrap value, the target and
the step of Q[s, a] toward it (FP32 and Q format), their variants under state ownership
(docs/state-owned.md) and under tasklet mode ``rows`` (docs/design.md). Flags are
compile-time constants in every caller; every helper is inlined into it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.arith import add_sat32, fx_mul, row_max, row_value, sat32, sub_sat32
from pimrl.partition import NO_OWNER
from pimrl.rng import below, xorshift32


@njit(cache=True, inline="always")
def bootstrap(q, s2, b, is_q, draw, eps, x):
    """Value of s' for a non-terminal update: (value, new rng state, entries scanned, draws)."""
    draws = 0
    if not is_q:
        if not draw:
            return q[s2, b], x, 0, 0
        x = xorshift32(x)
        if np.uint64(x) < np.uint64(eps):
            x = xorshift32(x)
            return q[s2, below(x, q.shape[1])], x, 0, 2
        draws = 1
    # One row max for both Q-learning and a greedy draw: each copy is typed and lowered at
    # every call site before LLVM drops the dead one, and the unrolled max is long.
    return row_value(q, s2), x, q.shape[1], draws


# The two halves every update shares: the target r + gamma * value, and the step of
# Q[s, a] toward it (docs/design.md's rounding, FP32 and Q format).
@njit(cache=True, inline="always")
def target_i32(r, gamma, m, frac, nsat):
    """r + gamma * m in Q format, saturated: (target, ``nsat`` plus its saturations)."""
    g, nsat = fx_mul(gamma, m, frac, nsat)
    return add_sat32(np.int32(r), g, nsat)


@njit(cache=True, inline="always")
def step_f32(q, s, a, target, alpha):
    """Q[s, a] += alpha * (target - Q[s, a]), each operation rounded to float32."""
    cur = q[s, a]
    q[s, a] = np.float32(cur + np.float32(alpha * np.float32(target - cur)))


@njit(cache=True, inline="always")
def step_i32(q, s, a, target, alpha, frac, nsat):
    """Q[s, a] += alpha * (target - Q[s, a]) in Q format, saturated: ``nsat`` plus its
    saturations."""
    cur = q[s, a]
    td, nsat = sub_sat32(np.int32(target), cur, nsat)
    inc, nsat = fx_mul(alpha, td, frac, nsat)
    new, nsat = add_sat32(cur, inc, nsat)
    q[s, a] = new
    return nsat


@njit(cache=True, inline="always")
def update_f32(q, s, a, r, s2, b, term, is_q, draw, eps, alpha, gamma, x):
    """One FP32 update of ``q`` (float32 (S, A)): (new rng state, scanned, draws)."""
    scanned = draws = 0
    if term:
        target = r
    else:
        m, x, scanned, draws = bootstrap(q, s2, b, is_q, draw, eps, x)
        target = np.float32(r + np.float32(gamma * m))
    step_f32(q, s, a, target, alpha)
    return x, scanned, draws


@njit(cache=True, inline="always")
def update_i32(q, s, a, r, s2, b, term, is_q, draw, eps, alpha, gamma, frac, x, nsat):
    """One INT32 Q-format update of ``q`` (int32 (S, A)):
    (new rng state, scanned, draws, ``nsat`` plus its saturations)."""
    scanned = draws = 0
    if term:
        target = r
    else:
        m, x, scanned, draws = bootstrap(q, s2, b, is_q, draw, eps, x)
        target, nsat = target_i32(r, gamma, m, frac, nsat)
    nsat = step_i32(q, s, a, target, alpha, frac, nsat)
    return x, scanned, draws, nsat


@njit(cache=True, inline="always")
def policy_value_f32(q, s, eg, w, k, cmean, cmax):
    """SARSA's bootstrap value under state ownership (docs/state-owned.md), FP32, one scan of
    the row. Epsilon-greedy (``eg``): ``sum = Q[s, 0] + Q[s, 1] + ...`` (from +0, each step
    rounded to float32), then ``float32(float32(cmean * sum) + float32(cmax * max_a Q[s, a]))``
    with ``cmean = p / A``, ``cmax = 1 - p``. Logged: ``sum_a float32(w[k, a] * Q[s, a])``
    (from +0, in action order, each step rounded), ``w[k]`` the behaviour policy's action
    frequencies at ``s``: (value, entries scanned)."""
    acc = np.float32(0.0)
    if eg:
        m = q[s, 0]
        for a in range(q.shape[1]):
            e = q[s, a]
            if e > m:
                m = e
            acc = np.float32(acc + e)
        return np.float32(np.float32(cmean * acc) + np.float32(cmax * m)), q.shape[1]
    for a in range(q.shape[1]):
        acc = np.float32(acc + np.float32(w[k, a] * q[s, a]))
    return acc, q.shape[1]


@njit(cache=True, inline="always")
def policy_value_i32(q, s, eg, w, k, cmean, cmax, frac, nsat):
    """:func:`policy_value_f32` in Q format. Epsilon-greedy: the row's sum in int64,
    saturated to int32, then ``sat32(fx_mul(cmean, sum) + fx_mul(cmax, max))``. Logged:
    ``sat32(sum_a fx_mul(w[k, a], Q[s, a]))``, the products summed in int64: (value, entries
    scanned, ``nsat`` plus its saturations)."""
    acc = np.int64(0)
    if eg:
        m = q[s, 0]
        for a in range(q.shape[1]):
            e = q[s, a]
            if e > m:
                m = e
            acc += np.int64(e)
        tot, nsat = sat32(acc, nsat)
        g1, nsat = fx_mul(cmean, tot, frac, nsat)
        g2, nsat = fx_mul(cmax, m, frac, nsat)
        val, nsat = sat32(np.int64(g1) + np.int64(g2), nsat)
        return val, q.shape[1], nsat
    for a in range(q.shape[1]):
        g, nsat = fx_mul(w[k, a], q[s, a], frac, nsat)
        acc += np.int64(g)
    val, nsat = sat32(acc, nsat)
    return val, q.shape[1], nsat


@njit(cache=True, inline="always")
def owned_value(q, v, own_lo, own_hi, s2):
    """Q-learning's bootstrap under state ownership (variant bootstrap ``owned``): the DPU's
    own fresh row for the states [own_lo, own_hi) it alone holds, the broadcast ``v`` for the
    others: (value, entries scanned)."""
    if s2 >= own_lo and s2 < own_hi:
        return row_value(q, s2), q.shape[1]
    return v[s2], 0


@njit(cache=True, inline="always")
def update_f32_owned(q, v, own_lo, own_hi, s, a, r, s2, term, alpha, gamma, is_q, eg, w, w_lo,
                     cmean, cmax):
    """One FP32 update bootstrapping through :func:`owned_value` (Q-learning) or, for SARSA
    (``is_q`` false), from :func:`policy_value_f32` of its fresh rows (logged weights
    ``w[s2 - w_lo]``) and ``v`` for the others: scanned."""
    scanned = 0
    if term:
        target = r
    else:
        if is_q:
            m, scanned = owned_value(q, v, own_lo, own_hi, s2)
        elif s2 >= own_lo and s2 < own_hi:
            m, scanned = policy_value_f32(q, s2, eg, w, s2 - w_lo, cmean, cmax)
        else:
            m = v[s2]
        target = np.float32(r + np.float32(gamma * m))
    step_f32(q, s, a, target, alpha)
    return scanned


@njit(cache=True, inline="always")
def update_i32_owned(q, v, own_lo, own_hi, s, a, r, s2, term, alpha, gamma, frac, is_q, eg, w,
                     w_lo, cmean, cmax, nsat):
    """One INT32 update bootstrapping as :func:`update_f32_owned` does (SARSA through
    :func:`policy_value_i32`): (scanned, ``nsat`` plus its saturations)."""
    scanned = 0
    if term:
        target = r
    else:
        if is_q:
            m, scanned = owned_value(q, v, own_lo, own_hi, s2)
        elif s2 >= own_lo and s2 < own_hi:
            m, scanned, nsat = policy_value_i32(q, s2, eg, w, s2 - w_lo, cmean, cmax, frac, nsat)
        else:
            m = v[s2]
        target, nsat = target_i32(r, gamma, m, frac, nsat)
    nsat = step_i32(q, s, a, target, alpha, frac, nsat)
    return scanned, nsat


# --- tasklet mode ``rows`` (docs/design.md): a tasklet's own rows live, its siblings' from
# the epoch's snapshot --------------------------------------------------------------------

@njit(cache=True, inline="always")
def rows_source(own_row, s2, fresh_lo, fresh_hi, owned):
    """Where a non-terminal update under ``rows`` bootstraps from: 0, state ownership's
    broadcast ``v`` for the states the DPU does not alone hold (``owned``); 1, the live row,
    for a state the tasklet owns or no tasklet writes (``own_row``); 2, the snapshot."""
    if owned and (s2 < fresh_lo or s2 >= fresh_hi):
        return 0
    if own_row:
        return 1
    return 2


# One function per number format, as for the ring's updates: numba types every branch of an
# inlined helper before it drops the dead ones, and with one helper for both Q format's values
# beside FP32's unified to float64 (the simulator's loop ran 1.9x slower). The simulator's
# DPU kernel writes the same update out with its flags as captured constants, faster still
# (pimrl/rlkernel/launch.py); the tests hold the two bit for bit to the reference.
@njit(cache=True, inline="always")
def update_rows_f32(q, snap_v, snap_q, s, a, r, s2, b, term, own_row, fresh_lo, fresh_hi, v,
                    is_q, draw, owned, snap_rows, eg, w, w_lo, cmean, cmax, eps, alpha, gamma, x):
    """One FP32 update under ``rows``, bootstrapping from :func:`rows_source`'s choice: the
    live row's value (owned SARSA: :func:`policy_value_f32`), the snapshot's value
    ``snap_v[s']`` or, for table-bootstrap SARSA (``snap_rows``), its row ``snap_q[s']``:
    (rng state, entries scanned, draws, snapshot reads)."""
    sc = dr = sr = 0
    if term:
        target = r
    else:
        src = rows_source(own_row, s2, fresh_lo, fresh_hi, owned)
        if src == 0:
            m = v[s2]
        elif src == 1:
            if is_q or not owned:
                m, x, sc, dr = bootstrap(q, s2, b, is_q, draw, eps, x)
            else:
                m, sc = policy_value_f32(q, s2, eg, w, s2 - w_lo, cmean, cmax)
        else:
            sr = 1
            if snap_rows:
                m, x, sc, dr = bootstrap(snap_q, s2, b, is_q, draw, eps, x)
            else:
                m = snap_v[s2]
        target = np.float32(r + np.float32(gamma * m))
    step_f32(q, s, a, target, alpha)
    return x, sc, dr, sr


@njit(cache=True, inline="always")
def update_rows_i32(q, snap_v, snap_q, s, a, r, s2, b, term, own_row, fresh_lo, fresh_hi, v,
                    is_q, draw, owned, snap_rows, eg, w, w_lo, cmean, cmax, eps, alpha, gamma, x,
                    frac, nsat):
    """:func:`update_rows_f32` in Q format (owned SARSA through :func:`policy_value_i32`):
    (rng state, entries scanned, draws, snapshot reads, ``nsat`` plus its saturations)."""
    sc = dr = sr = 0
    if term:
        target = r
    else:
        src = rows_source(own_row, s2, fresh_lo, fresh_hi, owned)
        if src == 0:
            m = v[s2]
        elif src == 1:
            if is_q or not owned:
                m, x, sc, dr = bootstrap(q, s2, b, is_q, draw, eps, x)
            else:
                m, sc, nsat = policy_value_i32(q, s2, eg, w, s2 - w_lo, cmean, cmax, frac, nsat)
        else:
            sr = 1
            if snap_rows:
                m, x, sc, dr = bootstrap(snap_q, s2, b, is_q, draw, eps, x)
            else:
                m = snap_v[s2]
        target, nsat = target_i32(r, gamma, m, frac, nsat)
    nsat = step_i32(q, s, a, target, alpha, frac, nsat)
    return x, sc, dr, sr, nsat


@njit(cache=True, inline="always")
def snapshot_value(q, st, is_q, owned, is_int, eg, w, w_lo, cmean, cmax, frac, nsat):
    """What the ``rows`` snapshot holds for state ``st`` when it holds values: the bootstrap
    value of its row (Q-learning's max, owned SARSA's policy value): (value, ``nsat`` plus
    its saturations)."""
    if is_q:
        return row_value(q, st), nsat
    if is_int:
        m, _, nsat = policy_value_i32(q, st, eg, w, st - w_lo, cmean, cmax, frac, nsat)
        return m, nsat
    m, _ = policy_value_f32(q, st, eg, w, st - w_lo, cmean, cmax)
    return m, nsat


@njit(cache=True, inline="always")
def take_snapshot(q, snap_v, snap_q, states, k_lo, k_hi, snap_rows, is_q, owned, is_int, eg, w,
                  w_lo, cmean, cmax, frac, nsat):
    """A tasklet's share of the epoch's snapshot: the states ``states[k_lo:k_hi]`` it owns,
    their values or (with ``snap_rows``) their rows: ``nsat`` plus its saturations."""
    for k in range(k_lo, k_hi):
        st = np.int64(states[k])
        if snap_rows:
            for c in range(q.shape[1]):
                snap_q[st, c] = q[st, c]
        else:
            snap_v[st], nsat = snapshot_value(q, st, is_q, owned, is_int, eg, w, w_lo, cmean, cmax,
                                              frac, nsat)
    return nsat


@njit(cache=True, inline="always")
def owns_row(owner, s2, t):
    """Under ``rows``: whether a tasklet ``t`` reads state ``s2`` live (it owns it, or no
    tasklet writes it) rather than from the snapshot."""
    o = owner[s2]
    return o == t or o == NO_OWNER


@njit(cache=True, inline="always")
def owner_output(q, vout, edges, own_lo, own_hi, is_q, is_int, eg, w, cmean, cmax, frac, nsat):
    """A state owner's output after its updates, one gather for the host: V of its states
    ``[own_lo, own_hi)`` into ``vout`` (the bootstrap's value: max for Q-learning, SARSA's
    policy value), then its first and last rows (the ones another DPU may share, for the
    host's merge) into ``edges``: ``nsat`` plus its saturations."""
    n_actions = q.shape[1]
    for st in range(own_lo, own_hi):
        if is_q:
            _, m = row_max(q, st)
        elif is_int:
            m, _, nsat = policy_value_i32(q, st, eg, w, st - own_lo, cmean, cmax, frac, nsat)
        else:
            m, _ = policy_value_f32(q, st, eg, w, st - own_lo, cmean, cmax)
        vout[st - own_lo] = m
    for k in range(n_actions):
        edges[k] = q[own_lo, k]
        edges[n_actions + k] = q[own_hi - 1, k]
    return nsat

