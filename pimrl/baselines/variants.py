"""The twelve SwiftRL kernel variants: {Q-learning, SARSA} x {FP32, INT32} x {SEQ, STR, RAN},
named ``algo-dtype-sampling`` (``q-fp32-seq``, ``sarsa-int32-ran``, ...)."""
from __future__ import annotations

from itertools import product

from pimrl.learners.params import ALGOS, DTYPES, SAMPLINGS

#: All twelve variant names, Q-learning first, then SARSA; FP32 before INT32; SEQ, STR, RAN.
ALL_VARIANTS = tuple(f"{a}-{d}-{s}" for a, d, s in product(ALGOS, DTYPES, SAMPLINGS))


def parse_variant(name: str) -> dict:
    """``"sarsa-int32-ran"`` -> ``{"algo": "sarsa", "dtype": "int32", "sampling": "ran"}``."""
    parts = str(name).strip().lower().split("-")
    if len(parts) != 3 or parts[0] not in ALGOS or parts[1] not in DTYPES or parts[2] not in SAMPLINGS:
        raise ValueError(f"unknown variant {name!r}; expected algo-dtype-sampling with algo in "
                         f"{ALGOS}, dtype in {DTYPES}, sampling in {SAMPLINGS} (e.g. q-fp32-seq)")
    return {"algo": parts[0], "dtype": parts[1], "sampling": parts[2]}


def variant_name(algo: str, dtype: str, sampling: str) -> str:
    return f"{algo}-{dtype}-{sampling}"


def expand_variants(spec) -> list[str]:
    """``"all"`` or a list of names (each validated) -> names in the canonical order given."""
    if spec in (None, "all"):
        return list(ALL_VARIANTS)
    if isinstance(spec, str):
        spec = [spec]
    out = []
    for v in spec:
        if v == "all":
            out.extend(x for x in ALL_VARIANTS if x not in out)
            continue
        p = parse_variant(v)
        name = variant_name(**p)
        if name not in out:
            out.append(name)
    return out
