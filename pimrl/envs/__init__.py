"""Tabular environments (Gymnasium toy_text dynamics as dense tables), value iteration and
exact or sampled evaluation of greedy policies. See docs/environments.md."""
from pimrl.envs.core import TabularEnv, sample_outcome, sample_outcome_nb
from pimrl.envs.evaluation import (
    EvalResult,
    as_policy,
    evaluate_against_optimum,
    evaluate_exact,
    evaluate_rollouts,
    greedy_policy,
)
from pimrl.envs.planning import finite_horizon_value, q_backup, value_iteration
from pimrl.envs.registry import ALIASES, REGISTRY, env_ids, make, parse_spec
from pimrl.envs.toy_text import generate_frozen_lake_map

__all__ = [
    "TabularEnv", "make", "parse_spec", "env_ids", "REGISTRY", "ALIASES",
    "sample_outcome", "sample_outcome_nb", "generate_frozen_lake_map",
    "value_iteration", "q_backup", "finite_horizon_value",
    "EvalResult", "greedy_policy", "as_policy", "evaluate_exact", "evaluate_rollouts",
    "evaluate_against_optimum",
]
