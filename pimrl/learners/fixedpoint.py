"""INT32 fixed point (Q format with ``F`` fractional bits) and its saturating arithmetic.

Conversions from float round to nearest (ties to even). Products are the exact 64-bit
product shifted right by F with round-half-up; every result saturates to the int32 range and
each saturation is counted, never wrapped silently (docs/design.md).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pimrl.parallel import first_found

DEFAULT_FRAC_BITS = 16
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def to_fixed_scalar(x: float, frac_bits: int, name: str = "value") -> int:
    """One float as a Q-format int32; out-of-range values raise ValueError naming ``name``."""
    v = float(np.rint(np.float64(x) * (1 << frac_bits)))
    if not (INT32_MIN <= v <= INT32_MAX) or not np.isfinite(v):
        lim = 2.0 ** (31 - frac_bits)
        raise ValueError(f"{name}={x!r} does not fit in Q{31 - frac_bits}.{frac_bits} "
                         f"fixed point (range +-{lim:g})")
    return int(v)


def to_fixed(x: np.ndarray, frac_bits: int, name: str = "values") -> np.ndarray:
    """Floats as Q-format int32; the first out-of-range value raises ValueError with its index."""
    x = np.asarray(x, dtype=np.float64)
    v = np.rint(x * (1 << frac_bits))
    bad = ~np.isfinite(v) | (v < INT32_MIN) | (v > INT32_MAX)
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise _does_not_fit(name, i, x.ravel()[i], frac_bits)
    return v.astype(np.int32)


def _does_not_fit(name: str, i: int, x, frac_bits: int) -> ValueError:
    lim = 2.0 ** (31 - frac_bits)
    return ValueError(f"{name}[{i}]={x!r} does not fit in Q{31 - frac_bits}.{frac_bits} "
                      f"fixed point (range +-{lim:g})")


def records_with_fixed_rewards(records: np.ndarray, frac_bits: int) -> np.ndarray:
    """A copy of ``records`` (16-byte transition records, any shape) whose rewards are Q-format
    int32 (the float32 field holding their bits), converted as :func:`to_fixed` converts:
    what an INT32 kernel reads. One compiled pass; the first reward out of range (in the
    records' flat order) raises ValueError naming its index, as ``to_fixed`` does."""
    out = np.empty_like(records)
    if records.size:
        words = np.ascontiguousarray(records).view(np.int32).reshape(-1, 4)
        rewards, fixed = words.view(np.float32), out.view(np.int32).reshape(-1, 4)
        scale = float(1 << frac_bits)
        bad = first_found(lambda lo, hi: _copy_fixing_rewards(words, rewards, fixed, scale, lo,
                                                              hi), len(words), -1)
        if bad >= 0:
            raise _does_not_fit("reward", bad, np.float64(records["reward"].ravel()[bad]),
                                frac_bits)
    return out


@njit(cache=True, inline="always")
def fixed_value(x, scale):
    """``x`` times ``scale`` (2^F) rounded to nearest, ties to even, in float64: the Q-format
    value of ``x`` when :func:`fits_int32` says it fits (as :func:`to_fixed` converts)."""
    return np.rint(np.float64(x) * scale)


@njit(cache=True, inline="always")
def fits_int32(v):
    """Whether the float ``v`` lies in the int32 range (NaN does not)."""
    return v >= INT32_MIN and v <= INT32_MAX


@njit(cache=True, nogil=True)
def _copy_fixing_rewards(words, rewards, out, scale, lo, hi):
    """Copy records ``lo..hi-1`` (words (n, 4)), word 2 (the reward) rounded to Q format;
    the first record whose reward does not fit, or -1."""
    for i in range(lo, hi):
        v = fixed_value(rewards[i, 2], scale)
        if not fits_int32(v):
            return i
        out[i, 0] = words[i, 0]
        out[i, 1] = words[i, 1]
        out[i, 2] = np.int32(v)
        out[i, 3] = words[i, 3]
    return -1


def from_fixed(x: np.ndarray, frac_bits: int) -> np.ndarray:
    """Q-format int32 back to float64 (exact)."""
    return np.asarray(x, dtype=np.float64) / float(1 << frac_bits)


def raw_to_float(raw: np.ndarray, dtype: str, frac_bits: int) -> np.ndarray:
    """Raw tables as kernels store them (float32, or Q-format int32 for ``dtype`` "int32")
    as float64."""
    return from_fixed(raw, frac_bits) if dtype == "int32" else np.asarray(raw, np.float64)


@njit(cache=True, inline="always")
def sat32(x, sat):
    """Clamp an int64 to int32, counting a saturation in ``sat[0]``."""
    if x > INT32_MAX:
        sat[0] += 1
        return np.int32(INT32_MAX)
    if x < INT32_MIN:
        sat[0] += 1
        return np.int32(INT32_MIN)
    return np.int32(x)


@njit(cache=True, inline="always")
def fx_mul(a, b, frac_bits, sat):
    """Q-format product with round-half-up and saturation."""
    p = np.int64(a) * np.int64(b)
    p = (p + (np.int64(1) << (frac_bits - 1))) >> frac_bits
    return sat32(p, sat)


@njit(cache=True, inline="always")
def fx_add(a, b, sat):
    return sat32(np.int64(a) + np.int64(b), sat)


@njit(cache=True, inline="always")
def fx_sub(a, b, sat):
    return sat32(np.int64(a) - np.int64(b), sat)


def error_bound(alpha: float, gamma: float, frac_bits: int, reward_max: float, q_max: float) -> float:
    """A bound on max |Q_int32 - Q_fp32| after any number of updates of the same sequence.

    Each update injects at most ``delta``: the two product roundings (2^-F in all), the
    quantisation of alpha and gamma (|alpha_q - alpha| * |td| + alpha * |gamma_q - gamma| * |m|)
    and FP32's own rounding (five operations, half an ulp each, on values up to
    |r| + 2 q_max). An entry's error then evolves as e' <= (1 - alpha) e + alpha gamma E + delta
    with E the largest error, which never exceeds delta / (alpha (1 - gamma)) starting from
    zero. ``reward_max`` and ``q_max`` bound |r| and |Q| over the run (no saturation assumed).
    """
    scale = float(1 << frac_bits)
    alpha_q = np.rint(alpha * scale) / scale
    gamma_q = np.rint(gamma * scale) / scale
    td_max = reward_max + 2.0 * q_max
    delta = (1.0 / scale + abs(alpha_q - alpha) * td_max + alpha * abs(gamma_q - gamma) * q_max
             + 5 * 2.0 ** -24 * td_max)
    return delta / (alpha * (1.0 - gamma))
