"""What the C host shim and its Python side share: the state of the embedded interpreter
(cffi's ``ffi`` and ``lib``, the allocations and programs C holds handles to), how a
simulator program and an allocation look from C (:class:`CProgram`, :class:`Entry`), and the
C fast path's side (``host/src/dpu_fast.c``): the memories each allocation publishes for it
(:func:`publish`) and the costs of the transfers it did, booked in order
(:func:`book_records`). :mod:`pimrl.shim.runtime` implements the SDK calls on it.
"""
from __future__ import annotations

import os

import numpy as np

from pimrl.pim import cost, system

COPY_TO, COPY_FROM, BROADCAST, PUSH_TO, PUSH_FROM = 0, 1, 2, 3, 4
#: PIMRL_SHIM_FAST_PATH=0 sends every transfer through Python (the baseline of
#: benchmarks/bench_shim.py, and a cross-check of the fast path in the tests).
FAST_PATH = os.environ.get("PIMRL_SHIM_FAST_PATH", "1") != "0"
RECORD_DTYPE = np.dtype([("handle", "<u4"), ("op", "<u4"), ("phase", "<i4"), ("program", "<u4"),
                         ("symbol", "<u4"), ("n_dpus", "<u4"), ("n_ranks", "<u4"), ("pad", "<u4"),
                         ("bytes", "<u8")])

# Set by :func:`pimrl.shim.runtime.install` when libdpu's interpreter starts.
ffi = None
lib = None
entries: dict = {}              # handle -> Entry
next_handle = 1
c_programs: dict = {}           # id(DpuProgram) -> CProgram
c_programs_by_id: dict = {}     # pimrl_id -> CProgram
log_keepalive = None
records_out = None
record_keys: dict = {}          # record fields -> (category, seconds, what)


class CProgram:
    """A simulator program seen from C: its ``struct pimrl_program`` and symbol table."""

    def __init__(self, program: system.DpuProgram, pimrl_id: int, path: str):
        self.program = program
        self.names = list(program.symbols)
        self._keep = [ffi.new("char[]", n.encode()) for n in self.names]
        self._map = ffi.new("dpu_elf_symbol_t[]", max(1, len(self.names)))
        for i, name in enumerate(self.names):
            sym = program.symbols[name]
            self._map[i].name = self._keep[i]
            self._map[i].value = sym.address & 0xFFFFFFFF
            self._map[i].size = min(sym.size, 0xFFFFFFFF)
        self._symbols = ffi.new("dpu_elf_symbols_t *", {"nr_symbols": len(self.names), "map": self._map})
        self._path = ffi.new("char[]", path.encode("utf-8", "surrogateescape"))
        self.c = ffi.new("struct pimrl_program *")
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


class Entry:
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


class HostBuffer:
    """A host pointer given to dpu_prepare_xfer; becomes a numpy view at push time."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def view(self, length: int) -> np.ndarray:
        if length == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.frombuffer(ffi.buffer(self.ptr, length), dtype=np.uint8)


def text(ptr) -> str | None:
    return None if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "surrogateescape")


def pointer(arr: np.ndarray, ctype: str):
    if not arr.flags.c_contiguous:
        raise ValueError("not contiguous")
    return ffi.cast(ctype, arr.ctypes.data)


def publish(entry: Entry):
    """Tell the C fast path where this allocation's memories and programs are now."""
    m = entry.c.mem
    m.valid = 0
    if entry.freed or not FAST_PATH:
        return
    a = entry.alloc
    a.wram_high = a.wram.shape[1]           # the C side writes WRAM past the Python checks
    try:
        m.wram = pointer(a.wram, "uint8_t *")
        m.wram_bytes = a.wram.shape[1]
        m.mram_bytes = a.hw.mram_bytes
        m.page_table = pointer(a.mram.page_table, "int32_t *")
        m.pages_per_bank = a.mram.page_table.shape[1]
        m.pool = pointer(a.mram.pool, "uint8_t *")
        m.program_of = pointer(a.program_of, "int64_t *")
        m.running = pointer(a.running.view(np.uint8), "uint8_t *")
    except ValueError:
        return                                   # the fast path stays off
    m.phase = -1 if a.phase is None else cost.CATEGORIES.index(a.phase)
    if entry._published_programs != len(a.programs):
        table = ffi.new("struct pimrl_program *[]", max(1, len(a.programs)))
        for i, program in enumerate(a.programs):
            handle = c_programs.get(id(program))
            table[i] = handle.c if handle is not None else ffi.NULL
        entry._c_programs = table
        entry._published_programs = len(a.programs)
    m.programs = entry._c_programs
    m.nr_programs = len(a.programs)
    m.valid = 1


def book_records():
    """Cost the transfers the C fast path did, in the order it did them."""
    n = lib._pimrl_take_records(records_out)
    if n == 0:
        return
    rows = np.frombuffer(ffi.buffer(records_out[0], n * RECORD_DTYPE.itemsize), dtype=RECORD_DTYPE)
    for handle, op, phase, prog, sym, n_dpus, n_ranks, _, nbytes in rows.tolist():
        entry = entries[handle]
        key = (handle, op, phase, prog, sym, n_dpus, n_ranks, nbytes)
        booked = record_keys.get(key)
        if booked is None:
            booked = record_keys[key] = record_cost(entry, op, phase, prog, sym, n_dpus, n_ranks, nbytes)
        category, seconds, what = booked
        entry.alloc.ledger.add(category, seconds, what, bytes_per_dpu=nbytes, dpus=n_dpus)


def record_cost(entry, op, phase, prog, sym, n_dpus, n_ranks, nbytes):
    """(category, modelled seconds, description) of one fast transfer, as DpuSet books it."""
    name = c_programs[id(entry.alloc.programs[prog])].names[sym]
    to_dpu = op in (COPY_TO, BROADCAST, PUSH_TO)
    category = cost.CATEGORIES[phase] if phase >= 0 else ("cpu_dpu" if to_dpu else "dpu_cpu")
    serial = op == COPY_FROM or (op == COPY_TO and n_dpus == 1)
    broadcast = op == BROADCAST or (op == COPY_TO and n_dpus > 1)
    seconds = system.transfer_seconds(entry.alloc.hw, to_dpu, nbytes, n_dpus, n_ranks, serial, broadcast)
    what = {COPY_TO: "copy_to", COPY_FROM: "copy_from", BROADCAST: "broadcast",
            PUSH_TO: "push_xfer to", PUSH_FROM: "push_xfer from"}[op]
    return category, seconds, f"{what} {name}"
