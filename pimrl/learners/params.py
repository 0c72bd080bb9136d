"""What a learner is asked to do: one validated, immutable description shared by every
backend (reference, PIM simulator, CPU and GPU baselines)."""
from __future__ import annotations

from dataclasses import dataclass, asdict

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.learners.variants import (
    AXES, KERNEL_SCALARS, PARAM_FIELDS, Variant,
)
from pimrl.rng import epsilon_threshold


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
    bootstrap: str = "table"
    tasklet_mode: str = "ring"

    def __post_init__(self):
        def choose(name, value, options):
            if value not in options:
                raise ValueError(f"{name} must be one of {', '.join(options)}; got {value!r}")

        for axis in AXES:
            choose(axis.name, getattr(self, axis.name), axis.names)
        from pimrl.limits import EPOCHS, SEED, STRIDE

        def whole(value, rng, name):
            """bounded (pimrl.limits): the kernels count in int64 words; 2.0 is 2"""
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            rng.parse(value, name)

        whole(self.epochs, EPOCHS, "epochs")
        if not (0.0 < self.alpha <= 1.0):
            raise ValueError(f"alpha must lie in (0, 1]; got {self.alpha!r}")
        if not (0.0 <= self.gamma < 1.0):
            raise ValueError(f"gamma must lie in [0, 1); got {self.gamma!r}")
        epsilon_threshold(self.epsilon)  # range check
        whole(self.stride, STRIDE, "stride")
        whole(self.seed, SEED, "seed")
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
    def variant(self) -> Variant:
        """The compiled kernel these parameters need (:mod:`pimrl.learners.variants`)."""
        return Variant.of(self)

    @property
    def uses_rng(self) -> bool:
        return self.variant.uses_rng

    def kernel_scalars(self) -> np.ndarray:
        """The numbers a compiled kernel needs, as the leading words of its parameter block
        (``pimrl.learners.variants.PARAM_FIELDS``, int64, up to the last of
        ``KERNEL_SCALARS``): the words the host sets per DPU (``HOST_FIELDS``) are zero."""
        codes = self.variant.codes()
        words = {
            **{name: codes[name] for name in ("algo", "dtype", "sampling")},
            "stride": self.stride,
            "epochs": self.epochs,
            "sarsa_draw": codes["next_action"],
            "eps_threshold": epsilon_threshold(self.epsilon),
            "frac_bits": self.frac_bits,
            "alpha_f32_bits": int(np.float32(self.alpha).view(np.int32)),
            "gamma_f32_bits": int(np.float32(self.gamma).view(np.int32)),
            "alpha_fx": fixedpoint.to_fixed_scalar(self.alpha, self.frac_bits, "alpha"),
            "gamma_fx": fixedpoint.to_fixed_scalar(self.gamma, self.frac_bits, "gamma"),
            "tasklet_mode": codes["tasklet_mode"],
        }
        names = [name for name, _ in PARAM_FIELDS]
        out = np.zeros(max(names.index(n) for n in KERNEL_SCALARS) + 1, dtype=np.int64)
        for name in KERNEL_SCALARS:
            out[names.index(name)] = words[name]
        return out

    def as_dict(self) -> dict:
        return asdict(self)
