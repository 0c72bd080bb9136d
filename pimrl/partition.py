"""Splitting a range of records into parts: DPUs, tasklet lanes, CPU threads.

One rule everywhere (docs/design.md): equal contiguous parts whose sizes differ by at most
one, the first ``n % parts`` parts one longer. Nothing is dropped.
"""
from __future__ import annotations

import numpy as np


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
