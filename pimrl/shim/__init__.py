"""The C host shim: ``libdpu.so``, the UPMEM SDK host API (``host/include/dpu.h``) served by
pimrl's Python simulator through cffi's embedding mode.

- :mod:`pimrl.shim.build` builds the library (``pimrl shim build``, ``make -C host``);
- :mod:`pimrl.shim.runtime` is the Python side that runs inside a C host program (its
  ``dpu_load`` paths resolved by :mod:`pimrl.pim.programs`, as the ``dpu`` package's are).

Nothing here needs a C compiler to import; only building the library does, and
:func:`pimrl.shim.build.c_toolchain` says why the C path is unavailable when it is.
"""
