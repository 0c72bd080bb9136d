"""PrIM-style microbenchmarks run through the simulator: small DPU programs that count their
work (instructions per loop iteration, DMA transfers) and are launched on ``dpu_alloc``'d
sets, host transfers made with real ``DpuSet`` calls; every time is read back from the
set's ledger, i.e. it comes from :mod:`pimrl.pim.cost` and :mod:`pimrl.pim.hardware`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimrl.calibration.fit import MRAM_LATENCY_TIMED_INSTRUCTIONS, STREAM_BLOCK_BYTES
from pimrl.pim import cost
from pimrl.pim.hardware import Hardware, MiB
from pimrl.pim.system import (DPU_XFER_FROM_DPU, DPU_XFER_TO_DPU, MRAM_BASE, DpuProgram,
                              LaunchResult, Machine, Symbol, dpu_alloc)

DTYPES = ("int32", "int64", "float", "double")
OPS = ("add", "sub", "mul", "div")
STREAM_KERNELS = ("copy-dma", "copy", "add", "scale", "triad")
MRAM_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
# Per-DPU sizes and DPU counts of the single-rank transfer sweeps.
RANK_SIZES = (8, 64, 512, 4096, 32768, 262144, 2 * MiB, 32 * MiB)
RANK_DPUS = (1, 2, 4, 8, 16, 32, 64)
# Transfers that would move more than this many bytes in total are accounted through the
# same DpuSet path without materialising the data (the time is identical).
REAL_DATA_LIMIT = 64 * MiB
SATURATION_FRACTION = 0.95

# PrIM's arithmetic loop ``a[i] = a[i] OP k`` (not unrolled): load, store, index update,
# compare, branch around the operation; 64-bit element types need one more instruction.
LOOP_OVERHEAD = {"int32": 5, "float": 5, "int64": 6, "double": 6}
# PrIM's STREAM loops are fully unrolled (#pragma unroll over a 1,024-B block of INT64):
# per element the loads, the stores and the operation; a 64-bit add is add + addc.
# Per block: the block loop (index, compare, branch, three address updates) and two
# instructions to set up each mram_read/mram_write call (estimates, not fitted).
BLOCK_LOOP_INSTRUCTIONS = 6
DMA_CALL_INSTRUCTIONS = 2


@dataclass(frozen=True)
class Loop:
    """One loop of a microbenchmark: what one iteration costs and how many a DPU runs."""

    iterations: int
    instructions: float               # per iteration
    reads: tuple = ()                 # bytes of each mram_read per iteration
    writes: tuple = ()                # bytes of each mram_write per iteration


class MicroProgram(DpuProgram):
    """A microbenchmark kernel: ``tasklets`` tasklets share ``loop``'s iterations evenly;
    it reports the cycles of its timed region as counted work through the cost model."""

    def __init__(self, name: str, loop: Loop, tasklets: int, mram_bytes: int = 0):
        self.name, self.loop, self.tasklets = name, loop, tasklets
        self.symbols = {"buffer": Symbol("buffer", MRAM_BASE, mram_bytes)} if mram_bytes else {}
        self.mram_used = mram_bytes

    def launch(self, alloc, slots) -> LaunchResult:
        hw, lp = alloc.hw, self.loop
        if self.tasklets > hw.max_tasklets:
            raise ValueError(f"{hw.name} runs at most {hw.max_tasklets} tasklets")
        instr = lp.iterations * lp.instructions
        dma = lp.iterations * (sum(float(cost.dma_cycles(hw, b)) for b in lp.reads)
                               + sum(float(cost.dma_cycles(hw, b, write=True)) for b in lp.writes))
        cycles = np.full(len(slots), float(cost.dpu_cycles(hw, instr, dma, self.tasklets)))
        return LaunchResult(cycles=cycles)


def run_kernel(hw: Hardware, program: MicroProgram) -> float:
    """Launch ``program`` on one allocated DPU; the modelled kernel seconds from the ledger."""
    dpus = dpu_alloc(1, machine=Machine(hw))
    try:
        dpus.load(program)
        dpus.launch()
        ledger = dpus.alloc.ledger
        # PrIM timed kernels on the DPUs: without the host's launch and completion latencies.
        return ledger.modelled_s["dpu_kernel"] - sum(
            e["modelled_s"] for e in ledger.events if e["what"].startswith("latency: "))
    finally:
        dpus.free()


def tasklet_range(hw: Hardware):
    return list(range(1, hw.max_tasklets + 1))


# ----------------------------------------------------------------------------- arithmetic
def arithmetic_program(hw: Hardware, dtype: str, op: str, tasklets: int, n: int = 1 << 16):
    per = LOOP_OVERHEAD[dtype] + hw.op_instructions[f"{dtype}_{op}"]
    return MicroProgram(f"arith-{dtype}-{op}", Loop(n, per), tasklets)


def arithmetic_mops(hw: Hardware, dtype: str, op: str, tasklets: int, n: int = 1 << 16) -> float:
    return n / run_kernel(hw, arithmetic_program(hw, dtype, op, tasklets, n)) / 1e6


# ----------------------------------------------------------------------------- MRAM DMA
def mram_mbps(hw: Hardware, size: int, write: bool, n: int = 1024) -> float:
    """One tasklet timing ``n`` transfers of ``size`` bytes as PrIM's MRAM-Latency does: its
    timed interval holds the transfer and the loop's timing instructions
    (:data:`pimrl.calibration.fit.MRAM_LATENCY_TIMED_INSTRUCTIONS`)."""
    k = MRAM_LATENCY_TIMED_INSTRUCTIONS
    loop = Loop(n, k, writes=(size,)) if write else Loop(n, k, reads=(size,))
    prog = MicroProgram(f"mram-{'write' if write else 'read'}-{size}", loop, 1)
    return n * size / run_kernel(hw, prog) / 1e6


# ----------------------------------------------------------------------------- STREAM
def stream_loop(hw: Hardware, kernel: str, n_blocks: int = 4096) -> Loop:
    ops = hw.op_instructions
    elems = STREAM_BLOCK_BYTES // 8
    add64, mul64 = ops["int64_add"] + 1, ops["int64_mul"] + 1
    per_elem, n_in = {
        "copy-dma": (0, 1),                    # mram_read then mram_write of the block
        "copy": (2, 1),                        # ld, sd
        "add": (2 + add64 + 1, 2),             # ld, ld, add/addc, sd
        "scale": (1 + mul64 + 1, 1),           # ld, 64-bit multiply, sd
        "triad": (2 + mul64 + add64 + 1, 2),   # ld, ld, multiply, add, sd
    }[kernel]
    per_block = elems * per_elem + BLOCK_LOOP_INSTRUCTIONS + DMA_CALL_INSTRUCTIONS * (n_in + 1)
    return Loop(n_blocks, per_block, reads=(STREAM_BLOCK_BYTES,) * n_in,
                writes=(STREAM_BLOCK_BYTES,))


def stream_mbps(hw: Hardware, kernel: str, tasklets: int, n_blocks: int = 4096) -> float:
    """MB/s counting bytes read plus bytes written (STREAM's convention)."""
    loop = stream_loop(hw, kernel, n_blocks)
    moved = n_blocks * STREAM_BLOCK_BYTES * (len(loop.reads) + len(loop.writes))
    return moved / run_kernel(hw, MicroProgram(f"stream-{kernel}", loop, tasklets)) / 1e6


# ----------------------------------------------------------------------------- host transfers
class TransferProgram(DpuProgram):
    """A program with one host-visible MRAM buffer of ``nbytes`` (``__mram_noinit``)."""

    def __init__(self, nbytes: int):
        self.name = f"xfer-{nbytes}"
        self.symbols = {"buffer": Symbol("buffer", MRAM_BASE, nbytes)}

    def launch(self, alloc, slots):  # pragma: no cover - never launched
        return LaunchResult(cycles=np.zeros(len(slots)))


TRANSFER_KINDS = ("serial_to", "serial_from", "parallel_to", "parallel_from", "broadcast")


def transfer_gbps(hw: Hardware, kind: str, per_dpu_bytes: int, n_dpus: int) -> tuple[float, bool]:
    """Bandwidth (GB/s, total bytes over modelled time) of one transfer of ``per_dpu_bytes``
    to/from each of ``n_dpus`` DPUs, made with the SDK calls: ``serial_*`` is ``dpu_copy_to``
    / ``dpu_copy_from`` on one DPU after another (``DPU_FOREACH``), ``parallel_*`` is
    ``dpu_prepare_xfer`` per DPU then one ``dpu_push_xfer``, ``broadcast`` is
    ``dpu_broadcast_to``. Returns the bandwidth and whether the bytes were really moved."""
    dpus = dpu_alloc(n_dpus, machine=Machine(hw))
    real = per_dpu_bytes * n_dpus <= REAL_DATA_LIMIT
    try:
        dpus.load(TransferProgram(per_dpu_bytes))
        buf = np.zeros(per_dpu_bytes if real else 8, dtype=np.uint8)
        to = kind in ("serial_to", "parallel_to", "broadcast")
        if kind.startswith("serial"):
            for one in dpus.dpu_sets():
                if not real:
                    one._account(to, per_dpu_bytes, serial=True, what="accounted")
                elif to:
                    one.copy_to("buffer", 0, buf)
                else:
                    one.copy_from("buffer", 0, per_dpu_bytes)
        elif kind == "broadcast":
            if real:
                dpus.broadcast_to("buffer", 0, buf)
            else:
                dpus._account(True, per_dpu_bytes, broadcast=True, what="accounted")
        else:
            if real:
                bufs = [np.zeros(per_dpu_bytes, dtype=np.uint8) for _ in range(n_dpus)]
                for one, b in zip(dpus.dpu_sets(), bufs):
                    one.prepare_xfer(b)
                dpus.push_xfer(DPU_XFER_TO_DPU if to else DPU_XFER_FROM_DPU, "buffer", 0,
                               per_dpu_bytes)
            else:
                dpus._account(to, per_dpu_bytes, what="accounted")
        secs = dpus.alloc.ledger.modelled_total_s
    finally:
        dpus.free()
    return per_dpu_bytes * n_dpus / secs / 1e9, real
