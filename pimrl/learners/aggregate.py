"""Host-side aggregation of the DPUs' Q-tables, chosen by name.

``mean`` (SwiftRL: the plain average), ``weighted`` (each entry weighted by how often each
DPU updated it), and ``sync:R`` / ``sync:R:weighted`` (R rounds; after each, the mean, or
the mean weighted by that round's updates, is broadcast back to every DPU, as in federated
Q-learning). Tables arrive raw (float32 or Q-format int32); aggregates
are float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

from pimrl.parallel import SPLIT_BYTES, run_ranges

from pimrl.learners import fixedpoint
from pimrl.registry import Registry
from pimrl.learners.fixedpoint import raw_to_float  # noqa: F401 (the aggregates' inverse)

#: The per-round callback every trainer takes as ``on_round=`` (offline, state-owned and
#: online alike; ``pimrl train`` and ``pimrl scale`` evaluate each round with one):
#: ``on_round(round, q, ledger)``, called after each round's aggregation and broadcast with
#: the round's index (from 0), the table as float64 ((S, A); online independent agents:
#: (n_dpus, S, A)) and the run's ledger so far (a :class:`~pimrl.pim.cost.TimeBreakdown`,
#: read, not kept). The dict it returns (or None) is merged into that round's entry of the
#: trainer's ``rounds_``. Instrumentation: its time is outside every PIM time.
OnRound = Callable[[int, np.ndarray, object], "dict | None"]


def mean_tables(raw: np.ndarray, scale: float, visits: np.ndarray | None = None) -> np.ndarray:
    """The plain average of the DPUs' tables (SwiftRL's). Raw tables (float32, or Q-format
    int32 with ``scale`` = 2^-F) are averaged over axis 0 in float64: each entry's values
    summed in DPU order, then divided by their number, as ``raw.mean(axis=0,
    dtype=np.float64)`` does (bit for bit: tested), in one compiled pass instead of numpy's
    buffered casts (2,000 Taxi tables: 1-2 ms instead of 3-4)."""
    flat = np.ascontiguousarray(raw).reshape(len(raw), -1)
    acc = np.zeros(flat.shape[1])
    run_ranges(lambda lo, hi: _sum_over_tables(flat, acc, lo, hi), flat.shape[1],
               1 if flat.nbytes < SPLIT_BYTES else None)
    return (acc / len(raw)).reshape(raw.shape[1:]) * scale


@njit(cache=True, nogil=True)
def _sum_over_tables(flat, acc, lo, hi):
    """Columns ``lo..hi-1`` of ``flat`` (tables x entries) summed into ``acc`` in float64,
    rows in order (into a fresh array first: LLVM then knows it aliases nothing and
    vectorizes the sums, 4x faster)."""
    part = np.zeros(hi - lo)
    for d in range(flat.shape[0]):
        row = flat[d, lo:hi]
        for j in range(hi - lo):
            part[j] += np.float64(row[j])
    acc[lo:hi] = part


def weighted_tables(raw: np.ndarray, scale: float, visits: np.ndarray) -> np.ndarray:
    """Each entry averaged with weights = how often each DPU updated it. Entries no DPU
    updated take the plain mean."""
    total = visits.sum(axis=0, dtype=np.float64)
    # Cast inside einsum's buffers: the same products and sums as on float64 copies, without
    # materialising two (D, S, A) float64 arrays (2,000 Taxi tables: 12 ms instead of 150).
    weighted = np.einsum("dij,dij->ij", visits, raw, dtype=np.float64, casting="unsafe") * scale
    plain = mean_tables(raw, scale)
    return np.where(total > 0, weighted / np.where(total > 0, total, 1.0), plain)


#: The aggregators by name (``--aggregate NAME``, ``sync:R:NAME``).
AGGREGATORS = Registry("aggregators")
AGGREGATORS.add("mean", mean_tables, "the plain average of the DPUs' tables (SwiftRL)")
AGGREGATORS.add("weighted", weighted_tables, "each entry weighted by how often each DPU "
                "updated it; entries no DPU updated take the plain mean", needs_visits=True)


@dataclass(frozen=True)
class AggregateSpec:
    """A parsed ``--aggregate`` value."""

    name: str            # a key of AGGREGATORS
    rounds: int          # 1 = aggregate once at the end
    needs_visits: bool

    @property
    def label(self) -> str:
        if self.name == "own":
            return f"own:{self.rounds}"
        if self.rounds == 1:
            return self.name
        return f"sync:{self.rounds}" + (":weighted" if self.name == "weighted" else "")


def parse_aggregate(spec: str, name: str = "--aggregate") -> AggregateSpec:
    """``mean`` | ``weighted`` | ``sync:R`` | ``sync:R:weighted`` | ``own:R`` (R in [1,
    :data:`pimrl.limits.MAX_ROUNDS`] rounds; ``own``: state-owned learning,
    :mod:`pimrl.swiftrl.owned`). Errors name ``name``, the option or key that gave ``spec``."""
    from pimrl.limits import MAX_ROUNDS, integer

    def needs_visits(name):
        return bool(AGGREGATORS.entries[name].flags.get("needs_visits"))

    if not isinstance(spec, str):
        raise ValueError(f"{name} {spec!r}: must be a name such as mean or sync:4")
    if spec in AGGREGATORS:
        return AggregateSpec(spec, 1, needs_visits(spec))
    parts = spec.split(":")
    if (len(parts) in (2, 3) and parts[0] == "sync" and (len(parts) == 2 or parts[2] in AGGREGATORS)) \
            or (len(parts) == 2 and parts[0] == "own"):
        # one round is one launch, and the host keeps a row per round: R is bounded
        try:
            rounds = integer(1, MAX_ROUNDS).parse(parts[1], f"{name} {spec}: rounds R")
        except ValueError as exc:
            raise ValueError(f"{exc} (as in sync:R, sync:R:weighted or own:R)") from None
        if parts[0] == "own":
            return AggregateSpec("own", rounds, False)
        agg = parts[2] if len(parts) == 3 else "mean"
        return AggregateSpec(agg, rounds, needs_visits(agg))
    names = ", ".join(AGGREGATORS)
    raise ValueError(f"{name}: unknown aggregator {spec!r}; use {names}, sync:R, sync:R:weighted "
                     f"(sync:R:NAME for any aggregator NAME) or own:R (R >= 1 rounds)")


def raw_scale(dtype: str, frac_bits: int) -> float:
    """What one unit of a raw table is worth: 2^-F for Q format, 1 for float32."""
    return 1.0 / (1 << frac_bits) if dtype == "int32" else 1.0


def float_to_raw(q: np.ndarray, dtype: str, frac_bits: int) -> np.ndarray:
    """An aggregate as the DPUs store it (round to nearest float32, or Q format)."""
    if dtype == "int32":
        return fixedpoint.to_fixed(q, frac_bits, "aggregated Q")
    return q.astype(np.float32)
