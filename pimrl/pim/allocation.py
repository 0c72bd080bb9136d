"""The simulated machine and its allocations: the DPUs' ranks (:class:`Machine`), the state
of an allocation (:class:`Allocation`: memories, programs, the modelled ledger), the SDK's
profile strings, the choice of ranks for ``dpu_alloc``, the launches' time limits and their
booking. :mod:`pimrl.pim.system` builds the SDK's sets on them.
"""
from __future__ import annotations

import math
import os

import numpy as np

from pimrl.pim import cost
from pimrl.pim.errors import fail
from pimrl.pim.hardware import Hardware, get_hardware, parse_overrides
from pimrl.pim.memory import PagedMram, reused_zeros

DPU_ALLOCATE_ALL = 0xFFFFFFFF

#: The time limit of a launch of a C DPU program (pimrl.dpurt): wall-clock seconds, after
#: which the runtime stops it and its DPUs fault (DPU_ERR_DPU_FAULT, naming each stopped
#: tasklet and the function it was in). Set per launch (``DpuSet.exec(timeout=...)``,
#: ``launch(timeout=...)``), per allocation (the profile's ``timeout=SECONDS``, C and Python),
#: or for the process (``PIMRL_DPU_TIMEOUT``); ``0``, ``none`` or ``inf``: no limit.
LAUNCH_TIMEOUT_ENV = "PIMRL_DPU_TIMEOUT"
#: One hour: no legitimate launch comes near it (see docs/dpu-runtime.md, "Limits"); a
#: program that never ends is stopped, without anyone pressing Ctrl-C.
DEFAULT_LAUNCH_TIMEOUT_S = 3600.0
_NO_LIMIT_WORDS = ("none", "off", "inf", "infinity", "unlimited")


def parse_timeout(value, what: str, code: str = "INVALID_PROFILE") -> float:
    """A launch time limit: seconds > 0 (a number or its text); ``0``, ``none``, ``off``
    or ``inf`` give ``math.inf`` (no limit). Anything else raises DpuError ``code``."""
    seconds = None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _NO_LIMIT_WORDS:
            return math.inf
        try:
            seconds = float(text)
        except ValueError:
            seconds = None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    if seconds is None or math.isnan(seconds) or seconds < 0:
        raise fail(code, f"{what}: expected a time limit in seconds (a number > 0; 0 or "
                   f"'none' for no limit), got {value!r}")
    return math.inf if seconds == 0 else seconds


def launch_timeout_s(alloc=None) -> float:
    """The time limit (wall-clock seconds; ``math.inf``: none) of a launch on ``alloc``:
    the launch's own, else the allocation's profile's ``timeout=``, else
    ``PIMRL_DPU_TIMEOUT``, else DEFAULT_LAUNCH_TIMEOUT_S."""
    for attr in ("launch_timeout_s", "timeout_s"):
        value = getattr(alloc, attr, None)
        if value is not None:
            return value
    env = os.environ.get(LAUNCH_TIMEOUT_ENV, "").strip()
    if env:
        return parse_timeout(env, f"{LAUNCH_TIMEOUT_ENV}={env!r}", "SYSTEM")
    return DEFAULT_LAUNCH_TIMEOUT_S


class Machine:
    """One UPMEM system: its ranks, which of them are allocated, and its faulty DPUs."""

    def __init__(self, hardware: Hardware | None = None):
        self.hw = hardware or get_hardware()
        self.rank_free = np.ones(self.hw.n_ranks, dtype=bool)
        self.functional = ~self.hw.faulty_mask().reshape(self.hw.n_ranks, self.hw.dpus_per_rank)


_MACHINES: dict = {}



def _rows(slots: np.ndarray):
    """``slots`` as a slice when they are consecutive (the usual set: whole ranks), which
    numpy writes row after row instead of gathering them one index at a time."""
    s = np.asarray(slots)
    if s.ndim == 1 and len(s) > 1 and s[-1] - s[0] == len(s) - 1 and np.all(np.diff(s) == 1):
        return slice(int(s[0]), int(s[-1]) + 1)
    return slots

def default_machine(hardware: Hardware) -> Machine:
    key = repr(hardware)
    if key not in _MACHINES:
        _MACHINES[key] = Machine(hardware)
    return _MACHINES[key]


def parse_profile(profile: str | None) -> dict:
    """``"backend=simulator,hardware=upmem-640,frequency_hz=400e6"`` -> dict; NULL equals ""."""
    out = {}
    for item in (profile or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise fail("INVALID_PROFILE", f"profile entry {item!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


class Allocation:
    """The state behind one ``dpu_alloc``: its ranks' memories, programs and transfers."""

    def __init__(self, machine: Machine, ranks: np.ndarray, enabled: np.ndarray):
        hw = machine.hw
        self.machine, self.hw, self.ranks = machine, hw, ranks
        self.n_slots = len(ranks) * hw.dpus_per_rank
        self.enabled = enabled                        # bool per slot
        self.mram = PagedMram.reused(self.n_slots, hw.mram_bytes)
        self.wram = reused_zeros((self.n_slots, hw.wram_bytes), np.uint8)
        self.clean = np.ones(self.n_slots, dtype=bool)  # WRAM rows all zero (no load yet)
        self.wram_high = 0          # WRAM from this byte on is zero in every row
        self.program_of = np.full(self.n_slots, -1, dtype=np.int64)
        self.programs: list = []
        self.prepared: dict = {}
        self.running = np.zeros(len(ranks), dtype=bool)
        self.pending_faults: list = []
        self.logs: dict = {}
        self.ledger = cost.TimeBreakdown()
        self.phase: str | None = None                 # overrides the category of transfers
        self.freed = False
        self.timeout_s: float | None = None           # the profile's timeout= (launch limit)
        self.launch_timeout_s: float | None = None    # the running launch's own limit

    def rank_of(self, slots):
        return np.asarray(slots) // self.hw.dpus_per_rank

    def category(self, to_dpu: bool) -> str:
        return self.phase or ("cpu_dpu" if to_dpu else "dpu_cpu")


#: Profile keys of the SDK that tune its host-side threads (PrIM's CPU-DPU benchmark passes
#: ``nrThreadPerPool=8``): accepted, and without effect on the simulated machine.
SDK_HOST_PROFILE_KEYS = ("nrThreadsPerRank", "nrThreadPerPool", "nrJobsPerRank",
                         "dispatchOnAllRanks")


def machine_for_profile(profile: str | None, hardware: Hardware | None = None) -> Machine:
    """The machine a profile selects: ``backend`` (simulator), ``hardware`` (a preset) and
    any hardware field as a what-if override; errors are ``DPU_ERR_INVALID_PROFILE``."""
    opts = parse_profile(profile)
    backend = opts.pop("backend", "simulator")
    if backend not in ("simulator", "pimrl"):
        raise fail("INVALID_PROFILE", f"backend={backend!r}: pimrl simulates (use backend=simulator)")
    # SDK keys with no simulator meaning: its host threading (no effect here); libdpu reads
    # sgXferEnable itself.
    for key in (*SDK_HOST_PROFILE_KEYS, "sgXferEnable"):
        opts.pop(key, None)
    opts.pop("timeout", None)         # the launches' time limit: the allocation's (dpu_alloc)
    try:
        hw = hardware or get_hardware(opts.pop("hardware", "upmem-2556"),
                                      parse_overrides(f"{k}={v}" for k, v in opts.items()))
    except (ValueError, TypeError) as exc:     # TypeError: a word where a number belongs
        raise fail("INVALID_PROFILE", f"profile {profile!r}: {exc}") from None
    return default_machine(hw)


def choose_ranks(machine: Machine, nr_dpus: int = DPU_ALLOCATE_ALL):
    """The ranks ``dpu_alloc(nr_dpus)`` takes (the first free ones, whole) and which of their
    DPU slots are enabled (functional, the surplus of the last rank disabled); marks nothing."""
    hw = machine.hw
    free = np.flatnonzero(machine.rank_free)
    per_rank = machine.functional[free].sum(axis=1)
    if nr_dpus == DPU_ALLOCATE_ALL:
        take = len(free)
        want = int(per_rank.sum())
    else:
        if nr_dpus <= 0:
            raise fail("ALLOCATION", f"cannot allocate {nr_dpus} DPUs")
        cum = np.cumsum(per_rank)
        if len(cum) == 0 or cum[-1] < nr_dpus:
            have = int(cum[-1]) if len(cum) else 0
            raise fail("ALLOCATION", f"asked for {nr_dpus} DPUs; {have} are free on "
                       f"{hw.name} ({hw.n_dpus} functional DPUs in {hw.n_ranks} ranks)")
        take = int(np.searchsorted(cum, nr_dpus) + 1)
        want = nr_dpus
    if take == 0:
        raise fail("ALLOCATION", f"no free rank on {hw.name}")
    ranks = free[:take]
    enabled = machine.functional[ranks].ravel().copy()
    surplus = np.flatnonzero(enabled)[want:]
    enabled[surplus] = False
    return ranks, enabled


def book_launch(alloc, name: str, cycles: np.ndarray, n_dpus: int, synchronous: bool) -> None:
    """Book a launch in the ledger: the slowest DPU's cycles, then the host's fixed costs of
    a launch: booting every rank, then (here, or in dpu_sync for an asynchronous launch)
    waiting for their completion (estimates: hardware.py)."""
    peak = float(cycles.max()) if len(cycles) else 0.0
    alloc.ledger.add("dpu_kernel", peak / alloc.hw.frequency_hz, f"launch {name}", dpus=n_dpus,
                     max_cycles=peak)
    alloc.ledger.add("dpu_kernel", alloc.hw.launch_latency_s, "latency: launch")
    if synchronous:
        alloc.ledger.add("dpu_kernel", alloc.hw.sync_latency_s, "latency: synchronisation")
