"""The simulated UPMEM system with the SDK host API's semantics (``dpu.h``).

``dpu_alloc`` returns a :class:`DpuSet` over whole ranks of a :class:`Machine`; sets of ranks
and of single DPUs come from ``rank_sets()`` / ``dpu_sets()`` (``DPU_RANK_FOREACH`` /
``DPU_FOREACH``). Every transfer checks the SDK's rules in the SDK's order and records its
modelled time; every launch runs the loaded program on all DPUs of the set at once and
records the modelled time of the slowest DPU. The C shim of ``host/`` drives this class.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from pimrl.pim import cost
from pimrl.pim.errors import fail
from pimrl.pim.hardware import Hardware
from pimrl.parallel import copy_rows
from pimrl.pim.memory import release_array
from pimrl.pim.allocation import (  # the machine and its allocations, named here too
    DPU_ALLOCATE_ALL, Allocation, Machine, _rows, book_launch, choose_ranks, machine_for_profile,
    parse_profile, parse_timeout,
)

MRAM_BASE = 0x08000000               # DPU address of MRAM byte 0 (WRAM starts at 0)
IRAM_BASE = 0x80000000
DPU_MRAM_HEAP_POINTER_NAME = "__sys_used_mram_end"

# dpu_launch_policy_t, dpu_xfer_t, dpu_xfer_flags_t (SDK values)
DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS = 0, 1
DPU_XFER_TO_DPU, DPU_XFER_FROM_DPU = 0, 1
DPU_XFER_DEFAULT, DPU_XFER_NO_RESET, DPU_XFER_ASYNC = 0, 1, 2

@dataclass(frozen=True)
class Symbol:
    """A host-visible symbol: ``__mram``/``__mram_noinit`` globals and ``__host`` WRAM ones."""

    name: str
    address: int          # DPU address (MRAM symbols at MRAM_BASE + offset)
    size: int

    @property
    def space(self) -> str:
        if self.address >= IRAM_BASE:
            return "iram"
        return "mram" if self.address >= MRAM_BASE else "wram"

    @property
    def offset(self) -> int:
        """Byte offset inside its memory."""
        return self.address - (IRAM_BASE if self.space == "iram" else MRAM_BASE if self.space == "mram" else 0)


@dataclass
class LaunchResult:
    """What one launch of a program reports: modelled cycles per DPU and any faults."""

    cycles: np.ndarray                                   # float64, one per launched DPU
    faults: list = field(default_factory=list)           # (slot, tasklet, reason)
    counters: np.ndarray | None = None
    # WRAM bytes, from address 0, that the launch may have written on any DPU (None: all):
    # a later allocation reusing this memory zeroes only those.
    wram_written: int | None = None
    # Each tasklet's counters (n_dpus, tasklets, counters), for programs whose tasklets do
    # unequal shares (the SwiftRL kernel in tasklet mode rows); None otherwise.
    tasklet_counters: np.ndarray | None = None


class DpuProgram:
    """A program a DPU set can load: its symbols and how to run it on many DPUs at once.

    What every program provides (the simulator relies on nothing else):
    - ``name``: for messages and the ledger;
    - ``symbols``: {name: :class:`Symbol`}, WRAM from address 0, MRAM from ``MRAM_BASE``;
    - ``wram_used`` / ``mram_used``: bytes it needs (checked against the hardware at load);
    - ``globals_bytes``: the WRAM bytes that ``dpu_load`` zeroes (``None``: ``wram_used``);
    - :meth:`initial_data`: writes the program's initialised data at load;
    - :meth:`launch`: runs it on the DPUs ``slots`` of ``alloc`` and returns a
      :class:`LaunchResult` (cycles per DPU, faults, counters and, when it knows, how much
      of WRAM it wrote: a later allocation of that memory clears only that much).
    """

    name = "program"
    symbols: dict = {}
    wram_used = 0
    mram_used = 0
    globals_bytes: int | None = None

    def initial_data(self, alloc: "Allocation", slots: np.ndarray) -> None:
        """Write the program's initialised globals into the DPUs ``slots`` (none by default)."""

    def launch(self, alloc: "Allocation", slots: np.ndarray) -> LaunchResult:  # pragma: no cover
        raise NotImplementedError


class KernelProgram(DpuProgram):
    """A program written in Python: named WRAM/MRAM symbols and a kernel function.

    ``kernel(alloc, slots)`` works on ``alloc.wram`` / ``alloc.mram`` for every DPU in
    ``slots`` and returns a :class:`LaunchResult` (or just the cycles per DPU). Symbols are
    laid out in order, 8-byte aligned, WRAM from address 0 and MRAM from ``MRAM_BASE``; the
    MRAM heap symbol covers the rest of MRAM. Handy for tests and microbenchmarks.
    """

    def __init__(self, name: str, kernel, wram: dict | None = None, mram: dict | None = None,
                 iram: dict | None = None, mram_bytes: int = 64 << 20):
        self.name, self.kernel = name, kernel
        self.symbols = {}
        for base, table in ((0, wram or {}), (MRAM_BASE, mram or {}), (IRAM_BASE, iram or {})):
            addr = 0
            for sym_name, size in table.items():
                self.symbols[sym_name] = Symbol(sym_name, base + addr, int(size))
                addr += (int(size) + 7) & ~7
            if base == 0:
                self.wram_used = addr
            elif base == MRAM_BASE:
                self.mram_used = addr
        self.symbols[DPU_MRAM_HEAP_POINTER_NAME] = Symbol(
            DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE + self.mram_used, mram_bytes - self.mram_used)

    def launch(self, alloc, slots) -> LaunchResult:
        out = self.kernel(alloc, slots)
        if isinstance(out, LaunchResult):
            return out
        return LaunchResult(cycles=np.broadcast_to(np.asarray(out, dtype=np.float64), (len(slots),)).copy())


def dpu_alloc(nr_dpus: int = DPU_ALLOCATE_ALL, profile: str | None = None,
              hardware: Hardware | None = None, machine: Machine | None = None) -> "DpuSet":
    """Allocate DPUs as the SDK does: whole ranks, the surplus of the last rank disabled."""
    if machine is None:
        machine = machine_for_profile(profile, hardware)
    timeout = _profile_timeout(profile)
    ranks, enabled = choose_ranks(machine, nr_dpus)
    machine.rank_free[ranks] = False
    alloc = Allocation(machine, ranks, enabled)
    alloc.timeout_s = timeout
    return DpuSet(alloc, np.flatnonzero(enabled), "all")


def _profile_timeout(profile: str | None) -> float | None:
    """The profile's ``timeout=SECONDS`` (the launches' time limit), or None."""
    value = parse_profile(profile).get("timeout")
    return None if value is None else parse_timeout(value, f"profile {profile!r}: timeout")


def dpu_alloc_ranks(nr_ranks: int, profile: str | None = None, hardware: Hardware | None = None,
                    machine: Machine | None = None) -> "DpuSet":
    """Allocate ``nr_ranks`` whole ranks (every functional DPU of each);
    ``DPU_ALLOCATE_ALL`` takes every free rank."""
    if machine is None:
        machine = machine_for_profile(profile, hardware)
    if nr_ranks == DPU_ALLOCATE_ALL:
        return dpu_alloc(DPU_ALLOCATE_ALL, profile, machine=machine)
    free = np.flatnonzero(machine.rank_free)
    if nr_ranks <= 0 or nr_ranks > len(free):
        raise fail("ALLOCATION", f"asked for {nr_ranks} ranks; {len(free)} are free on "
                   f"{machine.hw.name} ({machine.hw.n_ranks} ranks)")
    return dpu_alloc(int(machine.functional[free[:nr_ranks]].sum()), profile, machine=machine)



class DpuSet:
    """A set of DPUs (all of an allocation, one rank, or one DPU) with the SDK's operations."""

    def __init__(self, alloc: Allocation, slots: np.ndarray, kind: str):
        self.alloc, self.slots, self.kind = alloc, np.asarray(slots, dtype=np.int64), kind

    # ---------------------------------------------------------------- shape
    @property
    def nr_dpus(self) -> int:
        return len(self.slots)

    @property
    def nr_ranks(self) -> int:
        return len(np.unique(self.alloc.rank_of(self.slots)))

    def dpu_sets(self):
        """``DPU_FOREACH``: one single-DPU set per enabled DPU, in order."""
        return [DpuSet(self.alloc, [s], "dpu") for s in self.slots]

    def rank_sets(self):
        """``DPU_RANK_FOREACH``: one set per rank (its enabled DPUs)."""
        ranks = self.alloc.rank_of(self.slots)
        return [DpuSet(self.alloc, self.slots[ranks == r], "rank") for r in np.unique(ranks)]

    def _check_alive(self):
        if self.alloc.freed:
            raise fail("INVALID_DPU_SET", "this DPU set was freed")

    # ---------------------------------------------------------------- programs
    def free(self):
        self._check_alive()
        if self.kind != "all":
            raise fail("INVALID_DPU_SET", "dpu_free takes the set returned by dpu_alloc")
        a = self.alloc
        a.machine.rank_free[a.ranks] = True
        a.freed = True
        # The memories go to the next allocation of this size; a stale reference to this
        # one then fails loudly instead of reading another allocation's memory.
        a.mram.release()
        release_array(a.wram, written=a.wram_high)
        a.mram = a.wram = None

    def load(self, program: DpuProgram) -> DpuProgram:
        """``dpu_load``: WRAM globals are (re)initialised now, not at each launch."""
        self._check_alive()
        a = self.alloc
        if program.wram_used > a.hw.wram_bytes:
            raise fail("ELF_INVALID_FILE", f"program {program.name} needs {program.wram_used} B of "
                       f"WRAM; {a.hw.name} has {a.hw.wram_bytes} B")
        if program not in a.programs:
            a.programs.append(program)
        a.program_of[self.slots] = a.programs.index(program)
        zeroed = program.wram_used if program.globals_bytes is None else program.globals_bytes
        dirty = self.slots[~a.clean[self.slots]]        # rows still all zero need nothing
        if len(dirty):
            a.wram[_rows(dirty), :zeroed] = 0
        a.clean[self.slots] = False
        if type(program).initial_data is not DpuProgram.initial_data:
            a.wram_high = max(a.wram_high, zeroed)      # initial data lies in the globals
        program.initial_data(a, self.slots)
        for s in self.slots:
            a.logs.pop(int(s), None)
        return program

    def program(self) -> DpuProgram:
        """The one program every DPU of the set runs (the SDK's first transfer check)."""
        ids = np.unique(self.alloc.program_of[self.slots])
        if len(ids) > 1:
            raise fail("DIFFERENT_DPU_PROGRAMS", f"the {self.nr_dpus} DPUs of this set run "
                       f"{len(ids)} different programs")
        if len(ids) == 0 or ids[0] < 0:
            raise fail("NO_PROGRAM_LOADED", "no program is loaded on this DPU set")
        return self.alloc.programs[int(ids[0])]

    def get_symbol(self, name: str) -> Symbol:
        program = self.program()
        try:
            return program.symbols[name]
        except KeyError:
            raise fail("UNKNOWN_SYMBOL", f"program {program.name} has no host-visible symbol "
                       f"{name!r} (it has: {', '.join(sorted(program.symbols))})") from None

    def _resolve(self, symbol, offset: int, length: int) -> Symbol:
        """The SDK's checks, in its order: same program, symbol, bounds, memory alignment."""
        self._check_alive()
        sym = symbol if isinstance(symbol, Symbol) else self.get_symbol(symbol)
        if isinstance(symbol, Symbol):         # a raw {address, size}: must lie in its memory
            self.program()
            hw = self.alloc.hw
            limit = {"wram": hw.wram_bytes, "mram": hw.mram_bytes, "iram": hw.iram_bytes}[sym.space]
            if sym.size < 0 or sym.offset + sym.size > limit:
                raise fail(f"INVALID_{sym.space.upper()}_ACCESS", f"symbol at {sym.address:#x} of "
                           f"{sym.size} bytes lies outside the DPU's {limit}-byte {sym.space.upper()}")
        if offset < 0 or length < 0 or offset + length > sym.size:
            raise fail("INVALID_SYMBOL_ACCESS", f"{sym.name}: offset {offset} + length {length} "
                       f"exceeds the symbol's {sym.size} bytes")
        if sym.space == "mram" and (offset % 8 or length % 8):
            raise fail("INVALID_MRAM_ACCESS", f"{sym.name}: MRAM offset {offset} and length "
                       f"{length} must be multiples of 8")
        if sym.space == "wram" and (offset % 4 or length % 4):
            raise fail("INVALID_WRAM_ACCESS", f"{sym.name}: WRAM offset {offset} and length "
                       f"{length} must be multiples of 4")
        if sym.space == "iram" and (offset % 8 or length % 8):
            raise fail("INVALID_IRAM_ACCESS", f"{sym.name}: IRAM offset {offset} and length "
                       f"{length} must be multiples of 8")
        return sym

    # ---------------------------------------------------------------- memory access
    def _write(self, slots, sym: Symbol, offset: int, data: np.ndarray):
        a = self.alloc
        if sym.space == "mram":
            a.mram.write(slots, sym.offset + offset, data)
        elif sym.space == "wram":
            start = sym.offset + offset
            rows = _rows(slots)
            if isinstance(rows, slice) and data.ndim == 2:
                copy_rows(a.wram[rows, start:start + data.shape[-1]], data)
            else:
                a.wram[rows, start:start + data.shape[-1]] = data
            a.wram_high = max(a.wram_high, start + data.shape[-1])
        else:
            raise fail("INVALID_IRAM_ACCESS", f"{sym.name}: IRAM is not writable in the simulator")

    def _read(self, slots, sym: Symbol, offset: int, length: int, out=None) -> np.ndarray:
        a = self.alloc
        if sym.space == "mram":
            return a.mram.read(slots, sym.offset + offset, length, out)
        if sym.space == "wram":
            start = sym.offset + offset
            rows = _rows(slots)
            if not isinstance(rows, slice):
                if out is None:
                    return a.wram[rows, start:start + length].copy()
                out[...] = a.wram[rows, start:start + length]
                return out
            if out is None:
                out = np.empty((rows.stop - rows.start, length), dtype=np.uint8)
            copy_rows(out, a.wram[rows, start:start + length])
            return out
        raise fail("INVALID_IRAM_ACCESS", f"{sym.name}: IRAM is not readable in the simulator")

    @staticmethod
    def _bytes(buf, length=None) -> np.ndarray:
        arr = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
        if length is not None and len(arr) < length:
            raise fail("INVALID_BUFFER_SIZE", f"buffer of {len(arr)} bytes is shorter than the "
                       f"{length} bytes to transfer")
        return arr if length is None else arr[:length]

    def _wait(self):
        """Operations on a set wait for its asynchronous launches (as the SDK queue does)."""
        if self.alloc.running[np.unique(self.alloc.rank_of(self.slots))].any():
            self.sync()

    def copy_to(self, symbol, offset: int, src) -> None:
        """``dpu_copy_to``: the same bytes to every DPU of the set."""
        data = self._bytes(src)
        sym = self._resolve(symbol, offset, len(data))
        self._wait()
        self._write(self.slots, sym, offset, data)
        # The SDK sends identical bytes to a multi-DPU set as a broadcast.
        self._account(True, len(data), serial=self.nr_dpus == 1, broadcast=self.nr_dpus > 1,
                      what=f"copy_to {sym.name}")

    def broadcast_to(self, symbol, offset: int, src, flags: int = DPU_XFER_DEFAULT) -> None:
        """``dpu_broadcast_to``."""
        data = self._bytes(src)
        sym = self._resolve(symbol, offset, len(data))
        self._wait()
        self._write(self.slots, sym, offset, data)
        self._account(True, len(data), broadcast=True, what=f"broadcast {sym.name}")

    def copy_from(self, symbol, offset: int, length: int) -> np.ndarray:
        """``dpu_copy_from``: a single DPU only."""
        if self.nr_dpus != 1:
            raise fail("INVALID_DPU_SET", f"dpu_copy_from needs a single DPU; this set has "
                       f"{self.nr_dpus}")
        sym = self._resolve(symbol, offset, length)
        self._wait()
        out = self._read(self.slots, sym, offset, length)[0]
        self._account(False, length, serial=True, what=f"copy_from {sym.name}")
        return out

    def prepare_xfer(self, buffer) -> None:
        """``dpu_prepare_xfer``: the buffer for every DPU of the set."""
        self._check_alive()
        for s in self.slots:
            if int(s) in self.alloc.prepared:
                raise fail("TRANSFER_ALREADY_SET", f"DPU {int(s)} already has a prepared buffer")
        for s in self.slots:
            self.alloc.prepared[int(s)] = buffer

    def push_xfer(self, direction: int, symbol, offset: int, length: int,
                  flags: int = DPU_XFER_DEFAULT) -> None:
        """``dpu_push_xfer``: one length for all; DPUs without a prepared buffer are skipped."""
        if direction not in (DPU_XFER_TO_DPU, DPU_XFER_FROM_DPU):
            raise fail("INVALID_MEMORY_TRANSFER", f"unknown transfer direction {direction}")
        if flags not in (DPU_XFER_DEFAULT, DPU_XFER_NO_RESET, DPU_XFER_ASYNC,
                         DPU_XFER_NO_RESET | DPU_XFER_ASYNC):
            raise fail("INVALID_MEMORY_TRANSFER", f"unknown transfer flags {flags}")
        sym = self._resolve(symbol, offset, length)
        self._wait()
        prepared = self.alloc.prepared
        slots = np.array([s for s in self.slots if int(s) in prepared], dtype=np.int64)
        if direction == DPU_XFER_TO_DPU:
            if len(slots):
                data = np.stack([self._bytes(prepared[int(s)], length) for s in slots])
                self._write(slots, sym, offset, data)
        else:
            if len(slots):
                rows = self._read(slots, sym, offset, length)
                for row, s in zip(rows, slots):
                    dst = prepared[int(s)]
                    view = self._bytes(dst, length)
                    if not view.flags.writeable:
                        raise fail("INVALID_BUFFER_SIZE", "destination buffer is read-only")
                    view[:] = row
        self._account(direction == DPU_XFER_TO_DPU, length, n_dpus=len(slots),
                      n_ranks=len(np.unique(self.alloc.rank_of(slots))),
                      what=f"push_xfer {'to' if direction == DPU_XFER_TO_DPU else 'from'} {sym.name}")
        if not flags & DPU_XFER_NO_RESET:
            for s in self.slots:
                prepared.pop(int(s), None)

    def scatter_to(self, symbol, offset: int, data: np.ndarray) -> None:
        """Prepare + push of one row of ``data`` ((nr_dpus, n) bytes) per DPU, vectorised:
        the SDK Python module's ``copy(symbol, [buffers])``."""
        data = np.ascontiguousarray(data).view(np.uint8).reshape(self.nr_dpus, -1)
        sym = self._resolve(symbol, offset, data.shape[1])
        self._wait()
        self._write(self.slots, sym, offset, data)
        self._account(True, data.shape[1], what=f"push_xfer to {sym.name}")

    def gather_from(self, symbol, offset: int, length: int, out=None) -> np.ndarray:
        """Prepare + push from every DPU, vectorised: (nr_dpus, length) bytes, into ``out``
        (a C-contiguous uint8 array of that shape) when given."""
        sym = self._resolve(symbol, offset, length)
        self._wait()
        out = self._read(self.slots, sym, offset, length, out)
        self._account(False, length, what=f"push_xfer from {sym.name}")
        return out

    def _account(self, to_dpu, per_dpu_bytes, serial=False, broadcast=False, n_dpus=None,
                 n_ranks=None, what=""):
        n_dpus = self.nr_dpus if n_dpus is None else n_dpus
        n_ranks = self.nr_ranks if n_ranks is None else n_ranks
        secs = transfer_seconds(self.alloc.hw, to_dpu, per_dpu_bytes, n_dpus, n_ranks, serial, broadcast)
        self.alloc.ledger.add(self.alloc.category(to_dpu), secs, what,
                              bytes_per_dpu=int(per_dpu_bytes), dpus=int(n_dpus))

    # ---------------------------------------------------------------- launches
    def launch(self, policy: int = DPU_SYNCHRONOUS, timeout=None) -> LaunchResult:
        """``dpu_launch``: every DPU of the set runs its program; the slowest bounds the time.
        ``timeout``: this launch's time limit in seconds (see LAUNCH_TIMEOUT_ENV)."""
        self._check_alive()
        if policy not in (DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS):
            raise fail("INVALID_LAUNCH_POLICY", f"unknown launch policy {policy}")
        limit = None if timeout is None else parse_timeout(timeout, "launch timeout",
                                                           "INVALID_LAUNCH_POLICY")
        rank_idx = np.unique(self.alloc.rank_of(self.slots))   # ranks of the allocation
        if self.alloc.running[rank_idx].any():
            raise fail("DPU_ALREADY_RUNNING", "a rank of this set is still running an "
                       "asynchronous launch (call dpu_sync first)")
        program = self.program()
        self.alloc.launch_timeout_s = limit
        try:
            result = program.launch(self.alloc, self.slots)
        finally:
            self.alloc.launch_timeout_s = None
        self.alloc.wram_high = max(self.alloc.wram_high, self.alloc.hw.wram_bytes
                                   if result.wram_written is None else result.wram_written)
        book_launch(self.alloc, program.name, result.cycles, self.nr_dpus,
                    policy == DPU_SYNCHRONOUS)
        if policy == DPU_ASYNCHRONOUS:
            self.alloc.running[rank_idx] = True
            self.alloc.pending_faults.extend(result.faults)
        elif result.faults:
            raise _fault_error(result.faults)
        return result

    def sync(self) -> None:
        """``dpu_sync``: wait for the set's asynchronous launches; report their faults."""
        self._check_alive()
        a = self.alloc
        ranks = np.unique(a.rank_of(self.slots))
        if a.running[ranks].any():
            a.ledger.add("dpu_kernel", a.hw.sync_latency_s, "latency: synchronisation")
        a.running[ranks] = False
        mine = set(int(s) for s in self.slots)
        faults = [f for f in a.pending_faults if f[0] in mine]
        a.pending_faults = [f for f in a.pending_faults if f[0] not in mine]
        if faults:
            raise _fault_error(faults)

    def log(self) -> str:
        """``dpu_log_read`` for a single DPU."""
        if self.nr_dpus != 1:
            raise fail("INVALID_DPU_SET", f"dpu_log_read needs a single DPU; this set has {self.nr_dpus}")
        return self.alloc.logs.get(int(self.slots[0]), b"").decode("utf-8", "replace")

    def dpu_index(self, i: int) -> int:
        """Slot (position in the allocation) of the set's i-th DPU."""
        return int(self.slots[i])

    @contextlib.contextmanager
    def phase(self, category: str):
        """Count the transfers inside the block as ``category`` (e.g. ``inter_dpu``)."""
        if category not in cost.CATEGORIES:
            raise ValueError(f"unknown time category {category!r}")
        previous, self.alloc.phase = self.alloc.phase, category
        try:
            yield
        finally:
            self.alloc.phase = previous


def transfer_seconds(hw: Hardware, to_dpu: bool, per_dpu_bytes: int, n_dpus: int, n_ranks: int,
                     serial: bool = False, broadcast: bool = False) -> float:
    """Modelled seconds of one host transfer: serial (one DPU at a time), a broadcast of the
    same bytes, or a parallel transfer of ``per_dpu_bytes`` to or from each of ``n_dpus``."""
    if serial:
        return cost.serial_transfer_seconds(hw, per_dpu_bytes * n_dpus, to_dpu)
    if broadcast:
        return cost.broadcast_seconds(hw, per_dpu_bytes, n_dpus, n_ranks)
    return cost.parallel_transfer_seconds(hw, per_dpu_bytes, n_dpus, n_ranks, to_dpu)


def _fault_error(faults):
    slot, tasklet, reason = min(faults, key=lambda f: f[0])
    n = len(faults) - 1
    more = f" (and {n} more DPU{'s' if n > 1 else ''})" if n else ""
    return fail("DPU_FAULT", f"DPU {slot} tasklet {tasklet}: {reason}{more}")
