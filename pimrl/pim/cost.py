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


#: Instructions of one pass of a token between tasklets taking turns (``handshake_wait_for``,
#: ``handshake_notify`` and the loop's tests around them), calibrated on the online C
#: kernel's blocks (pimrl.online.program).
TOKEN_PASS = 15.0


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
        """Modelled and measured times; a ledger with no modelled categories (real DPUs)
        gives ``measured_s`` and ``measured_total_s``, the sum of the four phases."""
        if not self.modelled_s:
            return {"measured_s": dict(self.measured_s),
                    "measured_total_s": sum(self.measured_s.get(c, 0.0) for c in CATEGORIES)}
        return {"modelled_s": dict(self.modelled_s), "modelled_total_s": self.modelled_total_s,
                "measured_s": dict(self.measured_s)}
