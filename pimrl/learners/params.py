"""What a learner is asked to do: one validated, immutable description shared by every
backend (reference, PIM simulator, CPU and GPU baselines)."""
from __future__ import annotations

from dataclasses import dataclass, asdict

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.rng import epsilon_threshold

ALGOS = ("q", "sarsa")
DTYPES = ("fp32", "int32")
SAMPLINGS = ("seq", "str", "ran")
NEXT_ACTIONS = ("logged", "epsilon-greedy")

# Integer codes passed to compiled kernels (the C kernels' header uses the same values).
ALGO_CODE = {"q": 0, "sarsa": 1}
DTYPE_CODE = {"fp32": 0, "int32": 1}
SAMPLING_CODE = {"seq": 0, "str": 1, "ran": 2}


@dataclass(frozen=True)
class LearnerParams:
    """Hyperparameters and variant of tabular Q-learning / SARSA (defaults: SwiftRL's)."""

    algo: str = "q"
    dtype: str = "fp32"
    sampling: str = "seq"
    epochs: int = 1
    alpha: float = 0.1
    gamma: float = 0.95
    epsilon: float = 0.1
    next_action: str = "logged"
    stride: int = 4
    seed: int = 0
    frac_bits: int = fixedpoint.DEFAULT_FRAC_BITS

    def __post_init__(self):
        def choose(name, value, options):
            if value not in options:
                raise ValueError(f"{name} must be one of {', '.join(options)}; got {value!r}")

        choose("algo", self.algo, ALGOS)
        choose("dtype", self.dtype, DTYPES)
        choose("sampling", self.sampling, SAMPLINGS)
        choose("next_action", self.next_action, NEXT_ACTIONS)
        if int(self.epochs) != self.epochs or self.epochs < 1:
            raise ValueError(f"epochs must be a positive integer; got {self.epochs!r}")
        if not (0.0 < self.alpha <= 1.0):
            raise ValueError(f"alpha must lie in (0, 1]; got {self.alpha!r}")
        if not (0.0 <= self.gamma < 1.0):
            raise ValueError(f"gamma must lie in [0, 1); got {self.gamma!r}")
        epsilon_threshold(self.epsilon)  # range check
        if int(self.stride) != self.stride or self.stride < 1:
            raise ValueError(f"stride must be a positive integer; got {self.stride!r}")
        if int(self.seed) != self.seed or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer; got {self.seed!r}")
        if not (1 <= self.frac_bits <= 30):
            raise ValueError(f"frac_bits must lie in [1, 30]; got {self.frac_bits!r}")
        if self.dtype == "int32":
            # Q format must keep alpha and gamma recognisable: within 1 % of what was asked.
            scale = 1 << self.frac_bits
            for name, value in (("alpha", self.alpha), ("gamma", self.gamma)):
                q = round(value * scale) / scale
                if value > 0 and abs(q - value) > 0.01 * value:
                    raise ValueError(
                        f"{name}={value} becomes {q} in Q{31 - self.frac_bits}.{self.frac_bits}: "
                        f"use more fractional bits (--frac-bits)")

    @property
    def uses_rng(self) -> bool:
        return self.sampling == "ran" or (self.algo == "sarsa" and self.next_action == "epsilon-greedy")

    def kernel_scalars(self) -> np.ndarray:
        """The numbers a compiled kernel needs, packed as int64 (see ``KERNEL_SCALARS``)."""
        alpha32 = np.float32(self.alpha)
        gamma32 = np.float32(self.gamma)
        return np.array(
            [
                ALGO_CODE[self.algo],
                DTYPE_CODE[self.dtype],
                SAMPLING_CODE[self.sampling],
                self.stride,
                self.epochs,
                1 if (self.algo == "sarsa" and self.next_action == "epsilon-greedy") else 0,
                epsilon_threshold(self.epsilon),
                self.frac_bits,
                int(alpha32.view(np.int32)),
                int(gamma32.view(np.int32)),
                fixedpoint.to_fixed_scalar(self.alpha, self.frac_bits, "alpha"),
                fixedpoint.to_fixed_scalar(self.gamma, self.frac_bits, "gamma"),
            ],
            dtype=np.int64,
        )

    def as_dict(self) -> dict:
        return asdict(self)


#: Names of the entries of ``LearnerParams.kernel_scalars()``, in order.
KERNEL_SCALARS = (
    "algo", "dtype", "sampling", "stride", "epochs", "sarsa_draw", "eps_threshold",
    "frac_bits", "alpha_f32_bits", "gamma_f32_bits", "alpha_fx", "gamma_fx",
)
P_ALGO, P_DTYPE, P_SAMPLING, P_STRIDE, P_EPOCHS, P_SARSA_DRAW, P_EPS, P_FRAC, P_ALPHA32, \
    P_GAMMA32, P_ALPHA_FX, P_GAMMA_FX = range(len(KERNEL_SCALARS))
