"""Generate an offline experience dataset by running a behaviour policy in a ``TabularEnv``.

How the seed maps to the draws (the whole dataset is one sequential stream)
---------------------------------------------------------------------------
``rng = numpy.random.Generator(numpy.random.PCG64(seed))``. The generator first draws
``rng.random(2)`` = ``(u_start, u_action)`` for the first episode's start state and first
action, then, for the transitions ``i = 0, 1, ...`` in order, four uniforms each, drawn as
``rng.random((m, 4))`` blocks of rows (row-major, so the block size does not matter):

- column 0: the outcome of ``(s_i, a_i)``;
- column 1: the behaviour policy's action at ``s'_i`` (the record's ``next_action``);
- column 2: the start state of the next episode, used only if this step ends the episode;
- column 3: the first action of that next episode, used only if this step ends the episode.

Every transition consumes its four uniforms whether it uses them or not, so the draw that
decides record ``i`` is fixed by ``i`` alone.

Sampling from a uniform ``u`` in [0, 1):
- a distribution ``p`` (start states, or the outcomes of ``(s, a)`` in the env's order) gives
  the first index ``k`` with ``u < c[k]``, ``c`` the cumulative sum of ``p`` in which the
  last positive slot (and every later one) is exactly 1.0 (so a zero-probability slot is
  never chosen); this is the env's own inverse-CDF rule;
- ``uniform``: action ``min(floor(u * A), A - 1)``;
- ``epsilon-greedy`` (Q-table ``q``, ``epsilon``): if ``u < epsilon`` the action is
  ``min(floor(u / epsilon * A), A - 1)`` (uniform over all actions), otherwise the greedy
  action ``argmax_a q[s, a]``, ties going to the lowest index.

Episodes
--------
An episode starts from ``initial_dist``. A step that reaches a terminal outcome has
``terminated = 1``; the step that reaches the episode limit without terminating has
``truncated = 1`` (never both). After either, the next record starts a new episode.
``next_action`` is the behaviour policy's action at ``s'``: within an episode it is exactly
the next record's ``action``; after a terminated or truncated step it is still drawn from
the policy at ``s'`` (a fresh draw that the next episode does not use).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .records import MAX_ACTIONS, TRANSITION_DTYPE

#: Transitions generated per block of pre-drawn uniforms.
BLOCK = 1 << 16

POLICIES = ("uniform", "epsilon-greedy")
#: What each behaviour policy does (``pimrl list``, ``pimrl data generate --help``).
POLICY_DESCRIPTIONS = {
    "uniform": "every action with the same probability (SwiftRL's datasets)",
    "epsilon-greedy": "a uniformly random action with probability epsilon, else the greedy "
                      "action of a given Q-table (--q, with --epsilon or epsilon-greedy:EPS)",
}


def _cumulative(p: np.ndarray, axis: int) -> np.ndarray:
    """Cumulative probabilities with the last positive slot (and later ones) set to 1.0."""
    c = np.cumsum(p, axis=axis)
    k_shape = [1] * p.ndim
    k_shape[axis] = p.shape[axis]
    k = np.arange(p.shape[axis]).reshape(k_shape)
    last = np.where(p > 0, k, -1).max(axis=axis, keepdims=True)
    c = np.where(k >= last, 1.0, c)
    return np.ascontiguousarray(c)


def parse_policy(policy: str, epsilon=None):
    """``("uniform", None)`` or ``("epsilon-greedy", eps)`` from a policy name.

    ``policy`` is ``"uniform"``, ``"epsilon-greedy"`` (with ``epsilon``) or
    ``"epsilon-greedy:EPS"``."""
    name, _, arg = str(policy).partition(":")
    if name == "uniform":
        if arg:
            raise ValueError(f"policy 'uniform' takes no argument, got {policy!r}")
        return "uniform", None
    if name == "epsilon-greedy":
        if arg:
            try:
                eps_s = float(arg)
            except ValueError:
                raise ValueError(f"policy {policy!r}: epsilon {arg!r} is not a number") from None
            if epsilon is not None and float(epsilon) != eps_s:
                raise ValueError(f"policy {policy!r} disagrees with epsilon={epsilon}")
            epsilon = eps_s
        if epsilon is None:
            raise ValueError("policy 'epsilon-greedy' needs an epsilon")
        epsilon = float(epsilon)
        if not (0.0 <= epsilon <= 1.0):
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
        return "epsilon-greedy", epsilon
    raise ValueError(f"unknown behaviour policy {policy!r} (expected one of {', '.join(POLICIES)})")


def policy_description(policy: str, epsilon=None) -> str:
    """The header string for a policy: ``uniform`` or ``epsilon-greedy:EPS``."""
    name, eps = parse_policy(policy, epsilon)
    if name == "uniform":
        return "uniform"
    text = f"epsilon-greedy:{eps!r}"
    return text if len(text) <= 30 else f"epsilon-greedy:{eps:.8g}"


@njit(cache=True, nogil=True)
def _pick(c, u):  # pragma: no cover - compiled
    n = c.shape[0]
    for k in range(n - 1):
        if u < c[k]:
            return k
    return n - 1


@njit(cache=True, nogil=True)
def _act(s, u, n_actions, greedy, eps):  # pragma: no cover - compiled
    """Behaviour action at ``s`` from one uniform (greedy[0] < 0 means uniform policy)."""
    if greedy[0] < 0:
        a = np.int64(u * n_actions)
    elif u < eps:
        a = np.int64(u / eps * n_actions)
    else:
        return np.int64(greedy[s])
    if a >= n_actions:
        a = n_actions - 1
    return a


@njit(cache=True, nogil=True)
def _generate_block(next_state, cum_prob, reward, terminated, cum_init, greedy, eps, limit,
                    u, carry, o_s, o_ns, o_r, o_a, o_na, o_term, o_trunc):  # pragma: no cover
    """Generate ``len(u)`` transitions; ``carry`` = [state, action, steps so far]."""
    n_actions = next_state.shape[1]
    s = carry[0]
    a = carry[1]
    t = carry[2]
    for i in range(u.shape[0]):
        k = _pick(cum_prob[s, a], u[i, 0])
        ns = next_state[s, a, k]
        d = terminated[s, a, k]
        t += 1
        tr = (not d) and t >= limit
        na = _act(ns, u[i, 1], n_actions, greedy, eps)
        o_s[i] = s
        o_ns[i] = ns
        o_r[i] = reward[s, a, k]
        o_a[i] = a
        o_na[i] = na
        o_term[i] = 1 if d else 0
        o_trunc[i] = 1 if tr else 0
        if d or tr:
            s = _pick(cum_init, u[i, 2])
            a = _act(s, u[i, 3], n_actions, greedy, eps)
            t = 0
        else:
            s = ns
            a = na
    carry[0] = s
    carry[1] = a
    carry[2] = t


def _env_of(env):
    if isinstance(env, str):
        from pimrl.envs import make

        return make(env)
    return env


class _Generation:
    """One dataset's generation in progress: :meth:`fill` writes the next records into a
    buffer, continuing the one stream of draws (the module docstring), so the records do not
    depend on how the calls cut them."""

    def __init__(self, env, n_transitions, seed, policy, q, epsilon, max_episode_steps):
        env = _env_of(env)
        n_transitions = int(n_transitions)
        if n_transitions < 0:
            raise ValueError(f"n_transitions must be >= 0, got {n_transitions}")
        if seed is None or int(seed) < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed}")
        S, A = env.n_states, env.n_actions
        if A > MAX_ACTIONS:
            raise ValueError(f"{env.env_id}: {A} actions, a record holds at most {MAX_ACTIONS}")
        name, eps = parse_policy(policy, epsilon)
        if name == "uniform":
            if q is not None:
                raise ValueError("policy 'uniform' takes no Q-table")
            greedy = np.full(1, -1, dtype=np.int64)
            eps = 0.0
        else:
            if q is None:
                raise ValueError("policy 'epsilon-greedy' needs a Q-table q of shape (S, A)")
            q = np.asarray(q, dtype=np.float64)
            if q.shape != (S, A):
                raise ValueError(f"Q-table has shape {q.shape}, the env needs ({S}, {A})")
            if not np.isfinite(q).all():
                raise ValueError("Q-table holds NaN or infinite values")
            greedy = np.argmax(q, axis=1).astype(np.int64)  # first maximum: lowest index
        limit = env.max_episode_steps if max_episode_steps is None else max_episode_steps
        if limit is None or int(limit) <= 0:
            limit = np.iinfo(np.int64).max
        limit = min(int(limit), np.iinfo(np.int64).max)   # beyond the data, the same: no limit

        init = np.asarray(env.initial_dist, dtype=np.float64)
        if not (init > 0).any():
            raise ValueError(f"{env.env_id}: initial_dist has no positive entry")
        cum_init = _cumulative(init, axis=0)
        self.env, self.n_transitions, self.left = env, n_transitions, n_transitions
        self.tables = (np.ascontiguousarray(env.next_state, dtype=np.int32),
                       _cumulative(np.asarray(env.prob, dtype=np.float64), axis=2),
                       np.ascontiguousarray(env.reward, dtype=np.float64),
                       np.ascontiguousarray(env.terminated, dtype=np.bool_),
                       cum_init, greedy, eps, limit)
        self.policy, self.epsilon = name, eps
        self.rng = np.random.Generator(np.random.PCG64(int(seed)))
        u0 = self.rng.random(2)
        s0 = int(np.searchsorted(cum_init, u0[0], side="right"))
        s0 = min(s0, S - 1)
        if greedy[0] < 0:
            a0 = min(int(u0[1] * A), A - 1)
        elif u0[1] < eps:
            a0 = min(int(u0[1] / eps * A), A - 1)
        else:
            a0 = int(greedy[s0])
        self.carry = np.array([s0, a0, 0], dtype=np.int64)

    def fill(self, out: np.ndarray) -> None:
        """The next ``len(out)`` records into ``out`` (TRANSITION_DTYPE)."""
        if len(out) > self.left:
            raise ValueError(f"{len(out)} more records asked of a dataset of "
                             f"{self.n_transitions} with {self.left} left")
        cols = [out[f] for f in ("state", "next_state", "reward", "action", "next_action",
                                 "terminated", "truncated")]
        for start in range(0, len(out), BLOCK):
            m = min(BLOCK, len(out) - start)
            u = self.rng.random((m, 4))
            _generate_block(*self.tables, u, self.carry,
                            *(c[start:start + m] for c in cols))
        self.left -= len(out)


def generate_dataset(
    env,
    n_transitions: int,
    seed: int,
    policy: str = "uniform",
    *,
    q: np.ndarray | None = None,
    epsilon: float | None = None,
    max_episode_steps: int | None = None,
) -> np.ndarray:
    """``n_transitions`` records (TRANSITION_DTYPE) from ``env`` under a behaviour policy.

    ``env`` is a ``TabularEnv`` or a spec string for ``pimrl.envs.make``. ``policy`` is
    ``"uniform"`` or ``"epsilon-greedy"`` (needs ``q`` of shape (S, A) and ``epsilon``; also
    accepted as ``"epsilon-greedy:EPS"``). ``seed`` (an int >= 0) fixes every draw: see the
    module docstring for the exact mapping. ``max_episode_steps`` overrides the env's limit.
    Numba-compiled; about 10^8 transitions a second on one core, plus the draws."""
    gen = _Generation(env, n_transitions, seed, policy, q, epsilon, max_episode_steps)
    out = np.empty(gen.n_transitions, dtype=TRANSITION_DTYPE)
    gen.fill(out)
    return out


#: Records generated per write by :func:`generate_to_file` (16 MiB).
FILE_CHUNK = 1 << 20


def generate_to_file(
    path,
    env,
    n_transitions: int,
    seed: int,
    policy: str = "uniform",
    *,
    q: np.ndarray | None = None,
    epsilon: float | None = None,
    max_episode_steps: int | None = None,
    chunk: int = FILE_CHUNK,
):
    """:func:`generate_dataset`'s records written straight into the dataset file ``path``
    (:func:`pimrl.data.format.write_dataset`), ``chunk`` records at a time through one
    buffer: memory stays at one chunk whatever the size, and the file is the one
    ``save_dataset(path, generate_dataset(...), ...)`` writes, byte for byte, whatever
    ``chunk``. Returns the path."""
    from .format import write_dataset

    gen = _Generation(env, n_transitions, seed, policy, q, epsilon, max_episode_steps)
    return write_dataset(path, gen.n_transitions, gen.fill, gen.env.env_id, seed,
                         policy_description(gen.policy, gen.epsilon),
                         n_states=gen.env.n_states, n_actions=gen.env.n_actions, chunk=chunk)
