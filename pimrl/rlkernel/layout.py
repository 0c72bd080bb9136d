"""The SwiftRL DPU program's memory layout and limits, shared by the numba kernel
(:mod:`pimrl.rlkernel.launch`), the C kernel (``kernels/swiftrl.c`` declares the same globals)
and the host's plans.

WRAM layout (host-visible symbols first, in this order, each 8-byte aligned):
``params`` (PARAMS_WORDS int64: the learner's kernel scalars, then the host's per-DPU words),
``rng_state`` (uint32 per tasklet), ``stats`` (int64 counters, see ``kcost.COUNTERS``),
``q_table`` (S x A float32 or Q-format int32), ``visits`` (S x A uint32, counted only when
the program is built with ``count_visits``, as the weighted aggregator needs), then the tasklets'
DMA buffers and stacks. Transitions live at the start of the MRAM heap
(``__sys_used_mram_end``), 16-byte records (docs/design.md).
"""
from __future__ import annotations

from pimrl.learners.variants import PARAMS_WORDS, Variant
from pimrl.rlkernel import costs as kcost

RECORD_BYTES = 16
N_COUNTERS = len(kcost.COUNTERS)
DMA_MIN, DMA_MAX = 8, 2048
# Fault reasons (the ``fault`` counter holds reason * 256 + tasklet + 1).
FAULT_DMA, FAULT_RECORD, FAULT_LANE = 1, 2, 3


def align8(n: int) -> int:
    return (n + 7) & ~7


def wram_layout(n_states: int, n_actions: int, tasklets: int, variant: Variant,
                count_visits: bool) -> list:
    """The kernel's WRAM globals in order, [(name, bytes)] (the C kernel declares the same)."""
    nq = n_states * n_actions
    policy_weights = variant.owned and variant.algo == "sarsa"
    layout = [("params", 8 * PARAMS_WORDS), ("rng_state", 4 * tasklets),
              ("stats", 8 * N_COUNTERS), ("q_table", 4 * nq)]
    if policy_weights:
        layout.append(("policy_weights", 4 * nq))
    elif count_visits:
        layout.append(("visits", 4 * nq))
    if variant.owned:      # state-owned learning's exchange buffers
        layout += [("v_table", 4 * n_states), ("v_out", 4 * (2 * n_actions + n_states))]
    if variant.rows:       # the lanes and their states (from the host), the epoch's snapshot
        # (whole 8-byte words: a host transfer moves multiples of 4 bytes)
        layout += [("lane_bounds", 8 * (tasklets + 1)), ("state_owner", align8(n_states)),
                   ("lane_states", align8(2 * n_states)),
                   ("snapshot", 4 * (nq if variant.snapshot_rows else n_states))]
    return layout


def wram_needed(n_states: int, n_actions: int, tasklets: int, variant: Variant,
                count_visits: bool, block_bytes: int, stack_bytes: int) -> int:
    """WRAM bytes the kernel needs: its globals, then every tasklet's DMA buffer and stack."""
    globals_ = sum(align8(b) for _, b in wram_layout(n_states, n_actions, tasklets, variant,
                                                        count_visits))
    return globals_ + tasklets * (block_bytes + stack_bytes)


def fitting_block(n_states, n_actions, tasklets, variant, count_visits, hardware) -> int:
    """The DMA block a kernel takes when none is asked for: 2,048 B (the DMA's most), or the
    largest multiple of 16 below it whose buffers fit WRAM beside the globals (2,048 when
    none fits: the program then refuses, saying what would)."""
    stack = hardware.stack_bytes_per_tasklet if hardware is not None else 256
    wram = hardware.wram_bytes if hardware is not None else 65536
    for block in range(DMA_MAX, RECORD_BYTES - 1, -RECORD_BYTES):
        if wram_needed(n_states, n_actions, tasklets, variant, count_visits, block,
                       stack) <= wram:
            return block
    return DMA_MAX


def wram_advice(n_states, n_actions, tasklets, variant, count_visits, block_bytes, stack_bytes,
                wram_bytes) -> str:
    """What would fit when ``tasklets`` tasklets with ``block_bytes`` blocks do not: the most
    tasklets at this block size, the largest block at this tasklet count."""
    need = lambda t, b: wram_needed(n_states, n_actions, t, variant, count_visits, b,  # noqa: E731
                                    stack_bytes)
    fits_t = [t for t in range(tasklets - 1, 0, -1) if need(t, block_bytes) <= wram_bytes]
    fits_b = [b for b in range(block_bytes - RECORD_BYTES, RECORD_BYTES - 1, -RECORD_BYTES)
              if need(tasklets, b) <= wram_bytes]
    options = []
    if fits_t:
        options.append(f"--tasklets {fits_t[0]} (the most that fit with {block_bytes} B blocks)")
    if fits_b:
        options.append(f"--block-bytes {fits_b[0]} (the largest block that fits "
                       f"{tasklets} tasklets)")
    if variant.rows and variant.snapshot_rows:
        options.append("--tasklet-mode ring (no snapshot)")
    return "; use " + " or ".join(options) if options else "; the table alone does not fit"
