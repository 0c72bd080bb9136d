"""The pimrl dataset file: a 256-byte little-endian header followed by 16-byte records.

The layout is documented byte by byte in ``docs/dataset-format.md``. In short::

    offset  size  field
         0     8  magic b"PIMRLDS\\0"
         8     4  version (u32, = 1)
        12     4  header_size (u32, = 256; records start here, a multiple of 8)
        16     4  record_size (u32, = 16)
        20     4  flags (u32; bit 0: the seed field is set)
        24     8  n_transitions (u64)
        32     4  n_states (u32)
        36     4  n_actions (u32)
        40     8  seed (u64; meaningful only with flag bit 0)
        48     8  n_imputed (u64; next actions imputed by an import)
        56     4  header_crc32 (u32; CRC-32 of the header with this field zeroed)
        60     4  reserved (0)
        64    96  layout   (u16 length + ASCII, the record's field:dtype list)
       160    32  policy   (u16 length + UTF-8)
       192    64  env_id   (u16 length + UTF-8)

Writes are atomic (temporary file in the destination folder, fsync, ``os.replace``) and
loads validate the header and, vectorised, every record.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np

from pimrl.io import atomic_writer

from .mapping import drop_mapped_pages
from .records import MAX_ACTIONS, NO_ACTION, TRANSITION_DTYPE

MAGIC = b"PIMRLDS\x00"
FORMAT_VERSION = 1
HEADER_SIZE = 256
RECORD_SIZE = TRANSITION_DTYPE.itemsize
FLAG_HAS_SEED = 1

#: The record layout as written in the header; a reader refuses any other.
LAYOUT = ",".join(
    f"{name}:{TRANSITION_DTYPE.fields[name][0].str}" for name in TRANSITION_DTYPE.names
)

_FIXED = struct.Struct("<8sIIIIQIIQQII")  # bytes 0..63
assert _FIXED.size == 64
# (offset, total size including the u16 length prefix) of the string fields
_LAYOUT_FIELD = (64, 96)
_POLICY_FIELD = (160, 32)
_ENV_FIELD = (192, 64)
_CRC_OFFSET = 56

#: Records validated per chunk (bounds the temporaries on very large files).
_CHECK_CHUNK = 1 << 22
#: Bytes of records above which a pass over a read-only dataset mapping hands its pages back
#: once read (:func:`drop_mapped_pages`): the load's checks chunk by chunk, the data
#: preparation of a run at its end, windows of records window by window.
DROP_MAPPED_BYTES = 256 << 20
#: Records written per ``write`` call.
_WRITE_CHUNK = 1 << 18


class DatasetError(ValueError):
    """A dataset file (or an array about to be saved) that breaks the format.

    The message names the file and the field; ``index`` is the first offending record
    (None for header problems) and ``value`` the offending value."""

    def __init__(self, path, field, message, index=None, value=None):
        self.path = str(path)
        self.field = field
        self.index = index
        self.value = value
        super().__init__(f"{self.path}: {message}")


# --------------------------------------------------------------------------------------
# header
# --------------------------------------------------------------------------------------
def _put_string(buf: bytearray, spec, text: str, name: str, encoding="utf-8") -> None:
    offset, size = spec
    raw = text.encode(encoding)
    if len(raw) > size - 2:
        raise ValueError(
            f"header field {name!r}: {text!r} is {len(raw)} bytes, at most {size - 2} fit"
        )
    struct.pack_into("<H", buf, offset, len(raw))
    buf[offset + 2 : offset + 2 + len(raw)] = raw


def _get_string(buf: bytes, spec, name: str, path, encoding="utf-8") -> str:
    offset, size = spec
    (length,) = struct.unpack_from("<H", buf, offset)
    if length > size - 2:
        raise DatasetError(
            path, name, f"header field {name!r}: length {length} exceeds its {size - 2}-byte slot",
            value=length,
        )
    try:
        return bytes(buf[offset + 2 : offset + 2 + length]).decode(encoding)
    except UnicodeDecodeError as exc:
        raise DatasetError(path, name, f"header field {name!r} is not valid {encoding}: {exc}")


def _header_crc(buf: bytes) -> int:
    tmp = bytearray(buf)
    tmp[_CRC_OFFSET : _CRC_OFFSET + 4] = b"\x00\x00\x00\x00"
    return zlib.crc32(tmp) & 0xFFFFFFFF


def encode_header(
    *,
    n_transitions: int,
    n_states: int,
    n_actions: int,
    env_id: str,
    seed,
    policy: str,
    n_imputed: int = 0,
) -> bytes:
    """The 256-byte header for the given fields (see the module docstring)."""
    if seed is not None and not (0 <= int(seed) < 2**64):
        raise ValueError(f"seed must be None or an integer in [0, 2^64), got {seed}")
    if not (0 < n_states < 2**31):
        raise ValueError(f"n_states must lie in [1, 2^31), got {n_states}")
    if not (0 < n_actions <= MAX_ACTIONS):
        raise ValueError(f"n_actions must lie in [1, {MAX_ACTIONS}], got {n_actions}")
    flags = FLAG_HAS_SEED if seed is not None else 0
    buf = bytearray(HEADER_SIZE)
    _FIXED.pack_into(
        buf, 0, MAGIC, FORMAT_VERSION, HEADER_SIZE, RECORD_SIZE, flags, int(n_transitions),
        int(n_states), int(n_actions), int(seed) if seed is not None else 0, int(n_imputed), 0, 0,
    )
    _put_string(buf, _LAYOUT_FIELD, LAYOUT, "layout", "ascii")
    _put_string(buf, _POLICY_FIELD, policy, "policy")
    _put_string(buf, _ENV_FIELD, env_id, "env_id")
    struct.pack_into("<I", buf, _CRC_OFFSET, _header_crc(buf))
    return bytes(buf)


def decode_header(buf: bytes, path="<header>", file_size=None) -> dict:
    """Parse and check a header; raises DatasetError naming ``path`` and the field."""
    magic = bytes(buf[:8])
    if len(buf) >= 8 and magic != MAGIC:
        raise DatasetError(
            path, "magic", f"not a pimrl dataset: header field 'magic' is {magic!r}, "
            f"expected {MAGIC!r}", value=magic,
        )
    if len(buf) < HEADER_SIZE:
        raise DatasetError(
            path, "header",
            f"truncated header: the file has {len(buf)} bytes, a header needs {HEADER_SIZE}",
            value=len(buf),
        )
    (_, version, header_size, record_size, flags, n, n_states, n_actions, seed, n_imputed,
     crc, _reserved) = _FIXED.unpack_from(buf, 0)
    if version != FORMAT_VERSION:
        raise DatasetError(
            path, "version", f"header field 'version': unsupported format version {version} "
            f"(this pimrl reads version {FORMAT_VERSION})", value=version,
        )
    if header_size < HEADER_SIZE or header_size % 8:
        raise DatasetError(
            path, "header_size", f"header field 'header_size' = {header_size}: must be a "
            f"multiple of 8 and at least {HEADER_SIZE}", value=header_size,
        )
    if record_size != RECORD_SIZE:
        raise DatasetError(
            path, "record_size", f"header field 'record_size' = {record_size} does not match "
            f"this pimrl's {RECORD_SIZE}-byte transition record", value=record_size,
        )
    layout = _get_string(buf, _LAYOUT_FIELD, "layout", path, "ascii")
    if layout != LAYOUT:
        raise DatasetError(
            path, "layout", f"header field 'layout' (record dtype) is {layout!r}, this pimrl "
            f"uses {LAYOUT!r}", value=layout,
        )
    if crc != _header_crc(buf[:HEADER_SIZE]):
        raise DatasetError(
            path, "header_crc32", f"header checksum mismatch (stored {crc:#010x}, computed "
            f"{_header_crc(buf[:HEADER_SIZE]):#010x}): the header is corrupt", value=crc,
        )
    if not (0 < n_actions <= MAX_ACTIONS):
        raise DatasetError(path, "n_actions", f"header field 'n_actions' = {n_actions} is "
                           f"outside [1, {MAX_ACTIONS}]", value=n_actions)
    if not (0 < n_states < 2**31):
        raise DatasetError(path, "n_states", f"header field 'n_states' = {n_states} is "
                           "outside [1, 2^31)", value=n_states)
    header = dict(
        version=version,
        header_size=header_size,
        record_size=record_size,
        flags=flags,
        n_transitions=n,
        n_states=n_states,
        n_actions=n_actions,
        seed=seed if flags & FLAG_HAS_SEED else None,
        n_imputed=n_imputed,
        layout=layout,
        policy=_get_string(buf, _POLICY_FIELD, "policy", path),
        env_id=_get_string(buf, _ENV_FIELD, "env_id", path),
    )
    if file_size is not None:
        expected = header_size + n * record_size
        if file_size != expected:
            what = "truncated" if file_size < expected else "longer than its header says"
            raise DatasetError(
                path, "n_transitions",
                f"file is {what}: header field 'n_transitions' = {n} needs {header_size} + "
                f"{n} x {record_size} = {expected} bytes, the file has {file_size} bytes",
                value=file_size,
            )
    return header


# --------------------------------------------------------------------------------------
# content validation (vectorised)
# --------------------------------------------------------------------------------------
def _first(mask: np.ndarray):
    """Index of the first True in ``mask``, or None."""
    if not mask.any():
        return None
    return int(np.argmax(mask))


def validate_records(records: np.ndarray, n_states: int, n_actions: int, path="<records>",
                     first_index: int = 0) -> None:
    """Check every record; raises DatasetError naming path, record index, field and value.

    Checks: state/next_state in [0, n_states); action in [0, n_actions); next_action in
    [0, n_actions) or NO_ACTION; terminated/truncated 0 or 1 and not both; reward finite.
    Vectorised numpy over chunks of 4M records. ``first_index``: the index of
    ``records[0]`` in its dataset (the errors name records by that count)."""
    if records.dtype != TRANSITION_DTYPE:
        raise DatasetError(path, "dtype", f"records have dtype {records.dtype}, expected "
                           f"TRANSITION_DTYPE {TRANSITION_DTYPE}")
    n = len(records)
    for at in range(0, n, _CHECK_CHUNK):
        chunk = records[at : at + _CHECK_CHUNK]
        start = first_index + at
        checks = (
            ("state", lambda c: (c < 0) | (c >= n_states), f"outside [0, {n_states})"),
            ("next_state", lambda c: (c < 0) | (c >= n_states), f"outside [0, {n_states})"),
            ("action", lambda c: c >= n_actions, f"outside [0, {n_actions})"),
            ("next_action", lambda c: (c >= n_actions) & (c != NO_ACTION),
             f"outside [0, {n_actions}) and not NO_ACTION ({NO_ACTION})"),
            ("terminated", lambda c: c > 1, "not 0 or 1"),
            ("truncated", lambda c: c > 1, "not 0 or 1"),
            ("reward", lambda c: ~np.isfinite(c), "not finite"),
        )
        for field, bad_of, what in checks:
            col = chunk[field]
            i = _first(bad_of(col))
            if i is not None:
                value = col[i].item()
                raise DatasetError(
                    path, field, f"record {start + i}: field {field!r} = {value!r} is {what}",
                    index=start + i, value=value,
                )
        both = _first((chunk["terminated"] == 1) & (chunk["truncated"] == 1))
        if both is not None:
            raise DatasetError(
                path, "truncated", f"record {start + both}: field 'truncated' = 1 on a "
                "terminated record (a terminal step is never also truncated)",
                index=start + both, value=1,
            )
        if records.nbytes > DROP_MAPPED_BYTES:
            drop_mapped_pages(chunk)


# --------------------------------------------------------------------------------------
# save / load
# --------------------------------------------------------------------------------------
def _write_records(f, records: np.ndarray) -> None:
    """Write the records' bytes in chunks (a separate function so tests can break it)."""
    for start in range(0, len(records), _WRITE_CHUNK):
        f.write(memoryview(records[start : start + _WRITE_CHUNK]).cast("B"))


def save_dataset(
    path,
    records: np.ndarray,
    env_id: str,
    seed,
    policy: str,
    *,
    n_states: int | None = None,
    n_actions: int | None = None,
    n_imputed: int = 0,
    validate: bool = True,
) -> Path:
    """Write ``records`` (TRANSITION_DTYPE) with a header to ``path``, atomically.

    ``seed`` may be None (stored with the "no seed" flag). ``n_states``/``n_actions``
    default to those of ``pimrl.envs.make(env_id)``. The records are validated first
    (unless ``validate=False``). The file is written to a temporary file in the same folder,
    flushed, fsynced and renamed over ``path``; on any error or interruption the temporary
    file is removed and ``path`` is left as it was. Returns the path."""
    path = Path(path)
    records = np.asarray(records)
    if records.dtype != TRANSITION_DTYPE or records.ndim != 1:
        raise DatasetError(path, "dtype", f"records must be a 1-D array of TRANSITION_DTYPE, "
                           f"got dtype {records.dtype} with shape {records.shape}")
    if n_states is None or n_actions is None:
        from pimrl.envs import make

        env = make(env_id)
        n_states = env.n_states if n_states is None else n_states
        n_actions = env.n_actions if n_actions is None else n_actions
    records = np.ascontiguousarray(records)
    if validate:
        validate_records(records, int(n_states), int(n_actions), path=f"{path} (not written)")
    header = encode_header(
        n_transitions=len(records), n_states=int(n_states), n_actions=int(n_actions),
        env_id=env_id, seed=seed, policy=policy, n_imputed=n_imputed,
    )
    with atomic_writer(path) as f:
        f.write(header)
        _write_records(f, records)
    return path


def write_dataset(path, n_transitions: int, fill, env_id: str, seed, policy: str, *,
                  n_states: int, n_actions: int, n_imputed: int = 0, validate: bool = True,
                  chunk: int = 1 << 20) -> Path:
    """Write a dataset of ``n_transitions`` records that ``fill(buffer)`` produces in order,
    ``chunk`` records at a time (each call writes the next ``len(buffer)`` records into
    ``buffer``): the file :func:`save_dataset` writes for their concatenation, byte for
    byte, holding one chunk in memory. Each chunk is validated before it is written (unless
    ``validate=False``); the write is atomic, as :func:`save_dataset`'s. Returns the path."""
    path = Path(path)
    n_transitions, chunk = int(n_transitions), int(chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 record, got {chunk}")
    header = encode_header(
        n_transitions=n_transitions, n_states=int(n_states), n_actions=int(n_actions),
        env_id=env_id, seed=seed, policy=policy, n_imputed=n_imputed,
    )
    buf = np.empty(min(chunk, n_transitions), dtype=TRANSITION_DTYPE)
    with atomic_writer(path) as f:
        f.write(header)
        for start in range(0, n_transitions, chunk):
            part = buf[: min(chunk, n_transitions - start)]
            fill(part)
            if validate:
                validate_records(part, int(n_states), int(n_actions),
                                 path=f"{path} (not written)", first_index=start)
            _write_records(f, part)
    return path


class Dataset:
    """A loaded dataset: ``records`` (read-only, TRANSITION_DTYPE) and the header fields.

    Attributes: ``path``, ``records``, ``env_id``, ``seed`` (int or None), ``policy``,
    ``n_states``, ``n_actions``, ``n_imputed``, ``n_transitions``, ``version``,
    ``header_size``."""

    def __init__(self, path, records: np.ndarray, header: dict):
        self.path = Path(path)
        self.records = records
        self.header = dict(header)
        self.env_id: str = header["env_id"]
        self.seed = header["seed"]
        self.policy: str = header["policy"]
        self.n_states: int = header["n_states"]
        self.n_actions: int = header["n_actions"]
        self.n_imputed: int = header["n_imputed"]
        self.n_transitions: int = header["n_transitions"]
        self.version: int = header["version"]
        self.header_size: int = header["header_size"]

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return (f"Dataset({str(self.path)!r}, n={len(self)}, env_id={self.env_id!r}, "
                f"policy={self.policy!r}, seed={self.seed})")

    def env(self):
        """The environment, rebuilt with ``pimrl.envs.make(env_id)`` (sizes checked)."""
        from pimrl.envs import make

        try:
            env = make(self.env_id)
        except ValueError as exc:
            raise DatasetError(self.path, "env_id", str(exc)) from None
        if (env.n_states, env.n_actions) != (self.n_states, self.n_actions):
            raise DatasetError(
                self.path, "env_id", f"env {self.env_id!r} has {env.n_states} states and "
                f"{env.n_actions} actions, the header says {self.n_states} and {self.n_actions}"
            )
        return env

    def info(self) -> dict:
        """Summary statistics (vectorised): header fields, counts, reward range, coverage."""
        r = self.records
        n = len(r)
        out = {
            "path": str(self.path),
            "format_version": self.version,
            "env_id": self.env_id,
            "policy": self.policy,
            "seed": self.seed,
            "n_transitions": n,
            "n_states": self.n_states,
            "n_actions": self.n_actions,
            "n_imputed_next_actions": self.n_imputed,
            "file_bytes": self.header_size + n * RECORD_SIZE,
        }
        try:
            self.env()
            out["env_check"] = "ok"
        except DatasetError as exc:     # info still describes the file, and says what's wrong
            out["env_check"] = str(exc)
        if n == 0:
            out.update(reward_min=None, reward_max=None, reward_mean=None, n_terminated=0,
                       n_truncated=0, n_episodes_ended=0, frac_terminated=0.0,
                       frac_truncated=0.0, states_visited=0, state_coverage=0.0,
                       state_actions_visited=0, state_action_coverage=0.0,
                       n_unknown_next_action=0)
            return out
        # chunk by chunk (a large mapping's pages handed back as read): memory stays at a
        # chunk's statistics whatever the size
        term = trunc = unknown = 0
        lo, hi, total = np.inf, -np.inf, 0.0
        seen_s = np.zeros(self.n_states, np.int64)
        seen_sa = np.zeros(self.n_states * self.n_actions, np.int64)
        for at in range(0, n, _CHECK_CHUNK):
            c = r[at: at + _CHECK_CHUNK]
            reward = c["reward"]
            term += int(np.count_nonzero(c["terminated"]))
            trunc += int(np.count_nonzero(c["truncated"]))
            unknown += int(np.count_nonzero(c["next_action"] == NO_ACTION))
            lo, hi = min(lo, float(reward.min())), max(hi, float(reward.max()))
            total += float(reward.sum(dtype=np.float64))
            s = c["state"].astype(np.int64)
            seen_s += np.bincount(s, minlength=self.n_states)
            seen_s += np.bincount(c["next_state"], minlength=self.n_states)
            seen_sa += np.bincount(s * self.n_actions + c["action"],
                                   minlength=self.n_states * self.n_actions)
            if r.nbytes > DROP_MAPPED_BYTES:
                drop_mapped_pages(c)
        visited_s = int(np.count_nonzero(seen_s))
        visited_sa = int(np.count_nonzero(seen_sa))
        out.update(
            reward_min=lo,
            reward_max=hi,
            reward_mean=total / n,
            n_terminated=term,
            n_truncated=trunc,
            n_episodes_ended=term + trunc,
            frac_terminated=term / n,
            frac_truncated=trunc / n,
            states_visited=visited_s,
            state_coverage=visited_s / self.n_states,
            state_actions_visited=visited_sa,
            state_action_coverage=visited_sa / (self.n_states * self.n_actions),
            n_unknown_next_action=unknown,
        )
        return out


def load_dataset(path, mmap: bool = True, validate: bool = True) -> Dataset:
    """Open a dataset file; records are a read-only memmap (or a read-only array).

    Raises DatasetError (a ValueError) naming the file and the field for: wrong magic,
    unsupported version, bad header/record size, record-layout mismatch, corrupt header,
    a file size that does not match the header (truncated), and -- unless
    ``validate=False`` -- any out-of-range or non-finite record content."""
    from pimrl.io import check_regular_input

    path = check_regular_input(path)      # a FIFO would block the header read forever
    file_size = os.path.getsize(path)
    with open(path, "rb") as f:
        buf = f.read(HEADER_SIZE)
    header = decode_header(buf, path=path, file_size=file_size)
    n = header["n_transitions"]
    if n == 0:
        records = np.zeros(0, dtype=TRANSITION_DTYPE)
        records.flags.writeable = False
    elif mmap:
        records = np.memmap(path, dtype=TRANSITION_DTYPE, mode="r",
                            offset=header["header_size"], shape=(n,))
    else:
        records = np.fromfile(path, dtype=TRANSITION_DTYPE, count=n,
                              offset=header["header_size"])
        records.flags.writeable = False
    if validate:
        validate_records(records, header["n_states"], header["n_actions"], path=path)
    return Dataset(path, records, header)
