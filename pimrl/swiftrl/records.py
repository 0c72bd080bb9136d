"""The host's buffers of a PIM training run: the records checked, partitioned over the
DPUs and laid out as one push (each DPU's partition left-aligned, grouped by lane in tasklet
mode rows, INT32 rewards in Q format), in compiled passes over the records or their mapping.

Past :data:`~pimrl.data.format.DROP_MAPPED_BYTES` a read-only dataset mapping gives its
pages back once read (the checks chunk by chunk, the layout at its end): a big run then
holds the DPUs' records and the simulated MRAM, not the file's pages as well.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.data import format as fmt
from pimrl.data.records import TRANSITION_DTYPE
from pimrl.learners import fixedpoint
from pimrl.learners.fixedpoint import fits_int32, fixed_value
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import check_record_array, record_fault, record_fault_error
from pimrl.parallel import run_ranges
from pimrl.partition import (
    LANE_WORK_ROWS, NO_OWNER, check_lanes, even_bounds, part_lanes, state_lanes,
)


def partition_records(records: np.ndarray, n_dpus: int, partition: str = "contiguous",
                      shuffle_seed: int = 0):
    """Records in DPU order and the DPUs' bounds. ``shuffle`` permutes them first (seeded)."""
    if partition == "shuffle":
        records = records[np.random.Generator(np.random.PCG64(shuffle_seed)).permutation(len(records))]
    elif partition != "contiguous":
        raise ValueError(f"unknown partitioning {partition!r}; use contiguous or shuffle")
    return records, even_bounds(len(records), n_dpus)


def rows_layout(records: np.ndarray, bounds: np.ndarray, tasklets: int, n_states: int,
                n_actions: int):
    """Tasklet mode ``rows`` (docs/design.md): the records of each DPU grouped by the tasklet
    that owns their state (:func:`pimrl.partition.state_lanes`), and each DPU's words of the
    kernel's symbols ``lane_bounds`` (D, 2 (T + 1)) int32 (its lanes' record offsets, then
    where their state lists start), ``state_owner`` (D, S) uint8 and ``lane_states`` (D, S)
    uint16: (records, {symbol: words})."""
    order, lanes, owner, state_list, list_bounds = state_lanes(
        records["state"], bounds, tasklets, n_states, records["action"], n_actions)
    words = np.empty((len(bounds) - 1, 2 * (tasklets + 1)), np.int64)
    words[:, 0] = lanes[:, 0, 0] - bounds[:-1]
    words[:, 1:tasklets + 1] = lanes[:, :, 1] - bounds[:-1, None]
    words[:, tasklets + 1:] = list_bounds
    # the byte and uint16 arrays in whole 8-byte words, as the kernel declares them
    pad = -n_states % 8, -(2 * n_states) % 8 // 2
    owner = np.pad(owner, ((0, 0), (0, pad[0])), constant_values=NO_OWNER)
    state_list = np.pad(state_list, ((0, 0), (0, pad[1])))
    return records[order], {"lane_bounds": words.astype(np.int32), "state_owner": owner,
                            "lane_states": state_list}


def dpu_record_matrix(records: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """(n_dpus, longest partition) records, each DPU's partition left-aligned, zero padded:
    the buffers of one push_xfer (one length for every DPU)."""
    sizes = np.diff(bounds)
    longest = int(sizes.max())
    if np.all(sizes == longest):
        return records.reshape(len(sizes), longest)
    idx = bounds[:-1, None] + np.arange(longest)[None, :]
    valid = idx < bounds[1:, None]
    out = np.zeros((len(sizes), longest), dtype=TRANSITION_DTYPE)
    out[valid] = records[idx[valid]]
    return out


#: Records a check of a mapping that large reads before it gives their pages back.
CHECK_CHUNK = 1 << 24


@njit(nogil=True, cache=True)
def _dpu_records(words, rewards, bounds, lo, hi, lay_out, n_states, n_actions, check_next,
                 scale, tasklets, rows, out, lane_words, owner, state_list):
    """The data preparation of DPUs ``lo..hi-1`` (records ``bounds[lo]..bounds[hi]-1``;
    ``words``/``rewards``: the 16-byte records as (n, 4) int32 and float32).

    Unless ``lay_out``: the checks, as :func:`pimrl.learners.reference.check_records` makes
    them (:func:`~pimrl.learners.reference.record_fault`), then, when ``scale`` > 0 (INT32),
    whether each reward fits Q format. Returns (field, index) of the first record outside
    the table; else (4, index) of the first reward that does not fit; else (-1, -1).

    With ``lay_out``: each DPU's records into its row of ``out`` (DPUs x longest x 4 words),
    in tasklet mode rows grouped by lane (:func:`pimrl.partition.part_lanes`, writing the
    DPU's rows of ``lane_words``, ``owner`` and ``state_list``), their rewards in Q format
    when ``scale`` > 0, the rest of the row zero: one pass, reading the records once."""
    if not lay_out:
        late_reward = -1
        for i in range(bounds[lo], bounds[hi]):
            w = words[i, 3]
            field = record_fault(words[i, 0], words[i, 1], w & 0xFF, (w >> 8) & 0xFF,
                                 (w >> 16) & 0xFF, n_states, n_actions, check_next)
            if field >= 0:
                return field, i
            if (scale > 0 and late_reward < 0
                    and not fits_int32(fixed_value(rewards[i, 2], scale))):
                late_reward = i
        return (4, late_reward) if late_reward >= 0 else (-1, -1)
    longest = out.shape[1]
    span = max(longest, tasklets) + 1 if rows else 1
    work = np.empty((LANE_WORK_ROWS, span), np.int64)
    hist = np.empty(256, np.int64)
    keys = np.empty(span, np.int64)
    dest = np.empty(span, np.int64)
    ends = np.empty(tasklets, np.int64)
    lists = np.empty(tasklets + 1, np.int64)
    for p in range(lo, hi):
        a0 = bounds[p]
        n = bounds[p + 1] - a0
        if rows:
            for i in range(n):
                keys[i] = np.int64(words[a0 + i, 0]) * n_actions + (words[a0 + i, 3] & 0xFF)
            part_lanes(keys, n, tasklets, n_states, n_actions, work, hist, owner[p],
                       state_list[p], lists, ends, dest)
            lane_words[p, 0] = 0
            for t in range(tasklets):
                lane_words[p, 1 + t] = ends[t]
            for t in range(tasklets + 1):
                lane_words[p, tasklets + 1 + t] = lists[t]
        row = out[p]
        for i in range(n):
            d = dest[i] if rows else i
            row[d, 0] = words[a0 + i, 0]
            row[d, 1] = words[a0 + i, 1]
            row[d, 2] = (np.int32(fixed_value(rewards[a0 + i, 2], scale)) if scale > 0
                         else words[a0 + i, 2])
            row[d, 3] = words[a0 + i, 3]
        for i in range(n, longest):
            for k in range(4):
                row[i, k] = 0
    return -1, -1


def _words(records: np.ndarray):
    """The records as (n, 4) int32 words and the same bytes as float32 (no copy when they
    are contiguous)."""
    words = np.ascontiguousarray(records).view(np.int32).reshape(-1, 4)
    return words, words.view(np.float32)


def _lane_arrays(n_dpus: int, tasklets: int, n_states: int, rows: bool):
    """The arrays :func:`_dpu_records` fills in tasklet mode rows: ``lane_bounds`` words,
    ``state_owner`` and ``lane_states``, as the kernel declares them (whole 8-byte words: the
    byte and uint16 arrays padded), or empty ones of the same types."""
    if not rows:
        return (np.zeros((0, 0), np.int32), np.zeros((0, 0), np.uint8),
                np.zeros((0, 0), np.uint16))
    return (np.zeros((n_dpus, 2 * (tasklets + 1)), np.int32),
            np.full((n_dpus, n_states + -n_states % 8), NO_OWNER, np.uint8),
            np.zeros((n_dpus, n_states + -(2 * n_states) % 8 // 2), np.uint16))


def check_dpu_records(records: np.ndarray, n_states: int, n_actions: int,
                      params: LearnerParams) -> None:
    """:func:`~pimrl.learners.reference.check_records`, and for INT32 whether every reward
    fits Q format (naming the first that does not, as
    :func:`~pimrl.learners.fixedpoint.to_fixed` does), in one pass over the records by the
    compiled function that lays them out."""
    check_record_array(records)
    words, rewards = _words(records)
    scale = float(1 << params.frac_bits) if params.dtype == "int32" else 0.0
    check_next = params.algo == "sarsa" and params.next_action == "logged"
    n = len(records)
    # a large mapping is read a chunk at a time, each chunk's pages given back once checked
    chunk = CHECK_CHUNK if records.nbytes > fmt.DROP_MAPPED_BYTES else max(n, 1)
    empty = np.zeros((0, 0, 4), np.int32), *_lane_arrays(0, 1, 0, False)
    faults = []
    for c0 in range(0, n, chunk):
        c1 = min(c0 + chunk, n)
        parts = even_bounds(c1 - c0, max(1, min((c1 - c0) >> 16, 64)), start=c0)
        found = {}

        def search(lo, hi):
            found[lo] = _dpu_records(words, rewards, parts, lo, hi, False, n_states,
                                     n_actions, check_next, scale, 1, False, *empty)
        run_ranges(search, len(parts) - 1)
        faults += [found[lo] for lo in sorted(found) if found[lo][0] >= 0]
        if chunk < n:
            fmt.drop_mapped_pages(records[c0:c1])
    fault = next((f for f in faults if f[0] < 4), faults[0] if faults else None)
    if fault is None:
        return
    field, i = int(fault[0]), int(fault[1])
    if field == 4:
        raise fixedpoint._does_not_fit("reward", i, np.float64(records["reward"][i]),
                                       params.frac_bits)
    raise record_fault_error(records, field, i, n_states, n_actions)


def dpu_records(records: np.ndarray, bounds: np.ndarray, tasklets: int, n_states: int,
                n_actions: int, params: LearnerParams):
    """The buffers a host pushes: ``(matrix, lane_words)``. ``matrix`` (n_dpus, longest
    partition) of records, each DPU's partition left-aligned and zero padded, grouped by
    lane in tasklet mode rows (as :func:`rows_layout`), rewards in Q format for INT32 (as
    :func:`~pimrl.learners.fixedpoint.records_with_fixed_rewards`); ``lane_words`` as
    :func:`rows_layout` gives them, or None outside tasklet mode rows. One compiled pass
    over records already checked (:func:`check_dpu_records`), writing nothing but the
    matrix: no permutation, no reordered or converted copy. Past
    :data:`~pimrl.data.format.DROP_MAPPED_BYTES`, the pages of a read-only dataset mapping
    go back to the OS once read."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    n_dpus = len(bounds) - 1
    rows = params.tasklet_mode == "rows"
    if rows:
        check_lanes(tasklets, n_states)
    words, rewards = _words(records)
    scale = float(1 << params.frac_bits) if params.dtype == "int32" else 0.0
    matrix = np.empty((n_dpus, int(np.diff(bounds).max())), TRANSITION_DTYPE)
    out = matrix.view(np.int32).reshape(n_dpus, -1, 4)
    lane_words, owner, state_list = _lane_arrays(n_dpus, tasklets, n_states, rows)
    run_ranges(lambda lo, hi: _dpu_records(words, rewards, bounds, lo, hi, True, n_states,
                                           n_actions, False, scale, int(tasklets), rows, out,
                                           lane_words, owner, state_list), n_dpus)
    if records.nbytes > fmt.DROP_MAPPED_BYTES:
        fmt.drop_mapped_pages(records)
    if not rows:
        return matrix, None
    return matrix, {"lane_bounds": lane_words, "state_owner": owner, "lane_states": state_list}
