"""Atomic file output: a result is either wholly written or not there at all.

Everything pimrl writes (datasets, Q-tables, SwiftRL text, sweep results, JSON, the cost doc,
figures) goes through ``atomic_writer``: a temporary file in the destination folder, flushed
and fsynced, then renamed over the destination. On any error or interruption the temporary
file is removed and the destination is left as it was. The new file gets the mode a plain
``open`` would give it (``0666`` less the umask), or keeps the mode of the file it replaces.
Errors name the destination the caller gave, never the temporary file.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
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


def current_umask() -> int:
    """The process's umask (read without changing it where the kernel tells it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)        # no /proc: read it by setting it, and put it back at once
    os.umask(mask)
    return mask


def check_destination(path) -> Path:
    """Refuse, before any work is done, a destination ``atomic_writer`` could not write."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # Renaming over a device, a FIFO or a folder would replace it: refuse instead.
        raise ValueError(f"{path}: not a regular file; pimrl writes results to regular files only")
    parent = path.parent if str(path.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{path}: {parent} is not a folder")
    if not parent.is_dir():
        raise ValueError(f"{path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"{path}: folder {parent} is not writable")
    return path


def ensure_folder(path, what: str = "") -> Path:
    """Create the output folder ``path`` (and its parents); a clear error if it cannot be one."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise ValueError(f"{label}: {p} exists and is not a folder")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"{label}: cannot create the folder: {exc.strerror}") from None
    return path


def _os_error(path: Path, exc: OSError) -> OSError:
    """``exc`` restated about the user's ``path`` (not the temporary file)."""
    message = f"{path}: cannot write: {exc.strerror or exc}"
    return OSError(exc.errno, message) if exc.errno else OSError(message)


@contextlib.contextmanager
def atomic_writer(path, mode: str = "wb", *, newline=None):
    """``with atomic_writer(path) as f: f.write(...)``: replaces ``path`` only on success."""
    path = check_destination(path)
    folder = str(path.parent) if str(path.parent) else "."
    try:
        perm = stat.S_IMODE(os.stat(path).st_mode)     # a replaced file keeps its mode
    except OSError:
        perm = 0o666 & ~current_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _os_error(path, exc) from None
    try:
        os.fchmod(fd, perm)
        kwargs = {} if "b" in mode else {"newline": newline, "encoding": "utf-8"}
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and getattr(exc, "filename", None) in (None, tmp):
            raise _os_error(path, exc) from None
        raise
    fsync_dir(folder)


def atomic_save_npy(path, array: np.ndarray) -> Path:
    with atomic_writer(path) as f:
        np.save(f, array, allow_pickle=False)
    return Path(path)


def atomic_write_text(path, text: str, newline=None) -> Path:
    with atomic_writer(path, "w", newline=newline) as f:
        f.write(text)
    return Path(path)


def atomic_write_bytes(path, data: bytes) -> Path:
    with atomic_writer(path) as f:
        f.write(data)
    return Path(path)


def atomic_write_json(path, obj) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=float) + "\n")


def atomic_savefig(fig, path, **kwargs) -> Path:
    """``fig.savefig`` through ``atomic_writer`` (the format from the file's extension)."""
    path = Path(path)
    fmt = kwargs.pop("format", None) or path.suffix.lstrip(".") or None
    with atomic_writer(path) as f:
        fig.savefig(f, format=fmt, **kwargs)
    return path


def check_regular_input(path, what: str = "") -> Path:
    """Refuse an input that is not a regular file (a FIFO would block, a folder cannot be
    read); the error names ``path``."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(2, f"{label}: no such file") from None
    except OSError as exc:
        raise OSError(exc.errno, f"{label}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{label}: is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{label}: not a regular file (a FIFO, device or socket); pimrl reads "
                         "regular files only")
    return path
