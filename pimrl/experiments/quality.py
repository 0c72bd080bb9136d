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
    """A ``PimTrainer(on_round=...)`` callback: q -> {success_rate, mean_return, reached}
    (the optimum is evaluated once)."""
    from pimrl.envs.evaluation import evaluate_exact
    from pimrl.envs.planning import value_iteration

    q_star, _ = value_iteration(env, gamma)
    best = evaluate_exact(env, q_star)

    def evaluate(q) -> dict:
        mine = evaluate_exact(env, q)
        return {"success_rate": mine.success_rate, "mean_return": mine.mean_return,
                "reached": reaches_optimum(mine.success_rate, mine.mean_return,
                                           best.success_rate, best.mean_return)}

    evaluate.optimum = best
    return evaluate


def time_to_quality(rounds: list) -> dict:
    """From a trainer's ``rounds_`` (evaluated): {quality_round, time_to_quality_modelled_s}
    of the first round within tolerance (None, None if none is)."""
    for entry in rounds:
        if entry.get("reached"):
            return {"quality_round": entry["round"],
                    "time_to_quality_modelled_s": entry["modelled_s"]}
    return {"quality_round": None, "time_to_quality_modelled_s": None}


def curve_text(rounds: list) -> str:
    """``modelled_s:mean_return:success_rate`` per round, ``|``-separated (a CSV cell)."""
    return "|".join(f"{e['modelled_s']:.6g}:{e['mean_return']:.6g}:{e['success_rate']:.6g}"
                    for e in rounds)


def parse_curve(text: str) -> list:
    """The inverse of :func:`curve_text`: [(modelled_s, mean_return, success_rate)]."""
    if not text:
        return []
    return [tuple(float(x) for x in part.split(":")) for part in str(text).split("|")]
