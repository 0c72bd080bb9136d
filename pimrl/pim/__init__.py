"""The simulated UPMEM system, generic: it knows DPU programs only through their contract
(:class:`pimrl.pim.system.DpuProgram`), never an application.

- :mod:`pimrl.pim.hardware`: the hardware description and its presets, every number in one
  place;
- :mod:`pimrl.pim.system`: ranks, DPU sets and the SDK host API's semantics (``dpu.h``);
- :mod:`pimrl.pim.memory`: the per-DPU memories (paged MRAM, lazy WRAM);
- :mod:`pimrl.pim.programs`: what ``dpu_load`` loads for a path (built-in programs, named by
  module, and program files);
- :mod:`pimrl.pim.cost`: the cost model (transfers, DPU cycles, the four-category ledger);
- :mod:`pimrl.pim.energy`: the energy model (a ledger's phases priced in joules);
- :mod:`pimrl.pim.host`: the host model (cores, bandwidth, aggregation time, package power);
- :mod:`pimrl.pim.distributed`: one system spread over the workers of a Dask cluster;
- :mod:`pimrl.pim.errors`: ``dpu_error_t`` and the simulator's exception.
"""
