"""How a DPU of the SwiftRL kernel finds its records in the simulated MRAM: whether they can
be read where they lie, whether all of them are valid (checked once, before the first update),
and how they split into the tasklets' lanes. Called once per DPU per launch, outside the hot
loop (:mod:`pimrl.rlkernel.launch`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.learners.records import fields_at, outside_table
from pimrl.learners.updates import owns_row
from pimrl.partition import SPLIT
from pimrl.pim.memory import PAGE_BYTES, PAGE_SHIFT
from pimrl.rlkernel.costs import C
from pimrl.rlkernel.layout import N_COUNTERS, RECORD_BYTES

(C_UPDATES, C_TERMINAL, C_SCANNED, C_SNAP_READS, C_DMA_R, C_DMA_RB) = (
    C[n] for n in ("updates", "terminal_updates", "scanned_entries", "snapshot_reads",
                   "dma_reads", "dma_read_bytes"))


@njit(nogil=True, cache=True)
def records_in_place(page_row, heap_off, n_records):
    """(direct, rec_base): whether a DPU's ``n_records`` records at MRAM offset ``heap_off``
    lie in pages that exist and follow one another in the page pool (as they do once the host
    has pushed them in one transfer), so the kernel can read them where they lie; and then
    record j's first word in the pool: ``rec_base + 4 j``."""
    first_page = heap_off >> PAGE_SHIFT
    direct = n_records > 0 and page_row[first_page] > 0
    if direct:
        for pg in range(first_page + 1,
                        ((heap_off + n_records * RECORD_BYTES - 1) >> PAGE_SHIFT) + 1):
            if page_row[pg] != page_row[first_page] + (pg - first_page):
                direct = False
    rec_base = ((page_row[first_page] - 1) * (PAGE_BYTES >> 2)
                + ((heap_off & (PAGE_BYTES - 1)) >> 2)) if direct else 0
    return direct, rec_base


@njit(nogil=True, cache=True)
def records_valid(pool_i32, pool_r, rec_base, rec_b, owner, n_lanes, n_records, ns_u, na_u,
                  rows, check_b):
    """(all valid, terminal records): whether every record read in place holds states and
    actions of the ``ns_u`` x ``na_u`` table (``rows``: of its lane's states, lane t's records
    being ``[rec_b[t], rec_b[t + 1])``; otherwise one lane of ``n_records``), and how many of
    them end an episode (counted once here instead of at each update)."""
    terminal_records = 0
    for t in range(n_lanes):
        lo_r = rec_b[t] if rows else 0
        hi_r = rec_b[t + 1] if rows else n_records
        for rec in range(lo_r, hi_r):
            s, a, _, s2, b, term = fields_at(pool_i32, pool_r, np.uint64(rec_base + 4 * rec))
            if outside_table(s, a, s2, b, term, ns_u, na_u, check_b) or (
                    rows and owner[s] != t and owner[s] != SPLIT):
                return False, 0
            terminal_records += term
    return True, terminal_records


@njit(nogil=True, cache=True)
def lane_split(n_records, tasklets):
    """(start, length) of each tasklet's lane: a DPU's records split evenly over its
    tasklets, the first ``n_records % tasklets`` one longer."""
    base, extra = n_records // tasklets, n_records % tasklets
    start = np.empty(tasklets, dtype=np.int64)
    length = np.empty(tasklets, dtype=np.int64)
    pos = 0
    for t in range(tasklets):
        length[t] = base + (1 if t < extra else 0)
        start[t] = pos
        pos += length[t]
    return start, length


@njit(nogil=True, cache=True)
def stepped_lanes(pool_i32, pool_r, rec_base, rec_b, owner, tasklets, block_records,
                  scanned_per_read):
    """For tasklet mode rows under SEQ with no draws, where a lane counts the same work every
    epoch: (order, counts). ``order``: the tasklets, longest lane first (ties by index);
    ``counts`` (tasklets, N_COUNTERS): each lane's counters of one epoch, as the lane-at-a-time
    loop counts them (updates, terminal ones, entries scanned reading a live row, snapshot
    reads, one DMA per block of ``block_records``). Records read in place, already checked."""
    order = np.empty(tasklets, np.int64)
    counts = np.zeros((tasklets, N_COUNTERS), np.int64)
    for t in range(tasklets):
        lo, hi = np.int64(rec_b[t]), np.int64(rec_b[t + 1])
        n = hi - lo
        pos = t                                 # insertion by length, longest first
        while pos > 0 and rec_b[order[pos - 1] + 1] - rec_b[order[pos - 1]] < n:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = t
        term_n = live_n = snap_n = 0
        for rec in range(lo, hi):
            _, _, _, s2, _, term = fields_at(pool_i32, pool_r, np.uint64(rec_base + 4 * rec))
            if term:
                term_n += 1
            elif owns_row(owner, s2, t):
                live_n += 1
            else:
                snap_n += 1
        counts[t, C_UPDATES] = n
        counts[t, C_TERMINAL] = term_n
        counts[t, C_SCANNED] = live_n * scanned_per_read
        counts[t, C_SNAP_READS] = snap_n
        counts[t, C_DMA_R] = -(-n // block_records)
        counts[t, C_DMA_RB] = n * RECORD_BYTES
    return order, counts
