"""Loading a DPU program built by ``dpu-upmem-dpurte-clang`` as a simulator program.

:class:`DpuRtProgram` is a :class:`pimrl.pim.system.DpuProgram`: host-visible symbols, WRAM
and MRAM use, ``initial_data`` and ``launch``. Its memories are the simulator's own: a
DPU's WRAM image (the program's ``.data`` + ``.bss``) *is* ``alloc.wram[slot, :image]``
(symbol addresses are offsets in it, so the host transfer code of ``DpuSet`` works
unchanged), and MRAM is ``alloc.mram`` (MRAM globals at offset 0, the heap after them).

DPUs run in parallel on ``workers`` native threads. Each worker is a private copy of the
shared object (a program's globals are the running DPU's WRAM, so two DPUs must not share
one copy); DPU ``slot`` always runs on copy ``slot % workers``, whose relocated image it
was initialised from, so pointers stored in WRAM globals stay valid across launches.

A loaded copy is never unloaded (its signal handlers are chained with the process's, see
dpurt.c), so copies are kept per program *content* for the whole process: loading the same
program again, from any set or allocation, reuses them, and memory stays flat however many
times a host script loads, runs and frees it. The launches run on one process-wide pool of
threads while the calling thread waits: Ctrl-C (``KeyboardInterrupt``) and the launch's time
limit (:func:`pimrl.pim.allocation.launch_timeout_s`) set the launch's stop word, which the
runtime checks every quantum; the running tasklets fault where they are, the DPUs not yet
started are not run, and the call returns within a second.

A program file is native host code. It is sealed by the builder (:func:`pimrl.dpurt.elf.seal`)
and refused at load when the seal does not match (damaged, truncated, edited); load only
programs you built.
"""
from __future__ import annotations

import bisect
import ctypes
import hashlib
import json
import math
import threading
import time
import warnings
from concurrent.futures import FIRST_EXCEPTION, wait
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import numpy as np

from pimrl.dpurt.elf import (STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_OBJECT, Elf, ElfError,
                             unseal)
from pimrl.dpurt.copies import (
    ABI, COPIES, COPIES_LOCK, STOP_GRACE_S, STOP_INTERRUPT, STOP_TIMEOUT, WATCH_S, Launch,
    LoadedCopy, Result, default_workers, launch_threads,
)
from pimrl.dpurt.instrument import block_cost, parse_bbinfo
from pimrl.pim.errors import fail
from pimrl.pim.memory import PAGE_BYTES
from pimrl.pim.allocation import launch_timeout_s
from pimrl.pim.system import (DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE, DpuProgram, LaunchResult,
                               Symbol)

_HIDDEN_SYMBOLS = {"__dso_handle", "__TMC_END__", "_DYNAMIC", "_GLOBAL_OFFSET_TABLE_",
                   "__bss_start", "_edata", "_end"}


def is_dpurt_file(path) -> bool:
    """True for a file built by dpu-upmem-dpurte-clang (an ELF with a dpurt_info section)."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return False
        return Elf(Path(path).read_bytes()).section("dpurt_info") is not None
    except (OSError, ElfError):
        return False


def _is_dpurt_data(data: bytes, name: str) -> bool:
    """Is ``data`` a DPU program built by dpu-upmem-dpurte-clang? False for another kind of
    file; a damaged or truncated ELF file raises DPU_ERR_ELF_INVALID_FILE naming ``name``."""
    if data[:4] != b"\x7fELF":
        return False
    if unseal(data) != "unsealed":
        return True                     # sealed by the builder (the digest is checked at load)
    # A shared object for x86-64 (what the builder makes) that does not parse is a damaged
    # program; any other ELF file (a DPU's own, 32-bit) is left to the other loaders.
    ours = data[4:6] == b"\x02\x01" and data[16:20] == b"\x03\x00\x3e\x00"
    try:
        return Elf(data).section("dpurt_info") is not None
    except ElfError as exc:
        if not ours:
            return False
        raise fail("ELF_INVALID_FILE", f"{name}: {exc}; if it is a DPU program, rebuild it "
                   "with dpu-upmem-dpurte-clang") from None


class DpuRtProgram(DpuProgram):
    """A DPU program file built by ``dpu-upmem-dpurte-clang``, runnable on simulated DPUs.

    ``symbols``: every global variable (WRAM: offset in the image; ``__mram`` ones at
    ``MRAM_BASE`` + offset) and ``__sys_used_mram_end`` (the MRAM heap). ``last_launch``
    keeps the per-DPU details of the latest launch (instructions, DMA, logs).

    ``data``: the file's bytes, when they are in memory (``path`` then only names it in
    messages). The bytes are checked against the builder's seal first: a damaged, truncated
    or unsealed file raises ``DPU_ERR_ELF_INVALID_FILE`` naming it, and nothing of it runs.
    """

    def __init__(self, path, hardware=None, workers: int | None = None, data: bytes | None = None):
        self.path = str(path)
        self.name = Path(self.path).name
        self.hw = hardware
        if data is None:
            try:
                data = Path(path).read_bytes()
            except OSError as exc:
                raise fail("ELF_NO_SUCH_FILE", f"{path}: {exc}") from None
        self.data = bytes(data)
        self.digest = hashlib.sha256(self.data).hexdigest()
        elf = self._checked_elf(self.data)
        # What a sealed file that is not a pimrl DPU program (or a hand-made one) gives _read:
        # sections cut short or out of place (ElfError, IndexError), info that is not pimrl's
        # JSON (ValueError, UnicodeError), a field missing or of another type (KeyError,
        # TypeError). Anything else is a bug of pimrl's and is not hidden.
        try:
            self._read(elf, hardware)
        except (ElfError, ValueError, KeyError, TypeError, IndexError, UnicodeError) as exc:
            raise fail("ELF_INVALID_FILE", f"{path}: not a valid pimrl DPU program ({exc}); "
                       "rebuild it with dpu-upmem-dpurte-clang") from None
        self.workers = workers or default_workers()
        self._copies: dict = {}
        self._lock = threading.Lock()
        self._costs = {}
        self.last_launch = None
        #: DMA transfers aligned down (addresses not a multiple of 8) over every launch so far.
        self.dma_unaligned = 0
        self._warned_unaligned = False

    def _checked_elf(self, data: bytes) -> Elf:
        """The program's ELF file, once its seal holds (else DPU_ERR_ELF_INVALID_FILE)."""
        path = self.path
        state = unseal(data)
        if state == "damaged":
            raise fail("ELF_INVALID_FILE", f"{path}: damaged: its bytes do not match the "
                       "checksum dpu-upmem-dpurte-clang sealed it with (changed or corrupted "
                       "since it was built); rebuild it")
        try:
            elf = Elf(data)
        except ElfError as exc:
            raise fail("ELF_INVALID_FILE", f"{path}: not a DPU program ({exc})") from None
        if elf.section("dpurt_info") is None:
            raise fail("ELF_INVALID_FILE", f"{path}: not built by dpu-upmem-dpurte-clang "
                       "(no dpurt_info section)")
        if state == "unsealed":
            try:
                abi = json.loads(elf.contents("dpurt_info").decode().strip("\x00\n")).get("abi")
            except (ValueError, UnicodeError, AttributeError, ElfError):
                abi = None
            if isinstance(abi, int) and abi != ABI:
                raise fail("ELF_INVALID_FILE", f"{path}: built for pimrl DPU runtime ABI {abi}; "
                           f"this pimrl runs ABI {ABI}: rebuild it with dpu-upmem-dpurte-clang")
            raise fail("ELF_INVALID_FILE", f"{path}: no checksum at its end: cut short, or "
                       "not linked by this pimrl's dpu-upmem-dpurte-clang (which seals every "
                       "program it builds); rebuild it")
        return elf

    def _read(self, elf: Elf, hardware) -> None:
        path = self.path
        info = json.loads(elf.contents("dpurt_info").decode().strip("\x00\n"))
        tus = [json.loads(x) for x in elf.contents("dpurt_tuinfo").decode().splitlines() if x.strip()] \
            if elf.section("dpurt_tuinfo") else []
        if info.get("abi") != ABI:
            raise fail("ELF_INVALID_FILE", f"{path}: built for pimrl DPU runtime ABI "
                       f"{info.get('abi')}; this pimrl runs ABI {ABI}: rebuild it with "
                       "dpu-upmem-dpurte-clang")
        nts = {t["nr_tasklets"] for t in tus if t.get("nr_tasklets")}
        if info.get("nr_tasklets"):
            nts.add(info["nr_tasklets"])
        if len(nts) > 1:
            raise fail("ELF_INVALID_FILE", f"{path}: sources built with different NR_TASKLETS "
                       f"({sorted(nts)})")
        self.nr_tasklets = nts.pop() if nts else 1
        stacks = {t["stack_size"] for t in tus if t.get("stack_size")}
        self.stack_size = max(stacks) if stacks else info.get("stack_size")
        max_t = hardware.max_tasklets if hardware is not None else 24
        if not 1 <= self.nr_tasklets <= max_t:
            raise fail("ELF_INVALID_FILE", f"{path}: NR_TASKLETS={self.nr_tasklets}; the DPU "
                       f"runs 1..{max_t} tasklets")
        data_s, bss_s = elf.section(".data"), elf.section(".bss")
        lo = data_s.addr if data_s else (bss_s.addr if bss_s else 0)
        hi = max((s.end for s in (data_s, bss_s) if s is not None), default=lo)
        for s in elf.sections:
            if s.flags & 2 and s.size and lo <= s.addr < hi and s.name not in (".data", ".bss", ".tm_clone_table"):
                raise fail("ELF_INVALID_FILE", f"{path}: section {s.name} lies inside the WRAM "
                           "image; rebuild with dpu-upmem-dpurte-clang")
        self.image_lo, self.image_size = lo, hi - lo
        bbc = elf.section("dpurt_bbc")
        self.bbc_lo = bbc.addr if bbc else 0
        bbw = elf.section("dpurt_bbw")
        self.bbw_lo = bbw.addr if bbw else 0
        self.blocks = parse_bbinfo(elf.contents("dpurt_bbinfo")) if elf.section("dpurt_bbinfo") else []
        self.n_bb = (bbc.size // 8) if bbc else 0
        if len(self.blocks) != self.n_bb:
            raise fail("ELF_INVALID_FILE", f"{path}: {self.n_bb} block counters but "
                       f"{len(self.blocks)} block descriptions")
        mram_secs = [s for s in (elf.section("dpu_mram"), elf.section("dpu_mram_noinit")) if s]
        if mram_secs:
            self.mram_lo = min(s.addr for s in mram_secs)
            self.mram_size = max(s.end for s in mram_secs) - self.mram_lo
        else:
            self.mram_lo, self.mram_size = 0, 0
        # The initialised variables (__mram) are written at load; the __mram_noinit ones after
        # them are not, as on the DPU (a large noinit array costs no host memory until used).
        m = elf.section("dpu_mram")
        init_end = m.end - self.mram_lo if m is not None and m.size else 0
        self.mram_image = np.zeros(init_end, dtype=np.uint8)
        if init_end:
            self.mram_image[m.addr - self.mram_lo:] = np.frombuffer(elf.contents("dpu_mram"),
                                                                    dtype=np.uint8)
        self.mram_used = (self.mram_size + 7) & ~7
        mram_bytes = hardware.mram_bytes if hardware is not None else 64 << 20
        anchor = elf.symbol("dpurt_anchor")
        if anchor is None:
            raise fail("ELF_INVALID_FILE", f"{path}: no pimrl DPU runtime linked in")
        self.anchor_value = anchor.value
        self.symbols = {}
        for sym in elf.symbols:
            if (sym.type != STT_OBJECT or sym.bind not in (STB_GLOBAL, STB_WEAK) or not sym.name
                    or sym.name.startswith("__dpurt") or sym.name in _HIDDEN_SYMBOLS):
                continue
            if lo <= sym.value < hi:
                self.symbols[sym.name] = Symbol(sym.name, sym.value - lo, sym.size)
            elif self.mram_size and self.mram_lo <= sym.value < self.mram_lo + self.mram_size:
                self.symbols[sym.name] = Symbol(sym.name, MRAM_BASE + sym.value - self.mram_lo, sym.size)
        self.symbols[DPU_MRAM_HEAP_POINTER_NAME] = Symbol(
            DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE + self.mram_used, mram_bytes - self.mram_used)
        self.globals_bytes = self.image_size
        self.wram_used = self.image_size + self.nr_tasklets * self.stack_bytes(hardware)
        # Functions by address, to name where a stopped tasklet was: a global name before
        # gcc's local aliases of it, and without gcc's suffixes (foo.localalias, foo.part.0).
        by_address = {}
        for sym in elf.symbols:
            if sym.type != STT_FUNC or not sym.name or not sym.value:
                continue
            rank = (sym.bind == STB_LOCAL, "." in sym.name)
            if sym.value not in by_address or rank < by_address[sym.value][0]:
                by_address[sym.value] = (rank, sym.size, sym.name.split(".")[0] or sym.name)
        funcs = sorted((value, size, name) for value, (_, size, name) in by_address.items())
        self._func_starts = [f[0] for f in funcs]
        self._funcs = funcs

    def function_at(self, address: int) -> str | None:
        """The name of the program's function at ``address`` (an address of its ELF file)."""
        i = bisect.bisect_right(self._func_starts, address) - 1
        if i < 0:
            return None
        start, size, name = self._funcs[i]
        return name if address < start + max(size, 1) else None

    # ------------------------------------------------------------ model
    def stack_bytes(self, hw) -> int:
        if self.stack_size:
            return int(self.stack_size)
        return hw.stack_bytes_per_tasklet if hw is not None else 256

    def block_costs(self, hw) -> np.ndarray:
        """DPU instructions per execution of each block, under ``hw``'s operation costs."""
        key = repr(hw)
        if key not in self._costs:
            ops = hw.op_instructions if hw is not None else {}
            self._costs[key] = np.array([block_cost(b, ops) for b in self.blocks] or [0.0],
                                        dtype=np.float64)
        return self._costs[key]

    def profile(self, hw=None, top: int = 20) -> list:
        """The costliest blocks summed over every launch so far (of this program's copies,
        which every load of the same file in this process shares): (instructions, count,
        function, block index, the block's operations)."""
        hw = hw or self.hw
        costs = self.block_costs(hw)
        counts = np.zeros(max(self.n_bb, 1), dtype=np.float64)
        for c in self._copies.values():
            counts += c.bb_accum
        order = np.argsort(-(counts * costs))[:top]
        return [(float(counts[i] * costs[i]), int(counts[i]), self.blocks[i][2], int(i),
                 self.blocks[i][1]) for i in order if counts[i] > 0]

    # ------------------------------------------------------------ copies
    def _copy(self, w: int, hw) -> LoadedCopy:
        """Worker ``w``'s copy: the process's copy of this program's content, made once."""
        with self._lock:
            c = self._copies.get(w)
            if c is not None and not c.wedged:
                return c
            with COPIES_LOCK:
                c = COPIES.get((self.digest, w))
                if c is None or c.wedged:
                    c = COPIES[(self.digest, w)] = LoadedCopy(self, w)
            self._copies[w] = c
            return c

    def _ready(self, c: LoadedCopy, hw) -> None:
        """Set ``c`` up for ``hw`` (its cost table) if it is not; the caller holds c.busy."""
        if c.hw_key != repr(hw):
            c.setup(self, hw, self.block_costs(hw))

    def initial_data(self, alloc, slots) -> None:
        """At load: each DPU's WRAM image from its copy, the MRAM globals' initial values."""
        slots = np.asarray(slots, dtype=np.int64)
        for w in np.unique(slots % self.workers):
            c = self._copy(int(w), alloc.hw)
            alloc.wram[slots[slots % self.workers == w], :self.image_size] = c.pristine
        if self.mram_image.size:
            alloc.mram.write(slots, 0, self.mram_image)

    # ------------------------------------------------------------ launch
    def _run_group(self, c: LoadedCopy, alloc, group: np.ndarray, stop: np.ndarray):
        results = (Result * len(group))()
        launch = Launch()
        launch.n = len(group)
        launch.slots = group.ctypes.data
        launch.wram = alloc.wram.ctypes.data
        launch.wram_stride = alloc.wram.strides[0]
        launch.page_table = alloc.mram.page_table.ctypes.data
        launch.pt_stride = alloc.mram.page_table.shape[1]
        launch.pool = alloc.mram.pool.ctypes.data
        launch.pool_rows = alloc.mram.pool.shape[0]
        launch.results = ctypes.addressof(results)
        launch.stop = stop.ctypes.data
        with c.busy:
            self._ready(c, alloc.hw)
            rc = c.lib.dpurt_run(ctypes.byref(launch))
        if rc != 0:
            raise fail("INTERNAL", f"DPU runtime refused to run ({rc})")
        return results

    def _run_all(self, copies: dict, alloc, groups: dict, stop: np.ndarray) -> dict:
        """Run every group on the process's launch threads while this thread waits: Ctrl-C
        here or the launch's time limit sets the stop word, which the runtime checks every
        quantum. Returns each group's results; KeyboardInterrupt once the groups stopped
        (their DPUs' memories then hold what they had done, and the set stays usable)."""
        limit = launch_timeout_s(alloc)
        deadline = time.monotonic() + limit if math.isfinite(limit) else math.inf
        pool = launch_threads(len(groups))
        futures = {w: pool.submit(self._run_group, copies[w], alloc, g, stop)
                   for w, g in groups.items()}
        pending = set(futures.values())
        try:
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    stop[0] = stop[0] or STOP_TIMEOUT
                    deadline = math.inf
                step = min(max(left, 0.0), WATCH_S)
                if len(pending) == 1:                 # the usual wait, made cheaper
                    (only,) = pending
                    try:
                        only.exception(timeout=step)
                        pending = set()
                    except FutureTimeout:
                        pass
                    continue
                done, pending = wait(pending, timeout=step, return_when=FIRST_EXCEPTION)
                if any(f.exception() is not None for f in done):
                    stop[0] = stop[0] or STOP_INTERRUPT      # the others stop; then raise
                    break
        except KeyboardInterrupt:
            stop[0] = STOP_INTERRUPT
            if not self._stopped(futures, copies):
                raise
            # Done: their MRAM pages and logs are kept, the runtime's buffers freed.
            self._collect(alloc, copies, {w: f.result() for w, f in futures.items()
                                          if f.exception() is None}, limit)
            raise
        if stop[0] and not self._stopped(futures, copies):
            raise fail("DPU_FAULT", f"{self.name}: the launch was stopped (time limit) but a "
                       f"worker thread did not stop within {STOP_GRACE_S:g} s")
        return {w: f.result() for w, f in futures.items()}

    @staticmethod
    def _stopped(futures: dict, copies: dict) -> bool:
        """Wait for the asked-to-stop groups (the runtime stops within a quantum); a copy
        still running after STOP_GRACE_S (code that never gives way) is never used again."""
        _, pending = wait(set(futures.values()), timeout=STOP_GRACE_S)
        for w, f in futures.items():
            if f in pending:
                copies[w].wedged = True
        return not pending

    def _stop_reason(self, r, copy: LoadedCopy, limit: float) -> str:
        """What a DPU the host stopped reports: why, the tasklet and where it was."""
        if r.stop_kind == STOP_TIMEOUT:
            why = (f"the launch ran past its time limit of {limit:g} s of wall-clock time "
                   "(PIMRL_DPU_TIMEOUT, the profile's timeout=..., or exec(timeout=...)): "
                   "does the program end?")
        else:
            why = "the launch was interrupted (Ctrl-C)"
        if not r.ran:
            return f"not run: {why} before this DPU's turn"
        # dpurt.c stops a tasklet in its own code (at the PC it reports) or, between two
        # runtime calls, in the scheduler (the PC is then where it last ran call-free code).
        in_call = r.fault_reason.startswith(b"stopped by the host in a runtime call")
        where = "in a runtime call"
        if r.fault_pc:
            address = int(r.fault_pc) - copy.base
            fn = self.function_at(address)
            where = f"at PC {address:#x}" + (f" in {fn}()" if fn else "")
            if in_call:
                where = f"in a runtime call (last seen {where})"
        return f"stopped {where}: {why}"

    def _collect(self, alloc, copies: dict, outs: dict, limit: float):
        """Each DPU's results into the allocation: MRAM pages, logs, details; the faults."""
        per_slot = {}
        faults = []
        for w, results in outs.items():
            for r in results:
                s = int(r.slot)
                detail = {"instructions": r.instructions, "runtime_instructions": r.runtime_instructions,
                          "dma_reads": r.dma_reads, "dma_read_bytes": r.dma_read_bytes,
                          "dma_writes": r.dma_writes, "dma_write_bytes": r.dma_write_bytes,
                          "sync_calls": r.sync_calls, "heap_peak": r.heap_peak,
                          "cycles": r.cycles, "dma_busy_cycles": r.dma_busy_cycles,
                          "tasklet_cycles": list(r.tasklet_cycles[:self.nr_tasklets]),
                          "dma_unaligned": r.dma_unaligned}
                if r.n_new_pages < 0:
                    faults.append((s, -1, "out of host memory for MRAM pages"))
                for k in range(max(int(r.n_new_pages), 0)):
                    page = ctypes.cast(r.new_page_ids, ctypes.POINTER(ctypes.c_int64))[k]
                    data = np.frombuffer(ctypes.string_at(r.new_page_data + k * PAGE_BYTES, PAGE_BYTES),
                                         dtype=np.uint8)
                    alloc.mram.write([s], int(page) * PAGE_BYTES, data)
                if r.ran:
                    log = ctypes.string_at(r.log, r.log_len) if r.log_len else b""
                    if r.log_truncated:
                        log += b"\n[pimrl: DPU log truncated]\n"
                    alloc.logs[s] = log
                if r.stop_kind:
                    faults.append((s, int(r.fault_tasklet), self._stop_reason(r, copies[w], limit)))
                elif r.fault_tasklet != -1:
                    faults.append((s, int(r.fault_tasklet), r.fault_reason.decode("utf-8", "replace")))
                per_slot[s] = detail
            copies[w].lib.dpurt_release(results, len(results))
        return per_slot, faults

    def launch(self, alloc, slots) -> LaunchResult:
        hw = alloc.hw
        slots = np.ascontiguousarray(slots, dtype=np.int64)
        if not alloc.wram.flags.c_contiguous:
            raise fail("INTERNAL", "WRAM array must be C-contiguous")
        groups = {}
        for w in np.unique(slots % self.workers):
            groups[int(w)] = np.ascontiguousarray(slots[slots % self.workers == w])
        copies = {w: self._copy(w, hw) for w in groups}
        stop = np.zeros(1, dtype=np.int64)      # the launch's stop word (dpurt_launch.stop)
        outs = self._run_all(copies, alloc, groups, stop)
        per_slot, faults = self._collect(alloc, copies, outs, launch_timeout_s(alloc))
        instr = np.array([per_slot[int(s)]["instructions"] for s in slots])
        dma = np.array([per_slot[int(s)]["dma_busy_cycles"] for s in slots])
        # the runtime's modelled clock: when the DPU's last tasklet finished
        cycles = np.array([per_slot[int(s)]["cycles"] for s in slots], dtype=np.float64)
        faults.sort()
        unaligned = sum(int(d["dma_unaligned"]) for d in per_slot.values())
        self.dma_unaligned += unaligned
        if unaligned and not self._warned_unaligned:
            self._warned_unaligned = True
            # Reported against the DPU program file (not this line): what a user should look at.
            warnings.warn_explicit(f"{unaligned} DMA transfer(s) at an MRAM or WRAM address that "
                                   "is not a multiple of 8 ran on the address aligned down, as the "
                                   "DPU's DMA engine does (PIMRL_DPURT_STRICT_DMA=1 makes them fault)",
                                   UserWarning, self.path, 0)
        self.last_launch = {"slots": slots.copy(), "instructions": instr, "dma_cycles": dma,
                            "cycles": np.asarray(cycles, dtype=np.float64), "per_dpu": per_slot,
                            "dma_unaligned": unaligned}
        return LaunchResult(cycles=np.asarray(cycles, dtype=np.float64), faults=faults)

    def __repr__(self):
        return (f"DpuRtProgram({self.path!r}, tasklets={self.nr_tasklets}, "
                f"wram_image={self.image_size} B, mram_globals={self.mram_size} B)")


def load_program(path, hardware=None, workers: int | None = None) -> DpuRtProgram:
    """The simulator program for a DPU program file built by ``dpu-upmem-dpurte-clang``."""
    p = Path(path)
    if not p.exists():
        raise fail("ELF_NO_SUCH_FILE", f"{path!r}: no such DPU program file")
    return DpuRtProgram(p, hardware, workers)


def file_loader(path, hardware):
    """Hook for ``pimrl.pim.programs.FILE_LOADERS``: a DpuRtProgram, or None if the file is
    not a pimrl DPU program (a damaged or truncated ELF file raises ELF_INVALID_FILE)."""
    data = Path(path).read_bytes()
    return data_loader(data, hardware, str(path))


def data_loader(data: bytes, hardware, name: str):
    """A DpuRtProgram of a program file's bytes held in memory (``name`` names it in
    messages), or None if they are not a pimrl DPU program."""
    if not _is_dpurt_data(data, name):
        return None
    return DpuRtProgram(name, hardware, data=data)
