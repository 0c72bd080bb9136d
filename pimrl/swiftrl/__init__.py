"""The SwiftRL application on the simulated UPMEM system: offline Q-learning and SARSA with
one Q-table per DPU, aggregated on the host.

- :mod:`pimrl.swiftrl.program`: the DPU program, built into the simulator as a numba kernel
  per variant;
- :mod:`pimrl.swiftrl.cprogram`: the same program in UPMEM C (``kernels/swiftrl.c``), built
  and run by the DPU runtime;
- :mod:`pimrl.swiftrl.trainer`: the host side (partition, push, launch, gather, aggregate);
- :mod:`pimrl.swiftrl.owned`: state-owned Q-learning (``--aggregate own:R``).

It sits on the generic simulator (:mod:`pimrl.pim`) and DPU runtime (:mod:`pimrl.dpurt`),
which know nothing of it.
"""
