"""Reference offline learners: the oracle every other backend is checked against.

``learn_partition`` runs one partition (one simulated DPU) split into tasklet lanes, in the
round-robin order of docs/design.md, with the variant's compiled loop
(:mod:`pimrl.learners.kernels`); ``OfflineLearner`` is the whole-dataset learner behind
``pimrl train --backend reference``. The pure-Python oracle (``oracle.py``) checks them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from pimrl.data.records import NO_ACTION, TRANSITION_DTYPE
from pimrl.learners import fixedpoint
from pimrl.learners.kernels import compiled
from pimrl.learners.params import LearnerParams
from pimrl.parallel import first_found
from pimrl.partition import even_bounds, lane_bounds
from pimrl.rng import lane_seeds


@njit(cache=True, inline="always")
def record_fault(state, next_state, action, next_action, terminated, n_states, n_actions,
                 check_next):
    """The first field of one record outside the table, in the order the checks name it: 0
    state, 1 next_state, 2 action, 3 next_action of a non-terminal record when
    ``check_next``; -1 when it has none."""
    if state < 0 or state >= n_states:
        return 0
    if next_state < 0 or next_state >= n_states:
        return 1
    if action < 0 or action >= n_actions:
        return 2
    if check_next and terminated == 0 and (next_action >= n_actions or next_action == NO_ACTION):
        return 3
    return -1


@njit(cache=True, nogil=True)
def _first_out_of_range(states, next_states, actions, next_actions, terminated, n_states,
                        n_actions, check_next, lo, hi):
    """(field, index) of the first record of ``lo..hi-1`` with a field outside the table
    (:func:`record_fault`), or (-1, -1): one pass, where a numpy mask per field took ~10 ms
    per million records."""
    for i in range(lo, hi):
        field = record_fault(states[i], next_states[i], actions[i], next_actions[i],
                             terminated[i], n_states, n_actions, check_next)
        if field >= 0:
            return field, i
    return -1, -1


def check_record_array(records: np.ndarray) -> None:
    """The checks of :func:`check_records` that need no pass over the records."""
    if records.dtype != TRANSITION_DTYPE:
        raise ValueError(f"records must have dtype TRANSITION_DTYPE, got {records.dtype}")
    if len(records) == 0:
        raise ValueError("the dataset holds no transitions")


def record_fault_error(records: np.ndarray, field: int, i: int, n_states: int,
                       n_actions: int) -> ValueError:
    """The error naming record ``i`` and its ``field`` (a code of :func:`record_fault`)."""
    if field == 3:
        return ValueError(
            f"record {i}: next_action={int(records['next_action'][i])} is unknown or out of "
            f"range, which SARSA with the logged next action cannot use (use --next-action "
            f"epsilon-greedy)")
    name = ("state", "next_state", "action")[field]
    limit = n_actions if name == "action" else n_states
    return ValueError(f"record {i}: {name}={int(records[name][i])} outside [0, {limit})")


def check_records(records: np.ndarray, n_states: int, n_actions: int, params: LearnerParams):
    """Reject records a learner cannot use, naming the first offending index."""
    check_record_array(records)
    check_next = params.algo == "sarsa" and params.next_action == "logged"
    fields = (records["state"], records["next_state"], records["action"],
              records["next_action"], records["terminated"])
    field, i = first_found(lambda lo, hi: tuple(_first_out_of_range(
        *fields, n_states, n_actions, check_next, lo, hi)), len(records), (-1, -1))
    if field >= 0:
        raise record_fault_error(records, field, i, n_states, n_actions)


def record_words(records: np.ndarray, params: LearnerParams):
    """The records as the compiled loops read them: ``(words, rewards)``, two (N, 4) views of
    one little-endian copy of the 16-byte records (docs/design.md), ``words`` as int32 and
    ``rewards`` as float32, or, for INT32 kernels, as int32 with the reward rewritten in Q
    format (as the host does before a push to DPUs). One record is one 16-byte load, as on a
    DPU and in C: a random sample touches one cache line, not one per field."""
    if params.dtype == "int32":
        words = fixedpoint.records_with_fixed_rewards(records, params.frac_bits)
        words = words.view(np.int32).reshape(-1, 4)
        return words, words
    words = np.ascontiguousarray(records).copy().view(np.int32).reshape(-1, 4)
    return words, words.view(np.float32)


def columns(records: np.ndarray, params: LearnerParams):
    """The record fields as the arrays a compiled loop takes: (state, action, reward,
    next_state, next_action, terminated), the reward as float32 or, for INT32 kernels, in
    Q format."""
    reward = np.ascontiguousarray(records["reward"], dtype=np.float32)
    if params.dtype == "int32":
        reward = fixedpoint.to_fixed(reward, params.frac_bits, "reward")
    return (np.ascontiguousarray(records["state"]), np.ascontiguousarray(records["action"]),
            reward, np.ascontiguousarray(records["next_state"]),
            np.ascontiguousarray(records["next_action"]),
            np.ascontiguousarray(records["terminated"]))


@dataclass
class PartitionResult:
    """Raw outcome of one partition: Q in the kernel's own dtype, lane RNG states, saturations."""

    q_raw: np.ndarray
    rng: np.ndarray
    saturations: int

    def q_float(self, params: LearnerParams) -> np.ndarray:
        if params.dtype == "int32":
            return fixedpoint.from_fixed(self.q_raw, params.frac_bits)
        return self.q_raw.astype(np.float64)


def learn_partition(records, n_states, n_actions, params: LearnerParams, lanes,
                    lane_ids=None, q_init=None, rng=None, words=None, v=None,
                    own=None, owners=None) -> PartitionResult:
    """Learn one partition. ``lanes``: (T, 2) record ranges, one per tasklet.

    ``lane_ids`` (global lane numbers) seed the lanes' streams unless ``rng`` (their current
    states) is given; ``q_init`` (raw dtype) continues from an earlier table. State-owned
    variants take ``v`` (raw broadcast values) and ``own`` (the owned range lo, hi). Tasklet
    mode ``rows`` takes ``owners``, the partition's (owner (S,), state_list (S,), list_bounds
    (T + 1,)) of :func:`pimrl.partition.state_lanes` (which also gives the lanes and the
    records' order).
    """
    lanes = np.ascontiguousarray(lanes, dtype=np.int64).reshape(-1, 2)
    if rng is None:
        ids = np.arange(len(lanes)) if lane_ids is None else np.asarray(lane_ids)
        rng = lane_seeds(params.seed, ids)
    rng = np.array(rng, dtype=np.uint32).reshape(1, -1)
    raw_dtype = np.int32 if params.dtype == "int32" else np.float32
    q = (np.zeros((1, n_states, n_actions), raw_dtype) if q_init is None
         else np.array(q_init, dtype=raw_dtype).reshape(1, n_states, n_actions))
    sat = np.zeros(1, np.int64)
    words = record_words(records, params) if words is None else words
    compiled(params.variant).partitions(
        *words, lanes[None], rng, q, params.kernel_scalars(), sat, v=v,
        own=None if own is None else np.reshape(own, (1, 2)),
        owners=None if owners is None else tuple(np.asarray(a)[None] for a in owners))
    return PartitionResult(q[0], rng[0], int(sat[0]))


class OfflineLearner:
    """Tabular Q-learning / SARSA over a whole offline dataset (one partition, one lane).

    Parameters are those of :class:`LearnerParams`. ``fit`` sets ``q_`` (float64, states x
    actions), ``q_raw_`` (float32 or Q-format int32), ``saturations_`` and ``n_updates_``.
    """

    def __init__(self, params: LearnerParams | None = None, **kwargs):
        self.params = params if params is not None else LearnerParams(**kwargs)

    def fit(self, records: np.ndarray, n_states: int, n_actions: int) -> "OfflineLearner":
        check_records(records, n_states, n_actions, self.params)
        lanes = lane_bounds(even_bounds(len(records), 1), 1)[0]
        res = learn_partition(records, n_states, n_actions, self.params, lanes)
        self.q_raw_ = res.q_raw
        self.q_ = res.q_float(self.params)
        self.saturations_ = res.saturations
        self.n_updates_ = len(records) * self.params.epochs
        return self
