"""Running a compiled loop over independent items (partitions, DPUs) on several threads.

The loops are numba functions compiled with ``nogil=True`` that take a contiguous range of
items; :func:`run_ranges` splits the items into one contiguous range per thread and runs them
on Python threads, which run truly in parallel while inside the compiled code. (A numba
``prange`` would do the same work, but compiling a parallel function costs about half as much
again per variant, and every variant is compiled on its own.) Items never share memory, so
the results do not depend on the number of threads. The calling thread waits in short steps,
so Ctrl-C reaches it while the workers run.
"""
from __future__ import annotations

import threading

import numba
import numpy as np


def threads() -> int:
    """Threads a compiled loop may use here: numba's setting for this thread
    (``numba.set_num_threads``; default ``NUMBA_NUM_THREADS``, the cores)."""
    return int(numba.get_num_threads())


def run_ranges(fn, n_items: int, n_threads: int | None = None) -> None:
    """Call ``fn(lo, hi)`` on contiguous ranges covering ``[0, n_items)``, one per thread.

    The workers are daemon threads: on Ctrl-C the calling thread raises at once and the
    process can exit without waiting for compiled loops that cannot be interrupted."""
    n_threads = threads() if n_threads is None else int(n_threads)
    n_threads = max(1, min(n_threads, n_items))
    if n_threads == 1:
        if n_items:
            fn(0, n_items)
        return
    base, extra = divmod(n_items, n_threads)
    bounds = [0]
    for k in range(n_threads):
        bounds.append(bounds[-1] + base + (1 if k < extra else 0))
    errors = []

    def work(lo, hi):
        try:
            fn(lo, hi)
        except BaseException as exc:          # re-raised in the calling thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(bounds[k], bounds[k + 1]), daemon=True)
               for k in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        while w.is_alive():
            w.join(0.2)
    if errors:
        raise errors[0]


#: Bytes below which a copy runs on the calling thread alone (a thread costs ~0.1 ms).
SPLIT_BYTES = 4 << 20


def copy_rows(dst, src) -> None:
    """``dst[...] = src`` for arrays of one shape, split by rows over the threads: numpy
    lets go of the GIL while it copies, and on this project's 2-core machine two streams of
    rows move 1.3-1.5x as fast as one. ``src`` may be a scalar (a fill). Small copies run on
    the calling thread."""
    if np.ndim(src) == 0:
        part = lambda lo, hi: np.copyto(dst[lo:hi], src)      # noqa: E731
    else:
        part = lambda lo, hi: np.copyto(dst[lo:hi], src[lo:hi])  # noqa: E731
    run_ranges(part, len(dst) if dst.ndim else 0, 1 if dst.nbytes < SPLIT_BYTES else None)


def first_found(fn, n_items: int, missing, min_items: int = 1 << 17):
    """The answer of ``fn(lo, hi)`` (a search over items lo..hi-1, ``missing`` when nothing
    is found there) for the first range holding one, or ``missing``; the ranges are searched
    on the threads at once: the same answer as ``fn(0, n_items)`` when it returns the first
    item found. Fewer than ``min_items`` items are searched on the calling thread."""
    found = {}

    def search(lo, hi):
        found[lo] = fn(lo, hi)
    run_ranges(search, n_items, 1 if n_items < min_items else None)
    for lo in sorted(found):
        if found[lo] != missing:
            return found[lo]
    return missing
