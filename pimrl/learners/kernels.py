"""Compiled learning loops, one per variant (:mod:`pimrl.learners.variants`).

:func:`compiled` returns the loops of one :class:`~pimrl.learners.variants.Variant`, compiled
with the variant's choices (algorithm, dtype, sampling, SARSA's next action) as compile-time
constants: the hot loop has no per-update dispatch, a lane's cursor and random stream live
in registers while it runs alone, and the Q-table is the only memory it writes. Each loop is
a numba closure over those constants; numba caches closures by the values they capture, so a
variant compiles once per machine and later runs load it from the cache.

The arithmetic and the update order are docs/design.md's: the loops are bit-identical to the
pure-Python oracle (``oracle.py``) and to the simulator's DPU kernel, which builds on the same
update primitives (:func:`update_f32`, :func:`update_i32`, :func:`next_index`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from pimrl.learners.fixedpoint import INT32_MAX, INT32_MIN
from pimrl.learners.variants import (
    P_ALPHA32, P_ALPHA_FX, P_EPOCHS, P_EPS, P_FRAC, P_GAMMA32, P_GAMMA_FX, P_POLICY_MAX32,
    P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX, P_STRIDE, Variant,
)
from pimrl.parallel import run_ranges
from pimrl.partition import NO_OWNER
from pimrl.rng import below, xorshift32

SEQ, STR, RAN = 0, 1, 2


# --- update primitives: flags are compile-time constants in every caller ------------------

@intrinsic
def unlikely(typingctx, cond):
    """``cond``, marked for LLVM as almost always false (``llvm.expect``): the branch it
    guards stays a branch, laid out off the hot path, instead of being computed on every pass
    and selected."""
    if not isinstance(cond, types.Boolean):
        return None

    def codegen(context, builder, signature, args):
        i1 = ir.IntType(1)
        expect = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i1, [i1, i1]),
                                                "llvm.expect.i1")
        return builder.call(expect, [args[0], ir.Constant(i1, 0)])
    return types.boolean(types.boolean), codegen


@intrinsic
def cold(typingctx):
    """Marks the path it stands on as one LLVM must keep a branch (an empty assembly statement
    with side effects cannot be speculated): a saturation's clamp stays off the hot path
    instead of being computed on every pass and selected. Empty, so on every target."""
    def codegen(context, builder, signature, args):
        builder.asm(ir.FunctionType(ir.VoidType(), []), "", "", [], side_effect=True)
        return context.get_dummy_value()
    return types.none(), codegen


def _int32_with_overflow(op):
    """An intrinsic (a, b) -> (a op b wrapped to int32, whether it overflowed) of two int32,
    LLVM's ``llvm.<op>.with.overflow.i32`` (one instruction and a jump on overflow)."""
    def typer(typingctx, a, b):
        if not (a == types.int32 and b == types.int32):
            return None

        def codegen(context, builder, signature, args):
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.LiteralStructType([i32, ir.IntType(1)]),
                                                [i32, i32]), f"llvm.{op}.with.overflow.i32")
            res = builder.call(fn, args)
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(res, 0),
                                       builder.extract_value(res, 1)])
        return types.Tuple([types.int32, types.boolean])(a, b), codegen
    typer.__name__ = typer.__qualname__ = f"{op}_with_overflow"
    return intrinsic(typer)


add_with_overflow = _int32_with_overflow("sadd")
sub_with_overflow = _int32_with_overflow("ssub")


@intrinsic
def _rows_of(typingctx, flat, n_rows, n_cols):
    """``flat`` (1-D, C-contiguous) as an (n_rows, n_cols) C-contiguous array, the struct
    built in place (the caller checks the size)."""
    if not (isinstance(flat, types.Array) and flat.ndim == 1 and flat.layout == "C"):
        return None
    table = flat.copy(ndim=2, layout="C")

    def codegen(context, builder, signature, args):
        src = make_array(signature.args[0])(context, builder, args[0])
        out = make_array(table)(context, builder)
        rows = context.cast(builder, args[1], signature.args[1], types.intp)
        cols = context.cast(builder, args[2], signature.args[2], types.intp)
        size = src.itemsize
        populate_array(out, data=src.data, shape=cgutils.pack_array(builder, [rows, cols]),
                       strides=cgutils.pack_array(builder, [builder.mul(cols, size), size]),
                       itemsize=size, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, table, out._getvalue())
    return table(flat, n_rows, n_cols), codegen


@njit(cache=True, inline="always")
def as_table(flat, n_rows, n_cols):
    """The first ``n_rows * n_cols`` items of ``flat`` (1-D, C-contiguous) as an (n_rows,
    n_cols) table, a view. Unlike ``reshape``, whose shape comes back from a C helper that
    LLVM cannot see into, a row length that is a compile-time constant stays one: rows are
    indexed with a constant stride and a row's max is unrolled without length tests."""
    if flat.shape[0] < n_rows * n_cols:
        raise ValueError("as_table: the array is shorter than the table")
    return _rows_of(flat, n_rows, n_cols)


# The saturation count is threaded through (``n`` in, ``n`` out) rather than returned as a
# flag per operation and summed, and its tests are marked unlikely: without the mark LLVM
# turns each saturation into compares and selects computed on every update (the INT32 loops
# ran 20-40 % slower, and slower still with flags summed).
@njit(cache=True, inline="always")
def sat32(x, n):
    """Clamp an int64 to int32: (value, ``n`` plus 1 if it saturated)."""
    if unlikely(x > INT32_MAX):
        return np.int32(INT32_MAX), n + 1
    if unlikely(x < INT32_MIN):
        return np.int32(INT32_MIN), n + 1
    return np.int32(x), n


# sat32 of the sum or difference of two int32, tested as the 32-bit operation's overflow (one
# add and a jump) instead of two compares of the int64 result: the result leaves the int32
# range exactly when the 32-bit operation overflows, and then has a's sign. With the one-lane
# loops' shapes below, Q-learning INT32 SEQ went from 222 to 246-266 M updates/s on one
# thread; kernels/cpu_loop.c takes the same test (5-10 % faster).
@njit(cache=True, inline="always")
def add_sat32(a, b, n):
    """sat32(a + b) of two int32: (value, ``n`` plus 1 if it saturated)."""
    v, overflowed = add_with_overflow(np.int32(a), np.int32(b))
    return _clamp_overflow(v, overflowed, a, n)


@njit(cache=True, inline="always")
def sub_sat32(a, b, n):
    """sat32(a - b) of two int32: (value, ``n`` plus 1 if it saturated)."""
    v, overflowed = sub_with_overflow(np.int32(a), np.int32(b))
    return _clamp_overflow(v, overflowed, a, n)


@njit(cache=True, inline="always")
def _clamp_overflow(v, overflowed, a, n):
    """``v``, or the int32 limit on ``a``'s side if its operation overflowed (counted)."""
    if unlikely(overflowed):
        cold()
        return (np.int32(INT32_MAX) if a >= 0 else np.int32(INT32_MIN)), n + 1
    return v, n


@njit(cache=True, inline="always")
def fx_mul(a, b, frac, n):
    """Q-format product, round half up, saturated: (value, ``n`` plus its saturations)."""
    p = np.int64(a) * np.int64(b)
    return sat32((p + (np.int64(1) << (frac - 1))) >> frac, n)


@njit(cache=True, inline="always")
def row_max(q, s):
    """(greedy action, its value) at ``s``: the max starts at Q[s, 0]; lowest index on ties."""
    best = 0
    m = q[s, 0]
    for a in range(1, q.shape[1]):
        v = q[s, a]
        if v > m:
            m = v
            best = a
    return best, m


@njit(cache=True, inline="always")
def row_value(q, s):
    """max_a Q[s, a] (row_max's value without its index: the index costs the loops ~20 %).

    The first eight actions are a chain of compares, nested so that each test of the row
    length is a branch taken the same way on every call: for the 4 to 8 actions of the toy
    environments this is faster than a loop, which LLVM vectorizes into passes whose set-up
    outweighs a short row."""
    n = q.shape[1]
    m = q[s, 0]
    if n > 1:
        m = _larger(m, q[s, 1])
        if n > 2:
            m = _larger(m, q[s, 2])
            if n > 3:
                m = _larger(m, q[s, 3])
                if n > 4:
                    m = _larger(m, q[s, 4])
                    if n > 5:
                        m = _larger(m, q[s, 5])
                        if n > 6:
                            m = _larger(m, q[s, 6])
                            if n > 7:
                                m = _larger(m, q[s, 7])
                                for a in range(8, n):
                                    m = _larger(m, q[s, a])
    return m


@njit(cache=True, inline="always")
def _larger(m, v):
    """``v`` if it is greater than ``m``, else ``m`` (ties and NaN keep ``m``)."""
    return v if v > m else m


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
# (pimrl/rlkernel/program.py); the tests hold the two bit for bit to the reference.
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
def next_index(sampling, stride, start, end, cur, off, x):
    """A lane's next record in its epoch order (docs/design.md), from its cursor ``cur``,
    STR offset ``off`` and stream ``x``: (index, cur, off, x). Call it exactly ``end -
    start`` times per epoch, starting from ``cur = start, off = 0``."""
    if sampling == RAN:
        x = xorshift32(x)
        return start + below(x, end - start), cur, off, x
    if sampling == SEQ:
        return cur, cur + 1, off, x
    nxt = cur + stride                       # STR: offset, offset + k, ...; then the next offset
    while nxt >= end:
        off += 1
        nxt = start + off
        if off >= stride:
            break
    return cur, nxt, off, x


@njit(cache=True, inline="always")
def f32_scalar(bits):
    """An int64 parameter word holding float32 bits, as float32."""
    b = np.empty(1, dtype=np.int32)
    b[0] = bits
    return b.view(np.float32)[0]


@njit(cache=True, inline="always")
def fields_at(words, rewards, k):
    """The fields of the record whose first word is ``words[k]`` (``k`` unsigned; record j's
    is ``j << 2``, the records' flat views holding 4 words a record) (docs/design.md): (s, a,
    r, s', b', terminated), states and actions unsigned: one compare each also catches a
    negative one, and indexing with them needs no negative-index wraparound."""
    w = np.uint32(words[k + np.uint64(3)])
    return (np.uint32(words[k]), w & np.uint32(0xFF), rewards[k + np.uint64(2)],
            np.uint32(words[k + np.uint64(1)]), (w >> np.uint32(8)) & np.uint32(0xFF),
            (w & np.uint32(0xFF0000)) != 0)


@njit(cache=True, inline="always")
def outside_table(s, a, s2, b, term, n_states, n_actions, check_b):
    """True when a record's state, next state or action (and, with ``check_b``, the logged
    next action of a non-terminal record) lies outside an ``n_states`` x ``n_actions`` table
    (all unsigned, compared in one type)."""
    return ((s >= n_states) | (s2 >= n_states) | (a >= n_actions)
            | (check_b & (b >= n_actions) & (not term)))


# The update of one record, one function per kind, each holding only its kind's path: one
# function for every kind grew past LLVM's inlining limit (the call then passed ~40 words of
# arguments per update and halved the loops' speed), and inlined by numba it typed every
# kind at each call site. The table updates are inlined by numba, the owned one by LLVM.
@njit(cache=True, inline="always")
def record_update_i32(q, words, rewards, k, is_q, draw, eps, alpha, gamma, frac, x, nsat):
    """The INT32 table update of the record whose first word is ``words[k]`` (flags
    compile-time constants): (new rng state, ``nsat`` plus its saturations)."""
    s, a, r, s2, b, term = fields_at(words, rewards, k)
    x, _, _, nsat = update_i32(q, s, a, r, s2, b, term, is_q, draw, eps, alpha, gamma, frac, x,
                               nsat)
    return x, nsat


@njit(cache=True, inline="always")
def record_update_f32(q, words, rewards, k, is_q, draw, eps, alpha, gamma, x):
    """The FP32 table update of the record whose first word is ``words[k]`` (flags
    compile-time constants): new rng state."""
    s, a, r, s2, b, term = fields_at(words, rewards, k)
    x, _, _ = update_f32(q, s, a, r, s2, b, term, is_q, draw, eps, alpha, gamma, x)
    return x


@njit(cache=True)
def record_update_owned(q, words, rewards, k, v, own_lo, own_hi, is_int, is_q, draw, alpha,
                        gamma, frac, pw, cmean, cmax, nsat):
    """The update of the record whose first word is ``words[k]``, bootstrapping under state
    ownership (flags compile-time constants; for SARSA ``draw`` says epsilon-greedy, ``pw``,
    ``cmean`` and ``cmax`` are its policy weights): ``nsat`` plus its saturations."""
    s, a, r, s2, b, term = fields_at(words, rewards, k)
    if is_int:
        _, nsat = update_i32_owned(q, v, own_lo, own_hi, s, a, r, s2, term, alpha, gamma, frac,
                                   is_q, draw, pw, 0, cmean, cmax, nsat)
        return nsat
    update_f32_owned(q, v, own_lo, own_hi, s, a, r, s2, term, alpha, gamma, is_q, draw, pw, 0,
                     cmean, cmax)
    return nsat


@njit(cache=True)
def learning_rates_f32(scalars):
    return f32_scalar(scalars[P_ALPHA32]), f32_scalar(scalars[P_GAMMA32])


@njit(cache=True)
def learning_rates_i32(scalars):
    return np.int32(scalars[P_ALPHA_FX]), np.int32(scalars[P_GAMMA_FX])


@njit(cache=True)
def rates_f32(scalars, policy):
    """(alpha, gamma, cmean, cmax) as float32; cmean and cmax, owned SARSA's epsilon-greedy
    policy weights, are read only with ``policy`` (else 0)."""
    alpha, gamma = learning_rates_f32(scalars)
    if policy:
        return alpha, gamma, f32_scalar(scalars[P_POLICY_MEAN32]), f32_scalar(scalars[P_POLICY_MAX32])
    return alpha, gamma, np.float32(0.0), np.float32(0.0)


@njit(cache=True)
def rates_i32(scalars, policy):
    """:func:`rates_f32` in Q format."""
    alpha, gamma = learning_rates_i32(scalars)
    if policy:
        return alpha, gamma, np.int32(scalars[P_POLICY_MEAN_FX]), np.int32(scalars[P_POLICY_MAX_FX])
    return alpha, gamma, np.int32(0), np.int32(0)


# --- the loops of one variant ----------------------------------------------------------------
# A closure per variant holds the loop; its flags are captured constants, so numba drops the
# branches of the other choices before typing and LLVM inlines the small helpers above with
# the flags folded in. Closures capture only plain constants: numba keys its cache on their
# values (a captured function would carry a per-process id and defeat the cache).

def _build(variant: Variant):
    """The variant's two loops: (partitions of one lane each, partitions of several lanes)."""
    IS_INT = variant.is_int
    IS_Q = variant.algo == "q"
    DRAW = variant.epsilon_greedy        # owned: its expected value, else a drawn b'
    SAMPLING = {"seq": SEQ, "str": STR, "ran": RAN}[variant.sampling]
    USES_RNG = variant.uses_rng
    OWNED = variant.owned

    # Each loop defines ``update`` for its partition: numba inlines it before pruning, so only
    # the variant's kind of update is typed. A jitted closure captured here would defeat
    # numba's cache; one inline helper for both loops, the flags as arguments, is pruned as
    # well but compiled q-fp32-seq's loop ~9 % slower (330 against 360 M updates/s). The
    # one-lane loop is a function of its own, so its few live values stay in registers
    # (sharing a function with the round-robin loop spilled them: INT32 STR ran ~30 % slower).

    @njit(nogil=True, cache=True)
    def one_lane(words, rewards, lanes, rng, q, scalars, sat, v, own, w, lo, hi):
        """Partitions ``lo`` to ``hi - 1`` of one lane each (``lanes`` (P, 1, 2)); the lane's
        cursor and stream live in registers."""
        eps, frac, stride = scalars[P_EPS], scalars[P_FRAC], scalars[P_STRIDE]
        words, rewards = words.reshape(-1), rewards.reshape(-1)      # flat: see fields_at
        if IS_INT:
            # The reward is word 2 itself, in Q format (partitions passes one array): one
            # base register for the records instead of two.
            rewards = words
            alpha, gamma, cmean, cmax = rates_i32(scalars, OWNED and DRAW)
        else:
            alpha, gamma, cmean, cmax = rates_f32(scalars, OWNED and DRAW)
        for p in range(lo, hi):
            qp = q[p]
            own_lo, own_hi = own[p, 0], own[p, 1]

            # ``k``: the record's first word (words[k]).
            def update(k, x, nsat):
                if OWNED:
                    return x, record_update_owned(qp, words, rewards, k, v, own_lo, own_hi,
                                                  IS_INT, IS_Q, DRAW, alpha, gamma, frac, w,
                                                  cmean, cmax, nsat)
                if IS_INT:
                    return record_update_i32(qp, words, rewards, k, IS_Q, DRAW, eps, alpha,
                                             gamma, frac, x, nsat)
                return record_update_f32(qp, words, rewards, k, IS_Q, DRAW, eps, alpha, gamma,
                                         x), nsat

            start, end = lanes[p, 0, 0], lanes[p, 0, 1]
            x = rng[p, 0]
            nsat = 0
            for _ in range(scalars[P_EPOCHS]):
                if SAMPLING == RAN:
                    n = end - start
                    for _ in range(n):
                        x = xorshift32(x)
                        j = start + below(x, n)
                        x, nsat = update(np.uint64(j) << np.uint64(2), x, nsat)
                else:
                    # SEQ is STR with stride 1: offsets 0, 1, ... and from each offset every
                    # stride-th record (next_index's order, without its branches).
                    step = 1 if SAMPLING == SEQ else stride
                    # Three shapes of the same order, each the fastest measured for its
                    # kind (benchmarks/bench_baselines.py, 3-10 % apart): INT32 loops step
                    # the record's first word instead of keeping a record number besides,
                    # Q-learning's tested against the end, SARSA's counted; FP32 keeps the
                    # range over record numbers.
                    k_step = np.uint64(step) << np.uint64(2)
                    if IS_INT and IS_Q:
                        k_end = np.uint64(end) << np.uint64(2)
                        for o in range(min(step, end - start)):
                            k = np.uint64(start + o) << np.uint64(2)
                            while k < k_end:
                                x, nsat = update(k, x, nsat)
                                k += k_step
                    elif IS_INT:
                        for o in range(min(step, end - start)):
                            k = np.uint64(start + o) << np.uint64(2)
                            for _ in range((end - start - o + step - 1) // step):
                                x, nsat = update(k, x, nsat)
                                k += k_step
                    else:
                        for o in range(min(step, end - start)):
                            for j in range(start + o, end, step):
                                x, nsat = update(np.uint64(j) << np.uint64(2), x, nsat)
            rng[p, 0] = x
            sat[p] += nsat

    @njit(nogil=True, cache=True)
    def round_robin(words, rewards, lanes, rng, q, scalars, sat, v, own, w, lo, hi):
        """Partitions ``lo`` to ``hi - 1``, each its lanes in the round-robin order of
        docs/design.md."""
        eps, frac, stride = scalars[P_EPS], scalars[P_FRAC], scalars[P_STRIDE]
        words, rewards = words.reshape(-1), rewards.reshape(-1)      # flat: see fields_at
        if IS_INT:
            alpha, gamma, cmean, cmax = rates_i32(scalars, OWNED and DRAW)
        else:
            alpha, gamma, cmean, cmax = rates_f32(scalars, OWNED and DRAW)
        n_lanes = lanes.shape[1]
        for p in range(lo, hi):
            qp = q[p]
            own_lo, own_hi = own[p, 0], own[p, 1]

            def update(k, x, nsat):
                if OWNED:
                    return x, record_update_owned(qp, words, rewards, k, v, own_lo, own_hi,
                                                  IS_INT, IS_Q, DRAW, alpha, gamma, frac, w,
                                                  cmean, cmax, nsat)
                if IS_INT:
                    return record_update_i32(qp, words, rewards, k, IS_Q, DRAW, eps, alpha,
                                             gamma, frac, x, nsat)
                return record_update_f32(qp, words, rewards, k, IS_Q, DRAW, eps, alpha, gamma,
                                         x), nsat

            nsat = 0
            cur = np.empty(n_lanes, dtype=np.int64)
            off = np.zeros(n_lanes, dtype=np.int64)
            xs = rng[p].copy()
            longest = 0
            for t in range(n_lanes):
                longest = max(longest, lanes[p, t, 1] - lanes[p, t, 0])
            for _ in range(scalars[P_EPOCHS]):
                for t in range(n_lanes):
                    cur[t] = lanes[p, t, 0]
                    off[t] = 0
                for i in range(longest):
                    for t in range(n_lanes):
                        start, end = lanes[p, t, 0], lanes[p, t, 1]
                        if i >= end - start:
                            continue
                        x = xs[t] if USES_RNG else np.uint32(0)
                        if SAMPLING == SEQ:
                            j = start + i
                        else:
                            j, cur[t], off[t], x = next_index(SAMPLING, stride, start, end, cur[t],
                                                              off[t], x)
                        x, nsat = update(np.uint64(j) << np.uint64(2), x, nsat)
                        if USES_RNG:
                            xs[t] = x
            rng[p] = xs
            sat[p] += nsat

    SNAP_ROWS = variant.snapshot_rows
    DRAWS = variant.draws_next_action

    @njit(nogil=True, cache=True)
    def rows(words, rewards, lanes, rng, q, scalars, sat, v, own, w, owner, state_list,
             list_bounds, lo, hi):
        """Partitions ``lo`` to ``hi - 1`` in tasklet mode ``rows`` (docs/design.md): each
        epoch, every lane's share of the snapshot, then every lane's updates. The lanes are
        independent within an epoch, so running them one after the other gives what
        tasklets running at once give."""
        eps, frac, stride = scalars[P_EPS], scalars[P_FRAC], scalars[P_STRIDE]
        words, rewards = words.reshape(-1), rewards.reshape(-1)      # flat: see fields_at
        if IS_INT:
            alpha, gamma, cmean, cmax = rates_i32(scalars, OWNED and DRAW)
        else:
            alpha, gamma, cmean, cmax = rates_f32(scalars, OWNED and DRAW)
        n_lanes = lanes.shape[1]
        n_states, n_actions = q.shape[1], q.shape[2]
        snap_v = np.zeros(1 if SNAP_ROWS else n_states, q.dtype)
        snap_q = np.zeros((n_states if SNAP_ROWS else 1, n_actions), q.dtype)
        for p in range(lo, hi):
            qp = q[p]
            # ``w`` is the whole (S, A) table of policy weights here (row s for state s)
            fresh_lo, fresh_hi = own[p, 0], own[p, 1]
            owners = owner[p]
            nsat = 0
            for _ in range(scalars[P_EPOCHS]):
                for t in range(n_lanes):
                    nsat = take_snapshot(qp, snap_v, snap_q, state_list[p], list_bounds[p, t],
                                         list_bounds[p, t + 1], SNAP_ROWS, IS_Q, OWNED, IS_INT,
                                         DRAW, w, 0, cmean, cmax, frac, nsat)
                for t in range(n_lanes):
                    start, end = lanes[p, t, 0], lanes[p, t, 1]
                    x = rng[p, t]
                    cur, off = start, 0
                    for _ in range(end - start):
                        j, cur, off, x = next_index(SAMPLING, stride, start, end, cur, off, x)
                        s_, a_, r_, s2, b_, term = fields_at(words, rewards, np.uint64(j) << np.uint64(2))
                        own_row = owns_row(owners, s2, t)
                        if IS_INT:
                            x, _, _, _, nsat = update_rows_i32(
                                qp, snap_v, snap_q, s_, a_, r_, s2, b_, term, own_row, fresh_lo,
                                fresh_hi, v, IS_Q, DRAWS, OWNED, SNAP_ROWS, DRAW, w, 0, cmean,
                                cmax, eps, alpha, gamma, x, frac, nsat)
                        else:
                            x, _, _, _ = update_rows_f32(
                                qp, snap_v, snap_q, s_, a_, r_, s2, b_, term, own_row, fresh_lo,
                                fresh_hi, v, IS_Q, DRAWS, OWNED, SNAP_ROWS, DRAW, w, 0, cmean,
                                cmax, eps, alpha, gamma, x)
                    rng[p, t] = x
            sat[p] += nsat

    return one_lane, round_robin, rows


@dataclass(frozen=True)
class CompiledVariant:
    """The compiled loops of one variant (each ``loop(..., lo, hi)`` learns partitions
    ``lo..hi-1`` with the GIL released): ``one_lane`` for partitions of one lane (the CPU
    baseline), ``round_robin`` for partitions of several (a DPU's tasklets)."""

    variant: Variant
    one_lane: object
    round_robin: object
    rows: object

    def partitions(self, words, rewards, lanes, rng, q, scalars, sat,
                   threads: int | None = None, v=None, own=None, w=None,
                   owners=None) -> None:
        """Learn every partition: ``lanes`` (P, T, 2) record ranges, ``rng`` (P, T) lane
        streams (advanced in place), ``q`` (P, S, A) tables of the variant's dtype (float32,
        or Q-format int32), ``sat`` (P,) saturation counts (added to). The records are
        :func:`pimrl.learners.reference.record_words`' two views (for INT32 variants one array
        twice, the reward word in Q format). Partitions run in parallel
        on ``threads`` threads (default: :func:`pimrl.parallel.threads`). Variants that
        bootstrap ``owned`` take ``v`` (S,) in the table's dtype and ``own`` (P, 2) state
        ranges; their SARSA also ``scalars`` PARAMS_WORDS long (the policy words) and, with
        the logged next action, ``w`` (S, A) action frequencies in the table's dtype. Tasklet
        mode ``rows`` takes ``lane_states`` (P, T, 2): each lane's state range, its records
        those of these states (:func:`pimrl.partition.state_lanes`); partitions of one lane
        learn as in every mode. State-owned variants' ``own`` is then the DPU's rows no other
        DPU shares."""
        if self.variant.owned and (v is None or own is None):
            raise ValueError(f"{self.variant.key} needs the broadcast values v and the owned "
                             f"state ranges own")
        if self.variant.owned and self.variant.algo == "sarsa" and (
                (w is None and not self.variant.epsilon_greedy)
                or len(scalars) <= max(P_POLICY_MAX_FX, P_POLICY_MEAN_FX)):
            raise ValueError(f"{self.variant.key} needs the policy parameter words (and, "
                             f"logged, the policy weights w)")
        if w is None:
            w = np.zeros((1, 1), q.dtype)
        w = np.ascontiguousarray(w, dtype=q.dtype)
        if v is None:
            v = np.zeros(1, q.dtype)
        if own is None:
            own = np.zeros((lanes.shape[0], 2), np.int64)
        v = np.ascontiguousarray(v, dtype=q.dtype)
        own = np.ascontiguousarray(own, dtype=np.int64)
        if self.variant.is_int and rewards is not words:
            # INT32 loops read the Q-format reward in word 2 (record_words' one array twice)
            raise ValueError(f"{self.variant.key} reads the rewards from the words: pass "
                             f"record_words' (words, words)")
        if self.variant.rows and lanes.shape[1] > 1:
            if owners is None or len(owners) != 3:
                raise ValueError(f"{self.variant.key} needs the lanes' states: owners = "
                                 f"state_lanes(...)[2:]")
            if not self.variant.owned:
                # no broadcast values: every state is the DPU's own
                own = np.zeros((lanes.shape[0], 2), np.int64)
                own[:, 1] = q.shape[1]
            owner, state_list, list_bounds = (np.ascontiguousarray(a) for a in owners)
            run_ranges(lambda lo, hi: self.rows(words, rewards, lanes, rng, q, scalars, sat, v,
                                                own, w, owner, state_list, list_bounds, lo,
                                                hi), lanes.shape[0], threads)
            return
        loop = self.one_lane if lanes.shape[1] == 1 else self.round_robin
        run_ranges(lambda lo, hi: loop(words, rewards, lanes, rng, q, scalars, sat, v, own, w, lo,
                                       hi), lanes.shape[0], threads)


_COMPILED: dict = {}


def compiled(variant: Variant) -> CompiledVariant:
    """The loops of ``variant`` (built once per process; compiled or loaded from numba's cache
    on first call)."""
    # ``unlocked`` computes the ring's table (docs/design.md): the same loops.
    key = Variant(variant.algo, variant.dtype, variant.sampling, variant.next_action,
                  variant.bootstrap, "rows" if variant.rows else "ring")
    if key not in _COMPILED:
        _COMPILED[key] = CompiledVariant(key, *_build(key))
    return _COMPILED[key]
