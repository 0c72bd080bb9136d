"""A dataset file's read-only mapping (:func:`pimrl.data.format.load_dataset`'s memmap):
its pages handed back to the OS once read, and the file and offset behind a view of it."""
from __future__ import annotations

import numpy as np


def drop_mapped_pages(records: np.ndarray) -> bool:
    """Let the OS take back this process's pages of ``records`` where they are a read-only
    mapping of a dataset file (:func:`load_dataset`'s memmap): the resident memory drops by
    them, the file's pages stay in the page cache, and a later read maps them again, with the
    same bytes. Records in any other memory are left alone. True when pages were dropped."""
    import mmap as _mmap

    owner = records
    while owner is not None and not isinstance(owner, np.memmap):
        owner = getattr(owner, "base", None)
    if (owner is None or owner.mode != "r" or getattr(owner, "_mmap", None) is None
            or not records.flags.c_contiguous or records.nbytes == 0
            or not hasattr(_mmap, "MADV_DONTNEED")):
        return False
    mm = owner._mmap
    start = np.frombuffer(mm, dtype=np.uint8).ctypes.data       # the mapping's first byte
    lo = records.ctypes.data - start
    page = _mmap.PAGESIZE
    first = lo - lo % page
    last = min(len(mm), -(-(lo + records.nbytes) // page) * page)
    if not 0 <= first < last:
        return False
    mm.madvise(_mmap.MADV_DONTNEED, first, last - first)
    return True


def mapped_file(records: np.ndarray):
    """``(path, byte offset of records[0] in it)`` where ``records`` are a contiguous view of
    a read-only dataset mapping (:func:`load_dataset`'s memmap); else None."""
    owner = records
    while owner is not None and not isinstance(owner, np.memmap):
        owner = getattr(owner, "base", None)
    if (owner is None or owner.mode != "r" or getattr(owner, "filename", None) is None
            or not records.flags.c_contiguous or records.nbytes == 0):
        return None
    return owner.filename, owner.offset + (records.ctypes.data - owner.ctypes.data)
