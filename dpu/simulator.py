"""What only pimrl's simulator answers about a :class:`dpu.DpuSet` (not in the SDK).

Use it under ``if getattr(dpu, "PIMRL_SIMULATOR", False):`` so that the same script runs
with the SDK's package::

    from dpu import simulator
    simulator.load(dpus, program)        # a program object built in this process
    with simulator.phase(dpus, "inter_dpu"):
        dpus.copy(partials, "q_table")
    simulator.modelled_seconds(dpus)     # {'cpu_dpu': ..., 'dpu_kernel': ..., ...}
"""
from __future__ import annotations

import contextlib
import dataclasses

from pimrl.pim import cost, system
from pimrl.pim.hardware import PRESETS, Hardware
from pimrl.shim.clock import simulator_call


def profile(hardware: Hardware) -> str:
    """The ``DpuSet(profile=...)`` string that selects ``hardware``: its preset and every
    number that differs from it (floats written so that they read back exactly)."""
    base = hardware.name.rstrip("*")                  # with_overrides marks a what-if with "*"
    if base not in PRESETS:
        raise ValueError(f"hardware {hardware.name!r} is not a preset (known: {', '.join(PRESETS)})")
    preset = PRESETS[base]
    items = [f"hardware={base}"]
    for field in dataclasses.fields(Hardware):
        mine, theirs = getattr(hardware, field.name), getattr(preset, field.name)
        if field.name == "name" or mine == theirs:
            continue
        if field.name == "op_instructions":          # each operation as op_<name>=N
            for op, n in mine.items():
                if n != theirs.get(op):
                    items.append(f"op_{op}={float(n)!r}")
            continue
        if isinstance(mine, bool) or not isinstance(mine, (int, float)):
            raise ValueError(f"hardware field {field.name} differs from {hardware.name}'s and is "
                             "not a number a profile can carry")
        items.append(f"{field.name}={float(mine)!r}" if isinstance(mine, float) else f"{field.name}={mine}")
    return ",".join(items)


def system_set(dpu_set) -> system.DpuSet:
    """The :class:`pimrl.pim.system.DpuSet` behind a :class:`dpu.DpuSet`."""
    return dpu_set._sys


@simulator_call
def modelled_seconds(dpu_set) -> dict:
    """Modelled seconds booked so far by the set's allocation, per PrIM time category."""
    return dict(dpu_set._sys.alloc.ledger.modelled_s)


def ledger(dpu_set) -> cost.TimeBreakdown:
    """The allocation's ledger (every modelled event, in order)."""
    return dpu_set._sys.alloc.ledger


def last_launch(dpu_set) -> system.LaunchResult | None:
    """What the set's last ``exec`` reported: modelled cycles per DPU, faults, and the
    program's work counters per DPU (``counters``, for programs that keep them)."""
    return dpu_set._last_launch


@contextlib.contextmanager
def phase(dpu_set, category: str):
    """Count the transfers inside the block as ``category`` (e.g. ``"inter_dpu"``)."""
    with dpu_set._sys.phase(category):
        yield


def rows(matrix) -> list:
    """``list(matrix)``: one host buffer per DPU, the rows of a 2-D numpy array, for
    ``copy``. It is a list to every ``dpu`` package; the simulator sees that the buffers are
    the rows of ``matrix`` and moves them in one copy, without checking each of them."""
    from dpu._types import HostRows

    return HostRows(matrix)


@simulator_call
def load(dpu_set, program: system.DpuProgram):
    """Load a program object of this process (a :class:`pimrl.pim.system.DpuProgram`: the
    SwiftRL numba kernel, a C kernel that reports its work counters) as ``load(binary=...)``
    loads a program file, symbol attributes included; returns the ``dpu.DpuProgram``."""
    from dpu._types import DpuProgram, _translate

    with _translate():
        dpu_set._sys.load(program)
    loaded = DpuProgram(program)
    dpu_set._update_symbol_attributes(loaded.fetch_all_symbols())
    return loaded
