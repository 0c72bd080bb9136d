"""Compiled learning loops, one per variant (:mod:`pimrl.learners.variants`).

:func:`compiled` returns the loops of one :class:`~pimrl.learners.variants.Variant`, compiled
with the variant's choices (algorithm, dtype, sampling, SARSA's next action) as compile-time
constants: the hot loop has no per-update dispatch, a lane's cursor and random stream live
in registers while it runs alone, and the Q-table is the only memory it writes. Each loop is
a numba closure over those constants; numba caches closures by the values they capture, so a
variant compiles once per machine and later runs load it from the cache.

The arithmetic and the update order are docs/design.md's: the loops are bit-identical to the
pure-Python oracle (``oracle.py``) and to the simulator's DPU kernel, which builds on the same
update primitives (:func:`update_f32`, :func:`update_i32`, :func:`next_index`). They live in
:mod:`pimrl.learners.arith` (intrinsics, Q-format arithmetic, row max),
:mod:`pimrl.learners.updates` (the update rules) and :mod:`pimrl.learners.records` (record
fields, epoch order); this module re-exports them under their old names. numba's cache checks
only the file that defines a kernel: after editing one of those, run ``make clean-cache``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from pimrl.learners.arith import (
    add_sat32, add_with_overflow, as_table, cold, f32_scalar, fx_mul, row_max, row_value, sat32,
    sub_sat32, sub_with_overflow, unlikely,
)
from pimrl.learners.records import RAN, SEQ, STR, fields_at, next_index, outside_table
from pimrl.learners.updates import (
    bootstrap, owned_value, owner_output, owns_row, policy_value_f32, policy_value_i32, rows_source,
    snapshot_value, step_f32, step_i32, take_snapshot, target_i32, update_f32, update_f32_owned,
    update_i32, update_i32_owned, update_rows_f32, update_rows_i32,
)
from pimrl.learners.variants import (
    P_ALPHA32, P_ALPHA_FX, P_EPOCHS, P_EPS, P_FRAC, P_GAMMA32, P_GAMMA_FX, P_POLICY_MAX32,
    P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX, P_STRIDE, Variant,
)
from pimrl.parallel import run_ranges
from pimrl.rng import below, xorshift32

__all__ = [
    # pimrl.learners.arith
    "add_sat32", "add_with_overflow", "as_table", "cold", "f32_scalar", "fx_mul", "row_max",
    "row_value", "sat32", "sub_sat32", "sub_with_overflow", "unlikely",
    # pimrl.learners.records
    "RAN", "SEQ", "STR", "fields_at", "next_index", "outside_table",
    # pimrl.learners.updates
    "bootstrap", "owned_value", "owner_output", "owns_row", "policy_value_f32", "policy_value_i32",
    "rows_source", "snapshot_value", "step_f32", "step_i32", "take_snapshot", "target_i32",
    "update_f32", "update_f32_owned", "update_i32", "update_i32_owned", "update_rows_f32",
    "update_rows_i32",
    # this module
    "CompiledVariant", "compiled", "learning_rates_f32", "learning_rates_i32", "rates_f32",
    "rates_i32", "record_update_f32", "record_update_i32", "record_update_owned",
]


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
