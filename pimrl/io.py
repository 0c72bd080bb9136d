"""Atomic file output: a result is either wholly written or not there at all.

Everything pimrl writes (datasets, Q-tables, sweep results, JSON) goes through
``atomic_writer``: a temporary file in the destination folder, flushed and fsynced, then
renamed over the destination. On any error or interruption the temporary file is removed
and the destination is left as it was.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np


def fsync_dir(folder: str) -> None:
    """Make a rename in ``folder`` durable (best effort: not every filesystem allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_destination(path) -> Path:
    """Refuse, before any work is done, a destination ``atomic_writer`` could not write."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # Renaming over a device, a FIFO or a folder would replace it: refuse instead.
        raise ValueError(f"{path}: not a regular file; pimrl writes results to regular files only")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"{path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{path}: folder {parent} is not writable")
    return path


@contextlib.contextmanager
def atomic_writer(path, mode: str = "wb"):
    """``with atomic_writer(path) as f: f.write(...)``: replaces ``path`` only on success."""
    path = check_destination(path)
    folder = str(path.parent) if str(path.parent) else "."
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def atomic_save_npy(path, array: np.ndarray) -> Path:
    with atomic_writer(path) as f:
        np.save(f, array, allow_pickle=False)
    return Path(path)


def atomic_write_text(path, text: str) -> Path:
    with atomic_writer(path, "w") as f:
        f.write(text)
    return Path(path)


def atomic_write_json(path, obj) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=float) + "\n")
