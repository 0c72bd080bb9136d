"""A stand-in for the UPMEM SDK's ``dpu`` package, for tests of ``--device upmem`` here.

It serves the SDK's Python API (2025.1) with pimrl's simulator underneath, but only that
API: no ``PIMRL_SIMULATOR``, no ``dpu.simulator``, and a ``DpuSet`` that answers nothing
but the SDK's calls (any other attribute raises AttributeError), so code that reaches for
a pimrl extension fails here as it would on a UPMEM machine. Put this folder first on
``sys.path`` (or in ``sys.modules['dpu']``) to use it.
"""
import importlib.util
from pathlib import Path

import pimrl

_DRIVER = Path(pimrl.__file__).resolve().parent.parent / "dpu" / "driver.py"
_spec = importlib.util.spec_from_file_location("_pimrl_dpu_driver_for_standin", _DRIVER)
_driver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_driver)

ALLOCATE_ALL = _driver.ALLOCATE_ALL
DpuError = _driver.DpuError

#: Every call the stand-in's sets answer: the SDK's DpuSet methods.
SDK_METHODS = frozenset({"copy", "exec", "free", "load", "log", "sync", "call", "dpus",
                         "ranks", "checkpoint", "restore"})

#: What the stand-in saw, for tests: (method, the symbol name it was given, or None).
CALLS = []


def _check_writable(host):
    """The SDK maps a single host buffer with ctypes' from_buffer, which refuses read-only
    buffers, and wants writable buffers in a list too (docs/python-api.md)."""
    for buf in host if isinstance(host, list) else [host]:
        if buf is not None and memoryview(buf).readonly:
            raise DpuError(f"host buffer of type {type(buf).__name__} is read-only")


class DpuSet:
    """The SDK's ``DpuSet``: same constructor, calls and symbol attributes; nothing else."""

    def __init__(self, nr_dpus=None, nr_ranks=None, profile="", binary=None, c_source=None,
                 asm_source=None, log=None, async_mode=False, _inner=None):
        CALLS.append(("DpuSet", {"nr_dpus": nr_dpus, "profile": profile, "binary": binary}))
        object.__setattr__(self, "_inner", _inner if _inner is not None else _driver.DpuSet(
            nr_dpus=nr_dpus, nr_ranks=nr_ranks, profile=profile, binary=binary,
            c_source=c_source, asm_source=asm_source, log=log, async_mode=async_mode))

    def __getattr__(self, name):
        inner = object.__getattribute__(self, "_inner")
        if name in SDK_METHODS:
            method = getattr(inner, name)

            def call(*args, **kwargs):
                CALLS.append((name, next((a for a in args[:2] if isinstance(a, str)), None)))
                if name == "copy":
                    _check_writable(args[0] if not isinstance(args[0], str) else args[1])
                result = method(*args, **kwargs)
                if name in ("dpus", "ranks"):
                    return [DpuSet(_inner=s) for s in result]
                return result
            return call
        if name in inner._symbols:           # a symbol attribute of the loaded program
            return getattr(inner, name)
        raise AttributeError(f"the UPMEM SDK's DpuSet has no attribute {name!r}")

    def __setattr__(self, name, value):
        inner = object.__getattribute__(self, "_inner")
        if name not in inner._symbols:
            raise AttributeError(f"the UPMEM SDK's DpuSet has no symbol {name!r}")
        setattr(inner, name, value)

    def __len__(self):
        return len(self._inner)

    def __iter__(self):
        return (DpuSet(_inner=s) for s in self._inner)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._inner.free()
