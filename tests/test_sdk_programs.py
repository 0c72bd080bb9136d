"""Programs written as UPMEM's documentation writes them (tests/sdk_programs), built with
the SDK's own command lines and run against the simulator; each checks its own results.

The C host programs run twice: with libdpu's C fast path for small transfers, and with
every call through the embedded Python simulator (PIMRL_SHIM_FAST_PATH=0), so the two
paths are held to the same answers.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from test_shim import sh, shim  # noqa: F401  (session fixture)

PROGRAMS = Path(__file__).resolve().parent / "sdk_programs"

# (DPU build line, host build line or None, run line): the lines of the README.
CASES = {
    "hello_host": ("dpu-upmem-dpurte-clang -o helloworld hello.c",
                   "cc -o hello_host hello_host.c `dpu-pkg-config --cflags --libs dpu`", "./hello_host"),
    "hello.py": (None, None, "{python} hello.py"),
    "checksum_host": ("dpu-upmem-dpurte-clang -DNR_TASKLETS=16 -O2 -o checksum checksum.c",
                      "cc -O2 -o checksum_host checksum_host.c `dpu-pkg-config --cflags --libs dpu`",
                      "./checksum_host"),
    "checksum.py": ("dpu-upmem-dpurte-clang -DNR_TASKLETS=16 -O2 -o checksum checksum.c", None,
                    "{python} checksum.py"),
    "host_abi": ("dpu-upmem-dpurte-clang -o abi abi.c",
                 "cc -o host_abi host_abi.c `dpu-pkg-config --cflags --libs dpu`", "./host_abi"),
    "python_api.py": ("dpu-upmem-dpurte-clang -o abi abi.c", None, "{python} python_api.py"),
}


@pytest.fixture
def workdir(tmp_path):
    work = tmp_path / "programs"
    shutil.copytree(PROGRAMS, work)
    return work


@pytest.mark.needs_c_shim
@pytest.mark.needs_c
@pytest.mark.parametrize("name", sorted(CASES))
def test_documented_program_builds_runs_and_checks_itself(name, shim, workdir):  # noqa: F811
    _, env = shim
    dpu_line, host_line, run_line = CASES[name]
    for line in (dpu_line, host_line):
        if line:
            r = sh(line, env, cwd=workdir)
            assert r.returncode == 0, f"{line}\n{r.stderr[-3000:]}"
    modes = [{}] if host_line is None else [{}, {"PIMRL_SHIM_FAST_PATH": "0"}]
    for extra in modes:
        r = sh(run_line.format(python=sys.executable), dict(env, **extra), cwd=workdir)
        assert r.returncode == 0, f"{run_line} {extra}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        assert r.stdout.strip().splitlines()[-1].endswith("OK"), r.stdout[-2000:]
