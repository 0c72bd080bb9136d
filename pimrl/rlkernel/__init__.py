"""The DPU side of SwiftRL's Q-learning and SARSA: the program every DPU runs.

- :mod:`pimrl.rlkernel.program`: the DPU program, built into the simulator as a numba kernel
  per variant and tasklet mode;
- :mod:`pimrl.rlkernel.cprogram`: the same program in UPMEM C (``kernels/swiftrl.c``), built
  and run by the DPU runtime;
- :mod:`pimrl.rlkernel.costs`: what its work costs on a DPU (the cost model's operations).

It stands below the ``dpu`` package and the C host shim, which load it by name
(``pimrl:swiftrl?...``), and below the host side that drives it (:mod:`pimrl.swiftrl`),
which reaches its DPUs through the ``dpu`` package: it imports neither.
"""
