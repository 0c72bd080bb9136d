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

@njit(nogil=True, cache=True)
def _state_lanes(states, bounds, tasklets, ranges, order, lanes, lane_states, lo, hi):
    for p in range(lo, hi):
        a, b = bounds[p], bounds[p + 1]
        n = b - a
        r_lo, r_hi = ranges[p, 0], ranges[p, 1]
        cuts = np.empty(tasklets + 1, np.int64)
        cuts[0], cuts[tasklets] = r_lo, r_hi
        if n > 0:
            srt = np.sort(states[a:b])
            for k in range(1, tasklets):
                cuts[k] = min(max(np.int64(srt[(k * n) // tasklets]), r_lo), r_hi)
        else:
            for k in range(1, tasklets):
                cuts[k] = r_hi
        counts = np.zeros(tasklets, np.int64)
        lane_of = np.empty(n, np.int64)
        for i in range(n):
            s = states[a + i]
            t = tasklets - 1
            while t > 0 and cuts[t] > s:       # the last lane whose range starts at or below s
                t -= 1
            lane_of[i] = t
            counts[t] += 1
        pos = np.empty(tasklets, np.int64)
        acc = a
        for t in range(tasklets):
            lanes[p, t, 0] = acc
            pos[t] = acc
            acc += counts[t]
            lanes[p, t, 1] = acc
            lane_states[p, t, 0] = cuts[t]
            lane_states[p, t, 1] = cuts[t + 1]
        for i in range(n):
            t = lane_of[i]
            order[pos[t]] = a + i
            pos[t] += 1


def state_lanes(states: np.ndarray, part_bounds: np.ndarray, tasklets: int,
                ranges: np.ndarray | None = None, n_states: int | None = None):
    """The lanes of tasklet mode ``rows`` (docs/design.md): each part's state range (``ranges``
    (P, 2); default [0, n_states) for every part) cut into ``tasklets`` contiguous ranges
    balanced by the part's records (cut ``k`` at the state of the part's ``floor(k n / T)``-th
    record in state order), and each part's records grouped by the range of their state,
    keeping their order within a group.

    Returns ``(order, lanes, lane_states)``: the permutation putting the records in lane order
    (``records[order]``; parts stay where they were), each lane's records (P, T, 2) in that
    order and each lane's states (P, T, 2), int64."""
    states = np.ascontiguousarray(states)
    part_bounds = np.ascontiguousarray(part_bounds, dtype=np.int64)
    n_parts = len(part_bounds) - 1
    if ranges is None:
        if n_states is None:
            raise ValueError("state_lanes needs the parts' state ranges or n_states")
        ranges = np.zeros((n_parts, 2), np.int64)
        ranges[:, 1] = n_states
    ranges = np.ascontiguousarray(ranges, dtype=np.int64)
    order = np.empty(len(states), np.int64)
    lanes = np.empty((n_parts, tasklets, 2), np.int64)
    lane_states = np.empty((n_parts, tasklets, 2), np.int64)
    from pimrl.parallel import run_ranges

    run_ranges(lambda lo, hi: _state_lanes(states, part_bounds, int(tasklets), ranges, order,
                                           lanes, lane_states, lo, hi), n_parts)
    return order, lanes, lane_states
