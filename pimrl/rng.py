"""The xorshift32 random streams shared by every learner (see docs/design.md).

One stream per lane (a tasklet's share of a DPU's partition). The same three operations are
written in numba here, in CUDA in the GPU baseline and in C in ``kernels/``; tests check
that they agree.
"""
from __future__ import annotations

import numpy as np
from numba import njit

MASK32 = 0xFFFFFFFF
GOLDEN32 = 0x9E3779B9
ZERO_REPLACEMENT = 0x6D2B79F5


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finaliser (a bijection on 32-bit integers)."""
    h &= MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK32
    h ^= h >> 16
    return h


def lane_seed(seed: int, lane_id: int) -> int:
    """Initial xorshift32 state of lane ``lane_id`` under the run's ``seed`` (any int >= 0)."""
    if seed < 0 or lane_id < 0:
        raise ValueError(f"seed and lane id must be non-negative, got seed={seed}, lane={lane_id}")
    lo, hi = seed & MASK32, (seed >> 32) & MASK32
    base = fmix32(lo ^ fmix32(hi ^ GOLDEN32))
    state = fmix32(base ^ ((lane_id * GOLDEN32 + 1) & MASK32))
    return state if state != 0 else ZERO_REPLACEMENT


def lane_seeds(seed: int, lane_ids) -> np.ndarray:
    """``lane_seed`` for many lanes, as uint32 (vectorised; bit-identical to ``lane_seed``)."""
    ids = np.asarray(lane_ids, dtype=np.uint64)
    m = np.uint64(MASK32)

    def fm(h):
        h = h & m
        h ^= h >> np.uint64(16)
        h = (h * np.uint64(0x85EBCA6B)) & m
        h ^= h >> np.uint64(13)
        h = (h * np.uint64(0xC2B2AE35)) & m
        h ^= h >> np.uint64(16)
        return h

    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    base = np.uint64(fmix32((seed & MASK32) ^ fmix32(((seed >> 32) & MASK32) ^ GOLDEN32)))
    st = fm(base ^ ((ids * np.uint64(GOLDEN32) + np.uint64(1)) & m))
    st[st == 0] = ZERO_REPLACEMENT
    return st.astype(np.uint32)


def epsilon_threshold(epsilon: float) -> int:
    """The integer threshold t with P(next() < t) = epsilon (t = floor(epsilon * 2^32))."""
    if not (0.0 <= epsilon <= 1.0):
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
    return min(int(epsilon * 4294967296.0), 4294967296)


@njit(cache=True, inline="always")
def xorshift32(x):
    """Advance a uint32 state; returns the new state (also the output)."""
    x = np.uint32(x)
    x ^= np.uint32(x << np.uint32(13))
    x ^= np.uint32(x >> np.uint32(17))
    x ^= np.uint32(x << np.uint32(5))
    return np.uint32(x)


@njit(cache=True, inline="always")
def below(x, n):
    """Map a uint32 draw ``x`` to an integer in [0, n): (x * n) >> 32."""
    return np.int64((np.uint64(x) * np.uint64(n)) >> np.uint64(32))
