"""Gymnasium environments by id: ``gym:ID[,key=value,...]`` as a :class:`TabularEnv`.

``make("gym:FrozenLake-v1,map_name=8x8,is_slippery=False")`` makes the environment with
Gymnasium (``gymnasium.make(ID, **kwargs)``, so registered variants and a user's own
registered environments work) and reads its dynamics from ``env.unwrapped.P``, the
transition table of Gymnasium's discrete environments: ``P[s][a]`` is a list of
``(probability, next_state, reward, terminated)``, kept in its order with repeats, as
pimrl's own tables are (docs/design.md). Also read:

- the spaces: both must be ``Discrete`` (with ``start`` 0);
- the initial-state distribution: ``unwrapped.initial_state_distrib`` where the environment
  has one (the toy-text ones do). An environment that only samples its start is reset
  ``INITIAL_SAMPLES`` times with seeds 0, 1, ... and the empirical distribution is used; the
  description says so;
- the step limit: the registered ``max_episode_steps`` (or ``max_episode_steps=N`` among the
  options, which Gymnasium itself takes). An environment registered without one (e.g.
  ``CliffWalking-v1``) gets ``DEFAULT_MAX_STEPS``, the limit pimrl's own CliffWalking uses;
- the goal states (the successes of the exact evaluation): the states entered by the
  terminating transitions of the highest reward, e.g. FrozenLake's G, Taxi's deliveries,
  CliffWalking's 47.

Values of options are Python literals (``True``, ``8``, ``'8x8'``) or bare words (strings).
Gymnasium is an optional dependency: ``pip install pimrl[gym]``.
"""
from __future__ import annotations

import ast
import warnings

import numpy as np

from pimrl.envs.core import TabularEnv

PREFIX = "gym:"
#: resets used to estimate the start distribution of an env that only samples it
INITIAL_SAMPLES = 10_000
#: step limit of an environment registered without one (pimrl's CliffWalking uses it too)
DEFAULT_MAX_STEPS = 200


def is_gym_id(env_id) -> bool:
    return isinstance(env_id, str) and env_id.strip().startswith(PREFIX)


def parse_gym_id(env_id: str) -> tuple[str, dict]:
    """``"gym:ID,k=v,..."`` -> ``(ID, {k: value})``; values are Python literals or words."""
    body = env_id.strip()[len(PREFIX):]
    name, *tokens = [t.strip() for t in body.split(",")]
    if not name:
        raise ValueError(f"{env_id!r}: no Gymnasium id after 'gym:' (e.g. gym:FrozenLake-v1)")
    kwargs: dict = {}
    for token in filter(None, tokens):
        key, eq, raw = token.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"option {token!r} in {env_id!r} is not of the form key=value")
        if key in kwargs:
            raise ValueError(f"option {key!r} given twice in {env_id!r}")
        try:
            kwargs[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            kwargs[key] = raw                       # a bare word: a string
    return name, kwargs


def canonical_id(name: str, kwargs: dict) -> str:
    return PREFIX + name + "".join(f",{k}={kwargs[k]!r}" for k in sorted(kwargs))


def _gymnasium():
    try:
        import gymnasium
    except ImportError:
        raise ValueError("gym: environments need Gymnasium: pip install 'pimrl[gym]' "
                         "(or pip install gymnasium)") from None
    return gymnasium


def make_gym(env_id: str) -> TabularEnv:
    """The :class:`TabularEnv` of a Gymnasium id (see the module docstring)."""
    gym = _gymnasium()
    name, kwargs = parse_gym_id(env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # deprecation notes of old versions
            env = gym.make(name, **kwargs)
    except gym.error.Error as exc:
        raise ValueError(f"{env_id!r}: Gymnasium cannot make it: {exc}") from None
    except TypeError as exc:
        raise ValueError(f"{env_id!r}: bad options for {name}: {exc}") from None
    try:
        return _tables(env, env_id, name, kwargs)
    finally:
        env.close()


def _tables(env, env_id: str, name: str, kwargs: dict) -> TabularEnv:
    gym = _gymnasium()
    Discrete = gym.spaces.Discrete
    for what, space in (("observation", env.observation_space), ("action", env.action_space)):
        if not isinstance(space, Discrete) or int(space.start) != 0:
            raise ValueError(f"{env_id!r}: its {what} space is {space}; pimrl needs Discrete(n) "
                             "observations and actions (starting at 0)")
    u = env.unwrapped
    P = getattr(u, "P", None)
    if not isinstance(P, dict):
        raise ValueError(f"{env_id!r}: the environment has no transition table P (env.unwrapped.P), "
                         "which pimrl reads its dynamics from")
    S, A = int(env.observation_space.n), int(env.action_space.n)
    K = 1
    for s in range(S):
        row = P.get(s)
        if not isinstance(row, dict) or any(not isinstance(row.get(a), list) or not row.get(a)
                                            for a in range(A)):
            raise ValueError(f"{env_id!r}: P[{s}] must map each action 0..{A - 1} to a non-empty "
                             "list of (probability, next_state, reward, terminated)")
        K = max(K, max(len(row[a]) for a in range(A)))
    next_state = np.repeat(np.arange(S, dtype=np.int32)[:, None, None], A, axis=1).repeat(K, axis=2)
    prob = np.zeros((S, A, K))
    reward = np.zeros((S, A, K))
    terminated = np.zeros((S, A, K), dtype=bool)
    for s in range(S):
        for a in range(A):
            for k, outcome in enumerate(P[s][a]):
                try:
                    p, ns, r, t = outcome
                except (TypeError, ValueError):
                    raise ValueError(f"{env_id!r}: P[{s}][{a}][{k}] is {outcome!r}, not "
                                     "(probability, next_state, reward, terminated)") from None
                if not 0 <= int(ns) < S:
                    raise ValueError(f"{env_id!r}: P[{s}][{a}][{k}] leads to state {ns}, "
                                     f"outside [0, {S})")
                next_state[s, a, k], prob[s, a, k] = int(ns), float(p)
                reward[s, a, k], terminated[s, a, k] = float(r), bool(t)
    bad = np.flatnonzero(np.abs(prob.sum(axis=2) - 1.0).ravel() > 1e-9)
    if bad.size:
        s, a = divmod(int(bad[0]), A)
        raise ValueError(f"{env_id!r}: the probabilities of P[{s}][{a}] sum to "
                         f"{prob[s, a].sum():.6g}, not 1")
    initial, how = _initial(env, S, env_id)
    good = terminated & (prob > 0)
    goal = np.zeros(S, dtype=bool)
    if good.any():
        best = reward[good].max()
        goal[np.unique(next_state[good & (reward == best)])] = True
    limit = env.spec.max_episode_steps if env.spec is not None else None
    max_steps = int(limit) if limit else DEFAULT_MAX_STEPS
    description = (f"Gymnasium {name}{'(' + ', '.join(f'{k}={v!r}' for k, v in sorted(kwargs.items())) + ')' if kwargs else ''}: "
                   f"{S} states, {A} actions, up to {K} outcomes each, read from env.unwrapped.P. "
                   f"Start: {how}. Goal: the states entered by the terminating transitions of the "
                   f"highest reward ({int(goal.sum())} states). Episode end: as in P; truncated "
                   f"after {max_steps} steps"
                   + ("" if limit else " (no registered limit: pimrl's default)") + ".")
    desc = getattr(u, "desc", None)
    if desc is not None:
        try:
            desc = tuple(b"".join(row).decode() for row in np.asarray(desc))
        except (TypeError, ValueError, AttributeError):
            desc = None
    return TabularEnv(next_state=next_state, prob=prob, reward=reward, terminated=terminated,
                      initial_dist=initial, goal=goal, max_episode_steps=max_steps,
                      env_id=canonical_id(name, kwargs), description=description, desc=desc)


def _initial(env, S: int, env_id: str) -> tuple[np.ndarray, str]:
    dist = getattr(env.unwrapped, "initial_state_distrib", None)
    if dist is not None:
        d = np.asarray(dist, dtype=np.float64).ravel()
        if d.shape == (S,) and np.all(d >= 0) and abs(d.sum() - 1.0) < 1e-9:
            return d, "initial_state_distrib"
    counts = np.zeros(S)
    for seed in range(INITIAL_SAMPLES):
        s, _ = env.reset(seed=seed)
        if not 0 <= int(s) < S:
            raise ValueError(f"{env_id!r}: reset() returned state {s}, outside [0, {S})")
        counts[int(s)] += 1
    return counts / counts.sum(), f"estimated from {INITIAL_SAMPLES} resets (seeds 0..{INITIAL_SAMPLES - 1})"


def rollouts_in_gymnasium(env_id: str, policy, n_episodes: int, seed: int,
                          max_steps: int | None = None, goal=None) -> dict:
    """Run ``policy`` (a callable on an observation) for ``n_episodes`` episodes in the real
    Gymnasium environment of ``env_id`` (episode ``i`` reset with ``seed + i``), each up to
    ``max_steps`` steps (default: the tabular env's limit). Returns the mean undiscounted
    return, success rate (terminated in a state of ``goal``) and length, each with the
    half-width of its 95 % confidence interval (1.96 standard errors)."""
    gym = _gymnasium()
    name, kwargs = parse_gym_id(env_id)
    if max_steps is None or goal is None:
        table = make_gym(env_id)
        max_steps = table.max_episode_steps if max_steps is None else max_steps
        goal = table.goal if goal is None else goal
    n = int(n_episodes)
    returns, lengths, success = np.zeros(n), np.zeros(n), np.zeros(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make(name, **kwargs)
    try:
        for i in range(n):
            obs, _ = env.reset(seed=int(seed) + i)
            for t in range(int(max_steps)):
                obs, r, term, trunc, _ = env.step(policy(obs))
                returns[i] += float(r)
                lengths[i] = t + 1
                if term:
                    success[i] = float(bool(goal[int(obs)]))
                if term or trunc:
                    break
    finally:
        env.close()
    half = (lambda x: float(1.96 * x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))
    return {"method": "gymnasium-rollouts", "n_episodes": n, "seed": int(seed),
            "horizon": int(max_steps), "mean_return": float(returns.mean()),
            "mean_return_ci95": half(returns), "success_rate": float(success.mean()),
            "success_rate_ci95": half(success), "mean_length": float(lengths.mean())}
