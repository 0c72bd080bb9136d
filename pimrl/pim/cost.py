"""The PIM cost model: counted work in, modelled seconds out. One place turns counts into
time; the kernels and the transfer layer only count (docs/cost-model.md derives it).
"""
from __future__ import annotations

from dataclasses import dataclass, field, asdict

import numpy as np

from pimrl.pim.hardware import Hardware

CATEGORIES = ("cpu_dpu", "dpu_kernel", "inter_dpu", "dpu_cpu")
CATEGORY_LABELS = {"cpu_dpu": "CPU-DPU", "dpu_kernel": "DPU kernel",
                   "inter_dpu": "Inter-DPU", "dpu_cpu": "DPU-CPU"}


# ----------------------------------------------------------------------------- transfers
def _curve_gbps(hw: Hardware, per_dpu_bytes: float, to_dpu: bool) -> float:
    """Bandwidth of a 32-rank parallel transfer: log-log interpolation of the measured curve,
    flat beyond its ends."""
    sizes = np.log(np.asarray(hw.xfer_sizes, dtype=float))
    bw = np.log(np.asarray(hw.xfer_to_dpu_gbps_32r if to_dpu else hw.xfer_from_dpu_gbps_32r))
    x = np.log(max(float(per_dpu_bytes), 1.0))
    if x <= sizes[0]:
        # Below 1 KiB a call is latency bound: time stays that of the 1 KiB call.
        return float(np.exp(bw[0])) * float(per_dpu_bytes) / hw.xfer_sizes[0]
    return float(np.exp(np.interp(x, sizes, bw)))


def rank_scaling(hw: Hardware, n_ranks: int, to_dpu: bool) -> float:
    """Fraction of the 32-rank bandwidth that ``n_ranks`` ranks reach: a power law through
    the single-rank figure (PrIM) and the 32-rank figure (large transfers)."""
    peak32 = max(hw.xfer_to_dpu_gbps_32r if to_dpu else hw.xfer_from_dpu_gbps_32r)
    one = hw.parallel_to_dpu_gbps_1r if to_dpu else hw.parallel_from_dpu_gbps_1r
    exponent = np.log(peak32 / one) / np.log(32.0)
    return float((max(n_ranks, 1) / 32.0) ** exponent)


def parallel_transfer_seconds(hw: Hardware, per_dpu_bytes: int, n_dpus: int, n_ranks: int,
                              to_dpu: bool) -> float:
    """Modelled time of one prepare/push transfer of ``per_dpu_bytes`` to/from ``n_dpus``."""
    if per_dpu_bytes <= 0 or n_dpus <= 0:
        return 0.0
    gbps = _curve_gbps(hw, per_dpu_bytes, to_dpu) * rank_scaling(hw, n_ranks, to_dpu)
    return per_dpu_bytes * n_dpus / (gbps * 1e9)


def serial_transfer_seconds(hw: Hardware, nbytes: int, to_dpu: bool) -> float:
    """One DPU at a time (``dpu_copy_to``/``dpu_copy_from`` on a single DPU)."""
    gbps = hw.serial_to_dpu_gbps if to_dpu else hw.serial_from_dpu_gbps
    return nbytes / (gbps * 1e9)


def broadcast_seconds(hw: Hardware, per_dpu_bytes: int, n_dpus: int, n_ranks: int) -> float:
    """The same bytes to every DPU: PrIM's single-rank broadcast rate, scaled over ranks like
    parallel pushes."""
    if per_dpu_bytes <= 0 or n_dpus <= 0:
        return 0.0
    gbps = hw.broadcast_gbps_1r * rank_scaling(hw, n_ranks, True) / rank_scaling(hw, 1, True)
    return per_dpu_bytes * n_dpus / (gbps * 1e9)


# ----------------------------------------------------------------------------- kernels
# Counters a kernel reports per DPU (columns of its ``stats`` array).
COUNTERS = ("updates", "terminal_updates", "scanned_entries", "rng_draws", "below_draws",
            "dma_reads", "dma_read_bytes", "dma_writes", "dma_write_bytes", "saturations",
            "fault", "sampling_steps")
C = {name: i for i, name in enumerate(COUNTERS)}


def update_instruction_costs(hw: Hardware, dtype: str, algo: str, sampling: str,
                             n_actions: int, tasklets: int) -> dict:
    """Instructions charged per counted event, for one kernel variant.

    The breakdown follows the C kernels line by line (docs/cost-model.md): record decode from
    WRAM, two row-index multiplies (s*A, s'*A: emulated 32-bit multiplies), the max or the
    chosen action's load, the update arithmetic (soft float or saturating Q-format) and the
    loop/cursor work of the sampling order.
    """
    ops = hw.op_instructions
    per_update = 8.0 + 2 * ops["int32_mul"] + 4.0      # decode, row indices, Q load/store
    if dtype == "fp32":
        bootstrap = ops["float_mul"] + ops["float_add"]          # gamma * m, r + .
        per_update += ops["float_sub"] + ops["float_mul"] + ops["float_add"]  # td, alpha * td, q +
        scan = 3.0 + ops["float_cmp"]                            # load, compare, branch, move
    else:
        fx_mul = ops["int64_mul"] + 4.0                          # 64-bit product, round, shift
        sat_add = ops["int32_add"] + 4.0                         # add + two bound checks
        bootstrap = fx_mul + sat_add
        per_update += sat_add + fx_mul + sat_add
        scan = 3.0 + ops["int32_sub"]
    step = {"seq": 5.0, "str": 8.0, "ran": 6.0}[sampling]        # cursor, bounds, branch
    return {
        "updates": per_update + step + (ops["mutex"] if tasklets > 1 else 0.0),
        "non_terminal": bootstrap,
        "scanned_entries": scan,
        "rng_draws": 6.0,                                        # xorshift32: 3 shifts, 3 xors
        "below_draws": ops["int64_mul"],                         # (x * n) >> 32
        "dma_reads": 4.0,                                        # issue + bookkeeping
    }


def kernel_cycles(hw: Hardware, counts: np.ndarray, costs: dict, tasklets: int) -> np.ndarray:
    """Modelled cycles per DPU from its counters ((n_dpus, len(COUNTERS)) int64).

    Compute: a tasklet issues once every ``issue_interval`` cycles, so T tasklets retire
    min(1, T / interval) instructions per cycle. DMA: alpha + beta * bytes per transfer,
    serialised on the DPU's one DMA engine, overlapped with compute when T > 1.
    """
    counts = np.asarray(counts, dtype=np.float64)
    instr = (counts[:, C["updates"]] * costs["updates"]
             + (counts[:, C["updates"]] - counts[:, C["terminal_updates"]]) * costs["non_terminal"]
             + counts[:, C["scanned_entries"]] * costs["scanned_entries"]
             + counts[:, C["rng_draws"]] * costs["rng_draws"]
             + counts[:, C["below_draws"]] * costs["below_draws"]
             + counts[:, C["dma_reads"]] * costs["dma_reads"])
    compute = instr * max(1.0, hw.issue_interval / tasklets)
    dma = (counts[:, C["dma_reads"]] * hw.dma_alpha_read + counts[:, C["dma_writes"]] * hw.dma_alpha_write
           + (counts[:, C["dma_read_bytes"]] + counts[:, C["dma_write_bytes"]]) * hw.dma_beta)
    return np.maximum(compute, dma) if tasklets > 1 else compute + dma


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
