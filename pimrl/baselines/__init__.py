"""Baselines the PIM runs are compared against, on the same data and the same variants.

- :mod:`pimrl.baselines.cpu`: the host CPU, single-threaded and multi-threaded (numba);
  measured wall-clock time.
- :mod:`pimrl.baselines.gpu`: CUDA kernels through numba-cuda (optional extra ``gpu``);
  measured with CUDA events where a GPU is present, never invented where it is not.

Both reuse the contracts of docs/design.md (update order, lanes, xorshift32 streams, fixed
point), so their Q-tables are bit-identical to the reference learner's for the same
partitions.
"""
# The variants come from the one registry, pimrl.learners.variants.
from pimrl.learners.variants import ALL_VARIANTS, parse_variant, variant_name

__all__ = ["ALL_VARIANTS", "parse_variant", "variant_name"]
