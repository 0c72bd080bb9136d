"""The plain-C CPU loop, for the benchmarks: :mod:`pimrl.baselines.c_loop`."""
from pimrl.baselines.c_loop import build, compiler, run_c_loop  # noqa: F401
