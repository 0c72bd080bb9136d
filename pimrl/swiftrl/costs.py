"""The SwiftRL kernel's costs: the counters its DPU programs report and the instructions
each counted event costs, turned into DPU cycles by the generic model of
:mod:`pimrl.pim.cost` (pipeline, DMA)."""
from __future__ import annotations

import numpy as np

from pimrl.pim.cost import dpu_cycles
from pimrl.pim.hardware import Hardware

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
                             n_actions: int, tasklets: int, count_visits: bool = False,
                             policy_value: str | None = None) -> dict:
    """Instructions charged per counted event, for one kernel variant.

    The breakdown follows the C kernels line by line (docs/cost-model.md): record decode from
    WRAM, two row indices (s*A, s'*A: shift-and-add, A a compile-time constant), the max or the
    chosen action's load, the update arithmetic (soft float or saturating Q-format) and the
    loop/cursor work of the sampling order. ``policy_value``: every scanned entry also enters
    state-owned SARSA's policy value (docs/state-owned.md), each evaluation a scan of the
    ``A`` entries of one row: ``"weighted"`` (logged) a weight load, a multiply and an add per
    entry; ``"uniform"`` (epsilon-greedy) an add per entry and, per row, two multiplies and
    an add (charged as ``1 / A`` of them per entry).
    """
    ops = hw.op_instructions
    # Record decode (8), two row indices s*A and s'*A (A is a compile-time constant in the C
    # kernel, so a shift-and-add pair each, not an emulated multiply), Q load/store (4).
    per_update = 8.0 + 2 * 2.0 + 4.0
    if dtype == "fp32":
        bootstrap = ops["float_mul"] + ops["float_add"]          # gamma * m, r + .
        per_update += ops["float_sub"] + ops["float_mul"] + ops["float_add"]  # td, alpha * td, q +
        scan = 3.0 + ops["float_cmp"]                            # load, compare, branch, move
        if policy_value == "weighted":
            scan += 1.0 + ops["float_mul"] + ops["float_add"]     # weight load, w * q, acc +
        elif policy_value == "uniform":
            scan += ops["float_add"] + (2 * ops["float_mul"] + ops["float_add"]) / n_actions
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
        if policy_value == "weighted":
            scan += 1.0 + fx_mul + 2.0                           # weight load, fx_mul, 64-bit add
        elif policy_value == "uniform":
            scan += 2.0 + (sat64 + 2 * fx_mul + sat_add) / n_actions   # 64-bit add; per row
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
