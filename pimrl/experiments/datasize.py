"""The scale study's report (``experiments/scale.toml``): throughput and time to quality of
every system against the dataset size or the Q-table's size, the table behind them, and the
crossover.

A strong sweep whose rows hold more than one dataset size (``transitions = [...]``) is a
data-size sweep; one whose rows hold one size and several tables (``envs = [...]``, e.g.
``Taxi-v3:copies=K``) is a table-size sweep, its axis the Q-table's bytes (S x A x 4). For
each variant and size it compares:

- PIM at the sweep's DPU count, one line per aggregator (**modelled** by the cost model:
  the whole run, transfers included);
- the CPU baselines, numba at 1 and ``cpu_threads`` threads and (``baselines.c_loop``) the
  plain-C loop at both (**measured** on the machine in meta.json).

Time to quality is PIM's modelled time to the first round within tolerance of the optimum,
and the CPU's measured training time to the first epoch within it (``baselines.cpu_quality``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pimrl.io import atomic_write_text

#: The CPU systems: (label, updates/s column, time-to-quality column or None, the tag of
#: its energy columns or None, its energy-to-quality column or None).
CPU_SYSTEMS = (
    ("CPU numba 1T", "cpu_1t_updates_per_s_measured", "cpu_1t_time_to_quality_measured_s",
     "1t", None),
    ("CPU numba {t}T", "cpu_mt_updates_per_s_measured", "cpu_mt_time_to_quality_measured_s",
     "mt", "cpu_mt_energy_to_quality_modelled_j"),
    ("CPU C 1T", "cpu_c_1t_updates_per_s_measured", None, None, None),
    ("CPU C {t}T", "cpu_c_mt_updates_per_s_measured", None, None, None),
)
#: What each system's point holds, by index: (updates/s, time to quality s, joules per
#: update, joules to quality).
RATE, TIME_TO_QUALITY, ENERGY_PER_UPDATE, ENERGY_TO_QUALITY = range(4)
NO_POINT = (float("nan"),) * 4
PIM_STYLE = {"color": "#C44E52", "marker": "o"}
CPU_COLORS = ("#4C72B0", "#55A868", "#8172B2", "#937860")


def _pim_line(label: str) -> str:
    """A PIM line's style by its aggregator: mean solid, sync:R dotted, own:R dashed."""
    agg = label.rsplit(", ", 1)[-1]
    return "--" if agg.startswith("own") else ":" if agg.startswith("sync") else "-"


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def table_bytes(env_id: str) -> int | None:
    """The Q-table's bytes of an environment id (S x A x 4: FP32 and INT32 alike), or None
    for an id whose size is known only once made (Gymnasium)."""
    from pimrl.envs.registry import table_shape

    shape = table_shape(env_id)
    return None if shape is None else 4 * shape[0] * shape[1]


#: The axes of a size sweep: (row -> size, the axis label, the table's column head).
AXES = {
    "transitions": (lambda r: int(r["n_transitions"]), "transitions in the dataset",
                    "transitions"),
    "table": (lambda r: table_bytes(r["env"]), "Q-table bytes (S x A x 4)", "Q-table"),
}


def _base_env(env_id: str):
    """An environment id without its ``copies`` option (None for a Gymnasium id)."""
    from pimrl.envs.gymnasium_env import is_gym_id
    from pimrl.envs.registry import parse_spec

    if is_gym_id(env_id):
        return None
    name, opts = parse_spec(env_id)
    opts.pop("copies", None)
    return name, tuple(sorted(opts.items()))


def size_sweeps(rows) -> list:
    """[(sweep, axis)] of the strong sweeps (a weak sweep's size grows with its DPUs) whose
    rows hold more than one dataset size (axis ``transitions``), or one size and one
    environment in several numbers of copies (axis ``table``: ``Taxi-v3:copies=K``; a sweep
    over different environments compares them, not their tables' sizes)."""
    sizes: dict = {}
    envs: dict = {}
    for r in rows:
        if r["kind"] == "strong":
            sizes.setdefault(r["sweep"], set()).add(r["n_transitions"])
            envs.setdefault(r["sweep"], set()).add(r["env"])
    out = []
    for sweep, n in sizes.items():
        bases = {_base_env(e) for e in envs[sweep]}
        if len(n) > 1:
            out.append((sweep, "transitions"))
        elif len(envs[sweep]) > 1 and len(bases) == 1 and None not in bases:
            out.append((sweep, "table"))
    return out


def data_sweeps(rows) -> list:
    """The names of the sweeps whose rows hold more than one dataset size."""
    return [s for s, axis in size_sweeps(rows) if axis == "transitions"]


def _x(r, axis="transitions") -> int:
    return AXES[axis][0](r)


def _sizes(rows, axis="transitions") -> list:
    return sorted({_x(r, axis) for r in rows})


def _ordered(rows, col) -> list:
    out = []
    for r in rows:
        if r[col] not in out:
            out.append(r[col])
    return out


def _cpu_energy(r, tag) -> float:
    """The CPU baseline's joules per update of a row (its energy, RAPL-measured or modelled
    from package power, over the updates of the passes it ran), or nan."""
    if tag is None:
        return float("nan")
    joules = _num(r.get(f"cpu_{tag}_energy_measured_j"))
    if not np.isfinite(joules):
        joules = _num(r.get(f"cpu_{tag}_energy_modelled_j"))
    epochs = _num(r.get(f"cpu_{tag}_epochs_run"))
    passes = epochs if np.isfinite(epochs) else _num(r.get("epochs"))
    return joules / (_num(r["n_transitions"]) * passes)


def systems(rows, axis="transitions") -> list:
    """[(label, kind, {(variant, size): point})] of a size sweep's rows: one PIM system per
    aggregator, then the CPU systems that were measured; a point is (updates/s, time to
    quality, joules per update, joules to quality), nan where a row has none (results
    written before the energy columns have no energy)."""
    threads = next((r["cpu_threads"] for r in rows if r.get("cpu_threads")), "?")
    dpus = max(int(r["n_dpus"]) for r in rows)
    out = []
    for agg in _ordered(rows, "aggregator"):
        points = {}
        for r in rows:
            if r["aggregator"] == agg and int(r["n_dpus"]) == dpus:
                points[(r["variant"], _x(r, axis))] = (
                    _num(r["pim_updates_per_s_modelled"]), _num(r["time_to_quality_modelled_s"]),
                    _num(r.get("pim_energy_modelled_j")) / _num(r["pim_updates"]),
                    _num(r.get("pim_energy_to_quality_modelled_j")))
        out.append((f"PIM {dpus:,} DPUs, {agg}", "modelled", points))
    for label, rate_col, ttq_col, energy_tag, etq_col in CPU_SYSTEMS:
        points = {}
        for r in rows:
            rate = _num(r.get(rate_col))
            if np.isfinite(rate):
                points[(r["variant"], _x(r, axis))] = (
                    rate, _num(r.get(ttq_col)) if ttq_col else float("nan"),
                    _cpu_energy(r, energy_tag), _num(r.get(etq_col)) if etq_col else float("nan"))
        if points:
            out.append((label.format(t=threads), "measured", points))
    return out


def _best(systems_, kind, variant, size, index=0, low=False):
    """(label, value) of the best system of ``kind`` at (variant, size): the highest
    throughput (index 0) or the lowest time to quality (index 1, ``low``)."""
    best = None
    for label, k, points in systems_:
        v = points.get((variant, size), NO_POINT)[index]
        if k != kind or not np.isfinite(v):
            continue
        if best is None or (v < best[1] if low else v > best[1]):
            best = (label, v)
    return best


def _ahead_from(sizes, ratios):
    """The smallest size from which every ratio (PIM over CPU) is above 1, or None; sizes
    without a ratio (a system missing there) are passed over."""
    known = [(n, r) for n, r in zip(sizes, ratios) if np.isfinite(r)]
    for i in range(len(known)):
        if all(r > 1 for _, r in known[i:]):
            return known[i][0]
    return None


def _at_largest(sizes, ratios):
    """(size, ratio) at the largest size with a ratio, or (the largest size, nan)."""
    known = [(n, r) for n, r in zip(sizes, ratios) if np.isfinite(r)]
    return known[-1] if known else (sizes[-1], float("nan"))


def crossover(rows, axis="transitions") -> dict:
    """Per variant: the smallest size from which PIM's best throughput (modelled) stays above
    the best CPU's (measured), PIM's ratio at the largest size, and the same for time to
    quality where both reached it."""
    sys_ = systems(rows, axis)
    sizes = _sizes(rows, axis)
    out = {}
    for v in _ordered(rows, "variant"):
        ratios, ttq = [], []
        for n in sizes:
            pim, cpu = _best(sys_, "modelled", v, n), _best(sys_, "measured", v, n)
            ratios.append(pim[1] / cpu[1] if pim and cpu else np.nan)
            pim_q, cpu_q = (_best(sys_, "modelled", v, n, 1, True),
                            _best(sys_, "measured", v, n, 1, True))
            ttq.append(cpu_q[1] / pim_q[1] if pim_q and cpu_q else np.nan)
        energy = []
        for n in sizes:
            pim_e = _best(sys_, "modelled", v, n, ENERGY_TO_QUALITY, True)
            cpu_e = _best(sys_, "measured", v, n, ENERGY_TO_QUALITY, True)
            energy.append(cpu_e[1] / pim_e[1] if pim_e and cpu_e else np.nan)
        largest, ratio = _at_largest(sizes, ratios)
        out[v] = {"sizes": sizes, "throughput_ratio": ratios,
                  "energy_to_quality_ratio": energy,
                  "energy_to_quality_ratio_at_largest": energy[sizes.index(largest)],
                  "pim_wins_from": _ahead_from(sizes, ratios), "largest": largest,
                  "ratio_at_largest": ratio,
                  "time_to_quality_ratio": ttq, "pim_sooner_from": _ahead_from(sizes, ttq),
                  "time_to_quality_ratio_at_largest": ttq[sizes.index(largest)]}
    return out


def _fmt_rate(x) -> str:
    return "-" if not np.isfinite(x) else f"{x / 1e6:,.1f}"


def _fmt_s(x) -> str:
    if not np.isfinite(x):
        return "not reached"
    return f"{x * 1e3:,.1f} ms" if x < 1 else f"{x:,.2f} s"


def _size(n: int, axis="transitions") -> str:
    if axis == "table":
        return (f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.1f} KiB")
    return f"{n // 2**20}Mi" if n % 2**20 == 0 else (f"{n / 1e6:g}M" if n >= 1e6 else f"{n:,}")


def _fmt_j(x) -> str:
    if not np.isfinite(x):
        return "-"
    return f"{x * 1e3:,.2f} mJ" if x < 1 else f"{x:,.2f} J"


def energy_table(rows, sys_, axis="transitions") -> list:
    """Markdown lines: per variant and size, each system's energy per million updates and
    its energy to the optimum; a line saying so when the rows carry no energy (a results
    file written before the energy columns)."""
    with_energy = [s for s in sys_ if any(np.isfinite(x[ENERGY_PER_UPDATE])
                                          for x in s[2].values())]
    if not any(k == "modelled" for _, k, _ in with_energy):
        return ["", "Energy: not in this results file (written before the energy columns; "
                "rerun the study to fill them)."]
    basis = ("measured through RAPL" if any(r.get("cpu_mt_energy_measured_j") for r in rows)
             else "modelled: package power x measured time")
    lines = ["", f"Energy (PIM **modelled**: DIMMs, transfers and the PrIM host; CPU {basis}): "
             "joules per million updates, and to the optimum (the run up to its time to "
             "quality; '-' where not reached):", ""]
    to_q = [s for s in with_energy if s[1] == "modelled"
            or any(np.isfinite(x[ENERGY_TO_QUALITY]) for x in s[2].values())]
    head = (["variant", AXES[axis][2]] + [f"{s[0]} (J/M)" for s in with_energy]
            + [f"{s[0]} to optimum" for s in to_q])
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in _ordered(rows, "variant"):
        for n in _sizes(rows, axis):
            pts = [p.get((v, n), NO_POINT) for _, _, p in with_energy]
            cells = ([v, _size(n, axis)]
                     + [f"{x[ENERGY_PER_UPDATE] * 1e6:.3g}" if np.isfinite(x[ENERGY_PER_UPDATE])
                        else "-" for x in pts]
                     + [_fmt_j(p.get((v, n), NO_POINT)[ENERGY_TO_QUALITY]) for _, _, p in to_q])
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def scale_table(rows, axis="transitions") -> str:
    """Markdown: per variant and size, every system's updates/s and time to quality, and
    PIM's ratio to the best CPU; then the crossover per variant."""
    sys_ = systems(rows, axis)
    r0 = rows[0]
    where = (f"Environment {r0['env']}" if axis == "transitions" else
             f"Environments {', '.join(_ordered(rows, 'env'))} "
             f"({int(r0['n_transitions']):,} transitions)")
    lines = [f"{where}, {r0['epochs']} passes, {r0['tasklets']} tasklets "
             f"({r0.get('tasklet_mode') or 'ring'}). Throughput in M updates/s; PIM **modelled** "
             f"(the whole run, transfers included), CPU **measured** on the machine in "
             f"meta.json. Time to quality: to the first round (PIM) or epoch (CPU) whose greedy "
             f"policy is within tolerance of the optimum (exact evaluation).", ""]
    col = AXES[axis][2]
    head = ["variant", col] + [s[0] for s in sys_] + ["PIM / best CPU"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in _ordered(rows, "variant"):
        for n in _sizes(rows, axis):
            pim, cpu = _best(sys_, "modelled", v, n), _best(sys_, "measured", v, n)
            cells = [v, _size(n, axis)] + [_fmt_rate(p.get((v, n), NO_POINT)[0])
                                           for _, _, p in sys_]
            cells.append(f"{pim[1] / cpu[1]:.1f}x" if pim and cpu else "-")
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Time to quality (PIM modelled, CPU measured):", ""]
    ttq_sys = [s for s in sys_ if any(np.isfinite(x[1]) or s[1] == "modelled"
                                      for x in s[2].values())
               and (s[1] == "modelled" or "numba" in s[0])]
    head = ["variant", col] + [s[0] for s in ttq_sys]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in _ordered(rows, "variant"):
        for n in _sizes(rows, axis):
            cells = [v, _size(n, axis)] + [_fmt_s(p.get((v, n), NO_POINT)[1])
                                           for _, _, p in ttq_sys]
            lines.append("| " + " | ".join(cells) + " |")
    lines += energy_table(rows, sys_, axis)
    lines += ["", "Crossover (PIM's best aggregator, modelled, against the best CPU system, "
                  "measured):", ""]
    what = "transitions" if axis == "transitions" else "Q-tables"
    for v, c in crossover(rows, axis).items():
        largest = _size(c["largest"], axis)
        where = (f"PIM's updates/s are ahead from {_size(c['pim_wins_from'], axis)} {what} on"
                 if c["pim_wins_from"] is not None else "PIM's updates/s are not ahead at "
                 "the largest size")
        soon = c["time_to_quality_ratio_at_largest"]
        if c["pim_sooner_from"] is not None:
            when = (f"it reaches the optimum sooner from {_size(c['pim_sooner_from'], axis)} "
                    "on" + (f" ({soon:.1f}x at {largest})" if np.isfinite(soon) else
                            f", wherever both reach it (at {largest} one does not)"))
        elif np.isfinite(soon):
            when = f"it does not reach the optimum sooner ({soon:.1f}x at {largest})"
        else:
            when = f"at {largest} PIM or the CPU does not reach the optimum within its passes"
        e = c["energy_to_quality_ratio_at_largest"]
        basis = "PIM modelled, the CPU's modelled from package power"
        if not np.isfinite(e):
            energy = ""
        elif e >= 1:
            energy = (f" To the optimum it takes {e:.1f}x less energy than the CPU ({basis}) "
                      f"at {largest}.")
        else:
            energy = (f" To the optimum it takes {1 / e:.1f}x more energy than the CPU ({basis}) "
                      f"at {largest}.")
        lines.append(f"- {v}: {where} ({c['ratio_at_largest']:.1f}x the best CPU's at "
                     f"{largest}); {when}.{energy}")
    return "\n".join(lines) + "\n"


def plot_data_size(rows, sweep: str, figdir: Path, written: list, save,
                   axis="transitions") -> None:
    """Two figures, one panel per variant, log-log against the dataset (or table) size:
    throughput and time to quality, one line per system."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    sys_ = systems(rows, axis)
    rapl = any(r.get("cpu_mt_energy_measured_j") for r in rows)
    variants = _ordered(rows, "variant")
    sizes = _sizes(rows, axis)
    figures = [("throughput", RATE, "updates / s"),
               ("time_to_quality", TIME_TO_QUALITY, "time to the optimum (s)")]
    if any(np.isfinite(x[ENERGY_TO_QUALITY]) for _, k, p in sys_ if k == "modelled"
           for x in p.values()):
        figures.append(("energy_to_quality", ENERGY_TO_QUALITY, "energy to the optimum (J)"))
    for name, index, ylabel in figures:
        cols = min(len(variants), 2)
        nrows = -(-len(variants) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.6 * nrows), squeeze=False,
                                 sharex=True)
        handles = {}
        for ax, v in zip(axes.ravel(), variants):
            k = 0
            for label, kind, points in sys_:
                if index != RATE and kind == "measured" and "numba" not in label:
                    continue                       # the C loop is timed for throughput only
                xs = [n for n in sizes if np.isfinite(points.get((v, n), NO_POINT)[index])]
                if not xs:
                    continue
                ys = [points[(v, n)][index] for n in xs]
                style = (dict(PIM_STYLE, linestyle=_pim_line(label))
                         if kind == "modelled"
                         else {"color": CPU_COLORS[k % len(CPU_COLORS)], "marker": "s",
                               "linestyle": "-" if "numba" in label else ":"})
                if kind == "measured":
                    k += 1
                # energy: PIM's modelled, the CPU's modelled from package power unless RAPL
                # measured it
                said = (kind if index == RATE or index == TIME_TO_QUALITY
                        else "measured, RAPL" if kind == "measured" and rapl else "modelled")
                line, = ax.plot(xs, ys, label=f"{label} ({said})", **style)
                handles.setdefault(line.get_label(), line)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())      # decades only: no crowding
            ax.set_yscale("log")
            ax.set_title(v)
            ax.set_xlabel(AXES[axis][1])
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        for ax in axes.ravel()[len(variants):]:
            ax.set_visible(False)
        what = {RATE: "throughput",
                TIME_TO_QUALITY: "time to the optimum (a missing point: not reached within "
                                 "the passes)",
                ENERGY_TO_QUALITY: "energy to the optimum"}[index]
        against = ("the dataset size" if axis == "transitions" else
                   f"the Q-table's size ({int(rows[0]['n_transitions']):,} transitions)")
        whose = ("PIM modelled, CPU measured" if index != ENERGY_TO_QUALITY else
                 "PIM modelled; CPU " + ("measured by RAPL" if rapl else
                                         "modelled: package power x measured time"))
        fig.suptitle(f"{rows[0]['env'].partition(':')[0]}: {what} against {against}\n"
                     f"({whose})")
        if handles:
            fig.legend(list(handles.values()), list(handles), loc="lower center",
                       ncol=min(3, len(handles)),
                       bbox_to_anchor=(0.5, 0.0))
        else:
            fig.text(0.5, 0.02, "no system reached the optimum within its passes",
                     ha="center")
        # the legend's rows of three, each about 0.3 inch, below the panels
        legend_h = 0.35 * -(-max(len(handles), 1) // 3) / fig.get_figheight()
        fig.tight_layout(rect=(0, legend_h + 0.01, 1, 1))
        save(fig, figdir, f"{name}_{sweep}", written)
        plt.close(fig)


def report(rows, sweep: str, result_dir: Path, figdir: Path, written: list, save,
           axis="transitions") -> None:
    """The figures and ``scale_<sweep>.md`` of one size sweep."""
    sr = [r for r in rows if r["sweep"] == sweep]
    plot_data_size(sr, sweep, figdir, written, save, axis)
    p = Path(result_dir) / f"scale_{sweep}.md"
    atomic_write_text(p, scale_table(sr, axis))
    written.append(str(p))
