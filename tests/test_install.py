"""A packaged install carries everything: a wheel built from this checkout, installed (not
editable) into a fresh virtual environment and used from another folder, runs the C shim,
the DPU runtime and the C kernels, with ``dpu-pkg-config`` and ``dpu-upmem-dpurte-clang`` as
installed commands. No network: the wheel is built with this environment's setuptools, and
the fresh environment borrows this one's dependencies (numpy, numba, cffi, matplotlib)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import HAVE_C
from pimrl.shim.build import c_toolchain

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.install]


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{cmd}: {r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, a folder outside the checkout, environment with only the venv's bin on PATH)."""
    ok, why = c_toolchain()
    if not ok:
        pytest.skip(f"C path unavailable: {why}")
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"cannot build a wheel here: {exc}")
    tmp = tmp_path_factory.mktemp("install")
    # Build from a copy of the sources, as from a clean checkout: no environment, no build
    # outputs (setup.py leaves those out too).
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "out", "__pycache__", "*.egg-info",
        ".pytest_cache", ".hypothesis", "*.so", "*.o"))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--no-index", "-w", str(tmp / "dist"), str(src)])
    wheel_file = next((tmp / "dist").glob("pimrl-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
          "--no-index", str(wheel_file)])
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    # This environment's packages after the venv's own (a .pth line adds a folder without
    # running its .pth files, so this checkout's editable pimrl stays out).
    Path(site.stdout.strip(), "_pimrl_test_deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    shutil.rmtree(src)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIMRL_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return venv, elsewhere, env


def test_installed_package_finds_its_files_in_itself(installed):
    venv, elsewhere, env = installed
    r = _run([str(venv / "bin" / "python"), "-c",
              "import json, pimrl, pimrl.resources as r, pimrl.cli.experiments as e, "
              "pimrl.calibration.doc as d; print(json.dumps([pimrl.__file__, str(r.ROOT), "
              "r.INSTALLED, e.DEMO_CONFIG.is_file(), d.DOC_PATH.is_file()]))"],
             cwd=elsewhere, env=env)
    module, root, is_installed, demo, doc = json.loads(r.stdout)
    assert module.startswith(str(venv)) and root.startswith(str(venv)) and is_installed
    assert demo and doc
    data = Path(root)
    assert not list(data.rglob("build"))          # no build output of the checkout shipped
    for rel in ("host/src/dpu_shim.c", "host/include/dpu.h", "host/dpurt/src/dpurt.c",
                "kernels/swiftrl.c", "bin/dpu-pkg-config", "host/upmem/bin/clang", "host/upmem/bin/dpu-clang",
                "host/upmem/share/upmem/cmake/include/host/DpuHost.cmake"):
        assert (data / rel).is_file(), rel
    assert os.access(data / "bin" / "dpu-pkg-config", os.X_OK)
    assert os.access(data / "host" / "upmem" / "bin" / "dpu-clang", os.X_OK)
    home = _run(["dpu-pkg-config", "--upmem-home"], cwd=elsewhere, env=env).stdout.strip()
    assert home == str(data / "host" / "upmem")
    assert _run(["pimrl", "--version"], cwd=elsewhere, env=env).stdout.startswith("pimrl ")


def test_installed_commands_build_and_run_an_sdk_program(installed):
    """dpu-pkg-config (builds libdpu.so, the C shim) and dpu-upmem-dpurte-clang (the DPU
    runtime), as an outside user's Makefile calls them."""
    venv, elsewhere, env = installed
    for cmd in ("dpu-pkg-config", "dpu-upmem-dpurte-clang"):
        assert shutil.which(cmd, path=env["PATH"]) == str(venv / "bin" / cmd)
    prog = elsewhere / "vector_add"
    shutil.copytree(REPO / "tests" / "outside" / "vector_add", prog,
                    ignore=shutil.ignore_patterns("bin"))
    r = _run(["make", "-s", "test", "NR_DPUS=3"], cwd=prog, env=env)
    assert r.stdout.rstrip().endswith("OK"), r.stdout
    flags = _run(["dpu-pkg-config", "--cflags", "--libs", "dpu"], cwd=elsewhere, env=env).stdout
    assert str(venv) in flags and str(REPO) not in flags
    # The copy of bin/ the package carries works too.
    data_bin = next(venv.rglob("pimrl/_data/bin/dpu-pkg-config"))
    assert _run([str(data_bin), "--cflags", "dpu"], cwd=elsewhere, env=env).stdout.split()[0] \
        == flags.split()[0]


def test_installed_package_runs_the_c_kernels(installed):
    venv, elsewhere, env = installed
    r = _run(["pimrl", "train", "--env", "FrozenLake-v1", "--transitions", "2000", "--backend",
              "pim", "--dpus", "3", "--tasklets", "4", "--kernel", "c", "--json"],
             cwd=elsewhere, env=env)
    out = json.loads(r.stdout)
    assert out["runs"][0]["kernel"] == "c" and out["runs"][0]["n_updates"] == 2000


def test_a_users_kernel_test_gets_dpu_sim_with_no_conftest(installed):
    """The pytest11 entry point registers the dpu_sim fixture on install: a user's test of
    their own kernel, in a folder with no conftest.py, uses it."""
    venv, elsewhere, env = installed
    if not HAVE_C:
        pytest.skip("the DPU runtime needs a host C compiler on x86-64 Linux")
    proj = elsewhere / "my_kernel"
    proj.mkdir()
    (proj / "task.c").write_text(
        "#include <defs.h>\n#include <stdint.h>\n__host uint32_t n;\n__host uint32_t sum;\n"
        "int main(void) { if (me() == 0) { uint32_t s = 0; for (uint32_t i = 1; i <= n; i++)"
        " s += i; sum = s; } return 0; }\n")
    (proj / "test_task.py").write_text(
        "import numpy as np\n\n"
        "def test_sum(dpu_sim):\n"
        "    sim = dpu_sim('task.c', nr_dpus=2, nr_tasklets=2)\n"
        "    sim.write('n', np.uint32(100))\n"
        "    sim.launch()\n"
        "    assert sim.read('sum', np.uint32, dpu=1)[0] == 5050\n"
        "    import pimrl\n"
        "    assert pimrl.__file__.startswith(%r)\n" % str(venv))
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p",
                        "no:cacheprovider", "test_task.py"], cwd=proj, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_build_makes_an_sdist_and_a_wheel_without_metadata_warnings(tmp_path):
    """python -m build (no isolation: no network here) from a clean copy of the sources:
    an sdist and a wheel, and no deprecation warning from pimrl's own metadata."""
    pytest.importorskip("build", reason="the build package is not installed")
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "out", "__pycache__", "*.egg-info",
        ".pytest_cache", ".hypothesis", "*.so", "*.o", "*.a"))
    r = subprocess.run([sys.executable, "-W", "default", "-m", "build", "--no-isolation", "-o",
                        str(tmp_path / "dist"), str(src)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "dist").iterdir())
    assert [n.split("-")[0] for n in names] == ["pimrl", "pimrl"]
    assert {n.rsplit(".", 1)[-1] for n in names} == {"gz", "whl"}
    text = r.stdout + r.stderr
    bad = [line for line in text.splitlines()
           if "Deprecat" in line or "SetuptoolsWarning" in line or "license" in line.lower()
           and "warn" in line.lower()]
    assert not bad, bad
