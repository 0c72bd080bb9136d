"""The DPU runtime's side of a loaded program: the ABI it shares with ``host/dpurt/src/dpurt.c``
(the setup, launch and result structs, the stop words, the runtime calls' costs), the loaded
copies of a program's shared object (one per worker: a program's globals are the running
DPU's WRAM) and the process-wide threads launches run on (:class:`pimrl.dpurt.program.DpuRtProgram`
uses them).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from pimrl.dpurt.cc import ABI
from pimrl.io import atomic_write_bytes
from pimrl.pim.errors import fail
from pimrl.pim.system import MRAM_BASE

if TYPE_CHECKING:
    from pimrl.dpurt.program import DpuRtProgram

#: The launch's stop word (dpurt.c, dpurt_launch.stop): why the host stops it.
STOP_INTERRUPT, STOP_TIMEOUT = 1, 2
#: Seconds the runtime gets to stop once asked (it stops within a quantum: microseconds).
STOP_GRACE_S = 5.0
#: Seconds between two looks of the waiting thread at the time limit.
WATCH_S = 0.25
#: Instructions charged per runtime call (the call sequence in the program is counted too).
RUNTIME_COSTS = {"mutex": 2.0, "barrier": 8.0, "handshake": 2.0, "dma_call": 0.0,
                 "alloc": 6.0, "printf": 50.0, "perfcounter": 2.0}
#: DPU instructions a tasklet runs without a runtime call before it may give way to a tasklet
#: that is earlier in modelled time (smaller: finer interleaving, slower simulation).
QUANTUM = float(os.environ.get("PIMRL_DPURT_QUANTUM", "24"))
MAX_TASKLETS = 24
#: MRAM variables up to this many bytes in all are copied in and out whole for every DPU run;
#: larger ones are paged in on first touch (host/dpurt/src/dpurt.c, "MRAM variables").
#: Both keep one copy of the bytes; this only trades copy time against fault time.
MRAM_SWAP_LIMIT = 1 << 20
MRAM_SWAP_EAGER, MRAM_SWAP_PAGED = 1, 2


def mram_swap_limit() -> int:
    """``PIMRL_DPURT_MRAM_SWAP`` (bytes, read at every load), else MRAM_SWAP_LIMIT."""
    env = os.environ.get("PIMRL_DPURT_MRAM_SWAP", "").strip()
    if not env:
        return MRAM_SWAP_LIMIT
    try:
        value = int(env, 0)
    except ValueError:
        value = -1
    if value < 0:
        raise fail("SYSTEM", f"PIMRL_DPURT_MRAM_SWAP={env!r}: expected a byte count >= 0 "
                   "(MRAM variables up to it are copied whole, larger ones paged in)")
    return value
HOST_STACK_BYTES = 256 * 1024
LOG_CAP = 1 << 20

class Config(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int64), ("image", ctypes.c_void_p), ("image_size", ctypes.c_int64),
                ("bbc", ctypes.c_void_p), ("n_bb", ctypes.c_int64), ("bb_cost", ctypes.c_void_p),
                ("bb_accum", ctypes.c_void_p), ("mram_sec", ctypes.c_void_p),
                ("mram_sec_size", ctypes.c_int64), ("mram_swap", ctypes.c_int64),
                ("nr_tasklets", ctypes.c_int64), ("wram_bytes", ctypes.c_int64),
                ("mram_bytes", ctypes.c_int64), ("stack_model_bytes", ctypes.c_int64),
                ("host_stack_bytes", ctypes.c_int64), ("log_cap", ctypes.c_int64),
                ("dma_alpha_read", ctypes.c_double), ("dma_alpha_write", ctypes.c_double),
                ("dma_beta", ctypes.c_double), ("issue_interval", ctypes.c_double),
                ("frequency_hz", ctypes.c_double), ("cost_mutex", ctypes.c_double),
                ("cost_barrier", ctypes.c_double), ("cost_handshake", ctypes.c_double),
                ("cost_dma_call", ctypes.c_double), ("cost_alloc", ctypes.c_double),
                ("cost_printf", ctypes.c_double), ("bb_weight", ctypes.c_void_p),
                ("quantum", ctypes.c_double), ("cost_perfcounter", ctypes.c_double)]


class Result(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int64), ("fault_tasklet", ctypes.c_int64),
                ("fault_reason", ctypes.c_char * 512), ("instructions", ctypes.c_double),
                ("runtime_instructions", ctypes.c_double),
                ("dma_reads", ctypes.c_int64), ("dma_read_bytes", ctypes.c_int64),
                ("dma_writes", ctypes.c_int64), ("dma_write_bytes", ctypes.c_int64),
                ("sync_calls", ctypes.c_int64), ("heap_peak", ctypes.c_int64),
                ("log", ctypes.c_void_p), ("log_len", ctypes.c_int64),
                ("log_truncated", ctypes.c_int64), ("n_new_pages", ctypes.c_int64),
                ("new_page_ids", ctypes.c_void_p), ("new_page_data", ctypes.c_void_p),
                ("cycles", ctypes.c_double), ("dma_busy_cycles", ctypes.c_double),
                ("tasklet_cycles", ctypes.c_double * MAX_TASKLETS),
                ("dma_unaligned", ctypes.c_int64), ("stop_kind", ctypes.c_int64),
                ("fault_pc", ctypes.c_uint64), ("ran", ctypes.c_int64)]


class Launch(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("slots", ctypes.c_void_p), ("wram", ctypes.c_void_p),
                ("wram_stride", ctypes.c_int64), ("page_table", ctypes.c_void_p),
                ("pt_stride", ctypes.c_int64), ("pool", ctypes.c_void_p),
                ("pool_rows", ctypes.c_int64), ("results", ctypes.c_void_p),
                ("stop", ctypes.c_void_p)]


def default_workers() -> int:
    env = os.environ.get("PIMRL_DPURT_WORKERS")
    if env:
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 8))


#: (SHA-256 of the program file, worker) -> its loaded copy, for the whole process.
COPIES: dict = {}
COPIES_LOCK = threading.Lock()
_POOL = None
_POOL_SIZE = 0
_POOL_PID = None
_POOL_LOCK = threading.Lock()


def launch_threads(n: int) -> ThreadPoolExecutor:
    """The process-wide threads DPU launches run on (at least ``n``)."""
    global _POOL, _POOL_SIZE, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < n or _POOL_PID != os.getpid():
            old = _POOL if _POOL_PID == os.getpid() else None
            _POOL_SIZE = max(n, default_workers())
            _POOL = ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="dpurt")
            _POOL_PID = os.getpid()
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


class LoadedCopy:
    """One loaded copy of the shared object: a worker's private globals."""

    def __init__(self, program: "DpuRtProgram", index: int):
        # The bytes whose seal the program checked, not the file again (it may have changed).
        tmpdir = tempfile.mkdtemp(prefix="pimrl-dpurt-")
        path = os.path.join(tmpdir, f"program.{index}.so")
        try:
            atomic_write_bytes(path, program.data)
            self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as exc:
            raise fail("ELF_INVALID_FILE", f"{program.path}: cannot load the DPU program: {exc}") from None
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        lib = self.lib
        if lib.dpurt_abi() != ABI:
            raise fail("ELF_INVALID_FILE", f"{program.path}: built for another pimrl DPU runtime "
                       "(rebuild it with dpu-upmem-dpurte-clang)")
        anchor = ctypes.cast(lib.dpurt_anchor, ctypes.c_void_p).value
        self.base = anchor - program.anchor_value
        lib.dpurt_setup.argtypes = [ctypes.POINTER(Config), ctypes.c_uint32]
        lib.dpurt_run.argtypes = [ctypes.POINTER(Launch)]
        lib.dpurt_release.argtypes = [ctypes.POINTER(Result), ctypes.c_int64]
        self.image_addr = self.base + program.image_lo
        self.pristine = np.frombuffer(ctypes.string_at(self.image_addr, program.image_size),
                                      dtype=np.uint8).copy()
        self.bb_accum = np.zeros(max(program.n_bb, 1), dtype=np.uint64)
        self.hw_key = None
        # One launch at a time per copy: its globals are swapped per DPU while it runs.
        self.busy = threading.Lock()
        # A launch that did not stop when asked (non-preemptible code): never used again.
        self.wedged = False

    def setup(self, program: "DpuRtProgram", hw, costs: np.ndarray):
        cfg = Config()
        cfg.abi = ABI
        cfg.image = self.image_addr
        cfg.image_size = program.image_size
        cfg.bbc = self.base + program.bbc_lo
        cfg.bb_weight = self.base + program.bbw_lo if program.bbw_lo else 0
        cfg.quantum = QUANTUM
        cfg.n_bb = program.n_bb
        self.costs = costs                  # kept alive: the runtime reads it
        cfg.bb_cost = costs.ctypes.data
        cfg.bb_accum = self.bb_accum.ctypes.data
        cfg.mram_sec = self.base + program.mram_lo if program.mram_size else 0
        cfg.mram_sec_size = program.mram_size
        cfg.mram_swap = MRAM_SWAP_EAGER if program.mram_size <= mram_swap_limit() else MRAM_SWAP_PAGED
        cfg.nr_tasklets = program.nr_tasklets
        cfg.wram_bytes = hw.wram_bytes
        cfg.mram_bytes = hw.mram_bytes
        cfg.stack_model_bytes = program.stack_bytes(hw)
        cfg.host_stack_bytes = HOST_STACK_BYTES
        cfg.log_cap = LOG_CAP
        cfg.dma_alpha_read, cfg.dma_alpha_write = hw.dma_alpha_read, hw.dma_alpha_write
        cfg.dma_beta, cfg.issue_interval = hw.dma_beta, hw.issue_interval
        cfg.frequency_hz = hw.frequency_hz
        for k, v in RUNTIME_COSTS.items():
            setattr(cfg, "cost_" + k, v)
        rc = self.lib.dpurt_setup(ctypes.byref(cfg), MRAM_BASE + program.mram_used)
        if rc != 0:
            raise fail("INTERNAL", f"DPU runtime setup failed ({rc})")
        self.hw_key = repr(hw)
