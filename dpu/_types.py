"""The ``dpu`` package's errors, argument checks, program and symbol objects and host
buffers: what :mod:`dpu.driver`'s ``DpuSet`` is made of (the names are the SDK's; import them
from ``dpu``)."""
from __future__ import annotations

import math
import numbers
import operator
from typing import Dict, List, Optional

import numpy as np

from pimrl.pim import errors as sim_errors
from pimrl.pim import system
from pimrl.shim import clock

_simulator_call = clock.simulator_call

class DpuError(Exception):
    """A failed DPU operation. ``code`` is the SDK's dpu_error_t name when there is one."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


class DpuTypeError(DpuError, TypeError):
    """An argument of the wrong type (a DpuError and a TypeError)."""


class DpuValueError(DpuError, ValueError):
    """An argument of the right type but out of range (a DpuError and a ValueError)."""


#: The SDK passes counts, offsets and ids as 32-bit unsigned integers.
_U32 = 0xFFFFFFFF
_SIZE_MAX = (1 << 63) - 1


def _short(value) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails names no value
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(value, what: str, lo: int, hi: int, code: str) -> int:
    """``value`` as an int in [lo, hi] (bool and float refused, as the SDK's C API's
    integer arguments refuse them); DpuTypeError or DpuValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DpuTypeError(f"{what} must be an integer, not {type(value).__name__} "
                           f"({_short(value)})", code)
    v = int(value)
    if not lo <= v <= hi:
        raise DpuValueError(f"{what} must be in [{lo}, {hi}], got {v}", code)
    return v


def _timeout(value) -> Optional[float]:
    """exec(timeout=...): seconds > 0, None (the usual limit), 0 or math.inf (no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DpuTypeError(f"timeout must be a number of seconds or None, not "
                           f"{type(value).__name__} ({_short(value)})", "DPU_ERR_INVALID_LAUNCH_POLICY")
    v = float(value)
    if math.isnan(v) or v < 0:
        raise DpuValueError(f"timeout must be a number of seconds > 0 (0 or inf: no limit), "
                            f"got {_short(value)}", "DPU_ERR_INVALID_LAUNCH_POLICY")
    return math.inf if v == 0 else v


def _symbol_name(name) -> str:
    if not isinstance(name, str):
        raise DpuTypeError(f"a symbol name must be a str, not {type(name).__name__} "
                           f"({_short(name)})", "DPU_ERR_UNKNOWN_SYMBOL")
    return name


class _translate:
    """Turn the simulator's errors into DpuError (the SDK's Python API raises only that)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, sim_errors.DpuError):
            raise DpuError(str(exc), exc.code.name) from None
        return False


class DpuSymbol:
    """A symbol of a DPU program: ``name``, ``value()`` (its DPU address), ``size()``."""

    def __init__(self, name: str, c_symbol):
        self.name = _symbol_name(name)
        if isinstance(c_symbol, system.Symbol):
            self._address, self._size = c_symbol.address, c_symbol.size
        else:
            try:
                address, size = c_symbol
            except (TypeError, ValueError):
                raise DpuTypeError(f"DpuSymbol({name!r}, ...) takes a symbol or an (address, "
                                   f"size) pair, not {_short(c_symbol)}",
                                   "DPU_ERR_INVALID_SYMBOL_ACCESS") from None
            self._address = _integer(address, "a symbol's address", 0, _U32,
                                     "DPU_ERR_INVALID_SYMBOL_ACCESS")
            self._size = _integer(size, "a symbol's size", 0, _U32, "DPU_ERR_INVALID_SYMBOL_ACCESS")

    def value(self) -> int:
        return self._address

    def size(self) -> int:
        return self._size

    def __repr__(self):
        return f"DpuSymbol({self.name!r}, address={self._address:#x}, size={self._size})"


class DpuProgram:
    """A loaded program: its symbols."""

    def __init__(self, program: system.DpuProgram):
        self._program = program
        self.symbols: Dict[str, DpuSymbol] = {}

    @_simulator_call
    def get_symbol(self, symbol: str) -> Optional[DpuSymbol]:
        """The symbol, or None if the program has none of that name."""
        _symbol_name(symbol)
        if symbol not in self.symbols:
            sym = self._program.symbols.get(symbol)
            if sym is None:
                return None
            self.symbols[symbol] = DpuSymbol(symbol, sym)
        return self.symbols[symbol]

    def fetch_all_symbols(self) -> Dict[str, DpuSymbol]:
        for name in self._program.symbols:
            self.get_symbol(name)
        return self.symbols


def _unwrap(seq):
    return seq if len(seq) != 1 else seq[0]


class DpuVariable:
    """A symbol's bytes read from every DPU of a set: one memoryview per DPU (a single one
    unwrapped), with typed views."""

    def __init__(self, contents: List[memoryview]):
        self.contents = contents

    def data(self):
        return _unwrap(self.contents)

    def _cast(self, fmt):
        return _unwrap([_unwrap(view.cast(fmt)) for view in self.contents])

    def int8(self): return self._cast("b")
    def uint8(self): return self._cast("B")
    def int16(self): return self._cast("h")
    def uint16(self): return self._cast("H")
    def int32(self): return self._cast("i")
    def uint32(self): return self._cast("I")
    def int64(self): return self._cast("q")
    def uint64(self): return self._cast("Q")
    def float(self): return self._cast("f")
    def double(self): return self._cast("d")


class DpuContext:
    """Checkpointed DPU state: the simulator does not model checkpoints."""

    def __init__(self, *args, **kwargs):
        raise DpuError("checkpoints are not modelled by the pimrl simulator", "DPU_ERR_SYSTEM")


def _byte_view(buffer, writable: bool) -> np.ndarray:
    if (type(buffer) is np.ndarray and buffer.dtype == np.uint8 and buffer.ndim == 1
            and buffer.flags.c_contiguous and (buffer.flags.writeable or not writable)):
        return buffer                                   # rows of a numpy matrix: as they are
    try:
        view = memoryview(buffer)
    except TypeError:
        raise DpuError(f"host buffer of type {type(buffer).__name__} does not support the buffer "
                       "protocol (use bytes, bytearray, memoryview or a numpy array)",
                       "DPU_ERR_INVALID_MEMORY_TRANSFER") from None
    if writable and view.readonly:
        raise DpuError(f"host buffer of type {type(buffer).__name__} is read-only: a transfer from "
                       "the DPUs needs a writable one (bytearray, numpy array)",
                       "DPU_ERR_INVALID_MEMORY_TRANSFER")
    if not view.c_contiguous:
        raise DpuError("host buffer is not contiguous", "DPU_ERR_INVALID_MEMORY_TRANSFER")
    return np.frombuffer(view.cast("B") if view.format != "B" or view.ndim != 1 else view, dtype=np.uint8)


def _rows_of_one_array(views: list, size: int) -> Optional[np.ndarray]:
    """The buffers as one (n, size) array when they are equally spaced rows of one numpy
    array (``list(matrix)``, the usual way to pass one buffer per DPU): a transfer then
    moves them in one copy instead of one per DPU. None when they are not."""
    first = views[0]
    owner = first.base
    if owner is None or not all(type(v) is np.ndarray and v.base is owner for v in views):
        return None
    start = first.__array_interface__["data"][0]
    if len(views) == 1:
        return first[None, :size]
    step = views[1].__array_interface__["data"][0] - start
    if step < size:
        return None
    for i, v in enumerate(views):
        if v.__array_interface__["data"][0] != start + i * step:
            return None
    return np.lib.stride_tricks.as_strided(first, shape=(len(views), size), strides=(step, 1),
                                           writeable=first.flags.writeable)


class HostRows(list):
    """One host buffer per DPU, the rows of one 2-D numpy array: ``list(matrix)`` (what
    ``copy`` takes on any ``dpu`` package) that remembers ``matrix``, so that the simulator
    moves the rows in one copy without looking at each of thousands of buffers. Change the
    list and a transfer reads each buffer again, as it does for any list."""

    def __init__(self, matrix: np.ndarray):
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2:
            raise TypeError("HostRows takes a 2-D numpy array (one row per DPU)")
        super().__init__(matrix)
        self.matrix = matrix
        self._made = tuple(self)

    def byte_matrix(self, writable: bool) -> Optional[np.ndarray]:
        """The rows as one (n, bytes) uint8 array, or None when the list has changed since
        it was made or the array cannot be read (or written) as it stands."""
        m = self.matrix
        if (len(self) != len(self._made) or not all(map(operator.is_, self, self._made))
                or not m.flags.c_contiguous or (writable and not m.flags.writeable)):
            return None
        return m.view(np.uint8).reshape(len(m), -1)


def _dpu_id(alloc: system.Allocation, slot: int) -> int:
    """The SDK's DPU id: rank id << 16 | control interface << 8 | position on it."""
    per_rank = alloc.hw.dpus_per_rank
    per_ci = -(-per_rank // 8)
    index = slot % per_rank
    return (int(alloc.ranks[slot // per_rank]) << 16) | ((index // per_ci) << 8) | (index % per_ci)
