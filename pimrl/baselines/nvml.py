"""The GPU baseline's energy, measured through NVML (the NVIDIA driver's management library).

- **What is read.** ``nvmlDeviceGetTotalEnergyConsumption``: the board's energy in
  millijoules since the driver was loaded (Volta and later; older boards answer "not
  supported"). Like RAPL's package counter it counts the whole board, idle power included,
  whatever else runs on it.
- **The window.** The counter is updated at the driver's power-sampling interval (tens of
  milliseconds, device dependent: uncertain), longer than one of the baseline's launches at
  DPU-sized partitions (a few to tens of ms). So the energy of a run is read over a window of
  back-to-back launches of at least :data:`ENERGY_WINDOW_S` and divided by their number
  (:func:`energy_per_run`): one sampling interval is then a few percent of the window.
- **Which board.** The one CUDA runs on, found by its UUID (CUDA's and NVML's device
  numbers may differ); index 0 where the UUID is not known.
- **Where it cannot be read** (no driver, a board without the counter, the CUDA simulator),
  nothing is estimated: :class:`NvmlMeter` says why, and the baseline's energy is "not
  measured". The library is found as ``libnvidia-ml.so.1`` (the driver's), or at the path in
  ``PIMRL_NVML_LIB``.
"""
from __future__ import annotations

import ctypes
import os
import time

#: The shortest window of launches an energy reading is taken over (seconds; module docstring).
ENERGY_WINDOW_S = 1.0
NVML_SUCCESS = 0


class NvmlMeter:
    """The total-energy counter of one NVIDIA board.

    ``available``: the counter was read once; else ``reason`` says why not (and ``read_mj``
    must not be called). ``uuid``: the board's (``GPU-...``, as CUDA names it), or None for
    NVML's device 0. ``close()`` shuts NVML down (also on ``with`` exit)."""

    def __init__(self, uuid: str | None = None, library: str | None = None):
        self.available, self.reason, self.name, self.uuid = False, "", "", uuid
        self._lib = self._handle = None
        path = library or os.environ.get("PIMRL_NVML_LIB") or "libnvidia-ml.so.1"
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            self.reason = f"NVML not found ({path}: {exc})"
            return
        try:
            lib.nvmlErrorString.restype = ctypes.c_char_p
            lib.nvmlErrorString.argtypes = [ctypes.c_int]
            for fn in ("nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByUUID",
                       "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName",
                       "nvmlDeviceGetTotalEnergyConsumption"):
                getattr(lib, fn).restype = ctypes.c_int
            lib.nvmlDeviceGetTotalEnergyConsumption.argtypes = [
                ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulonglong)]
        except AttributeError as exc:        # not NVML, or one too old for the counter
            self.reason = f"{path} lacks an NVML entry point ({exc})"
            return
        self._lib = lib
        rc = lib.nvmlInit_v2()
        if rc != NVML_SUCCESS:
            self.reason = f"nvmlInit: {self._error(rc)}"
            self._lib = None
            return
        handle = ctypes.c_void_p()
        if uuid:
            rc = lib.nvmlDeviceGetHandleByUUID(ctypes.c_char_p(uuid.encode()),
                                               ctypes.byref(handle))
            where = f"the board {uuid}"
        else:
            rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(0), ctypes.byref(handle))
            where = "NVML's device 0"
        if rc != NVML_SUCCESS:
            self.reason = f"{where}: {self._error(rc)}"
            self.close()
            return
        self._handle = handle
        name = ctypes.create_string_buffer(96)
        if lib.nvmlDeviceGetName(handle, name, ctypes.c_uint(len(name))) == NVML_SUCCESS:
            self.name = name.value.decode(errors="replace")
        try:
            self.read_mj()
        except RuntimeError as exc:          # e.g. "Not Supported" before Volta
            self.reason = str(exc)
            self.close()
            return
        self.available = True

    def _error(self, rc: int) -> str:
        text = self._lib.nvmlErrorString(rc)
        return f"{text.decode(errors='replace') if text else 'error'} (NVML code {rc})"

    def read_mj(self) -> int:
        """The board's energy counter, millijoules."""
        value = ctypes.c_ulonglong()
        rc = self._lib.nvmlDeviceGetTotalEnergyConsumption(self._handle, ctypes.byref(value))
        if rc != NVML_SUCCESS:
            raise RuntimeError(f"nvmlDeviceGetTotalEnergyConsumption: {self._error(rc)}")
        return int(value.value)

    def close(self) -> None:
        if self._lib is not None:
            self._lib.nvmlShutdown()
            self._lib = self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def energy_per_run(run_once, meter: NvmlMeter, window_s: float = ENERGY_WINDOW_S,
                   clock=time.perf_counter) -> tuple:
    """``(joules, launches, seconds)``: ``run_once()`` (one whole run, synchronized) repeated
    back to back until ``window_s`` have passed (at least once), the counter's difference
    over the window divided by the number of runs."""
    before, t0, runs = meter.read_mj(), clock(), 0
    while runs == 0 or clock() - t0 < window_s:
        run_once()
        runs += 1
    seconds = clock() - t0
    return (meter.read_mj() - before) * 1e-3 / runs, runs, seconds


def current_device_uuid() -> str | None:
    """The UUID of the CUDA device numba runs on (``GPU-...``), or None where not known."""
    try:
        from numba import cuda

        uuid = getattr(cuda.get_current_device(), "uuid", None)
    except Exception:                        # no driver: the meter then says why
        return None
    return str(uuid) if uuid else None
