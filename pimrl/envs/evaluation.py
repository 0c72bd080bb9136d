"""Evaluation of greedy policies: exactly from the tables, or by seeded rollouts.

An episode starts in a state drawn from ``env.initial_dist`` and runs until an outcome with
``terminated`` or until ``env.max_episode_steps`` steps (truncation). It is a *success* when
it terminates in a state of ``env.goal``; its return is the undiscounted sum of its rewards.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from pimrl.envs.core import TabularEnv
from pimrl.envs.planning import value_iteration


@dataclass(frozen=True)
class EvalResult:
    """Success rate and mean undiscounted return of a policy over episodes of ``horizon`` steps.

    ``method`` is ``"exact"`` (forward propagation of the state distribution: the values are
    expectations) or ``"rollouts"`` (``n_episodes`` episodes drawn with ``seed``; the ``_se``
    fields are standard errors of the means). ``mean_length`` is the expected number of steps.
    """

    success_rate: float
    mean_return: float
    mean_length: float
    horizon: int
    method: str
    n_episodes: int | None = None
    seed: int | None = None
    success_rate_se: float | None = None
    mean_return_se: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def greedy_policy(q: np.ndarray) -> np.ndarray:
    """Greedy action of each state of a Q-table (S, A): the lowest index among ties (int64)."""
    q = np.asarray(q)
    if q.ndim != 2:
        raise ValueError(f"a Q-table must have shape (S, A), got {q.shape}")
    return np.argmax(q, axis=1)


def as_policy(env: TabularEnv, policy_or_q) -> np.ndarray:
    """A deterministic policy (S,) from a policy array (S,) of actions or a Q-table (S, A)."""
    x = np.asarray(policy_or_q)
    if x.ndim == 2:
        if x.shape != (env.n_states, env.n_actions):
            raise ValueError(f"Q-table has shape {x.shape}, expected "
                             f"{(env.n_states, env.n_actions)} for {env.env_id}")
        return greedy_policy(x)
    if x.ndim == 1:
        if x.shape != (env.n_states,) or not np.issubdtype(x.dtype, np.integer):
            raise ValueError(f"a policy must be an integer array of shape ({env.n_states},), "
                             f"got {x.dtype} {x.shape}")
        if x.size and (x.min() < 0 or x.max() >= env.n_actions):
            raise ValueError(f"policy actions must lie in [0, {env.n_actions})")
        return x.astype(np.int64)
    raise ValueError(f"expected a policy (S,) or a Q-table (S, A), got shape {x.shape}")


def _chosen(env: TabularEnv, pi: np.ndarray):
    s = np.arange(env.n_states)
    return env.next_state[s, pi], env.prob[s, pi], env.reward[s, pi], env.terminated[s, pi]


def evaluate_exact(env: TabularEnv, policy_or_q, horizon: int | None = None) -> EvalResult:
    """Exact success rate and mean return of a deterministic policy within ``horizon`` steps
    (default ``env.max_episode_steps``), starting from ``env.initial_dist``.

    Propagates the distribution of the states of still-running episodes one step at a time
    (``bincount`` over the non-terminating outcomes of the chosen actions).
    """
    pi = as_policy(env, policy_or_q)
    horizon = env.max_episode_steps if horizon is None else int(horizon)
    ns, p, r, t = _chosen(env, pi)                     # (S, K) each
    r_pi = (p * r).sum(axis=1)                         # expected reward of a step from s
    g_pi = (p * (t & env.goal[ns])).sum(axis=1)        # probability to end in a goal from s
    go = (~t) & (p > 0)
    src, k = np.nonzero(go)
    dst, w = ns[src, k], p[src, k]
    d = env.initial_dist.copy()
    success = ret = length = 0.0
    for _ in range(horizon):
        success += d @ g_pi
        ret += d @ r_pi
        length += d.sum()
        d = np.bincount(dst, weights=d[src] * w, minlength=env.n_states)
        if not d.any():
            break
    return EvalResult(float(success), float(ret), float(length), horizon, "exact")


def evaluate_rollouts(env: TabularEnv, policy_or_q, n_episodes: int, seed: int,
                      horizon: int | None = None) -> EvalResult:
    """Success rate and mean return over ``n_episodes`` episodes sampled with
    ``numpy.random.default_rng(seed)`` (vectorised across episodes), with standard errors."""
    pi = as_policy(env, policy_or_q)
    horizon = env.max_episode_steps if horizon is None else int(horizon)
    n = int(n_episodes)
    if n < 1:
        raise ValueError(f"n_episodes must be >= 1, got {n_episodes}")
    rng = np.random.default_rng(seed)
    cum = env.cum_prob
    s = np.searchsorted(env.cum_initial, rng.random(n), side="right")
    idx = np.arange(n)
    ret = np.zeros(n)
    length = np.zeros(n, dtype=np.int64)
    success = np.zeros(n, dtype=bool)
    for _ in range(horizon):
        if idx.size == 0:
            break
        a = pi[s]
        u = rng.random(idx.size)
        k = (u[:, None] >= cum[s, a]).sum(axis=1)
        nxt = env.next_state[s, a, k]
        ret[idx] += env.reward[s, a, k]
        length[idx] += 1
        term = env.terminated[s, a, k]
        success[idx[term]] = env.goal[nxt[term]]
        idx, s = idx[~term], nxt[~term]
    se = (lambda x: float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))
    return EvalResult(float(success.mean()), float(ret.mean()), float(length.mean()), horizon,
                      "rollouts", n, int(seed), se(success.astype(np.float64)), se(ret))


#: Decimals kept of exactly computed success rates and returns (see evaluate_against_optimum).
EXACT_DECIMALS = 12


def evaluate_against_optimum(env: TabularEnv, q, gamma: float, *, n_rollouts: int | None = None,
                             seed: int = 0) -> dict:
    """The greedy policy of ``q`` beside the optimum (the greedy policy of value iteration's
    Q* with the same ``gamma``), both evaluated exactly, or both by the same ``n_rollouts``
    seeded rollouts when ``n_rollouts`` is given.

    Keys: ``success_rate``, ``mean_return``, ``optimal_success_rate``, ``optimal_mean_return``,
    ``gamma``, ``env_id``, ``method`` (and ``n_episodes``, ``seed`` and the ``*_se`` standard
    errors for rollouts).

    Exact values are rounded to ``EXACT_DECIMALS`` decimals: the sums behind them carry
    floating-point error near 1e-15, and rounding keeps a certain success from printing as
    0.9999999999999999 in JSON while the text says 1.0000.
    """
    q_star, _ = value_iteration(env, gamma)
    if n_rollouts is None:
        mine, best = evaluate_exact(env, q), evaluate_exact(env, q_star)
    else:
        mine = evaluate_rollouts(env, q, n_rollouts, seed)
        best = evaluate_rollouts(env, q_star, n_rollouts, seed)
    out = {"success_rate": mine.success_rate, "mean_return": mine.mean_return,
           "optimal_success_rate": best.success_rate, "optimal_mean_return": best.mean_return,
           "gamma": float(gamma), "env_id": env.env_id, "method": mine.method,
           "horizon": mine.horizon}
    if n_rollouts is None:
        for key in ("success_rate", "mean_return", "optimal_success_rate", "optimal_mean_return"):
            out[key] = round(float(out[key]), EXACT_DECIMALS) + 0.0     # + 0.0: no -0.0
    if n_rollouts is not None:
        out.update(n_episodes=mine.n_episodes, seed=mine.seed,
                   success_rate_se=mine.success_rate_se, mean_return_se=mine.mean_return_se,
                   optimal_success_rate_se=best.success_rate_se,
                   optimal_mean_return_se=best.mean_return_se)
    return out
