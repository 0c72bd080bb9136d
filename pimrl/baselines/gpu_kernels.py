"""The GPU baseline's CUDA code (numba-cuda, extra ``gpu``), compiled on first use: the
learning kernel (one CUDA thread per partition, docs/design.md's order of updates), the
average kernel and the zeroing kernel, on device primitives that round as the reference
does. :mod:`pimrl.baselines.gpu` launches them and times them."""
from __future__ import annotations

import os

import numpy as np

from pimrl.learners.variants import (
    ALGO, DTYPE, P_ALGO, P_ALPHA_FX, P_DTYPE, P_EPOCHS, P_EPS, P_FRAC, P_GAMMA_FX, P_SAMPLING,
    P_SARSA_DRAW, P_STRIDE, P_TASKLET_MODE, SAMPLING, TASKLET_MODE,
)
from pimrl.partition import NO_OWNER
from pimrl import rng as streams

# Variant codes as the kernel's parameter words carry them (pimrl.learners.variants).
Q_CODE = ALGO.code("q")
INT32_CODE = DTYPE.code("int32")
SEQ_CODE, RAN_CODE = SAMPLING.code("seq"), SAMPLING.code("ran")
ROWS_CODE = TASKLET_MODE.code("rows")

#: Most lanes (tasklets) one partition may have: the size of the kernel's local arrays.
MAX_LANES = 24
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_KERNEL = None   # (learning kernel, average kernel, zero kernel), built on first use
cuda = None   # numba.cuda, imported on first use (a module global: the simulator swaps it)


def simulator_enabled() -> bool:
    """Whether numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def device_primitives(cuda):
    """The device functions every GPU kernel of pimrl shares: IEEE float32 multiply, add and
    subtract rounded to nearest and never fused (so a real GPU matches the reference bit for
    bit), the xorshift32 step and ``below`` (docs/design.md). ``cuda`` is ``numba.cuda``."""
    if simulator_enabled():
        # The simulator runs the device code as Python on numpy float32 scalars: each
        # operation is one IEEE float32 rounding already (libdevice has no simulator body).
        @cuda.jit(device=True)
        def fmul(a, b):
            return np.float32(a * b)

        @cuda.jit(device=True)
        def fadd(a, b):
            return np.float32(a + b)

        @cuda.jit(device=True)
        def fsub(a, b):
            return np.float32(a - b)
    else:
        from numba.cuda import libdevice

        @cuda.jit(device=True)
        def fmul(a, b):
            return libdevice.fmul_rn(a, b)

        @cuda.jit(device=True)
        def fadd(a, b):
            return libdevice.fadd_rn(a, b)

        @cuda.jit(device=True)
        def fsub(a, b):
            return libdevice.fsub_rn(a, b)

    # The CPU loops' own stream functions, compiled for the device.
    xorshift32 = cuda.jit(device=True)(streams.xorshift32.py_func)
    below = cuda.jit(device=True)(streams.below.py_func)
    return fmul, fadd, fsub, xorshift32, below


def _build():
    """Compile-on-first-use: the kernel needs numba.cuda, an optional dependency."""
    global _KERNEL, cuda
    if _KERNEL is not None:
        return _KERNEL
    from numba import cuda as _cuda, int64, uint32

    cuda = _cuda

    fmul, fadd, fsub, xorshift32, below = device_primitives(cuda)

    @cuda.jit(device=True)
    def sat32(x):
        """(int32 value, 1 if it saturated else 0)."""
        if x > INT32_MAX:
            return np.int32(INT32_MAX), 1
        if x < INT32_MIN:
            return np.int32(INT32_MIN), 1
        return np.int32(x), 0

    @cuda.jit(device=True)
    def fx_mul(a, b, frac):
        prod = np.int64(a) * np.int64(b)
        prod = (prod + (np.int64(1) << (frac - 1))) >> frac
        return sat32(prod)

    @cuda.jit(device=True)
    def row_max(q, p, s, n_actions):
        m = q[p, s, 0]
        for a in range(1, n_actions):
            if q[p, s, a] > m:
                m = q[p, s, a]
        return m

    @cuda.jit(device=True)
    def bootstrap(q, p, s2, b, algo, draw, eps, st, t, n_actions):
        """Q-learning: max over a'; SARSA: Q[s', b'] (b' logged or epsilon-greedy)."""
        if algo == Q_CODE:
            return row_max(q, p, s2, n_actions)
        if not draw:
            return q[p, s2, b]
        st[t] = xorshift32(st[t])
        if np.uint64(st[t]) < np.uint64(eps):
            st[t] = xorshift32(st[t])
            return q[p, s2, below(st[t], n_actions)]
        return row_max(q, p, s2, n_actions)

    @cuda.jit(device=True)
    def learn_record(state, action, reward_f, reward_x, next_state, next_action, terminated,
                     q_f, q_x, snap_f, snap_x, p, j, t, st, owner, rows, snap_rows,
                     algo, is_int, draw, eps, frac, alpha_x, gamma_x, alpha_f, gamma_f,
                     n_actions):
        """One update of record j by lane t of partition p (docs/design.md); under tasklet
        mode rows (``rows``) a state another lane owns bootstraps from the snapshot: its row
        (``snap_rows``) or its value. Returns the saturations."""
        s = state[j]
        a = action[j]
        s2 = next_state[j]
        term = terminated[j] != 0
        own = True
        if rows:
            o = owner[p, s2]
            own = o == t or o == NO_OWNER
        nsat = 0
        if is_int:
            if term:
                target = reward_x[j]
            else:
                if own:
                    m = bootstrap(q_x, p, s2, next_action[j], algo, draw, eps, st, t, n_actions)
                elif snap_rows:
                    m = bootstrap(snap_x, p, s2, next_action[j], algo, draw, eps, st, t,
                                  n_actions)
                else:
                    m = snap_x[p, s2, 0]
                g, f1 = fx_mul(gamma_x, m, frac)
                target, f2 = sat32(np.int64(reward_x[j]) + np.int64(g))
                nsat += f1 + f2
            cur = q_x[p, s, a]
            td, f3 = sat32(np.int64(target) - np.int64(cur))
            inc, f4 = fx_mul(alpha_x, td, frac)
            new, f5 = sat32(np.int64(cur) + np.int64(inc))
            q_x[p, s, a] = new
            nsat += f3 + f4 + f5
        else:
            if term:
                target_f = reward_f[j]
            else:
                if own:
                    mf = bootstrap(q_f, p, s2, next_action[j], algo, draw, eps, st, t, n_actions)
                elif snap_rows:
                    mf = bootstrap(snap_f, p, s2, next_action[j], algo, draw, eps, st, t,
                                   n_actions)
                else:
                    mf = snap_f[p, s2, 0]
                target_f = fadd(reward_f[j], fmul(gamma_f, mf))
            cur_f = q_f[p, s, a]
            td_f = fsub(target_f, cur_f)
            q_f[p, s, a] = fadd(cur_f, fmul(alpha_f, td_f))
        return nsat

    @cuda.jit(device=True)
    def next_record(sampling, stride, start, end, cursor, offset, st, t):
        """The lane's next record (SEQ, STR or RAN; docs/design.md): (j, cursor, offset)."""
        if sampling == RAN_CODE:
            st[t] = xorshift32(st[t])
            return start + below(st[t], end - start), cursor, offset
        j = cursor
        if sampling == SEQ_CODE:
            return j, j + 1, offset
        nxt = j + stride
        while nxt >= end:
            offset += 1
            nxt = start + offset
            if offset >= stride:
                break
        return j, nxt, offset

    @cuda.jit
    def kernel(state, action, reward_f, reward_x, next_state, next_action, terminated,
               lanes, owner, state_list, list_bounds, rng, q_f, q_x, snap_f, snap_x, snap_rows,
               iparams, fparams, n_actions, sat_out):
        p = cuda.grid(1)
        if p >= lanes.shape[0]:
            return
        n_lanes = lanes.shape[1]
        algo = iparams[P_ALGO]
        is_int = iparams[P_DTYPE] == INT32_CODE
        sampling = iparams[P_SAMPLING]
        stride = iparams[P_STRIDE]
        epochs = iparams[P_EPOCHS]
        draw = iparams[P_SARSA_DRAW] == 1
        eps = iparams[P_EPS]
        frac = iparams[P_FRAC]
        rows = iparams[P_TASKLET_MODE] == ROWS_CODE and n_lanes > 1
        alpha_x = np.int32(iparams[P_ALPHA_FX])
        gamma_x = np.int32(iparams[P_GAMMA_FX])
        alpha_f = fparams[0]
        gamma_f = fparams[1]
        cursor = cuda.local.array(MAX_LANES, int64)
        offset = cuda.local.array(MAX_LANES, int64)
        st = cuda.local.array(MAX_LANES, uint32)
        longest = 0
        for t in range(n_lanes):
            st[t] = rng[p, t]
            n = lanes[p, t, 1] - lanes[p, t, 0]
            if n > longest:
                longest = n
        nsat = 0
        for _ in range(epochs):
            for t in range(n_lanes):
                cursor[t] = lanes[p, t, 0]
                offset[t] = 0
            if rows:
                # Tasklet mode rows: the epoch's snapshot of every lane's states, then each
                # lane to its end (the lanes write disjoint rows: any order is the same).
                for t in range(n_lanes):
                    for k_ in range(list_bounds[p, t], list_bounds[p, t + 1]):
                        s_ = state_list[p, k_]
                        if snap_rows:
                            for k in range(n_actions):
                                if is_int:
                                    snap_x[p, s_, k] = q_x[p, s_, k]
                                else:
                                    snap_f[p, s_, k] = q_f[p, s_, k]
                        elif is_int:
                            snap_x[p, s_, 0] = row_max(q_x, p, s_, n_actions)
                        else:
                            snap_f[p, s_, 0] = row_max(q_f, p, s_, n_actions)
                for t in range(n_lanes):
                    start = lanes[p, t, 0]
                    end = lanes[p, t, 1]
                    for _i in range(end - start):
                        j, cursor[t], offset[t] = next_record(sampling, stride, start, end,
                                                              cursor[t], offset[t], st, t)
                        nsat += learn_record(state, action, reward_f, reward_x, next_state,
                                             next_action, terminated, q_f, q_x, snap_f, snap_x,
                                             p, j, t, st, owner, True, snap_rows, algo,
                                             is_int, draw, eps, frac, alpha_x, gamma_x, alpha_f,
                                             gamma_f, n_actions)
                continue
            for i in range(longest):
                for t in range(n_lanes):
                    start = lanes[p, t, 0]
                    end = lanes[p, t, 1]
                    if i >= end - start:
                        continue
                    j, cursor[t], offset[t] = next_record(sampling, stride, start, end,
                                                          cursor[t], offset[t], st, t)
                    nsat += learn_record(state, action, reward_f, reward_x, next_state,
                                         next_action, terminated, q_f, q_x, snap_f, snap_x, p,
                                         j, t, st, owner, False, False, algo, is_int, draw, eps,
                                         frac, alpha_x, gamma_x, alpha_f, gamma_f, n_actions)
        for t in range(n_lanes):
            rng[p, t] = st[t]
        sat_out[p] = nsat

    @cuda.jit
    def average(q_f, q_x, is_int, scale, out):
        """out[s, a] = sum over partitions, in partition order, of the float64 values.

        The order and the arithmetic are numpy's ``mean(axis=0)`` on the host (a running
        float64 sum over the leading axis, then one division there), so the average is the
        same bit for bit as the host's average of the copied tables."""
        e = cuda.grid(1)
        n_actions = out.shape[1]
        if e >= out.shape[0] * n_actions:
            return
        s = e // n_actions
        a = e - s * n_actions
        if is_int:
            acc = np.float64(q_x[0, s, a]) / scale
            for p in range(1, q_x.shape[0]):
                acc += np.float64(q_x[p, s, a]) / scale
        else:
            acc = np.float64(q_f[0, s, a])
            for p in range(1, q_f.shape[0]):
                acc += np.float64(q_f[p, s, a])
        out[s, a] = acc

    @cuda.jit
    def zero(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] = 0

    _KERNEL = (kernel, average, zero)
    return _KERNEL
