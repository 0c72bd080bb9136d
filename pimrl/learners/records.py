"""The records as the compiled loops read them (docs/design.md): a record's fields from the
records' flat word views, the check that they fit the table, and a lane's epoch order
(sampling ``seq``, ``str`` or ``ran``, codes :data:`SEQ`, :data:`STR`, :data:`RAN`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.rng import below, xorshift32

SEQ, STR, RAN = 0, 1, 2


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
