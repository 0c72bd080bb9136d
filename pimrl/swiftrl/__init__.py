"""The SwiftRL application on the simulated UPMEM system: offline Q-learning and SARSA with
one Q-table per DPU, aggregated on the host.

- :mod:`pimrl.swiftrl.trainer`: the host side (partition, push, launch, gather, aggregate);
- :mod:`pimrl.swiftrl.owned`: state-owned Q-learning (``--aggregate own:R``).

Its DPU program is :mod:`pimrl.rlkernel`, which the ``dpu`` package and the C host shim load
by name, so it lies below them. It sits on the generic simulator (:mod:`pimrl.pim`) and DPU
runtime (:mod:`pimrl.dpurt`), which know nothing of it.
"""
