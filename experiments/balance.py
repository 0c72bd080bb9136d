"""The balance: where the host, not the DPUs, sets the pace (all times modelled).

One question: as the DPU count grows, each DPU's share of the updates shrinks, but the
host's work between and after the launches (averaging N tables, or own:R's merges) grows
with N. At what DPU count does the host's modelled time pass the DPUs' modelled kernel time,
and how many DPUs is that per host core, for 1, 2, 4, 8, 16 and 32 host threads?

    python experiments/balance.py            # about a minute on 2 cores
    # writes experiments/balance/balance.md, balance.csv and balance.png

The workload is the scale study's (experiments/scale.toml, "data" sweep at 1 Mi): Taxi-v3,
1,048,576 uniformly random transitions, 20 passes, Q-learning INT32 SEQ, 16 tasklets in
mode rows, on the upmem-2560 preset (40 full ranks; 2,560 DPUs), for

- ``mean``: SwiftRL's scheme, 20 passes on every DPU, one average at the end;
- ``own:20``: state-owned learning, a round a pass (19 merges, then the assembly);
- ``online``: online Q-learning (INT32), shared agent, ``sync:20``, as many environment
  steps in all as the offline schemes' updates (20 Mi), split over the DPUs.

How the times are obtained, DPU count by DPU count (64 to 2,560):

1. A tiny real simulation of each scheme on the simulator: offline with the whole 1 Mi
   dataset but ONE pass a round (``mean`` with 1 epoch; ``own:2`` with 2 epochs), online
   ``sync:2`` with 1,024 steps a DPU. Its ledger gives the cost model's phase times: the
   kernel time of a launch per pass (per step online), the launch and sync latencies, the
   first push (``cpu_dpu``), one round's exchange (``inter_dpu``) and the last gather
   (``dpu_cpu``). The kernel time per pass is the slowest DPU's, from the modelled cycles
   of its real partition, so the layout effects of mode rows at that DPU count are in it.
2. Scaled to the full run: kernel = passes (steps) x kernel per pass (step) + launches x
   latency; transfers = first push + (rounds - 1) x one round's exchange + last gather
   (each is independent of the passes in a round; pimrl.pim.cost priced them).
3. The host, from pimrl.pim.host's model of the PrIM server's host (2 x Xeon Silver 4215:
   per-core rate one table entry a cycle at 2.5 GHz, 76.8 GB/s shared): ``mean`` and
   ``online`` average N tables of S*A entries each round (``host_aggregation_seconds``);
   ``own:20`` merges the gathered rows and builds V between rounds, then assembles the table
   (``host_owned_seconds``). For 32 threads the host is a what-if one with 32 cores of the
   same kind and the same memory bandwidth (the PrIM host has 16).

End-to-end time = transfers + kernel + host: the DPUs wait while the host works (the
ledger's ``modelled_total_s`` leaves the host out; here it is added). The host becomes the
bottleneck at the first DPU count of the grid where its time exceeds the DPU kernel time;
where that does not happen by 2,560 DPUs the crossover is extrapolated from the last two grid
points (host ~ N^a, kernel ~ N^b, a power law each) and said to be extrapolated (past ten
times the grid's end, only "beyond" that is said). The ratio
reported is that DPU count over the host threads (cores) used.
"""
from __future__ import annotations

import argparse
import csv
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

DPU_COUNTS = (64, 128, 256, 384, 512, 640, 768, 1024, 1280, 1536, 1792, 2048, 2304, 2560)
HOST_THREADS = (1, 2, 4, 8, 16, 32)
SCHEMES = ("mean", "own", "online")
OUT = Path(__file__).resolve().parent / "balance"


# ----------------------------------------------------------------------------- the crossover
def crossover(dpus, host_s, kernel_s):
    """The first DPU count of ``dpus`` (ascending) whose host time exceeds its kernel time,
    or None if none does."""
    for n, h, k in zip(dpus, host_s, kernel_s):
        if h > k:
            return n
    return None


def extrapolated_crossover(dpus, host_s, kernel_s):
    """Where host and kernel time would meet past the grid: a power law through each one's
    last two points (log-log), solved for their intersection; None if they do not meet."""
    (n0, n1), (h0, h1), (k0, k1) = dpus[-2:], host_s[-2:], kernel_s[-2:]
    a = math.log(h1 / h0) / math.log(n1 / n0)
    b = math.log(k1 / k0) / math.log(n1 / n0)
    if a <= b:
        return None
    return n1 * math.exp(math.log(k1 / h1) / (a - b))


#: Extrapolations past this many times the largest DPU count are reported as "beyond" it.
EXTRAPOLATE_AT_MOST = 10


# ----------------------------------------------------------------------------- the phases
def _launch_split(ledger):
    """(seconds of the launches' modelled cycles, seconds of their latencies, launches)."""
    launch = [e["modelled_s"] for e in ledger.events if e["what"].startswith("launch ")]
    latency = [e["modelled_s"] for e in ledger.events if e["what"].startswith("latency")]
    return sum(launch), sum(latency), len(launch)


def offline_phases(records, env, n, scheme, hardware):
    """Modelled phases of one pass on ``n`` DPUs, from a run of one pass a round:
    ``mean`` with 1 epoch, ``own`` as ``own:2`` with 2 epochs (for one round's exchange)."""
    from pimrl.learners.params import LearnerParams
    from pimrl.swiftrl.trainer import PimTrainer

    tiny_rounds = 1 if scheme == "mean" else 2
    params = LearnerParams(dtype="int32", sampling="seq", epochs=tiny_rounds,
                           alpha=0.1, gamma=0.95, tasklet_mode="rows")
    tr = PimTrainer(params, n_dpus=n, tasklets=16, hardware=hardware,
                    aggregate="mean" if scheme == "mean" else f"own:{tiny_rounds}")
    tr.fit(records, env.n_states, env.n_actions)
    m = tr.timings_.modelled_s
    cycles_s, latency_s, launches = _launch_split(tr.timings_)
    return {"kernel_per_unit_s": cycles_s / tiny_rounds,      # one pass in each launch
            "latency_per_launch_s": latency_s / launches,
            "first_push_s": m["cpu_dpu"], "exchange_s": m["inter_dpu"] / max(tiny_rounds - 1, 1),
            "last_gather_s": m["dpu_cpu"],
            "out_words": (2 * env.n_actions + int(tr.plan_.longest_range)
                          if scheme != "mean" else None)}


def online_phases(env, n, hardware, tiny_steps=1024):
    """Modelled phases of one environment step a DPU on ``n`` DPUs, from a ``sync:2`` run
    of ``tiny_steps`` steps a DPU."""
    from pimrl.online.params import OnlineParams
    from pimrl.online.trainer import OnlineTrainer

    tr = OnlineTrainer(OnlineParams(dtype="int32", alpha=0.1, gamma=0.95), n_dpus=n,
                       tasklets=16, aggregate="sync:2", hardware=hardware)
    tr.fit(env, tiny_steps)
    m = tr.timings_.modelled_s
    cycles_s, latency_s, launches = _launch_split(tr.timings_)
    return {"kernel_per_unit_s": cycles_s / tiny_steps,
            "latency_per_launch_s": latency_s / launches,
            "first_push_s": m["cpu_dpu"], "exchange_s": m["inter_dpu"],
            "last_gather_s": m["dpu_cpu"], "out_words": None}


def full_run(scheme, ph, n, transitions, passes):
    """The full run's kernel and transfer times and its rounds, scaled from ``ph``:
    ``mean`` one round of ``passes`` passes; ``own`` and ``online`` a round a pass; online
    as many environment steps in all as the offline updates, split over the DPUs."""
    rounds = 1 if scheme == "mean" else passes
    units = math.ceil(transitions * passes / n) if scheme.startswith("online") else passes
    return {"kernel_s": units * ph["kernel_per_unit_s"] + rounds * ph["latency_per_launch_s"],
            "transfers_s": (ph["first_push_s"] + (rounds - 1) * ph["exchange_s"]
                            + ph["last_gather_s"]),
            "rounds": rounds, "out_words": ph["out_words"]}


def host_seconds(scheme, run, n, n_states, n_actions, threads):
    """The host's modelled time over the run on ``threads`` threads (cores)."""
    from pimrl.pim.host import PRIM_HOST, host_aggregation_seconds, host_owned_seconds

    host = replace(PRIM_HOST, cores=max(PRIM_HOST.cores, threads))
    if scheme.startswith("own"):
        return host_owned_seconds(host, n, n_states, n_actions, run["out_words"],
                                  run["rounds"], threads)["total_s"]
    return run["rounds"] * host_aggregation_seconds(host, n, n_states * n_actions, threads)


# ----------------------------------------------------------------------------- output
def label(scheme, passes):
    return {"mean": "mean", "own": f"own:{passes}", "online": f"online sync:{passes}"}[scheme]


def plot(rows, crossings, passes_list, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(passes_list), len(SCHEMES), squeeze=False,
                             figsize=(5.0 * len(SCHEMES), 4.2 * len(passes_list)), sharex=True)
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(HOST_THREADS)))
    for i, passes in enumerate(passes_list):
        for ax, scheme in zip(axes[i], SCHEMES):
            rs = [r for r in rows if r["scheme"] == scheme and r["passes"] == passes]
            n = [r["dpus"] for r in rs]
            ax.plot(n, [r["kernel_s"] * 1e3 for r in rs], "k-", lw=2.4, label="DPU kernel")
            ax.plot(n, [r["transfers_s"] * 1e3 for r in rs], "--", color="0.5", lw=1.2,
                    label="host-DPU transfers")
            for c, t in zip(colours, HOST_THREADS):
                ax.plot(n, [r[f"total_t{t}_s"] * 1e3 for r in rs], "-", color=c, lw=1.4,
                        label=f"end to end, {t} host thread{'s' * (t > 1)}")
                ax.plot(n, [r[f"host_t{t}_s"] * 1e3 for r in rs], ":", color=c, lw=1.3)
                x = crossings[(scheme, passes)][t]["dpus"]
                if x is not None:
                    ax.plot([x], [rs[n.index(x)][f"host_t{t}_s"] * 1e3], "o", color=c, ms=7,
                            mec="k", zorder=5)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ticks = [64, 128, 256, 512, 1024, 2560]
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(v) for v in ticks])
            ax.minorticks_off()
            ax.set_title(f"{label(scheme, passes)}, {passes} pass{'es' * (passes > 1)} "
                         "(modelled)", fontsize=10)
            ax.grid(True, alpha=0.3)
            if i == len(passes_list) - 1:
                ax.set_xlabel("DPUs")
        axes[i][0].set_ylabel("time, ms (modelled)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.suptitle("The balance (all modelled): end-to-end time (solid), host time (dotted, "
                 "same colour), DPU kernel (black), transfers (grey dashed); o = first DPU count where host > kernel",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def crossing_cell(c, t):
    if c["dpus"] is not None:
        return f"{c['dpus']:,} | {c['dpus'] / t:,.0f}"
    far = EXTRAPOLATE_AT_MOST * DPU_COUNTS[-1]
    if c["extrapolated"] is not None and c["extrapolated"] > far:
        return f"not by {DPU_COUNTS[-1]:,} (beyond {far:,}, extrapolated) | > {far / t:,.0f}"
    if c["extrapolated"] is not None:
        return (f"not by {DPU_COUNTS[-1]:,} (~{c['extrapolated']:,.0f} extrapolated) | "
                f"~{c['extrapolated'] / t:,.0f} (extrapolated)")
    return "never (host grows no faster than the kernel shrinks) | -"


def markdown(rows, crossings, passes_list, args, wall_s):
    lines = ["# The balance: host cores per DPU (all times modelled)", "",
             f"Taxi-v3, {args.transitions:,} uniformly random transitions, Q-learning INT32 SEQ, "
             f"16 tasklets (mode rows), {args.hardware}; {' and '.join(map(str, passes_list))} "
             "passes (own:R and online sync:R: a round a pass; online: as many environment "
             "steps in all as the offline updates). Host: the PrIM server's "
             "(pimrl.pim.host.PRIM_HOST, 16 cores, 76.8 GB/s); 32 threads is a what-if 32-core "
             "host of the same cores and bandwidth. Written by `python experiments/balance.py` "
             f"in {wall_s:.0f} s (measured, 2 shared vCPUs). Method: the script's docstring.",
             "", "## Where the host becomes the bottleneck (host time > DPU kernel time, "
             "modelled)", "",
             "| scheme | passes | host threads | first DPU count | DPUs per host core |",
             "|---|---:|---:|---:|---:|"]
    for passes in passes_list:
        for scheme in SCHEMES:
            for t in HOST_THREADS:
                lines.append(f"| {label(scheme, passes)} | {passes} | {t} | "
                             f"{crossing_cell(crossings[(scheme, passes)][t], t)} |")
    lines += ["", "## Phase times, ms (modelled)", ""]
    head = ("| scheme | passes | DPUs | kernel | transfers | "
            + " | ".join(f"host {t}t" for t in HOST_THREADS)
            + " | end to end 1t | end to end 16t |")
    lines += [head, "|---|---:|---:|" + "---:|" * (4 + len(HOST_THREADS))]
    for r in rows:
        lines.append(f"| {label(r['scheme'], r['passes'])} | {r['passes']} | {r['dpus']:,} | "
                     f"{r['kernel_s'] * 1e3:.3f} | {r['transfers_s'] * 1e3:.3f} | "
                     + " | ".join(f"{r[f'host_t{t}_s'] * 1e3:.3f}" for t in HOST_THREADS)
                     + f" | {r['total_t1_s'] * 1e3:.3f} | {r['total_t16_s'] * 1e3:.3f} |")
    lines += ["", "![the balance, modelled](balance.png)", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--transitions", type=int, default=1 << 20)
    ap.add_argument("--passes", default="1,20", help="comma list of passes (default 1,20)")
    ap.add_argument("--hardware", default="upmem-2560")
    ap.add_argument("--dpus", default=",".join(map(str, DPU_COUNTS)))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from pimrl.data import generate_dataset
    from pimrl.envs import make

    t0 = time.perf_counter()
    env = make("Taxi-v3")
    records = generate_dataset(env, args.transitions, 0)
    counts = [int(x) for x in args.dpus.split(",")]
    passes_list = [int(x) for x in args.passes.split(",")]
    rows = []
    for n in counts:
        for scheme in SCHEMES:                 # one tiny simulation each, all passes from it
            ph = (online_phases(env, n, args.hardware) if scheme == "online"
                  else offline_phases(records, env, n, scheme, args.hardware))
            for passes in passes_list:
                run = full_run(scheme, ph, n, args.transitions, passes)
                row = {"scheme": scheme, "passes": passes, "dpus": n,
                       "kernel_s": run["kernel_s"], "transfers_s": run["transfers_s"]}
                for t in HOST_THREADS:
                    h = host_seconds(scheme, run, n, env.n_states, env.n_actions, t)
                    row[f"host_t{t}_s"] = h
                    row[f"total_t{t}_s"] = run["transfers_s"] + run["kernel_s"] + h
                rows.append(row)
        print(f"  {n:5d} DPUs simulated ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows.sort(key=lambda r: (r["passes"], SCHEMES.index(r["scheme"]), r["dpus"]))
    crossings = {}
    for passes in passes_list:
        for scheme in SCHEMES:
            rs = [r for r in rows if r["scheme"] == scheme and r["passes"] == passes]
            n, k = [r["dpus"] for r in rs], [r["kernel_s"] for r in rs]
            crossings[(scheme, passes)] = {}
            for t in HOST_THREADS:
                h = [r[f"host_t{t}_s"] for r in rs]
                first = crossover(n, h, k)
                crossings[(scheme, passes)][t] = {
                    "dpus": first,
                    "extrapolated": None if first is not None else extrapolated_crossover(n, h, k)}
    wall = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "balance.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, crossings, passes_list, args.out / "balance.png")
    text = markdown(rows, crossings, passes_list, args, wall)
    (args.out / "balance.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
