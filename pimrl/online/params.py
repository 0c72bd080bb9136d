"""What an online learner is asked to do (validated, immutable), and its kernel words."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.learners.variants import (
    ONLINE_PARAM_FIELDS, ONLINE_PARAMS_WORDS, OnlineVariant,
)
from pimrl.rng import epsilon_threshold

MAX_DECAY_STEPS = 2**31 - 1


@dataclass(frozen=True)
class OnlineParams:
    """Online tabular Q-learning / on-policy SARSA. Epsilon decays linearly from ``epsilon``
    at a lane's step 0 to ``epsilon_end`` at its step ``decay_steps`` (``decay_steps=0``:
    constant ``epsilon``)."""

    algo: str = "q"
    dtype: str = "fp32"
    alpha: float = 0.1
    gamma: float = 0.95
    epsilon: float = 0.1
    epsilon_end: float | None = None
    decay_steps: int = 0
    seed: int = 0
    frac_bits: int = fixedpoint.DEFAULT_FRAC_BITS

    def __post_init__(self):
        OnlineVariant(self.algo, self.dtype)
        if not (0.0 < self.alpha <= 1.0):
            raise ValueError(f"alpha must lie in (0, 1]; got {self.alpha!r}")
        if not (0.0 <= self.gamma < 1.0):
            raise ValueError(f"gamma must lie in [0, 1); got {self.gamma!r}")
        epsilon_threshold(self.epsilon)
        if self.epsilon_end is not None:
            epsilon_threshold(self.epsilon_end)
            if self.epsilon_end > self.epsilon:
                raise ValueError(f"epsilon_end={self.epsilon_end} exceeds epsilon={self.epsilon}: "
                                 f"the schedule only decays")
        if int(self.decay_steps) != self.decay_steps or not 0 <= self.decay_steps <= MAX_DECAY_STEPS:
            raise ValueError(f"decay_steps must be an integer in [0, 2^31 - 1]; got {self.decay_steps!r}")
        from pimrl.limits import SEED

        SEED.parse(self.seed, "seed")              # bounded: an int64 word on the DPUs
        if not (1 <= self.frac_bits <= 30):
            raise ValueError(f"frac_bits must lie in [1, 30]; got {self.frac_bits!r}")

    @property
    def variant(self) -> OnlineVariant:
        return OnlineVariant(self.algo, self.dtype)

    def words(self, max_episode_steps: int, n_start: int, steps: int = 0) -> np.ndarray:
        """The ``ONLINE_PARAMS_WORDS`` int64 parameter words of one DPU."""
        codes = self.variant.codes()
        end = self.epsilon if self.epsilon_end is None else self.epsilon_end
        w = {
            "algo": codes["algo"], "dtype": codes["dtype"],
            "eps_start": epsilon_threshold(self.epsilon), "eps_end": epsilon_threshold(end),
            "eps_decay_steps": self.decay_steps if self.epsilon_end is not None else 0,
            "frac_bits": self.frac_bits,
            "alpha_f32_bits": int(np.float32(self.alpha).view(np.int32)),
            "gamma_f32_bits": int(np.float32(self.gamma).view(np.int32)),
            "alpha_fx": fixedpoint.to_fixed_scalar(self.alpha, self.frac_bits, "alpha"),
            "gamma_fx": fixedpoint.to_fixed_scalar(self.gamma, self.frac_bits, "gamma"),
            "max_episode_steps": int(max_episode_steps), "n_start": int(n_start),
            "steps": int(steps),
        }
        out = np.zeros(ONLINE_PARAMS_WORDS, dtype=np.int64)
        out[: len(ONLINE_PARAM_FIELDS)] = [w[name] for name, _ in ONLINE_PARAM_FIELDS]
        return out

    def as_dict(self) -> dict:
        return asdict(self)

