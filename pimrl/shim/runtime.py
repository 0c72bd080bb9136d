"""The Python side of ``libdpu.so``: runs inside a C host program's embedded interpreter.

Each ``_pimrl_py_*`` function below implements one SDK call of ``host/src/dpu_shim.c`` on
:mod:`pimrl.pim.system`, the one implementation of memories, transfer rules, launches and
modelled costs. This module only translates: C set references to :class:`DpuSet` objects,
C pointers to numpy views (no copies on the way in; prepared buffers are read or written
when the transfer is pushed), and Python exceptions to ``dpu_error_t`` codes (a
:class:`~pimrl.pim.errors.DpuError` gives its own code, anything else ``DPU_ERR_INTERNAL``).

Small transfers do not come here: the C layer (``host/src/dpu_fast.c``) does them on the
memories this module *publishes* after each of its calls (:func:`_publish`) and queues
their costs, which :func:`_book_records` adds to the ledger, in order, before the next
call. The message of the last error is kept on the C side (``pimrl_sim_last_error``, and
``dpu_error_to_string`` of that error); ``PIMRL_SHIM_TRACE=1`` also prints every error as it
happens.
"""
from __future__ import annotations

import hashlib
import os
import sys
import traceback

import numpy as np

from pimrl.pim import cost, programs, system
from pimrl.pim.errors import DpuError, DpuErrorCode, fail
from pimrl.pim.memory import PagedMram
from pimrl.shim import clock

ALL_RANKS = 0xFFFFFFFF
SET_RANKS, SET_DPU = 0, 1
DPU_XFER_PARALLEL = 1 << 2
COPY_TO, COPY_FROM, BROADCAST, PUSH_TO, PUSH_FROM = 0, 1, 2, 3, 4
OK = int(DpuErrorCode.DPU_OK)
INTERNAL = int(DpuErrorCode.DPU_ERR_INTERNAL)
TRACE = os.environ.get("PIMRL_SHIM_TRACE", "") not in ("", "0")
#: PIMRL_SHIM_FAST_PATH=0 sends every transfer through Python (the baseline of
#: benchmarks/bench_shim.py, and a cross-check of the fast path in the tests).
FAST_PATH = os.environ.get("PIMRL_SHIM_FAST_PATH", "1") != "0"
# Order of the numbers _pimrl_py_describe writes (PIMRL_HW_* in shim_internal.h).
HW_FIELDS = ("mram_bytes", "wram_bytes", "iram_bytes", "freq_mhz", "threads", "dpus_per_rank")
RECORD_DTYPE = np.dtype([("handle", "<u4"), ("op", "<u4"), ("phase", "<i4"), ("program", "<u4"),
                         ("symbol", "<u4"), ("n_dpus", "<u4"), ("n_ranks", "<u4"), ("pad", "<u4"),
                         ("bytes", "<u8")])


class _Program:
    """A simulator program seen from C: its ``struct pimrl_program`` and symbol table."""

    def __init__(self, program: system.DpuProgram, pimrl_id: int, path: str):
        self.program = program
        self.names = list(program.symbols)
        self._keep = [_ffi.new("char[]", n.encode()) for n in self.names]
        self._map = _ffi.new("dpu_elf_symbol_t[]", max(1, len(self.names)))
        for i, name in enumerate(self.names):
            sym = program.symbols[name]
            self._map[i].name = self._keep[i]
            self._map[i].value = sym.address & 0xFFFFFFFF
            self._map[i].size = min(sym.size, 0xFFFFFFFF)
        self._symbols = _ffi.new("dpu_elf_symbols_t *", {"nr_symbols": len(self.names), "map": self._map})
        self._path = _ffi.new("char[]", path.encode("utf-8", "surrogateescape"))
        self.c = _ffi.new("struct pimrl_program *")
        sdk = self.c.sdk
        sdk.nr_threads_enabled = int(getattr(program, "nr_tasklets", getattr(program, "tasklets", 0)) or 0) & 0xFF
        sdk.symbols = self._symbols
        sdk.reference_count = 1
        sdk.program_path = self._path
        for field in ("printf_buffer_address", "printf_buffer_size", "printf_write_pointer_address",
                      "printf_buffer_has_wrapped_address", "mcount_address", "ret_mcount_address",
                      "thread_profiling_address", "perfcounter_end_value_address",
                      "open_print_sequence_addr", "close_print_sequence_addr"):
            setattr(sdk, field, -1)
        self.c.pimrl_id = pimrl_id


class _Entry:
    """One allocation seen from C: its set, rank and DPU sets (cached), loaded programs, and
    the C ``struct pimrl_alloc`` it publishes its memories in."""

    def __init__(self, dset: system.DpuSet, c_alloc):
        self.all = dset
        self.alloc = dset.alloc
        self.c = c_alloc
        self.freed = False
        self._ranks = None
        self._dpus = {}
        self.programs = {}                   # dpu_load key -> DpuProgram
        self._published_programs = None
        self._c_programs = None

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
_programs: dict = {}            # id(DpuProgram) -> _Program
_programs_by_id: dict = {}      # pimrl_id -> _Program
_log_keepalive = None
_records_out = None
_record_keys: dict = {}         # record fields -> (category, seconds, what)


# ------------------------------------------------------------------------------- helpers
def _text(ptr) -> str | None:
    return None if ptr == _ffi.NULL else _ffi.string(ptr).decode("utf-8", "surrogateescape")


def _entry(ref, allow_freed=False) -> _Entry:
    entry = _entries.get(int(ref.pimrl_handle))
    if entry is None:
        raise fail("INVALID_DPU_SET", f"no DPU set has handle {int(ref.pimrl_handle)}")
    if entry.freed and not allow_freed:
        raise fail("INVALID_DPU_SET", "this DPU set was freed")
    return entry


def _set_of(ref) -> system.DpuSet:
    """The simulator's DpuSet behind a C set reference."""
    entry = _entry(ref)
    if int(ref.kind) == SET_RANKS:
        rank = int(ref.pimrl_rank)
        return entry.all if rank == ALL_RANKS else entry.rank_sets()[rank]
    slot = int(ref.pimrl_dpu)
    if not entry.alloc.enabled[slot]:
        raise fail("DPU_DISABLED", f"DPU {slot} of this allocation is disabled")
    return entry.dpu_set(slot)


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
    _lib._pimrl_set_error(code, message.encode("utf-8", "replace")[:2000])
    if TRACE:
        print(f"pimrl shim: {DpuErrorCode(code).name}: {message}", file=sys.stderr, flush=True)


def _pointer(arr: np.ndarray, ctype: str):
    if not arr.flags.c_contiguous:
        raise ValueError("not contiguous")
    return _ffi.cast(ctype, arr.ctypes.data)


def _publish(entry: _Entry):
    """Tell the C fast path where this allocation's memories and programs are now."""
    m = entry.c.mem
    m.valid = 0
    if entry.freed or not FAST_PATH:
        return
    a = entry.alloc
    a.wram_high = a.wram.shape[1]           # the C side writes WRAM past the Python checks
    try:
        m.wram = _pointer(a.wram, "uint8_t *")
        m.wram_bytes = a.wram.shape[1]
        m.mram_bytes = a.hw.mram_bytes
        m.page_table = _pointer(a.mram.page_table, "int32_t *")
        m.pages_per_bank = a.mram.page_table.shape[1]
        m.pool = _pointer(a.mram.pool, "uint8_t *")
        m.program_of = _pointer(a.program_of, "int64_t *")
        m.running = _pointer(a.running.view(np.uint8), "uint8_t *")
    except ValueError:
        return                                   # the fast path stays off
    m.phase = -1 if a.phase is None else cost.CATEGORIES.index(a.phase)
    if entry._published_programs != len(a.programs):
        table = _ffi.new("struct pimrl_program *[]", max(1, len(a.programs)))
        for i, program in enumerate(a.programs):
            handle = _programs.get(id(program))
            table[i] = handle.c if handle is not None else _ffi.NULL
        entry._c_programs = table
        entry._published_programs = len(a.programs)
    m.programs = entry._c_programs
    m.nr_programs = len(a.programs)
    m.valid = 1


def _book_records():
    """Cost the transfers the C fast path did, in the order it did them."""
    n = _lib._pimrl_take_records(_records_out)
    if n == 0:
        return
    rows = np.frombuffer(_ffi.buffer(_records_out[0], n * RECORD_DTYPE.itemsize), dtype=RECORD_DTYPE)
    for handle, op, phase, prog, sym, n_dpus, n_ranks, _, nbytes in rows.tolist():
        entry = _entries[handle]
        key = (handle, op, phase, prog, sym, n_dpus, n_ranks, nbytes)
        booked = _record_keys.get(key)
        if booked is None:
            booked = _record_keys[key] = _record_cost(entry, op, phase, prog, sym, n_dpus, n_ranks, nbytes)
        category, seconds, what = booked
        entry.alloc.ledger.add(category, seconds, what, bytes_per_dpu=nbytes, dpus=n_dpus)


def _record_cost(entry, op, phase, prog, sym, n_dpus, n_ranks, nbytes):
    """(category, modelled seconds, description) of one fast transfer, as DpuSet books it."""
    name = _programs[id(entry.alloc.programs[prog])].names[sym]
    to_dpu = op in (COPY_TO, BROADCAST, PUSH_TO)
    category = cost.CATEGORIES[phase] if phase >= 0 else ("cpu_dpu" if to_dpu else "dpu_cpu")
    serial = op == COPY_FROM or (op == COPY_TO and n_dpus == 1)
    broadcast = op == BROADCAST or (op == COPY_TO and n_dpus > 1)
    seconds = system.transfer_seconds(entry.alloc.hw, to_dpu, nbytes, n_dpus, n_ranks, serial, broadcast)
    what = {COPY_TO: "copy_to", COPY_FROM: "copy_from", BROADCAST: "broadcast",
            PUSH_TO: "push_xfer to", PUSH_FROM: "push_xfer from"}[op]
    return category, seconds, f"{what} {name}"


def _guard(fn):
    """Run an SDK call: None -> DPU_OK, DpuError -> its code, anything else -> INTERNAL.
    The fast path's queued transfers are booked first; the memories are republished after."""
    def call(*args):
        try:
            _book_records()
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
        finally:
            try:
                for entry in _entries.values():
                    if not entry.freed:
                        _publish(entry)
            except BaseException:                       # pragma: no cover - keep C safe
                for entry in _entries.values():
                    entry.c.mem.valid = 0
    call.__name__ = fn.__name__
    return call


# ------------------------------------------------------------------------------- the calls
def py_start():
    return OK


def py_alloc(count, profile, by_ranks, c_alloc):
    global _next_handle
    text = _text(profile)
    if by_ranks:
        dset = system.dpu_alloc_ranks(int(count), text)
    else:
        dset = system.dpu_alloc(int(count), text)
    handle = _next_handle
    _next_handle += 1
    _entries[handle] = _Entry(dset, c_alloc)
    a = dset.alloc
    c_alloc.handle = handle
    c_alloc.nr_ranks = len(a.ranks)
    c_alloc.dpus_per_rank = a.hw.dpus_per_rank
    c_alloc.nr_slots = a.n_slots


def _hw_numbers(hw, out):
    values = {"mram_bytes": hw.mram_bytes, "wram_bytes": hw.wram_bytes,
              "iram_bytes": getattr(hw, "iram_bytes", 0), "freq_mhz": int(round(hw.frequency_hz / 1e6)),
              "threads": getattr(hw, "max_tasklets", 24), "dpus_per_rank": hw.dpus_per_rank}
    for i, field in enumerate(HW_FIELDS):
        out[i] = int(values[field])


def py_describe(c_alloc, rank_ids, enabled, hw):
    entry = _entries[int(c_alloc.handle)]
    a = entry.alloc
    for i, r in enumerate(a.ranks):
        rank_ids[i] = int(r)
    mask = a.enabled.astype(np.uint8)
    _ffi.memmove(enabled, mask.tobytes(), len(mask))
    _hw_numbers(a.hw, hw)


def py_profile_description(profile, hw):
    machine = system.machine_for_profile(_text(profile))
    _hw_numbers(machine.hw, hw)


def py_free(ref):
    entry = _entry(ref)
    entry.all.free()
    entry.freed = True
    entry.c.mem.valid = 0
    # The ledger stays readable (pimrl_sim_modelled_seconds); the memories go.
    a = entry.alloc
    a.prepared.clear()
    a.mram = PagedMram(1, 4096)
    a.wram = np.zeros((0, 0), dtype=np.uint8)
    entry._dpus.clear()
    entry._ranks = None


def py_load(ref, path, buffer, size, program_out):
    entry = _entry(ref)
    dset = _set_of(ref)
    data = None
    if path != _ffi.NULL:
        text = key = _text(path)
    elif buffer != _ffi.NULL:
        # dpu_load_from_memory: read from the bytes, no file written (none left behind)
        data = bytes(_ffi.buffer(buffer, int(size)))
        digest = hashlib.sha256(data).hexdigest()
        key, text = f"memory:{digest}", f"<program in memory, sha256 {digest[:16]}>"
    else:
        raise fail("ELF_NO_SUCH_FILE", "dpu_load: the binary path is NULL")
    program = entry.programs.get(key)
    if program is None:
        program = (programs.load_program(text, entry.alloc.hw) if data is None
                   else programs.load_program_data(data, entry.alloc.hw, text))
        entry.programs[key] = program          # the same file loads the same program
    dset.load(program)
    handle = _programs.get(id(program))
    if handle is None:
        handle = _Program(program, len(_programs_by_id) + 1, text if path != _ffi.NULL else "<memory>")
        _programs[id(program)] = _programs_by_id[int(handle.c.pimrl_id)] = handle
    if program_out != _ffi.NULL:
        program_out[0] = _ffi.cast("struct dpu_program_t *", handle.c)


def py_get_symbol(program_ptr, name, out):
    if program_ptr == _ffi.NULL:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: the program is NULL")
    handle = _programs_by_id.get(int(_ffi.cast("struct pimrl_program *", program_ptr).pimrl_id))
    if handle is None:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: not a program returned by dpu_load")
    program = handle.program
    text = _text(name)
    if text is None or text not in program.symbols:
        raise fail("UNKNOWN_SYMBOL", f"program {program.name} has no host-visible symbol "
                   f"{text!r} (it has: {', '.join(sorted(program.symbols))})")
    if out == _ffi.NULL:
        raise fail("INTERNAL", "dpu_get_symbol: the output symbol pointer is NULL")
    sym = program.symbols[text]
    out.address = sym.address
    out.size = min(sym.size, 0xFFFFFFFF)


def py_launch(ref, policy):
    _set_of(ref).launch(int(policy))


def py_status(ref, done, fault):
    dset = _set_of(ref)
    slots = set(int(s) for s in dset.slots)
    # The simulator finishes a launch before dpu_launch returns: the work is always done.
    done[0] = 1
    fault[0] = int(any(f[0] in slots for f in dset.alloc.pending_faults))


def py_sync(ref):
    _set_of(ref).sync()


def py_copy(ref, op, name, symbol, offset, buffer, length, flags):
    if op == COPY_FROM and int(ref.kind) != SET_DPU:
        # the SDK's first check: dpu_copy_from reads one DPU, named as such
        raise fail("INVALID_DPU_SET", "dpu_copy_from needs a single-DPU set (from DPU_FOREACH); "
                   "this set is a list of ranks")
    dset = _set_of(ref)
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
        flags = int(flags)
        if flags & DPU_XFER_PARALLEL:
            _check_parallel(dset, sym, offset, length)
        # flag bits the SDK does not know, it ignores
        dset.broadcast_to(sym, offset, src, flags & (system.DPU_XFER_NO_RESET | system.DPU_XFER_ASYNC))
    else:
        raise fail("INTERNAL", f"unknown copy operation {op}")


def _check_parallel(dset, sym, offset, length):
    """DPU_XFER_PARALLEL: WRAM symbols only (the transfer does not wait for the DPUs; the
    simulator's DPUs have always finished, so it is otherwise an ordinary transfer)."""
    resolved = dset._resolve(sym, offset, length)
    if resolved.space != "wram":
        raise fail("INVALID_PARALLEL_MEMORY_TRANSFER", f"{resolved.name}: DPU_XFER_PARALLEL transfers "
                   f"WRAM symbols only; this one is in {resolved.space.upper()}")


def py_raw(ref, to_dpu, memory, offset, buffer, length):
    """dpu_memory.h: bytes at an offset of one DPU's WRAM (memory 0) or MRAM (1), no program
    needed; costed as a serial transfer."""
    dset = _set_of(ref)
    dset._check_alive()
    hw = dset.alloc.hw
    offset, length = int(offset), int(length)
    space, size, align = (("mram", hw.mram_bytes, 8) if memory else ("wram", hw.wram_bytes, 4))
    code = f"INVALID_{space.upper()}_ACCESS"
    if offset + length > size:
        raise fail(code, f"{space.upper()} offset {offset} + length {length} exceeds the DPU's {size} bytes")
    if offset % align or length % align:
        raise fail(code, f"{space.upper()} offset {offset} and length {length} must be multiples of {align}")
    if length and buffer == _ffi.NULL:
        raise fail("INVALID_BUFFER_SIZE", "the host buffer is NULL")
    sym = system.Symbol(f"<{space}>", system.MRAM_BASE if memory else 0, size)
    dset._wait()
    host = _HostBuffer(buffer).view(length)
    if to_dpu:
        dset._write(dset.slots, sym, offset, host)
    else:
        host[:] = dset._read(dset.slots, sym, offset, length)[0]
    dset._account(bool(to_dpu), length, serial=True, what=f"copy_{'to' if to_dpu else 'from'}_{space}")


def py_push(ref, xfer, name, symbol, offset, length, flags, c_prepared):
    """dpu_push_xfer, with the SDK's checks in its order: one program, the symbol, bounds and
    alignment, then the direction, then DPU_XFER_PARALLEL (WRAM only); flag bits it does not
    know are ignored, as the SDK ignores them."""
    dset = _set_of(ref)
    sym = _symbol_arg(dset, name, symbol)
    offset, length, flags = int(offset), int(length), int(flags)
    resolved = dset._resolve(sym, offset, length)
    if int(xfer) not in (system.DPU_XFER_TO_DPU, system.DPU_XFER_FROM_DPU):
        raise fail("INVALID_MEMORY_TRANSFER", f"unknown transfer direction {int(xfer)}")
    if flags & DPU_XFER_PARALLEL:
        _check_parallel(dset, resolved, offset, length)
    flags &= system.DPU_XFER_NO_RESET | system.DPU_XFER_ASYNC
    prepared = dset.alloc.prepared
    prepared.clear()
    for s in dset.slots:
        ptr = c_prepared[int(s)]
        if ptr != _ffi.NULL:
            prepared[int(s)] = _HostBuffer(_ffi.cast("char *", ptr)).view(length)
    try:
        dset.push_xfer(int(xfer), resolved, offset, length, flags)
    finally:
        prepared.clear()                            # the C layer owns prepared buffers


def py_check_symbol(ref, name, symbol, offset, length, sg, out):
    dset = _set_of(ref)
    sym = dset._resolve(_symbol_arg(dset, name, symbol), int(offset), int(length))
    if sg and sym.space != "mram":
        raise fail("SG_NOT_MRAM_SYMBOL", f"{sym.name}: scatter/gather transfers need an MRAM symbol; "
                   f"this one is in {sym.space.upper()}")
    out.address = sym.address
    out.size = min(sym.size, 0xFFFFFFFF)


def py_log(ref, text_out, length_out):
    global _log_keepalive
    dset = _set_of(ref)
    data = dset.log().encode("utf-8", "replace")
    _log_keepalive = _ffi.new("char[]", data + b"\0")
    text_out[0] = _log_keepalive
    length_out[0] = len(data)


def py_phase(ref, category):
    entry = _entry(ref)
    text = _text(category)
    if text is not None and text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    entry.alloc.phase = text


def py_modelled(ref, category, seconds):
    entry = _entry(ref, allow_freed=True)
    text = _text(category)
    if text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    if seconds == _ffi.NULL:
        raise fail("INTERNAL", "the output pointer is NULL")
    seconds[0] = float(entry.alloc.ledger.modelled_s[text])


def py_modelled_total(seconds):
    """Modelled seconds of every allocation so far, freed ones included (the modelled clock
    of ``PIMRL_MODELLED_CLOCK``, host/src/dpu_shim.c; the ``dpu`` package's reads the same
    sum, :mod:`pimrl.shim.clock`); _guard has booked the fast path's queued transfers first."""
    seconds[0] = clock.modelled_total_s(e.alloc for e in _entries.values())


def py_flush():
    return None                                     # _guard books the records


_CALLS = {
    "_pimrl_py_start": py_start, "_pimrl_py_alloc": py_alloc, "_pimrl_py_describe": py_describe,
    "_pimrl_py_profile_description": py_profile_description, "_pimrl_py_free": py_free,
    "_pimrl_py_load": py_load, "_pimrl_py_get_symbol": py_get_symbol,
    "_pimrl_py_launch": py_launch, "_pimrl_py_status": py_status, "_pimrl_py_sync": py_sync,
    "_pimrl_py_copy": py_copy, "_pimrl_py_raw": py_raw, "_pimrl_py_push": py_push,
    "_pimrl_py_check_symbol": py_check_symbol, "_pimrl_py_log": py_log,
    "_pimrl_py_phase": py_phase, "_pimrl_py_modelled": py_modelled, "_pimrl_py_flush": py_flush,
    "_pimrl_py_modelled_total": py_modelled_total,
}


def install(ffi, lib):
    """Bind the embedding API to this module (called by libdpu's embedding_init_code)."""
    global _ffi, _lib, _records_out
    _ffi, _lib = ffi, lib
    _records_out = ffi.new("struct pimrl_record **")
    for name, fn in _CALLS.items():
        ffi.def_extern(name=name, error=INTERNAL)(_guard(fn))
    lib._pimrl_mark_ready()
