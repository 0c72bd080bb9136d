"""``dpu.DpuSet`` and its companions: the SDK's Python host API over pimrl's simulator.

Names, arguments, defaults and error cases follow the SDK's ``dpu`` package (2025.1): a
script written for it runs here unchanged. Host buffers are anything with the buffer
protocol (``bytes``, ``bytearray``, ``memoryview``, numpy arrays), one for every DPU of the
set or a list with one per DPU (``None`` skips that DPU); from the DPUs the buffers must be
writable. Every error is a :class:`DpuError` whose message names the symbol, DPU or value
at fault; an argument of the wrong type or out of range raises one that is also a
``TypeError`` (:class:`DpuTypeError`) or ``ValueError`` (:class:`DpuValueError`), so that
both the SDK's ``except DpuError`` and Python's usual handlers catch it.

``exec`` runs until the DPUs finish, Ctrl-C (``KeyboardInterrupt``, within a second; the set
stays usable) or the launch's time limit (``exec(timeout=...)``, the profile's
``timeout=SECONDS`` or ``PIMRL_DPU_TIMEOUT``: the DPUs then fault, see docs/dpu-runtime.md).
"""
from __future__ import annotations

import hashlib
import io
import locale
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from pimrl.io import atomic_write_bytes
from pimrl.pim import system
from pimrl.shim import clock
from dpu._types import (
    _SIZE_MAX, _U32, DpuError, DpuProgram, DpuSymbol, DpuTypeError, DpuValueError,
    DpuVariable, HostRows, _byte_view, _dpu_id, _integer, _rows_of_one_array, _short,
    _timeout, _translate,
)

#: Each SDK call below marked ``@_simulator_call`` is one simulator call of the modelled clock
#: (``PIMRL_MODELLED_CLOCK=1``, :mod:`pimrl.shim.clock`): its wall time is replaced by the
#: modelled time it books. Without the variable the methods are left as they are.
_simulator_call = clock.simulator_call

#: dpu_alloc / dpu_alloc_ranks: every free DPU (rank).
ALLOCATE_ALL = system.DPU_ALLOCATE_ALL


class DpuSet:
    """A set of DPUs: an allocation, one of its ranks, or one DPU.

    ``DpuSet(nr_dpus=None, nr_ranks=None, profile='', binary=None, c_source=None,
    asm_source=None, log=None, async_mode=False)`` allocates ``nr_dpus`` DPUs (or
    ``nr_ranks`` ranks; neither: every free DPU), then loads ``binary`` (a program file's
    path, or its bytes) or builds and loads ``c_source`` (a path, a file object, or a list
    of them). ``log``: a stream (or one per DPU) that ``exec`` writes the DPUs' output to.
    ``profile`` is the simulator's: ``hardware=upmem-640``, any hardware parameter.
    """

    @_simulator_call
    def __init__(self, nr_dpus: Optional[int] = None, nr_ranks: Optional[int] = None,
                 profile: str = "", binary=None, c_source=None, asm_source=None, log=None,
                 async_mode: Optional[bool] = False, _system_set=None):
        object.__setattr__(self, "_symbols", {})
        # Members (one-rank and one-DPU sets): filled by the set that contains them, or, for
        # the allocated set, built on first use (thousands of DPUs: not on every allocation).
        self._dpu_list: Optional[List["DpuSet"]] = []
        self._rank_list: Optional[List["DpuSet"]] = []
        self._top_set: Optional["DpuSet"] = None
        self._rank_set: Optional["DpuSet"] = None
        self._async_mode = bool(async_mode)
        self._log = None if isinstance(log, list) else log
        self._programs: Dict[str, system.DpuProgram] = {}
        self._last_launch: Optional[system.LaunchResult] = None
        self._lock = threading.Lock()
        if _system_set is not None:
            self._sys = _system_set
            return
        if nr_dpus is not None and nr_ranks is not None:
            raise DpuError("cannot specify nr_dpus and nr_ranks")
        if nr_dpus is None and nr_ranks is None:
            nr_dpus = ALLOCATE_ALL
        if nr_dpus is not None:
            nr_dpus = _integer(nr_dpus, "nr_dpus", 1, ALLOCATE_ALL, "DPU_ERR_ALLOCATION")
        else:
            nr_ranks = _integer(nr_ranks, "nr_ranks", 1, ALLOCATE_ALL, "DPU_ERR_ALLOCATION")
        if profile is None:
            profile = ""
        if not isinstance(profile, str):
            raise DpuTypeError(f"profile must be a str, not {type(profile).__name__} "
                               f"({_short(profile)})", "DPU_ERR_INVALID_PROFILE")
        if log is not None and not isinstance(log, list) and not callable(getattr(log, "write", None)):
            raise DpuTypeError(f"log must be a stream (an object with a write method) or a "
                               f"list of them, not {type(log).__name__}", "DPU_ERR_LOG_FORMAT")
        with _translate():
            if nr_dpus is not None:
                self._sys = system.dpu_alloc(int(nr_dpus), profile)
            else:
                self._sys = system.dpu_alloc_ranks(int(nr_ranks), profile)
        clock.track(self._sys.alloc)
        self._dpu_list = self._rank_list = None
        try:
            if isinstance(log, list):
                if len(log) != len(self):
                    raise DpuError("log list length does not match number of DPUs in DpuSet")
                for dpu, dpu_log in zip(self._dpus, log):
                    dpu._log = dpu_log
            if c_source is not None or asm_source is not None or binary is not None:
                self.load(binary, c_source, asm_source)
        except BaseException:
            self._sys.free()
            raise

    def _build_members(self):
        """The allocated set's ranks and DPUs, each a set with this set's program symbols."""
        a = self._sys.alloc
        dpus, ranks = [], []
        for rank_sys in self._sys.rank_sets():
            rank = DpuSet(log=self._log, async_mode=self._async_mode, _system_set=rank_sys)
            rank._top_set = self
            rank._rank_list.append(rank)
            ranks.append(rank)
            for slot in rank_sys.slots:
                dpu = DpuSet(log=self._log, async_mode=self._async_mode,
                             _system_set=system.DpuSet(a, [slot], "dpu"))
                dpu._top_set, dpu._rank_set = self, rank
                dpu._dpu_list.append(dpu)
                dpu._rank_list.append(rank)
                rank._dpu_list.append(dpu)
                dpus.append(dpu)
        for member in (*ranks, *dpus):
            object.__setattr__(member, "_symbols", dict(self._symbols))
        self._dpu_list, self._rank_list = dpus, ranks

    @property
    def _dpus(self) -> List["DpuSet"]:
        if self._dpu_list is None:
            self._build_members()
        return self._dpu_list

    @property
    def _ranks(self) -> List["DpuSet"]:
        if self._rank_list is None:
            self._build_members()
        return self._rank_list

    # ---------------------------------------------------------------- symbols as attributes
    def __getattribute__(self, name):
        if name != "_symbols":
            symbol = object.__getattribute__(self, "_symbols").get(name)
            if symbol is not None:
                return self._read_symbol(symbol)
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        symbol = self.__dict__.get("_symbols", {}).get(name)
        if symbol is None:
            object.__setattr__(self, name, value)
        else:
            self.copy(symbol, value)

    def _read_symbol(self, symbol: DpuSymbol) -> DpuVariable:
        n, size = len(self), symbol.size()
        view = memoryview(bytearray(n * size))
        bufs = [view[i * size:(i + 1) * size] for i in range(n)]
        self.copy(bufs, symbol)
        return DpuVariable(bufs)

    # ---------------------------------------------------------------- shape
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_traceback):
        self.free()

    @_simulator_call
    def __iter__(self):
        return iter(self._dpus)

    def __len__(self) -> int:
        return len(self._sys.slots)

    @_simulator_call
    def dpus(self) -> List["DpuSet"]:
        """The DPUs of the set, each a one-DPU set."""
        return self._dpus

    @_simulator_call
    def ranks(self) -> List["DpuSet"]:
        """The ranks of the set, each a one-rank set."""
        return self._ranks

    @_simulator_call
    def free(self):
        """Release the DPUs (the set returned by the constructor only)."""
        with _translate():
            self._sys.free()

    # ---------------------------------------------------------------- programs
    @_simulator_call
    def load(self, binary=None, c_source=None, asm_source=None) -> DpuProgram:
        """Load ``binary`` (a path, or the program's bytes) or build and load ``c_source``."""
        if (binary is None) == (c_source is None and asm_source is None):
            raise DpuError("one and only one source or binary program must be defined")
        if asm_source is not None:
            raise DpuError("asm_source: the pimrl simulator builds DPU programs from C only",
                           "DPU_ERR_ELF_INVALID_FILE")
        top = self._top_set or self
        from pimrl.pim import programs

        path = data = None
        if c_source is not None:
            data, name = self._build(c_source)
        elif isinstance(binary, (str, os.PathLike)):
            try:
                path = os.fspath(binary)
                if isinstance(path, bytes):
                    path = os.fsdecode(path)
            except (TypeError, ValueError) as exc:
                raise DpuTypeError(f"binary: not a path ({exc})", "DPU_ERR_ELF_NO_SUCH_FILE") from None
            if "\0" in path:
                raise DpuValueError(f"binary: the path {_short(path)} holds a NUL character",
                                    "DPU_ERR_ELF_NO_SUCH_FILE")
        else:
            try:
                data = bytes(memoryview(binary))
            except TypeError:
                raise DpuTypeError(f"binary must be a program file's path (str) or its bytes, not "
                                   f"{type(binary).__name__}", "DPU_ERR_ELF_INVALID_FILE") from None
            name = "<program in memory>"
        key = path if data is None else "memory:" + hashlib.sha256(data).hexdigest()
        with _translate():
            program = top._programs.get(key)
            if program is None:
                hw = self._sys.alloc.hw
                program = (programs.load_program(path, hw) if data is None
                           else programs.load_program_data(data, hw, name))
                if c_source is None:
                    top._programs[key] = program
            self._sys.load(program)
        loaded = DpuProgram(program)
        self._update_symbol_attributes(loaded.fetch_all_symbols())
        return loaded

    @staticmethod
    def _build(c_source) -> tuple:
        """Build ``c_source`` (paths or file objects): (the program's bytes, its name)."""
        from pimrl.dpurt import cc

        items = c_source if isinstance(c_source, list) else [c_source]
        if not items:
            raise DpuValueError("c_source: an empty list of sources", "DPU_ERR_ELF_INVALID_FILE")
        with tempfile.TemporaryDirectory(prefix="pimrl-dpu-build-") as tmp:
            tmp = Path(tmp)
            sources = []
            for i, src in enumerate(items):
                if isinstance(src, (str, os.PathLike)):
                    src = Path(src)
                elif callable(getattr(src, "read", None)):
                    text = src.read()
                    path = tmp / f"src{i}.c"
                    if isinstance(text, str):
                        # as open(path, "w") would encode it: the locale's encoding
                        text = text.encode(locale.getpreferredencoding(False), "surrogateescape")
                    if isinstance(text, (bytes, bytearray)):
                        atomic_write_bytes(path, bytes(text))
                    else:
                        raise DpuTypeError(f"c_source: read() of source {i} gave "
                                           f"{type(text).__name__}, not text",
                                           "DPU_ERR_ELF_INVALID_FILE")
                    src = path
                else:
                    raise DpuTypeError(f"c_source must be a path, a file object or a list of "
                                       f"them, not {type(src).__name__} ({_short(src)})",
                                       "DPU_ERR_ELF_INVALID_FILE")
                sources.append(src)
            out = tmp / "main.dpu"
            try:
                cc.build(sources, out, opt="-O2")
            except (cc.BuildError, OSError, ValueError) as exc:
                raise DpuError(f"building {', '.join(map(str, sources))}: {exc}",
                               "DPU_ERR_ELF_INVALID_FILE") from None
            # The program outlives the build folder: its bytes, loaded from memory.
            return out.read_bytes(), f"<built from {', '.join(s.name for s in sources)}>"

    def _update_symbol_attributes(self, symbols: Dict[str, DpuSymbol]):
        # This set and everything inside it now run the program; the sets around it may not.
        for outer in (self._top_set, self._rank_set):
            if outer is not None and outer is not self:
                object.__setattr__(outer, "_symbols", {})
        members = [] if self._dpu_list is None else [*self._ranks, *self._dpus]
        inner = {id(s): s for s in [self, *members]}
        for s in inner.values():
            object.__setattr__(s, "_symbols", dict(symbols))

    # ---------------------------------------------------------------- transfers
    def _flags(self, async_mode) -> int:
        asynchronous = self._async_mode if async_mode is None else async_mode
        return system.DPU_XFER_ASYNC if asynchronous else system.DPU_XFER_DEFAULT

    def _device(self, device) -> Union[str, system.Symbol]:
        if isinstance(device, str):
            return device
        named = self._sys.program().symbols.get(device.name)
        if named is not None and named.address == device.value() and named.size == device.size():
            return named
        return system.Symbol(device.name, device.value(), device.size())

    @_simulator_call
    def copy(self, dst, src, size: Optional[int] = None, offset: int = 0,
             async_mode: Optional[bool] = None):
        """Copy between the host and the DPUs: one of ``dst``/``src`` is a symbol (its name or
        a DpuSymbol), the other a host buffer or a list with one per DPU."""
        to_dpu = isinstance(dst, (str, DpuSymbol))
        from_dpu = isinstance(src, (str, DpuSymbol))
        if to_dpu == from_dpu:
            raise DpuError("can only execute Host <-> DPU transfers")
        host, device = (src, dst) if to_dpu else (dst, src)
        if size is not None:
            size = _integer(size, "size", 0, _SIZE_MAX, "DPU_ERR_INVALID_BUFFER_SIZE")
        offset = _integer(offset, "offset", 0, _U32, "DPU_ERR_INVALID_MEMORY_TRANSFER")
        multiple = isinstance(host, list)
        if multiple and len(host) == 1 and len(self) == 1:
            multiple, host = False, host[0]
        flags = self._flags(async_mode)
        with _translate():
            symbol = self._device(device)
            if multiple:
                self._copy_many(host, symbol, size, offset, to_dpu, flags)
            else:
                self._copy_one(host, symbol, size, offset, to_dpu, flags)

    def _copy_one(self, host, symbol, size, offset, to_dpu, flags):
        view = _byte_view(host, writable=not to_dpu)
        if size is None:
            size = len(view)
        elif len(view) < size:
            raise DpuError("host buffer is too small", "DPU_ERR_INVALID_BUFFER_SIZE")
        if to_dpu:
            self._sys.broadcast_to(symbol, offset, view[:size], flags)
        else:
            self._push(system.DPU_XFER_FROM_DPU, {int(s): view for s in self._sys.slots},
                       symbol, offset, size, flags)

    def _copy_many(self, host: list, symbol, size, offset, to_dpu, flags):
        if len(host) != len(self):
            raise DpuError("invalid number of host buffers for this DPU set",
                           "DPU_ERR_INVALID_MEMORY_TRANSFER")
        matrix = host.byte_matrix(writable=not to_dpu) if type(host) is HostRows else None
        if matrix is not None:              # rows of one array, as made: no look at each
            views, lengths = None, [matrix.shape[1]] if len(host) else []
        else:
            views = [None if b is None else _byte_view(b, writable=not to_dpu) for b in host]
            lengths = [len(v) for v in views if v is not None]
        buffer_size = min(lengths) if lengths else 0
        if size is None:
            size = buffer_size
        elif lengths and buffer_size < size:
            raise DpuError("host buffer is too small", "DPU_ERR_INVALID_BUFFER_SIZE")
        slots = self._sys.slots
        if views is None and size == 0:
            views = [_byte_view(b, writable=not to_dpu) for b in host]
        if size > 0 and (views is None or len(lengths) == len(views)):
            # Every DPU has a buffer: one vectorised transfer, booked as the push would be.
            if views is not None:
                matrix = _rows_of_one_array(views, size)
            elif size < matrix.shape[1]:
                matrix = matrix[:, :size]
            if to_dpu:
                self._sys.scatter_to(symbol, offset, matrix if matrix is not None
                                     else np.stack([v[:size] for v in views]))
            else:
                if matrix is not None and matrix.flags.c_contiguous:
                    self._sys.gather_from(symbol, offset, size, out=matrix)
                else:
                    rows = self._sys.gather_from(symbol, offset, size)
                    if matrix is not None:
                        matrix[...] = rows
                    else:
                        for view, row in zip(views, rows):
                            view[:size] = row
            return
        direction = system.DPU_XFER_TO_DPU if to_dpu else system.DPU_XFER_FROM_DPU
        self._push(direction, {int(s): v for s, v in zip(slots, views) if v is not None},
                   symbol, offset, size, flags)

    def _push(self, direction, buffers: dict, symbol, offset, size, flags):
        """dpu_prepare_xfer for each buffer, then one dpu_push_xfer on the set."""
        prepared = self._sys.alloc.prepared
        with self._lock:
            prepared.clear()
            prepared.update(buffers)
            try:
                self._sys.push_xfer(direction, symbol, offset, size, flags)
            finally:
                prepared.clear()

    # ---------------------------------------------------------------- execution
    @_simulator_call
    def exec(self, log=None, async_mode: Optional[bool] = None, timeout: Optional[float] = None):
        """Run the loaded program on every DPU of the set; then, unless asynchronous, write
        the DPUs' output to ``log`` (a stream, one per DPU, or a dict DPU -> stream) or to the
        streams given to the constructor.

        ``timeout`` (pimrl only): this launch's time limit in wall-clock seconds (0 or inf:
        none; default: the profile's ``timeout=``, else ``PIMRL_DPU_TIMEOUT``, else one
        hour). Past it the DPUs fault (DpuError ``DPU_ERR_DPU_FAULT`` naming the tasklet and
        the function it was in). Ctrl-C raises ``KeyboardInterrupt`` within a second."""
        limit = _timeout(timeout)
        asynchronous = self._async_mode if async_mode is None else async_mode
        with _translate():
            self._last_launch = self._sys.launch(
                system.DPU_ASYNCHRONOUS if asynchronous else system.DPU_SYNCHRONOUS, limit)
        if not asynchronous:
            self._logfn(log, None)

    @_simulator_call
    def log(self, stream=None):
        """Write the DPUs' output to ``stream`` (default: the constructor's, else stdout)."""
        self._logfn(stream, sys.stdout)

    def _logfn(self, log, default):
        if log is None and default is None and self._log is None and self._dpu_list is None:
            return          # no stream anywhere (members unbuilt: none of their own either)
        streams = {dpu: dpu._log if dpu._log is not None else default for dpu in self._dpus}
        if log is not None:
            if isinstance(log, list):
                if len(log) != len(self._dpus):
                    raise DpuError("cannot log, log list length does not match the number of DPUs in DpuSet")
                for dpu, dpu_log in zip(self._dpus, log):
                    if dpu_log is not None:
                        streams[dpu] = dpu_log
            elif isinstance(log, dict):
                streams.update(log)
            else:
                streams = {dpu: log for dpu in self._dpus}
        for dpu, stream in streams.items():
            if stream is None:
                continue
            if not callable(getattr(stream, "write", None)):
                raise DpuError("stream argument is not an object with a 'write' method")
            slot = int(dpu._sys.slots[0])
            with _translate():
                text = dpu._sys.log()
            header = f"=== DPU#0x{_dpu_id(dpu._sys.alloc, slot):x} ===\n"
            if isinstance(stream, io.RawIOBase) or isinstance(stream, io.BufferedIOBase):
                stream.write((header + text).encode())
            else:
                stream.write(header + text)

    @_simulator_call
    def sync(self):
        """Wait for the set's asynchronous work (and report its faults)."""
        with _translate():
            self._sys.sync()

    def call(self, fn: Callable[["DpuSet", int, Any], None], arg: Any,
             async_mode: Optional[bool] = None, is_blocking: bool = True, single_call: bool = False):
        """``fn(set, index, arg)`` once per rank of the set (or once on the whole set).
        Not a simulator call of the modelled clock: ``fn`` is the host's code, and the calls
        it makes count one by one."""
        asynchronous = self._async_mode if async_mode is None else async_mode
        if not asynchronous and not is_blocking:
            raise DpuError("a non-blocking callback must be asynchronous",
                           "DPU_ERR_NONBLOCKING_SYNC_CALLBACK")
        if single_call or self._sys.kind == "dpu":
            fn(self, 0, arg)
            return
        for index, rank in enumerate(self._ranks):
            fn(rank, index, arg)

    def checkpoint(self, iram: bool = True, mram: bool = True, wram: bool = True):
        raise DpuError("checkpoints are not modelled by the pimrl simulator", "DPU_ERR_SYSTEM")

    def restore(self, context, iram: bool = True, mram: bool = True, wram: bool = True):
        raise DpuError("checkpoints are not modelled by the pimrl simulator", "DPU_ERR_SYSTEM")
