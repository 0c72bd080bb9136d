"""The columns of ``pimrl scale``'s results.csv: their order, which are younger than some
files, which belong to a baseline, and what each means (written into meta.json).

A row is its key, the run's parameters (:data:`pimrl.experiments.config.PARAM_COLUMNS`),
its results, who measured it, when and in which session.
"""
from __future__ import annotations

from pimrl.experiments.config import PARAM_COLUMNS

#: Result columns after the parameters. Unit and provenance are in every time's name:
#: ``_modelled_s`` comes from the PIM cost model, ``_measured_s`` is wall clock (CPU) or
#: CUDA events (GPU) on the worker the row names (its machine is in meta.json).
RESULT_COLUMNS = (
    "pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s", "pim_inter_dpu_modelled_s",
    "pim_dpu_cpu_modelled_s", "pim_total_modelled_s", "pim_updates",
    "pim_updates_per_s_modelled", "pim_saturations", "pim_conflicts",
    "pim_host_aggregation_measured_s",
    "pim_simulation_wall_measured_s",
    "success_rate", "mean_return", "optimal_success_rate", "optimal_mean_return",
    "eval_method", "eval_horizon",
    "quality_round", "time_to_quality_modelled_s", "quality_curve",
    "cpu_threads", "cpu_partitions", "cpu_1t_measured_s", "cpu_1t_updates_per_s_measured",
    "cpu_mt_measured_s", "cpu_mt_updates_per_s_measured",
    "cpu_1t_success_rate", "cpu_1t_mean_return", "cpu_mt_success_rate", "cpu_mt_mean_return",
    "gpu_status", "gpu_partitions", "gpu_lanes", "gpu_h2d_measured_s", "gpu_kernel_measured_s",
    "gpu_d2h_measured_s", "gpu_aggregate_measured_s", "gpu_total_measured_s",
    "gpu_updates_per_s_measured", "gpu_success_rate", "gpu_mean_return",
) + (
    # younger columns: a results file written before them lacks them (read as empty)
    "cpu_c_1t_measured_s", "cpu_c_1t_updates_per_s_measured", "cpu_c_mt_measured_s",
    "cpu_c_mt_updates_per_s_measured", "cpu_1t_quality_epoch",
    "cpu_1t_time_to_quality_measured_s", "cpu_mt_quality_epoch",
    "cpu_mt_time_to_quality_measured_s", "cpu_1t_epochs_run", "cpu_mt_epochs_run",
    "peak_rss_measured_bytes", "pim_host_aggregation_modelled_s",
    "pim_energy_modelled_j", "pim_energy_to_quality_modelled_j",
    "cpu_1t_energy_modelled_j", "cpu_1t_energy_measured_j", "cpu_mt_energy_modelled_j",
    "cpu_mt_energy_measured_j", "cpu_mt_energy_to_quality_modelled_j",
    "gpu_energy_measured_j", "gpu_energy_status",
)
#: Result columns a results file may lack (written before they existed).
YOUNGER_COLUMNS = RESULT_COLUMNS[RESULT_COLUMNS.index("cpu_c_1t_measured_s"):]
#: Who measured a row: the worker of its PIM run, and of its baselines (``local`` or a Dask
#: worker's address; meta.json's session lists the workers and their hosts).
WORKER_COLUMNS = ("worker", "baseline_worker")
COLUMNS = ("row_key",) + PARAM_COLUMNS + RESULT_COLUMNS + WORKER_COLUMNS + ("finished_at", "session")
#: The columns a rerun of a row gives again bit for bit, on any machine or executor: not
#: those measured, nor the CPU's energy (its package power, modelled, times a measured time),
#: nor who computed the row and when.
REPRODUCIBLE_COLUMNS = tuple(
    c for c in COLUMNS if "measured" not in c and not (c.startswith("cpu_") and "_energy" in c)
    and c not in WORKER_COLUMNS + ("finished_at", "session"))
CPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("cpu_"))
GPU_COLUMNS = tuple(c for c in RESULT_COLUMNS if c.startswith("gpu_"))

COLUMN_NOTES = {
    "_modelled_s": "seconds, modelled by pimrl's UPMEM cost model (not measured)",
    "_measured_s": "seconds, measured by the worker the row names (wall clock for the CPU, "
                   "CUDA events for GPU transfers and kernel); compilation excluded, except in "
                   "pim_simulation_wall_measured_s",
    "pim_host_aggregation_modelled_s": "the PrIM host's (16 cores) averaging of every round, "
                                       "or own:R's merges and assembly, modelled "
                                       "(pimrl.energy.host_modelled_seconds; not in "
                                       "pim_total_modelled_s)",
    "_modelled_j": "joules, modelled: PIM's by the energy model (pimrl.pim.energy) from the "
                   "run's modelled ledger and the PrIM host's aggregation; the CPU's as its "
                   "package power times the measured time (pimrl.baselines.energy), where RAPL "
                   "cannot be read (docs/cost-model.md, \"Energy and the host\")",
    "_measured_j": "joules, measured on the worker: the CPU's through RAPL's package counters, "
                   "the GPU's (one run: copies, kernel, average) through NVML's board energy "
                   "counter over a window of at least a second of runs (pimrl.baselines.nvml)",
    "gpu_energy_status": "'measured: ...' (the board and the window) or 'not measured: "
                         "<reason>' (no figure is invented)",
    "_energy_to_quality_modelled_j": "the energy of the run up to its time to quality (PIM: "
                                     "the ledger walked up to it; CPU: package power times "
                                     "the measured time to quality); empty if not reached",
    "pim_simulation_wall_measured_s": "wall clock of the simulator itself (not a PIM time); "
                                      "a worker's first row includes numba compilation",
    "pim_updates_per_s_modelled": "Q-updates per modelled second of the whole PIM run",
    "_updates_per_s_measured": "Q-updates per measured second",
    "success_rate": "exact probability that the aggregated greedy policy reaches the goal",
    "mean_return": "exact expected undiscounted return of the aggregated greedy policy",
    "optimal_": "the same for the optimal policy (value iteration, same gamma)",
    "quality_round": "first round whose greedy policy reaches the optimum within tolerance "
                     "(pimrl.experiments.quality); empty if none",
    "time_to_quality_modelled_s": "modelled time of the run up to that round, plus the "
                                  "table gather that stopping there needs (modelled)",
    "quality_curve": "per round: modelled_s:mean_return:success_rate, '|'-separated",
    "cpu_1t": "CPU baseline, 1 thread, one partition (the whole dataset in order)",
    "cpu_mt": "CPU baseline, cpu_threads threads, cpu_partitions partitions averaged",
    "cpu_c_": "the same CPU baseline written in plain C (kernels/cpu_loop.c; baselines.c_loop)",
    "_quality_epoch": "first epoch whose greedy policy reaches the optimum within tolerance "
                      "(baselines.cpu_quality: the CPU run one epoch at a time); empty if none",
    "_epochs_run": "passes the CPU baseline ran (baselines.cpu_quality: until the optimum, at "
                   "most epochs); its time and updates/s are those of these passes, and the C "
                   "loop at that thread count runs as many",
    "_time_to_quality_measured_s": "measured training time up to that epoch (evaluation "
                                   "excluded)",
    "peak_rss_measured_bytes": "peak resident memory of the process that ran the row, so far "
                               "(VmHWM; measured)",
    "gpu_status": "'measured: <device>' or 'not measured: <reason>' (no figure is invented)",
    "worker": "the process that ran the PIM simulation and evaluation ('local', or a Dask "
              "worker's address listed in meta.json's session)",
    "baseline_worker": "the process that measured the CPU/GPU baselines (as worker)",
    "session": "index in meta.json's sessions of the run that computed the row (its machine)",
}
