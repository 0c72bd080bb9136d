"""The CPU baseline's energy: measured through RAPL where this machine lets us read it,
else modelled as a published package power times the measured time.

- **Measured** (``_measured_j``): Linux's powercap interface,
  ``/sys/class/powercap/intel-rapl:N/energy_uj`` (one package ``N`` each; their subzones
  ``intel-rapl:N:M``, core and DRAM, are parts of a package or outside it and are not
  added). The counter wraps at ``max_energy_range_uj``; a reading below the previous one has
  wrapped once (:func:`delta_uj`). It counts the whole package, whatever else runs on it, and
  updates about once a millisecond: a shorter part reads as zero or one update's worth.
  Recent kernels let only root read ``energy_uj``; then, or where there is no powercap (a
  VM, a non-Intel/AMD host), the modelled path is taken.
- **Modelled** (``_modelled_j``): the package's published TDP (:data:`PACKAGE_TDP_W`, by
  the model name of ``/proc/cpuinfo``) times the measured time, one package: what the
  package draws at full load, an upper bound for a run that does not use all its cores.
  Where the model is not in the table (a VM often shows only "AMD EPYC"), the stated default
  :data:`DEFAULT_PACKAGE_W` is used: one Intel Xeon Silver 4215, the PrIM server's CPU, so
  that the baseline is priced like the PIM system's host (pimrl.pim.host.PRIM_HOST).
"""
from __future__ import annotations

import re
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")

#: Published TDP of one package, W (the vendors' product pages: Intel ARK, AMD's EPYC specs).
#: Matched against /proc/cpuinfo's model name by the model number.
PACKAGE_TDP_W = {
    "Xeon Silver 4215": 85.0,     # PrIM's 2,556-DPU server (2 sockets)
    "Xeon Silver 4110": 85.0,     # PrIM's 640-DPU server
    "Xeon Gold 5218": 125.0,
    "Xeon Gold 6248": 150.0,
    "EPYC 7742": 225.0,
    "EPYC 7763": 280.0,
}
#: The stated default where the CPU's model is unknown: one Xeon Silver 4215 package.
DEFAULT_PACKAGE_W = 85.0
DEFAULT_PACKAGE_NAME = "Xeon Silver 4215 (default: the PrIM server's CPU)"


# ----------------------------------------------------------------------------- RAPL
def delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Microjoules between two readings of a counter that wraps at ``max_range_uj``: a later
    reading below the earlier one has wrapped (once; read often enough that it cannot wrap
    twice, every few minutes at most on a busy server)."""
    if after >= before:
        return after - before
    return after + max_range_uj - before


class Rapl:
    """The RAPL package counters under ``root`` (default ``/sys/class/powercap``).

    ``available``: at least one package counter exists and is readable. ``read()``: a
    snapshot, zone name -> microjoules; ``joules(before, after)``: the energy between two
    snapshots, summed over the packages, wrap-around handled."""

    def __init__(self, root=POWERCAP):
        self.root = Path(root)
        self.zones = {}                       # name -> (energy_uj path, max_energy_range_uj)
        try:
            candidates = sorted(self.root.glob("intel-rapl:*"))
        except OSError:
            candidates = []
        for d in candidates:
            if not re.fullmatch(r"intel-rapl:\d+", d.name):
                continue                      # a subzone (core, uncore, dram), or not RAPL
            try:
                int((d / "energy_uj").read_text())
                max_range = int((d / "max_energy_range_uj").read_text())
            except (OSError, ValueError):     # root-only (the usual case), or absent
                continue
            self.zones[d.name] = (d / "energy_uj", max_range)

    @property
    def available(self) -> bool:
        return bool(self.zones)

    def read(self) -> dict:
        return {name: int(path.read_text()) for name, (path, _) in self.zones.items()}

    def joules(self, before: dict, after: dict) -> float:
        return sum(delta_uj(before[n], after[n], self.zones[n][1]) for n in self.zones) * 1e-6


# ----------------------------------------------------------------------------- modelled
def cpu_model_name(cpuinfo="/proc/cpuinfo") -> str | None:
    """The first ``model name`` of ``cpuinfo``, or None where there is none."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else None


def package_power(model_name: str | None) -> tuple:
    """``(watts, name)``: the published TDP of the package named in ``model_name`` (a
    /proc/cpuinfo model name), else the stated default."""
    if model_name:
        flat = " ".join(model_name.replace("(R)", " ").replace("(TM)", " ").split())
        for name, watts in PACKAGE_TDP_W.items():
            family, number = name.rsplit(" ", 1)
            if re.search(rf"\b{re.escape(number)}\b", flat) and family in flat:
                return watts, name
    return DEFAULT_PACKAGE_W, DEFAULT_PACKAGE_NAME


def cpu_energy(train_s: float, aggregate_s: float, measured_j: dict | None = None,
               model_name: str | None = None) -> tuple:
    """The CPU baseline's energy object and the sentence that says how it was obtained.

    ``measured_j``: ``{"train": J, "aggregate": J}`` read through RAPL (then the keys end
    in ``_measured_j``); otherwise the package power of ``model_name`` (default: this
    machine's, :func:`cpu_model_name`) times the measured times (keys ``_modelled_j``)."""
    if measured_j is not None:
        train, agg = float(measured_j["train"]), float(measured_j["aggregate"])
        return ({"energy_train_measured_j": train, "energy_aggregate_measured_j": agg,
                 "energy_total_measured_j": train + agg},
                "measured: RAPL package counters, over the timed training and averaging")
    name = cpu_model_name() if model_name is None else model_name
    watts, which = package_power(name)
    return ({"energy_train_modelled_j": watts * train_s,
             "energy_aggregate_modelled_j": watts * aggregate_s,
             "energy_total_modelled_j": watts * (train_s + aggregate_s)},
            f"modelled: {watts:g} W package power ({which}) x measured time")
