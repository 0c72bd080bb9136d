"""Table builders for Gymnasium's toy_text environments (vectorised numpy).

Each builder reproduces Gymnasium 1.x's ``env.unwrapped.P`` entry by entry: the same
outcome order, repeats and probabilities (computed by the same floating-point expressions).
"""
from __future__ import annotations

import numpy as np

# FrozenLake actions and maps (Gymnasium's)
LEFT, DOWN, RIGHT, UP = 0, 1, 2, 3
FROZEN_LAKE_MAPS = {
    "4x4": ("SFFF", "FHFH", "FFFH", "HFFG"),
    "8x8": ("SFFFFFFF", "FFFFFFFF", "FFFHFFFF", "FFFFFHFF",
            "FFFHFFFF", "FHHFFFHF", "FHFFHFHF", "FFFHFFFG"),
}
#: frozen-tile probability of pimrl's generated FrozenLake maps
GENERATED_FROZEN_P = 0.8

FROZEN_LAKE_DOC = """FrozenLake: walk from the start S (top-left) to the goal G (bottom-right) over frozen
tiles F without falling into a hole H. Actions: 0 Left, 1 Down, 2 Right, 3 Up; slippery
(default) moves in (a-1)%4, a, (a+1)%4 with probability 1/3 each (three outcomes, repeats
kept), a move into the border stays put. Observations: row * ncol + col. Rewards: 1 for
entering G, 0 otherwise. Episode end: terminated on entering G (success) or H; truncated
after 100 steps (4x4), 200 (8x8) or 25 * size (generated maps). G and H cells loop to
themselves with one outcome of probability 1 (terminated, reward 0), as in Gymnasium."""

TAXI_DOC = """Taxi: a 5x5 grid with walls and four pads R(0,0), G(0,4), Y(4,0), B(4,3); pick the
passenger up at its pad and drop it off at its destination. Actions: 0 South, 1 North,
2 East, 3 West, 4 pickup, 5 dropoff (deterministic, Gymnasium's Taxi-v4 without rainy or
fickle modes). Observations: ((row * 5 + col) * 5 + passenger) * 4 + destination, passenger
4 = in the taxi; 500 states, 404 reachable, 300 initial states drawn uniformly. Rewards: -1 a
step, +20 for the delivery, -10 for an illegal pickup or dropoff. Episode end: terminated by
the delivery (success; the goal states are the 4 states a delivery reaches); truncated after
200 steps."""

CLIFF_WALKING_DOC = """CliffWalking: a 4x12 grid, start 36 (bottom-left), goal 47 (bottom-right), the
cliff along the bottom row between them. Actions: 0 Up, 1 Right, 2 Down, 3 Left
(deterministic; a move into the border stays put). Observations: row * 12 + col (48
states). Rewards: -1 a step, -100 for stepping into the cliff, which sends the walker back
to 36 without ending the episode. Episode end: terminated on entering 47 (success);
Gymnasium registers no step limit, pimrl truncates after 200 steps (option max_steps)."""


def frozen_lake_tables(desc, slippery: bool = True, success_rate: float = 1.0 / 3.0):
    """Outcome tables of a FrozenLake map ``desc`` (rows of 'SFHG'), as Gymnasium builds them.

    Returns ``(next_state, prob, reward, terminated, initial_dist, goal)``.
    """
    board = np.array([list(r) for r in desc])
    nrow, ncol = board.shape
    n_s = nrow * ncol
    if not set(np.unique(board)) <= set("SFHG"):
        raise ValueError(f"FrozenLake map may only contain S, F, H, G: {desc}")
    flat = board.ravel()
    row, col = np.divmod(np.arange(n_s), ncol)
    # successor of each of the four moves from each cell, and its letter
    nr = np.stack([row, np.minimum(row + 1, nrow - 1), row, np.maximum(row - 1, 0)])
    nc = np.stack([np.maximum(col - 1, 0), col, np.minimum(col + 1, ncol - 1), col])
    move_ns = nr * ncol + nc                                  # (4 moves, S)
    move_letter = flat[move_ns]
    move_term = (move_letter == "G") | (move_letter == "H")
    move_rew = (move_letter == "G").astype(np.float64)        # reward schedule (1, 0, 0)
    if slippery:
        fail_rate = (1.0 - success_rate) / 2.0
        moves = (np.arange(4)[:, None] + np.array([-1, 0, 1])[None, :]) % 4   # (A, K)
        kprob = np.array([fail_rate, success_rate, fail_rate])
    else:
        moves = np.arange(4)[:, None]
        kprob = np.array([1.0])
    k = moves.shape[1]
    next_state = move_ns[moves].transpose(2, 0, 1).astype(np.int32)          # (S, A, K)
    terminated = move_term[moves].transpose(2, 0, 1).copy()
    reward = move_rew[moves].transpose(2, 0, 1).copy()
    prob = np.broadcast_to(kprob, (n_s, 4, k)).copy()
    # G and H loop to themselves: one outcome (1.0, s, 0, True), the rest is padding
    stop = (flat == "G") | (flat == "H")
    ss = np.flatnonzero(stop)
    next_state[ss] = ss[:, None, None]
    prob[ss] = 0.0
    prob[ss, :, 0] = 1.0
    reward[ss] = 0.0
    terminated[ss] = False
    terminated[ss, :, 0] = True
    init = (flat == "S").astype(np.float64)
    init /= init.sum()
    return next_state, prob, reward, terminated, init, flat == "G"


def _connected(frozen: np.ndarray) -> bool:
    """Whether the bottom-right cell is 4-connected to the top-left through ``frozen`` cells."""
    reach = np.zeros_like(frozen)
    reach[0, 0] = True
    while True:
        grow = reach.copy()
        grow[1:, :] |= reach[:-1, :]
        grow[:-1, :] |= reach[1:, :]
        grow[:, 1:] |= reach[:, :-1]
        grow[:, :-1] |= reach[:, 1:]
        grow &= frozen
        if grow[-1, -1]:
            return True
        if np.array_equal(grow, reach):
            return False
        reach = grow


def generate_frozen_lake_map(size: int, seed: int, p: float = GENERATED_FROZEN_P) -> tuple[str, ...]:
    """pimrl's seeded FrozenLake map of ``size`` x ``size``.

    With ``rng = numpy.random.default_rng(seed)``: draw ``rng.random((size, size)) < p``
    (frozen) for each tile, set S at (0, 0) and G at (size-1, size-1), and draw again until
    G is 4-connected to S through non-hole tiles.
    """
    if size < 2:
        raise ValueError(f"size must be >= 2, got {size}")
    rng = np.random.default_rng(seed)
    while True:
        frozen = rng.random((size, size)) < p
        frozen[0, 0] = frozen[-1, -1] = True
        if _connected(frozen):
            break
    board = np.where(frozen, "F", "H")
    board[0, 0], board[-1, -1] = "S", "G"
    return tuple("".join(r) for r in board)


def taxi_tables():
    """Outcome tables of Gymnasium's Taxi (dry: not rainy, not fickle); K = 1."""
    desc = np.array([list(r) for r in (
        "+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |", "| | : | : |", "|Y| : |B: |",
        "+---------+")])
    locs = np.array([(0, 0), (0, 4), (4, 0), (4, 3)])
    n_s, n_a = 500, 6
    s = np.arange(n_s)
    dest = s % 4
    pas = (s // 4) % 5
    col = (s // 20) % 5
    row = s // 100

    def enc(r, c, p, d):
        return ((r * 5 + c) * 5 + p) * 4 + d

    ns = np.empty((n_s, n_a), dtype=np.int64)
    rew = np.full((n_s, n_a), -1.0)
    term = np.zeros((n_s, n_a), dtype=bool)
    ns[:, 0] = enc(np.minimum(row + 1, 4), col, pas, dest)
    ns[:, 1] = enc(np.maximum(row - 1, 0), col, pas, dest)
    east_open = desc[1 + row, 2 * col + 2] == ":"
    ns[:, 2] = enc(row, np.where(east_open, np.minimum(col + 1, 4), col), pas, dest)
    west_open = desc[1 + row, 2 * col] == ":"
    ns[:, 3] = enc(row, np.where(west_open, np.maximum(col - 1, 0), col), pas, dest)
    # which pad the taxi is on (-1: none)
    on = (row[:, None] == locs[None, :, 0]) & (col[:, None] == locs[None, :, 1])  # (S, 4)
    pad = np.where(on.any(axis=1), on.argmax(axis=1), -1)
    # pickup
    ok = (pas < 4) & (pad == pas)
    ns[:, 4] = enc(row, col, np.where(ok, 4, pas), dest)
    rew[:, 4] = np.where(ok, -1.0, -10.0)
    # dropoff
    deliver = (pas == 4) & (pad == dest)
    leave = (pas == 4) & (pad >= 0) & ~deliver
    new_p = np.where(deliver, dest, np.where(leave, pad, pas))
    ns[:, 5] = enc(row, col, new_p, dest)
    rew[:, 5] = np.where(deliver, 20.0, np.where(leave, -1.0, -10.0))
    term[:, 5] = deliver
    init = ((pas < 4) & (pas != dest)).astype(np.float64)
    init /= init.sum()
    goal = (pas == dest) & (pad == dest)
    return (ns[:, :, None].astype(np.int32), np.ones((n_s, n_a, 1)), rew[:, :, None],
            term[:, :, None], init, goal)


def cliff_walking_tables():
    """Outcome tables of Gymnasium's CliffWalking-v1 (not slippery); K = 1."""
    nrow, ncol, start = 4, 12, 36
    n_s = nrow * ncol
    row, col = np.divmod(np.arange(n_s), ncol)
    # moves 0 Up, 1 Right, 2 Down, 3 Left
    nr = np.stack([np.maximum(row - 1, 0), row, np.minimum(row + 1, nrow - 1), row], axis=1)
    nc = np.stack([col, np.minimum(col + 1, ncol - 1), col, np.maximum(col - 1, 0)], axis=1)
    cliff = (nr == nrow - 1) & (nc >= 1) & (nc <= ncol - 2)
    ns = np.where(cliff, start, nr * ncol + nc)
    rew = np.where(cliff, -100.0, -1.0)
    term = ~cliff & (nr == nrow - 1) & (nc == ncol - 1)
    init = np.zeros(n_s)
    init[start] = 1.0
    goal = np.arange(n_s) == n_s - 1
    return (ns[:, :, None].astype(np.int32), np.ones((n_s, 4, 1)), rew[:, :, None],
            term[:, :, None], init, goal)
