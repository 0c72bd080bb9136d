"""Per-DPU memories. MRAM is paged and lazy: 2,560 banks of 64 MiB cost only the pages
written. WRAM is one dense array whose untouched pages the OS never backs (:func:`lazy_zeros`).
"""
from __future__ import annotations

import mmap
import platform
import sys

import numpy as np
from numba import njit

from pimrl.parallel import copy_rows

PAGE_SHIFT = 12                      # 4 KiB MRAM pages
PAGE_BYTES = 1 << PAGE_SHIFT


def lazy_zeros(shape, dtype) -> np.ndarray:
    """A zeroed array whose memory the OS backs page by page as it is written.

    Anonymous memory, advised against transparent huge pages: with them, writing one byte
    backs 2 MiB, so touching the first bytes of every DPU's 64 KiB WRAM row would back the
    whole array (10,000 DPUs: 650 MB instead of 40 MB). Shared, not private: a private page
    read before it is written costs two faults (the zero page, then a copy), and the
    kernels read much of WRAM first (a cold 2,000-DPU fit: 40 % more faults, 30 ms more)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype=dtype)
    buf = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:              # a kernel without THP: nothing to advise
            pass
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


#: MAP_NORESERVE (Python's mmap module names it from 3.13 on): Linux's generic value on the
#: architectures that use it; elsewhere 0, and the pool grows instead.
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform == "linux" and
                         platform.machine() in ("x86_64", "aarch64", "riscv64") else 0)


def reserved_zeros(n_rows: int, row_bytes: int):
    """(n_rows, row_bytes) zeroed uint8 rows in address space reserved without committing
    memory (private anonymous memory, ``MAP_NORESERVE``): the OS backs a page when it is
    first written, so a pool sized for every page that could ever be used costs only the
    pages that are, and never moves or grows by copying. Advised against transparent huge
    pages, measured: a cold push of 1 GB took 1.1-1.6 s with them, 0.3-1.0 s without (on
    this project's VM, where a fresh huge page often waits for compaction); 16 MB, the same
    either way. None where the OS refuses such a reservation (strict overcommit, an
    address-space limit, no ``MAP_NORESERVE``)."""
    nbytes = int(n_rows) * int(row_bytes)
    if nbytes == 0 or not _MAP_NORESERVE or not hasattr(mmap, "MAP_PRIVATE"):
        return None
    try:
        buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE)
    except (OSError, OverflowError, ValueError):
        return None
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:              # a kernel without THP: nothing to advise
            pass
    return np.frombuffer(buf, dtype=np.uint8).reshape(n_rows, row_bytes)


# The memories of the last freed allocation of each size, for the next one of that size: a
# study allocates thousands of DPUs again and again, and fresh memory costs the OS a page
# fault per 4 KiB on first touch (about a fifth of a 2,000-DPU fit). One spare per size, the
# oldest let go beyond SPARE_BYTES in all (a study's five sizes keep about 350 MB).
SPARE_BYTES = 1 << 30
_SPARES: dict = {}                   # key -> (memory, its bytes), oldest first


def spare(key):
    """The kept memory for ``key`` (removed from the spares), or None."""
    kept = _SPARES.pop(key, None)
    return None if kept is None else kept[0]


def keep_spare(key, memory, nbytes: int) -> None:
    """Keep ``memory`` (``nbytes`` backed) for the next allocation asking for ``key``."""
    _SPARES.pop(key, None)
    _SPARES[key] = (memory, int(nbytes))
    while sum(b for _, b in _SPARES.values()) > SPARE_BYTES and len(_SPARES) > 1:
        del _SPARES[next(iter(_SPARES))]


def reused_zeros(shape, dtype) -> np.ndarray:
    """:func:`lazy_zeros`, or a kept array of that shape zeroed again (memset, no faults; only
    the columns its last user may have written)."""
    key = ("array", tuple(shape), np.dtype(dtype).str)
    kept = spare(key)
    if kept is None:
        return lazy_zeros(shape, dtype)
    array, written = kept
    copy_rows(array[..., :written], 0)
    return array


def release_array(array: np.ndarray, written: int | None = None) -> None:
    """Hand ``array`` (from :func:`reused_zeros`) back for reuse. ``written``: its columns
    (last axis) ``written`` and beyond are still all zero (None: any may not be)."""
    cols = array.shape[-1] if array.ndim else 0
    written = cols if written is None else min(max(int(written), 0), cols)
    keep_spare(("array", array.shape, array.dtype.str), (array, written), array.nbytes)


class PagedMram:
    """The MRAM banks of ``n_dpus`` DPUs, ``bank_bytes`` each, allocated page by page.

    ``page_table[d, p]`` is 0 for a page never written (reads as zeros) or ``1 + i`` for
    row ``i`` of ``pool``. Both arrays are handed to compiled kernels as they are.

    The pool has a row for every page of every bank, reserved, not committed
    (:func:`reserved_zeros`): memory is spent on the pages written and nothing else, so a
    4 GB push costs 4 GB (plus 4 bytes of page table per page), and the pool never moves.
    Where the OS refuses the reservation the pool starts small and grows by doubling, a copy
    that briefly holds the old rows beside the new ones.
    """

    def __init__(self, n_dpus: int, bank_bytes: int):
        if bank_bytes % PAGE_BYTES:
            raise ValueError(f"MRAM size {bank_bytes} is not a multiple of {PAGE_BYTES}")
        self.n_dpus = n_dpus
        self.bank_bytes = bank_bytes
        # The OS backs only the pages of the table that get touched.
        self.page_table = lazy_zeros((n_dpus, bank_bytes >> PAGE_SHIFT), np.int32)
        pool = reserved_zeros(n_dpus * (bank_bytes >> PAGE_SHIFT), PAGE_BYTES)
        self.pool = np.zeros((16, PAGE_BYTES), dtype=np.uint8) if pool is None else pool
        self.n_pages = 0
        self.backed_pages = 0                  # pool rows ever given out: the memory it holds
        # Pool rows below this may hold an earlier allocation's bytes: a page given one is
        # cleared where its first write does not cover it (rows above it are zero).
        self.stale_rows = 0
        self._mapped_columns: set = set()     # (first, last) page ranges ever mapped

    @classmethod
    def reused(cls, n_dpus: int, bank_bytes: int) -> "PagedMram":
        """A PagedMram with no page written: the kept one of this size, emptied (its page
        pool kept, grown and backed), or a new one."""
        kept = spare(("mram", n_dpus, bank_bytes))
        if kept is None:
            return cls(n_dpus, bank_bytes)
        for first, last in kept._mapped_columns:
            kept.page_table[:, first:last + 1] = 0
        kept.stale_rows = max(kept.stale_rows, kept.n_pages)   # new pages must read as zeros
        kept.n_pages = 0
        kept._mapped_columns = set()
        return kept

    def release(self) -> None:
        """Hand this memory back for the next allocation of its size."""
        keep_spare(("mram", self.n_dpus, self.bank_bytes), self,
                   self.backed_pages * PAGE_BYTES)

    @property
    def bytes_allocated(self) -> int:
        return self.n_pages * PAGE_BYTES

    def _map(self, dpus: np.ndarray, first_page: int, last_page: int):
        """Page ids (pool rows + 1) of pages [first, last] of ``dpus``, allocating missing
        ones, and where the pages are new ones on stale pool rows (to clear)."""
        block = self.page_table[dpus, first_page:last_page + 1]
        missing = block == 0
        n_new = int(missing.sum())
        stale = None
        if n_new:
            need = self.n_pages + n_new
            if need > len(self.pool):
                grown = np.zeros((max(need, 2 * len(self.pool)), PAGE_BYTES), dtype=np.uint8)
                grown[: self.n_pages] = self.pool[: self.n_pages]
                self.pool = grown
                self.stale_rows = min(self.stale_rows, self.n_pages)
            block[missing] = np.arange(self.n_pages + 1, need + 1, dtype=np.int32)
            if self.n_pages < self.stale_rows:
                stale = missing & (block <= self.stale_rows)
            self.n_pages = need
            self.backed_pages = max(self.backed_pages, need)
            self.page_table[dpus, first_page:last_page + 1] = block
            self._mapped_columns.add((first_page, last_page))
        return block, stale

    def write(self, dpus, offset: int, data: np.ndarray) -> None:
        """Write ``data`` ((len(dpus), n) bytes, or (n,) for the same bytes to all) at ``offset``."""
        dpus = np.asarray(dpus, dtype=np.int64)
        data = np.asarray(data, dtype=np.uint8)
        n = data.shape[-1]
        if n == 0 or len(dpus) == 0:
            return
        first, last = offset >> PAGE_SHIFT, (offset + n - 1) >> PAGE_SHIFT
        pages, stale = self._map(dpus, first, last)
        # Pages given out in one go, DPU after DPU (a push to fresh memory), are one run of
        # pool rows: the rows then take the data in one strided copy.
        run = data.ndim == 2 and bool(np.all(np.diff(pages.ravel()) == 1))
        pos = 0
        for k in range(last - first + 1):
            lo = (offset + pos) & (PAGE_BYTES - 1)
            chunk = min(n - pos, PAGE_BYTES - lo)
            if stale is not None and (lo or lo + chunk < PAGE_BYTES) and stale[:, k].any():
                rows = pages[stale[:, k], k] - 1         # what this write leaves must be zero
                self.pool[rows, :lo] = 0
                self.pool[rows, lo + chunk:] = 0
            if not run:
                src = data[..., pos:pos + chunk]
                self.pool[pages[:, k] - 1, lo:lo + chunk] = src if src.ndim == 2 else src[None, :]
            pos += chunk
        if run:
            p0, cols = int(pages[0, 0]) - 1, last - first + 1
            span = self.pool[p0:p0 + pages.size].reshape(len(dpus), cols * PAGE_BYTES)
            start = offset & (PAGE_BYTES - 1)
            copy_rows(span[:, start:start + n], data)

    def read(self, dpus, offset: int, n: int, out=None) -> np.ndarray:
        """Bytes [offset, offset + n) of every DPU in ``dpus``: (len(dpus), n) uint8, into
        ``out`` when given."""
        dpus = np.asarray(dpus, dtype=np.int64)
        if out is None:
            out = np.zeros((len(dpus), n), dtype=np.uint8)
        else:
            out[...] = 0                    # pages never written read as zeros
        if n == 0 or len(dpus) == 0:
            return out
        first, last = offset >> PAGE_SHIFT, (offset + n - 1) >> PAGE_SHIFT
        pages = self.page_table[dpus, first:last + 1]
        pos = 0
        for k in range(last - first + 1):
            lo = (offset + pos) & (PAGE_BYTES - 1)
            chunk = min(n - pos, PAGE_BYTES - lo)
            mapped = pages[:, k] > 0
            if mapped.any():
                out[mapped, pos:pos + chunk] = self.pool[pages[mapped, k] - 1, lo:lo + chunk]
            pos += chunk
        return out


@njit(cache=True, inline="always")
def mram_words_to_wram(page_row, pool64, addr, dst64, dst_off, n):
    """Copy ``n`` MRAM bytes at ``addr`` of one bank (its ``page_row``) into WRAM at byte
    ``dst_off``, for a DMA the rules allow (``addr``, ``dst_off`` and ``n`` multiples of 8),
    in 8-byte words as the DMA engine moves them. It works on 8-byte views made once by the
    caller (``pool64``: the page pool as uint64 words; ``dst64``: the WRAM row as uint64
    words) and makes none of its own, so a one-record DMA costs a few loads, not the
    reference counting of four array views."""
    done = 0
    while done < n:
        a = addr + done
        page = a >> PAGE_SHIFT
        lo = a & (PAGE_BYTES - 1)
        chunk = min(n - done, PAGE_BYTES - lo)
        pid = page_row[page]
        o = (dst_off + done) >> 3
        w = lo >> 3
        if pid == 0:
            for i in range(chunk >> 3):
                dst64[o + i] = 0
        else:
            for i in range(chunk >> 3):
                dst64[o + i] = pool64[pid - 1, w + i]
        done += chunk
