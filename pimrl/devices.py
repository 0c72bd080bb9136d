"""Where the DPUs are (``--device``): pimrl's simulator, or real UPMEM DPUs through the SDK's
``dpu`` package; each a function that returns the ``dpu`` package serving it, or raises
:class:`DeviceError` in one line that says how to fix it. Offline (:mod:`pimrl.swiftrl`) and
online (:mod:`pimrl.online`) training take the device from here."""
from __future__ import annotations

from pimrl.registry import Registry

class DeviceError(ValueError):
    """The ``dpu`` package found does not serve the device asked for."""


def _simulator_dpu():
    try:
        import dpu
    except ImportError as exc:
        raise DeviceError(f"--device simulator: cannot import pimrl's dpu package ({exc}); "
                          "reinstall pimrl (pip install -e .)") from None
    if not getattr(dpu, "PIMRL_SIMULATOR", False):
        raise DeviceError(f"--device simulator: the dpu package imported "
                          f"({getattr(dpu, '__file__', dpu)}) is not pimrl's simulator (the UPMEM "
                          "SDK's first on sys.path?); use --device upmem for real DPUs, or take "
                          "the SDK's Python folder off PYTHONPATH")
    return dpu


UPMEM_HELP = ("load the UPMEM SDK's environment (source <sdk>/upmem_env.sh), which puts the "
              "SDK's Python package first on PYTHONPATH, and run the pimrl command (not "
              "python -m pimrl from pimrl's source folder, whose dpu/ would come first)")


def _upmem_dpu():
    try:
        import dpu
    except ImportError as exc:
        raise DeviceError(f"--device upmem: cannot import the UPMEM SDK's dpu package ({exc}); "
                          f"{UPMEM_HELP}") from None
    if getattr(dpu, "PIMRL_SIMULATOR", False):
        raise DeviceError(f"--device upmem: the dpu package imported ({dpu.__file__}) is pimrl's "
                          f"simulator, not the UPMEM SDK's; {UPMEM_HELP}")
    return dpu


#: Where PimTrainer's DPUs are (``--device``): name -> a function returning the ``dpu``
#: package that serves them, or raising DeviceError.
DEVICES = Registry("DPU devices")
DEVICES.add("simulator", _simulator_dpu, "pimrl's simulated DPUs (modelled times), through "
            "pimrl's dpu package")
DEVICES.add("upmem", _upmem_dpu, "real UPMEM DPUs through the SDK's dpu package (measured "
            "times); runs kernels/swiftrl.c built by the SDK's dpu-upmem-dpurte-clang")


def dpu_package(device: str):
    """The ``dpu`` package that serves ``device`` (a key of :data:`DEVICES`)."""
    if device not in DEVICES:
        raise DeviceError(f"unknown device {device!r}; use {' or '.join(DEVICES)}")
    return DEVICES[device]()
