"""Figures of the online study from data/*.json (run.sh and study.py write them):

    python experiments/online/plot.py      -> experiments/online/figures/*.png
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).parent
DATA, FIG = HERE / "data", HERE / "figures"


def load(name):
    p = DATA / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def time_to_quality():
    runs = [(n, load(n)) for n in ("taxi", "frozenlake8x8")]
    runs = [(n, d) for n, d in runs if d]
    if not runs:
        return
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4))
    axes = axes if len(runs) > 1 else [axes]
    for ax, (name, d) in zip(axes, runs):
        t = [r["modelled_s"] * 1e3 for r in d["rounds"]]
        key = "mean_return" if name == "taxi" else "success_rate"
        ax.plot(t, [r[key] for r in d["rounds"]], "o-", label="aggregate's greedy policy (exact)")
        ax.axhline(d["evaluation"][f"optimal_{key}"], color="k", ls="--", label="optimum (exact)")
        if d["time_to_quality_modelled_s"] is not None:
            ax.axvline(d["time_to_quality_modelled_s"] * 1e3, color="g", ls=":",
                       label="time to quality")
        ax.set_xlabel("modelled time (ms, cumulative, all phases)")
        ax.set_ylabel(key.replace("_", " "))
        ax.set_title(f"{d['env_id']}: {d['dpus']} DPUs, online, {d['aggregate']}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "online_time_to_quality.png", dpi=110)


def throughput():
    runs = [load(n) for n in ("taxi", "frozenlake8x8")]
    runs = [d for d in runs if d]
    if not runs:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    labels, x = [], 0
    for d in runs:
        vals = [("DPUs, all phases (modelled)", d["env_steps_per_modelled_s"]),
                ("DPUs, kernel only (modelled)", d["kernel_env_steps_per_modelled_s"]),
                (f"CPU, {d['cpu_baseline']['threads']} threads (measured)",
                 d["cpu_baseline"]["env_steps_per_measured_s"])]
        for i, (lab, v) in enumerate(vals):
            ax.bar(x + i, v / 1e6, color=f"C{i}", label=lab if x == 0 else None)
            ax.text(x + i, v / 1e6, f"{v / 1e6:.0f}", ha="center", va="bottom", fontsize=8)
        labels.append((x + 1, d["env_id"]))
        x += 4
    ax.set_xticks([p for p, _ in labels], [n for _, n in labels])
    ax.set_ylabel("environment steps per second (millions)")
    ax.set_yscale("log")
    ax.set_title(f"Online learning, {runs[0]['dpus']} DPUs x {runs[0]['tasklets']} tasklets vs CPU, same work")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "online_throughput.png", dpi=110)


def independent():
    d = load("lakes2000")
    if not d:
        return
    a = d["agents_result"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar([i / 10 + 0.05 for i in range(10)], a["success_ratio_histogram"], width=0.09)
    ax.set_xlabel("success rate / own map's optimum (exact; ratios above 1 in the last bin)")
    ax.set_ylabel("agents")
    ax.set_title(f"{a['agents']} independent agents, one seeded 8x8 lake each "
                 f"({a['optimal_agents']} optimal)")
    fig.tight_layout()
    fig.savefig(FIG / "online_independent_agents.png", dpi=110)


def weak():
    rows = load("weak_scaling")
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    n = [r["dpus"] for r in rows]
    for key, lab in (("dpu_kernel", "DPU kernel"), ("cpu_dpu", "CPU-DPU"), ("dpu_cpu", "DPU-CPU")):
        ax.plot(n, [r["modelled_s"][key] * 1e3 for r in rows], "o-", label=lab)
    ax.plot(n, [r["modelled_total_s"] * 1e3 for r in rows], "k*-", label="total")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("DPUs (one agent and one lake each)")
    ax.set_ylabel("modelled time (ms)")
    ax.set_title(f"Independent agents, weak scaling ({rows[0]['steps_per_dpu']} steps per DPU)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "online_weak_scaling.png", dpi=110)


def vs_offline():
    rows = load("online_vs_offline")
    if not rows:
        return
    envs = sorted({r["env_id"] for r in rows})
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4))
    for ax, env in zip(axes, envs):
        for mode, m in (("online", "o-"), ("offline", "s--")):
            rs = [r for r in rows if r["env_id"] == env and r["mode"] == mode]
            ax.plot([r["samples"] for r in rs], [r["success_rate"] for r in rs], m,
                    label=f"{mode} ({'steps on the DPUs' if mode == 'online' else 'random-policy dataset pushed'})")
        opt = [r["optimal_success_rate"] for r in rows if r["env_id"] == env][0]
        ax.axhline(opt, color="k", ls=":", label="optimum")
        ax.set_xscale("log")
        ax.set_xlabel("samples (environment steps or transitions)")
        ax.set_ylabel("success rate (exact)")
        ax.set_title(f"{env}, {rows[0]['dpus']} DPUs, sync:10:weighted")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIG / "online_vs_offline.png", dpi=110)


if __name__ == "__main__":
    FIG.mkdir(exist_ok=True)
    for f in (time_to_quality, throughput, independent, weak, vs_offline):
        f()
    print("\n".join(str(p) for p in sorted(FIG.glob("online_*.png"))))
