"""The PIM energy model: a run's modelled phase times (its ledger) in, modelled joules out.

Energy is power times time, phase by phase, plus an energy per byte moved between the host
and the DPUs. Every figure is a named constant below with its source and certainty
(:data:`ENERGY_SOURCES`; docs/cost-model.md, "Energy and the host", has the table). Nothing
here is measured: every key this module returns ends in ``_modelled_j``.

For a run on ``n`` DPUs of a :class:`~pimrl.pim.hardware.Hardware` with ``dpus_per_rank``
DPUs a rank, the allocation powers ``ranks = ceil(n / dpus_per_rank)`` whole ranks, hence
``chips = ranks * dpus_per_rank / DPUS_PER_CHIP`` PIM chips (the surplus DPUs of the last
rank are disabled but powered). With ``t_c`` the time of category ``c`` and ``B_c`` the
bytes it moved (summed over DPUs):

- ``cpu_dpu``, ``inter_dpu``, ``dpu_cpu``: ``chips * P_idle * t_c + B_c * e_byte``: the
  DIMMs wait while the host drives the bus, and every byte costs ``e_byte``;
- ``dpu_kernel``: ``(chips * P_idle + n * (P_active - P_idle) / DPUS_PER_CHIP) * t_kernel``:
  every DPU of the run counted as running for the whole launch (the slowest DPU bounds it;
  those that finish early are not credited: an upper bound);
- ``host``: the host's package at full power (``host.active_power_w``) while it drives the
  transfers (the SDK's byte transposition) and while it aggregates (``host_aggregation_s``),
  at idle power (``host.idle_power_w``) during the launches, plus the DIMMs' idle power
  while it aggregates.

``energy_total_modelled_j`` is their sum. The modelled total time of the ledger leaves the
host's aggregation out (modelled apart: pimrl.energy); the energy counts it, in ``host``.

Not modelled: DRAM refresh and standby beyond ``P_idle``, the host's own DRAM and the rest
of the server (fans, power supply, disks), a frequency what-if's effect on power (power is
taken as published, whatever ``frequency_hz``; energy follows the modelled time only).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from pimrl.pim.cost import CATEGORIES, TimeBreakdown
from pimrl.pim.hardware import Hardware
from pimrl.pim.host import PRIM_HOST, HostModel

#: The DPUs of one PIM chip (UPMEM: 8 chips x 8 DPUs a rank; shared/reference/upmem.md).
DPUS_PER_CHIP = 8
#: Power of one PIM chip (8 DPUs) running, W (uncertain).
PIM_CHIP_ACTIVE_W = 1.2
#: Power of one PIM chip powered but not running a program, W (uncertain, assumed).
PIM_CHIP_IDLE_W = 0.1
#: Energy of one DRAM access, pJ a bit, interface included (uncertain).
DRAM_ACCESS_PJ_PER_BIT = 20.0
#: DRAM accesses a byte moved between host and DPU: the host buffer's and the DPU's MRAM.
TRANSFER_ACCESSES = 2

#: name -> (value, unit, source, certainty) of every figure above (docs/cost-model.md).
ENERGY_SOURCES = {
    "DPUS_PER_CHIP": (DPUS_PER_CHIP, "DPUs", "UPMEM: 8 DPUs a chip, 8 chips a rank "
                      "(shared/reference/upmem.md)", "published"),
    "PIM_CHIP_ACTIVE_W": (PIM_CHIP_ACTIVE_W, "W", "Devaux (UPMEM), \"The true Processing In "
                          "Memory accelerator\", Hot Chips 31, 2019, as commonly quoted: about "
                          "1.2 W a PIM chip, about 20 W a 16-chip DIMM (not checked against "
                          "the slides; clock and load not stated)", "uncertain"),
    "PIM_CHIP_IDLE_W": (PIM_CHIP_IDLE_W, "W", "assumed: the order of a DDR4 chip's standby "
                        "current (Micron 8 Gb DDR4 datasheet, IDD2N/IDD3N: tens of mA at "
                        "1.2 V) plus the DPUs' leakage; no published figure", "uncertain"),
    "DRAM_ACCESS_PJ_PER_BIT": (DRAM_ACCESS_PJ_PER_BIT, "pJ/bit", "Horowitz, \"Computing's "
                               "energy problem\", ISSCC 2014: a 64-bit DRAM access costs "
                               "1.3-2.6 nJ (20-41 pJ/bit); the low end", "uncertain"),
    "TRANSFER_ACCESSES": (TRANSFER_ACCESSES, "accesses/byte", "structural: a push reads the "
                          "host's buffer and writes MRAM (a gather the reverse)", "derived"),
}

COMPONENTS = (*CATEGORIES, "host")


@dataclass(frozen=True)
class EnergyModel:
    """The figures of the PIM energy model; the defaults are the constants above."""

    chip_active_w: float = PIM_CHIP_ACTIVE_W
    chip_idle_w: float = PIM_CHIP_IDLE_W
    dpus_per_chip: int = DPUS_PER_CHIP
    transfer_pj_per_bit: float = DRAM_ACCESS_PJ_PER_BIT * TRANSFER_ACCESSES
    host: HostModel = field(default_factory=lambda: PRIM_HOST)

    @property
    def transfer_j_per_byte(self) -> float:
        return self.transfer_pj_per_bit * 8e-12

    @property
    def dpu_dynamic_w(self) -> float:
        """What one running DPU adds to its chip's idle power."""
        return (self.chip_active_w - self.chip_idle_w) / self.dpus_per_chip


DEFAULT_MODEL = EnergyModel()


def powered_chips(hw: Hardware, n_dpus: int, dpus_per_chip: int = DPUS_PER_CHIP) -> float:
    """PIM chips powered for a run on ``n_dpus`` DPUs: those of its whole ranks."""
    ranks = math.ceil(max(int(n_dpus), 0) / hw.dpus_per_rank)
    return ranks * hw.dpus_per_rank / dpus_per_chip


def pim_energy(seconds: dict, hw: Hardware, n_dpus: int, *, transfer_bytes: dict | None = None,
               host_aggregation_s: float = 0.0, model: EnergyModel = DEFAULT_MODEL) -> dict:
    """Modelled energy of a PIM run from its phase times.

    ``seconds``: category (``cpu_dpu``, ``dpu_kernel``, ``inter_dpu``, ``dpu_cpu``) ->
    seconds (missing categories count as 0); ``transfer_bytes``: category -> bytes moved,
    summed over DPUs (default: none); ``host_aggregation_s``: the host's aggregation time.
    Returns ``energy_<component>_modelled_j`` for every component of :data:`COMPONENTS` and
    ``energy_total_modelled_j``, in joules."""
    unknown = set(seconds) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown time categories {sorted(unknown)}; known: {CATEGORIES}")
    t = {c: float(seconds.get(c, 0.0)) for c in CATEGORIES}
    b = {c: float((transfer_bytes or {}).get(c, 0.0)) for c in CATEGORIES}
    if any(v < 0 for v in (*t.values(), *b.values(), host_aggregation_s)) or n_dpus < 0:
        raise ValueError("times, bytes and the DPU count must be >= 0")
    idle_w = powered_chips(hw, n_dpus, model.dpus_per_chip) * model.chip_idle_w
    kernel_w = idle_w + n_dpus * model.dpu_dynamic_w
    out = {}
    for c in CATEGORIES:
        power = kernel_w if c == "dpu_kernel" else idle_w
        out[f"energy_{c}_modelled_j"] = power * t[c] + b[c] * model.transfer_j_per_byte
    transfers_s = t["cpu_dpu"] + t["inter_dpu"] + t["dpu_cpu"]
    h = model.host
    out["energy_host_modelled_j"] = (h.active_power_w * (transfers_s + host_aggregation_s)
                                     + h.idle_power_w * t["dpu_kernel"]
                                     + idle_w * host_aggregation_s)
    out["energy_total_modelled_j"] = sum(out[f"energy_{c}_modelled_j"] for c in COMPONENTS)
    return out


def ledger_phases(ledger: TimeBreakdown, until_s: float | None = None):
    """A ledger's time and bytes by category: ``(seconds, bytes, kind)``, ``kind`` being
    ``modelled`` (the simulator's ledger) or ``measured`` (real DPUs: each phase's wall clock,
    and no byte counts).

    ``until_s``: only the first ``until_s`` modelled seconds of the run, walking the ledger's
    events in order; the event that straddles ``until_s`` counts pro rata (its time and its
    bytes). Times past the end of the ledger are ignored."""
    seconds = {c: 0.0 for c in CATEGORIES}
    nbytes = {c: 0.0 for c in CATEGORIES}
    if not ledger.modelled_s:                       # real DPUs: measured phases
        if until_s is not None:
            raise ValueError("a measured ledger has no events to cut at a time")
        for c in CATEGORIES:
            seconds[c] = float(ledger.measured_s.get(c, 0.0))
        return seconds, nbytes, "measured"
    left = math.inf if until_s is None else float(until_s)
    for e in ledger.events:
        if left <= 0:
            break
        s = float(e.get("modelled_s", 0.0))
        share = 1.0 if s <= left else left / s
        seconds[e["category"]] += s * share
        if "bytes_per_dpu" in e:                    # a transfer: its bytes, all DPUs
            nbytes[e["category"]] += share * e["bytes_per_dpu"] * e.get("dpus", 0)
        left -= s * share
    if until_s is None:          # the categories' own sums (equal to the events' unless edited)
        seconds = {c: float(ledger.modelled_s.get(c, 0.0)) for c in CATEGORIES}
    return seconds, nbytes, "modelled"


def ledger_energy(ledger: TimeBreakdown, hw: Hardware, n_dpus: int, *,
                  host_aggregation_s: float = 0.0, until_s: float | None = None,
                  model: EnergyModel = DEFAULT_MODEL) -> dict:
    """:func:`pim_energy` of a run's ledger (``trainer.timings_``): its modelled phase times
    and the bytes of its transfers, or, on real DPUs, its measured phase times (power is
    modelled either way, so the keys still end in ``_modelled_j``). ``until_s``: the energy of
    the run's first ``until_s`` modelled seconds (:func:`ledger_phases`); pass the matching
    share of ``host_aggregation_s``."""
    seconds, nbytes, _ = ledger_phases(ledger, until_s)
    return pim_energy(seconds, hw, n_dpus, transfer_bytes=nbytes,
                      host_aggregation_s=host_aggregation_s, model=model)


def energy_line(energy: dict) -> str:
    """One line of text: the total and each component, in mJ, each said to be modelled or
    measured (by its key)."""
    kind = "measured" if any(k.endswith("_measured_j") for k in energy) else "modelled"
    total = energy.get(f"energy_total_{kind}_j")
    parts = []
    for key, value in energy.items():
        if key.startswith("energy_") and not key.startswith("energy_total_") and value is not None:
            name = key[len("energy_"):].rsplit("_", 2)[0].replace("_", "-")
            parts.append(f"{name} {value * 1e3:.3f}")
    return f"{total * 1e3:.3f} mJ {kind} ({', '.join(parts)} mJ)"
