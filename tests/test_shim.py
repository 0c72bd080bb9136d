"""The C host shim: libdpu.so (the UPMEM SDK host API over the simulator), dpu-pkg-config,
host/app.c (with the C kernels of kernels/ loaded by path, and with the built-in numba
kernel), the user-kind error program and the fuzzer under AddressSanitizer.

The library is built once per session in a temporary folder; everything that needs a C
compiler is skipped, with the reason, when there is none.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import C_REASON, HAVE_C
from pimrl.pim.errors import DpuErrorCode, DpuError
from pimrl.shim import build as shim_build
from pimrl.pim import programs

REPO = Path(__file__).resolve().parents[1]
HOST = REPO / "host"
KERNEL_DIR = REPO / "kernels"
COMMON_H = KERNEL_DIR / "swiftrl_common.h"
PKG_CONFIG = REPO / "bin" / "dpu-pkg-config"
DPU_CC = REPO / "bin" / "dpu-upmem-dpurte-clang"
TOOLCHAIN_OK, TOOLCHAIN = shim_build.c_toolchain()


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def shim(tmp_path_factory):
    """(build dir, environment) with libdpu.so built and pimrl's bin first on PATH."""
    if not TOOLCHAIN_OK:
        pytest.skip(f"C path unavailable: {TOOLCHAIN}")
    build = tmp_path_factory.mktemp("shim")
    shim_build.build_shim(build, force=True)
    env = dict(os.environ)
    env["PATH"] = f"{REPO / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIMRL_SHIM_BUILD_DIR"] = str(build)
    env.pop("PIMRL_SHIM_TRACE", None)
    return build, env


def sh(cmd: str, env, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, shell=True, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def cc_user(src: Path, exe: Path, env, pkg_flags: str = "") -> None:
    """Build the way a user does: nothing but the dpu-pkg-config line."""
    r = sh(f"cc {src} -o {exe} $(dpu-pkg-config --cflags --libs {pkg_flags} dpu)", env)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    from pimrl.data import generate_dataset, save_dataset
    from pimrl.envs import make

    env = make("FrozenLake-v1")
    path = tmp_path_factory.mktemp("data") / "lake.ds"
    save_dataset(path, generate_dataset(env, 6007, seed=3), env.env_id, 3, "uniform")
    return path


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory):
    """The folder app looks in for its DPU programs (built by the `c_kernels` fixture)."""
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture(scope="session")
def app(shim, kernel_dir, tmp_path_factory):
    build, env = shim
    exe = tmp_path_factory.mktemp("app") / "app"
    r = sh(f"cc -O2 -Wall -Wextra -Werror -ffp-contract=off -DSWIFTRL_KERNEL_DIR='\"{kernel_dir}\"' "
           f"{HOST / 'app.c'} -o {exe} $(dpu-pkg-config --cflags --libs dpu) -lm", env)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="session")
def c_kernels(shim, kernel_dir):
    """build(states, actions, tasklets, "algo-dtype-sampling"): kernels/swiftrl.c built into
    kernel_dir under kernels/Makefile's name, by kernels/Makefile (with pimrl's
    dpu-upmem-dpurte-clang; without make, by the same command). VISITS=0, as PimTrainer
    builds it for the mean and sync aggregators, so the modelled times agree too."""
    if not HAVE_C:
        pytest.skip(C_REASON)
    _, env = shim

    def build(states, actions, tasklets, variant):
        name = f"swiftrl-{variant}-s{states}-a{actions}-t{tasklets}"
        if shutil.which("make"):
            r = sh(f"make -C {KERNEL_DIR} DPU_CC={DPU_CC} BUILDDIR={kernel_dir} VISITS=0 "
                   f"STATES={states} ACTIONS={actions} TASKLETS={tasklets} VARIANT={variant}", env)
        else:
            algo, dtype, sampling = variant.split("-")
            codes = {"q": 0, "sarsa": 1, "fp32": 0, "int32": 1, "seq": 0, "str": 1, "ran": 2}
            r = sh(f"cd {KERNEL_DIR} && {DPU_CC} -O2 -DNR_TASKLETS={tasklets} -DN_STATES={states} "
                   f"-DN_ACTIONS={actions} -DSWIFTRL_ALGO={codes[algo]} "
                   f"-DSWIFTRL_DTYPE={codes[dtype]} -DSWIFTRL_SAMPLING={codes[sampling]} "
                   f"-DBLOCK_BYTES=2048 -DCOUNT_VISITS=0 -o {kernel_dir / name} swiftrl.c", env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert (kernel_dir / name).is_file(), name
        return kernel_dir / name

    return build


# ------------------------------------------------------------------------------ no compiler
def test_python_paths_work_without_a_c_compiler(monkeypatch, capsys):
    from pimrl.cli import main

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(shim_build.shutil, "which", lambda name: None)
    ok, reason = shim_build.c_toolchain()
    assert not ok and "no C compiler" in reason
    assert main(["shim", "build"]) == 2
    err = capsys.readouterr().err
    assert "the C path is unavailable" in err and "no C compiler" in err
    with pytest.raises(shim_build.ShimUnavailable):
        shim_build.build_shim("/nonexistent/never-created")


def test_library_built_for_another_interpreter_is_built_again(shim, monkeypatch):
    """The library embeds the interpreter that built it (and that one's sys.path): one built
    by another Python would start without this one's packages, so it is built again."""
    build, _ = shim
    assert not shim_build.needs_build(build)
    made_for = build / (shim_build.LIBRARY + ".python")
    assert made_for.read_text().splitlines()[0] == sys.executable
    monkeypatch.setattr(shim_build, "python_paths", lambda: ["/elsewhere/site-packages"])
    assert shim_build.needs_build(build)
    monkeypatch.undo()
    assert not shim_build.needs_build(build)


# ------------------------------------------------------------------------------ programs
def test_builtin_program_names():
    from pimrl.pim.hardware import get_hardware
    from pimrl.rlkernel.program import RlProgram

    hw = get_hardware("upmem-640")
    p = programs.load_program("pimrl:swiftrl?states=10&actions=3&tasklets=8&algo=sarsa"
                              "&dtype=int32&sampling=str&block=1024&visits=0", hw)
    assert isinstance(p, RlProgram)
    assert (p.n_states, p.n_actions, p.tasklets, p.algo, p.dtype, p.sampling, p.block_bytes) == \
        (10, 3, 8, "sarsa", "int32", "str", 1024)
    assert not p.count_visits
    cases = {
        "pimrl:nothing": "DPU_ERR_ELF_NO_SUCH_FILE",
        "/no/such/file": "DPU_ERR_ELF_NO_SUCH_FILE",
        "pimrl:swiftrl?states=4": "DPU_ERR_ELF_INVALID_FILE",
        "pimrl:swiftrl?states=4&actions=2&colour=red": "DPU_ERR_ELF_INVALID_FILE",
        "pimrl:swiftrl?states=4&actions=2&algo=td": "DPU_ERR_ELF_INVALID_FILE",
        "pimrl:swiftrl?states=50000&actions=100": "DPU_ERR_ELF_INVALID_FILE",   # WRAM overflow
        "pimrl:diag?cycles=x": "DPU_ERR_ELF_INVALID_FILE",
        "pimrl:swiftrl?states=4&actions=2&visits=2": "DPU_ERR_ELF_INVALID_FILE",
    }
    for path, code in cases.items():
        with pytest.raises(DpuError) as info:
            programs.load_program(path, hw)
        assert info.value.code.name == code, path


def test_program_descriptor_file_and_loader_hook(tmp_path):
    from pimrl.pim.hardware import get_hardware

    hw = get_hardware("upmem-640")
    desc = tmp_path / "swiftrl_dpu"
    desc.write_text("pimrl:diag?cycles=5\n")
    assert isinstance(programs.load_program(str(desc), hw), programs.DiagProgram)
    elf = tmp_path / "task"
    elf.write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(DpuError) as info:
        programs.load_program(str(elf), hw)
    assert info.value.code == DpuErrorCode.DPU_ERR_ELF_INVALID_FILE
    marker = programs.DiagProgram(hw, cycles=3)
    programs.FILE_LOADERS.append(lambda path, hardware: marker if path == elf else None)
    try:
        assert programs.load_program(str(elf), hw) is marker
    finally:
        programs.FILE_LOADERS.pop()


def test_diag_program_on_the_simulator():
    from pimrl.pim.system import Machine, dpu_alloc
    from pimrl.pim.hardware import get_hardware

    hw = get_hardware("upmem-640")
    dpus = dpu_alloc(3, machine=Machine(hw))
    dpus.load(programs.load_program("pimrl:diag", hw))
    dpus.copy_to("words", 0, np.arange(64, dtype=np.uint32))
    dpus.launch()
    first = dpus.dpu_sets()[0]
    assert np.array_equal(first.copy_from("words", 0, 256).view(np.uint32), np.arange(64) + 1)
    assert "launch 1" in first.log()
    dpus.dpu_sets()[1].copy_to("fault", 0, np.ones(1, np.uint32))
    with pytest.raises(DpuError) as info:
        dpus.launch()
    assert info.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT


# ------------------------------------------------------------------------------ dpu-pkg-config
@pytest.mark.needs_c_shim
def test_dpu_pkg_config(shim):
    build, env = shim
    r = sh("dpu-pkg-config --cflags --libs dpu", env)
    assert r.returncode == 0
    assert r.stdout.split() == [f"-I{HOST / 'include'}", f"-L{build}",
                                f"-Wl,-rpath,{build}", "-ldpu"]
    # --cflags is one word, as the SDK's: CMake projects pass it unsplit
    assert len(sh("dpu-pkg-config --cflags dpu", env).stdout.split()) == 1
    assert sh("dpu-pkg-config --version", env).stdout.strip()
    assert sh("dpu-pkg-config --modversion dpu", env).returncode == 0
    r = sh("dpu-pkg-config --libs nosuchpkg", env)
    assert r.returncode == 1 and "nosuchpkg" in r.stderr


@pytest.mark.needs_c_shim
def test_headers_agree_with_python(shim, tmp_path):
    """Error codes, the SwiftRL params layout, record and counters: C headers == Python.
    The kernel and host/app.c share kernels/swiftrl_common.h and kernels/swiftrl_arith.h,
    one copy of each (app.c keeps no stream or Q-format arithmetic of its own)."""
    from pimrl.learners import variants as P
    from pimrl.rlkernel import costs as kcost
    from pimrl.rlkernel import layout

    build, env = shim
    app_src = (HOST / "app.c").read_text()
    for header in ("swiftrl_common.h", "swiftrl_arith.h"):    # one copy of each
        assert not (HOST / header).exists()
        assert f'#include "../kernels/{header}"' in app_src
    for own in ("xorshift32(uint32_t", "lane_seed(uint64_t", "sat32(int64_t", "fx_mul(int32_t"):
        assert own not in app_src, own
    lines = [f'printf("{n} %d\\n", (int){n});' for n in DpuErrorCode.__members__]
    fields = ("algo", "dtype", "sampling", "stride", "epochs", "sarsa_draw", "eps_threshold",
              "frac_bits", "alpha_f32_bits", "gamma_f32_bits", "alpha_fx", "gamma_fx")
    # tasklet_mode came later: it sits after the host's words, at its own index
    assert fields + ("tasklet_mode",) == P.KERNEL_SCALARS
    counters = ("UPDATES", "TERMINAL", "SCANNED", "RNG", "BELOW", "DMA_READS", "DMA_READ_BYTES",
                "DMA_WRITES", "DMA_WRITE_BYTES", "SATURATIONS", "FAULT", "STEPS",
                "SNAPSHOT_ROWS", "SNAPSHOT_READS", "LANE_EPOCHS", "CONFLICTS", "WIDE_DRAWS")
    assert len(counters) == len(kcost.COUNTERS)
    checks = {
        **{f"SWIFTRL_P_{n.upper()}": getattr(P, f"P_{n.upper()}") for n in
           ("algo", "dtype", "sampling", "stride", "epochs", "sarsa_draw", "eps", "frac",
            "alpha32", "gamma32", "alpha_fx", "gamma_fx")},
        **{f"offsetof(swiftrl_params_t, {f}) / 8": i for i, f in enumerate(fields)},
        **{f"offsetof(swiftrl_params_t, {f}) / 8": getattr(P, f"P_{n}") for f, n in
           (("own_shared", "OWN_SHARED"), ("policy_max_f32_bits", "POLICY_MAX32"),
            ("tasklet_mode", "TASKLET_MODE"),
            ("policy_max_fx", "POLICY_MAX_FX"), ("policy_mean_f32_bits", "POLICY_MEAN32"),
            ("policy_mean_fx", "POLICY_MEAN_FX"))},
        "SWIFTRL_P_POLICY_MEAN_FX": P.P_POLICY_MEAN_FX,
        "SWIFTRL_P_N_RECORDS": P.P_N_RECORDS,
        "offsetof(swiftrl_params_t, n_records) / 8": P.P_N_RECORDS,
        "SWIFTRL_PARAMS_WORDS": P.PARAMS_WORDS,
        "sizeof(swiftrl_params_t)": 8 * P.PARAMS_WORDS,
        "SWIFTRL_RECORD_BYTES": layout.RECORD_BYTES,
        "sizeof(swiftrl_transition_t)": layout.RECORD_BYTES,
        "SWIFTRL_N_COUNTERS": len(kcost.COUNTERS),
        **{f"SWIFTRL_C_{n}": i for i, n in enumerate(counters)},
        "SWIFTRL_ALGO_Q": P.ALGO.code("q"), "SWIFTRL_ALGO_SARSA": P.ALGO.code("sarsa"),
        "SWIFTRL_FP32": P.DTYPE.code("fp32"), "SWIFTRL_INT32": P.DTYPE.code("int32"),
        "SWIFTRL_SEQ": P.SAMPLING.code("seq"), "SWIFTRL_STR": P.SAMPLING.code("str"),
        "SWIFTRL_RAN": P.SAMPLING.code("ran"),
        "SWIFTRL_P_TASKLET_MODE": P.P_TASKLET_MODE,
        **{f"SWIFTRL_MODE_{m.upper()}": P.TASKLET_MODE.code(m) for m in P.TASKLET_MODE.names},
    }
    names = [f"{n}" for n in checks]
    lines += [f'printf("%s %d\\n", "{n.replace(" ", "")}", (int)({n}));' for n in names]
    src = tmp_path / "values.c"
    src.write_text(f'#include <stddef.h>\n#include <dpu.h>\n#include <dpu_probe.h>\n'
                   f'#include "{COMMON_H}"\n'
                   "int main(void) {\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    cc_user(src, tmp_path / "values", env)
    out = dict(line.split() for line in sh(str(tmp_path / "values"), env).stdout.splitlines())
    for name, code in DpuErrorCode.__members__.items():
        assert int(out[name]) == int(code), name
    for name, value in checks.items():
        assert int(out[name.replace(" ", "")]) == value, name
    stats = dict(zip(counters, kcost.COUNTERS))
    assert stats["TERMINAL"] == "terminal_updates" and stats["STEPS"] == "sampling_steps"


# ------------------------------------------------------------------------------ app.c
APP_CASES = [
    ("-n 8", dict(algo="q", dtype="fp32", sampling="seq")),
    ("-n 5 -t 7 -a sarsa -p int32 -s ran -e 4 -r 2 --seed 11",
     dict(algo="sarsa", dtype="int32", sampling="ran", epochs=4, seed=11, tasklets=7, rounds=2)),
    ("-n 3 -s str -k 3 -e 2 -p int32", dict(algo="q", dtype="int32", sampling="str", stride=3,
                                            epochs=2)),
    ("-n 4 -a sarsa --next-action epsilon-greedy --epsilon 0.3 -e 3 -r 3",
     dict(algo="sarsa", next_action="epsilon-greedy", epsilon=0.3, epochs=3, rounds=3)),
]


def _app_variant(spec):
    tasklets = spec.get("tasklets", 16)
    return tasklets, f"{spec.get('algo', 'q')}-{spec.get('dtype', 'fp32')}-{spec.get('sampling', 'seq')}"


@pytest.mark.needs_c_shim
@pytest.mark.parametrize("kernel", ["c", "builtin"])
@pytest.mark.parametrize("args,spec", APP_CASES, ids=[a for a, _ in APP_CASES])
def test_app_end_to_end(app, shim, dataset, tmp_path, request, args, spec, kernel):
    """app.c prints the four categories (modelled) and OK, and its table and modelled times
    are exactly those of the Python host (PimTrainer) on the same simulator and program:
    with the C kernel of kernels/ (by default app loads the file kernels/Makefile builds for
    the variant, found by its name) PimTrainer(kernel="c"); with `-b builtin` the built-in
    numba kernel, PimTrainer(kernel="numba")."""
    from pimrl.data import load_dataset
    from pimrl.learners.params import LearnerParams
    from pimrl.swiftrl.trainer import PimTrainer

    _, env = shim
    ds = load_dataset(dataset)
    tasklets, variant = _app_variant(spec)
    if kernel == "c":
        request.getfixturevalue("c_kernels")(ds.n_states, ds.n_actions, tasklets, variant)
        program = rf"DPU program: \S+/swiftrl-{variant}-s{ds.n_states}-a{ds.n_actions}-t{tasklets}$"
    else:
        args += " -b builtin"
        program = r"DPU program: pimrl:swiftrl\?"
    out = tmp_path / "q.bin"
    r = sh(f"{app} {args} -o {out} {dataset}", env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(program, r.stdout, re.M), r.stdout
    for label in ("CPU-DPU", "DPU kernel", "Inter-DPU", "DPU-CPU"):
        assert re.search(rf"^\s+{label}\s+[0-9.]+\s+modelled", r.stdout, re.M), r.stdout
    assert re.search(r"reference learner: OK \(largest difference 0 ", r.stdout), r.stdout

    spec = dict(spec)
    n_dpus = int(re.search(r"-n (\d+)", args).group(1))
    spec.pop("tasklets", None)
    rounds = spec.pop("rounds", 1)
    trainer = PimTrainer(LearnerParams(**spec), n_dpus=n_dpus, tasklets=tasklets,
                         aggregate="mean" if rounds == 1 else f"sync:{rounds}",
                         hardware="upmem-2556", kernel="c" if kernel == "c" else "numba",
                         ).fit(np.asarray(ds.records), ds.n_states, ds.n_actions)
    q_app = np.fromfile(out, dtype=np.float64).reshape(ds.n_states, ds.n_actions)
    assert np.array_equal(q_app, trainer.q_)
    printed = {m.group(1): float(m.group(2)) for m in
               re.finditer(r"^\s+(CPU-DPU|DPU kernel|Inter-DPU|DPU-CPU)\s+([0-9.]+)", r.stdout, re.M)}
    labels = {"cpu_dpu": "CPU-DPU", "dpu_kernel": "DPU kernel", "inter_dpu": "Inter-DPU",
              "dpu_cpu": "DPU-CPU"}
    for cat, label in labels.items():
        assert printed[label] == pytest.approx(trainer.timings_.modelled_s[cat], rel=1e-5, abs=2e-6)


@pytest.mark.slow
@pytest.mark.needs_c_shim
def test_app_kernel_by_path_checks(app, shim, dataset, c_kernels, kernel_dir):
    """A missing default kernel says how to build it; a kernel built for other tasklets or
    another table shape is refused before it runs; -b PATH loads any built file."""
    _, env = shim
    r = sh(f"{app} -n 2 -t 5 -s str {dataset}", env)
    assert r.returncode == 1
    assert f"no DPU program {kernel_dir}/swiftrl-q-fp32-str-s16-a4-t5" in r.stderr
    assert "make -C kernels ALGO=q DTYPE=fp32 SAMPLING=str STATES=16 ACTIONS=4 TASKLETS=5" in r.stderr
    other = c_kernels(16, 4, 3, "q-fp32-str")
    r = sh(f"{app} -n 2 -t 5 -s str -b {other} {dataset}", env)
    assert r.returncode == 1 and "built for 3 tasklets, not -t 5" in r.stderr
    r = sh(f"{app} -n 2 -t 3 -s str -b {other} {dataset}", env)
    assert r.returncode == 0 and "reference learner: OK" in r.stdout, r.stdout + r.stderr
    narrow = c_kernels(16, 3, 3, "q-fp32-str")
    r = sh(f"{app} -n 2 -t 3 -s str -b {narrow} {dataset}", env)
    assert r.returncode == 1 and "not the dataset's 16 x 4 entries" in r.stderr


@pytest.mark.needs_c_shim
def test_app_source_builds_without_the_simulator_extension(tmp_path):
    """Without PIMRL_SIMULATOR (as with the real SDK; here -DPIMRL_SDK_API_ONLY) app.c uses
    nothing but dpu.h; pimrl's dpu.h defines PIMRL_SIMULATOR otherwise."""
    sdk_only = "-DPIMRL_SDK_API_ONLY"
    for extra in ([], ['-DDPU_BINARY="./swiftrl_dpu"']):   # the kernel by name, or one fixed
        r = subprocess.run(["cc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", sdk_only,
                            f"-I{HOST / 'include'}", *extra, str(HOST / "app.c")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert "pimrl_sim" not in subprocess.run(
        ["cc", "-E", sdk_only, f"-I{HOST / 'include'}", str(HOST / "app.c")],
        capture_output=True, text=True).stdout
    assert "pimrl_sim" in subprocess.run(
        ["cc", "-E", f"-I{HOST / 'include'}", str(HOST / "app.c")], capture_output=True,
        text=True).stdout


@pytest.mark.needs_c_shim
def test_app_rejects_bad_input(app, shim, tmp_path, dataset):
    _, env = shim
    bad = tmp_path / "bad.ds"
    data = bytearray(dataset.read_bytes())
    data[40] ^= 1                                   # header byte: the checksum no longer fits
    bad.write_bytes(bytes(data))
    r = sh(f"{app} -n 2 {bad}", env)
    assert r.returncode == 1 and "checksum" in r.stderr
    r = sh(f"{app} -n 2 -b /no/such/dpu/binary {dataset}", env)
    assert r.returncode == 1 and "DPU Error (no such DPU program file" in r.stderr


# ------------------------------------------------------------------------------ user programs
@pytest.mark.needs_c_shim
def test_error_program_of_a_user(shim, tmp_path):
    _, env = shim
    exe = tmp_path / "errors"
    cc_user(HOST / "tests" / "errors.c", exe, env)
    r = sh(str(exe), env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: 0 failed check(s)" in r.stdout
    reached = set(re.findall(r"^ok\s+(DPU_ERR_\w+)", r.stdout, re.M))
    assert {"DPU_ERR_ALLOCATION", "DPU_ERR_INVALID_PROFILE", "DPU_ERR_INVALID_DPU_SET",
            "DPU_ERR_NO_PROGRAM_LOADED", "DPU_ERR_ELF_NO_SUCH_FILE", "DPU_ERR_ELF_INVALID_FILE",
            "DPU_ERR_UNKNOWN_SYMBOL", "DPU_ERR_INVALID_SYMBOL_ACCESS", "DPU_ERR_INVALID_MRAM_ACCESS",
            "DPU_ERR_INVALID_WRAM_ACCESS", "DPU_ERR_INVALID_IRAM_ACCESS",
            "DPU_ERR_INVALID_MEMORY_TRANSFER",
            "DPU_ERR_INVALID_LAUNCH_POLICY", "DPU_ERR_DPU_ALREADY_RUNNING", "DPU_ERR_DPU_FAULT",
            "DPU_ERR_DIFFERENT_DPU_PROGRAMS"} <= reached
    assert "=== DPU#0x0 ===" in r.stdout and "diag: launch 2" in r.stdout   # dpu_log_read


@pytest.mark.needs_c_shim
def test_dpu_assert_prints_file_line_and_message(shim, tmp_path):
    _, env = shim
    exe = tmp_path / "assert_demo"
    cc_user(HOST / "tests" / "assert_demo.c", exe, env)
    r = sh(str(exe), env)
    assert r.returncode == 1                                  # exit(EXIT_FAILURE)
    assert re.search(r"assert_demo\.c:9\(main\): DPU Error \(no such DPU program file; pimrl simulator: ", r.stderr)
    assert "/no/such/dpu/program" in r.stderr                 # the simulator's detail
    assert "not reached" not in r.stdout


# ------------------------------------------------------------------------------ fuzz + ASan
@pytest.mark.slow
@pytest.mark.needs_c_shim
def test_fuzz_under_address_sanitizer(shim, tmp_path_factory):
    """Random call sequences (fixed seeds) against an ASan build of the C layer, from an
    ASan-built program: no crash, no sanitizer report, every answer a dpu_error_t.

    The program is ASan-instrumented, so the ASan runtime is the first library loaded and no
    LD_PRELOAD is needed; the Python interpreter and numpy inside run uninstrumented, with
    their allocations going through ASan's malloc. detect_leaks=0: the embedded interpreter
    keeps its memory until exit by design."""
    if not Path("/usr/lib/gcc").exists() and "clang" not in TOOLCHAIN:
        pytest.skip("no sanitizer runtime found")
    _, env = shim
    build = tmp_path_factory.mktemp("asan")
    try:
        shim_build.build_shim(build, sanitize="address", force=True)
    except shim_build.ShimUnavailable as exc:
        pytest.skip(f"cannot build with -fsanitize=address: {exc}")
    exe = build / "fuzz-asan"
    r = sh(f"cc -g -O1 -fsanitize=address -fno-omit-frame-pointer -Wall -Wextra -Werror "
           f"{HOST / 'tests' / 'fuzz.c'} -o {exe} -I{HOST / 'include'} -DPIMRL_SIMULATOR "
           f"-L{build} -Wl,-rpath,{build} -ldpu", env)
    assert r.returncode == 0, r.stderr
    env = dict(env, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0")
    for seed in (1, 2, 3):
        r = sh(f"{exe} --seed {seed} --iterations 2500", env)
        assert "AddressSanitizer" not in r.stderr, r.stderr[-4000:]
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        assert ", 0 failure(s)" in r.stdout


@pytest.mark.needs_c_shim
def test_modelled_clock_gives_unmodified_host_programs_the_modelled_phase_times(shim, tmp_path):
    """PIMRL_MODELLED_CLOCK=1: the program's gettimeofday/clock_gettime advance by the
    modelled time of each simulator call instead of its wall time; both clocks at exit."""
    _, env = shim
    exe = tmp_path / "modelled_clock"
    cc_user(HOST / "tests" / "modelled_clock.c", exe, env)
    r = sh(str(exe), dict(env, PIMRL_MODELLED_CLOCK="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in r.stdout.splitlines()}
    assert set(rows) == {"cpu_dpu", "dpu_kernel", "dpu_cpu"}
    from pimrl.pim.hardware import get_hardware

    hw = get_hardware()          # the diag program's cycles, plus a launch's boot and wait
    assert rows["dpu_kernel"][2] == pytest.approx(3500000 / 350e6 + hw.launch_latency_s
                                                  + hw.sync_latency_s)
    for phase, (tod, mono, modelled) in rows.items():
        assert modelled > 0
        assert tod == pytest.approx(modelled, rel=0.05), phase
        assert mono == pytest.approx(modelled, rel=0.05), phase
    assert re.search(r"pimrl modelled clock: measured \(wall\) [\d.]+ s; modelled clock [\d.]+ s",
                     r.stderr), r.stderr
    # without the variable the host clock is the wall clock: the report is absent
    plain = sh(str(exe), env)
    assert plain.returncode == 0 and "pimrl modelled clock" not in plain.stderr


@pytest.mark.needs_c_shim
def test_modelled_clock_chosen_at_build_with_dpu_pkg_config(shim, tmp_path):
    """`dpu-pkg-config --cflags --libs --modelled-clock dpu`: the program runs on the
    modelled clock without the environment variable (PIMRL_MODELLED_CLOCK=0 turns it off)."""
    _, env = shim
    env = {k: v for k, v in env.items() if k != "PIMRL_MODELLED_CLOCK"}
    assert "-DPIMRL_MODELLED_CLOCK=1" in sh("dpu-pkg-config --cflags --modelled-clock dpu",
                                            env).stdout
    exe = tmp_path / "modelled_clock_built"
    cc_user(HOST / "tests" / "modelled_clock.c", exe, env, "--modelled-clock")
    r = sh(str(exe), env)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in r.stdout.splitlines()}
    assert set(rows) == {"cpu_dpu", "dpu_kernel", "dpu_cpu"}
    from pimrl.pim.hardware import get_hardware

    hw = get_hardware()
    assert rows["dpu_kernel"][2] == pytest.approx(3500000 / 350e6 + hw.launch_latency_s
                                                  + hw.sync_latency_s)
    for phase, (tod, mono, modelled) in rows.items():
        assert tod == pytest.approx(modelled, rel=0.05), phase
        assert mono == pytest.approx(modelled, rel=0.05), phase
    assert "pimrl modelled clock: measured (wall)" in r.stderr
    off = sh(str(exe), dict(env, PIMRL_MODELLED_CLOCK="0"))
    assert off.returncode == 0 and "pimrl modelled clock" not in off.stderr
