"""Learned Q-tables as policies: callables on an observation, for Gymnasium's loop, and a
small file that loads without pimrl.

    from pimrl.policy import GreedyPolicy, load_policy

    pi = GreedyPolicy(q)                  # q: (states, actions)
    obs, _ = env.reset(seed=0)            # any Gymnasium env with Discrete observations
    obs, r, term, trunc, _ = env.step(pi(obs))

The policy file (``pimrl train --save-policy PATH``, :meth:`GreedyPolicy.save`) is one
``.npz`` archive, readable with numpy alone (``allow_pickle=False``):

- ``q``: float64 (S, A), the learned Q-table;
- ``greedy_action``: int64 (S,), the greedy action of each state (the lowest among ties);
- ``metadata``: a 0-d unicode array holding one JSON object: ``format``
  (``"pimrl-policy"``), ``format_version`` (1), ``kind`` (``"greedy"`` or
  ``"epsilon-greedy"``), ``epsilon``, ``seed``, ``env_id`` (pimrl's id; ``gym:ID,...`` for
  a Gymnasium env), ``n_states``, ``n_actions``, ``pimrl_version`` and whatever the writer
  adds (e.g. the learner's parameters).

Without pimrl::

    z = numpy.load("policy.npz")
    action = int(z["greedy_action"][obs])
    meta = json.loads(str(z["metadata"]))
"""
from __future__ import annotations

import json

import numpy as np

FORMAT = "pimrl-policy"
FORMAT_VERSION = 1


class GreedyPolicy:
    """The greedy policy of a Q-table ``q`` (S, A): ``policy(observation)`` is the action of
    the highest value, the lowest index among ties (as pimrl's evaluation takes it).

    ``env_id`` (optional) names the environment the table was learned for; ``metadata``
    (a dict) travels with the table into the policy file."""

    kind = "greedy"

    def __init__(self, q, env_id: str | None = None, metadata: dict | None = None):
        q = np.array(q, dtype=np.float64)
        if q.ndim != 2 or 0 in q.shape:
            raise ValueError(f"a Q-table must have shape (states, actions), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError("the Q-table holds NaN or infinite values")
        q.flags.writeable = False
        self.q = q
        from pimrl.envs.evaluation import greedy_policy

        self.greedy_action = greedy_policy(q).astype(np.int64)   # the evaluation's rule
        self.greedy_action.flags.writeable = False
        self.env_id = env_id
        self.metadata = dict(metadata or {})

    @property
    def n_states(self) -> int:
        return self.q.shape[0]

    @property
    def n_actions(self) -> int:
        return self.q.shape[1]

    def _state(self, observation) -> int:
        try:
            s = int(observation)
        except (TypeError, ValueError):
            raise ValueError(f"observation {observation!r} is not a discrete state") from None
        if not 0 <= s < self.n_states or s != observation:
            raise ValueError(f"observation {observation!r} outside [0, {self.n_states})")
        return s

    def __call__(self, observation) -> int:
        return int(self.greedy_action[self._state(observation)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(S={self.n_states}, A={self.n_actions}, env_id={self.env_id!r})"

    def _meta(self) -> dict:
        from pimrl import __version__

        return {**self.metadata, "format": FORMAT, "format_version": FORMAT_VERSION,
                "kind": self.kind, "env_id": self.env_id, "n_states": self.n_states,
                "n_actions": self.n_actions, "pimrl_version": __version__}

    def save(self, path) -> "GreedyPolicy":
        """Write the policy file (see the module docstring), atomically."""
        from pimrl.io import atomic_writer

        with atomic_writer(path) as f:
            np.savez(f, q=self.q, greedy_action=self.greedy_action,
                     metadata=np.array(json.dumps(self._meta(), sort_keys=True)))
        return self


class EpsilonGreedyPolicy(GreedyPolicy):
    """With probability ``epsilon`` a uniformly random action, else the greedy one; the
    draws come from ``numpy.random.default_rng(seed)`` (one uniform a call, then one for the
    action when exploring)."""

    kind = "epsilon-greedy"

    def __init__(self, q, epsilon: float, seed: int = 0, env_id: str | None = None,
                 metadata: dict | None = None):
        super().__init__(q, env_id, metadata)
        epsilon = float(epsilon)
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        self.epsilon, self.seed = epsilon, int(seed)
        self._rng = np.random.default_rng(self.seed)

    def __call__(self, observation) -> int:
        s = self._state(observation)
        if self._rng.random() < self.epsilon:
            return int(self._rng.integers(self.n_actions))
        return int(self.greedy_action[s])

    def _meta(self) -> dict:
        return {**super()._meta(), "epsilon": self.epsilon, "seed": self.seed}


def load_policy(path) -> GreedyPolicy:
    """A policy file back as the policy it was (``ValueError`` naming the file if it is not
    one)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            q, meta = z["q"], json.loads(str(z["metadata"]))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, KeyError, ValueError, EOFError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a pimrl policy file ({exc})" if str(exc) else
                         f"{path}: not a pimrl policy file (the file is empty)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a pimrl policy file (format {meta.get('format') if isinstance(meta, dict) else None!r})")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{path}: policy format version {meta['format_version']} is newer than "
                         f"this pimrl reads ({FORMAT_VERSION})")
    extra = {k: v for k, v in meta.items() if k not in (
        "format", "format_version", "kind", "env_id", "n_states", "n_actions", "pimrl_version",
        "epsilon", "seed")}
    if meta.get("kind") == "epsilon-greedy":
        return EpsilonGreedyPolicy(q, meta["epsilon"], meta.get("seed", 0), meta.get("env_id"), extra)
    return GreedyPolicy(q, meta.get("env_id"), extra)
