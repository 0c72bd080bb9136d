"""The Python side of ``libdpu.so``: runs inside a C host program's embedded interpreter.

Each ``_pimrl_py_*`` function below implements one SDK call of ``host/src/dpu_shim.c`` on
:mod:`pimrl.pim.system`, the one implementation of memories, transfer rules, launches and
modelled costs. This module only translates: C set references to :class:`DpuSet` objects,
C pointers to numpy views (no copies on the way in; prepared buffers are read or written
when the transfer is pushed), and Python exceptions to ``dpu_error_t`` codes (a
:class:`~pimrl.pim.errors.DpuError` gives its own code, anything else ``DPU_ERR_INTERNAL``).

Small transfers do not come here: the C layer (``host/src/dpu_fast.c``) does them on the
memories this module *publishes* after each of its calls (:func:`pimrl.shim.bridge.publish`) and queues
their costs, which :func:`pimrl.shim.bridge.book_records` adds to the ledger, in order, before the next
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
from pimrl.shim import bridge, clock
from pimrl.shim.bridge import BROADCAST, COPY_FROM, COPY_TO

ALL_RANKS = 0xFFFFFFFF
SET_RANKS, SET_DPU = 0, 1
DPU_XFER_PARALLEL = 1 << 2
OK = int(DpuErrorCode.DPU_OK)
INTERNAL = int(DpuErrorCode.DPU_ERR_INTERNAL)
TRACE = os.environ.get("PIMRL_SHIM_TRACE", "") not in ("", "0")
# Order of the numbers _pimrl_py_describe writes (PIMRL_HW_* in shim_internal.h).
HW_FIELDS = ("mram_bytes", "wram_bytes", "iram_bytes", "freq_mhz", "threads", "dpus_per_rank")


# ------------------------------------------------------------------------------- helpers
def _entry(ref, allow_freed=False) -> bridge.Entry:
    entry = bridge.entries.get(int(ref.pimrl_handle))
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
    if symbol_ptr != bridge.ffi.NULL:
        address, size = int(symbol_ptr.address), int(symbol_ptr.size)
        program = dset.program()
        for sym in program.symbols.values():
            if sym.address == address and sym.size == size:
                return sym
        return system.Symbol(f"<symbol at {address:#x}>", address, size)
    name = bridge.text(name_ptr)
    if name is None:
        raise fail("UNKNOWN_SYMBOL", "symbol name is NULL")
    return name


def _report(code: int, message: str):
    bridge.lib._pimrl_set_error(code, message.encode("utf-8", "replace")[:2000])
    if TRACE:
        print(f"pimrl shim: {DpuErrorCode(code).name}: {message}", file=sys.stderr, flush=True)


def _guard(fn):
    """Run an SDK call: None -> DPU_OK, DpuError -> its code, anything else -> INTERNAL.
    The fast path's queued transfers are booked first; the memories are republished after."""
    def call(*args):
        try:
            bridge.book_records()
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
                for entry in bridge.entries.values():
                    if not entry.freed:
                        bridge.publish(entry)
            except BaseException:                       # pragma: no cover - keep C safe
                for entry in bridge.entries.values():
                    entry.c.mem.valid = 0
    call.__name__ = fn.__name__
    return call


# ------------------------------------------------------------------------------- the calls
def py_start():
    return OK


def py_alloc(count, profile, by_ranks, c_alloc):
    text = bridge.text(profile)
    if by_ranks:
        dset = system.dpu_alloc_ranks(int(count), text)
    else:
        dset = system.dpu_alloc(int(count), text)
    handle = bridge.next_handle
    bridge.next_handle += 1
    bridge.entries[handle] = bridge.Entry(dset, c_alloc)
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
    entry = bridge.entries[int(c_alloc.handle)]
    a = entry.alloc
    for i, r in enumerate(a.ranks):
        rank_ids[i] = int(r)
    mask = a.enabled.astype(np.uint8)
    bridge.ffi.memmove(enabled, mask.tobytes(), len(mask))
    _hw_numbers(a.hw, hw)


def py_profile_description(profile, hw):
    machine = system.machine_for_profile(bridge.text(profile))
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
    if path != bridge.ffi.NULL:
        text = key = bridge.text(path)
    elif buffer != bridge.ffi.NULL:
        # dpu_load_from_memory: read from the bytes, no file written (none left behind)
        data = bytes(bridge.ffi.buffer(buffer, int(size)))
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
    handle = bridge.c_programs.get(id(program))
    if handle is None:
        handle = bridge.CProgram(program, len(bridge.c_programs_by_id) + 1, text if path != bridge.ffi.NULL else "<memory>")
        bridge.c_programs[id(program)] = bridge.c_programs_by_id[int(handle.c.pimrl_id)] = handle
    if program_out != bridge.ffi.NULL:
        program_out[0] = bridge.ffi.cast("struct dpu_program_t *", handle.c)


def py_get_symbol(program_ptr, name, out):
    if program_ptr == bridge.ffi.NULL:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: the program is NULL")
    handle = bridge.c_programs_by_id.get(int(bridge.ffi.cast("struct pimrl_program *", program_ptr).pimrl_id))
    if handle is None:
        raise fail("NO_PROGRAM_LOADED", "dpu_get_symbol: not a program returned by dpu_load")
    program = handle.program
    text = bridge.text(name)
    if text is None or text not in program.symbols:
        raise fail("UNKNOWN_SYMBOL", f"program {program.name} has no host-visible symbol "
                   f"{text!r} (it has: {', '.join(sorted(program.symbols))})")
    if out == bridge.ffi.NULL:
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
            if buffer == bridge.ffi.NULL:
                raise fail("INVALID_BUFFER_SIZE", "dpu_copy_from: the destination is NULL")
            np.frombuffer(bridge.ffi.buffer(buffer, length), dtype=np.uint8)[:] = data
        return None
    # The SDK checks the access before reading the host buffer: so do we, so that a length
    # the symbol cannot hold is refused without touching the caller's memory.
    dset._resolve(sym, offset, length)
    if length and buffer == bridge.ffi.NULL:
        raise fail("INVALID_BUFFER_SIZE", "the source buffer is NULL")
    src = bridge.HostBuffer(buffer).view(length)
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
    if length and buffer == bridge.ffi.NULL:
        raise fail("INVALID_BUFFER_SIZE", "the host buffer is NULL")
    sym = system.Symbol(f"<{space}>", system.MRAM_BASE if memory else 0, size)
    dset._wait()
    host = bridge.HostBuffer(buffer).view(length)
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
        if ptr != bridge.ffi.NULL:
            prepared[int(s)] = bridge.HostBuffer(bridge.ffi.cast("char *", ptr)).view(length)
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
    dset = _set_of(ref)
    data = dset.log().encode("utf-8", "replace")
    bridge.log_keepalive = bridge.ffi.new("char[]", data + b"\0")
    text_out[0] = bridge.log_keepalive
    length_out[0] = len(data)


def py_phase(ref, category):
    entry = _entry(ref)
    text = bridge.text(category)
    if text is not None and text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    entry.alloc.phase = text


def py_modelled(ref, category, seconds):
    entry = _entry(ref, allow_freed=True)
    text = bridge.text(category)
    if text not in cost.CATEGORIES:
        raise fail("INTERNAL", f"unknown time category {text!r}; use one of "
                   f"{', '.join(cost.CATEGORIES)}")
    if seconds == bridge.ffi.NULL:
        raise fail("INTERNAL", "the output pointer is NULL")
    seconds[0] = float(entry.alloc.ledger.modelled_s[text])


def py_modelled_total(seconds):
    """Modelled seconds of every allocation so far, freed ones included (the modelled clock
    of ``PIMRL_MODELLED_CLOCK``, host/src/dpu_shim.c; the ``dpu`` package's reads the same
    sum, :mod:`pimrl.shim.clock`); _guard has booked the fast path's queued transfers first."""
    seconds[0] = clock.modelled_total_s(e.alloc for e in bridge.entries.values())


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
    bridge.ffi, bridge.lib = ffi, lib
    bridge.records_out = ffi.new("struct pimrl_record **")
    for name, fn in _CALLS.items():
        ffi.def_extern(name=name, error=INTERNAL)(_guard(fn))
    lib._pimrl_mark_ready()
