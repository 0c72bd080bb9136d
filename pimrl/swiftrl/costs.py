"""The SwiftRL kernel's costs: the counters its DPU programs report and the instructions
each counted event costs, turned into DPU cycles by the generic model of
:mod:`pimrl.pim.cost` (pipeline, DMA) in the kernel's tasklet mode (docs/design.md):

- ``ring``: one tasklet at a time (the token ring), ``D + 11 I``;
- ``unlocked``: every tasklet at once on equal lanes, the pipeline's three bounds;
- ``rows``: every tasklet at once on unequal lanes, each tasklet's own work run on the
  revolving pipeline (:func:`revolving_cycles`), the snapshot and the updates of an epoch
  separated by barriers.
"""
from __future__ import annotations

import numpy as np

from pimrl.learners.variants import P_ALPHA_FX, P_FRAC, P_GAMMA_FX
from pimrl.pim.cost import dpu_cycles
from pimrl.pim.hardware import Hardware

# Counters a kernel reports per DPU (columns of its ``stats`` array).
COUNTERS = ("updates", "terminal_updates", "scanned_entries", "rng_draws", "below_draws",
            "dma_reads", "dma_read_bytes", "dma_writes", "dma_write_bytes", "saturations",
            "fault", "sampling_steps", "snapshot_rows", "snapshot_reads", "lane_epochs",
            "conflicts", "wide_draws")
C = {name: i for i, name in enumerate(COUNTERS)}

#: One pass of the update token between tasklets (handshake_wait_for, handshake_notify and
#: the loop's tests around them): calibrated on the C kernel's basic blocks as the DPU
#: runtime counts them (docs/dpu-runtime.md, "Agreement with the numba path").
TOKEN_PASS = 15.0
#: The INT32 kernel's 64-bit pair moves beyond its counted operations (Q values widened to
#: int64 around each saturating sum): calibrated the same way.
Q_FORMAT_PAIRS = 24.0


def fx_mul_u16_instructions(ops: dict) -> float:
    """A Q15.16 product by a constant below 2^16 (alpha or gamma) on a DPU (kernels/swiftrl.c
    ``fx_mul_u16``): 8 byte products (``mul_ul_ul`` and its siblings, one instruction each:
    ``ops["mul8"]``), the high half's shift (``asr``), two sums of four partial products
    (``add``, then two ``lsl_add``, each), the rounding add and the final ``lsr_add``."""
    return 8 * ops["mul8"] + 1 + 2 * 3 + 2


def below_u16_instructions(ops: dict) -> float:
    """RAN's ``below(x, n)`` for lanes of fewer than 2^16 records (kernels/swiftrl.c
    ``below_u16``): 8 byte products, the high half's shift, two sums of four partial
    products, the low sum's shift, the add and the final shift."""
    return 8 * ops["mul8"] + 1 + 2 * 3 + 3


def wide_products(params: np.ndarray):
    """(alpha, gamma) per DPU of ``params`` (n, PARAMS_WORDS): whether the INT32 kernel's
    product by it is the 64-bit one (a Q format other than Q15.16, or the constant 2^16 or
    more: alpha = 1) rather than :func:`fx_mul_u16_instructions`' (docs/design.md)."""
    frac = params[:, P_FRAC]

    def wide(c):
        return (frac != 16) | (c < 0) | (c >= 1 << 16)
    return wide(params[:, P_ALPHA_FX]), wide(params[:, P_GAMMA_FX])


def update_instruction_costs(hw: Hardware, dtype: str, algo: str, sampling: str,
                             n_actions: int, tasklets: int, count_visits: bool = False,
                             policy_value: str | None = None, tasklet_mode: str = "ring",
                             wide_alpha: bool = False, wide_gamma: bool = False,
                             bootstrap: str = "table") -> dict:
    """Instructions charged per counted event, for one kernel variant.

    The breakdown follows the C kernel line by line (docs/cost-model.md): record decode from
    WRAM, two row indices (s*A, s'*A: shift-and-add, A a compile-time constant), the max or the
    chosen action's load, the update arithmetic (soft float, or saturating Q format with the
    products by alpha and gamma made of 8x8 multiplies) and the loop/cursor work of the
    sampling order; in tasklet mode ``ring`` the token pass, in ``rows`` the bootstrap's
    range test, the snapshot and the barriers. ``policy_value``: every scanned entry also
    enters state-owned SARSA's policy value (docs/state-owned.md), each evaluation a scan of
    the ``A`` entries of one row: ``"weighted"`` (logged) a weight load, a multiply and an add
    per entry; ``"uniform"`` (epsilon-greedy) an add per entry and, per row, two multiplies and
    an add (charged as ``1 / A`` of them per entry). ``wide_alpha``/``wide_gamma``: the INT32
    product by that constant is the 64-bit one (:func:`wide_products`).
    """
    ops = hw.op_instructions
    rows = tasklet_mode == "rows"
    # Record decode (8), two row indices s*A and s'*A (A is a compile-time constant in the C
    # kernel, so a shift-and-add pair each, not an emulated multiply), Q load/store (4).
    per_update = 8.0 + 2 * 2.0 + 4.0
    if dtype == "fp32":
        bootstrap_cost = ops["float_mul"] + ops["float_add"]     # gamma * m, r + .
        per_update += ops["float_sub"] + ops["float_mul"] + ops["float_add"]  # td, alpha * td, q +
        # The row max compares the float bits as integers (kernels/swiftrl.c row_max): load,
        # the order key (shift, shift, xor), compare-and-branch, keep the index.
        scan = 6.0
        if policy_value == "weighted":
            scan = 3.0 + ops["float_cmp"] + 1.0 + ops["float_mul"] + ops["float_add"]
        elif policy_value == "uniform":
            scan = (3.0 + ops["float_cmp"] + ops["float_add"]
                    + (2 * ops["float_mul"] + ops["float_add"]) / n_actions)
    else:
        # Saturating sums of two int32 as 64-bit pairs (add + addc, bound checks of 3 each).
        sat64 = 2 * 3.0
        sat_add = 2.0 + sat64
        # The products by the launch constants alpha and gamma: the 8x8 one and its branch,
        # or the emulated 64-bit product (widen, round, shift) and its saturation.
        narrow = fx_mul_u16_instructions(ops) + 1.0
        wide = 1.0 + ops["int64_mul"] + 5.0 + sat64
        bootstrap_cost = (wide if wide_gamma else narrow) + sat_add
        per_update += sat_add + (wide if wide_alpha else narrow) + sat_add + Q_FORMAT_PAIRS
        scan = 3.0 + ops["int32_sub"]
        fx_mul = ops["int64_mul"] + 5.0 + sat64
        if policy_value == "weighted":
            scan += 1.0 + fx_mul + 2.0                           # weight load, fx_mul, 64-bit add
        elif policy_value == "uniform":
            scan += 2.0 + (sat64 + 2 * fx_mul + sat_add) / n_actions   # 64-bit add; per row
    step = {"seq": 5.0, "str": 8.0, "ran": 6.0}[sampling]        # cursor, bounds, branch
    if count_visits:
        per_update += 3.0                                        # load, add, store
    if tasklet_mode == "ring" and tasklets > 1:
        per_update += TOKEN_PASS
    if rows:
        bootstrap_cost += 3.0            # s' against the tasklet's range, choose the source
    if rows and algo == "q" or rows and bootstrap == "owned":
        snapshot_row = n_actions * scan + 3.0                    # its value, stored; the loop
        if policy_value is not None:
            snapshot_row += 2.0
    else:
        snapshot_row = 2.0 * n_actions + 3.0                     # the row copied; the loop
    return {
        "updates": per_update + step,
        "non_terminal": bootstrap_cost,
        "scanned_entries": scan,
        "rng_draws": 6.0,                                        # xorshift32: 3 shifts, 3 xors
        # below(x, n): the 8x8 products for RAN's lanes (and its branch), SARSA's b' by the
        # constant A; draws from lanes of 2^16 records or more add the 64-bit product
        "below_draws": below_u16_instructions(ops) + 1.0,
        "wide_draws": ops["int64_mul"] - below_u16_instructions(ops),
        "dma_reads": 4.0,                                        # issue + bookkeeping
        "snapshot_rows": snapshot_row if rows else 0.0,
        "snapshot_reads": 1.0,                                   # the value's load
        "lane_epochs": 2 * (8.0 + 4.0) + 10.0 if rows else 0.0,  # two barriers; lane set-up
    }


def instructions(counts: np.ndarray, costs: dict) -> np.ndarray:
    """DPU instructions of each row of ``counts`` (..., len(COUNTERS)) at ``costs``."""
    counts = np.asarray(counts, dtype=np.float64)

    def c(name):
        return counts[..., C[name]]
    return (c("updates") * costs["updates"]
            + (c("updates") - c("terminal_updates")) * costs["non_terminal"]
            + c("scanned_entries") * costs["scanned_entries"]
            + c("rng_draws") * costs["rng_draws"]
            + c("below_draws") * costs["below_draws"]
            + c("wide_draws") * costs["wide_draws"]
            + c("dma_reads") * costs["dma_reads"]
            + c("snapshot_rows") * costs["snapshot_rows"]
            + c("snapshot_reads") * costs["snapshot_reads"]
            + c("lane_epochs") * costs["lane_epochs"])


def dma_engine_cycles(hw: Hardware, counts: np.ndarray) -> np.ndarray:
    """Cycles the DMA engine spends on each row of ``counts``: alpha + beta * bytes a transfer."""
    counts = np.asarray(counts, dtype=np.float64)
    return (counts[..., C["dma_reads"]] * hw.dma_alpha_read
            + counts[..., C["dma_writes"]] * hw.dma_alpha_write
            + (counts[..., C["dma_read_bytes"]] + counts[..., C["dma_write_bytes"]]) * hw.dma_beta)


def revolving_cycles(hw: Hardware, instr: np.ndarray, dma: np.ndarray) -> np.ndarray:
    """Cycles of DPUs whose tasklets run unequal shares at once: ``instr`` and ``dma``
    (n_dpus, tasklets) each tasklet's instructions and DMA cycles.

    The revolving pipeline (docs/cost-model.md, section 1): while ``m`` tasklets run, each
    issues once every ``max(issue_interval, m)`` cycles, so with the shares sorted, the
    phase in which the ``k``-th smallest share finishes lasts its remaining work times
    ``max(11, m)``. A tasklet's DMA counts as the instructions it could have issued while
    waiting (``dma / issue_interval``: with few tasklets running it waits alone; with the
    pipeline full the transfers hide behind the others' work). At least the pipeline's and
    the DMA engine's totals."""
    instr = np.asarray(instr, dtype=np.float64)
    dma = np.asarray(dma, dtype=np.float64)
    work = np.sort(instr + dma / hw.issue_interval, axis=-1)
    t = work.shape[-1]
    running = np.maximum(float(hw.issue_interval), np.arange(t, 0, -1, dtype=np.float64))
    steps = np.diff(work, axis=-1, prepend=0.0)
    phased = (steps * running).sum(axis=-1)
    return np.maximum(phased, np.maximum(instr.sum(axis=-1), dma.sum(axis=-1)))


def kernel_cycles(hw: Hardware, counts: np.ndarray, costs: dict, tasklets: int,
                  tasklet_mode: str = "ring", tasklet_counts: np.ndarray | None = None):
    """Modelled cycles per DPU from its counters ((n_dpus, len(COUNTERS)) int64).

    Instructions from the counters times their costs; DMA alpha + beta * bytes per transfer;
    the two combined by the kernel's tasklet mode:

    - ``ring``: :func:`dpu_cycles` for one tasklet at a time, whatever ``tasklets`` is: the
      round-robin update order of docs/design.md is a token passed from tasklet to tasklet
      (the C kernel's handshake ring), and each step of a lane (record fetch, decode,
      update) runs while its tasklet holds the token, so the DPU's pipeline and DMA engine
      serve one tasklet at a time (``tasklets`` only changes the per-update synchronisation
      cost, in :func:`update_instruction_costs`);
    - ``unlocked``: :func:`dpu_cycles` with the work split evenly over ``tasklets`` (its lanes
      are the ring's, equal to one record);
    - ``rows``: each tasklet's own counters (``tasklet_counts``, (n_dpus, tasklets,
      len(COUNTERS))): its snapshot work and its updates are two phases of every epoch,
      separated by barriers, each run on the revolving pipeline (:func:`revolving_cycles`).

    The DPU runtime, which schedules the C kernel's tasklets in modelled time, gives the
    same within 5 % (tests/test_dpurt.py).
    """
    counts = np.asarray(counts, dtype=np.float64)
    if tasklet_mode == "rows" and tasklet_counts is not None:
        tc = np.asarray(tasklet_counts, dtype=np.float64)
        snap = np.zeros_like(tc)
        for name in ("snapshot_rows", "lane_epochs"):
            snap[..., C[name]] = tc[..., C[name]]
        upd = tc - snap
        cycles = (revolving_cycles(hw, instructions(snap, costs), dma_engine_cycles(hw, snap))
                  + revolving_cycles(hw, instructions(upd, costs), dma_engine_cycles(hw, upd)))
        return cycles
    instr = instructions(counts, costs)
    dma = dma_engine_cycles(hw, counts)
    return dpu_cycles(hw, instr, dma, 1 if tasklet_mode == "ring" else tasklets)
