"""The Markdown tables of ``pimrl plot DIR`` (:mod:`pimrl.experiments.plots`):
``summary.md`` (per environment and variant at the largest DPU count) and ``modes_<sweep>.md``
(the tasklet modes side by side), and the row selection the figures share with them.
"""
from __future__ import annotations

import numpy as np


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def _sel(rows, **eq):
    return [r for r in rows if all(str(r[k]) == str(v) for k, v in eq.items())]


def _uniq(rows, col, key=None):
    out = []
    for r in rows:
        if r[col] not in out:
            out.append(r[col])
    return sorted(out, key=key) if key else out


def _default_slice(rows):
    """The aggregator ('mean' if present) and tasklet count (the largest) a figure shows."""
    aggs = _uniq(rows, "aggregator")
    agg = "mean" if "mean" in aggs else aggs[0]
    t = max(int(x) for x in _uniq(_sel(rows, aggregator=agg), "tasklets"))
    return agg, t


def modes_table(rows, sweep) -> str:
    """Markdown for ``modes_<sweep>.md``: per aggregator of the sweep (``mean`` first), each
    environment and variant at the sweep's largest DPU count, each tasklet mode's modelled DPU
    kernel and total time, its kernel against the ring's, its greedy policy's mean return,
    time to quality (where rounds were evaluated) and, for unlocked, the updates that could
    be lost."""
    sr = _sel(rows, sweep=sweep)
    agg, tasklets = _default_slice(sr)
    aggs = [agg] + [a for a in _uniq(sr, "aggregator") if a != agg]
    sr = _sel(sr, tasklets=tasklets)
    dpus = max(int(r["n_dpus"]) for r in sr)
    sr = [r for r in sr if int(r["n_dpus"]) == dpus]
    modes = _uniq(sr, "tasklet_mode")
    ttq = any(r.get("quality_curve") for r in sr)
    head = (f"Sweep '{sweep}': {dpus} DPUs x {tasklets} tasklets, aggregator "
            f"{', '.join(aggs)}. Times are "
            "**modelled** (ms); 'x ring' is the ring's DPU kernel time over the mode's. "
            "Conflicts (unlocked): an entry updated by several tasklets at the same step of "
            "their lanes counts its updaters less one; hardware could lose such updates "
            "(docs/design.md).\n")
    cols = ["env", "variant", "aggregator", "mode", "DPU kernel", "x ring", "total"]
    cols += (["time to quality"] if ttq else []) + ["mean return", "optimum", "conflicts"]
    lines = [head, "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for a in aggs:
        ar = _sel(sr, aggregator=a)
        for env in _uniq(ar, "env"):
            er = _sel(ar, env=env)
            for v in _uniq(er, "variant"):
                ring = _sel(er, variant=v, tasklet_mode="ring")
                ring_k = _num(ring[0]["pim_kernel_modelled_s"]) if ring else float("nan")
                for mode in modes:
                    vr = _sel(er, variant=v, tasklet_mode=mode)
                    if not vr:
                        continue
                    r = vr[0]
                    k = _num(r["pim_kernel_modelled_s"])
                    cells = [env, v, a, mode, _g(1e3 * k, "{:.1f}"), _g(ring_k / k, "{:.1f}x"),
                             _g(1e3 * _num(r["pim_total_modelled_s"]), "{:.1f}")]
                    if ttq:
                        t = _num(r.get("time_to_quality_modelled_s"))
                        cells.append(_g(1e3 * t, "{:.1f}") if t > 0 else "not reached")
                    cells += [_g(r["mean_return"], "{:.2f}"),
                              _g(r["optimal_mean_return"], "{:.2f}"),
                              str(r.get("pim_conflicts") or "-")]
                    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _g(x, fmt="{:.3g}"):
    v = _num(x)
    return "-" if not np.isfinite(v) else fmt.format(v)


def summary_table(rows) -> str:
    """Markdown: per environment and variant, at the largest DPU count of the first strong
    sweep (aggregator mean, most tasklets)."""
    strong = [r for r in rows if r["kind"] == "strong"]
    if not strong:
        return ""
    sweep = strong[0]["sweep"]
    sr = _sel(strong, sweep=sweep)
    agg, tasklets = _default_slice(sr)
    sr = _sel(sr, aggregator=agg, tasklets=tasklets)
    dpus = sorted({int(r["n_dpus"]) for r in sr})
    has_gpu = any(_num(r.get("gpu_total_measured_s")) > 0 for r in sr)
    mode = sr[0].get("tasklet_mode") or "ring"
    head = (f"Sweep '{sweep}', aggregator {agg}, {tasklets} tasklets ({mode}); PIM at {dpus[0]} and "
            f"{dpus[-1]} DPUs. PIM times are **modelled**, CPU{'/GPU' if has_gpu else ''} times "
            f"**measured** on the machine in meta.json{'' if has_gpu else '; GPU: not measured'}.\n\n")
    cols = ["env", "variant", f"PIM {dpus[0]} (s, mod.)", f"PIM {dpus[-1]} (s, mod.)",
            f"kernel share at {dpus[-1]}", "CPU 1T (s, meas.)",
            f"CPU {sr[0]['cpu_threads'] or '-'}T (s, meas.)"]
    if has_gpu:
        cols.append("GPU (s, meas.)")
    cols += [f"CPU {sr[0]['cpu_threads'] or '-'}T / PIM {dpus[-1]}", f"return PIM {dpus[0]}",
             f"return PIM {dpus[-1]}", "return CPU 1T", "optimum"]
    lines = [head, "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for env in _uniq(sr, "env"):
        for v in _uniq(_sel(sr, env=env), "variant"):
            r0 = _sel(sr, env=env, variant=v, n_dpus=dpus[0])
            r1 = _sel(sr, env=env, variant=v, n_dpus=dpus[-1])
            if not r0 or not r1:
                continue
            a, b = r0[0], r1[0]
            ratio = _num(b["cpu_mt_measured_s"]) / _num(b["pim_total_modelled_s"])
            cells = [env, v, _g(a["pim_total_modelled_s"]), _g(b["pim_total_modelled_s"]),
                     _g(100 * _num(b["pim_kernel_modelled_s"]) / _num(b["pim_total_modelled_s"]),
                        "{:.0f} %"),
                     _g(b["cpu_1t_measured_s"]), _g(b["cpu_mt_measured_s"])]
            if has_gpu:
                cells.append(_g(b.get("gpu_total_measured_s")))
            cells += [_g(ratio, "{:.1f}x"), _g(a["mean_return"], "{:.3f}"),
                      _g(b["mean_return"], "{:.3f}"), _g(b["cpu_1t_mean_return"], "{:.3f}"),
                      _g(b["optimal_mean_return"], "{:.3f}")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
