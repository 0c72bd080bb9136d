"""``pimrl plot DIR``: figures and a summary table from a ``pimrl scale`` results directory.

Every figure is written as PNG and SVG under ``DIR/figures``; every axis says its unit and
every time series says whether it is *modelled* (PIM cost model) or *measured* (CPU wall
clock, GPU CUDA events). GPU series appear only where the CSV holds measured GPU times.

- ``scaling_<sweep>``: speedup against ideal on log2 axes and parallel efficiency (%), per
  environment; the median over the variants, the band their range. Strong scaling: speedup
  ``T(n0) / T(n)``; weak scaling: scaled speedup ``(n / n0) * T(n0) / T(n)``.
- ``breakdown_<sweep>``: the modelled time in PrIM's four categories per DPU count, stacked
  (seconds, and shares in %).
- ``pim_vs_baselines``: per variant, PIM end-to-end (modelled) at the smallest and largest
  DPU count against the CPU (measured, 1 and N threads) and the GPU (measured, if any).
- ``quality_<sweep>``: the aggregated policy's exact mean return against the DPU count, one
  line per aggregator, with the optimum and the single-threaded CPU learner.
- ``tasklets_<sweep>``: for sweeps over tasklet counts, the modelled DPU-kernel time.
- ``summary.md``: a table per environment and variant at the largest DPU count.
- ``modes_<sweep>.md``: for sweeps over tasklet modes, the modes side by side.

The tables come from :mod:`pimrl.experiments.tables`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from pimrl.experiments.results import load_results
from pimrl.experiments.tables import (
    _default_slice, _num, _sel, _uniq, modes_table, summary_table,
)
from pimrl.io import atomic_savefig, atomic_write_text, ensure_folder

CATS = (("pim_cpu_dpu_modelled_s", "CPU-DPU"), ("pim_kernel_modelled_s", "DPU kernel"),
        ("pim_inter_dpu_modelled_s", "Inter-DPU"), ("pim_dpu_cpu_modelled_s", "DPU-CPU"))
CAT_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52")


def _default_mode(rows):
    """Each sweep's rows of one tasklet mode: pimrl's default where the sweep ran it, else the
    sweep's first (results written before tasklet modes hold the ring's, with no column)."""
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE

    out = []
    for sweep in _uniq(rows, "sweep"):
        sr = _sel(rows, sweep=sweep)
        modes = _uniq(sr, "tasklet_mode")
        keep = DEFAULT_TASKLET_MODE if DEFAULT_TASKLET_MODE in modes else modes[0]
        out += [r for r in sr if r.get("tasklet_mode", "") == keep]
    return out


def _save(fig, figdir: Path, name: str, written: list):
    for ext in ("png", "svg"):
        p = figdir / f"{name}.{ext}"
        atomic_savefig(fig, p, dpi=130 if ext == "png" else None, bbox_inches="tight")
        written.append(str(p))


def _series(rows, envs_rows, col, kind):
    """(dpus, median, lo, hi) of the speedup of ``col`` over the variants."""
    dpus = sorted({int(r["n_dpus"]) for r in envs_rows})
    n0 = dpus[0]
    table = []
    for v in _uniq(envs_rows, "variant"):
        t = {int(r["n_dpus"]): _num(r[col]) for r in _sel(envs_rows, variant=v)}
        if n0 not in t:
            continue
        sp = []
        for d in dpus:
            s = t[n0] / t[d] if d in t and t[d] > 0 else np.nan
            if kind == "weak":
                s *= d / n0
            sp.append(s)
        table.append(sp)
    a = np.array(table, dtype=float)
    return (np.array(dpus), np.nanmedian(a, axis=0), np.nanmin(a, axis=0), np.nanmax(a, axis=0))


def plot_scaling(rows, sweep, figdir, written):
    import matplotlib.pyplot as plt

    sr = _sel(rows, sweep=sweep)
    kind = sr[0]["kind"]
    agg, tasklets = _default_slice(sr)
    sr = _sel(sr, aggregator=agg, tasklets=tasklets)
    envs = _uniq(sr, "env")
    fig, axes = plt.subplots(2, len(envs), figsize=(4.6 * len(envs), 7.2), squeeze=False,
                             sharex=True)
    for j, env in enumerate(envs):
        er = _sel(sr, env=env)
        ax, ax2 = axes[0, j], axes[1, j]
        dpus = None
        for col, label, color in (("pim_total_modelled_s", "PIM end-to-end (modelled)", "C0"),
                                  ("pim_kernel_modelled_s", "DPU kernel only (modelled)", "C1")):
            dpus, med, lo, hi = _series(rows, er, col, kind)
            ax.plot(dpus, med, "o-", color=color, label=label)
            ax.fill_between(dpus, lo, hi, color=color, alpha=0.2)
            ideal = dpus / dpus[0]
            ax2.plot(dpus, 100 * med / ideal, "o-", color=color, label=label)
            ax2.fill_between(dpus, 100 * lo / ideal, 100 * hi / ideal, color=color, alpha=0.2)
        ax.plot(dpus, dpus / dpus[0], "k--", label="ideal (linear)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_title(f"{env}")
        ax.set_ylabel(("speedup" if kind == "strong" else "scaled speedup")
                      + f" over {dpus[0]} DPUs (x)")
        ax.grid(True, which="both", alpha=0.3)
        ax2.axhline(100, color="k", ls="--", lw=1)
        ax2.set_xscale("log", base=2)
        ax2.set_xticks(dpus)
        ax2.set_xticklabels([str(d) for d in dpus], rotation=45)
        ax2.set_xlabel("DPUs (log2 scale)")
        ax2.set_ylabel("parallel efficiency (%)")
        ax2.set_ylim(0, 110)
        ax2.grid(True, alpha=0.3)
        if j == 0:
            ax.legend(fontsize=8, loc="upper left")
    n = sr[0]["n_transitions"] if kind == "strong" else f"{sr[0]['transitions_per_dpu']} per DPU"
    fig.suptitle(f"{'Strong' if kind == 'strong' else 'Weak'} scaling, sweep '{sweep}': "
                 f"{n} transitions, {sr[0]['epochs']} epochs, {tasklets} tasklets, "
                 f"aggregator {agg}\nline: median over {len(_uniq(sr, 'variant'))} variants, "
                 f"band: their range; all PIM times modelled", fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, f"scaling_{sweep}", written)
    plt.close(fig)


def plot_breakdown(rows, sweep, figdir, written):
    import matplotlib.pyplot as plt

    sr = _sel(rows, sweep=sweep)
    agg, tasklets = _default_slice(sr)
    sr = _sel(sr, aggregator=agg, tasklets=tasklets)
    variant = _uniq(sr, "variant")[0]
    sr = _sel(sr, variant=variant)
    envs = _uniq(sr, "env")
    fig, axes = plt.subplots(2, len(envs), figsize=(4.6 * len(envs), 7.2), squeeze=False)
    for j, env in enumerate(envs):
        er = sorted(_sel(sr, env=env), key=lambda r: int(r["n_dpus"]))
        dpus = [r["n_dpus"] for r in er]
        x = np.arange(len(er))
        vals = np.array([[_num(r[c]) for r in er] for c, _ in CATS])
        tot = vals.sum(axis=0)
        for row_i, (ax, data, unit) in enumerate(((axes[0, j], vals * 1e3, "time (ms, modelled)"),
                                                  (axes[1, j], 100 * vals / tot, "share of time (%)"))):
            bottom = np.zeros(len(er))
            for (c, label), color, d in zip(CATS, CAT_COLORS, data):
                ax.bar(x, d, bottom=bottom, color=color, label=label)
                bottom += d
            ax.set_xticks(x)
            ax.set_xticklabels(dpus)
            ax.set_xlabel("DPUs")
            ax.set_ylabel(unit)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0, j].set_title(env)
        if j == 0:
            axes[0, j].legend(fontsize=8)
    fig.suptitle(f"Time breakdown (PrIM's four categories, modelled), sweep '{sweep}': variant "
                 f"{variant}, {er[0]['epochs']} epochs, {tasklets} tasklets, aggregator {agg}",
                 fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, f"breakdown_{sweep}", written)
    plt.close(fig)


def plot_baselines(rows, figdir, written):
    import matplotlib.pyplot as plt

    strong = [r for r in rows if r["kind"] == "strong" and r.get("cpu_1t_measured_s")]
    if not strong:
        return
    sweep = strong[0]["sweep"]
    sr = _sel(strong, sweep=sweep)
    agg, tasklets = _default_slice(sr)
    sr = _sel(sr, aggregator=agg, tasklets=tasklets)
    envs = _uniq(sr, "env")
    dpus = sorted({int(r["n_dpus"]) for r in sr})
    has_gpu = any(_num(r.get("gpu_total_measured_s")) > 0 for r in sr)
    fig, axes = plt.subplots(len(envs), 1, figsize=(13, 3.6 * len(envs)), squeeze=False)
    threads = sr[0]["cpu_threads"]
    series = [(f"PIM {dpus[0]} DPUs, end-to-end (modelled)", "pim", dpus[0], "#4C72B0"),
              (f"PIM {dpus[-1]} DPUs, end-to-end (modelled)", "pim", dpus[-1], "#1F3B73"),
              ("CPU 1 thread (measured)", "cpu_1t_measured_s", None, "#DD8452"),
              (f"CPU {threads} threads (measured)", "cpu_mt_measured_s", None, "#C44E52")]
    if has_gpu:
        series.append((f"GPU {dpus[-1]} threads, kernel + transfers (measured)", "gpu", dpus[-1],
                       "#55A868"))
    for i, env in enumerate(envs):
        ax = axes[i, 0]
        er = _sel(sr, env=env)
        variants = _uniq(er, "variant")
        x = np.arange(len(variants))
        w = 0.8 / len(series)
        for k, (label, col, d, color) in enumerate(series):
            vals = []
            for v in variants:
                vr = _sel(er, variant=v)
                if col == "pim":
                    r = _sel(vr, n_dpus=d)
                    vals.append(_num(r[0]["pim_total_modelled_s"]) if r else np.nan)
                elif col == "gpu":
                    r = _sel(vr, n_dpus=d)
                    vals.append(_num(r[0].get("gpu_total_measured_s")) if r else np.nan)
                else:
                    vals.append(_num(vr[0][col]))
            ax.bar(x + (k - (len(series) - 1) / 2) * w, vals, w, label=label, color=color)
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels(variants, rotation=20, fontsize=8)
        ax.set_ylabel("time (s, log scale)")
        ax.set_title(f"{env}: {er[0]['n_transitions']} transitions x {er[0]['epochs']} epochs")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=8, ncol=3 if has_gpu else 2, loc="upper left")
    gpu_note = "" if has_gpu else "; GPU: not measured (see gpu_status in results.csv)"
    fig.suptitle(f"PIM (modelled) against CPU and GPU (measured), sweep '{sweep}', aggregator "
                 f"{agg}, {tasklets} tasklets{gpu_note}", fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, "pim_vs_baselines", written)
    plt.close(fig)


def plot_quality(rows, sweep, figdir, written):
    import matplotlib.pyplot as plt

    sr = _sel(rows, sweep=sweep)
    _, tasklets = _default_slice(sr)
    sr = _sel(sr, tasklets=tasklets)
    envs = _uniq(sr, "env")
    aggs = _uniq(sr, "aggregator")
    fig, axes = plt.subplots(1, len(envs), figsize=(4.6 * len(envs), 4.2), squeeze=False)
    for j, env in enumerate(envs):
        ax = axes[0, j]
        er = _sel(sr, env=env)
        dpus = sorted({int(r["n_dpus"]) for r in er})
        for k, agg in enumerate(aggs):
            ar = _sel(er, aggregator=agg)
            a = np.array([[_num(r["mean_return"]) for r in _sel(ar, n_dpus=d)] for d in dpus],
                         dtype=object)
            med = np.array([np.median(x) if len(x) else np.nan for x in a], dtype=float)
            lo = np.array([np.min(x) if len(x) else np.nan for x in a], dtype=float)
            hi = np.array([np.max(x) if len(x) else np.nan for x in a], dtype=float)
            ax.plot(dpus, med, "o-", color=f"C{k}", label=f"PIM, aggregator {agg}")
            ax.fill_between(dpus, lo, hi, color=f"C{k}", alpha=0.15)
        ax.axhline(_num(er[0]["optimal_mean_return"]), color="k", ls="--", label="optimal policy")
        cpu = [_num(r.get("cpu_1t_mean_return")) for r in er]
        if np.isfinite(cpu).any():
            ax.axhline(np.nanmedian(cpu), color="gray", ls=":",
                       label="CPU 1 thread (whole dataset, one table)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(dpus)
        ax.set_xticklabels([str(d) for d in dpus], rotation=45)
        ax.set_xlabel("DPUs (log2 scale)")
        ax.set_ylabel("mean return of the greedy policy\n(exact expectation, undiscounted)")
        ax.set_title(env)
        ax.grid(True, alpha=0.3)
        if j == 0:
            ax.legend(fontsize=7)
    fig.suptitle(f"Policy quality against DPU count, sweep '{sweep}' ({sr[0]['epochs']} epochs, "
                 f"{tasklets} tasklets): median over {len(_uniq(sr, 'variant'))} variants, "
                 f"band: their range", fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, f"quality_{sweep}", written)
    plt.close(fig)


def plot_tasklets(rows, sweep, figdir, written):
    """Modelled DPU-kernel time against tasklets per DPU, one line per variant, DPU count and
    tasklet mode (a colour per variant and DPU count, a line style per mode)."""
    import matplotlib.pyplot as plt

    sr = _sel(rows, sweep=sweep)
    agg, _ = _default_slice(sr)
    sr = _sel(sr, aggregator=agg)
    envs = _uniq(sr, "env")
    fig, axes = plt.subplots(1, len(envs), figsize=(4.6 * len(envs), 4.2), squeeze=False)
    for j, env in enumerate(envs):
        ax = axes[0, j]
        er = _sel(sr, env=env)
        k = 0
        styles = {"ring": "o-", "rows": "s--", "unlocked": "^:"}
        for v in _uniq(er, "variant"):
            for d in sorted({int(r["n_dpus"]) for r in er}):
                for mode in _uniq(er, "tasklet_mode"):
                    vr = sorted(_sel(er, variant=v, n_dpus=d, tasklet_mode=mode),
                                key=lambda r: int(r["tasklets"]))
                    if not vr:
                        continue
                    t = [int(r["tasklets"]) for r in vr]
                    ax.plot(t, [1e3 * _num(r["pim_kernel_modelled_s"]) for r in vr],
                            styles.get(mode, "o-"), color=f"C{k}",
                            label=f"{v}, {d} DPUs" + (f", {mode}" if mode else ""))
                k += 1
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({int(r["tasklets"]) for r in er})
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(x) for x in ticks])
        ax.set_xlabel("tasklets per DPU (log2 scale)")
        ax.set_ylabel("DPU kernel time (ms, modelled, log scale)")
        ax.set_title(env)
        ax.grid(True, which="both", alpha=0.3)
        if j == 0:
            ax.legend(fontsize=7)
    fig.suptitle(f"DPU kernel time against tasklets, sweep '{sweep}' ({sr[0]['n_transitions']} "
                 f"transitions, {sr[0]['epochs']} epochs, aggregator {agg}, hardware "
                 f"{sr[0]['hardware']})", fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, f"tasklets_{sweep}", written)
    plt.close(fig)


def plot_modes(rows, sweep, figdir, written):
    """The tasklet modes side by side at the sweep's largest DPU count: per variant, the
    modelled DPU-kernel time and the modelled time to a policy of the optimum's quality."""
    import matplotlib.pyplot as plt

    sr = _sel(rows, sweep=sweep)
    agg, tasklets = _default_slice(sr)
    sr = _sel(sr, aggregator=agg, tasklets=tasklets)
    dpus = max(int(r["n_dpus"]) for r in sr)
    sr = [r for r in sr if int(r["n_dpus"]) == dpus]
    envs, modes = _uniq(sr, "env"), _uniq(sr, "tasklet_mode")
    fig, axes = plt.subplots(2, len(envs), figsize=(4.8 * len(envs), 7.0), squeeze=False)
    for j, env in enumerate(envs):
        er = _sel(sr, env=env)
        variants = _uniq(er, "variant")
        x = np.arange(len(variants))
        width = 0.8 / len(modes)
        for row, (col, label) in enumerate((("pim_kernel_modelled_s", "DPU kernel (ms, modelled)"),
                                            ("time_to_quality_modelled_s",
                                             "time to quality (ms, modelled)"))):
            ax = axes[row, j]
            for m, mode in enumerate(modes):
                vals = []
                for v in variants:
                    vr = _sel(er, variant=v, tasklet_mode=mode)
                    vals.append(1e3 * _num(vr[0][col]) if vr else float("nan"))
                ax.bar(x + (m - (len(modes) - 1) / 2) * width, vals, width, label=mode)
            ax.set_yscale("log")
            ax.set_xticks(x)
            ax.set_xticklabels(variants, rotation=30, fontsize=7, ha="right")
            ax.set_ylabel(label, fontsize=8)
            if row == 0:
                ax.set_title(env)
            ax.grid(True, axis="y", which="both", alpha=0.3)
            if j == 0 and row == 0:
                ax.legend(fontsize=7, title="tasklet mode", title_fontsize=7)
    fig.suptitle(f"Tasklet modes, sweep '{sweep}': {dpus} DPUs, {tasklets} tasklets, aggregator "
                 f"{agg} (missing bar: quality not reached)", fontsize=10)
    fig.tight_layout()
    _save(fig, figdir, f"modes_{sweep}", written)
    plt.close(fig)


def plot_results(result_dir) -> list[str]:
    """Draw every figure the results allow; returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    d = Path(result_dir)
    # Every row is validated: a corrupted or truncated row is an error naming its line, never
    # a point silently left out of a figure.
    rows, _ = load_results(d / "results.csv", strict=True)
    if not rows:
        raise FileNotFoundError(f"{d / 'results.csv'}: no results to plot (run pimrl scale first)")
    meta_path = d / "meta.json"
    planned = None
    if meta_path.exists():
        try:
            planned = json.loads(meta_path.read_text()).get("n_rows_planned")
        except ValueError:
            planned = None
    if isinstance(planned, int) and len(rows) < planned:
        print(f"pimrl plot: {d / 'results.csv'} holds {len(rows)} of the {planned} rows its "
              f"config plans; the figures show only those (run pimrl scale to complete it)",
              file=sys.stderr)
    figdir = d / "figures"
    ensure_folder(figdir)
    written = []
    # A size sweep (several dataset or table sizes) has its own report; the figures below
    # compare rows of one size and one environment.
    from pimrl.experiments import datasize

    sized = dict(datasize.size_sweeps(rows))
    for sweep, axis in sized.items():
        datasize.report(_default_mode(rows), sweep, d, figdir, written, _save, axis)
    rows = [r for r in rows if r["sweep"] not in sized]
    if not rows:
        return written
    every = rows
    rows = _default_mode(rows)           # one tasklet mode per sweep for the main figures
    for sweep in _uniq(rows, "sweep"):
        sr = _sel(rows, sweep=sweep)
        if len({r["tasklets"] for r in sr}) >= 2:
            plot_tasklets(every, sweep, figdir, written)
            continue
        if len({r["n_dpus"] for r in sr}) >= 2:
            plot_scaling(rows, sweep, figdir, written)
            plot_quality(rows, sweep, figdir, written)
        plot_breakdown(rows, sweep, figdir, written)
        if len(_uniq(_sel(every, sweep=sweep), "tasklet_mode")) >= 2:
            plot_modes(every, sweep, figdir, written)
            p = d / f"modes_{sweep}.md"
            atomic_write_text(p, modes_table(every, sweep))
            written.append(str(p))
    plot_baselines(rows, figdir, written)
    if any(r.get("quality_curve") for r in rows):
        from pimrl.experiments.quality import plot_time_to_quality, tradeoff_table

        plot_time_to_quality(rows, figdir, written)
        p = d / "tradeoff.md"
        atomic_write_text(p, tradeoff_table(rows))
        written.append(str(p))
    table = summary_table(rows)
    if table:
        p = d / "summary.md"
        atomic_write_text(p, table)
        written.append(str(p))
    meta = d / "meta.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        if not m.get("gpu", {}).get("measured"):
            print(f"GPU: {m.get('gpu', {}).get('status', 'not measured')}; the plots leave it out",
                  file=sys.stderr)
    return written
