"""The energy part of ``pimrl train``'s report (docs/cost-model.md, "Energy and the host").

PIM runs (:func:`pim_run_energy`): ``energy`` (the components of
:func:`pimrl.pim.energy.ledger_energy` and their total, modelled), ``host_aggregation_modelled_s``
(the PrIM server's host averaging the DPUs' tables, :func:`pimrl.pim.host.host_aggregation_seconds`,
for the averaging aggregators; None for ``own:R``, whose host work is not an average) and,
where the run was evaluated round by round, ``energy_to_quality_modelled_j``: the energy of
the run up to its time to quality. That energy is pro-rated on the ledger: its events are
walked in order up to the modelled time to quality (the event that straddles it counted pro
rata), and the host's aggregation counts for the rounds done. For ``own:R`` the time of a
round before the last includes the gather that stopping there would cost, which is not in the
ledger; its share is priced as the events that follow it. On real DPUs (measured times) only
the whole run's energy is given.

The host's aggregation time in the energy is the modelled one where there is one, else the
one measured on this machine (``own:R``), as ``energy_host_aggregation_time`` says.

CPU runs (:func:`cpu_run_energy`): measured through RAPL where readable, else modelled
(:func:`pimrl.baselines.energy.cpu_energy`), with ``energy_basis`` saying which.
"""
from __future__ import annotations

from pimrl.pim.energy import energy_line, ledger_energy
from pimrl.pim.host import PRIM_HOST, host_aggregation_seconds


def pim_run_energy(tr, hw, run: dict, aggregate: str) -> dict:
    """The energy keys of one PIM run of ``pimrl train`` (``tr``: the fitted PimTrainer;
    ``run``: its report so far, with ``quality_round`` where evaluated)."""
    from pimrl.learners.aggregate import parse_aggregate

    spec = parse_aggregate(aggregate)
    n_dpus = int(run["dpus"])
    rounds = max(len(getattr(tr, "rounds_", []) or []), 1)
    if spec.name == "own":
        modelled_agg = None
    else:               # every round averages the DPUs' tables (and, weighted, their visits)
        per = host_aggregation_seconds(PRIM_HOST, n_dpus, int(tr.q_.size), threads=None,
                                       bytes_per_entry=8 if spec.needs_visits else 4)
        modelled_agg = per * rounds
    measured_agg = float(tr.timings_.measured_s.get("host_aggregation", 0.0))
    agg_s = measured_agg if modelled_agg is None else modelled_agg
    out = {"energy": ledger_energy(tr.timings_, hw, n_dpus, host_aggregation_s=agg_s),
           "host_aggregation_modelled_s": modelled_agg,
           "energy_host_aggregation_time": ("measured (this machine)" if modelled_agg is None
                                            else f"modelled ({PRIM_HOST.name})")}
    if "time_to_quality_modelled_s" in run:
        t_q, r_q = run["time_to_quality_modelled_s"], run.get("quality_round")
        out["energy_to_quality_modelled_j"] = None if t_q is None else ledger_energy(
            tr.timings_, hw, n_dpus, until_s=t_q,
            host_aggregation_s=agg_s * r_q / rounds)["energy_total_modelled_j"]
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
    return f"energy {text}" + (f"; host aggregation time {where}" if where else "")


def cpu_energy_text(out: dict) -> str:
    total = out["energy"].get("energy_total_measured_j", out["energy"].get("energy_total_modelled_j"))
    kind = "measured" if "energy_total_measured_j" in out["energy"] else "modelled"
    return f"energy        {total:.4f} J   {kind} ({out['energy_basis'].split(': ', 1)[1]})"
