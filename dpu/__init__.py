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
import time as _time

_IMPORT_STARTED = _time.perf_counter()

from dpu._types import DpuContext  # noqa: E402
from dpu.driver import (ALLOCATE_ALL, DpuError, DpuProgram, DpuSet, DpuSymbol,  # noqa: E402
                        DpuVariable)
from pimrl.shim import clock as _clock  # noqa: E402

# PIMRL_MODELLED_CLOCK=1: the host program's clock becomes the modelled one from here on
# (its names for the time module's clocks bound above `import dpu` included), and this
# import counts as one simulator call, as the C shim counts the simulator's start.
_clock.install(started_s=_IMPORT_STARTED)

#: True in pimrl's package; the SDK's has no such attribute.
PIMRL_SIMULATOR = True

__all__ = ["ALLOCATE_ALL", "DpuContext", "DpuError", "DpuProgram", "DpuSet", "DpuSymbol",
           "DpuVariable", "PIMRL_SIMULATOR"]
