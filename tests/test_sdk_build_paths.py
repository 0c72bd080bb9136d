"""SDK projects that do not call dpu-pkg-config build against pimrl unmodified.

pimrl's UPMEM_HOME-style tree (``host/upmem/``, printed by ``dpu-pkg-config --upmem-home``) holds
``bin/clang`` (a DPU compiler with ``--target=dpu-upmem-dpurte`` or ``-target
dpu-upmem-dpurte``, the host's compiler without), ``bin/dpu-clang``,
``share/upmem/cmake/include/host/DpuHost.cmake`` and the DPU toolchain file
``share/upmem/cmake/dpu.cmake``; ``eval "$(dpu-pkg-config --env)"`` stands in for the SDK's
``upmem_env.sh``, so ``cc ... -I/usr/include/dpu -ldpu`` and ``dpu-clang`` builds work.
Checked here: the tree and its commands, the environment, an SDK-style CMake project
(``tests/outside/sdk_checksum``: DpuHost.cmake and ``${UPMEM_HOME}/bin/clang
--target=dpu-upmem-dpurte``, or the dpu.cmake toolchain), the same project's Makefile
(``dpu-clang``, ``-I/usr/include/dpu -ldpu``), and the tree in an installed package's layout.
docs/real-hardware.md, "Building SDK projects: CMake, dpu-clang, -ldpu".
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import C_REASON, HAVE_C
from pimrl import resources
from pimrl.shim import build as shim_build

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "bin"
UPMEM = REPO / "host" / "upmem"
PROJECT = REPO / "tests" / "outside" / "sdk_checksum"

TOOLCHAIN_OK, TOOLCHAIN = shim_build.c_toolchain()

DPU_SRC = r"""
#include <defs.h>
#include <stdint.h>
__host uint32_t out[NR_TASKLETS];
__host uint32_t scale;
int main(void) { out[me()] = me() * scale + 1; return 0; }
"""


def _env(**extra) -> dict:
    """The caller's environment as a user's shell has it: not a sub-make, no PYTHONPATH."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    for var in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "UPMEM_HOME", "CPATH", "LIBRARY_PATH",
                "LD_RUN_PATH", "PIMRL_HOST_CC"):
        env.pop(var, None)
    env.update(extra)
    return env


def _run(cmd, timeout=300, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def shim_env():
    """An environment after ``eval "$(dpu-pkg-config --env)"`` (libdpu.so built)."""
    if not TOOLCHAIN_OK:
        pytest.skip(f"C path unavailable: {TOOLCHAIN}")
    if not HAVE_C:
        pytest.skip(C_REASON)
    env = _env()
    r = _run(["sh", "-c", f'eval "$({BIN}/dpu-pkg-config --env)" && env'], env=env)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def _check_dpu_program(prog: Path, tasklets: int = 3) -> None:
    """``prog`` is a DPU program the simulator runs: each tasklet writes its slot."""
    from pimrl.dpurt.testing import DpuSim

    with DpuSim(program=prog, nr_dpus=2) as sim:
        sim.write("scale", np.uint32(5))
        sim.launch()
        got = sim.read_each("out", np.uint32, tasklets)
        assert got.tolist() == [[5 * t + 1 for t in range(tasklets)]] * 2


# ----------------------------------------------------------------------------- the tree
def test_upmem_home_is_printed_and_laid_out_as_the_sdk():
    r = _run([str(BIN / "dpu-pkg-config"), "--upmem-home"], env=_env())
    home = Path(r.stdout.strip())
    assert home == resources.UPMEM_HOME == UPMEM
    for cmd in ("clang", "dpu-clang", "dpu-upmem-dpurte-clang", "dpu-pkg-config"):
        assert os.access(home / "bin" / cmd, os.X_OK), cmd
    for f in ("share/upmem/cmake/include/host/DpuHost.cmake", "share/upmem/cmake/dpu.cmake"):
        assert (home / f).is_file(), f
    # the tree's dpu-pkg-config is pimrl's; pkg-config's --variable= answers
    assert _run([str(home / "bin" / "dpu-pkg-config"), "--upmem-home"],
                env=_env()).stdout.strip() == str(home)
    inc = _run([str(BIN / "dpu-pkg-config"), "--variable=includedir", "dpu"], env=_env())
    assert Path(inc.stdout.strip(), "dpu.h").is_file()
    bad = subprocess.run([str(BIN / "dpu-pkg-config"), "--variable=nosuch", "dpu"],
                         capture_output=True, text=True, env=_env())
    assert bad.returncode == 1 and "includedir" in bad.stderr


def test_installed_package_carries_the_tree(tmp_path):
    """The tree ships (resources.DATA_DIRS, which setup.py copies to pimrl/_data) and works
    from an installed package's layout: site-packages/pimrl/_data/host/upmem."""
    rel = resources.UPMEM_HOME.relative_to(resources.ROOT)
    assert rel.parts[0] in resources.DATA_DIRS
    assert f"graft {rel.parts[0]}" in (REPO / "MANIFEST.in").read_text()
    site = tmp_path / "site"
    shutil.copytree(REPO / "pimrl", site / "pimrl",
                    ignore=shutil.ignore_patterns("__pycache__", "_data"))
    for top in sorted({"host", "bin", rel.parts[0]}):
        shutil.copytree(REPO / top, site / "pimrl" / "_data" / top,
                        ignore=shutil.ignore_patterns("build", "__pycache__"))
    home = site / "pimrl" / "_data" / rel
    env = _env(PIMRL_PYTHON=sys.executable)
    out = _run([str(home / "bin" / "dpu-pkg-config"), "--upmem-home"], env=env, cwd=tmp_path)
    assert out.stdout.strip() == str(home.resolve())
    inc = _run([str(home / "bin" / "dpu-pkg-config"), "--variable=includedir", "dpu"],
               env=env, cwd=tmp_path)
    assert inc.stdout.strip() == str((site / "pimrl" / "_data" / "host" / "include").resolve())
    if HAVE_C:
        src = tmp_path / "t.c"
        src.write_text(DPU_SRC)
        _run([str(home / "bin" / "dpu-clang"), "-DNR_TASKLETS=3", "-O2", "-o",
              str(tmp_path / "t.dpu"), str(src)], env=env, cwd=tmp_path)
        _check_dpu_program(tmp_path / "t.dpu")


# ----------------------------------------------------------------------------- commands
@pytest.mark.needs_c
@pytest.mark.parametrize("cmd", [
    ["clang", "--target=dpu-upmem-dpurte"],
    ["clang", "-target", "dpu-upmem-dpurte"],
    ["clang", "--target=dpu-upmem-dpurte", "-mcpu=v1A"],
    ["dpu-clang"],
    ["dpu-upmem-dpurte-clang"],
], ids=["target=", "target-two-words", "mcpu", "dpu-clang", "dpu-upmem-dpurte-clang"])
def test_dpu_compiler_commands_build_a_dpu_program(cmd, tmp_path):
    src = tmp_path / "t.c"
    src.write_text(DPU_SRC)
    prog = tmp_path / "t.dpu"
    _run([str(UPMEM / "bin" / cmd[0]), *cmd[1:], "-DNR_TASKLETS=3", "-O2", "-g", "-Wall",
          "-o", str(prog), str(src)], env=_env(), cwd=tmp_path)
    _check_dpu_program(prog)


@pytest.mark.needs_c
def test_clang_dpu_target_compiles_then_links(tmp_path):
    """``-c`` then a separate link, as CMake and Makefiles with object files do."""
    src = tmp_path / "t.c"
    src.write_text(DPU_SRC)
    clang = str(UPMEM / "bin" / "clang")
    _run([clang, "-target", "dpu-upmem-dpurte", "-DNR_TASKLETS=3", "-O2", "-c", "-o",
          str(tmp_path / "t.o"), str(src)], env=_env(), cwd=tmp_path)
    _run([clang, "--target=dpu-upmem-dpurte", "-DNR_TASKLETS=3", "-o", str(tmp_path / "t.dpu"),
          str(tmp_path / "t.o")], env=_env(), cwd=tmp_path)
    _check_dpu_program(tmp_path / "t.dpu")
    v = _run([clang, "--target=dpu-upmem-dpurte", "--version"], env=_env())
    assert "pimrl" in v.stdout


def test_clang_without_a_dpu_target_runs_the_host_compiler(tmp_path):
    """No DPU target: the first other clang on PATH (never a pimrl one, even a second copy),
    else cc; PIMRL_HOST_CC decides when set."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "clang").write_text('#!/bin/sh\necho "host clang: $*"\n')
    (fake / "clang").chmod(0o755)
    copy = tmp_path / "copy"                       # another pimrl tree's clang, first on PATH
    copy.mkdir()
    shutil.copy2(UPMEM / "bin" / "clang", copy / "clang")
    path = os.pathsep.join([str(copy), str(UPMEM / "bin"), str(fake), "/usr/bin", "/bin"])
    r = _run([str(UPMEM / "bin" / "clang"), "-O2", "-c", "x.c"], env=_env(PATH=path))
    assert r.stdout.strip() == "host clang: -O2 -c x.c"
    r = _run([str(UPMEM / "bin" / "clang"), "--target=x86_64-linux-gnu", "-c", "x.c"],
             env=_env(PATH=path))
    assert r.stdout.strip() == "host clang: --target=x86_64-linux-gnu -c x.c"
    r = _run([str(UPMEM / "bin" / "clang"), "-v"],
             env=_env(PATH=path, PIMRL_HOST_CC=f"{fake / 'clang'} --extra"))
    assert r.stdout.strip() == "host clang: --extra -v"
    # and for real: a host program, by the system's clang or cc
    path = os.pathsep.join([str(copy), str(UPMEM / "bin"), "/usr/bin", "/bin"])
    if any(shutil.which(c, path=path) for c in ("cc", "gcc")):
        (tmp_path / "h.c").write_text('#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
        _run([str(UPMEM / "bin" / "clang"), "-o", str(tmp_path / "h"), str(tmp_path / "h.c")],
             env=_env(PATH=path))
        assert _run([str(tmp_path / "h")]).stdout == "hi\n"


# ----------------------------------------------------------------------------- environment
def test_env_lines_set_up_an_sdk_environment_once(shim_env):
    env = shim_env
    home = str(UPMEM)
    assert env["UPMEM_HOME"] == home
    assert env["PATH"].split(os.pathsep)[0] == f"{home}/bin"
    inc = Path(env["CPATH"].split(os.pathsep)[0])
    lib = Path(env["LIBRARY_PATH"].split(os.pathsep)[0])
    assert (inc / "dpu.h").is_file() and (lib / "libdpu.so").is_file()
    assert env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(lib)
    assert env["LD_RUN_PATH"].split(os.pathsep)[0] == str(lib)
    # evaluated again (a second shell start-up file, a nested shell): nothing added twice
    again = _run(["sh", "-c", f'eval "$({BIN}/dpu-pkg-config --env)" && env'], env=env)
    env2 = dict(line.split("=", 1) for line in again.stdout.splitlines() if "=" in line)
    for var in ("PATH", "CPATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "LD_RUN_PATH"):
        assert env2[var] == env[var], var
    assert "" not in env2["CPATH"].split(os.pathsep)     # an empty entry is the current folder


# ----------------------------------------------------------------------------- projects
def _copy_project(tmp_path) -> Path:
    work = tmp_path / "sdk_checksum"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("bin", "build*"))
    return work


@pytest.mark.parametrize("toolchain", [False, True], ids=["clang-target", "dpu.cmake"])
def test_cmake_sdk_project_builds_and_runs(toolchain, shim_env, tmp_path):
    """``include(${UPMEM_HOME}/share/upmem/cmake/include/host/DpuHost.cmake)`` for the host
    program; the DPU program by ``${UPMEM_HOME}/bin/clang --target=dpu-upmem-dpurte`` (or as
    its own project with the dpu.cmake toolchain file). UPMEM_HOME from the environment."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    work = _copy_project(tmp_path)
    env = _env(UPMEM_HOME=str(UPMEM))
    _run([cmake, "-S", str(work), "-B", str(work / "build"), "-DNR_DPUS=3",
          "-DNR_TASKLETS=6", f"-DCHECKSUM_DPU_TOOLCHAIN={'ON' if toolchain else 'OFF'}"],
         env=env)
    built = _run([cmake, "--build", str(work / "build")], env=env)
    assert "Circular" not in built.stdout + built.stderr
    # runs without LD_LIBRARY_PATH: the build RPATH finds libdpu.so
    env.pop("LD_LIBRARY_PATH", None)
    run = _run([str(work / "build" / "checksum_host")], env=env, cwd=tmp_path)
    assert run.stdout.strip() == "3 DPUs, 6 tasklets: OK", run.stdout


def test_makefile_project_with_dpu_clang_and_ldpu(shim_env, tmp_path):
    """An unmodified Makefile calling ``dpu-clang`` and ``cc ... -I/usr/include/dpu -ldpu``,
    in the environment ``eval "$(dpu-pkg-config --env)"`` leaves."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    work = _copy_project(tmp_path)
    _run(["make", "-s", "all", "NR_DPUS=2"], env=shim_env, cwd=work)
    run = _run(["make", "-s", "test", "NR_DPUS=2"], env=shim_env, cwd=work)
    assert run.stdout.strip().endswith("2 DPUs, 8 tasklets: OK"), run.stdout
    # LD_RUN_PATH put the library's folder in the program: it runs outside the environment
    outside = _env()
    outside.pop("LD_LIBRARY_PATH", None)
    run = _run([str(work / "bin" / "checksum_host")], env=outside, cwd=work)
    assert run.stdout.strip() == "2 DPUs, 8 tasklets: OK"


@pytest.mark.needs_c
def test_the_compiler_takes_the_target_as_two_words_and_cmake_object_names(tmp_path):
    """``dpu-upmem-dpurte-clang -target dpu-upmem-dpurte`` (two words, as the SDK's clang
    takes it) and objects named ``.obj`` (CMake's names under a toolchain file)."""
    src = tmp_path / "t.c"
    src.write_text(DPU_SRC)
    clang = str(BIN / "dpu-upmem-dpurte-clang")
    _run([clang, "-target", "dpu-upmem-dpurte", "-DNR_TASKLETS=2", "-O2", "-c", "-o",
          str(tmp_path / "t.obj"), str(src)], env=_env())
    _run([clang, "--target", "dpu-upmem-dpurte", "-DNR_TASKLETS=2", "-o", str(tmp_path / "t"),
          str(tmp_path / "t.obj")], env=_env())
    assert (tmp_path / "t").stat().st_size > 0
