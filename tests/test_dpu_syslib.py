"""The SDK's DPU system library on pimrl (issue 15, item 2).

Each program in tests/dpu_syslib/ is written as UPMEM's documentation shows, checks its own
results (``errors`` stays 0 over ``checks`` checks) and is built unmodified with the SDK's
build line, ``dpu-upmem-dpurte-clang -DNR_TASKLETS=n -o prog prog.c``, with pimrl's bin/
first on PATH; the host side is Python over the simulator (pimrl.dpurt.testing.DpuSim).
Build-time refusals (NR_TASKLETS, WRAM, atomic bits) run the same command line.
"""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pimrl.dpurt import cc
from pimrl.pim.errors import DpuError, DpuErrorCode
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME

pytestmark = pytest.mark.needs_c

from pimrl.dpurt.testing import DpuSim  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "tests" / "dpu_syslib"
BIN = REPO / "bin"


def sdk_build(tmp_path, source, tasklets, *flags, src_text=None):
    """`dpu-upmem-dpurte-clang -DNR_TASKLETS=n [flags] -o out source` with pimrl's bin first
    on PATH, as a user runs it. Returns the completed process and the output path."""
    src = Path(source)
    if src_text is not None:
        src = tmp_path / source
        src.write_text(src_text)
    out = tmp_path / src.stem
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run(["dpu-upmem-dpurte-clang", "-Wall", "-Wextra", "-Werror", "-O2",
                        f"-DNR_TASKLETS={tasklets}", *flags, "-o", str(out), str(src)],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    return r, out


def built(tmp_path, name, tasklets, *flags):
    r, out = sdk_build(tmp_path, PROGRAMS / name, tasklets, *flags)
    assert r.returncode == 0, r.stderr
    return out


def assert_self_checks(sim, min_checks):
    errors = sim.read_each("errors", np.uint32)[:, 0]
    checks = sim.read_each("checks", np.uint32)[:, 0]
    lines = sim.read_each("failed_line", np.uint32)[:, 0]
    assert list(errors) == [0] * len(errors), f"failed checks {errors} of {checks}, at lines {lines}"
    assert np.all(checks >= min_checks), checks


@pytest.mark.parametrize("tasklets", [1, 8, 24])
def test_barrier_semaphore_mutex_layouts(tmp_path, tasklets):
    prog = built(tmp_path, "sync_layouts.c", tasklets)
    with DpuSim(program=prog, nr_dpus=2) as sim:
        for _ in range(2):                       # the structures work again next launch
            sim.launch()
            assert_self_checks(sim, 14)
            assert list(sim.read_each("counter", np.uint32)[:, 0]) == [5 * tasklets] * 2
            assert list(sim.read_each("zero_counter", np.uint32)[:, 0]) == [5 * tasklets] * 2
            # barrier_t as the host sees it: wait_queue 0xFF, count, initial_count
            assert list(sim.read("seen_barrier", np.uint8)[:3]) == [0xFF, tasklets, tasklets]
            assert list(sim.read("my_barrier", np.uint8, 4)[:3]) == [0xFF, tasklets, tasklets]
            assert list(sim.read("my_semaphore", np.uint8, 4)[:3]) == [0xFF, 2, 2]


def test_mutex_pool_vmutex_atomic_bits(tmp_path):
    prog = built(tmp_path, "mutex_ext.c", 11)
    with DpuSim(program=prog, nr_dpus=3, workers=2) as sim:
        sim.launch()
        assert_self_checks(sim, 2 * 64 + 3)
        assert list(sim.read_each("bit_total", np.uint32)[:, 0]) == [66] * 3


def test_unaligned_dma_as_hardware_and_strict_mode(tmp_path, monkeypatch):
    prog = built(tmp_path, "unaligned.c", 6)
    heap = (np.arange(16384) & 0xFF).astype(np.uint8)
    with DpuSim(program=prog, nr_dpus=2) as sim:
        sim.write(DPU_MRAM_HEAP_POINTER_NAME, heap)
        with pytest.warns(UserWarning, match="not a multiple of 8 ran on the address aligned down"):
            sim.launch()
        assert_self_checks(sim, 36 + 48 + 4)
        assert sim.read("hw_word", np.uint64)[0] == 0x0706050403020100
        # exactly one transfer had an unaligned address (the library's are all aligned)
        assert [sim.details[d]["dma_unaligned"] for d in range(2)] == [1, 1]
        assert sim.program.last_launch["dma_unaligned"] == 2
        assert sim.program.dma_unaligned == 2
        mram = sim.read(DPU_MRAM_HEAP_POINTER_NAME, np.uint8, 4096 + 48, dpu=1)
        want = heap[4096:4096 + 48].copy()
        want[5:35] = 0xA0 + np.arange(30)
        assert np.array_equal(mram[4096:], want)
        # strict mode: the same access faults, naming the MRAM address (not a host pointer)
        monkeypatch.setenv("PIMRL_DPURT_STRICT_DMA", "1")
        with pytest.raises(DpuError) as exc:
            sim.launch()
        assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
        heap_addr = sim.program.symbols[DPU_MRAM_HEAP_POINTER_NAME].address
        assert f"MRAM address 0x{heap_addr + 3:08x} is not 8-byte aligned" in str(exc.value)
        assert "PIMRL_DPURT_STRICT_DMA" in str(exc.value) and "0x7f" not in str(exc.value)


def test_buddy_and_fixed_size_block_allocators(tmp_path):
    prog = built(tmp_path, "allocators.c", 8)
    with DpuSim(program=prog, nr_dpus=2) as sim:
        for _ in range(2):                       # buddy_init again after the heap reset
            sim.launch()
            assert_self_checks(sim, 8 * 4 + 11)


def test_seqread_to_the_end_of_an_mram_array_and_misc(tmp_path):
    prog = built(tmp_path, "seqread_misc.c", 4, "-DDPU_PROFILING")
    with DpuSim(program=prog, nr_dpus=2) as sim:
        values = np.arange(2 * 1000, dtype=np.uint64).reshape(2, 1000) * 7 + 3
        sim.write_each("values", values)
        assert sim.program.symbols["kept_table"].size == 16
        assert "kept_noinit" in sim.program.symbols and "fast_value" in sim.program.symbols
        sim.launch()
        assert_self_checks(sim, 6)
        assert np.array_equal(sim.read_each("sum", np.uint64)[:, 0], values.sum(axis=1))
        assert np.array_equal(sim.read_each("tail_sum", np.uint64)[:, 0],
                              values[:, -100:].sum(axis=1))
        assert sim.read("kept_noinit", np.uint64, dpu=1)[0] == 0x5151
        # STDOUT_BUFFER_INIT(64): the log holds the first 64 bytes, then says it was cut
        log = sim.log(0)
        assert log.startswith("this line and the next are longer than the 64 bytes of stdout b")
        assert "truncated" in log and "so the host sees" not in log
        # profiling.h: every tasklet spent modelled cycles in the section; tasklet 0 most
        prof = sim.read("prof", np.uint32, 48)
        start, count = prof[:24], prof[24:]
        assert np.all(start[:4] == 0xFFFFFFFF) and np.all(count[:4] > 0)
        assert count[0] > count[1] and np.all(count[4:] == 0)


@pytest.mark.parametrize("mode", [0, 1])
def test_wram_fifos(tmp_path, mode):
    prog = built(tmp_path, "fifo.c", 5)
    with DpuSim(program=prog, nr_dpus=2) as sim:
        inputs = np.arange(2 * 20 * 4, dtype=np.uint64).reshape(2, 20, 4)
        for d in range(2):
            data = np.zeros((32, 4), np.uint64)
            data[:20] = inputs[d]
            sim.write("__input_fifo_data", data, dpu=d)
            sim.write("input_fifo", np.array([0, 20], np.uint64), dpu=d)  # read_ptr, write_ptr
        sim.write("mode", np.uint32(mode))
        sim.write("active", np.uint64(0))
        sim.launch()
        want = (inputs ** 2).sum(axis=2) if mode == 0 else inputs.sum(axis=2)
        for d in range(2):
            ptrs = sim.read("input_fifo", np.uint64, 2, dpu=d)
            assert list(ptrs) == [20, 20]
            out_ptrs = sim.read("output_fifo", np.uint64, 2, dpu=d)
            assert list(out_ptrs) == [0, 20]
            assert np.array_equal(sim.read("__output_fifo_data", np.uint64, 20, dpu=d), want[d])
        # waiting for input with `active` set cannot be served during a launch: a clear fault
        sim.write("active", np.uint64(1))
        with pytest.raises(DpuError, match="input fifo is empty while `active` is set"):
            sim.launch()


# ----------------------------------------------------------------------------- build time
ONE = "#include <defs.h>\nint main(void) { return 0; }\n"


@pytest.mark.parametrize("tasklets", [0, 25])
def test_impossible_tasklet_counts_refused_at_build(tmp_path, tasklets):
    r, out = sdk_build(tmp_path, "one.c", tasklets, src_text=ONE)
    assert r.returncode != 0 and not out.exists()
    assert f"NR_TASKLETS={tasklets}: a DPU runs 1 to 24 tasklets" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_wram_overflow_refused_at_build(tmp_path):
    big = "#include <defs.h>\n#include <stdint.h>\nuint8_t big[62000];\n" \
          "int main(void) { big[me()] = 1; return 0; }\n"
    r, out = sdk_build(tmp_path, "big.c", 16, src_text=big)   # 62000 + 16 x 256 > 65536
    assert r.returncode != 0 and not out.exists()
    assert "region `wram' overflowed by" in r.stderr and "16 tasklet stacks" in r.stderr
    r, out = sdk_build(tmp_path, "big.c", 8, src_text=big)    # 62000 + 8 x 256 fits
    assert r.returncode == 0, r.stderr


def test_too_many_atomic_bits_refused_at_build(tmp_path):
    src = "#include <defs.h>\n#include <mutex_pool.h>\nMUTEX_POOL_INIT(a, 256)\n" \
          "MUTEX_POOL_INIT(b, 1)\nint main(void) { mutex_pool_lock(&a, 1); " \
          "mutex_pool_lock(&b, 1); return 0; }\n"
    r, out = sdk_build(tmp_path, "bits.c", 2, src_text=src)
    assert r.returncode != 0 and not out.exists()
    assert "more than the DPU's 256 atomic bits" in r.stderr


def test_bad_mutex_pointer_faults_the_dpu_without_a_host_pointer(tmp_path):
    src = ("#include <defs.h>\n#include <mutex.h>\n#include <stdint.h>\n__host uint32_t x;\n"
           "int main(void) { mutex_lock((mutex_id_t)&x); return 0; }\n")
    r, out = sdk_build(tmp_path, "badmutex.c", 1, src_text=src)
    assert r.returncode == 0, r.stderr
    with DpuSim(program=out, nr_dpus=1) as sim:
        with pytest.raises(DpuError) as exc:
            sim.launch()
        msg = str(exc.value)
        assert "mutex_lock: WRAM address 0x" in msg and "is not a mutex" in msg
        assert "0x7f" not in msg


def test_halt_faults_the_dpu_as_in_the_sdk(tmp_path):
    src = ("#include <defs.h>\n#include <stdint.h>\n__host uint32_t reached;\n"
           "int main(void) { if (me() == 1) halt(); reached++; return 0; }\n")
    r, out = sdk_build(tmp_path, "halting.c", 2, src_text=src)
    assert r.returncode == 0, r.stderr
    with DpuSim(program=out, nr_dpus=1) as sim:
        with pytest.raises(DpuError) as exc:
            sim.launch()
        assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
        assert "tasklet 1: halt() (FAULT_HALT) at " in str(exc.value)
        assert str(exc.value).endswith("halting.c:4")


@pytest.mark.parametrize("line,words", [
    ("MUTEX_POOL_INIT(pool, 3)", "power of two"),
    ("VMUTEX_INIT(vm, 12, 2)", "multiple of 8"),
    ("BARRIER_INIT(b, 200)", "signed byte"),
    ("STDOUT_BUFFER_INIT(12)", "positive multiple of 8"),
])
def test_sdk_compile_time_checks(tmp_path, line, words):
    src = ("#include <barrier.h>\n#include <defs.h>\n#include <mutex_pool.h>\n#include <stdio.h>\n"
           f"#include <vmutex.h>\n{line}\nint main(void) {{ return 0; }}\n")
    r, out = sdk_build(tmp_path, "checks.c", 2, src_text=src)
    assert r.returncode != 0 and not out.exists()
    assert words in r.stderr


def test_system_library_code_counts_its_blocks_but_never_gives_way():
    """The library's routines run as one step (tasklet-safe, as the SDK's): their probes add
    the blocks' counts and costs but never call the preemption point; a program's do."""
    from pimrl.dpurt.instrument import instrument

    asm = ("\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tcmpl\t$3, %edi\n\tjg\t.L2\n"
           "\taddl\t$1, %edi\n.L2:\n\tmovl\t%edi, %eax\n\tret\n")
    program, info = instrument(asm, "f.c")
    library, info_lib = instrument(asm, "f.c", preempt=False)
    n = len(info["blocks"])
    assert n == 3 and info_lib == info
    assert program.count("call\t__dpurt_preempt") == n
    assert "__dpurt_preempt" not in library and "__dpurt_ilimit" not in library
    assert library.count("addq\t__dpurt_icount(%rip), %rax") == n
    nm = shutil.which("nm")
    if nm:
        undefined = subprocess.run([nm, "-u", str(cc.syslib_archive())], capture_output=True,
                                   text=True, check=True).stdout
        assert "__dpurt_icount" in undefined and "__dpurt_preempt" not in undefined
