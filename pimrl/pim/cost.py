"""The PIM cost model: counted work in, modelled seconds out. One place turns counts into
time; the kernels and the transfer layer only count (docs/cost-model.md derives it, and
``pimrl calibrate`` checks it against the published UPMEM measurements).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pimrl.pim.hardware import Hardware

CATEGORIES = ("cpu_dpu", "dpu_kernel", "inter_dpu", "dpu_cpu")
CATEGORY_LABELS = {"cpu_dpu": "CPU-DPU", "dpu_kernel": "DPU kernel",
                   "inter_dpu": "Inter-DPU", "dpu_cpu": "DPU-CPU"}


# ----------------------------------------------------------------------------- transfers
# Host <-> DPU bandwidth = size curve x rank scaling x rank fill:
#   size curve    the 32-rank push_xfer measurements by per-DPU size (log-log interpolation;
#                 below the smallest size a call costs as much as the smallest call, beyond
#                 the largest the curve stays flat);
#   rank scaling  (n_ranks / 32) ** e, e chosen so that one full rank reaches PrIM's
#                 single-rank figure at PrIM's transfer size (``hw.single_rank_ref_bytes``);
#   rank fill     (DPUs per rank / 64) ** g, g chosen so that one DPU gets the serial rate
#                 and a full rank the parallel (or broadcast) rate.
def _curve_gbps(hw: Hardware, per_dpu_bytes: float, to_dpu: bool) -> float:
    """Bandwidth of a 32-rank parallel transfer: log-log interpolation of the measured curve,
    flat beyond its ends."""
    sizes = np.log(np.asarray(hw.xfer_sizes, dtype=float))
    bw = np.log(np.asarray(hw.xfer_to_dpu_gbps_32r if to_dpu else hw.xfer_from_dpu_gbps_32r,
                           dtype=float))
    x = np.log(max(float(per_dpu_bytes), 1.0))
    if x <= sizes[0]:
        # Below the smallest size a call is latency bound: time stays that of that call.
        return float(np.exp(bw[0])) * float(per_dpu_bytes) / hw.xfer_sizes[0]
    return float(np.exp(np.interp(x, sizes, bw)))


def size_factor(hw: Hardware, per_dpu_bytes: float, to_dpu: bool) -> float:
    """Bandwidth at ``per_dpu_bytes`` relative to that at PrIM's single-rank transfer size:
    the shape of the size curve, applied to every kind of transfer."""
    return (_curve_gbps(hw, per_dpu_bytes, to_dpu)
            / _curve_gbps(hw, hw.single_rank_ref_bytes, to_dpu))


def rank_scaling(hw: Hardware, n_ranks: int, to_dpu: bool) -> float:
    """Fraction of the 32-rank bandwidth that ``n_ranks`` full ranks reach: a power law through
    PrIM's single-rank figure and the 32-rank curve, both at ``hw.single_rank_ref_bytes``."""
    ref32 = _curve_gbps(hw, hw.single_rank_ref_bytes, to_dpu)
    one = hw.parallel_to_dpu_gbps_1r if to_dpu else hw.parallel_from_dpu_gbps_1r
    exponent = np.log(ref32 / one) / np.log(32.0)
    return float((max(n_ranks, 1) / 32.0) ** exponent)


def rank_fill(hw: Hardware, dpus_per_rank: float, kind: str) -> float:
    """Fraction of a full rank's bandwidth reached with ``dpus_per_rank`` DPUs of each rank:
    ``kind`` is ``to``, ``from`` (parallel) or ``broadcast``. One DPU gets the serial rate."""
    full = {"to": hw.parallel_to_dpu_gbps_1r, "from": hw.parallel_from_dpu_gbps_1r,
            "broadcast": hw.broadcast_gbps_1r}[kind]
    serial = hw.serial_from_dpu_gbps if kind == "from" else hw.serial_to_dpu_gbps
    exponent = np.log(full / serial) / np.log(float(hw.dpus_per_rank))
    frac = min(max(float(dpus_per_rank), 1.0), float(hw.dpus_per_rank)) / hw.dpus_per_rank
    return float(frac ** exponent)


def parallel_transfer_seconds(hw: Hardware, per_dpu_bytes: int, n_dpus: int, n_ranks: int,
                              to_dpu: bool) -> float:
    """Modelled time of one prepare/push transfer of ``per_dpu_bytes`` to/from ``n_dpus``."""
    if per_dpu_bytes <= 0 or n_dpus <= 0:
        return 0.0
    n_ranks = max(int(n_ranks), 1)
    gbps = (_curve_gbps(hw, per_dpu_bytes, to_dpu) * rank_scaling(hw, n_ranks, to_dpu)
            * rank_fill(hw, n_dpus / n_ranks, "to" if to_dpu else "from"))
    return per_dpu_bytes * n_dpus / (gbps * 1e9)


def serial_transfer_seconds(hw: Hardware, nbytes: int, to_dpu: bool) -> float:
    """One DPU at a time (``dpu_copy_to``/``dpu_copy_from`` on a single DPU)."""
    if nbytes <= 0:
        return 0.0
    gbps = (hw.serial_to_dpu_gbps if to_dpu else hw.serial_from_dpu_gbps) * size_factor(hw, nbytes, to_dpu)
    return nbytes / (gbps * 1e9)


def broadcast_seconds(hw: Hardware, per_dpu_bytes: int, n_dpus: int, n_ranks: int) -> float:
    """The same bytes to every DPU: PrIM's single-rank broadcast rate, shaped by size like
    pushes, scaled over ranks like pushes, and filled over a rank with its own exponent."""
    if per_dpu_bytes <= 0 or n_dpus <= 0:
        return 0.0
    n_ranks = max(int(n_ranks), 1)
    gbps = (hw.broadcast_gbps_1r * size_factor(hw, per_dpu_bytes, True)
            * rank_scaling(hw, n_ranks, True) / rank_scaling(hw, 1, True)
            * rank_fill(hw, n_dpus / n_ranks, "broadcast"))
    return per_dpu_bytes * n_dpus / (gbps * 1e9)


# ----------------------------------------------------------------------------- DPU cycles
def dma_cycles(hw: Hardware, nbytes, write: bool = False):
    """Cycles of one ``mram_read`` (``write=False``) or ``mram_write`` of ``nbytes``."""
    return (hw.dma_alpha_write if write else hw.dma_alpha_read) + hw.dma_beta * np.asarray(nbytes, dtype=np.float64)


def dpu_cycles(hw: Hardware, instructions, dma, tasklets: int):
    """Cycles of one DPU that retires ``instructions`` and spends ``dma`` cycles on its one
    DMA engine, the work split evenly over ``tasklets`` tasklets (arrays broadcast).

    Three bounds, the largest wins: the pipeline retires at most one instruction a cycle;
    the DMA engine serves one transfer at a time; and each tasklet runs its share in order,
    issuing at most once every ``issue_interval`` cycles and waiting for its own transfers,
    so T tasklets need at least (dma + interval * instructions) / T cycles. With one tasklet
    this is compute + DMA; with many, compute and DMA overlap.
    """
    instr = np.asarray(instructions, dtype=np.float64)
    dma = np.asarray(dma, dtype=np.float64)
    t = max(int(tasklets), 1)
    return np.maximum(np.maximum(instr, dma), (dma + hw.issue_interval * instr) / t)


# ----------------------------------------------------------------------------- kernels
# Counters a kernel reports per DPU (columns of its ``stats`` array).
COUNTERS = ("updates", "terminal_updates", "scanned_entries", "rng_draws", "below_draws",
            "dma_reads", "dma_read_bytes", "dma_writes", "dma_write_bytes", "saturations",
            "fault", "sampling_steps")
C = {name: i for i, name in enumerate(COUNTERS)}


#: One pass of the update token between tasklets (handshake_wait_for, handshake_notify and
#: the loop's tests around them), and the INT32 kernel's 64-bit pair moves beyond its
#: counted operations: both calibrated on the C kernel's basic blocks as the DPU runtime
#: counts them (docs/dpu-runtime.md, "Agreement with the numba path").
TOKEN_PASS = 15.0
Q_FORMAT_PAIRS = 24.0


def update_instruction_costs(hw: Hardware, dtype: str, algo: str, sampling: str,
                             n_actions: int, tasklets: int, count_visits: bool = False) -> dict:
    """Instructions charged per counted event, for one kernel variant.

    The breakdown follows the C kernels line by line (docs/cost-model.md): record decode from
    WRAM, two row indices (s*A, s'*A: shift-and-add, A a compile-time constant), the max or the
    chosen action's load, the update arithmetic (soft float or saturating Q-format) and the
    loop/cursor work of the sampling order.
    """
    ops = hw.op_instructions
    # Record decode (8), two row indices s*A and s'*A (A is a compile-time constant in the C
    # kernel, so a shift-and-add pair each, not an emulated multiply), Q load/store (4).
    per_update = 8.0 + 2 * 2.0 + 4.0
    if dtype == "fp32":
        bootstrap = ops["float_mul"] + ops["float_add"]          # gamma * m, r + .
        per_update += ops["float_sub"] + ops["float_mul"] + ops["float_add"]  # td, alpha * td, q +
        scan = 3.0 + ops["float_cmp"]                            # load, compare, branch, move
    else:
        # Q-format values are widened to 64 bits, which a 32-bit DPU handles in pairs: a
        # 64-bit add is add + addc, a bound check a compare-and-branch over both words (3).
        sat64 = 2 * 3.0                                          # two 64-bit bound checks
        fx_mul = ops["int64_mul"] + 5.0 + sat64                  # product; widen, round, shift
        sat_add = 2.0 + sat64                                    # 64-bit add, saturate
        bootstrap = fx_mul + sat_add
        # Q values loaded as 32-bit words and moved, compared and stored as 64-bit pairs
        # around those operations: calibrated on the C kernel's basic blocks as the DPU
        # runtime counts them (docs/dpu-runtime.md, "Agreement with the numba path").
        per_update += sat_add + fx_mul + sat_add + Q_FORMAT_PAIRS
        scan = 3.0 + ops["int32_sub"]
    step = {"seq": 5.0, "str": 8.0, "ran": 6.0}[sampling]        # cursor, bounds, branch
    if count_visits:
        per_update += 3.0                                        # load, add, store
    return {
        "updates": per_update + step + (TOKEN_PASS if tasklets > 1 else 0.0),
        "non_terminal": bootstrap,
        "scanned_entries": scan,
        "rng_draws": 6.0,                                        # xorshift32: 3 shifts, 3 xors
        "below_draws": ops["int64_mul"],                         # (x * n) >> 32
        "dma_reads": 4.0,                                        # issue + bookkeeping
    }


def kernel_cycles(hw: Hardware, counts: np.ndarray, costs: dict, tasklets: int) -> np.ndarray:
    """Modelled cycles per DPU from its counters ((n_dpus, len(COUNTERS)) int64).

    Instructions from the counters times their costs; DMA alpha + beta * bytes per transfer;
    the two combined by :func:`dpu_cycles` for one tasklet at a time, whatever ``tasklets``
    is: the round-robin update order of docs/design.md is a token passed from tasklet to
    tasklet (the C kernel's handshake ring), and each step of a lane (record fetch, decode,
    update) runs while its tasklet holds the token, so the DPU's pipeline and DMA engine
    serve one tasklet at a time (``tasklets`` only changes the per-update synchronisation
    cost, in :func:`update_instruction_costs`). The DPU runtime, which schedules tasklets in
    modelled time, gives the same for the C kernel (tests/test_dpurt.py).
    """
    counts = np.asarray(counts, dtype=np.float64)
    instr = (counts[:, C["updates"]] * costs["updates"]
             + (counts[:, C["updates"]] - counts[:, C["terminal_updates"]]) * costs["non_terminal"]
             + counts[:, C["scanned_entries"]] * costs["scanned_entries"]
             + counts[:, C["rng_draws"]] * costs["rng_draws"]
             + counts[:, C["below_draws"]] * costs["below_draws"]
             + counts[:, C["dma_reads"]] * costs["dma_reads"])
    dma = (counts[:, C["dma_reads"]] * hw.dma_alpha_read + counts[:, C["dma_writes"]] * hw.dma_alpha_write
           + (counts[:, C["dma_read_bytes"]] + counts[:, C["dma_write_bytes"]]) * hw.dma_beta)
    return dpu_cycles(hw, instr, dma, 1)


# ----------------------------------------------------------------------------- the ledger
@dataclass
class TimeBreakdown:
    """Time of a run in PrIM's four categories. ``modelled_s`` comes from the cost model;
    ``measured_s`` is wall clock on this machine. They are never added together."""

    modelled_s: dict = field(default_factory=lambda: {c: 0.0 for c in CATEGORIES})
    measured_s: dict = field(default_factory=dict)
    events: list = field(default_factory=list)

    def add(self, category: str, seconds: float, what: str, **detail):
        if category not in CATEGORIES:
            raise ValueError(f"unknown time category {category!r}")
        self.modelled_s[category] += seconds
        self.events.append({"category": category, "what": what, "modelled_s": seconds, **detail})

    def measure(self, name: str, seconds: float):
        self.measured_s[name] = self.measured_s.get(name, 0.0) + seconds

    @property
    def modelled_total_s(self) -> float:
        return sum(self.modelled_s.values())

    def as_dict(self) -> dict:
        return {"modelled_s": dict(self.modelled_s), "modelled_total_s": self.modelled_total_s,
                "measured_s": dict(self.measured_s)}
