"""The tasks of a ``pimrl scale`` sweep, one function each, run on a worker (or here, for
the local executor): a row's PIM run and the exact quality of its policy (:func:`pim_task`),
its CPU baselines (:func:`cpu_task`) and its GPU baseline (:func:`gpu_task`). Each returns
``{"columns": ..., "worker": ...}``: the row's result columns it fills and who ran it.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from pimrl.experiments.config import learner_params
from pimrl.memplan import peak_rss_bytes


# Tasks run in a worker process (or here, for the local executor). Each keeps a small cache
# of environments and datasets so that rows of one environment on one worker share them.
_ENVS: dict = {}
_DATASETS: "OrderedDict" = OrderedDict()
_DATASETS_KEPT = 4


def _env(env_id):
    from pimrl.envs import make

    if env_id not in _ENVS:
        _ENVS[env_id] = make(env_id)
    return _ENVS[env_id]


def _dataset(run, need: int):
    """The run's records: the prefix of its environment's dataset of ``need`` transitions."""
    from pimrl.data import generate_dataset

    k = (run["env"], int(run["seed"]), run["data_policy"], int(need))
    if k not in _DATASETS:
        _DATASETS[k] = generate_dataset(_env(run["env"]), int(need), int(run["seed"]),
                                        policy=run["data_policy"])
        while len(_DATASETS) > _DATASETS_KEPT:
            _DATASETS.popitem(last=False)
    _DATASETS.move_to_end(k)
    return _DATASETS[k][: int(run["n_transitions"])]


def _quality(env, q, gamma):
    from pimrl.envs import evaluate_against_optimum

    return evaluate_against_optimum(env, q, gamma)


#: Wall-clock seconds between a sweep row's checkpoints (:func:`row_checkpoint`).
ROW_CHECKPOINT_S = 60.0


def row_checkpoint(folder, run: dict, need: int, every_s: float | None = None):
    """The checkpoint of a sweep row's PIM run in ``folder``: written at the first round
    boundary ``every_s`` seconds (default :data:`ROW_CHECKPOINT_S`) after the last (not at
    the end: the row's results go to results.csv), resumed from where one of the same row
    and pimrl version is there (one of another is discarded: the row starts again)."""
    import shutil

    from pimrl import __version__
    from pimrl.checkpoint import FILE, Checkpoint, CheckpointMismatch

    every_s = ROW_CHECKPOINT_S if every_s is None else every_s
    config = {"row": run, "dataset_transitions": int(need), "pimrl version": __version__}
    try:
        return Checkpoint(folder, config=config, resume=(Path(folder) / FILE).is_file(),
                          every_s=every_s, at_end=False)
    except CheckpointMismatch:
        shutil.rmtree(folder, ignore_errors=True)
        return Checkpoint(folder, config=config, every_s=every_s, at_end=False)


def pim_task(run: dict, need: int, numba_threads: int | None = None,
             checkpoint_dir: str | None = None) -> dict:
    """A row's PIM simulation and the exact quality of its policy. ``checkpoint_dir``: the
    row's checkpoint folder (:func:`row_checkpoint`), removed once the row is done; a row
    cut short (Ctrl-C, a kill) goes on from its last checkpoint when the sweep resumes."""
    from pimrl.cluster import worker_facts
    from pimrl.energy import host_modelled_seconds, pim_run_energy
    from pimrl.pim.hardware import get_hardware
    from pimrl.swiftrl.trainer import PimTrainer

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    from pimrl.experiments.quality import curve_text, round_evaluator, time_to_quality

    ck = row_checkpoint(checkpoint_dir, run, need) if checkpoint_dir else None
    resumed = int(ck.state["meta"]["round"]) if ck is not None and ck.state is not None else None
    tr = PimTrainer(params, n_dpus=run["n_dpus"], tasklets=run["tasklets"],
                    aggregate=run["aggregator"], hardware=run["hardware"],
                    on_round=round_evaluator(env, params.gamma), checkpoint=ck).fit(
        records, env.n_states, env.n_actions)
    if ck is not None:
        import shutil

        shutil.rmtree(checkpoint_dir, ignore_errors=True)
    m = tr.timings_.modelled_s
    total = tr.timings_.modelled_total_s
    ev = _quality(env, tr.q_, params.gamma)
    cols = dict(pim_cpu_dpu_modelled_s=m["cpu_dpu"], pim_kernel_modelled_s=m["dpu_kernel"],
                pim_inter_dpu_modelled_s=m["inter_dpu"], pim_dpu_cpu_modelled_s=m["dpu_cpu"],
                pim_total_modelled_s=total, pim_updates=tr.n_updates_,
                pim_updates_per_s_modelled=tr.n_updates_ / total if total > 0 else float("nan"),
                pim_saturations=tr.saturations_,
                pim_conflicts=tr.conflicts_ if params.tasklet_mode == "unlocked" else "",
                pim_host_aggregation_measured_s=tr.timings_.measured_s.get("host_aggregation"),
                pim_host_aggregation_modelled_s=host_modelled_seconds(tr, run["n_dpus"],
                                                                      run["aggregator"]),
                pim_simulation_wall_measured_s=tr.timings_.measured_s.get("simulation_wall"),
                success_rate=ev["success_rate"], mean_return=ev["mean_return"],
                optimal_success_rate=ev["optimal_success_rate"],
                optimal_mean_return=ev["optimal_mean_return"], eval_method=ev["method"],
                eval_horizon=ev["horizon"])
    cols.update(time_to_quality(tr.rounds_), quality_curve=curve_text(tr.rounds_),
                peak_rss_measured_bytes=peak_rss_bytes())
    energy = pim_run_energy(tr, get_hardware(run["hardware"]),
                            {"dpus": run["n_dpus"], "quality_round": cols.get("quality_round"),
                             "time_to_quality_modelled_s": cols.get("time_to_quality_modelled_s")},
                            run["aggregator"])
    cols.update(pim_energy_modelled_j=energy["energy"]["energy_total_modelled_j"],
                pim_energy_to_quality_modelled_j=energy["energy_to_quality_modelled_j"])
    out = {"columns": cols, "worker": facts}
    if resumed is not None:
        out["resumed_from_round"] = resumed
    return out


def cpu_task(run: dict, need: int, threads: int, repeats: int,
             numba_threads: int | None = None, c_loop: bool = False,
             quality: bool = False) -> dict:
    """The CPU baselines (1 thread, and ``threads`` threads) of a row's data and learner;
    with ``c_loop`` the plain-C loop at both thread counts too; with ``quality`` the numba
    baselines run one epoch at a time, evaluated after each (evaluation off the clock), and
    stop at the first within tolerance of the optimum: their times and updates/s are those
    of the epochs run, and the C loop runs as many."""
    from pimrl.baselines.cpu import cpu_baseline, cpu_time_to_quality
    from pimrl.baselines.energy import cpu_energy
    from pimrl.energy import cpu_run_energy
    from pimrl.cluster import worker_facts
    from pimrl.learners.params import LearnerParams
    from pimrl.learners.reference import check_records

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    S, A = env.n_states, env.n_actions
    cols = {"cpu_threads": threads}
    epochs_run = {"1t": params.epochs, "mt": params.epochs}
    if quality:
        from pimrl.experiments.quality import round_evaluator

        check_records(records, S, A, params)
        evaluate = round_evaluator(env, params.gamma)
        for tag, n in (("1t", 1), ("mt", threads)):
            res = cpu_time_to_quality(records, S, A, params, evaluate, threads=n,
                                      stop_at_quality=True)
            ev = _quality(env, res["q"], params.gamma)
            epochs_run[tag] = res["epochs_run"]
            energy, _ = cpu_energy(res["seconds"], 0.0)
            ttq_s = res["time_to_quality_measured_s"]
            if tag == "mt":
                cols["cpu_mt_energy_to_quality_modelled_j"] = (
                    None if ttq_s is None else cpu_energy(ttq_s, 0.0)[0][
                        "energy_total_modelled_j"])
            cols.update({f"cpu_{tag}_energy_modelled_j": energy["energy_total_modelled_j"],
                         f"cpu_{tag}_measured_s": res["seconds"],
                         f"cpu_{tag}_updates_per_s_measured":
                             len(records) * res["epochs_run"] / res["seconds"],
                         f"cpu_{tag}_epochs_run": res["epochs_run"],
                         f"cpu_{tag}_success_rate": ev["success_rate"],
                         f"cpu_{tag}_mean_return": ev["mean_return"],
                         f"cpu_{tag}_quality_epoch": res["quality_epoch"],
                         f"cpu_{tag}_time_to_quality_measured_s":
                             res["time_to_quality_measured_s"]})
        cols["cpu_partitions"] = threads
    else:
        one = cpu_baseline(records, S, A, params, threads=1, repeats=repeats)
        multi = cpu_baseline(records, S, A, params, threads=threads, repeats=repeats,
                             check=False)
        e1 = _quality(env, one.q, params.gamma)
        em = _quality(env, multi.q, params.gamma)
        for tag, res in (("1t", one), ("mt", multi)):
            for key, joules in cpu_run_energy(res)["energy"].items():
                if key.startswith("energy_total_"):     # modelled, or measured by RAPL
                    cols[f"cpu_{tag}_energy_{key.rsplit('_', 2)[1]}_j"] = joules
        cols.update({
            "cpu_partitions": multi.partitions,
            "cpu_1t_measured_s": one.seconds, "cpu_1t_updates_per_s_measured": one.updates_per_s,
            "cpu_mt_measured_s": multi.seconds,
            "cpu_mt_updates_per_s_measured": multi.updates_per_s,
            "cpu_1t_success_rate": e1["success_rate"], "cpu_1t_mean_return": e1["mean_return"],
            "cpu_mt_success_rate": em["success_rate"], "cpu_mt_mean_return": em["mean_return"]})
    if c_loop:
        from pimrl.baselines.c_loop import run_c_loop

        for tag, n in (("1t", 1), ("mt", threads)):
            same = LearnerParams(**{**params.as_dict(), "epochs": epochs_run[tag]})
            c = run_c_loop(records, S, A, same, partitions=n, threads=n, repeats=repeats)
            cols[f"cpu_c_{tag}_measured_s"] = c["train_measured_s"]
            cols[f"cpu_c_{tag}_updates_per_s_measured"] = (len(records) * epochs_run[tag]
                                                           / c["train_measured_s"])
    return {"columns": cols, "worker": facts}


def gpu_task(run: dict, need: int, parts: int, lanes: int, threads_per_block: int, repeats: int,
             gpu_status: str, numba_threads: int | None = None) -> dict:
    """The GPU baseline of a row's data and learner (CUDA events)."""
    from pimrl.baselines.gpu import gpu_baseline
    from pimrl.cluster import worker_facts

    facts = worker_facts(numba_threads)
    env, records, params = _env(run["env"]), _dataset(run, need), learner_params(run)
    g = gpu_baseline(records, env.n_states, env.n_actions, params, partitions=parts, lanes=lanes,
                     threads_per_block=threads_per_block, repeats=repeats, check=False)
    eg = _quality(env, g.q, params.gamma)
    cols = {"gpu_status": gpu_status, "gpu_partitions": parts, "gpu_lanes": lanes,
            "gpu_h2d_measured_s": g.h2d_seconds, "gpu_kernel_measured_s": g.kernel_seconds,
            "gpu_d2h_measured_s": g.d2h_seconds, "gpu_aggregate_measured_s": g.aggregate_seconds,
            "gpu_total_measured_s": g.seconds, "gpu_updates_per_s_measured": g.updates_per_s,
            "gpu_success_rate": eg["success_rate"], "gpu_mean_return": eg["mean_return"],
            "gpu_energy_measured_j": g.energy_measured_j, "gpu_energy_status": g.energy_status}
    return {"columns": cols, "worker": facts}
