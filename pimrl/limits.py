"""Bounded numbers: the one parser for every number a user gives pimrl, and its limits.

Every numeric command-line option, environment option (``Taxi-v3:max_steps=N``), ``--grid``
item, aggregator round count and study-config key goes through :func:`parse_int` or
:func:`parse_float` (``integer(lo, hi)`` and ``real(lo, hi)`` are the same checks as
objects, usable as argparse ``type=``), so a bad number gets one line naming the option and
the accepted range, and no unbounded integer reaches numpy, numba or a loop. Integers
always have both bounds; floats are always finite.

Sizes that decide memory are checked here before anything is allocated:
:func:`check_memory` compares a run's estimate with the memory this process may use.

The limits below are far beyond any legitimate study (the SwiftRL study: 2,556 DPUs, 32
passes, 10^6 transitions) and small enough that the work they allow cannot overflow an
int64 counter.
"""
from __future__ import annotations

import argparse
import math
import numbers
import os
import re

#: Seeds: anything an int64 holds (datasets store a u64, the kernels an int64 word).
MAX_SEED = 2**63 - 1
#: Steps of one episode (env option max_steps, --max-episode-steps): exact evaluation
#: follows an episode step by step, so this bounds its time (seconds on Taxi).
MAX_EPISODE_STEPS = 10**6
#: Online environment steps per DPU (--steps).
MAX_STEPS = 10**12
#: Passes over the data (--epochs, a study's epochs).
MAX_EPOCHS = 10**6
#: Aggregation rounds R of sync:R / own:R (one launch each).
MAX_ROUNDS = 10**6
#: DPUs of one run, and DPU slots of a hardware description (upmem-2560 has 2,560).
MAX_DPUS = 2**20
#: Transitions of one dataset (a record is 16 bytes: 64 GiB); memory is checked too.
MAX_TRANSITIONS = 2**32
#: Threads, partitions, workers, repeats: counts of things a machine runs at once.
MAX_THREADS = 4096
MAX_REPEATS = 10**6
#: Seeded rollouts of an evaluation (one vector lane each).
MAX_ROLLOUTS = 10**7
#: Points of an online --grid, before expansion (also at most the hardware's DPUs).
MAX_GRID_POINTS = MAX_DPUS
#: Any other integer a user gives: what an int64 holds.
INT64_MAX = 2**63 - 1


class OutOfRange(ValueError):
    """A number that is not one, or lies outside its range; the message names the option."""


def show(n) -> str:
    """An integer bound as people read it: 1,000,000 -> 10^6, 2^63 - 1, or 24."""
    n = int(n)
    if n < 0:
        return "-" + show(-n)
    if n >= 10**6:
        if n == 10 ** (len(str(n)) - 1):
            return f"10^{len(str(n)) - 1}"
        for k in (n.bit_length() - 1, n.bit_length()):
            if n == 2**k:
                return f"2^{k}"
            if n == 2**k - 1:
                return f"2^{k} - 1"
    return f"{n:,}"


def _text(value) -> str:
    """The value as the user wrote it, for the message (repr: non-UTF-8 bytes stay escaped,
    a huge number is shortened)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return repr(text) if isinstance(value, str) else text


_INT_TEXT = re.compile(r"[+-]?[0-9]+\Z")


class integer:
    """An integer in ``[lo, hi]``: ``integer(1, 24).parse("16", "--tasklets")``, or as an
    argparse ``type=`` (argparse names the option)."""

    def __init__(self, lo: int, hi: int):
        if lo is None or hi is None or lo > hi:
            raise AssertionError(f"an integer range needs both bounds, got [{lo}, {hi}]")
        self.lo, self.hi = int(lo), int(hi)

    def describe(self) -> str:
        return f"an integer in [{show(self.lo)}, {show(self.hi)}]"

    def parse(self, value, name: str) -> int:
        """``value`` (text, or an int from a TOML file) as an int in range, or OutOfRange
        naming ``name``."""
        try:
            return self._parse(value)
        except OutOfRange as exc:
            raise OutOfRange(f"{name}: {exc}") from None

    def _parse(self, value) -> int:
        if isinstance(value, bool):
            n = None
        elif isinstance(value, numbers.Integral):      # int, numpy integers
            n = int(value)
        elif isinstance(value, str) and len(value) <= 400 and _INT_TEXT.match(value.strip()):
            # Python's int() with its digit limit; 400 characters is far past any bound
            n = int(value.strip())
        else:
            n = None
        if n is None or not self.lo <= n <= self.hi:
            raise OutOfRange(f"expected {self.describe()}, got {_text(value)}")
        return n

    def __call__(self, text) -> int:                 # argparse type=
        try:
            return self._parse(text)
        except OutOfRange as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def __repr__(self):
        return f"integer({self.lo}, {self.hi})"


class real:
    """A finite number in a range whose ends may be open: ``real(0, 1, lo_open=True)`` is
    (0, 1]; a missing bound leaves that side open to any finite number."""

    def __init__(self, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False, hi_open: bool = False):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open

    def describe(self) -> str:
        def num(x):
            return f"{x:g}"

        if self.lo is not None and self.hi is not None:
            return (f"a number in {'(' if self.lo_open else '['}{num(self.lo)}, {num(self.hi)}"
                    f"{')' if self.hi_open else ']'}")
        if self.lo is not None:
            return f"a finite number {'>' if self.lo_open else '>='} {num(self.lo)}"
        if self.hi is not None:
            return f"a finite number {'<' if self.hi_open else '<='} {num(self.hi)}"
        return "a finite number"

    def parse(self, value, name: str) -> float:
        try:
            return self._parse(value)
        except OutOfRange as exc:
            raise OutOfRange(f"{name}: {exc}") from None

    def _parse(self, value) -> float:
        x = None
        if isinstance(value, bool):
            pass
        elif isinstance(value, numbers.Real):          # int, float, numpy numbers
            try:
                x = float(value)
            except OverflowError:          # an int beyond the floats
                x = None
        elif isinstance(value, str) and len(value) <= 400:
            try:
                x = float(value.strip())
            except ValueError:
                x = None
        ok = x is not None and math.isfinite(x)
        if ok and self.lo is not None:
            ok = x > self.lo if self.lo_open else x >= self.lo
        if ok and self.hi is not None:
            ok = x < self.hi if self.hi_open else x <= self.hi
        if not ok:
            raise OutOfRange(f"expected {self.describe()}, got {_text(value)}")
        return x

    def __call__(self, text) -> float:                # argparse type=
        try:
            return self._parse(text)
        except OutOfRange as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def __repr__(self):
        return f"real({self.lo}, {self.hi})"


def parse_int(value, name: str, lo: int, hi: int) -> int:
    """``value`` as an integer in ``[lo, hi]``, or :class:`OutOfRange` (a ValueError) whose
    one line names ``name`` and the range."""
    return integer(lo, hi).parse(value, name)


def parse_float(value, name: str, lo: float | None = None, hi: float | None = None, *,
                lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` as a finite float in the range, or :class:`OutOfRange` naming ``name``."""
    return real(lo, hi, lo_open=lo_open, hi_open=hi_open).parse(value, name)


# Shared ranges, by what they count.
SEED = integer(0, MAX_SEED)
PROBABILITY = real(0.0, 1.0)                       # epsilon
LEARNING_RATE = real(0.0, 1.0, lo_open=True)       # alpha
DISCOUNT = real(0.0, 1.0, hi_open=True)            # gamma
FRAC_BITS = integer(1, 30)
EPOCHS = integer(1, MAX_EPOCHS)
STEPS = integer(1, MAX_STEPS)
EPISODE_STEPS = integer(1, MAX_EPISODE_STEPS)
THREADS = integer(1, MAX_THREADS)
REPEATS = integer(1, MAX_REPEATS)
STRIDE = integer(1, 2**31 - 1)
DPU_COUNT = integer(1, MAX_DPUS)
TRANSITIONS = integer(1, MAX_TRANSITIONS)


# ----------------------------------------------------------------------------- memory
def memory_limit() -> int:
    """Bytes this process may use: the machine's memory, or less under ``ulimit -v``."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 2**62
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            total = min(total, soft)
    except (ImportError, ValueError, OSError):
        pass
    return int(total)


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_memory(nbytes: float, what: str) -> None:
    """Refuse, in one line naming ``what``, work whose estimated memory ``nbytes`` exceeds
    what this process may use (checked before anything is allocated)."""
    limit = memory_limit()
    if nbytes > limit:
        raise OutOfRange(f"{what} needs about {_gib(nbytes)} of memory; this machine allows "
                         f"{_gib(limit)}")


def check_product(sizes, name: str, limit: int, what: str = "points",
                  allowed: str | None = None) -> int:
    """The product of ``sizes`` (axis lengths), refused above ``limit`` before anything is
    expanded; ``allowed`` says what the limit is (default: "the N allowed")."""
    total = 1
    for n in sizes:
        total *= int(n)
    if total > limit:
        raise OutOfRange(f"{name}: {total:,} {what}, more than {allowed or f'the {show(limit)} allowed'}")
    return total
