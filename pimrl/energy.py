"""The energy part of ``pimrl train``'s report (docs/cost-model.md, "Energy and the host").

PIM runs (:func:`pim_run_energy`): ``energy`` (the components of
:func:`pimrl.pim.energy.ledger_energy` and their total, modelled), ``host_threads`` and
``host_aggregation_modelled_s``: the PrIM server's host (:data:`pimrl.pim.host.PRIM_HOST`) on
``host_threads`` threads (default: its cores; ``pimrl train --host-threads``) averaging the
DPUs' tables every round (:func:`pimrl.pim.host.host_aggregation_seconds`), or, for ``own:R``,
merging the gathered rows and building V between rounds and assembling the table after the
last (:func:`pimrl.pim.host.host_owned_seconds`). It stands beside the trainers' measured
``host_aggregation`` (this machine) and is the host time the energy counts, for every scheme:
a run's energy depends on nothing measured. Where the run was evaluated round by round,
``energy_to_quality_modelled_j``: the energy of the run up to its time to quality. That energy
is pro-rated on the ledger: its events are walked in order up to the modelled time to quality
(the event that straddles it counted pro rata), and the host's work counts for the rounds
done (own:R: their merges and the assembly that stopping there needs). For ``own:R`` the time of a round before the last includes the gather that
stopping there would cost, which is not in the ledger; its share is priced as the events that
follow it. On real DPUs (measured times) only the whole run's energy is given.

CPU runs (:func:`cpu_run_energy`): measured through RAPL where readable, else modelled
(:func:`pimrl.baselines.energy.cpu_energy`), with ``energy_basis`` saying which.
"""
from __future__ import annotations

from pimrl.pim.energy import energy_line, ledger_energy
from pimrl.pim.host import PRIM_HOST, host_aggregation_seconds, host_owned_seconds


def host_modelled_seconds(tr, n_dpus: int, aggregate: str, threads=None,
                          host=PRIM_HOST, rounds=None) -> float:
    """The host's modelled work of one fitted PIM run (``tr``) over its rounds (``rounds``:
    as if it stopped after that many; default all), on ``threads`` threads of ``host``
    (default: every core): the averaging of every round (mean, weighted, sync:R), or own:R's
    merges between rounds and the assembly of the table when it stops."""
    from pimrl.learners.aggregate import parse_aggregate

    spec = parse_aggregate(aggregate)
    if rounds is None:
        rounds = max(len(getattr(tr, "rounds_", []) or []), 1)
    n_states, n_actions = (int(x) for x in tr.q_.shape)
    if spec.name == "own":
        out_words = 2 * n_actions + int(tr.plan_.longest_range)
        return host_owned_seconds(host, n_dpus, n_states, n_actions, out_words, rounds,
                                  threads)["total_s"]
    # every round averages the DPUs' tables (and, weighted, their visits)
    per = host_aggregation_seconds(host, n_dpus, n_states * n_actions, threads=threads,
                                   bytes_per_entry=8 if spec.needs_visits else 4)
    return per * rounds


def pim_run_energy(tr, hw, run: dict, aggregate: str, host_threads=None) -> dict:
    """The energy keys of one PIM run of ``pimrl train`` (``tr``: the fitted PimTrainer;
    ``run``: its report so far, with ``quality_round`` where evaluated; ``host_threads``:
    the host's threads, default its cores)."""
    n_dpus = int(run["dpus"])
    threads = PRIM_HOST.cores if host_threads is None else int(host_threads)
    agg_s = host_modelled_seconds(tr, n_dpus, aggregate, threads)
    out = {"energy": ledger_energy(tr.timings_, hw, n_dpus, host_aggregation_s=agg_s),
           "host_threads": threads,
           "host_aggregation_modelled_s": agg_s,
           "energy_host_aggregation_time": f"modelled ({PRIM_HOST.name}, {threads} "
                                           f"thread{'s' * (threads > 1)})"}
    if "time_to_quality_modelled_s" in run:
        t_q, r_q = run["time_to_quality_modelled_s"], run.get("quality_round")
        # the host's work of the rounds done (own:R: their merges, and the assembly that
        # stopping there needs, as the time to quality counts the gather)
        out["energy_to_quality_modelled_j"] = None if t_q is None else ledger_energy(
            tr.timings_, hw, n_dpus, until_s=t_q,
            host_aggregation_s=host_modelled_seconds(tr, n_dpus, aggregate, threads,
                                                     rounds=r_q))["energy_total_modelled_j"]
    return out


def cpu_run_energy(res) -> dict:
    """The energy keys of the CPU baseline's report (``res``: a CpuResult)."""
    from pimrl.baselines.energy import cpu_energy

    energy, basis = cpu_energy(res.train_seconds, res.aggregate_seconds, res.energy_measured_j)
    return {"energy": energy, "energy_basis": basis}


def pim_energy_text(run: dict) -> str:
    """One line: the run's energy, its components, and the energy to quality if any."""
    text = energy_line(run["energy"])
    if run.get("energy_to_quality_modelled_j") is not None:
        text += f"; to quality {run['energy_to_quality_modelled_j'] * 1e3:.3f} mJ modelled"
    where = run.get("energy_host_aggregation_time")
    if where and run.get("host_aggregation_modelled_s") is not None:
        where = f"{run['host_aggregation_modelled_s'] * 1e3:.4g} ms {where}"
    return f"energy {text}" + (f"; host aggregation time {where}" if where else "")


def cpu_energy_text(out: dict) -> str:
    total = out["energy"].get("energy_total_measured_j", out["energy"].get("energy_total_modelled_j"))
    kind = "measured" if "energy_total_measured_j" in out["energy"] else "modelled"
    return f"energy        {total:.4f} J   {kind} ({out['energy_basis'].split(': ', 1)[1]})"
