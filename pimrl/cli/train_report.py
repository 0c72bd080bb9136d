"""``pimrl train``'s report for people: the scaling table of a list of DPU counts, the
PrIM time categories of each run (modelled or measured), energy, quality and memory."""
from __future__ import annotations


def scaling_table(runs):
    """Speedup and parallel efficiency of the modelled total time against the first run."""
    base = runs[0]
    rows = []
    for r in runs:
        speedup = base["modelled_total_s"] / r["modelled_total_s"]
        kernel_speedup = base["modelled_s"]["dpu_kernel"] / r["modelled_s"]["dpu_kernel"]
        ideal = r["dpus"] / base["dpus"]
        rows.append({"dpus": r["dpus"], "speedup": speedup, "ideal": ideal,
                     "efficiency": speedup / ideal, "kernel_speedup": kernel_speedup,
                     "kernel_efficiency": kernel_speedup / ideal,
                     "transfer_share": 1 - r["modelled_s"]["dpu_kernel"] / r["modelled_total_s"]})
    return rows


def explain_scaling(runs, rows) -> list:
    """Sentences saying where the modelled scaling departs from linear, read off the figures."""
    first, last = runs[0], runs[-1]
    lines = []
    k0, k1 = first["modelled_s"]["dpu_kernel"], last["modelled_s"]["dpu_kernel"]
    ideal = last["dpus"] / first["dpus"]
    lines.append(f"DPU kernel: {k0 * 1e3:.3f} -> {k1 * 1e3:.3f} ms, {k0 / k1:.1f}x for {ideal:.0f}x "
                 f"the DPUs (the slowest DPU bounds each launch; partitions shrink from "
                 f"{first['max_partition']} to {last['max_partition']} transitions).")
    for cat, why in (("cpu_dpu", "each DPU's share shrinks into the small-transfer region of the "
                      "bandwidth curve, where a push costs about the same whatever its size"),
                     ("dpu_cpu", "every DPU returns a whole Q-table, so gathered bytes grow with "
                      "the DPU count"),
                     ("inter_dpu", "every round gathers and broadcasts whole Q-tables")):
        a, b = first["modelled_s"][cat], last["modelled_s"][cat]
        if b > 0 and (a == 0 or b > a / ideal * 1.5):
            lines.append(f"{cat.replace('_', '-').upper()}: {a * 1e3:.3f} -> {b * 1e3:.3f} ms, "
                         f"{b / last['modelled_total_s'] * 100:.0f}% of the total at "
                         f"{last['dpus']} DPUs: {why}.")
    worst = min(rows, key=lambda r: r["efficiency"])
    lines.append(f"Parallel efficiency of the total falls to {worst['efficiency'] * 100:.0f}% at "
                 f"{worst['dpus']} DPUs, where transfers take {worst['transfer_share'] * 100:.0f}% "
                 f"of the modelled time.")
    return lines


def _ms(x):
    """Milliseconds in a 10-wide column that always starts with a space, so a label before
    it never runs into a large number ("time to quality 744281.943")."""
    return " " + f"{x * 1e3:.3f}".rjust(9)


PHASES = (("cpu_dpu", "CPU-DPU"), ("dpu_kernel", "DPU kernel"), ("inter_dpu", "Inter-DPU"),
          ("dpu_cpu", "DPU-CPU"))


def time_table(run) -> list:
    """The lines of one run's time table: label, milliseconds, and whether modelled or measured."""
    if "modelled_s" in run:
        m = run["modelled_s"]
        rows = [(label, m[key], "modelled") for key, label in PHASES]
        rows += [("total", run["modelled_total_s"], "modelled"),
                 ("host aggregation", run["measured_s"]["host_aggregation"],
                  "measured (this machine)"),
                 ("simulation", run["measured_s"]["simulation_wall"],
                  "measured (simulator wall clock)")]
    else:                               # real DPUs: the host's wall clock around each phase
        m = run["measured_s"]
        rows = [(label, m.get(key, 0.0), "measured (real DPUs, host wall clock)")
                for key, label in PHASES]
        rows += [("total", run["measured_total_s"], "measured (the four phases)"),
                 ("host aggregation", m["host_aggregation"], "measured (this machine)"),
                 ("run", m["run_wall"], "measured (wall clock, build and setup included)")]
    width = max(len("time category"), *(len(label) for label, _, _ in rows))
    lines = [f"{'time category':<{width}}{'ms':>10}   kind"]
    lines += [f"{label:<{width}}{_ms(value)}   {kind}" for label, value, kind in rows]
    return lines


def print_report(out, params):
    print(f"data      {out['source']}")
    p = params
    print(f"learner   {p.algo} {p.dtype} {p.sampling} epochs={p.epochs} alpha={p.alpha} "
          f"gamma={p.gamma} seed={p.seed}" + (f" (Q{31 - p.frac_bits}.{p.frac_bits})" if p.dtype == "int32" else ""))
    if out["backend"] == "reference":
        rate = out["n_updates"] / out["train_measured_s"]
        print(f"reference learner: {out['n_updates']} updates in {out['train_measured_s']:.3f} s "
              f"measured ({rate / 1e6:.1f} M updates/s, numba compilation included on a first run)")
        sats = out["saturations"]
    elif out["backend"] == "cpu":
        print(f"CPU baseline (numba, {out['threads']} thread{'s' if out['threads'] > 1 else ''}, "
              f"{out['partitions']} partition{'s' if out['partitions'] > 1 else ''}, tables "
              f"averaged): {out['n_updates']} updates")
        print(f"  training      {out['train_measured_s']:.4f} s   measured (compilation excluded"
              f"{', median of ' + str(out['repeats']) if out['repeats'] > 1 else ''})")
        print(f"  averaging     {out['aggregate_measured_s']:.4f} s   measured")
        print(f"  throughput    {out['updates_per_s_measured'] / 1e6:.1f} M updates/s   measured")
        if "energy" in out:
            from pimrl.energy import cpu_energy_text

            print("  " + cpu_energy_text(out))
        sats = out["saturations"]
    elif out["backend"] == "gpu":
        print(f"GPU baseline ({out['device']}; {out['partitions']} partitions x {out['lanes']} "
              f"lanes, the tables averaged on the device): {out['n_updates']} updates")
        if out["measured"]:
            rep = f", median of {out['repeats']}" if out["repeats"] > 1 else ""
            for label, key in (("copies in", "h2d"), ("kernel", "kernel"),
                               ("averaging", "aggregate"), ("copies out", "d2h"),
                               ("total", "total")):
                print(f"  {label:<13} {out[key + '_measured_s']:.4f} s   measured (CUDA events"
                      f"{rep})")
            print(f"  throughput    {out['updates_per_s_measured'] / 1e6:.1f} M updates/s   "
                  "measured")
            if "energy_measured_j" in out:
                print(f"  energy        {out['energy_measured_j']:.4f} J   measured (NVML)")
        else:
            print("  not timed: numba's CUDA simulator computes the tables, never GPU times")
        sats = out["saturations"]
    else:
        for r in out["runs"]:
            print(f"\nPIM, {r['dpus']} DPUs x {r['tasklets']} tasklets ({r['tasklet_mode']}) on "
                  f"{r['hardware']}, aggregate {r['aggregate']}, {r['kernel']} kernel")
            if r["tasklet_mode"] == "unlocked":
                print("  unlocked: the table is the ring's; on hardware, "
                      + (f"{r['conflicts']} updates of an entry overlap another tasklet's "
                         "(could be lost)" if r["conflicts"] is not None else
                         "conflicts are counted by the numba kernel only"))
            if "windows" in r:
                w = r["windows"]
                print(f"  records streamed through each DPU's MRAM: {w['windows_per_epoch']} "
                      f"windows per epoch of up to {w['window_records']:,} records "
                      f"({w['window_bytes'] / 2**20:.2f} MiB)" + (
                          "; STR gathered by the host, read in sequence"
                          if w["dpu_sampling"] else ""))
            for line in time_table(r):
                print("  " + line)
            if "energy" in r:               # reports from before energy have none
                from pimrl.energy import pim_energy_text

                print("  " + pim_energy_text(r))
            if "worker_transfers" in r:
                w = r["worker_transfers"]
                print(f"  {'worker traffic':<16}{_ms(w['transfer_measured_s'])}   measured: "
                      f"{(w['to_workers_bytes'] + w['from_workers_bytes']) / 1e6:.1f} MB between "
                      f"this process and {len(w['workers'])} Dask workers (not a PIM time)")
                print(f"  {'worker launches':<16}{_ms(w['launch_measured_s'])}   measured: the "
                      f"workers' simulation of the launches (DPUs per worker: "
                      f"{', '.join(map(str, w['dpus_per_worker']))})")
            if "quality_round" in r:
                rounds = len(r["rounds"])
                if r["quality_round"] is None:
                    print(f"  time to quality: not reached in {rounds} round{'s' * (rounds > 1)} "
                          f"({r['quality_tolerance']})")
                else:
                    kind = "modelled" if "time_to_quality_modelled_s" in r else "measured"
                    print(f"  time to quality{_ms(r[f'time_to_quality_{kind}_s'])}   {kind} "
                          f"(round {r['quality_round']} of {rounds}; {r['quality_tolerance']})")
        sats = out["runs"][-1]["saturations"]
        if "scaling" in out:
            print("\nModelled strong scaling (total time, against the first DPU count), with the "
                  "greedy policy's success rate (exact):")
            print("   DPUs  total ms   speedup   ideal  efficiency  kernel eff.  transfers  success")
            for r, row in zip(out["runs"], out["scaling"]):
                ok = f"{r['evaluation']['success_rate']:8.3f}" if "evaluation" in r else "       -"
                print(f"  {row['dpus']:5d}{_ms(r['modelled_total_s'])}  {row['speedup']:8.2f}  "
                      f"{row['ideal']:6.1f}  {row['efficiency'] * 100:9.1f}%  "
                      f"{row['kernel_efficiency'] * 100:10.1f}%  {row['transfer_share'] * 100:8.1f}% {ok}")
            for line in explain_scaling(out["runs"], out["scaling"]):
                print("  " + line)
    if params.dtype == "int32":
        print(f"fixed-point saturations: {sats}" + ("" if sats == 0 else "  (values clipped to the int32 range)"))
    if "evaluation" in out:
        e = out["evaluation"]
        which = f", table of the {out['q_from_dpus']}-DPU run" if "scaling" in out else ""
        print(f"\ngreedy policy on {out['env_id']} (exact, horizon {e.get('horizon')} steps{which}):")
        print(f"  success rate {e['success_rate']:.4f}   (optimal {e['optimal_success_rate']:.4f})")
        print(f"  mean return  {e['mean_return']:.4f}   (optimal {e['optimal_mean_return']:.4f})")
    if out.get("peak_rss_measured_bytes") is not None:
        print(f"\npeak memory {out['peak_rss_measured_bytes'] / 2**30:.2f} GiB   measured (the "
              f"process's peak resident set, VmHWM)" + (
                  f"; {out['memory_plan']['total_planned_bytes'] / 2**30:.2f} GiB planned"
                  if "memory_plan" in out else ""))
    if "saved_q" in out:
        which = f" (the {out['q_from_dpus']}-DPU run)" if "scaling" in out else ""
        print(f"Q-table written to {out['saved_q']}{which}")
    if "saved_policy" in out:
        which = f" (the {out['q_from_dpus']}-DPU run)" if "scaling" in out else ""
        print(f"greedy policy written to {out['saved_policy']}{which} (pimrl.policy.load_policy, "
              "or numpy.load)")
