"""The host of a UPMEM system, modelled: what its cores and memory can do, and what its
package draws, for the work a PIM run leaves on the host (aggregating the DPUs' tables) and
for the host's share of a run's energy (:mod:`pimrl.pim.energy`).

Every figure is a named field of :class:`HostModel` with its source in
:data:`HOST_SOURCES` (docs/cost-model.md, "Energy and the host", has the table). The preset
:data:`PRIM_HOST` is the host of the 2,556-DPU PrIM server: two Intel Xeon Silver 4215
(Gómez-Luna et al., "Benchmarking a New Paradigm", IEEE Access 2022, section 2: the
2,556-DPU system's CPU).

Aggregation (:func:`host_aggregation_seconds`): averaging ``N`` tables of ``E`` entries on
``T`` threads takes the longer of two bounds:

- compute: ``N * E * aggregate_s_per_entry / min(T, cores)`` (each entry of each table
  converted and added once, the work split evenly over the threads);
- memory: ``(N + 1) * E * bytes_per_entry / memory_bandwidth`` (every table read once,
  the result written once; the bandwidth is shared, so more threads do not raise it).

State-owned learning (``own:R``, :func:`host_owned_seconds`) does not average tables: between
rounds the host reads the gathered ``v_out`` words (each DPU's two edge rows and the values of
its states), merges the split states' rows and builds the next ``V`` (``S`` words); after the
last round it keeps each state's owner row of the gathered tables. Each pass is priced like
aggregation (:func:`host_pass_seconds`): the larger of its entries over the threads and its
bytes over the memory bandwidth.

Nothing here is measured; the trainers' ``host_aggregation`` time, measured on this machine,
stays as it is, and a report carries ``host_aggregation_modelled_s`` beside it.
"""
from __future__ import annotations

from dataclasses import dataclass

#: Unit, source and certainty of each figure of :data:`PRIM_HOST` (its values are the
#: fields' defaults). Certainty: ``published`` (a vendor's or a paper's figure), ``derived``
#: (arithmetic on published figures, stated) or ``uncertain`` (an estimate, or a derivation
#: resting on an assumption).
HOST_SOURCES = {
    "sockets": ("-", "PrIM (Gómez-Luna et al., IEEE Access 2022), 2,556-DPU system: a 2-socket "
                "Intel Xeon Silver 4215 host", "published"),
    "cores": ("-", "Intel ARK, Xeon Silver 4215: 8 cores (16 threads) a socket, x 2 sockets",
              "published"),
    "frequency_hz": ("Hz", "Intel ARK, Xeon Silver 4215: 2.50 GHz base clock", "published"),
    "memory_bandwidth_gbps": ("GB/s", "4 DDR4-2400 channels x 19.2 GB/s: two 6-channel sockets at 2 "
                              "DIMMs a channel give 24 slots, 20 of them PIM-DIMMs, so at most 4 "
                              "channels hold the host's own DIMMs (the PrIM paper does not say "
                              "which); peak, sustained is lower", "uncertain"),
    "transpose_s_per_byte": ("s/byte a core", "the best 32-rank push_xfer rate (SDK 2023.2: 22.6 GB/s at 512 KiB "
                             "a DPU) spread over the 16 cores: the SDK's byte transposition "
                             "cannot cost more a byte on a core, or the push could not reach "
                             "that rate (an upper bound)", "derived"),
    "aggregate_s_per_entry": ("s/entry a core", "assumed: one cycle of one core a table entry (load, convert, "
                              "add) at the 2.5 GHz base clock; vectorised code does several a "
                              "cycle", "uncertain"),
    "package_tdp_w": ("W a socket", "Intel ARK, Xeon Silver 4215: TDP 85 W a package", "published"),
    "idle_fraction": ("of TDP", "assumed: a package's power while the host only waits for the DPUs, as "
                      "a fraction of its TDP (no published figure for this CPU)", "uncertain"),
}


@dataclass(frozen=True)
class HostModel:
    """A UPMEM system's host CPU: cores, memory bandwidth, the costs of the host-side work
    of a PIM run, and package power (docs/cost-model.md, "Energy and the host")."""

    name: str = "prim-2x-xeon-silver-4215"
    sockets: int = 2
    cores: int = 16                       # physical cores, all sockets
    frequency_hz: float = 2.5e9
    memory_bandwidth_gbps: float = 76.8   # the host's own DRAM, all sockets (peak)
    transpose_s_per_byte: float = 16 / 22.6e9   # per core: the SDK's byte transposition
    aggregate_s_per_entry: float = 1 / 2.5e9    # per core: one entry of one table averaged
    package_tdp_w: float = 85.0           # per socket
    idle_fraction: float = 0.25           # package power waiting, as a fraction of TDP

    def __post_init__(self):
        for name in ("sockets", "cores"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"host {self.name}: {name}={value!r} must be a positive integer")
        for name in ("frequency_hz", "memory_bandwidth_gbps", "transpose_s_per_byte",
                     "aggregate_s_per_entry", "package_tdp_w"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
                    or value == float("inf"):
                raise ValueError(f"host {self.name}: {name}={value!r} must be a positive number")
        if not 0 <= self.idle_fraction <= 1:
            raise ValueError(f"host {self.name}: idle_fraction={self.idle_fraction!r} must be "
                             "in [0, 1]")

    @property
    def active_power_w(self) -> float:
        """Package power of every socket at TDP: the host transposing or aggregating."""
        return self.sockets * self.package_tdp_w

    @property
    def idle_power_w(self) -> float:
        """Package power of every socket while the host waits for the DPUs."""
        return self.active_power_w * self.idle_fraction


#: The PrIM 2,556-DPU server's host: 2 x Intel Xeon Silver 4215.
PRIM_HOST = HostModel()

HOSTS = {PRIM_HOST.name: PRIM_HOST}


def _threads(host: HostModel, threads) -> int:
    t = host.cores if threads is None else int(threads)
    if t < 1:
        raise ValueError(f"threads must be at least 1; got {threads}")
    return min(t, host.cores)


def host_pass_seconds(host: HostModel, entries: float, nbytes: float, threads=None) -> float:
    """Modelled seconds of one host pass that handles ``entries`` entries (``aggregate_s_per_entry``
    each on one core, split over ``threads`` threads) and moves ``nbytes`` through the host's
    memory (its bandwidth shared by every thread): the larger of the two bounds."""
    if entries < 0 or nbytes < 0:
        raise ValueError("entries and nbytes must be >= 0")
    t = _threads(host, threads)
    return max(entries * host.aggregate_s_per_entry / t,
               nbytes / (host.memory_bandwidth_gbps * 1e9))


def host_owned_seconds(host: HostModel, n_dpus: int, n_states: int, n_actions: int,
                       out_words: int, rounds: int, threads=None,
                       bytes_per_entry: int = 4) -> dict:
    """Modelled host work of state-owned learning (``own:R``) on ``n_dpus`` DPUs with
    ``rounds`` rounds, each DPU leaving ``out_words`` words in ``v_out`` (``2 * A`` edge
    words and its longest state range): ``{"merge_s", "assembly_s", "total_s"}``.

    - a merge, each of the ``rounds - 1`` rounds before the last: the gather's
      ``n_dpus * out_words`` words read and handled once, and ``V`` built (``S`` entries
      written): entries ``n_dpus * out_words + S``, bytes the same times ``bytes_per_entry``;
    - the assembly, once: each state's owner row of the gathered tables read (``S * A``
      entries) and written as float64: bytes ``S * A * (bytes_per_entry + 8)``.
    """
    if min(n_dpus, n_states, n_actions, out_words) < 0 or rounds < 1:
        raise ValueError("counts must be >= 0 and rounds >= 1")
    merge_entries = n_dpus * out_words + n_states
    merge = host_pass_seconds(host, merge_entries, merge_entries * bytes_per_entry, threads)
    table = n_states * n_actions
    assembly = host_pass_seconds(host, table, table * (bytes_per_entry + 8), threads)
    return {"merge_s": merge, "assembly_s": assembly,
            "total_s": (rounds - 1) * merge + assembly}


def host_aggregation_bounds(host: HostModel, n_tables: int, entries: int, threads=None,
                            bytes_per_entry: int = 4) -> dict:
    """The two bounds of :func:`host_aggregation_seconds`, in modelled seconds:
    ``{"compute_s", "memory_s", "bound"}`` (``bound``: ``compute`` or ``memory``, the
    larger)."""
    if n_tables < 0 or entries < 0 or bytes_per_entry <= 0:
        raise ValueError("n_tables and entries must be >= 0, bytes_per_entry > 0")
    t = _threads(host, threads)
    compute = n_tables * entries * host.aggregate_s_per_entry / t
    moved = (n_tables + 1) * entries * bytes_per_entry if n_tables and entries else 0
    memory = moved / (host.memory_bandwidth_gbps * 1e9)
    return {"compute_s": compute, "memory_s": memory,
            "bound": "memory" if memory > compute else "compute"}


def host_aggregation_seconds(host: HostModel, n_tables: int, entries: int, threads=None,
                             bytes_per_entry: int = 4) -> float:
    """Modelled seconds for the host to average ``n_tables`` tables of ``entries`` entries
    (``bytes_per_entry`` each: 4 for INT32 or FP32) on ``threads`` threads (default: every
    core; more threads than cores count as the cores): the larger of the compute bound and
    the memory-bandwidth bound."""
    b = host_aggregation_bounds(host, n_tables, entries, threads, bytes_per_entry)
    return max(b["compute_s"], b["memory_s"])


def host_transpose_seconds(host: HostModel, nbytes: int, threads=None) -> float:
    """Modelled seconds of the SDK's byte transposition of ``nbytes`` on ``threads`` threads
    (default: every core). An upper bound, included in the transfer times of the cost model
    (pimrl.pim.cost), which are measured push_xfer rates: for the host's share of energy,
    not to be added to them."""
    if nbytes < 0:
        raise ValueError("nbytes must be >= 0")
    return nbytes * host.transpose_s_per_byte / _threads(host, threads)
