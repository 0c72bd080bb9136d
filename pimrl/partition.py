"""Splitting a range of records into parts: DPUs, tasklet lanes, CPU threads.

One rule everywhere (docs/design.md): equal contiguous parts whose sizes differ by at most
one, the first ``n % parts`` parts one longer. Nothing is dropped. Tasklet mode ``rows``
splits a DPU's part by state instead (:func:`state_lanes`).
"""
from __future__ import annotations

import numpy as np
from numba import njit


def even_bounds(n: int, parts: int, start: int = 0) -> np.ndarray:
    """Offsets ``b`` (int64, length parts + 1) with part i = [b[i], b[i+1])."""
    if parts < 1:
        raise ValueError(f"number of parts must be at least 1, got {parts}")
    if n < 0:
        raise ValueError(f"number of records must be non-negative, got {n}")
    base, extra = divmod(n, parts)
    sizes = np.full(parts, base, dtype=np.int64)
    sizes[:extra] += 1
    bounds = np.empty(parts + 1, dtype=np.int64)
    bounds[0] = start
    np.cumsum(sizes, out=bounds[1:])
    bounds[1:] += start
    return bounds


def lane_bounds(part_bounds: np.ndarray, lanes_per_part: int) -> np.ndarray:
    """Split every part into ``lanes_per_part`` lanes: (n_parts, lanes, 2) start/end, int64."""
    part_bounds = np.asarray(part_bounds, dtype=np.int64)
    n_parts = part_bounds.size - 1
    sizes = np.diff(part_bounds)
    base, extra = np.divmod(sizes, lanes_per_part)
    lane_sizes = np.repeat(base[:, None], lanes_per_part, axis=1)
    lane_sizes += np.arange(lanes_per_part)[None, :] < extra[:, None]
    out = np.empty((n_parts, lanes_per_part, 2), dtype=np.int64)
    ends = part_bounds[:-1, None] + np.cumsum(lane_sizes, axis=1)
    out[:, :, 1] = ends
    out[:, :, 0] = ends - lane_sizes
    return out


# --- tasklet mode ``rows``: a DPU's records grouped by the tasklet that owns their state ---

#: ``state_owner`` of a state no tasklet writes in the launch (it has no record).
NO_OWNER = 255
#: ``state_owner`` of a state whose entries several tasklets write (a heavy state split by
#: action): every tasklet reads it from the snapshot.
SPLIT = 254


@njit(nogil=True, cache=True)
def _state_lanes(states, actions, bounds, tasklets, n_states, n_actions, order, lanes, owner,
                 state_list, list_bounds, lo, hi):
    for p in range(lo, hi):
        a0, b0 = bounds[p], bounds[p + 1]
        n = b0 - a0
        target = (n + tasklets - 1) // tasklets       # a lane's fair share of the records
        keys = np.empty(n, np.int64)                  # state * A + action of each record
        for i in range(n):
            keys[i] = np.int64(states[a0 + i]) * n_actions + np.int64(actions[a0 + i])
        srt = np.sort(keys)
        # the part's (state, action) entries and their records
        ekey = np.empty(n, np.int64)
        ecount = np.empty(n, np.int64)
        m = 0
        for i in range(n):
            if m == 0 or srt[i] != ekey[m - 1]:
                ekey[m] = srt[i]
                ecount[m] = 0
                m += 1
            ecount[m - 1] += 1
        # items: a state whole, or, when it holds more than a fair share, each of its entries
        scount = np.zeros(m, np.int64)                # records of each entry's state
        k = 0
        while k < m:
            e = k
            tot = 0
            while e < m and ekey[e] // n_actions == ekey[k] // n_actions:
                tot += ecount[e]
                e += 1
            for f in range(k, e):
                scount[f] = tot
            k = e
        item_first = np.empty(m, np.int64)            # first entry of each item
        item_last = np.empty(m, np.int64)
        item_count = np.empty(m, np.int64)
        n_items = 0
        k = 0
        while k < m:
            st = ekey[k] // n_actions
            e = k
            while e < m and ekey[e] // n_actions == st:
                e += 1
            if scount[k] <= target:
                item_first[n_items], item_last[n_items], item_count[n_items] = k, e, scount[k]
                n_items += 1
            else:
                for f in range(k, e):
                    item_first[n_items], item_last[n_items], item_count[n_items] = f, f + 1, ecount[f]
                    n_items += 1
            k = e
        # longest processing time first: each item to the lane with the fewest records so far
        # (ties: the lower lane), heaviest first (ties: the lower entry)
        rank = np.argsort(-item_count[:n_items] * (n_states * n_actions + 1)
                          - (n_states * n_actions - ekey[item_first[:n_items]]))
        load = np.zeros(tasklets, np.int64)
        entry_lane = np.empty(m, np.int64)
        for r in range(n_items):
            it = rank[r]
            t = 0
            for u in range(1, tasklets):
                if load[u] < load[t]:
                    t = u
            for f in range(item_first[it], item_last[it]):
                entry_lane[f] = t
            load[t] += item_count[it]
        # each state's owner; a split state's snapshot falls to its first entry's lane
        duty = np.full(m, -1, np.int64)
        k = 0
        while k < m:
            st = ekey[k] // n_actions
            e = k
            one = True
            while e < m and ekey[e] // n_actions == st:
                one = one and entry_lane[e] == entry_lane[k]
                e += 1
            owner[p, st] = entry_lane[k] if one else SPLIT
            duty[k] = entry_lane[k]
            k = e
        n_of = np.zeros(tasklets, np.int64)
        for k in range(m):
            if duty[k] >= 0:
                n_of[duty[k]] += 1
        list_bounds[p, 0] = 0
        for t in range(tasklets):
            list_bounds[p, t + 1] = list_bounds[p, t] + n_of[t]
        fill = list_bounds[p, :tasklets].copy()
        for k in range(m):
            if duty[k] >= 0:
                state_list[p, fill[duty[k]]] = ekey[k] // n_actions
                fill[duty[k]] += 1
        # the records, lane by lane, each lane's in their order
        pos = np.empty(tasklets, np.int64)
        acc = a0
        for t in range(tasklets):
            lanes[p, t, 0] = acc
            pos[t] = acc
            acc += load[t]
            lanes[p, t, 1] = acc
        for i in range(n):
            t = entry_lane[np.searchsorted(ekey[:m], keys[i])]
            order[pos[t]] = a0 + i
            pos[t] += 1


def state_lanes(states: np.ndarray, part_bounds: np.ndarray, tasklets: int, n_states: int,
                actions: np.ndarray | None = None, n_actions: int = 1):
    """The lanes of tasklet mode ``rows`` (docs/design.md): each entry (state, action) of a
    part (a DPU's records) written by one tasklet. The items, a state with all its entries,
    or each entry of a state holding more than a lane's fair share (``ceil(n / T)``) of the
    part's records, go heaviest first (most records; ties: the lower entry) to the lane with
    the fewest records so far (ties: the lower lane); each part's records are grouped by the
    lane that writes their entry, keeping their order within a lane. Without ``actions``,
    states are never split.

    Returns ``(order, lanes, owner, state_list, list_bounds)``: the permutation putting the
    records in lane order (``records[order]``; parts stay where they were); each lane's
    records (P, T, 2) in that order; each state's owner (P, S) uint8: the lane that writes all
    its entries, :data:`SPLIT` when several do, :data:`NO_OWNER` when the part has no record
    of it; the states each lane snapshots (its own, and the split states whose first entry
    it writes), in state order, lane after lane (P, S) uint16 (padded with zeros), and where
    each lane's list starts (P, T + 1)."""
    if not 1 <= tasklets < SPLIT:
        raise ValueError(f"tasklets must lie in [1, {SPLIT - 1}]; got {tasklets}")
    if n_states > 1 << 16:
        raise ValueError(f"tasklet mode rows lists states as uint16: at most {1 << 16}; "
                         f"got {n_states}")
    states = np.ascontiguousarray(states)
    if actions is None:
        actions, n_actions = np.zeros(len(states), np.uint8), 1
    actions = np.ascontiguousarray(actions)
    part_bounds = np.ascontiguousarray(part_bounds, dtype=np.int64)
    n_parts = len(part_bounds) - 1
    order = np.empty(len(states), np.int64)
    lanes = np.empty((n_parts, tasklets, 2), np.int64)
    owner = np.full((n_parts, n_states), NO_OWNER, np.uint8)
    state_list = np.zeros((n_parts, n_states), np.uint16)
    list_bounds = np.zeros((n_parts, tasklets + 1), np.int64)
    from pimrl.parallel import run_ranges

    run_ranges(lambda lo, hi: _state_lanes(states, actions, part_bounds, int(tasklets),
                                           int(n_states), int(n_actions), order, lanes, owner,
                                           state_list, list_bounds, lo, hi), n_parts)
    return order, lanes, owner, state_list, list_bounds
