"""The UPMEM SDK's Python host API (``dpu``), served by pimrl's simulator.

A host script written for the SDK runs unchanged::

    from dpu import DpuSet, ALLOCATE_ALL
    with DpuSet(nr_dpus=4, c_source="task.c") as dpus:
        dpus.copy("input", bytearray(64))
        dpus.exec(log=sys.stdout)
        results = [bytearray(8) for _ in dpus]
        dpus.copy(results, "output")

Every call goes to :mod:`pimrl.pim.system` in this process (the same memories, transfer
rules, launches and modelled costs as the C host API of ``libdpu.so``). ``c_source`` is
built by pimrl's DPU compiler (``dpu-upmem-dpurte-clang``, :mod:`pimrl.dpurt`).
``PIMRL_SIMULATOR`` tells this package from the SDK's; :mod:`dpu.simulator` holds what only
the simulator can answer (modelled times). docs/python-api.md sets it beside the SDK's.
"""
from dpu.driver import (ALLOCATE_ALL, DpuContext, DpuError, DpuProgram, DpuSet, DpuSymbol,
                        DpuVariable)

#: True in pimrl's package; the SDK's has no such attribute.
PIMRL_SIMULATOR = True

__all__ = ["ALLOCATE_ALL", "DpuContext", "DpuError", "DpuProgram", "DpuSet", "DpuSymbol",
           "DpuVariable", "PIMRL_SIMULATOR"]
