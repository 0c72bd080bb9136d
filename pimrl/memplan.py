"""A memory plan before any work: the host memory (resident set) a training run will need,
part by part, from its parameters alone (dataset size, table size, DPUs, tasklets,
aggregator, backend, dtype, hardware), and the MRAM and WRAM it asks of each simulated DPU.

:func:`plan_memory` follows the allocations of the fit path (``pimrl/swiftrl/trainer.py``,
``pimrl/swiftrl/owned.py``, ``pimrl/pim/memory.py``, ``pimrl/pim/system.py``) phase by
phase, and the plan's peak is the largest phase:

- ``load``: the dataset file's mapped pages (every page: loading checks every record), or the
  generated records;
- ``prep``: the checks and the DPUs' push buffer, one matrix of ``n_dpus`` x longest
  partition x 16 B written in one pass (tasklet mode rows: plus its lane arrays); with
  ``--partition shuffle``, a shuffled copy of the records first;
- ``push``: the matrix pushed into the simulated MRAM, whose page pool is reserved address
  space that costs only the pages written (:class:`~pimrl.pim.memory.PagedMram`). A dataset
  file's mapping past :data:`~pimrl.data.format.DROP_MAPPED_BYTES` has been handed back
  by then (contiguous partitions only); generated records are held to the end;
- ``run``: the matrix freed; the launches touch each DPU's WRAM globals (the WRAM image is
  backed page by page, :func:`~pimrl.pim.memory.lazy_zeros`), and the host gathers the DPUs'
  tables (``n_dpus x S x A x 4`` B, with visit counts for ``weighted``) and aggregates them.

The plan's ``parts`` are what each part holds at the peak (they add up to the total);
``phases`` gives every phase's total. Every figure is *planned*; ``pimrl train`` prints it
before the work, beside the *measured* peak (:func:`peak_rss_bytes`, VmHWM) after it.

Not planned: the first run after an installation, when numba compiles the kernels (its cache
is cold) and LLVM's memory comes on top of the baseline; pages the OS takes back under memory
pressure (a mapping's clean pages), which make the measured peak smaller than the plan.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

PAGE = 4096
RECORD = 16                     # bytes of one transition record (pimrl.data.records)
HEADER = 256                    # a dataset file's header (pimrl.data.format.HEADER_SIZE)
MiB, GiB = 1 << 20, 1 << 30


def peak_rss_bytes() -> int | None:
    """This process's own peak resident set so far, in bytes, measured by the OS.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this address space.
    ``getrusage``'s ``ru_maxrss`` is not used there: Linux carries it over ``execve``, so a
    process started from a large one (a test runner, a sweep's parent) reports its parent's
    peak at the fork. Elsewhere ``ru_maxrss`` (bytes on macOS); None where neither exists.
    """
    import sys
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:             # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) * (1 if sys.platform == "darwin" else 1024)


#: The process's own floor in each phase of a ``pimrl train`` run: the interpreter, numpy,
#: numba (its start-up, which the command line's Ctrl-C handler triggers before any work)
#: and pimrl's modules, the kernels numba loads from its cache as the run reaches them, and
#: the threads. MEASURED, not derived: ``benchmarks/bench_memplan.py --calibrate`` reads the
#: peak resident set of each phase (VmHWM, reset between phases) of small runs (Taxi, 20,000
#: transitions from a file; 8 and 64 DPUs; the reference and CPU backends) and takes away the
#: plan's data parts (1-3 MiB there). On this project's 2-vCPU VM (Python 3.11, 2 numba
#: threads, numba's cache warm), 2026-12-03, each phase's own peak (VmHWM): 159 MiB after
#: loading, 161 MiB through the push, 164 MiB once the kernels ran; the reference and CPU
#: backends 159-160 MiB. More numba threads add their stacks; a cold numba cache adds LLVM's
#: compilation memory (not planned).
BASELINE = {
    "load": 159 * MiB,
    "prep": 161 * MiB,
    "push": 161 * MiB,
    "run": 164 * MiB,
    "reference": 159 * MiB,
    "cpu": 160 * MiB,
}


def _pages(nbytes: float) -> int:
    return int(math.ceil(max(nbytes, 0) / PAGE)) * PAGE


@dataclass
class MemoryPlan:
    """A run's planned host memory: ``parts`` (bytes at the peak, by part; they add up to
    ``total``), ``phases`` (each phase's planned total), ``peak_phase``, the simulated
    memory each DPU is asked for (``mram_bytes_per_dpu``: its records; ``wram_bytes_per_dpu``:
    the kernel's globals, DMA buffers and stacks; None without simulated DPUs) and ``notes``."""

    parts: dict
    phases: dict
    peak_phase: str
    mram_bytes_per_dpu: int | None = None
    wram_bytes_per_dpu: int | None = None
    mram_bank_bytes: int | None = None
    wram_bank_bytes: int | None = None
    source: str = "file"
    visits: bool = False            # the aggregator gathers visit counts too
    #: records streamed through the MRAM in windows (pimrl/swiftrl/windows.py): the window's
    #: bytes per DPU and about how many windows an epoch takes; None when they all fit
    windows: dict | None = None
    notes: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return int(sum(self.parts.values()))

    def largest(self, exclude_baseline: bool = True):
        """(name, bytes) of the largest part (the baseline only when nothing else is)."""
        items = [(k, v) for k, v in self.parts.items() if not (exclude_baseline and k == "baseline")]
        items = [kv for kv in items if kv[1] > 0] or list(self.parts.items())
        return max(items, key=lambda kv: kv[1])

    def as_dict(self) -> dict:
        return {"parts_planned_bytes": {k: int(v) for k, v in self.parts.items()},
                "total_planned_bytes": self.total,
                "peak_phase": self.peak_phase,
                "phases_planned_bytes": {k: int(v) for k, v in self.phases.items()},
                "mram_bytes_per_dpu": self.mram_bytes_per_dpu,
                "wram_bytes_per_dpu": self.wram_bytes_per_dpu,
                "streams": self.windows is not None, "windows": self.windows,
                "notes": list(self.notes)}


# ------------------------------------------------------------------------------ the plan
def plan_memory(n_transitions: int, n_states: int, n_actions: int, *, backend: str = "pim",
                n_dpus=64, tasklets: int = 16, aggregate: str = "mean", algo: str = "q",
                dtype: str = "fp32", sampling: str = "seq", tasklet_mode: str = "rows",
                hardware="upmem-2556", block_bytes: int | None = None,
                partition: str = "contiguous", source: str = "file",
                device: str = "simulator", executor: str = "local",
                partitions: int | None = None, mram_window: int | None = None,
                stride: int = 4) -> MemoryPlan:
    """The host memory a ``pimrl train`` run of these parameters will need, before any work.

    ``source``: ``file`` (a dataset file, memory-mapped), ``generated`` (``--env``: records
    made in memory) or ``array`` (records already in memory: not counted). ``n_dpus``: a
    count or a list of them (a scaling table: one run after another in one process).
    ``backend``: ``pim``, ``reference``, ``cpu`` (``partitions``: its tables) or ``gpu`` (the
    host's side only).
    ``mram_window``: ``--mram-window`` (a partition larger than the MRAM streams without it)."""
    n = int(n_transitions)
    if source == "file":
        data = _pages(HEADER + RECORD * n)
        data_part = "dataset"
    elif source == "generated":
        data = _pages(RECORD * n)
        data_part = "generated_records"
    elif source == "array":
        data, data_part = 0, "dataset"
    else:
        raise ValueError(f"unknown source {source!r}; use file, generated or array")
    nq = int(n_states) * int(n_actions)
    if backend in ("reference", "cpu", "gpu"):
        # the GPU's host side: the records, their columns and one table (the partitions'
        # tables are averaged on the device); the device's own memory is not this host's
        copy = _pages(RECORD * n)
        tables = 4 * nq * (2 * (partitions or 1) + 2) + 8 * nq * 4
        phases = {"load": {"baseline": BASELINE["load"], data_part: data},
                  "train": {"baseline": BASELINE["cpu" if backend == "gpu" else backend],
                            data_part: data,
                            "learner_copy": copy, "aggregation": tables}}
        return _finish(phases, source=source)
    if backend != "pim":
        raise ValueError(f"unknown backend {backend!r}; use pim, reference, cpu or gpu")
    from pimrl.learners.aggregate import parse_aggregate
    from pimrl.pim.hardware import Hardware, get_hardware

    hw = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
    spec = parse_aggregate(aggregate)
    counts = [int(c) for c in (n_dpus if isinstance(n_dpus, (list, tuple)) else [n_dpus])]
    simulated = device == "simulator" and executor == "local"
    runs, kept = [], _Spares()
    for i, d in enumerate(counts):
        slots = _slots(d, hw) if simulated else 0
        kept.reuse(slots)              # a set of the same ranks reuses its predecessor's memory
        run = _pim_run(n, nq, int(n_states), int(n_actions), d, int(tasklets), spec, algo, dtype,
                       sampling, tasklet_mode, hw, block_bytes, partition, source, data,
                       data_part, simulated, first=i == 0, mram_window=mram_window,
                       stride=int(stride))
        kept_now = kept.resident()
        if kept_now:
            for ph in run["phases"].values():
                ph["kept_memories"] = kept_now
        runs.append(run)
        if simulated:
            kept.release(run)
    # the run with the largest peak names the plan
    best = max(range(len(runs)), key=lambda i: max(sum(p.values()) for p in runs[i]["phases"].values()))
    r = runs[best]
    plan = _finish(r["phases"], source=source)
    plan.mram_bytes_per_dpu = r["mram_per_dpu"]
    plan.wram_bytes_per_dpu = r["wram_per_dpu"]
    plan.mram_bank_bytes, plan.wram_bank_bytes = hw.mram_bytes, hw.wram_bytes
    plan.visits = spec.needs_visits
    plan.windows = r["windows"]
    if len(counts) > 1:
        plan.notes.append(f"the largest of {len(counts)} runs: {counts[best]} DPUs")
    if not simulated:
        where = "the Dask workers'" if executor != "local" else "the real DPUs'"
        plan.notes.append(f"the DPUs' MRAM and WRAM are {where}, not this process's: not planned")
    return plan


def _finish(phases: dict, source: str) -> MemoryPlan:
    totals = {name: int(sum(parts.values())) for name, parts in phases.items()}
    peak = max(totals, key=totals.get)
    parts = {k: int(v) for k, v in phases[peak].items() if v}
    parts.setdefault("baseline", 0)
    return MemoryPlan(parts=parts, phases=totals, peak_phase=peak, source=source)


def _pim_run(n, nq, n_states, n_actions, d, tasklets, spec, algo, dtype, sampling,
             tasklet_mode, hw, block_bytes, partition, source, data, data_part, simulated,
             first, mram_window=None, stride=4):
    """The phases of one PimTrainer.fit on ``d`` DPUs."""
    from pimrl.learners.variants import PARAMS_WORDS, Variant
    from pimrl.rlkernel.layout import N_COUNTERS, fitting_block, wram_layout, wram_needed

    owned = spec.name == "own"
    longest = -(-n // d) if d else 0
    mram_per_dpu = RECORD * longest
    windows = None
    if not owned and (mram_window is not None or mram_per_dpu > hw.mram_bytes):
        # windows of steps of every lane (pimrl/swiftrl/windows.py): a window's MRAM, and in
        # tasklet mode ring the windows an epoch takes (rows: at least as many)
        steps = max(1, int(mram_window or hw.mram_bytes) // RECORD // tasklets)
        lane = -(-longest // tasklets)
        mram_per_dpu = RECORD * min(longest, tasklets * steps)
        windows = {"window_bytes": mram_per_dpu, "windows_per_epoch": -(-lane // steps),
                   "exact_count": tasklet_mode != "rows"}
    pages_per_dpu = -(-mram_per_dpu // PAGE)
    variant = Variant(algo, dtype, sampling, bootstrap="owned" if owned else "table",
                      tasklet_mode=tasklet_mode)
    visits = spec.needs_visits and not owned
    block = block_bytes or fitting_block(n_states, n_actions, tasklets, variant, visits, hw)
    layout = wram_layout(n_states, n_actions, tasklets, variant, visits)
    globals_end = sum(-(-size // 8) * 8 for _, size in layout)
    wram_per_dpu = wram_needed(n_states, n_actions, tasklets, variant, visits, block,
                               hw.stack_bytes_per_tasklet)
    base = BASELINE if first else dict.fromkeys(BASELINE, BASELINE["run"])

    rows = tasklet_mode == "rows"
    # windows outside tasklet mode rows read the records in place (no push buffer); else
    # the push buffer: one matrix, written whole (padding included)
    in_place = windows is not None and not rows
    matrix = 0 if in_place else _pages(d * longest * RECORD)
    lanes = d * (8 * (tasklets + 1) + (n_states + 7) // 8 * 8 + (2 * n_states + 7) // 8 * 8) \
        if rows else 0
    # the simulated MRAM: the pages written, a page-table row per DPU (64 KiB, backed page by
    # page: the columns written) and the push's index arrays (page ids, masks, diffs)
    mram = mram_table = wram_all = wram_push = 0
    if simulated:
        mram = d * pages_per_dpu * PAGE
        table_row = (hw.mram_bytes // PAGE) * 4
        mram_table = d * min(_pages(4 * pages_per_dpu), table_row)
        mram_push_index = d * pages_per_dpu * 18
        wram_all = d * _pages(globals_end)
        # the host's pushes before the first launch: rng_state and the lane symbols
        offsets, pushed, at = {}, set(), 0
        for name, size in layout:
            offsets[name] = (at, size)
            at += -(-size // 8) * 8
        for name in ("rng_state", "lane_bounds", "state_owner", "lane_states"):
            if name in offsets:
                lo, size = offsets[name]
                pushed.update(range(lo // PAGE, (lo + size - 1) // PAGE + 1))
        wram_push = d * len(pushed) * PAGE
    else:
        mram_push_index = 0
    # the host's side of the launches: the gathered tables (the last round's and, in a sync
    # round, the one before), visit counts (pulled, the round's difference, the one before),
    # per-DPU counters (tasklet mode rows: each tasklet's) and parameter words
    g = _pages(d * 4 * nq)
    multi = spec.rounds > 1
    gathered = g * (2 if multi else 1) + (g * (4 if multi else 2) if visits else 0)
    counters = d * 8 * (N_COUNTERS * (3 + (2 * tasklets if rows else 0)) + 2 * PARAMS_WORDS)
    aggregation = 8 * nq * (8 if visits else 4) + 4 * nq * 2

    # a large file's mapping is handed back chunk by chunk by the load's and the run's
    # checks, after the push buffer is made, and window by window by windows in place
    from pimrl.data.format import _CHECK_CHUNK
    from pimrl.swiftrl.records import CHECK_CHUNK

    big_file = source == "file" and RECORD * n > _drop_bytes()
    drop = big_file and partition == "contiguous" and not owned
    kept_data = 0 if drop else data
    if in_place:
        # a large file's SEQ and RAN windows are read with pread (nothing of the file mapped);
        # STR's through the mapping, each lane's span and the pages a fault maps around it
        steps = windows["window_bytes"] // RECORD // tasklets
        lane = -(-longest // tasklets)
        span = steps * (stride if sampling == "str" and stride > 1 else 1)
        window_pages = d * tasklets * (min(_pages(RECORD * lane), _pages(RECORD * span))
                                       + 16 * PAGE)
        if sampling != "str":
            window_pages = 0
        kept_data = min(data, window_pages) if big_file and partition == "contiguous" else data
    # the data is loaded once, before the first run; a later run reads it again (prep)
    load_data = min(data, _pages(RECORD * _CHECK_CHUNK)) if big_file else data
    phases = {"load": {"baseline": base["load"], data_part: load_data}} if first else {}
    if not owned:
        shuffled = _pages(RECORD * n) if partition == "shuffle" else 0     # its order: gone
        prep_data = data
        if in_place and partition == "contiguous":      # the run's checks, nothing laid out
            prep_data = min(data, _pages(RECORD * CHECK_CHUNK)) if big_file else data
        phases["prep"] = {"baseline": base["prep"], data_part: prep_data,
                          "shuffled_copy": shuffled, "push_buffer": matrix,
                          "lane_arrays": lanes}
        # the push buffer is freed as soon as the records are in MRAM, before the WRAM
        # pushes; in windows it stays, and a window's buffer is laid out from it
        window_buffer = _pages(d * mram_per_dpu) if windows else 0
        phases["push"] = {"baseline": base["push"], data_part: kept_data,
                          "shuffled_copy": shuffled if in_place else 0,
                          "push_buffer": matrix, "lane_arrays": lanes,
                          "window_buffer": window_buffer,
                          "mram_pages": mram + mram_table + mram_push_index}
        phases["run"] = {"baseline": base["run"], data_part: kept_data, "lane_arrays": lanes,
                         "shuffled_copy": shuffled if in_place else 0,
                         "push_buffer": matrix if windows else 0,
                         "window_buffer": window_buffer,
                         "mram_pages": mram + mram_table + (mram_push_index if windows else 0),
                         "wram_images": wram_all,
                         "dpu_tables": gathered + counters, "aggregation": aggregation}
    else:
        phases.update(_owned_phases(n, nq, n_states, d, tasklets, dtype, rows, base, data,
                                    data_part, matrix, longest, mram + mram_table,
                                    mram_push_index, wram_push, wram_all, g, counters,
                                    aggregation))
    return {"phases": phases, "mram_per_dpu": mram_per_dpu, "windows": windows,
            "wram_per_dpu": wram_per_dpu, "n_slots": _slots(d, hw) if simulated else 0,
            "mram": mram + mram_table, "wram": wram_all, "wram_bytes": hw.wram_bytes}


def _owned_phases(n, nq, n_states, d, tasklets, dtype, rows, base, data, data_part, matrix,
                  longest, mram, mram_push_index, wram_push, wram_all, g, counters,
                  aggregation):
    """``own:R`` (pimrl/swiftrl/owned.py, fit_owned): the records sorted by state (int64
    copies of the states and actions, their order, the sorted states, each record's DPU and
    the masks of plan_owners), then copied in DPU order, in tasklet mode rows reordered again
    (state_lanes' contiguous states, actions and order, then a second copy), then laid out as
    the push buffer (a copy unless the partitions are even; INT32: a copy with Q-format
    rewards). The dataset is never handed back, and the ordered records and the push buffer
    live to the end of the run."""
    rec = _pages(RECORD * n)
    order = 8 * n
    # int64 state, order, sorted states, actions and DPU index (40 B), the first/last-state
    # masks (2 B) and bincount's masked index arrays (16 B when, as with 2,000 DPUs on Taxi,
    # most records lie in their DPU's first state): measured 56 B a record (20M Taxi)
    sort = 58 * n
    ordered = rec
    rows_extra = (4 * n + n + 8 * n + rec) if rows else 0
    # the push buffer is a view of the ordered records when the partitions are even (FP32)
    even = n % d == 0
    buffer = matrix if (not even or dtype == "int32") else 0
    # uneven: the padded matrix from index arrays (8 B and 1 B a slot) and a gathered copy;
    # INT32: the Q-format copy beside the matrix it converts
    lay_out = max(0 if even else 8 * d * longest + d * longest + 8 * n + rec + matrix,
                  (matrix if even else 2 * matrix) if dtype == "int32" else 0)
    lanes = d * (8 * (tasklets + 1) + (n_states + 7) // 8 * 8 + (2 * n_states + 7) // 8 * 8) \
        if rows else 0
    return {
        "owner_sort": {"baseline": base["prep"], data_part: data, "owner_sort": sort},
        "reorder": {"baseline": base["prep"], data_part: data, "owner_sort": order,
                    "ordered_copy": ordered + rows_extra, "lane_arrays": lanes},
        "prep": {"baseline": base["prep"], data_part: data, "owner_sort": order,
                 "ordered_copy": ordered, "push_buffer": lay_out, "lane_arrays": lanes},
        "push": {"baseline": base["push"], data_part: data, "owner_sort": order,
                 "ordered_copy": ordered, "push_buffer": buffer, "lane_arrays": lanes,
                 "mram_pages": mram + mram_push_index, "wram_images": wram_push},
        "run": {"baseline": base["run"], data_part: data, "owner_sort": order,
                "ordered_copy": ordered, "push_buffer": buffer, "lane_arrays": lanes,
                "mram_pages": mram, "wram_images": wram_all, "dpu_tables": 2 * g + counters,
                "aggregation": aggregation},
    }


def _drop_bytes() -> int:
    from pimrl.data.format import DROP_MAPPED_BYTES

    return DROP_MAPPED_BYTES


def _slots(n_dpus: int, hw) -> int:
    """DPU slots of the whole ranks an allocation of ``n_dpus`` takes (faulty ones included)."""
    per_rank = hw.dpus_per_rank
    functional = ~hw.faulty_mask()
    have = 0
    for r in range(hw.n_ranks):
        have += int(functional[r * per_rank:(r + 1) * per_rank].sum())
        if have >= n_dpus:
            return (r + 1) * per_rank
    return hw.n_ranks * per_rank


class _Spares:
    """The simulated memories a freed DPU set leaves for the next allocation of its size
    (pimrl.pim.memory.keep_spare: one per size, the oldest let go past SPARE_BYTES)."""

    def __init__(self):
        self.kept = {}          # key -> (accounted bytes, resident bytes), oldest first

    def reuse(self, n_slots: int) -> None:
        for key in [k for k in self.kept if k[1] == n_slots]:
            del self.kept[key]

    def resident(self) -> int:
        return int(sum(r for _, r in self.kept.values()))

    def release(self, run) -> None:
        from pimrl.pim.memory import SPARE_BYTES

        for key, accounted, resident in (
                (("mram", run["n_slots"]), run["mram"], run["mram"]),
                (("wram", run["n_slots"]), run["n_slots"] * run["wram_bytes"], run["wram"])):
            self.kept.pop(key, None)
            self.kept[key] = (accounted, resident)
            while sum(a for a, _ in self.kept.values()) > SPARE_BYTES and len(self.kept) > 1:
                del self.kept[next(iter(self.kept))]


# ------------------------------------------------------------------------- the command line
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text) -> int:
    """``8G``, ``512M``, ``1.5GiB``, ``4096`` -> bytes (K, M, G, T: binary multiples, with or
    without ``iB``/``B``). Raises ValueError naming the value."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size: give bytes, or a number with K, M, G or T "
                         "(binary multiples), e.g. 8G or 512M")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not 1 <= value <= 1 << 60:
        raise ValueError(f"{text!r}: a size between 1 byte and 1 EiB")
    return int(value)


def max_memory_type(text) -> int:
    """argparse type of ``--max-memory``."""
    import argparse

    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def show(nbytes: float) -> str:
    """Bytes as GiB (two decimals), or MiB below 1 GiB and KiB below 1 MiB (one)."""
    if nbytes >= GiB:
        return f"{nbytes / GiB:.2f} GiB"
    return f"{nbytes / MiB:.1f} MiB" if nbytes >= MiB else f"{nbytes / 1024:.1f} KiB"
