"""Time to quality: the greedy policy evaluated exactly after every round of a PIM run, and
the modelled time at which it first comes within tolerance of the optimum.

A policy *reaches the optimum* when its exact success rate is within ``SUCCESS_TOL`` (0.01)
of the optimal policy's and its exact mean return is within ``RETURN_TOL_REL`` (1 %) of the
optimal return's magnitude, but never less than 0.01 (so Taxi's 7.93 allows 0.0793,
CliffWalking's -13 allows 0.13, FrozenLake's success rate and return 0.01). The optimum is
value iteration's greedy policy with the learner's gamma (``evaluate_against_optimum``).

The time of a round is modelled by the PIM cost model: the run up to the end of that round,
plus, for rounds before the last, gathering the tables the policy would be read from (what
stopping there would cost). The evaluation itself reads the simulated DPUs' memories outside
the modelled run.
"""
from __future__ import annotations

from pathlib import Path

from pimrl.io import atomic_savefig

SUCCESS_TOL = 0.01
RETURN_TOL_REL = 0.01
RETURN_TOL_MIN = 0.01
TOLERANCE_TEXT = (f"success rate within {SUCCESS_TOL} and mean return within "
                  f"{RETURN_TOL_REL:.0%} (at least {RETURN_TOL_MIN}) of the optimum's")


def return_tolerance(optimal_return: float) -> float:
    return max(RETURN_TOL_MIN, RETURN_TOL_REL * abs(optimal_return))


def reaches_optimum(success_rate, mean_return, optimal_success_rate, optimal_mean_return) -> bool:
    """Whether a policy's exact figures are within the stated tolerance of the optimum's."""
    return (success_rate >= optimal_success_rate - SUCCESS_TOL
            and mean_return >= optimal_mean_return - return_tolerance(optimal_mean_return))


def round_evaluator(env, gamma: float):
    """An ``on_round`` callback (:data:`pimrl.learners.aggregate.OnRound`): ``(round, q,
    ledger)`` -> {success_rate, mean_return, reached} of ``q``'s greedy policy (the optimum is
    evaluated once; the round and the ledger are not needed)."""
    from pimrl.envs.evaluation import evaluate_exact
    from pimrl.envs.planning import value_iteration

    q_star, _ = value_iteration(env, gamma)
    best = evaluate_exact(env, q_star)

    def evaluate(round_, q, ledger=None) -> dict:
        mine = evaluate_exact(env, q)
        return {"success_rate": mine.success_rate, "mean_return": mine.mean_return,
                "reached": reaches_optimum(mine.success_rate, mine.mean_return,
                                           best.success_rate, best.mean_return)}

    evaluate.optimum = best
    return evaluate


def time_to_quality(rounds: list) -> dict:
    """From a trainer's ``rounds_`` (evaluated): {quality_round, time_to_quality_modelled_s}
    of the first round within tolerance (None, None if none is); ``..._measured_s`` for a
    run on real DPUs, whose rounds carry measured times."""
    key = "measured_s" if rounds and "measured_s" in rounds[0] else "modelled_s"
    for entry in rounds:
        if entry.get("reached"):
            return {"quality_round": entry["round"], f"time_to_quality_{key}": entry[key]}
    return {"quality_round": None, f"time_to_quality_{key}": None}


def curve_text(rounds: list) -> str:
    """``modelled_s:mean_return:success_rate`` per round, ``|``-separated (a CSV cell)."""
    return "|".join(f"{e['modelled_s']:.6g}:{e['mean_return']:.6g}:{e['success_rate']:.6g}"
                    for e in rounds)


def parse_curve(text: str) -> list:
    """The inverse of :func:`curve_text`: [(modelled_s, mean_return, success_rate)]."""
    if not text:
        return []
    return [tuple(float(x) for x in part.split(":")) for part in str(text).split("|")]


# --------------------------------------------------------------------------- study output
def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def plot_time_to_quality(rows, figdir, written, max_columns: int = 4) -> None:
    """``quality_<sweep>.png`` per sweep with per-round curves: the greedy policy's exact
    mean return against the modelled time, one panel per environment and DPU count, one
    line per scheme; the optimum dashed."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    for sweep in sorted({r["sweep"] for r in rows if r.get("quality_curve")}):
        sr = [r for r in rows if r["sweep"] == sweep and r.get("quality_curve")]
        envs = sorted({r["env"] for r in sr})
        rounds_of = {}
        for r in sr:
            rounds_of.setdefault(_family(r["aggregator"]), set()).add(_rounds(r["aggregator"]))
        # One scheme and several variants (a sweep over variants or tasklet modes): a line
        # and a colour per variant; else a colour per scheme, its variants drawn alike.
        variants = sorted({r["variant"] for r in sr})
        per_variant = len({r["aggregator"] for r in sr}) == 1 and len(variants) > 1
        counts = sorted({int(r["n_dpus"]) for r in sr})
        if len(counts) > max_columns:      # the smallest, a middle one, the two largest
            counts = sorted({counts[0], counts[len(counts) // 2 - 1], counts[-2], counts[-1]})
        fig, axes = plt.subplots(len(envs), len(counts), figsize=(3.4 * len(counts), 2.8 * len(envs)),
                                 squeeze=False)
        for i, env in enumerate(envs):
            for j, n in enumerate(counts):
                ax = axes[i][j]
                for r in sorted((r for r in sr if r["env"] == env and int(r["n_dpus"]) == n),
                                key=lambda r: _order(r["aggregator"])):
                    pts = parse_curve(r["quality_curve"])
                    t = [p[0] * 1e3 for p in pts]
                    if per_variant:
                        label = f"{r['aggregator']}, {r['variant']}"
                        colour = plt.cm.tab10(variants.index(r["variant"]) % 10)
                    else:
                        label = r["aggregator"]
                        colour = _colour(r["aggregator"], rounds_of[_family(r["aggregator"])])
                    ax.plot(t, [p[1] for p in pts], marker="o" if len(pts) == 1 else None,
                            ms=4, lw=1.2, label=label, color=colour)
                opt = _f(next(r for r in sr if r["env"] == env)["optimal_mean_return"])
                ax.axhline(opt, color="k", ls="--", lw=0.8)
                ax.set_xscale("log")
                lo, hi = ax.get_xlim()
                if hi >= 10 * lo:               # major ticks labelled: quiet the minor ones
                    ax.xaxis.set_minor_formatter(NullFormatter())
                else:                           # within a decade: plain numbers on the minor
                    ax.xaxis.set_minor_formatter(FormatStrFormatter("%g"))
                ax.set_title(f"{env}, {n} DPUs", fontsize=9)
                if j == 0:
                    ax.set_ylabel("mean return (exact)")
                if i == len(envs) - 1:
                    ax.set_xlabel("modelled time (ms)")
                ax.tick_params(labelsize=7)
        handles, labels = [], []        # one entry per label, over every panel
        for row in axes:
            for ax in row:
                for h, lab in zip(*ax.get_legend_handles_labels()):
                    if lab not in labels:
                        handles.append(h)
                        labels.append(lab)
        order = sorted(range(len(labels)), key=lambda k: (_order(labels[k].split(",")[0]),
                                                         labels[k]))
        fig.suptitle(f"Greedy policy after every round against modelled time ({sweep}); "
                     f"dashed: the optimum", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        fig.legend([handles[k] for k in order], [labels[k] for k in order], loc="lower center",
                   ncol=min(8, len(labels)), fontsize=7, frameon=False)
        p = Path(figdir) / f"time_to_quality_{sweep}.png"
        atomic_savefig(fig, p, dpi=120, bbox_inches="tight")
        written.append(str(p))
        plt.close(fig)


def _family(agg: str) -> str:
    parts = agg.split(":")
    if parts[0] in ("mean", "weighted"):
        return agg
    return parts[0] + (":weighted" if parts[-1] == "weighted" else "")


def _rounds(agg: str) -> int:
    parts = agg.split(":")
    return int(parts[1]) if len(parts) > 1 else 1


_FAMILY_ORDER = ("mean", "weighted", "sync", "sync:weighted", "own")
_FAMILY_CMAP = {"sync": "Greys", "sync:weighted": "Blues", "own": "Reds"}
_FAMILY_COLOUR = {"mean": "tab:green", "weighted": "tab:olive"}


def _order(agg: str):
    fam = _family(agg)
    return (_FAMILY_ORDER.index(fam) if fam in _FAMILY_ORDER else 99, _rounds(agg))


def _colour(agg: str, rounds: set):
    """One hue per scheme family, darker with more rounds."""
    import matplotlib

    fam = _family(agg)
    if fam in _FAMILY_COLOUR:
        return _FAMILY_COLOUR[fam]
    ranks = sorted(rounds)
    shade = 0.45 + 0.5 * (ranks.index(_rounds(agg)) / max(len(ranks) - 1, 1))
    return matplotlib.colormaps[_FAMILY_CMAP.get(fam, "Purples")](shade)


def tradeoff_table(rows) -> str:
    """Markdown: per environment and DPU count, for each scheme family (``sync:R``,
    ``sync:R:weighted``, ``own:R``, and the one-shot ``mean`` / ``weighted``), the cheapest
    run (least modelled total) whose final greedy policy reaches the optimum, its modelled
    time, its ratio to ``mean`` at the same DPU count, and its time to quality."""
    def family(agg):
        parts = agg.split(":")
        if parts[0] in ("mean", "weighted"):
            return agg
        return parts[0] + ":R" + (":weighted" if parts[-1] == "weighted" else "")

    mean = {(r["env"], int(r["n_dpus"])): _f(r["pim_total_modelled_s"]) for r in rows
            if r["aggregator"] == "mean"}
    fams = ["mean", "weighted", "sync:R", "sync:R:weighted", "own:R"]
    lines = ["| env | DPUs | " + " | ".join(fams) + " |", "|---|---|" + "---|" * len(fams)]
    keys = sorted({(r["env"], int(r["n_dpus"])) for r in rows})
    for env, n in keys:
        cells = []
        for fam in fams:
            cand = [r for r in rows if r["env"] == env and int(r["n_dpus"]) == n
                    and family(r["aggregator"]) == fam]
            ok = [r for r in cand if reaches_optimum(_f(r["success_rate"]), _f(r["mean_return"]),
                                                     _f(r["optimal_success_rate"]),
                                                     _f(r["optimal_mean_return"]))]
            if not cand:
                cells.append("")
                continue
            if not ok:
                tried = sorted({r["aggregator"] for r in cand})
                cells.append("not reached (" + ", ".join(tried) + ")" if fam.endswith("R") or
                             fam.endswith("weighted") and ":" in fam else "not reached")
                continue
            best = min(ok, key=lambda r: _f(r["pim_total_modelled_s"]))
            t = _f(best["pim_total_modelled_s"])
            base = mean.get((env, n))
            ratio = f", {t / base:.2f}x mean" if base else ""
            ttq = _f(best.get("time_to_quality_modelled_s"))
            cells.append(f"{best['aggregator']}: {t * 1e3:.1f} ms{ratio}; first at "
                         f"{ttq * 1e3:.1f} ms")
        lines.append(f"| {env} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
