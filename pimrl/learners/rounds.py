"""The round loop of every training on DPUs: one copy for every scheme.

A run on DPUs is a sequence of rounds. In each, the DPUs learn (one launch or several), the
host gathers what they learned, combines it and, between rounds, sends back what the next
round starts from. What surrounds the rounds is the same for every scheme and lives here
(:class:`RoundLoop`):

- each round's entry of the trainer's ``rounds_``: its number, its progress and the run's
  time at its end (``modelled_s`` on the simulator, ``measured_s`` on real DPUs);
- the ``on_round`` callback (:data:`pimrl.learners.aggregate.OnRound`), timed apart;
- the checkpoint at each round boundary (after the broadcast) and the resume from one;
- the host's combining time over the rounds (``host_s``, measured).

A scheme plugs in as a small object (SwiftRL's averaging ``mean``/``weighted``/``sync:R``
in :mod:`pimrl.swiftrl.trainer`, state-owned learning ``own:R`` in
:mod:`pimrl.swiftrl.owned`, online learning in :mod:`pimrl.online.trainer`) with:

- ``name``: its tag in checkpoints;
- ``run_round(r, last)``: the round's launches, gathers, host work and broadcast; returns
  the host's combining seconds (measured);
- ``progress(r)``: the entry's progress fields (``epochs_done``, or ``steps_per_dpu`` and
  ``env_steps``);
- ``elapsed_s(last)``: the run's time at the end of the round, as a result of the run
  (``own:R`` adds the gather that stopping there would need);
- ``table(r, last)``: the table ``on_round`` is given;
- ``snapshot(r, last)``: the checkpoint's arrays of the scheme (the loop adds the ledger, the
  entries and the host time);
- ``resume(meta, arrays)``: puts them back (the DPUs' memories, the ledger, the scheme's
  own state) and returns the round to go on from.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class RoundLoop:
    """``n_rounds`` rounds of a scheme (module docstring). ``ledger()``: the run's ledger
    (:class:`~pimrl.pim.cost.TimeBreakdown`) as it stands; ``time_key``: ``"modelled_s"`` or
    ``"measured_s"``; ``checkpoint``: a :class:`~pimrl.checkpoint.Checkpoint` or None. After
    :meth:`run`: ``history`` (the entries, resumed ones included), ``host_s`` and ``eval_s``
    (measured seconds of the host's combining and of ``on_round``)."""

    n_rounds: int
    ledger: Callable
    time_key: str = "modelled_s"
    on_round: Callable | None = None
    checkpoint: object = None
    history: list = field(default_factory=list)
    host_s: float = 0.0
    eval_s: float = 0.0

    def run(self, scheme) -> int:
        """Resume from the checkpoint's state if it has one, then run the remaining rounds;
        returns the round the run went on from (0 for a fresh run)."""
        start = 0
        ck = self.checkpoint
        if ck is not None and ck.state is not None:
            meta, arrays = ck.state["meta"], ck.state["arrays"]
            start = scheme.resume(meta, arrays)
            self.host_s = float(meta["host_aggregation_s"])
            self.history[:] = meta["history"]        # in place: callers may hold the list
        for r in range(start, self.n_rounds):
            last = r == self.n_rounds - 1
            self.host_s += scheme.run_round(r, last)
            entry = {"round": r + 1, **scheme.progress(r),
                     self.time_key: scheme.elapsed_s(last)}
            if self.on_round is not None:
                t0 = time.perf_counter()
                entry.update(self.on_round(r, scheme.table(r, last), self.ledger()) or {})
                self.eval_s += time.perf_counter() - t0
            self.history.append(entry)
            if ck is not None:          # a round boundary: after the broadcast
                ck.boundary(r + 1, self.n_rounds,
                            lambda: self._snapshot(scheme, r, last))
        return start

    def _snapshot(self, scheme, r: int, last: bool):
        from pimrl.checkpoint import ledger_meta

        meta = {"scheme": scheme.name, "ledger": ledger_meta(self.ledger()),
                "history": self.history, "host_aggregation_s": self.host_s}
        return meta, scheme.snapshot(r, last)
