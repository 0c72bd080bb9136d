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
#: Rows of the int64 scratch :func:`part_lanes` takes: (LANE_WORK_ROWS, max(n, T) + 1).
LANE_WORK_ROWS = 13


@njit(nogil=True, cache=True)
def part_lanes(keys, n, tasklets, n_states, n_actions, work, hist, owner, state_list,
               list_bounds, lane_ends, dest):
    """The lanes of one part (docs/design.md, tasklet mode ``rows``) from ``keys[:n]``, the
    entries ``state * n_actions + action`` of its records in their order.

    Writes ``owner`` (S,) uint8 (set to NO_OWNER beforehand), ``state_list`` (S,) uint16,
    ``list_bounds`` (T + 1,), ``lane_ends`` (T,): where each lane's records end, counted from
    the part's start, and ``dest[:n]``: each record's position in lane order. ``work`` is
    int64 scratch (LANE_WORK_ROWS, >= max(n, T) + 1), ``hist`` int64 scratch (256,).

    The entries are sorted by a stable radix sort (8-bit digits, the record's position as
    payload), so each record knows its entry without a search; the items, generated in entry
    order, are ranked heaviest first by a stable counting sort on their record counts, which
    keeps the lower entry first among equals: the rule of :func:`state_lanes`."""
    ka, ia, kb, ib = work[0], work[1], work[2], work[3]
    rec_entry, ekey, ecount, estate = work[4], work[5], work[6], work[7]
    entry_lane, item_first, item_count = work[8], work[9], work[10]
    rank, counts = work[11], work[12]
    target = (n + tasklets - 1) // tasklets          # a lane's fair share of the records
    for i in range(n):
        ka[i] = keys[i]
        ia[i] = i
    # stable LSD radix sort of (entry, position), skipping digits all records share
    span = np.int64(n_states) * n_actions - 1
    shift = 0
    while n > 1 and (span >> shift) > 0:
        for b in range(256):
            hist[b] = 0
        for j in range(n):
            hist[(ka[j] >> shift) & 255] += 1
        if hist[(ka[0] >> shift) & 255] != n:
            acc = 0
            for b in range(256):
                c = hist[b]
                hist[b] = acc
                acc += c
            for j in range(n):
                b = (ka[j] >> shift) & 255
                pos = hist[b]
                hist[b] = pos + 1
                kb[pos] = ka[j]
                ib[pos] = ia[j]
            ka, kb = kb, ka
            ia, ib = ib, ia
        shift += 8
    # the part's (state, action) entries, their records, and each record's entry
    m = 0
    for j in range(n):
        if m == 0 or ka[j] != ekey[m - 1]:
            ekey[m] = ka[j]
            estate[m] = ka[j] // n_actions
            ecount[m] = 0
            m += 1
        ecount[m - 1] += 1
        rec_entry[ia[j]] = m - 1
    # items: a state whole, or, when it holds more than a fair share, each of its entries
    n_items = 0
    heaviest = 0
    k = 0
    while k < m:
        e = k
        tot = 0
        while e < m and estate[e] == estate[k]:
            tot += ecount[e]
            e += 1
        if tot <= target:
            item_first[n_items] = k
            item_count[n_items] = tot
            n_items += 1
        else:
            for f in range(k, e):
                item_first[n_items] = f
                item_count[n_items] = ecount[f]
                n_items += 1
        heaviest = max(heaviest, tot)
        k = e
    item_first[n_items] = m
    # heaviest first, ties in entry order: a stable counting sort by decreasing count
    for c in range(heaviest + 1):
        counts[c] = 0
    for it in range(n_items):
        counts[item_count[it]] += 1
    acc = 0
    for c in range(heaviest, -1, -1):
        t = counts[c]
        counts[c] = acc
        acc += t
    for it in range(n_items):
        c = item_count[it]
        rank[counts[c]] = it
        counts[c] += 1
    # longest processing time first: each item to the lane with the fewest records so far
    # (ties: the lower lane)
    for t in range(tasklets):
        lane_ends[t] = 0
    for r in range(n_items):
        it = rank[r]
        t = 0
        least = lane_ends[0]
        for u in range(1, tasklets):
            if lane_ends[u] < least:
                least = lane_ends[u]
                t = u
        for f in range(item_first[it], item_first[it + 1]):
            entry_lane[f] = t
        lane_ends[t] += item_count[it]
    # each state's owner; a split state's snapshot falls to its first entry's lane
    for t in range(tasklets + 1):
        list_bounds[t] = 0
    k = 0
    while k < m:
        e = k
        one = True
        while e < m and estate[e] == estate[k]:
            one = one and entry_lane[e] == entry_lane[k]
            e += 1
        owner[estate[k]] = entry_lane[k] if one else SPLIT
        list_bounds[entry_lane[k] + 1] += 1
        k = e
    for t in range(tasklets):
        list_bounds[t + 1] += list_bounds[t]
    # the lists, in state order, lane after lane (the lane ends serve as fill cursors)
    for t in range(tasklets):
        lane_ends[t] = list_bounds[t]
    k = 0
    while k < m:
        t = entry_lane[k]
        state_list[lane_ends[t]] = estate[k]
        lane_ends[t] += 1
        e = k + 1
        while e < m and estate[e] == estate[k]:
            e += 1
        k = e
    # the records, lane by lane, each lane's in their order
    for t in range(tasklets):
        lane_ends[t] = 0
    for f in range(m):
        lane_ends[entry_lane[f]] += ecount[f]
    acc = 0
    for t in range(tasklets):
        ka[t] = acc                                   # ka: each lane's fill cursor now
        acc += lane_ends[t]
        lane_ends[t] = acc
    for i in range(n):
        t = entry_lane[rec_entry[i]]
        dest[i] = ka[t]
        ka[t] += 1


@njit(nogil=True, cache=True)
def _state_lanes(states, actions, bounds, tasklets, n_states, n_actions, order, lanes, owner,
                 state_list, list_bounds, lo, hi):
    longest = 0
    for p in range(lo, hi):
        longest = max(longest, bounds[p + 1] - bounds[p])
    work = np.empty((LANE_WORK_ROWS, max(longest, tasklets) + 1), np.int64)
    hist = np.empty(256, np.int64)
    keys = np.empty(longest, np.int64)
    dest = np.empty(longest, np.int64)
    ends = np.empty(tasklets, np.int64)
    for p in range(lo, hi):
        a0 = bounds[p]
        n = bounds[p + 1] - a0
        for i in range(n):
            keys[i] = np.int64(states[a0 + i]) * n_actions + np.int64(actions[a0 + i])
        part_lanes(keys, n, tasklets, n_states, n_actions, work, hist, owner[p], state_list[p],
                   list_bounds[p], ends, dest)
        for t in range(tasklets):
            lanes[p, t, 0] = a0 if t == 0 else a0 + ends[t - 1]
            lanes[p, t, 1] = a0 + ends[t]
        for i in range(n):
            order[a0 + dest[i]] = a0 + i


def check_lanes(tasklets: int, n_states: int) -> None:
    """The limits of tasklet mode ``rows``: a tasklet number below :data:`SPLIT`, states
    listed as uint16."""
    if not 1 <= tasklets < SPLIT:
        raise ValueError(f"tasklets must lie in [1, {SPLIT - 1}]; got {tasklets}")
    if n_states > 1 << 16:
        raise ValueError(f"tasklet mode rows lists states as uint16: at most {1 << 16}; "
                         f"got {n_states}")


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
    check_lanes(tasklets, n_states)
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
