"""The `dpu` package, the C shim and the DPU runtime against what a careless host does
(issue 30): DPU programs that never end (the launch's time limit, Ctrl-C from Python and
from a C host, the host's own SIGINT handling), damaged program files, memory over many
load/exec/free cycles, loose Python arguments, and files left behind by
``dpu_load_from_memory``.

Each test fails on the code before the fix it checks: a `while (1)` kernel ran forever (no
limit; ``exec()`` and ``dpu_launch`` ignored SIGINT), a C host ignored Ctrl-C once
``dpu_alloc`` had run, a file with flipped bytes loaded and then crashed the host, a
truncated one gave DPU_ERR_INTERNAL, 300 cycles kept ~60 MB, ``size=-8`` copied 8 bytes and
``nr_dpus="4"`` allocated 4 DPUs, and a program loaded from memory left a file in TMPDIR.
"""
from __future__ import annotations

import math
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import C_REASON, HAVE_C
from test_shim import sh, shim  # noqa: F401  (session fixture)

import dpu
from dpu import DpuError, DpuSet
from pimrl.dpurt.elf import SEAL_BYTES, Elf, unseal
from pimrl.pim import errors as sim_errors
from pimrl.pim.errors import DpuErrorCode

REPO = Path(__file__).resolve().parents[1]

SPIN_C = r"""
#include <stdint.h>
volatile uint32_t counter;
__attribute__((noinline)) void spin_forever(void)
{
    for (;;)
        counter++;
}
int main(void)
{
    spin_forever();
    return 0;
}
"""

# Every tasklet takes and gives a mutex forever: it gives way at runtime calls only.
MUTEX_SPIN_C = r"""
#include <stdint.h>
#include <mutex.h>
MUTEX_INIT(lock);
volatile uint32_t n;
int main(void)
{
    for (;;) {
        mutex_lock(lock);
        n++;
        mutex_unlock(lock);
    }
    return 0;
}
"""

OK_C = r"""
#include <stdint.h>
#include <defs.h>
uint64_t out;
uint64_t arg;
int main(void)
{
    if (me() == 0)
        out = arg + 1;
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Built programs: spin (1 tasklet, `while (1)` in spin_forever), mutex (4 tasklets
    spinning on a mutex), ok (ends: out = arg + 1)."""
    if not HAVE_C:
        pytest.skip(C_REASON)
    from pimrl.dpurt.cc import build

    d = tmp_path_factory.mktemp("robust")
    out = {}
    for name, text, tasklets in (("spin", SPIN_C, 1), ("mutex", MUTEX_SPIN_C, 4), ("ok", OK_C, 4)):
        src = d / f"{name}.c"
        src.write_text(text)
        out[name] = build([src], d / f"{name}.dpu", nr_tasklets=tasklets)
    return out


def _env(**extra):
    env = dict(os.environ)
    env.pop("PIMRL_DPU_TIMEOUT", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


class _Lines:
    """A child's stdout read line by line with a deadline (select on the pipe, no buffering
    between the pipe and us that select cannot see)."""

    def __init__(self, proc):
        self.proc, self.fd, self.pending, self.seen = proc, proc.stdout.fileno(), b"", []

    def line(self, within_s: float) -> str:
        end = time.monotonic() + within_s
        while b"\n" not in self.pending:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return ""
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return ""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        text = line.decode(errors="replace")
        self.seen.append(text)
        return text

    def wait_for(self, word: str, limit_s: float = 120) -> None:
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            if word in self.line(end - time.monotonic()):
                return
            if self.proc.poll() is not None and b"\n" not in self.pending:
                break
        self.proc.kill()
        _, err = self.proc.communicate()
        raise AssertionError(f"no {word!r} from the child: {self.seen}\n{err}")

    def rest(self, timeout: float) -> str:
        out, _ = self.proc.communicate(timeout=timeout)
        return "\n".join(self.seen) + "\n" + self.pending.decode(errors="replace") + (
            out.decode(errors="replace") if out else "")


# ------------------------------------------------------------------------------ the time limit
@pytest.mark.needs_c
def test_a_kernel_that_never_ends_faults_at_the_time_limit_naming_tasklet_and_function(programs):
    with DpuSet(nr_dpus=3, binary=str(programs["spin"])) as dpus:
        start = time.monotonic()
        with pytest.raises(DpuError) as err:
            dpus.exec(timeout=0.5)
        assert time.monotonic() - start < 5
        text = str(err.value)
        assert err.value.code == "DPU_ERR_DPU_FAULT"
        assert "tasklet 0" in text and "spin_forever()" in text and "at PC 0x" in text
        assert "time limit of 0.5 s" in text and "PIMRL_DPU_TIMEOUT" in text
        # the set is in a sane state: another program loads, runs and reads back
        dpus.load(binary=str(programs["ok"]))
        dpus.arg = np.uint64(41).tobytes()
        dpus.exec()
        assert dpus.out.uint64() == [42, 42, 42]

    # the profile's timeout= (C and Python alike), for every launch of the allocation
    with DpuSet(nr_dpus=1, binary=str(programs["spin"]), profile="timeout=0.3") as dpus:
        with pytest.raises(DpuError, match="time limit of 0.3 s"):
            dpus.exec()


@pytest.mark.needs_c
def test_the_limit_from_the_environment_and_pimrls_own_launches(programs, monkeypatch):
    from pimrl.dpurt.testing import DpuSim

    monkeypatch.setenv("PIMRL_DPU_TIMEOUT", "0.3")
    with DpuSim(program=programs["spin"], nr_dpus=2, hardware="upmem-640") as sim:
        with pytest.raises(sim_errors.DpuError) as err:
            sim.launch()
        assert err.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
        assert "spin_forever()" in str(err.value) and "0.3 s" in str(err.value)
    monkeypatch.delenv("PIMRL_DPU_TIMEOUT")
    with DpuSim(program=programs["mutex"], nr_dpus=2, hardware="upmem-640") as sim:
        with pytest.raises(sim_errors.DpuError) as err:
            sim.launch(timeout=0.3)
        assert re.search(r"DPU 0 tasklet \d+: stopped (at PC|in a runtime call)", str(err.value))
    with DpuSim(program=programs["ok"], nr_dpus=2, hardware="upmem-640") as sim:
        sim.launch(timeout=0.3)                          # a program that ends is untouched

    # bad limits are refused, naming where they came from
    monkeypatch.setenv("PIMRL_DPU_TIMEOUT", "soon")
    with DpuSet(nr_dpus=1, binary=str(programs["ok"])) as dpus:
        with pytest.raises(DpuError, match="PIMRL_DPU_TIMEOUT='soon'") as err:
            dpus.exec()
        assert err.value.code == "DPU_ERR_SYSTEM"
        monkeypatch.delenv("PIMRL_DPU_TIMEOUT")
        for bad, kind in ((-1, ValueError), (math.nan, ValueError), ("1", TypeError), (True, TypeError)):
            with pytest.raises(kind) as err:
                dpus.exec(timeout=bad)
            assert isinstance(err.value, DpuError) and "timeout" in str(err.value)
    with pytest.raises(DpuError, match="timeout") as err:
        DpuSet(nr_dpus=1, profile="timeout=-2")
    assert err.value.code == "DPU_ERR_INVALID_PROFILE"


HOST_C = r"""
#include <dpu.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_sigint(int sig)
{
    static const char said[] = "handled\n";
    (void)sig;
    if (write(1, said, sizeof said - 1) < 0)
        _exit(4);
    _exit(3);
}

static void report(const char *what, dpu_error_t err)
{
    char *text = dpu_error_to_string(err);
    printf("%s: %d %s\n", what, (int)err, err == DPU_OK ? "DPU_OK" : text);
    fflush(stdout);
    free(text);
}

/* argv: mode (own | launch | handler-before | handler-after | load | memory), program,
 * profile */
int main(int argc, char **argv)
{
    const char *mode = argv[1], *program = argc > 2 ? argv[2] : "", *profile = argc > 3 ? argv[3] : NULL;
    struct dpu_set_t set;
    dpu_error_t err;
    if (strcmp(mode, "handler-before") == 0)
        signal(SIGINT, on_sigint);
    DPU_ASSERT(dpu_alloc(2, profile, &set));
    if (strcmp(mode, "handler-after") == 0)
        signal(SIGINT, on_sigint);
    if (strcmp(mode, "own") == 0) {
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();                                  /* the host's own code */
    }
    if (strcmp(mode, "memory") == 0) {
        static uint8_t buffer[1 << 22];
        FILE *f = fopen(program, "rb");
        size_t n = f ? fread(buffer, 1, sizeof buffer, f) : 0;
        if (f)
            fclose(f);
        err = dpu_load_from_memory(set, buffer, n, NULL);
    } else {
        err = dpu_load(set, program, NULL);
    }
    report("load", err);
    if (err == DPU_OK) {
        printf("launching\n");
        fflush(stdout);
        report("launch", dpu_launch(set, DPU_SYNCHRONOUS));
    }
    DPU_ASSERT(dpu_free(set));
    return 0;
}
"""


@pytest.fixture(scope="module")
def c_host(shim, tmp_path_factory):
    build, env = shim
    d = tmp_path_factory.mktemp("c_host")
    (d / "host.c").write_text(HOST_C)
    exe = d / "host"
    r = sh(f"cc -Wall -Werror -o {exe} {d / 'host.c'} $(dpu-pkg-config --cflags --libs dpu)", env)
    assert r.returncode == 0, r.stderr
    return exe, env


@pytest.mark.needs_c_shim
@pytest.mark.needs_c
def test_a_c_host_gets_the_limit_from_the_environment_and_the_profile(c_host, programs):
    exe, env = c_host
    for extra, args in (({"PIMRL_DPU_TIMEOUT": "0.5"}, []), ({}, ["timeout=0.5"])):
        e = dict(env)
        e.pop("PIMRL_DPU_TIMEOUT", None)
        e.update(extra)
        r = subprocess.run([str(exe), "launch", str(programs["spin"]), *args], env=e,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        code = int(DpuErrorCode.DPU_ERR_DPU_FAULT)
        assert f"launch: {code} " in r.stdout, r.stdout + r.stderr
        assert "tasklet 0: stopped at PC 0x" in r.stdout and "spin_forever()" in r.stdout


# ------------------------------------------------------------------------------ Ctrl-C
PY_HOST = """
import sys
from dpu import DpuSet
spin, ok = sys.argv[1], sys.argv[2]
with DpuSet(nr_dpus=4, binary=spin) as dpus:
    print("launching", flush=True)
    try:
        dpus.exec()
        print("finished?!", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    dpus.load(binary=ok)
    dpus.arg = (7).to_bytes(8, "little")
    dpus.exec()
    print("after", dpus.out.uint64(), flush=True)
"""


@pytest.mark.needs_c
def test_ctrl_c_stops_a_python_launch_within_a_second_and_leaves_the_set_usable(programs, tmp_path):
    script = tmp_path / "host.py"
    script.write_text(PY_HOST)
    proc = subprocess.Popen([sys.executable, str(script), str(programs["spin"]), str(programs["ok"])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(PIMRL_DPU_TIMEOUT="600"))
    lines = _Lines(proc)
    try:
        lines.wait_for("launching")
        time.sleep(0.5)                                    # the DPUs are spinning now
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = lines.line(10)
        latency = time.monotonic() - sent
        assert line.strip() == "interrupted", line
        assert latency < 1.0, f"KeyboardInterrupt {latency:.2f} s after Ctrl-C"
        out = lines.rest(60)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "after [8, 8, 8, 8]" in out


def _ctrl_c_c_host(exe, env, args, word):
    """Start the C host, wait for ``word``, press Ctrl-C: (returncode, seconds, stdout)."""
    proc = subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    lines = _Lines(proc)
    try:
        lines.wait_for(word)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{args[0]}: the C host ignored Ctrl-C for 10 s")
        seconds = time.monotonic() - sent
        return proc.returncode, seconds, lines.rest(10)
    finally:
        proc.kill()


@pytest.mark.needs_c_shim
@pytest.mark.needs_c
def test_a_c_host_keeps_its_own_sigint_handling(c_host, programs):
    exe, env = c_host
    env = {**env, "PIMRL_DPU_TIMEOUT": "600"}
    spin = str(programs["spin"])
    # no handler of its own: Ctrl-C ends it, in its own code after dpu_alloc and in a launch
    for args, word in ((["own"], "ready"), (["launch", spin], "launching")):
        rc, seconds, _ = _ctrl_c_c_host(exe, env, args, word)
        assert rc == -signal.SIGINT and seconds < 1.0, (args, rc, seconds)
    # its own handler, installed before or after dpu_alloc, runs
    for mode in ("handler-before", "handler-after"):
        rc, seconds, out = _ctrl_c_c_host(exe, env, [mode, spin], "launching")
        assert rc == 3 and "handled" in out and seconds < 1.0, (mode, rc, out)


# ------------------------------------------------------------------------------ damaged files
def _damaged_variants(good: Path, d: Path) -> dict:
    data = good.read_bytes()
    assert unseal(data) == "ok"
    flipped = bytearray(data)
    for i in (len(data) // 7, len(data) // 3, len(data) // 2, len(data) - 100):
        flipped[i] ^= 0x5A
    code = bytearray(data)                          # a few flipped bytes of its machine code
    text = Elf(data).section(".text")
    for k in range(4):
        code[text.offset + text.size // 2 + 3 * k] ^= 0xFF
    stale = bytearray(data[:-SEAL_BYTES])          # an older pimrl's build: unsealed, ABI 3
    at = stale.find(b'"abi":4')
    stale[at:at + 7] = b'"abi":3'
    variants = {"flipped": bytes(flipped), "code": bytes(code), "half": data[:len(data) // 2],
                "cut": data[:-10], "unsealed": data[:-SEAL_BYTES], "stale": bytes(stale),
                "empty": b""}
    out = {}
    for name, content in variants.items():
        path = d / f"{name}.dpu"
        path.write_bytes(content)
        out[name] = path
    return out


EXPECTED_WORDS = {"flipped": "damaged", "code": "damaged", "half": "truncated", "cut": "no checksum",
                  "unsealed": "no checksum", "stale": "ABI 3", "empty": ""}


@pytest.mark.needs_c
def test_a_damaged_or_truncated_program_is_refused_at_load_naming_the_file(programs, tmp_path):
    from pimrl.dpurt.program import load_program

    for name, path in _damaged_variants(programs["ok"], tmp_path).items():
        with pytest.raises(DpuError) as err:                 # the dpu package, by path
            DpuSet(nr_dpus=1, binary=str(path))
        assert err.value.code == "DPU_ERR_ELF_INVALID_FILE", (name, str(err.value))
        assert str(path) in str(err.value) and EXPECTED_WORDS[name] in str(err.value), name
        if name != "empty":
            assert "rebuild" in str(err.value), name
        with pytest.raises(DpuError) as err:                 # ... and from memory
            DpuSet(nr_dpus=1, binary=path.read_bytes())
        assert err.value.code == "DPU_ERR_ELF_INVALID_FILE", (name, str(err.value))
        if name != "empty":
            with pytest.raises(sim_errors.DpuError) as err:  # pimrl's own loader
                load_program(path)
            assert err.value.code == DpuErrorCode.DPU_ERR_ELF_INVALID_FILE, name


@pytest.mark.needs_c_shim
@pytest.mark.needs_c
def test_a_c_host_gets_elf_invalid_file_for_a_damaged_program(c_host, programs, tmp_path):
    exe, env = c_host
    code = int(DpuErrorCode.DPU_ERR_ELF_INVALID_FILE)
    for name, path in _damaged_variants(programs["ok"], tmp_path).items():
        for mode in ("load", "memory"):
            r = subprocess.run([str(exe), mode, str(path)], env=env, capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0, (name, mode, r.returncode, r.stdout + r.stderr)
            assert f"load: {code} " in r.stdout, (name, mode, r.stdout + r.stderr)
            if mode == "load":
                assert str(path) in r.stdout, (name, r.stdout)
    r = subprocess.run([str(exe), "memory", str(programs["ok"])], env=env, capture_output=True,
                       text=True, timeout=120)
    assert "load: 0 DPU_OK" in r.stdout and "launch: 0 DPU_OK" in r.stdout, r.stdout + r.stderr


# ------------------------------------------------------------------------------ leaks and files
LEAK_SCRIPT = """
import gc, sys
from dpu import DpuSet
path, cycles = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024

def cycle(i):
    with DpuSet(nr_dpus=4, binary=path if i % 2 else data) as dpus:
        dpus.arg = i.to_bytes(8, "little")
        dpus.exec()
        assert dpus.out.uint64() == [i + 1] * 4

for i in range(10):
    cycle(i)
gc.collect()
start = rss_mb()
for i in range(cycles):
    cycle(i)
gc.collect()
print(round(rss_mb() - start, 2))
"""


@pytest.mark.needs_c
def test_load_exec_free_cycles_keep_memory_flat(programs, tmp_path):
    script = tmp_path / "leak.py"
    script.write_text(LEAK_SCRIPT)
    r = subprocess.run([sys.executable, str(script), str(programs["ok"]), "200"], env=_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    growth = float(r.stdout.split()[-1])
    assert growth < 10, f"200 load/exec/free cycles grew RSS by {growth} MB"


@pytest.mark.needs_c_shim
@pytest.mark.needs_c
def test_loading_from_memory_leaves_no_file_behind(c_host, programs, tmp_path, monkeypatch):
    exe, env = c_host
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = subprocess.run([str(exe), "memory", str(programs["ok"])], env={**env, "TMPDIR": str(tmp)},
                       capture_output=True, text=True, timeout=120)
    assert "launch: 0 DPU_OK" in r.stdout, r.stdout + r.stderr
    assert sorted(p.name for p in tmp.rglob("*")) == []
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with DpuSet(nr_dpus=1, binary=programs["ok"].read_bytes()) as dpus:
        dpus.exec()
        assert sorted(p.name for p in tmp.rglob("*")) == []


@pytest.mark.needs_c
def test_the_builder_seals_programs_and_the_seal_survives_the_loader(programs):
    data = programs["ok"].read_bytes()
    assert unseal(data) == "ok" and data[-SEAL_BYTES:-32] == b"pimrl-dpu-sha256"
    damaged = bytearray(data)
    damaged[100] ^= 1
    assert unseal(bytes(damaged)) == "damaged" and unseal(data[:-1]) == "unsealed"


# ------------------------------------------------------------------------------ arguments
def test_python_arguments_are_checked_as_types_and_ranges():
    def refused(kind, call, *words):
        with pytest.raises(kind) as err:
            call()
        assert isinstance(err.value, DpuError), type(err.value)
        for w in words:
            assert w in str(err.value), (w, str(err.value))

    for bad in ("4", 4.5, 4.0, True, None.__class__, [4]):
        refused(TypeError, lambda: DpuSet(nr_dpus=bad), "nr_dpus")
    for bad in (0, -1, 2 ** 40):
        refused(ValueError, lambda: DpuSet(nr_dpus=bad), "nr_dpus")
    refused(TypeError, lambda: DpuSet(nr_ranks="1"), "nr_ranks")
    refused(TypeError, lambda: DpuSet(nr_dpus=1, profile=3), "profile")
    refused(TypeError, lambda: DpuSet(nr_dpus=1, binary=3), "binary")
    refused(TypeError, lambda: dpu.DpuSymbol("x", ("a", 1)), "address")
    refused(ValueError, lambda: dpu.DpuSymbol("x", (-1, 8)), "address")
    with DpuSet(nr_dpus=2, profile="hardware=upmem-640", binary="pimrl:diag") as dpus:
        buf = bytearray(16)
        refused(ValueError, lambda: dpus.copy("buffer", buf, size=-8), "size")
        refused(ValueError, lambda: dpus.copy(buf, "buffer", size=-8), "size")
        refused(TypeError, lambda: dpus.copy("buffer", buf, size="8"), "size")
        refused(TypeError, lambda: dpus.copy("buffer", buf, size=8.0), "size")
        refused(ValueError, lambda: dpus.copy("buffer", buf, offset=-8), "offset")
        refused(TypeError, lambda: dpus.copy("buffer", buf, offset=None), "offset")
        program = dpus.load(binary="pimrl:diag")
        refused(TypeError, lambda: program.get_symbol(["buffer"]), "symbol name")
        dpus.copy("buffer", bytes(range(16)), size=np.int64(8))     # numpy integers are integers
        back = [bytearray(8), bytearray(8)]
        dpus.copy(back, "buffer", size=8)
        assert back == [bytearray(range(8))] * 2
