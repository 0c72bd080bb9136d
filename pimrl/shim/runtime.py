"""The Python side of ``libdpu.so``: runs inside a C host program's embedded interpreter.

Each ``_pimrl_py_*`` function below implements one SDK call of ``host/src/dpu_shim.c`` on
:mod:`pimrl.pim.system`, the one implementation of memories, transfer rules, launches and
modelled costs. This module only translates: C set handles to :class:`DpuSet` objects, C
pointers to numpy views (no copies on the way in; prepared buffers are read or written when
the transfer is pushed), and Python exceptions to ``dpu_error_t`` codes (a
:class:`~pimrl.pim.errors.DpuError` gives its own code, anything else ``DPU_ERR_INTERNAL``).
The message of the last error is kept on the C side (``pimrl_sim_last_error``, printed by
``DPU_ASSERT``); ``PIMRL_SHIM_TRACE=1`` also prints every error as it happens.
"""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np

from pimrl.pim import cost, system
from pimrl.pim.errors import DpuError, DpuErrorCode, fail
from pimrl.shim import programs

ALL_RANKS = 0xFFFFFFFF
DPU_SET_RANKS, DPU_SET_DPU = 0, 1
COPY_TO, COPY_FROM, BROADCAST = 0, 1, 2
OK = int(DpuErrorCode.DPU_OK)
INTERNAL = int(DpuErrorCode.DPU_ERR_INTERNAL)
TRACE = os.environ.get("PIMRL_SHIM_TRACE", "") not in ("", "0")


class _Entry:
    """One allocation seen from C: its sets (cached), its loaded programs and their handles."""

    def __init__(self, dset: system.DpuSet):
        self.all = dset
        self.alloc = dset.alloc
        self.freed = False
        self._ranks = None
        self._dpus = {}
        self.programs = {}                   # dpu_load path -> DpuProgram

    def rank_sets(self):
        if self._ranks is None:
            a = self.alloc
            ranks = a.rank_of(self.all.slots)
            self._ranks = [system.DpuSet(a, self.all.slots[ranks == r], "rank")
                           for r in range(len(a.ranks))]
        return self._ranks

    def dpu_set(self, slot: int) -> system.DpuSet:
        dset = self._dpus.get(slot)
        if dset is None:
            dset = self._dpus[slot] = system.DpuSet(self.alloc, [slot], "dpu")
        return dset


class _HostBuffer:
    """A host pointer given to dpu_prepare_xfer; becomes a numpy view at push time."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def view(self, length: int) -> np.ndarray:
        if length == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.frombuffer(_ffi.buffer(self.ptr, length), dtype=np.uint8)


_ffi = None
_lib = None
_entries: dict = {}
_next_handle = 1
_program_handles: dict = {}     # id(DpuProgram) -> (cdata struct dpu_program_t *, program)
_programs_by_id: dict = {}      # pimrl_id -> DpuProgram
_log_keepalive = None


# ------------------------------------------------------------------------------- helpers
def _text(ptr) -> str | None:
    return None if ptr == _ffi.NULL else _ffi.string(ptr).decode("utf-8", "surrogateescape")


def _entry(cset, allow_freed=False) -> _Entry:
    if cset == _ffi.NULL:
        raise fail("INVALID_DPU_SET", "NULL DPU set")
    entry = _entries.get(int(cset.pimrl_handle))
    if entry is None:
        raise fail("INVALID_DPU_SET", f"no DPU set has handle {int(cset.pimrl_handle)} (was it "
                   "initialised by dpu_alloc?)")
    if entry.freed and not allow_freed:
        raise fail("INVALID_DPU_SET", "this DPU set was freed")
    return entry


def _set_of(cset) -> system.DpuSet:
    """The simulator's DpuSet behind a C ``struct dpu_set_t``."""
    entry = _entry(cset)
    kind = int(cset.kind)
    if kind == DPU_SET_RANKS:
        rank = int(cset.pimrl_rank)
        if rank == ALL_RANKS:
            return entry.all
        ranks = entry.rank_sets()
        if rank >= len(ranks):
            raise fail("INVALID_DPU_SET", f"rank {rank} is not in this allocation of "
                       f"{len(ranks)} ranks")
        return ranks[rank]
    if kind == DPU_SET_DPU:
        slot = int(cset.pimrl_dpu)
        if slot >= entry.alloc.n_slots:
            raise fail("INVALID_DPU_SET", f"DPU {slot} is not in this allocation of "
                       f"{entry.alloc.n_slots} DPU slots")
        if not entry.alloc.enabled[slot]:
            raise fail("DPU_DISABLED", f"DPU {slot} of this allocation is disabled")
        return entry.dpu_set(slot)
    raise fail("INVALID_DPU_SET", f"unknown DPU set kind {kind}")


def _fill_set(out, handle: int, kind: int, rank: int = ALL_RANKS, dpu: int = 0):
    out.kind = kind
    out.pimrl_handle = handle
    out.pimrl_rank = rank
    out.pimrl_dpu = dpu


def _symbol_arg(dset: system.DpuSet, name_ptr, symbol_ptr):
    """A symbol name (str), or a Symbol for the ``*_symbol`` variants of the API."""
    if symbol_ptr != _ffi.NULL:
        address, size = int(symbol_ptr.address), int(symbol_ptr.size)
        program = dset.program()
        for sym in program.symbols.values():
            if sym.address == address and sym.size == size:
                return sym
        return system.Symbol(f"<symbol at {address:#x}>", address, size)
    name = _text(name_ptr)
    if name is None:
        raise fail("UNKNOWN_SYMBOL", "symbol name is NULL")
    return name


def _report(code: int, message: str):
    _lib._pimrl_set_message(message.encode("utf-8", "replace")[:2000])
    if TRACE:
        print(f"pimrl shim: {DpuErrorCode(code).name}: {message}", file=sys.stderr, flush=True)


def _guard(fn):
    """Run an SDK call: None -> DPU_OK, DpuError -> its code, anything else -> INTERNAL."""
    def call(*args):
        try:
            result = fn(*args)
            return OK if result is None else result
        except DpuError as exc:
            _report(int(exc.code), str(exc))
            return int(exc.code)
        except BaseException as exc:                     # never let Python unwind into C
            _report(INTERNAL, f"{fn.__name__}: {type(exc).__name__}: {exc}")
            if TRACE:
                traceback.print_exc()
            return INTERNAL
    call.__name__ = fn.__name__
    return call


# ------------------------------------------------------------------------------- the calls
def py_start():
    return OK


def py_alloc(count, profile, by_ranks, out):
    global _next_handle
    if out == _ffi.NULL:
        raise fail("INTERNAL", "dpu_alloc: the output set pointer is NULL")
    text = _text(profile)
    if by_ranks:
        dset = system.dpu_alloc_ranks(int(count), text)
    else:
        dset = system.dpu_alloc(int(count), text)
    handle = _next_handle
    _next_handle += 1
    _entries[handle] = _Entry(dset)
    _fill_set(out, handle, DPU_SET_RANKS)


def py_free(cset):
    entry = _entry(cset)
    dset = _set_of(cset)
    if dset is not entry.all:
        raise fail("INVALID_DPU_SET", "dpu_free takes the set returned by dpu_alloc (not one "
                   "of its ranks or DPUs)")
    dset.free()
    entry.freed = True
    # The ledger stays readable (pimrl_sim_modelled_seconds); the memories go.
    a = entry.alloc
    a.prepared.clear()
    a.mram = system.PagedMram(1, 4096)
    a.wram = np.zeros((0, 0), dtype=np.uint8)
    entry._dpus.clear()
    entry._ranks = None


def py_count(cset, ranks, out):
    dset = _set_of(cset)
    if out == _ffi.NULL:
        raise fail("INTERNAL", "the output count pointer is NULL")
    out[0] = dset.nr_ranks if ranks else dset.nr_dpus


def py_member(cset, ranks, index, out):
    """1 and the index-th rank (or DPU) of the set in ``out``; 0 past the end or on error."""
    try:
        dset = _set_of(cset)
        handle = int(cset.pimrl_handle)
    except DpuError:
        return 0
    index = int(index)
    if ranks:
        if dset.kind == "dpu":                 # a DPU's only "rank" is the DPU itself
            if index:
                return 0
            _fill_set(out, handle, DPU_SET_DPU, ALL_RANKS, int(dset.slots[0]))
            return 1
        if dset.kind == "rank":
            if index:
                return 0
            _fill_set(out, handle, DPU_SET_RANKS, int(cset.pimrl_rank))
            return 1
        rank_sets = _entries[handle].rank_sets()
        if index >= len(rank_sets):
            return 0
        _fill_set(out, handle, DPU_SET_RANKS, index)
        return 1
    if index >= len(dset.slots):
        return 0
    _fill_set(out, handle, DPU_SET_DPU, ALL_RANKS, int(dset.slots[index]))
    return 1


def py_load(cset, path, program_out):
    entry = _entry(cset)
    dset = _set_of(cset)
    text = _text(path)
    if text is None:
        raise fail("ELF_NO_SUCH_FILE", "dpu_load: the binary path is NULL")
    program = entry.programs.get(text)
    if program is None:
        program = programs.load_program(text, entry.alloc.hw)
        entry.programs[text] = program          # the same path loads the same program
    dset.load(program)
    if program_out != _ffi.NULL:
        handle = _program_handles.get(id(program))
        if handle is None:
            cdata = _ffi.new("struct dpu_program_t *")
            cdata.pimrl_id = len(_programs_by_id) + 1
            _programs_by_id[int(cdata.pimrl_id)] = program
            handle = _program_handles[id(program)] = (cdata, program)
        program_out[0] = handle[0]


def py_get_symbol(program_ptr, name, out):
    if program_ptr == _ffi.NULL:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: the program is NULL")
    program = _programs_by_id.get(int(program_ptr.pimrl_id))
    if program is None:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: not a program returned by dpu_load")
    text = _text(name)
    if text is None or text not in program.symbols:
        raise fail("UNKNOWN_SYMBOL", f"program {program.name} has no host-visible symbol "
                   f"{text!r} (it has: {', '.join(sorted(program.symbols))})")
    if out == _ffi.NULL:
        raise fail("INTERNAL", "dpu_get_symbol: the output symbol pointer is NULL")
    sym = program.symbols[text]
    out.address = sym.address
    out.size = min(sym.size, 0xFFFFFFFF)


def py_launch(cset, policy):
    _set_of(cset).launch(int(policy))


def py_status(cset, done, fault):
    dset = _set_of(cset)
    slots = set(int(s) for s in dset.slots)
    # The simulator finishes a launch before dpu_launch returns: the work is always done.
    done[0] = 1
    fault[0] = int(any(f[0] in slots for f in dset.alloc.pending_faults))


def py_sync(cset):
    _set_of(cset).sync()


def py_copy(cset, op, name, symbol, offset, buffer, length, flags):
    dset = _set_of(cset)
    sym = _symbol_arg(dset, name, symbol)
    offset, length = int(offset), int(length)
    if op == COPY_FROM:
        data = dset.copy_from(sym, offset, length)        # all checks before the host buffer
        if length:
            if buffer == _ffi.NULL:
                raise fail("INVALID_BUFFER_SIZE", "dpu_copy_from: the destination is NULL")
            np.frombuffer(_ffi.buffer(buffer, length), dtype=np.uint8)[:] = data
        return None
    # The SDK checks the access before reading the host buffer: so do we, so that a length
    # the symbol cannot hold is refused without touching the caller's memory.
    dset._resolve(sym, offset, length)
    if length and buffer == _ffi.NULL:
        raise fail("INVALID_BUFFER_SIZE", "the source buffer is NULL")
    src = _HostBuffer(buffer).view(length)
    if op == COPY_TO:
        dset.copy_to(sym, offset, src)
    elif op == BROADCAST:
        if int(flags) not in (system.DPU_XFER_DEFAULT, system.DPU_XFER_NO_RESET,
                              system.DPU_XFER_ASYNC, system.DPU_XFER_NO_RESET | system.DPU_XFER_ASYNC):
            raise fail("INVALID_MEMORY_TRANSFER", f"unknown transfer flags {int(flags)}")
        dset.broadcast_to(sym, offset, src, int(flags))
    else:
        raise fail("INTERNAL", f"unknown copy operation {op}")


def py_prepare(cset, buffer):
    dset = _set_of(cset)
    if buffer == _ffi.NULL:
        raise fail("INVALID_BUFFER_SIZE", "dpu_prepare_xfer: the buffer is NULL")
    dset.prepare_xfer(_HostBuffer(_ffi.cast("char *", buffer)))


def py_push(cset, xfer, name, symbol, offset, length, flags):
    dset = _set_of(cset)
    sym = _symbol_arg(dset, name, symbol)
    offset, length = int(offset), int(length)
    prepared = dset.alloc.prepared
    try:
        dset._resolve(sym, offset, length)
        checked = True
    except DpuError:
        checked = False          # push_xfer raises the right error before using any buffer
    swapped = {}
    if checked:
        for s in dset.slots:
            token = prepared.get(int(s))
            if isinstance(token, _HostBuffer):
                swapped[int(s)] = token
                prepared[int(s)] = token.view(length)
    try:
        dset.push_xfer(int(xfer), sym, offset, length, int(flags))
    finally:
        for s, token in swapped.items():
            if s in prepared:                     # DPU_XFER_NO_RESET, or an error
                prepared[s] = token


def py_log(cset, text_out, length_out):
    global _log_keepalive
    dset = _set_of(cset)
    data = dset.log().encode("utf-8", "replace")
    _log_keepalive = _ffi.new("char[]", data + b"\0")
    text_out[0] = _log_keepalive
    length_out[0] = len(data)


def py_phase(cset, category):
    entry = _entry(cset)
    text = _text(category)
    if text is not None and text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    entry.alloc.phase = text


def py_modelled(cset, category, seconds):
    entry = _entry(cset, allow_freed=True)
    text = _text(category)
    if text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    if seconds == _ffi.NULL:
        raise fail("INTERNAL", "the output pointer is NULL")
    seconds[0] = float(entry.alloc.ledger.modelled_s[text])


def py_modelled_total(seconds):
    """Modelled seconds of every allocation so far, freed ones included (the modelled clock
    of ``PIMRL_MODELLED_CLOCK``, host/src/dpu_shim.c)."""
    seconds[0] = float(sum(e.alloc.ledger.modelled_total_s for e in _entries.values()))


_CALLS = {
    "_pimrl_py_start": py_start, "_pimrl_py_alloc": py_alloc, "_pimrl_py_free": py_free,
    "_pimrl_py_count": py_count, "_pimrl_py_load": py_load,
    "_pimrl_py_get_symbol": py_get_symbol, "_pimrl_py_launch": py_launch,
    "_pimrl_py_status": py_status, "_pimrl_py_sync": py_sync, "_pimrl_py_copy": py_copy,
    "_pimrl_py_prepare": py_prepare, "_pimrl_py_push": py_push, "_pimrl_py_log": py_log,
    "_pimrl_py_phase": py_phase, "_pimrl_py_modelled": py_modelled,
    "_pimrl_py_modelled_total": py_modelled_total,
}


def install(ffi, lib):
    """Bind the embedding API to this module (called by libdpu's embedding_init_code)."""
    global _ffi, _lib
    _ffi, _lib = ffi, lib
    for name, fn in _CALLS.items():
        ffi.def_extern(name=name, error=INTERNAL)(_guard(fn))

    def member(cset, ranks, index, out):
        try:
            return py_member(cset, ranks, index, out)
        except BaseException:                          # iteration simply stops
            return 0

    ffi.def_extern(name="_pimrl_py_member", error=0)(member)
    lib._pimrl_mark_ready()
