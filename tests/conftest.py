import functools
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

# Two numba threads everywhere, so thread-count tests run the same on any machine.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import numpy as np
import pytest

from pimrl.data.records import TRANSITION_DTYPE

REPO = Path(__file__).resolve().parents[1]
#: A stand-in for the UPMEM SDK's ``dpu`` package: pimrl's simulator behind nothing but the
#: SDK's API (no ``PIMRL_SIMULATOR``, no ``dpu.simulator``), for ``--device upmem``.
SDK_STANDIN = REPO / "tests" / "sdk_standin"


# ------------------------------------------------------------- what a test needs to run here
# Marked tests (``@pytest.mark.needs_c``, or ``pytestmark = pytest.mark.needs_c`` for a
# module) are skipped, with the reason, where the requirement is missing; each requirement
# is checked once, and only if a collected test needs it.
def _have_c() -> bool:
    from pimrl.dpurt import cc

    return cc.have_compiler() and sys.platform == "linux" and os.uname().machine == "x86_64"


#: Whether the DPU runtime (pimrl.dpurt) builds and runs C DPU programs here.
HAVE_C = _have_c()
C_REASON = "the DPU runtime needs a host C compiler (gcc) on x86-64 Linux; none found here"


def _c_shim() -> tuple:
    from pimrl.shim.build import c_toolchain

    ok, what = c_toolchain()
    return ok, "" if ok else f"C path unavailable: {what}"


@functools.cache
def have_gpu() -> bool:
    """Whether numba-cuda finds a real CUDA GPU (asked in a fresh interpreter, so that the
    answer does not depend on this process's CUDA state or on the CUDA simulator)."""
    if importlib.util.find_spec("numba_cuda") is None or os.environ.get("NUMBA_ENABLE_CUDASIM"):
        return False
    out = subprocess.run([sys.executable, "-c", "from pimrl.baselines.gpu import gpu_status;"
                          "print(gpu_status()[0])"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() == "True"


def _sdk_standin() -> tuple:
    if not (SDK_STANDIN / "dpu" / "__init__.py").is_file():
        return False, f"the SDK stand-in is missing ({SDK_STANDIN / 'dpu'})"
    return HAVE_C, C_REASON      # it runs the C kernel, built by dpu-upmem-dpurte-clang


#: marker -> (its description, a check giving (available, why not)).
REQUIREMENTS = {
    "needs_c": ("a host C compiler on x86-64 Linux, for the DPU runtime (pimrl.dpurt)",
                lambda: (HAVE_C, C_REASON)),
    "needs_c_shim": ("the C host shim's toolchain: cffi, a C compiler and the Python headers",
                     _c_shim),
    "needs_gpu": ("a real CUDA GPU (numba-cuda)",
                  lambda: (have_gpu(), "no CUDA GPU here: the kernels are checked in the CUDA "
                                       "simulator instead")),
    "needs_sdk_standin": ("the UPMEM SDK stand-in of tests/sdk_standin (and the DPU runtime)",
                          _sdk_standin),
}


def pytest_configure(config):
    # A shell starts a background job (``make test &``, ``nohup``) with SIGINT ignored, and
    # every process it starts inherits that: the tests that press Ctrl-C on a child (the
    # DPU runtime's, the shim's, Dask's) would see it ignored. Ctrl-C as in a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name, (description, _) in REQUIREMENTS.items():
        config.addinivalue_line("markers", f"{name}: needs {description}; skipped without")


def pytest_collection_modifyitems(config, items):
    verdicts = {}
    for item in items:
        for name, (_, check) in REQUIREMENTS.items():
            if item.get_closest_marker(name) is None:
                continue
            if name not in verdicts:
                verdicts[name] = check()
            ok, why = verdicts[name]
            if not ok:
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture
def use_sdk_standin(monkeypatch):
    """A function that makes the stand-in the ``dpu`` that ``import dpu`` gives (pimrl's is
    put back after the test) and pimrl's DPU compiler the first on PATH; returns it. Mark
    the test ``needs_sdk_standin``."""
    def use():
        for name in [m for m in sys.modules if m == "dpu" or m.startswith("dpu.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "dpu.simulator", None)   # no extension to reach for
        monkeypatch.syspath_prepend(str(SDK_STANDIN))
        monkeypatch.setenv("PATH", f"{REPO / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
        import dpu

        assert (Path(dpu.__file__).parent == SDK_STANDIN / "dpu"
                and not hasattr(dpu, "PIMRL_SIMULATOR"))
        dpu.CALLS.clear()
        monkeypatch.setitem(sys.modules, "dpu", dpu)      # undone: pimrl's comes back
        return dpu
    return use


def random_records(n, n_states, n_actions, seed=0, p_terminal=0.1, reward_range=(-3, 5)):
    """Synthetic transitions covering every field (not from an environment)."""
    rs = np.random.default_rng(seed)
    rec = np.zeros(n, TRANSITION_DTYPE)
    rec["state"] = rs.integers(0, n_states, n)
    rec["next_state"] = rs.integers(0, n_states, n)
    rec["action"] = rs.integers(0, n_actions, n)
    rec["next_action"] = rs.integers(0, n_actions, n)
    rec["reward"] = rs.integers(reward_range[0], reward_range[1], n)
    rec["terminated"] = rs.random(n) < p_terminal
    return rec


def small_machine(**over):
    """A simulated machine of 3 ranks (two DPUs faulty): small allocations' rules."""
    from pimrl.pim.hardware import get_hardware
    from pimrl.pim.system import Machine

    return Machine(get_hardware("upmem-2556", {"n_ranks": 3, "n_faulty_dpus": 2, **over}))


def code(exc_info):
    """The SDK error code of a ``pytest.raises(DpuError)``."""
    return exc_info.value.code


@pytest.fixture
def records_small():
    return random_records(1237, 11, 4, seed=7)


def cli_parsers(parser=None, prefix="pimrl"):
    """(command name, parser) of every ``pimrl`` command and sub-command."""
    import argparse

    from pimrl.cli import build_parser

    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from cli_parsers(sub, f"{prefix} {name}")
