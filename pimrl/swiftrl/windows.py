"""Data larger than MRAM: each epoch streams a DPU's partition through its MRAM in windows.

A window is a range of steps ``[i0, i1)`` of every lane of the DPU (docs/design.md, "Windows
of records"): the host pushes each lane's records of those steps, lane after lane, and
launches the kernel over them for one epoch; the next window goes on with the same epoch
(``params.epoch_continues``: tasklet mode rows keeps the snapshot the epoch's first window
took). Because every lane's i-th update lands in the window of step i, the round-robin order
of the updates is the unwindowed run's, so SEQ and STR give its tables bit for bit:

- SEQ: a lane's window is the slice ``[start + i0, start + i1)`` of its records;
- STR: the host gathers the lane's records in its stride order, and the DPU reads the
  window sequentially (the program is built for SEQ: the DMA reads are SEQ's);
- RAN: the window holds the lane's slice as SEQ does, and the lane draws its indices within
  the slice (``start + below(slice length)``), as many draws as the slice has records. Its
  table depends on the window size (one window holding the whole partition is the
  unwindowed run).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from pimrl.learners.fixedpoint import fixed_value
from pimrl.parallel import run_ranges

from pimrl.rlkernel.layout import RECORD_BYTES


@dataclass
class WindowPlan:
    """The windows of one run. ``steps``: the steps of every lane that one window holds;
    ``n_windows``: windows per epoch (ceil(longest lane / steps)); ``records``: the most
    records a window puts in one DPU's MRAM (``tasklets x steps``, or fewer); ``lane_start``
    and ``lane_len`` (n_dpus, tasklets): each lane's records in the DPU's row of the
    host's matrix; ``gather_stride``: STR's stride where the host gathers in stride order,
    else 1."""

    steps: int
    n_windows: int
    records: int
    lane_start: np.ndarray
    lane_len: np.ndarray
    gather_stride: int

    def as_dict(self) -> dict:
        return {"windows_per_epoch": self.n_windows, "window_steps": self.steps,
                "window_records": self.records,
                "window_bytes": self.records * 16,
                "dpu_sampling": "seq" if self.gather_stride > 1 else None}


def lane_geometry(sizes: np.ndarray, tasklets: int, lane_bounds: np.ndarray | None):
    """Each DPU's lanes as (start, length) arrays (n_dpus, tasklets): tasklet mode rows
    from the host's ``lane_bounds`` words (their first ``tasklets + 1`` columns), the other
    modes the even split of docs/design.md (the first ``n mod T`` lanes one longer)."""
    sizes = np.asarray(sizes, np.int64)
    if lane_bounds is not None:
        ends = lane_bounds[:, : tasklets + 1].astype(np.int64)
        return ends[:, :-1].copy(), np.diff(ends, axis=1)
    base, extra = sizes // tasklets, sizes % tasklets
    t = np.arange(tasklets)[None, :]
    length = base[:, None] + (t < extra[:, None])
    start = np.cumsum(length, axis=1) - length
    return start, length


def check_window(window_bytes: int, tasklets: int, mram_bytes: int,
                 aggregate: str | None = None) -> None:
    """``--mram-window`` refused in one line: larger than the MRAM, smaller than one record
    per tasklet, or with ``own:R`` (which keeps each DPU's records, sorted by state, in its
    MRAM)."""
    if aggregate == "own":
        raise ValueError("--mram-window: own:R keeps each DPU's records in its MRAM (windows "
                         "stream mean, weighted and sync:R)")
    if window_bytes > mram_bytes:
        raise ValueError(f"--mram-window {window_bytes} B exceeds a DPU's {mram_bytes} B MRAM")
    if window_bytes // RECORD_BYTES < tasklets:
        raise ValueError(f"--mram-window {window_bytes} B holds fewer than one record for each "
                         f"of the {tasklets} tasklets ({tasklets * RECORD_BYTES} B at least)")


def plan_windows(sizes: np.ndarray, tasklets: int, window_bytes: int | None,
                 mram_bytes: int, record_bytes: int, lane_bounds: np.ndarray | None,
                 sampling: str, stride: int) -> WindowPlan | None:
    """The windows of a run, or None when every partition fits and no window was asked for.

    ``window_bytes`` (``--mram-window``): MRAM bytes a window may take; None streams only
    where the longest partition exceeds ``mram_bytes``, with windows of all of it."""
    longest = int(np.max(sizes))
    if window_bytes is None:
        if longest * record_bytes <= mram_bytes:
            return None
        window_bytes = mram_bytes
    window_bytes = int(window_bytes)
    check_window(window_bytes, tasklets, mram_bytes)
    steps = window_bytes // record_bytes // tasklets
    start, length = lane_geometry(sizes, tasklets, lane_bounds)
    longest_lane = int(length.max())
    n_windows = max(1, -(-longest_lane // steps))
    records = int(np.minimum(length, steps).sum(axis=1).max())
    gather = int(stride) if sampling == "str" and stride > 1 else 1
    return WindowPlan(steps, n_windows, records, start, length, gather)


@njit(nogil=True, cache=True)
def _fill(words, rewards, row_base, scale, lane_start, lane_len, lo, hi, i0, i1, stride, out,
          out_bounds):
    """DPUs ``lo..hi-1``: each lane's records of steps ``[i0, i1)`` into the DPU's row of
    ``out`` (lane after lane, the rest zero), and the lanes' offsets into ``out_bounds``.
    The records are ``words`` (n, 4) int32 (``rewards``: the same bytes as float32), DPU
    ``d``'s from ``row_base[d]``; ``scale`` > 0 writes the rewards in Q format (INT32)."""
    tasklets = lane_start.shape[1]
    width = out.shape[1]
    for d in range(lo, hi):
        pos = 0
        out_bounds[d, 0] = 0
        for t in range(tasklets):
            n = lane_len[d, t]
            s0 = row_base[d] + lane_start[d, t]
            c = min(max(n - i0, 0), i1 - i0)
            o = 0
            j = i0
            if c > 0 and stride > 1:
                # step i0's place in the stride walk: offset o holds ceil((n - o) / k) steps
                before = 0
                while before + (n - o + stride - 1) // stride <= i0:
                    before += (n - o + stride - 1) // stride
                    o += 1
                j = o + (i0 - before) * stride
            for m in range(c):
                src = s0 + j
                out[d, pos + m, 0] = words[src, 0]
                out[d, pos + m, 1] = words[src, 1]
                out[d, pos + m, 2] = (np.int32(fixed_value(rewards[src, 2], scale)) if scale > 0
                                      else words[src, 2])
                out[d, pos + m, 3] = words[src, 3]
                if stride > 1:
                    j += stride
                    if j >= n:
                        o += 1
                        j = o
                else:
                    j += 1
            pos += c
            out_bounds[d, t + 1] = pos
        for m in range(pos, width):
            for k in range(4):
                out[d, m, k] = 0


def fill_window(plan: WindowPlan, records: np.ndarray, row_base: np.ndarray, w: int,
                out: np.ndarray, scale: float = 0.0):
    """Window ``w`` of every DPU into ``out`` (n_dpus, plan.records) records, reused window
    after window: ``(out, lane_offsets)``, each lane's offsets in its row (n_dpus, tasklets
    + 1) int64. ``records``: the DPUs' records, DPU ``d``'s lanes from ``row_base[d]`` (the
    rows of the host's matrix, or the partitions of the dataset itself, its mapping read
    in place); ``scale`` > 0 converts the rewards to Q format (INT32) on the way."""
    n = out.shape[0]
    i0 = w * plan.steps
    i1 = i0 + plan.steps
    bounds = np.empty((n, plan.lane_start.shape[1] + 1), np.int64)
    words = np.ascontiguousarray(records).view(np.int32).reshape(-1, 4)
    rewards = words.view(np.float32)
    base = np.ascontiguousarray(row_base, dtype=np.int64)
    dest = out.view(np.int32).reshape(n, -1, 4)
    run_ranges(lambda lo, hi: _fill(words, rewards, base, scale, plan.lane_start,
                                    plan.lane_len, lo, hi, i0, i1, plan.gather_stride, dest,
                                    bounds), n)
    return out, bounds


@njit(nogil=True, cache=True)
def _finish_read(out, bounds, scale, lo, hi):
    """DPUs ``lo..hi-1`` of a window read from the file: rewards to Q format (``scale`` >
    0) and the rest of each row zero, as :func:`_fill` leaves it."""
    width = out.shape[1]
    for d in range(lo, hi):
        n = bounds[d, -1]
        if scale > 0:
            rewards = out[d].view(np.float32)
            for m in range(n):
                out[d, m, 2] = np.int32(fixed_value(rewards[m, 2], scale))
        for m in range(n, width):
            for k in range(4):
                out[d, m, k] = 0


class FileSlices:
    """Windows of SEQ and RAN read straight from a dataset file with ``pread``, a lane slice
    at a time, instead of through its mapping: a fault in a mapping reads the device's
    read-around (8 MiB here) and maps neighbouring pages into the process, so a window of
    thousands of lanes, each a slice of its own, would read and hold the file many times
    over. The reads ask the OS for no read-ahead (``POSIX_FADV_RANDOM``): each reads what a
    window holds of a lane. ``IO_THREADS`` threads read at once (a read waits on the device,
    not on Python): one at a time, 64 KiB reads ran at 70 MB/s here."""

    IO_THREADS = 16

    def __init__(self, path, offset: int):
        import os

        self.path, self.offset = str(path), int(offset)
        self.fd = os.open(self.path, os.O_RDONLY)
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)
        self._pool = None

    def read(self, plan: WindowPlan, row_base: np.ndarray, w: int, out: np.ndarray,
             scale: float):
        """Window ``w`` into ``out`` as :func:`fill_window` lays it out: (out, lane offsets)."""
        import os

        i0 = w * plan.steps
        count = np.clip(plan.lane_len - i0, 0, plan.steps)
        bounds = np.zeros((count.shape[0], count.shape[1] + 1), np.int64)
        np.cumsum(count, axis=1, out=bounds[:, 1:])
        src = (np.asarray(row_base, np.int64)[:, None] + plan.lane_start + i0) * RECORD_BYTES
        dest = out.view(np.uint8).reshape(len(out), -1)
        rows, lanes = np.nonzero(count)
        jobs = list(zip(rows.tolist(), src[rows, lanes].tolist(), count[rows, lanes].tolist(),
                        bounds[rows, lanes].tolist()))

        def read(lo, hi):
            for d, at, c, pos in jobs[lo:hi]:
                view = dest[d, RECORD_BYTES * pos: RECORD_BYTES * (pos + c)]
                if os.preadv(self.fd, [view], self.offset + at) != view.nbytes:
                    raise OSError(f"{self.path}: short read of {view.nbytes} B at byte "
                                  f"{self.offset + at} (the file changed while training?)")
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.IO_THREADS, thread_name_prefix="pimrl-read")
        cuts = np.linspace(0, len(jobs), self.IO_THREADS + 1).astype(int)
        for f in [self._pool.submit(read, a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]:
            f.result()
        words = out.view(np.int32).reshape(len(out), -1, 4)
        run_ranges(lambda lo, hi: _finish_read(words, bounds, scale, lo, hi), len(out))
        return out, bounds

    def close(self) -> None:
        import os

        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class WindowStream:
    """Pushes a run's windows to its DPUs (a :class:`~pimrl.dpuset.DpuPackageSet` or
    ``SystemSetDpus``): ``push(w)`` lays out window ``w`` and pushes, as CPU-DPU transfers,
    its records to the MRAM heap, in tasklet mode rows the lanes' offsets (``lane_bounds``,
    the state lists kept), and ``params`` for one epoch of the window's records.

    The records come from ``records`` (DPU ``d``'s from ``row_base[d]``): the host's matrix
    (tasklet mode rows: lane-grouped, rewards converted), or, in the other modes with
    contiguous partitions, the dataset itself, read in place (``scale`` > 0 converts INT32
    rewards). A dataset file's mapping past ``DROP_MAPPED_BYTES`` gives its pages back after
    each window (:func:`~pimrl.data.mapping.drop_mapped_pages`): the host holds a window of it."""

    def __init__(self, plan: WindowPlan, records: np.ndarray, row_base: np.ndarray,
                 lane_words: dict | None, dpus, params: np.ndarray, scale: float = 0.0):
        from pimrl.learners.variants import P_EPOCH_CONTINUES, P_EPOCHS, P_N_RECORDS

        self.plan, self.records, self.dpus, self.params = plan, records, dpus, params
        self.row_base, self.scale = row_base, scale
        self.lane_bounds = None if lane_words is None else lane_words["lane_bounds"].copy()
        self._fields = P_EPOCH_CONTINUES, P_EPOCHS, P_N_RECORDS
        # one buffer; each window is laid out in its first n_dpus x width records (the last
        # window is narrower: pushed whole, with no copy)
        self._flat = np.empty(len(row_base) * plan.records, records.dtype)
        self.file = None
        if lane_words is None and plan.gather_stride == 1:
            from pimrl.data.format import DROP_MAPPED_BYTES
            from pimrl.data.mapping import mapped_file

            where = mapped_file(records) if records.nbytes > DROP_MAPPED_BYTES else None
            if where is not None:       # a large file's mapping: read with pread instead
                self.file = FileSlices(*where)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def push(self, w: int) -> None:
        from pimrl.data.format import DROP_MAPPED_BYTES
        from pimrl.data.mapping import drop_mapped_pages
        from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME

        cont, epochs, n_records = self._fields
        plan, n = self.plan, len(self.row_base)
        width = max(1, int(np.clip(plan.lane_len - w * plan.steps, 0, plan.steps)
                           .sum(axis=1).max()))
        out = self._flat[: n * width].reshape(n, width)
        if self.file is not None:
            records, bounds = self.file.read(plan, self.row_base, w, out, self.scale)
        else:
            records, bounds = fill_window(plan, self.records, self.row_base, w, out, self.scale)
            if self.records.nbytes > DROP_MAPPED_BYTES:
                drop_mapped_pages(self.records)
        self.params[:, epochs] = 1
        self.params[:, n_records] = bounds[:, -1]
        self.params[:, cont] = int(w > 0)
        with self.dpus.phase("cpu_dpu"):
            self.dpus.push_rows(DPU_MRAM_HEAP_POINTER_NAME, records.view(np.uint8).reshape(n, -1))
            if self.lane_bounds is not None:
                self.lane_bounds[:, : bounds.shape[1]] = bounds
                self.dpus.push_rows("lane_bounds", self.lane_bounds.view(np.uint8).reshape(n, -1))
            self.dpus.push_rows("params", self.params.view(np.uint8).reshape(n, -1))
