"""The arithmetic of the compiled learners (:mod:`pimrl.learners.kernels`) and of the
simulator's DPU kernel (:mod:`pimrl.rlkernel.launch`): LLVM intrinsics that keep rare paths
off the hot path, Q-format saturating arithmetic (docs/design.md's rounding), a row's max and
a flat array viewed as a table. Every helper is inlined into its caller, where the flags are
compile-time constants.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from pimrl.learners.fixedpoint import INT32_MAX, INT32_MIN


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
def f32_scalar(bits):
    """An int64 parameter word holding float32 bits, as float32."""
    b = np.empty(1, dtype=np.int32)
    b[0] = bits
    return b.view(np.float32)[0]

