"""A deliberately plain, slow re-statement of docs/design.md in pure Python.

Used only by the tests, on small inputs, to check the compiled reference learner: it shares
no code with it (no numba, no shared update function), only the written contract.
"""
from __future__ import annotations

import numpy as np

from pimrl.rng import lane_seed

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _xs(x):
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    return x


class _Sat:
    def __init__(self):
        self.count = 0

    def __call__(self, v):
        if v > INT32_MAX:
            self.count += 1
            return INT32_MAX
        if v < INT32_MIN:
            self.count += 1
            return INT32_MIN
        return v


def lane_orders(lanes, sampling, stride, lane):
    """One epoch's SEQ or STR index sequence of one lane (RAN draws lazily, in the loop)."""
    start, end = lanes[lane]
    n = end - start
    if sampling == "seq":
        return list(range(start, end))
    if sampling == "str":
        return [start + o + stride * i for o in range(stride) for i in range(n) if o + stride * i < n]
    raise AssertionError("RAN draws lazily")


def oracle_learn(records, n_states, n_actions, params, lanes, lane_ids, owner=None):
    """Return (Q as float32/int32 array, saturation count) for one partition. Tasklet mode
    ``rows`` takes each state's owning lane (``owner``; 255: no lane writes it, 254: several
    do); a lane reads live only the states it owns or no lane writes."""
    F = params.frac_bits
    fx = lambda v: int(np.rint(np.float64(v) * (1 << F)))
    is_int = params.dtype == "int32"
    sat = _Sat()
    q = [[0] * n_actions for _ in range(n_states)] if is_int else \
        [[np.float32(0)] * n_actions for _ in range(n_states)]
    rng = [lane_seed(params.seed, int(i)) for i in lane_ids]
    thr = min(int(params.epsilon * 4294967296.0), 4294967296)
    alpha = fx(params.alpha) if is_int else np.float32(params.alpha)
    gamma = fx(params.gamma) if is_int else np.float32(params.gamma)

    def mul(a, b):
        return sat((a * b + (1 << (F - 1))) >> F)

    def argmax(row):
        best = 0
        for k in range(1, len(row)):
            if row[k] > row[best]:
                best = k
        return best

    rows = getattr(params, "tasklet_mode", "ring") == "rows" and len(lanes) > 1
    snap = None          # rows: the rows of every state as the epoch began

    def update(j, t):
        rec = records[j]
        s, a, s2 = int(rec["state"]), int(rec["action"]), int(rec["next_state"])
        r = fx(rec["reward"]) if is_int else np.float32(rec["reward"])
        if rec["terminated"]:
            target = r
        else:
            # rows: a tasklet reads its own states' rows live, its siblings' as they were
            # when the epoch began
            own = not rows or owner[s2] in (t, 255)
            row = q[s2] if own else snap[s2]
            if params.algo == "q":
                m = row[argmax(row)]
            else:
                b = int(rec["next_action"])
                if params.next_action == "epsilon-greedy":
                    rng[t] = _xs(rng[t])
                    if rng[t] < thr:
                        rng[t] = _xs(rng[t])
                        b = (rng[t] * n_actions) >> 32
                    else:
                        b = argmax(row)
                m = row[b]
            target = sat(r + mul(gamma, m)) if is_int else np.float32(r + np.float32(gamma * m))
        cur = q[s][a]
        if is_int:
            td = sat(target - cur)
            q[s][a] = sat(cur + mul(alpha, td))
        else:
            td = np.float32(target - cur)
            q[s][a] = np.float32(cur + np.float32(alpha * td))

    T = len(lanes)

    def step(t, i, orders):
        s0, e0 = lanes[t]
        if params.sampling == "ran":
            rng[t] = _xs(rng[t])
            update(s0 + ((rng[t] * (e0 - s0)) >> 32), t)
        else:
            update(orders[t][i], t)

    for _ in range(params.epochs):
        orders = [None if params.sampling == "ran" else lane_orders(lanes, params.sampling, params.stride, t)
                  for t in range(T)]
        if rows:
            # every lane to the end of the epoch, one after the other: the lanes write
            # disjoint rows and read the others' from the snapshot, so any order is the same
            snap = [list(row) for row in q]
            for t in range(T):
                for i in range(lanes[t][1] - lanes[t][0]):
                    step(t, i, orders)
            continue
        longest = max(e - s for s, e in lanes)
        for i in range(longest):
            for t in range(T):
                if i < lanes[t][1] - lanes[t][0]:
                    step(t, i, orders)
    return np.array(q, dtype=np.int32 if is_int else np.float32), sat.count
