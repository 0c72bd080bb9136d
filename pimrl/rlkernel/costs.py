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

# --- the SwiftRL C kernel's instructions, event by event (docs/cost-model.md) --------------
# Operations the hardware's table prices (soft float, the 8x8 multiply, the 64-bit product)
# are charged where the kernel performs them; the plain instructions around them follow the
# C kernel's basic blocks as the DPU runtime counts them (docs/dpu-runtime.md, "Time"). The
# structural costs below were read off its blocks (scans, snapshots, transfers, barriers);
# the rest, per update and per non-terminal update, is fitted on whole runs of every
# variant and mode by benchmarks/calibrate_kernel_costs.py (largest error 3.5 %).


def scan_row(dtype: str, algo: str, n_actions: int) -> float:
    """Plain instructions of one row max (Q-learning's bootstrap; SARSA's greedy b'): each
    entry loaded and compared (INT32), or its float bits turned into an order key first
    (FP32: shift, shift, xor), the best kept, plus the row's address and the loop's exit."""
    per_entry = 2.0 if dtype == "int32" else 6.0
    if algo == "sarsa":           # the greedy b' of epsilon-greedy SARSA, then Q[s'][b']
        per_entry += 1.0 if dtype == "int32" else 0.0
        return per_entry * n_actions + 10.0
    return per_entry * n_actions + (9.0 if dtype == "int32" else 3.0)


def snapshot_row(dtype: str, rows: bool, n_actions: int) -> float:
    """One state of a tasklet's epoch snapshot (tasklet mode rows): its row copied
    (``rows``: table-bootstrap SARSA), else its max computed and stored."""
    if rows:
        return 2.0 * n_actions + 4.0
    return (3.0 if dtype == "int32" else 6.0) * (n_actions + 1)


#: A bootstrap value read from the snapshot (rows, Q-learning): the load and its test.
SNAPSHOT_READ = {"int32": 8.0, "fp32": 5.0}
#: A tasklet's epoch in tasklet mode rows: the two barriers and the lane's set-up.
LANE_EPOCH = {"seq": 22.0, "str": 30.0, "ran": 28.0}
#: One mram_read with its bookkeeping: SEQ's block loop (modes rows and unlocked), the
#: stepped loop's refill (ring's SEQ), STR's and RAN's.
DMA_READ = {("seq", True): 33.0, ("seq", False): 23.0, "str": 36.0, "ran": 19.0}
#: Epsilon-greedy SARSA's random b' (a second draw and below(x, A), A a constant).
RANDOM_ACTION = 21.0
#: Plain instructions per update, per non-terminal update (beyond :func:`scan_row` and the
#: operations) and per pass of the ring's token, by (dtype, rule, sampling) and tasklet
#: mode; ``rule`` is ``q``, ``sarsa`` (the logged b') or ``sarsa-eg`` (epsilon-greedy b').
#: Fitted by benchmarks/calibrate_kernel_costs.py.
PLAIN = {
    ("fp32", "q", "seq"): {"ring": (27.9, -2.2, 16.4, 0), "rows": (18.1, 4.5, -1.7, 0), "unlocked": (18.7, 0.4, 0, 0)},
    ("fp32", "q", "str"): {"ring": (34, -1.8, 17.1, 0), "rows": (35.6, 4.7, -2.9, 0), "unlocked": (33.8, -1.5, 0, 0)},
    ("fp32", "q", "ran"): {"ring": (50.8, -0.8, 12.2, 0), "rows": (54.5, 2, 0.3, 0), "unlocked": (53.6, -2.8, 0, 0)},
    ("int32", "q", "seq"): {"ring": (59.8, 15.3, 20.6, 0), "rows": (55.1, 13.8, 3.1, 0), "unlocked": (54, 9.6, 0, 0)},
    ("int32", "q", "str"): {"ring": (75.9, 24.1, 20.8, 0), "rows": (84.7, 20.2, 2.9, 0), "unlocked": (81.2, 18.7, 0, 0)},
    ("int32", "q", "ran"): {"ring": (78.1, 21.2, 22.8, 0), "rows": (90.4, 13.8, 3.2, 0), "unlocked": (89.6, 9.6, 0, 0)},
    ("fp32", "sarsa", "seq"): {"ring": (27.7, 4.7, 16.3, 0), "rows": (18.5, 11.2, 6.7, 0), "unlocked": (19, 4.2, 0, 0)},
    ("fp32", "sarsa-eg", "seq"): {"ring": (27.5, 14.1, 16.3, 0.7), "rows": (18.2, 20.2, 5.9, 0.4), "unlocked": (18.5, 12, 0, 0.7)},
    ("fp32", "sarsa", "str"): {"ring": (35.3, 2.9, 18, 0), "rows": (34.6, 11, 5.5, 0), "unlocked": (35, 3.3, 0, 0)},
    ("fp32", "sarsa-eg", "str"): {"ring": (36.4, 7.1, 16.4, 2), "rows": (34.2, 15.6, 4.8, 2.2), "unlocked": (34.9, 9.8, 0, 1.8)},
    ("fp32", "sarsa", "ran"): {"ring": (55.4, 4, 7.7, 0), "rows": (48.5, 8.1, 8.7, 0), "unlocked": (57.5, 2.8, 0, 0)},
    ("fp32", "sarsa-eg", "ran"): {"ring": (55, 9.6, 7.7, 1.4), "rows": (48.2, 14, 7.8, 1.3), "unlocked": (57.3, 10.3, 0, 0.9)},
    ("int32", "sarsa", "seq"): {"ring": (63.3, 23.4, 20.1, 0), "rows": (55.8, 26.7, 6.7, 0), "unlocked": (53.2, 23, 0, 0)},
    ("int32", "sarsa-eg", "seq"): {"ring": (63.2, 29.4, 20.1, 0.2), "rows": (55, 24, 6.6, 2.4), "unlocked": (53.2, 29.3, 0, 0.2)},
    ("int32", "sarsa", "str"): {"ring": (76.8, 28.8, 22.6, 0), "rows": (78.6, 35.8, 6.5, 0), "unlocked": (78.2, 27.7, 0, 0)},
    ("int32", "sarsa-eg", "str"): {"ring": (76.7, 29.7, 22.2, 1.5), "rows": (78.3, 41.7, 6.4, 0.4), "unlocked": (77.6, 30.1, 0, 1.3)},
    ("int32", "sarsa", "ran"): {"ring": (79.2, 29.8, 26, 0), "rows": (91, 28.4, 4.8, 0), "unlocked": (85.6, 24.1, 0, 0)},
    ("int32", "sarsa-eg", "ran"): {"ring": (80, 41.8, 25.5, -1.3), "rows": (89.8, 20.5, 4.6, 3.6), "unlocked": (86.4, 39.1, 0, -1.9)},
}
#: Instructions of each ring step that the notifier runs after passing the token, while the
#: next tasklet runs (its loop's test and its next wait): overlapped, not serialised (the
#: DPU runtime's handshake: both tasklets run on). Fitted on the ring's cycles at 4 to 16
#: tasklets (8 to 13.5; benchmarks/calibrate_kernel_costs.py).
RING_OVERLAP = 10.5
#: A launch's fixed work per tasklet when several run at once (modes rows and unlocked): the
#: start barrier, the heap, the end of the lane and, under the stats mutex, the counters'
#: sums, which the other tasklets wait for spinning. Fitted on the C kernel at 16 tasklets
#: and 2,000 to 20,000 records (360 to 490).
TASKLET_LAUNCH = 420.0
#: State-owned variants (bootstrap owned): their kernels' extra plain instructions per
#: non-terminal update (the fresh range's test, the broadcast value's load), estimated from
#: the table kernels', not fitted.
OWNED_NON_TERMINAL = 6.0


def product_instructions(ops: dict, wide: bool) -> float:
    """The operations of one INT32 product by alpha or gamma: 8 byte products (``mul8``:
    the UPMEM ISA's ``mul_ul_ul`` and its siblings, one instruction each) in Q15.16
    (kernels/swiftrl.c ``fx_mul_u16``), or the emulated 64-bit product (``wide``: another Q
    format, or alpha = 1; its plain instructions estimated as the narrow one's)."""
    return ops["int64_mul"] + 1.0 if wide else 8 * ops["mul8"]


def below_instructions(ops: dict) -> float:
    """The operations of RAN's ``below(x, n)`` for lanes of fewer than 2^16 records: 8 byte
    products (kernels/swiftrl.c ``below_u16``); larger lanes take the 64-bit product
    (counter ``wide_draws``)."""
    return 8 * ops["mul8"]


def wide_products(params: np.ndarray):
    """(alpha, gamma) per DPU of ``params`` (n, PARAMS_WORDS): whether the INT32 kernel's
    product by it is the 64-bit one (a Q format other than Q15.16, or the constant 2^16 or
    more: alpha = 1) rather than the 8x8 one (docs/design.md)."""
    frac = params[:, P_FRAC]

    def wide(c):
        return (frac != 16) | (c < 0) | (c >= 1 << 16)
    return wide(params[:, P_ALPHA_FX]), wide(params[:, P_GAMMA_FX])


def update_instruction_costs(hw: Hardware, dtype: str, algo: str, sampling: str,
                             n_actions: int, tasklets: int, count_visits: bool = False,
                             policy_value: str | None = None, tasklet_mode: str = "ring",
                             wide_alpha: bool = False, wide_gamma: bool = False,
                             bootstrap: str = "table", next_action: str = "logged") -> dict:
    """Instructions charged per counted event, for one kernel variant (docs/cost-model.md).

    Every update: its plain instructions (:data:`PLAIN`: the record's fetch and decode, the
    sampling order's step, the table's load and store, the saturating sums), the update's
    operations (FP32: the soft-float subtract, multiply and add; INT32: the product by
    alpha, :func:`product_instructions`; RAN: :func:`below_instructions`), visits (load,
    add, store) and, in tasklet mode ring with several tasklets, the token's pass. Every
    non-terminal update: the bootstrap's plain instructions and operations (the product by
    gamma and the add). Every scanned entry: :func:`scan_row`'s share. ``policy_value``:
    every scanned entry also enters state-owned SARSA's policy value (docs/state-owned.md):
    ``"weighted"`` (logged) a weight load, a multiply and an add per entry; ``"uniform"``
    (epsilon-greedy) an add per entry and, per row, two multiplies and an add (charged as
    ``1 / A`` of them per entry). ``wide_alpha``/``wide_gamma``: the INT32 product by that
    constant is the 64-bit one (:func:`wide_products`). ``next_action``: SARSA's b' (a
    launch parameter)."""
    ops = hw.op_instructions
    rows = tasklet_mode == "rows"
    owned = bootstrap == "owned"
    rule = algo if algo == "q" or next_action != "epsilon-greedy" or owned else "sarsa-eg"
    plain_update, plain_bootstrap, third, plain_scan = PLAIN[(dtype, rule, sampling)][tasklet_mode]
    token = third if tasklet_mode == "ring" else 0.0
    if dtype == "fp32":
        update_ops = ops["float_sub"] + ops["float_mul"] + ops["float_add"]   # td, alpha td, q +
        bootstrap_ops = ops["float_mul"] + ops["float_add"]                  # gamma m, r +
    else:
        update_ops = product_instructions(ops, wide_alpha)
        bootstrap_ops = product_instructions(ops, wide_gamma)
    per_update = plain_update + update_ops
    if sampling == "ran":
        # each update draws once: below_draws carries RANDOM_ACTION, the update the rest
        per_update += below_instructions(ops) - RANDOM_ACTION
    if count_visits:
        per_update += 3.0                                        # load, add, store
    if tasklet_mode == "ring" and tasklets > 1:
        per_update += token
    non_terminal = plain_bootstrap + bootstrap_ops + (OWNED_NON_TERMINAL if owned else 0.0)
    scan = scan_row(dtype, algo if not owned else "q", n_actions) / n_actions + plain_scan
    fx_mul = ops["int64_mul"] + 11.0              # the 64-bit product, its widening and checks
    if policy_value == "weighted":
        scan += 1.0 + (fx_mul + 2.0 if dtype == "int32" else ops["float_mul"] + ops["float_add"])
    elif policy_value == "uniform":
        scan += (2.0 + (2 * fx_mul + 8.0) / n_actions if dtype == "int32"
                 else ops["float_add"] + (2 * ops["float_mul"] + ops["float_add"]) / n_actions)
    snapshot = snapshot_row(dtype, algo == "sarsa" and not owned, n_actions)
    if owned and policy_value is not None:
        snapshot = scan * n_actions + 6.0
    return {
        "updates": per_update,
        "non_terminal": non_terminal,
        "scanned_entries": scan,
        "rng_draws": 0.0,                 # xorshift32's six: in the plain instructions
        "below_draws": RANDOM_ACTION,
        "wide_draws": ops["int64_mul"] - below_instructions(ops),
        "dma_reads": DMA_READ[(sampling, tasklet_mode != "ring")] if sampling == "seq"
        else DMA_READ[sampling],
        "snapshot_rows": snapshot if rows else 0.0,
        "snapshot_reads": ((SNAPSHOT_READ[dtype] if algo == "q" or owned else 0.0) + third
                           if rows else 0.0),
        "lane_epochs": LANE_EPOCH[sampling] if rows else 0.0,
        "ring_overlap": RING_OVERLAP if tasklet_mode == "ring" and tasklets > 1 else 0.0,
        "tasklet_launch": TASKLET_LAUNCH if tasklet_mode != "ring" and tasklets > 1 else 0.0,
    }


#: The counted events that cost instructions, in the order their costs are summed.
INSTRUCTION_EVENTS = ("updates", "scanned_entries", "rng_draws", "below_draws", "wide_draws",
                      "dma_reads", "snapshot_rows", "snapshot_reads", "lane_epochs")
#: The events of tasklet mode rows' snapshot phase (the rest are its update phase's).
SNAPSHOT_EVENTS = ("snapshot_rows", "lane_epochs")


def instructions(counts: np.ndarray, costs: dict, events=INSTRUCTION_EVENTS,
                 non_terminal: bool = True) -> np.ndarray:
    """DPU instructions of each row of ``counts`` (..., len(COUNTERS)) at ``costs`` (an event
    ``costs`` does not name costs nothing): of ``events`` and, with ``non_terminal``, the
    non-terminal updates. Each column is read where it lies: the whole array is never
    converted (a 2,000-DPU rows launch's tasklet counters are 0.5 M values)."""
    counts = np.asarray(counts)

    def c(name):
        return counts[..., C[name]] * float(costs.get(name, 0.0))
    total = sum(c(name) for name in events)
    if not non_terminal:
        return total
    nt = ((counts[..., C["updates"]] - counts[..., C["terminal_updates"]])
          * float(costs.get("non_terminal", 0.0)))
    return nt + total


def dma_engine_cycles(hw: Hardware, counts: np.ndarray) -> np.ndarray:
    """Cycles the DMA engine spends on each row of ``counts``: alpha + beta * bytes a transfer."""
    counts = np.asarray(counts)          # each column read where it lies (instructions)
    return (counts[..., C["dma_reads"]] * float(hw.dma_alpha_read)
            + counts[..., C["dma_writes"]] * float(hw.dma_alpha_write)
            + (counts[..., C["dma_read_bytes"]] + counts[..., C["dma_write_bytes"]])
            * float(hw.dma_beta))


def revolving_cycles(hw: Hardware, instr: np.ndarray, dma: np.ndarray) -> np.ndarray:
    """Cycles of DPUs whose tasklets run their shares at once: ``instr`` and ``dma``
    (n_dpus, tasklets) each tasklet's instructions and DMA cycles.

    The revolving pipeline (docs/cost-model.md, section 1): while ``m`` tasklets run, each
    issues once every ``max(issue_interval, m)`` cycles, so with the shares sorted, the phase
    in which the ``k``-th smallest share finishes lasts its remaining instructions times
    ``max(11, m)``; each tasklet also waits for its own transfers (at least ``11 I_t + D_t``,
    the bound of a tasklet whose DMA the others cannot hide); the DMA engine serves one
    transfer at a time. The largest of the three bounds; with equal shares, the pipeline's
    three bounds (:func:`pimrl.pim.cost.dpu_cycles`)."""
    instr = np.asarray(instr, dtype=np.float64)
    dma = np.asarray(dma, dtype=np.float64)
    work = np.sort(instr, axis=-1)
    t = work.shape[-1]
    running = np.maximum(float(hw.issue_interval), np.arange(t, 0, -1, dtype=np.float64))
    steps = np.diff(work, axis=-1, prepend=0.0)
    phased = (steps * running).sum(axis=-1)
    chain = (hw.issue_interval * instr + dma).max(axis=-1)
    return np.maximum(np.maximum(phased, chain), dma.sum(axis=-1))


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
      cost, in :func:`update_instruction_costs`, less :data:`RING_OVERLAP` that runs beside
      the next tasklet's step);
    - ``unlocked``: :func:`dpu_cycles` with the work split evenly over ``tasklets`` (its lanes
      are the ring's, equal to one record);
    - ``rows``: each tasklet's own counters (``tasklet_counts``, (n_dpus, tasklets,
      len(COUNTERS))): its snapshot work and its updates are two phases of every epoch,
      separated by barriers, each run on the revolving pipeline (:func:`revolving_cycles`).

    The DPU runtime, which schedules the C kernel's tasklets in modelled time, gives the
    same within 5 % (tests/test_dpurt.py).
    """
    counts = np.asarray(counts, dtype=np.float64)
    launch = costs.get("tasklet_launch", 0.0) if tasklets > 1 else 0.0
    if tasklet_mode == "rows" and tasklet_counts is not None:
        tc = np.asarray(tasklet_counts)
        snap = instructions(tc, costs, SNAPSHOT_EVENTS, non_terminal=False)
        updates = instructions(tc, costs, tuple(e for e in INSTRUCTION_EVENTS
                                                if e not in SNAPSHOT_EVENTS))
        # the snapshot phase makes no DMA: its events are none of the DMA counters
        return (revolving_cycles(hw, snap, np.zeros_like(snap))
                + revolving_cycles(hw, updates + launch, dma_engine_cycles(hw, tc)))
    instr = instructions(counts, costs)
    dma = dma_engine_cycles(hw, counts)
    if tasklet_mode == "ring":
        # what the notifier runs after the pass overlaps the next tasklet's step
        serial = instr - counts[:, C["updates"]] * costs.get("ring_overlap", 0.0)
        return dpu_cycles(hw, serial, dma, 1)
    # unlocked: the ring's equal lanes, every tasklet at once
    return dpu_cycles(hw, instr + tasklets * launch, dma, tasklets)
