"""PIMRL_MODELLED_CLOCK=1 for Python hosts (pimrl/shim/clock.py): an SDK-style host script
that times ``dpus.exec()`` with the ``time`` module prints the modelled time of the launch,
as C hosts do (tests/test_shim.py); without the variable it prints the wall time; pimrl's
own timings and the libraries keep the real clock; both clocks are reported at exit.

Each host is a script file run in its own interpreter, as a user runs it. The kernel runs
soft-float double divisions on 16 tasklets of 2 DPUs: about 2 s modelled, some 0.03 s to
simulate."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SDK_STANDIN as STANDIN
from pimrl.dpurt import cc

pytestmark = pytest.mark.needs_c

ITERATIONS = 20000

KERNEL = r"""
/* Every tasklet runs `iterations` soft-float double divisions: thousands of DPU
 * instructions each, a few host cycles. */
#include <defs.h>
#include <stdint.h>

__host uint32_t iterations;
__host double result[NR_TASKLETS];

int main()
{
    double x = me() + 1.0;
    for (uint32_t i = 0; i < iterations; i++)
        x = x / 1.000001 + 1.0;
    result[me()] = x;
    return 0;
}
"""

# The SDK's way, names bound before `import dpu` included; pimrl's extension only to print
# the modelled time of the launch to compare with.
HOST = r"""
from time import perf_counter, time
import struct
import sys
import time as clocks

import dpu
from dpu import DpuSet

with DpuSet(nr_dpus=2, binary=sys.argv[1]) as dpus:
    dpus.copy("iterations", struct.pack("<I", int(sys.argv[2])))
    if getattr(dpu, "PIMRL_SIMULATOR", False):
        from dpu import simulator
        before = simulator.ledger(dpus).modelled_total_s
    t0, p0 = time(), perf_counter()
    m0, g0, c0 = clocks.monotonic_ns(), clocks.clock_gettime(clocks.CLOCK_MONOTONIC), clocks.process_time()
    dpus.exec()
    m1, g1, c1 = clocks.monotonic_ns(), clocks.clock_gettime(clocks.CLOCK_MONOTONIC), clocks.process_time()
    t1, p1 = time(), perf_counter()
    print(f"time {t1 - t0:.6f}")
    print(f"perf_counter {p1 - p0:.6f}")
    print(f"monotonic_ns {(m1 - m0) / 1e9:.6f}")
    print(f"clock_gettime {g1 - g0:.6f}")
    print(f"process_time {c1 - c0:.6f}")
    launch = simulator.ledger(dpus).modelled_total_s - before
    print(f"modelled {launch:.6f}")
    assert len(dpus.result.contents) == 2            # a symbol attribute: a copy inside
    print(f"ledger {simulator.ledger(dpus).modelled_total_s:.9f}")
"""

# pimrl's trainer-side DPU set on the "upmem" device (the SDK stand-in over pimrl's driver)
# times each launch with its own perf_counter: that figure must stay the wall time.
PIMRL_TIMING = r"""
import logging
import sys
import time

sys.path.insert(0, sys.argv[3])
import numpy as np
import dpu
assert not hasattr(dpu, "PIMRL_SIMULATOR")           # the SDK stand-in
from pimrl.dpuset import DpuPackageSet

dpus = DpuPackageSet(dpu, 2, sys.argv[1])
dpus.push_all("iterations", np.array([int(sys.argv[2])], np.uint32))
ledger = dpus.set._inner._sys.alloc.ledger
before = ledger.modelled_total_s
t0 = time.perf_counter()
dpus.run()
print(f"host {time.perf_counter() - t0:.6f}")
print(f"pimrl_measured {dpus.ledger().measured_s['dpu_kernel']:.6f}")
print(f"modelled {ledger.modelled_total_s - before:.6f}")
# the standard library (logging stamps its records with time.time()) keeps the real clock
print(f"library_behind {time.time() - logging.makeLogRecord({}).created:.6f}")
dpus.free()
"""

REPORT = re.compile(
    r"pimrl modelled clock: measured \(wall\) ([\d.]+) s; modelled clock ([\d.]+) s = host time "
    r"outside the simulator ([\d.]+) s \+ modelled time of (\d+) simulator calls ([\d.]+) s "
    r"\(their measured wall time ([\d.]+) s\)")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    where = tmp_path_factory.mktemp("clock")
    (where / "spin.c").write_text(KERNEL)
    cc.build([where / "spin.c"], where / "spin", nr_tasklets=16)
    return where / "spin"


def run_host(script: str, kernel: Path, clock: str | None, *extra: str):
    path = kernel.parent / "host.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "PIMRL_MODELLED_CLOCK"}
    if clock is not None:
        env["PIMRL_MODELLED_CLOCK"] = clock
    r = subprocess.run([sys.executable, str(path), str(kernel), str(ITERATIONS), *extra],
                       env=env, cwd=kernel.parent, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    figures = {line.split()[0]: float(line.split()[1]) for line in r.stdout.splitlines()}
    return figures, r.stderr


def test_python_host_times_exec_on_the_modelled_clock(kernel):
    """The figures the SDK-style host prints are the launch's modelled time (within 5 %)
    through every clock it reads, ``from time import`` above ``import dpu`` included; CPU
    time is not shifted; the report at exit adds up."""
    out, err = run_host(HOST, kernel, "1")
    modelled = out["modelled"]
    assert modelled > 1.0                                # about 2 s: far above the wall time
    for name in ("time", "perf_counter", "monotonic_ns", "clock_gettime"):
        assert out[name] == pytest.approx(modelled, rel=0.05), name
    assert out["process_time"] < 0.5 * modelled          # CPU time: what the process used
    m = REPORT.search(err)
    assert m, err
    wall, modelled_clock, host, calls, calls_modelled, calls_wall = map(float, m.groups())
    # import dpu, DpuSet(binary=) (its load inside it: one call), copy, exec, the symbol
    # attribute (its copy inside it), free
    assert calls == 6
    assert calls_modelled == pytest.approx(out["ledger"], abs=2e-6)
    assert modelled_clock == pytest.approx(host + calls_modelled, abs=5e-6)
    assert wall == pytest.approx(host + calls_wall, abs=5e-6)
    assert modelled_clock > wall


@pytest.mark.parametrize("clock", [None, "0"])
def test_without_the_variable_python_hosts_read_the_wall_clock(kernel, clock):
    """Unset or 0: the host prints the simulation's wall time, and no report."""
    out, err = run_host(HOST, kernel, clock)
    for name in ("time", "perf_counter", "monotonic_ns", "clock_gettime"):
        assert out[name] < 0.25 * out["modelled"], name
    assert "pimrl modelled clock" not in err


@pytest.mark.needs_sdk_standin
def test_pimrl_timings_and_libraries_keep_the_real_clock(kernel):
    """The same launch, timed by the host script (modelled) and by pimrl's own DPU set around
    the same call (``measured_s``: wall); the standard library reads the real clock too."""
    out, err = run_host(PIMRL_TIMING, kernel, "1", str(STANDIN))
    assert out["host"] == pytest.approx(out["modelled"], rel=0.05)
    assert out["pimrl_measured"] < 0.25 * out["modelled"]
    # logging's time.time() is behind the host's by the calls' modelled time less their wall
    assert 0.5 * out["modelled"] < out["library_behind"] < out["modelled"] + 0.01
    assert REPORT.search(err), err


def test_without_the_variable_nothing_is_replaced():
    """In this process (no PIMRL_MODELLED_CLOCK): the time module's clocks are the real ones
    and the package's calls are not wrapped."""
    from pimrl.shim import clock

    if clock.requested():
        pytest.skip("PIMRL_MODELLED_CLOCK is set for the test run")
    import dpu

    assert time.perf_counter is clock._real["perf_counter"] and time.time is clock._real["time"]
    assert not hasattr(dpu.DpuSet.exec, "__wrapped__")
    assert not clock.state()["installed"]
