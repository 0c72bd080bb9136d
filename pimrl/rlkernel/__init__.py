"""The DPU side of SwiftRL's Q-learning and SARSA: the program every DPU runs.

- :mod:`pimrl.rlkernel.program`: the DPU program built into the simulator (WRAM symbols,
  parameter checks, launch, cycles);
- :mod:`pimrl.rlkernel.launch`: its launch kernel, compiled with numba per variant and
  tasklet mode; :mod:`pimrl.rlkernel.mram`: how a DPU finds its records in MRAM;
- :mod:`pimrl.rlkernel.layout`: its memory layout and limits (WRAM globals, records, DMA);
- :mod:`pimrl.rlkernel.cprogram`: the same program in UPMEM C (``kernels/swiftrl.c``), built
  and run by the DPU runtime;
- :mod:`pimrl.rlkernel.costs`: what its work costs on a DPU (the cost model's operations);
- :mod:`pimrl.rlkernel.builtin`: the numba program as the simulator's built-in
  ``pimrl:swiftrl?...``.

It stands on the simulator (:mod:`pimrl.pim`), whose ``dpu_load`` loads it by name
(``pimrl:swiftrl?...``) for the ``dpu`` package and the C host shim, importing it only then
(:data:`pimrl.pim.programs.BUILTINS` holds its factory's dotted name), and below the host
side that drives it (:mod:`pimrl.swiftrl`), which reaches its DPUs through the ``dpu``
package: it imports neither.
"""
