"""State-owned learning's host-side pieces (the scheme: :mod:`pimrl.swiftrl.owned`): the
owner plan (which DPU holds which states), the merge of split states' rows, SARSA's target
policy, the value vector the host builds each round, the learned table assembled from the
DPUs' tables, and the local layout that lets a table larger than WRAM be learned."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.learners.aggregate import float_to_raw, raw_scale
from pimrl.learners.variants import (
    P_POLICY_MAX32, P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX,
)
from pimrl.partition import even_bounds
from pimrl.rng import epsilon_threshold


@dataclass(frozen=True)
class OwnerPlan:
    """Which DPU owns which states. ``order``: the permutation putting the records in DPU
    order (stable sort by state); ``bounds`` (D + 1): each DPU's records in that order;
    ``own`` (D, 2): each DPU's state range [lo, hi); ``edge_counts`` (D, 2, A): transitions
    per action of the DPU's first (0) and last (1) state, the weights of the merge (the last
    is zero when the range holds one state); ``split`` (S,) bool: states held by more than
    one DPU."""

    order: np.ndarray
    bounds: np.ndarray
    own: np.ndarray
    edge_counts: np.ndarray
    split: np.ndarray

    @property
    def n_dpus(self) -> int:
        return len(self.bounds) - 1

    @property
    def shared(self) -> np.ndarray:
        """(D,) the kernel's ``own_shared`` word: bit 0 when the first state of the DPU's range
        is split, bit 1 when the last is."""
        return (self.split[self.own[:, 0]].astype(np.int64)
                | (self.split[self.own[:, 1] - 1].astype(np.int64) << 1))

    @property
    def fresh(self) -> np.ndarray:
        """(D, 2) the states each DPU alone holds (bootstraps from its own rows)."""
        sh = self.shared
        return np.stack([self.own[:, 0] + (sh & 1), self.own[:, 1] - ((sh >> 1) & 1)], axis=1)

    @property
    def longest_range(self) -> int:
        return int((self.own[:, 1] - self.own[:, 0]).max())


def plan_owners(records: np.ndarray, n_states: int, n_actions: int, n_dpus: int) -> OwnerPlan:
    """Contiguous state ranges balanced by transition count (see the module docstring)."""
    state = np.asarray(records["state"], dtype=np.int64)
    order = np.argsort(state, kind="stable")
    st = state[order]
    act = np.asarray(records["action"], dtype=np.int64)[order]
    bounds = even_bounds(len(st), n_dpus)
    own = np.stack([st[bounds[:-1]], st[bounds[1:] - 1] + 1], axis=1)
    dpu = np.repeat(np.arange(n_dpus), np.diff(bounds))
    first = st == own[dpu, 0]
    last = (st == own[dpu, 1] - 1) & ~first
    counts = np.zeros((n_dpus, 2, n_actions), dtype=np.int64)
    for e, mask in enumerate((first, last)):
        counts[:, e, :] = np.bincount(dpu[mask] * n_actions + act[mask],
                                      minlength=n_dpus * n_actions).reshape(n_dpus, n_actions)
    holders = np.zeros(n_states + 1, dtype=np.int64)
    np.add.at(holders, own[:, 0], 1)
    np.add.at(holders, own[:, 1], -1)
    split = np.cumsum(holders)[:n_states] > 1
    return OwnerPlan(order, bounds, own, counts, split)


def merge_edges(plan: OwnerPlan, edges: np.ndarray, n_states: int, scale: float):
    """The merged rows of the split states, float64 (S, A) (zero elsewhere), from the DPUs'
    raw edge rows ``edges`` (D, 2, A): the transition-weighted mean of the copies, per
    action; an action no copy saw keeps the plain mean of the copies."""
    n_actions = edges.shape[2]
    states = np.stack([plan.own[:, 0], plan.own[:, 1] - 1], axis=1)        # (D, 2)
    use = plan.split[states]
    use[:, 1] &= plan.own[:, 1] - 1 != plan.own[:, 0]                      # one-state ranges
    s = states[use]
    w = plan.edge_counts[use].astype(np.float64)
    rows = edges[use].astype(np.float64) * scale
    num = np.zeros((n_states, n_actions))
    den = np.zeros((n_states, n_actions))
    plain = np.zeros((n_states, n_actions))
    copies = np.zeros(n_states)
    np.add.at(num, s, w * rows)
    np.add.at(den, s, w)
    np.add.at(plain, s, rows)
    np.add.at(copies, s, 1.0)
    plain /= np.where(copies > 0, copies, 1.0)[:, None]
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)


@dataclass(frozen=True)
class TargetPolicy:
    """SARSA's target policy under state ownership, as the weights of its expected value
    (docs/state-owned.md), exact (float64). Epsilon-greedy (``uniform``):
    ``V(s) = cmean * sum_a Q(s, a) + cmax * max_a Q(s, a)`` with ``cmax = 1 - p``,
    ``cmean = p / A``, ``p = eps_threshold / 2^32`` (the kernels' draw). Logged:
    ``V(s) = sum_a w[s, a] Q(s, a)``, ``w[s]`` the dataset's action frequencies at ``s`` (zero
    where ``s`` has no transitions)."""

    uniform: bool
    w: np.ndarray | None = None
    cmean: float = 0.0
    cmax: float = 0.0

    def raw_weights(self, dtype: str, frac_bits: int):
        """``w`` (S, A) rounded once to the kernel's dtype (None when uniform)."""
        return None if self.uniform else float_to_raw(self.w, dtype, frac_bits)

    def param_words(self, frac_bits: int) -> dict:
        """{parameter word index: value}: ``cmax`` and ``cmean`` as float32 bits and in Q
        format (zero for the logged policy)."""
        f32 = lambda x: int(np.float32(x).view(np.int32))        # noqa: E731
        fx = lambda x, n: fixedpoint.to_fixed_scalar(x, frac_bits, n)  # noqa: E731
        return {P_POLICY_MAX32: f32(self.cmax), P_POLICY_MAX_FX: fx(self.cmax, "policy_max"),
                P_POLICY_MEAN32: f32(self.cmean), P_POLICY_MEAN_FX: fx(self.cmean, "policy_mean")}

    def values(self, rows: np.ndarray, states: np.ndarray) -> np.ndarray:
        """V (float64) of ``rows`` (n, A) of ``states`` (n,), exactly (the host's merge)."""
        if self.uniform:
            return self.cmean * rows.sum(axis=1) + self.cmax * rows.max(axis=1)
        return (self.w[states] * rows).sum(axis=1)


def policy_weights(records, n_states: int, n_actions: int, params) -> TargetPolicy | None:
    """SARSA's :class:`TargetPolicy` for ``params.next_action``; None for Q-learning."""
    if params.algo == "q":
        return None
    if params.next_action == "epsilon-greedy":
        pe = epsilon_threshold(params.epsilon) / 2.0**32
        return TargetPolicy(True, cmean=pe / n_actions, cmax=1.0 - pe)
    counts = np.bincount(np.asarray(records["state"], np.int64) * n_actions
                         + np.asarray(records["action"], np.int64),
                         minlength=n_states * n_actions).reshape(n_states, n_actions)
    total = counts.sum(axis=1, keepdims=True)
    return TargetPolicy(False, w=counts / np.where(total > 0, total, 1))


def kernel_values(rows: np.ndarray, dtype: str, frac_bits: int, words: dict | None = None,
                  w: np.ndarray | None = None):
    """The kernels' value of each row of ``rows`` (..., A) raw: Q-learning's max (``words``
    None), or SARSA's policy value: epsilon-greedy from the parameter ``words``
    (:meth:`TargetPolicy.param_words`), logged from the raw weights ``w`` (..., A), in the
    kernels' order of operations (docs/state-owned.md). Vectorised numpy, an independent
    check of the compiled primitives."""
    m = rows[..., 0]
    for a in range(1, rows.shape[-1]):
        m = np.where(rows[..., a] > m, rows[..., a], m)
    if words is None:
        return m
    lo, hi = fixedpoint.INT32_MIN, fixedpoint.INT32_MAX
    if dtype == "int32":
        def fx_mul(x, y):
            prod = np.int64(x) * y.astype(np.int64) if np.ndim(x) == 0 else \
                x.astype(np.int64) * y.astype(np.int64)
            return np.clip((prod + (1 << (frac_bits - 1))) >> frac_bits, lo, hi)

        if w is None:
            tot = np.clip(rows.astype(np.int64).sum(axis=-1), lo, hi)
            v = fx_mul(words[P_POLICY_MEAN_FX], tot) + fx_mul(words[P_POLICY_MAX_FX], m)
        else:
            v = np.zeros(rows.shape[:-1], np.int64)
            for a in range(rows.shape[-1]):
                v += fx_mul(w[..., a], rows[..., a])
        return np.clip(v, lo, hi).astype(np.int32)
    acc = np.zeros(rows.shape[:-1], np.float32)
    if w is None:
        bits = np.array([words[P_POLICY_MEAN32], words[P_POLICY_MAX32]], np.int32)
        cmean, cmax = bits.view(np.float32)
        for a in range(rows.shape[-1]):
            acc = acc + rows[..., a]                    # float32: each step rounded
        return cmean * acc + cmax * m
    for a in range(rows.shape[-1]):
        acc = acc + (w[..., a] * rows[..., a])
    return acc


def build_values(plan: OwnerPlan, v_out: np.ndarray, merged: np.ndarray, v_prev: np.ndarray,
                 dtype: str, frac_bits: int, policy: TargetPolicy | None = None) -> np.ndarray:
    """The next broadcast V (raw, S): the owners' values from ``v_out`` (D, >= longest range)
    for the states one DPU holds, the value of the merged row (its max, or SARSA's
    ``policy`` value, in float64, rounded once) for split states; states no DPU holds keep
    ``v_prev``."""
    v = v_prev.copy()
    lengths = plan.own[:, 1] - plan.own[:, 0]
    dpu = np.repeat(np.arange(plan.n_dpus), lengths)
    k = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    v[plan.own[dpu, 0] + k] = v_out[dpu, k]
    split = np.flatnonzero(plan.split)
    if len(split):
        rows = merged[split]
        value = rows.max(axis=1) if policy is None else policy.values(rows, split)
        v[split] = float_to_raw(value, dtype, frac_bits)
    return v


def assemble_table(plan: OwnerPlan, tables: np.ndarray, dtype: str, frac_bits: int,
                   n_states: int | None = None):
    """The learned table, float64 (S, A), from the DPUs' raw tables: each state's row from
    the DPU that holds it, the merged row for split states, zero for states no DPU holds.
    ``tables`` is (D, S, A) in global ids, or (D, n_local, A) in a :class:`LocalIds` layout
    (give ``n_states``): a DPU's row ``k`` is then its state ``own_lo + k``."""
    n_dpus, n_rows, n_actions = tables.shape
    local = n_states is not None
    n_states = n_states if local else n_rows
    base = plan.own[:, 0] if local else np.zeros(n_dpus, np.int64)
    scale = raw_scale(dtype, frac_bits)
    s = np.arange(n_states)
    owner = np.minimum(np.searchsorted(plan.own[:, 1], s, side="right"), n_dpus - 1)
    held = (plan.own[owner, 0] <= s) & (s < plan.own[owner, 1])
    row = np.where(held, s - base[owner], 0)
    q = np.where(held[:, None], tables[owner, row].astype(np.float64) * scale, 0.0)
    if plan.split.any():
        d = np.arange(n_dpus)
        edges = np.stack([tables[d, plan.own[:, 0] - base],
                          tables[d, plan.own[:, 1] - 1 - base]], axis=1)
        merged = merge_edges(plan, edges, n_states, scale)
        q[plan.split] = merged[plan.split]
    return q


@dataclass(frozen=True)
class LocalIds:
    """State-owned learning's local layout: each DPU's program holds only the rows of the
    states it owns and the values of the states its transitions lead to, so a table far
    larger than a DPU's WRAM (and the CPU's caches) is learned with each DPU holding its
    share. A DPU's owned state ``own_lo + k`` is its local state ``k`` (the order of its
    states is kept, so tasklet mode rows assigns the same lanes); the other states its
    records lead to (``s'`` outside its range), its *halo*, follow in increasing global
    order from local id ``own_hi - own_lo``. The kernels run unchanged on ``n_local`` states,
    with ``own_lo = 0``, and the host pushes each DPU its own value vector (owned states,
    then halo) instead of broadcasting the whole ``V``.

    ``n_local``: the program's state count (the largest range plus halo over the DPUs);
    ``halo`` (D, n_local) int64: each DPU's local id -> global state (``-1``: padding);
    ``records``: the records in DPU order with local ids (the array given, renumbered in
    place)."""

    n_local: int
    halo: np.ndarray
    records: np.ndarray

    def values(self, v: np.ndarray) -> np.ndarray:
        """Each DPU's value vector (D, n_local) from the global ``v`` (S,) (zero padding)."""
        return np.where(self.halo >= 0, v[np.maximum(self.halo, 0)], 0).astype(v.dtype)


def local_ids(plan: OwnerPlan, ordered: np.ndarray, n_states: int) -> LocalIds:
    """The :class:`LocalIds` of ``ordered`` (the records in DPU order, ``records[plan.order]``:
    an array of the caller's, whose state ids it renumbers in place)."""
    n = plan.n_dpus
    counts = np.diff(plan.bounds)
    dpu = np.repeat(np.arange(n, dtype=np.int64), counts)
    lo, hi = plan.own[dpu, 0], plan.own[dpu, 1]
    s = np.asarray(ordered["state"], np.int64)
    s2 = np.asarray(ordered["next_state"], np.int64)
    inside = (s2 >= lo) & (s2 < hi)
    out = np.flatnonzero(~inside)
    keys, inverse = np.unique(dpu[out] * n_states + s2[out], return_inverse=True)
    key_dpu = keys // n_states
    first = np.searchsorted(key_dpu, np.arange(n))        # each DPU's first halo key
    halo_count = np.diff(np.append(first, len(keys)))
    length = plan.own[:, 1] - plan.own[:, 0]
    n_local = int((length + halo_count).max())
    local = ordered                 # renumbered in place: no second copy of the records
    local["state"] = (s - lo).astype(local.dtype["state"])
    nxt = s2 - lo
    rank = np.arange(len(keys)) - first[key_dpu]
    nxt[out] = length[dpu[out]] + rank[inverse.ravel()]
    local["next_state"] = nxt.astype(local.dtype["next_state"])
    halo = np.full((n, n_local), -1, np.int64)
    k = np.arange(n_local)
    owned = k[None, :] < length[:, None]
    halo[owned] = (plan.own[:, :1] + k[None, :])[owned]
    halo[key_dpu, length[key_dpu] + rank] = keys % n_states
    return LocalIds(n_local, halo, local)


def choose_layout(layout: str, global_fits: bool) -> str:
    """``auto``: the global layout (the whole table on every DPU, SwiftRL's) when it fits
    WRAM, else :class:`LocalIds`; ``global`` or ``local`` as asked."""
    if layout not in ("auto", "global", "local"):
        raise ValueError(f"unknown own:R layout {layout!r}; use auto, global or local")
    if layout == "auto":
        return "global" if global_fits else "local"
    return layout


def _values_of(plan, edges, v_out, v_prev, p, n_states, policy):
    merged = merge_edges(plan, edges, n_states, raw_scale(p.dtype, p.frac_bits))
    return build_values(plan, v_out, merged, v_prev, p.dtype, p.frac_bits, policy)
