"""Where ``pimrl train`` learns: the training backends behind one contract.

``BACKENDS[name](params, **options)`` builds a trainer from the learner's parameters and the
backend's own options (an entry's ``options`` flag names them). Like every trainer in pimrl,
the constructor stores them and ``fit(records, n_states, n_actions)`` does the work, setting

- ``q_``: the learned table, float64 (S, A);
- ``n_updates_`` and ``saturations_``;
- ``report_``: the run's fields as ``pimrl train --json`` prints them, every time named
  ``*_measured_s`` (wall clock here) or ``*_modelled_s`` (the PIM cost model).

``reference`` is the plain learner; ``cpu`` and ``gpu`` the measured baselines; ``pim`` the
simulated (or real) DPUs, :class:`~pimrl.swiftrl.trainer.PimTrainer`. The command line picks
a backend by name, passes it its options and reads the same attributes, whichever it is.
"""
from __future__ import annotations

import time

import numpy as np

from pimrl.learners.params import LearnerParams
from pimrl.registry import Registry


class ReferenceTrainer:
    """The reference learner (:class:`~pimrl.learners.reference.OfflineLearner`): one table,
    the records in order; its wall clock measured, numba's compilation included on a first
    run."""

    def __init__(self, params: LearnerParams):
        self.params = params

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "ReferenceTrainer":
        from pimrl.learners.reference import OfflineLearner

        t0 = time.perf_counter()
        learner = OfflineLearner(self.params).fit(records, n_states, n_actions)
        seconds = time.perf_counter() - t0
        self.q_ = learner.q_
        self.n_updates_ = learner.n_updates_
        self.saturations_ = learner.saturations_
        self.report_ = {"train_measured_s": seconds, "saturations": self.saturations_,
                        "n_updates": self.n_updates_}
        return self


class CpuTrainer:
    """The measured CPU baseline (:func:`~pimrl.baselines.cpu.cpu_baseline`): ``partitions``
    tables (default one per thread) learned on ``threads`` numba threads and averaged;
    ``repeats`` timed runs, the median reported; ``result_`` holds the
    :class:`~pimrl.baselines.cpu.CpuResult`."""

    def __init__(self, params: LearnerParams, threads: int | None = None,
                 partitions: int | None = None, repeats: int = 1):
        self.params = params
        self.threads = threads
        self.partitions = partitions
        self.repeats = repeats

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "CpuTrainer":
        from pimrl.baselines.cpu import cpu_baseline
        from pimrl.energy import cpu_run_energy

        res = cpu_baseline(records, n_states, n_actions, self.params, threads=self.threads,
                           partitions=self.partitions, repeats=self.repeats)
        self.result_ = res
        self.q_ = res.q
        self.n_updates_ = res.n_updates
        self.saturations_ = res.saturations
        self.report_ = dict(threads=res.threads, partitions=res.partitions,
                            repeats=self.repeats, train_measured_s=res.train_seconds,
                            aggregate_measured_s=res.aggregate_seconds,
                            total_measured_s=res.seconds,
                            updates_per_s_measured=res.updates_per_s,
                            saturations=res.saturations, n_updates=res.n_updates,
                            **cpu_run_energy(res))
        return self


class GpuTrainer:
    """The GPU baseline (:func:`~pimrl.baselines.gpu.gpu_baseline`, extra ``gpu``): one CUDA
    thread per partition, ``lanes`` lanes each. With the PIM run's DPUs as ``partitions`` and
    its tasklets as ``lanes`` it learns exactly the DPUs' tables and averages them as
    ``mean`` does. Timed by CUDA events on a real GPU; in numba's CUDA simulator
    (``NUMBA_ENABLE_CUDASIM=1``) the tables are computed and nothing is timed. ``result_``
    holds the :class:`~pimrl.baselines.gpu.GpuResult`. The defaults are ``PimTrainer``'s
    (64 DPUs of 16 tasklets)."""

    def __init__(self, params: LearnerParams, partitions: int = 64, lanes: int = 16,
                 threads_per_block: int = 64, repeats: int = 1):
        self.params = params
        self.partitions = partitions
        self.lanes = lanes
        self.threads_per_block = threads_per_block
        self.repeats = repeats

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "GpuTrainer":
        from pimrl.baselines.gpu import gpu_baseline

        try:
            res = gpu_baseline(records, n_states, n_actions, self.params,
                               partitions=self.partitions, lanes=self.lanes,
                               threads_per_block=self.threads_per_block, repeats=self.repeats,
                               keep_tables=False)
        except RuntimeError as exc:          # no GPU here: say how to get the tables anyway
            raise RuntimeError(f"--backend gpu: {exc}; NUMBA_ENABLE_CUDASIM=1 computes the "
                               "tables in numba's CUDA simulator, untimed") from None
        self.result_ = res
        self.q_ = res.q
        self.n_updates_ = res.n_updates
        self.saturations_ = res.saturations
        report = dict(device=res.device, partitions=res.partitions, lanes=res.lanes,
                      repeats=self.repeats, measured=res.measured,
                      saturations=res.saturations, n_updates=res.n_updates)
        if res.measured:        # CUDA events on a GPU; the simulator's clock is no GPU time
            report.update(h2d_measured_s=res.h2d_seconds, kernel_measured_s=res.kernel_seconds,
                          aggregate_measured_s=res.aggregate_seconds,
                          d2h_measured_s=res.d2h_seconds, total_measured_s=res.seconds,
                          updates_per_s_measured=res.updates_per_s)
            if np.isfinite(res.energy_measured_j):
                report["energy_measured_j"] = res.energy_measured_j
        report["energy_status"] = res.energy_status
        self.report_ = report
        return self


def _pim_trainer(params: LearnerParams, **options):
    from pimrl.swiftrl.trainer import PimTrainer

    return PimTrainer(params, **options)


#: The training backends by name (``pimrl train --backend``). ``options``: the constructor's
#: options the command line passes, each from the option (``argparse`` destination) named
#: beside it; ``pim``'s are the command line's PIM group (``pimrl.cli.train.run_pim``).
BACKENDS = Registry("training backends")
BACKENDS.add("reference", ReferenceTrainer, "the plain learner: one table, the records in "
             "order (the oracle-checked reference)", options={})
BACKENDS.add("cpu", CpuTrainer, "the measured CPU baseline: numba, --threads, one table per "
             "partition, averaged",
             options={"threads": "threads", "partitions": "partitions", "repeats": "repeats"})
BACKENDS.add("gpu", GpuTrainer, "the GPU baseline (extra gpu): one CUDA thread per partition; "
             "--dpus partitions of --tasklets lanes, the DPUs' own tables, averaged; measured "
             "on a GPU", options={"partitions": "dpus", "lanes": "tasklets",
                                  "threads_per_block": "threads_per_block",
                                  "repeats": "repeats"})
BACKENDS.add("pim", _pim_trainer, "simulated DPUs (or real ones: --device upmem), one table "
             "per DPU, aggregated on the host; times modelled (or measured)", options=None)
