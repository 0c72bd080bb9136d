"""The DPU runtime: UPMEM C programs built for host execution and run on simulated DPUs.

- the twelve SwiftRL C kernels (kernels/swiftrl.c) against the reference learner, bit for
  bit, over several DPU and tasklet counts, driven by the unchanged PimTrainer;
- their work counters equal to the numba kernel's, their cycle estimate within 15 % of the
  numba path's counted model;
- faults (misaligned / mis-sized mram_read, WRAM overflow, deadlock, __builtin_trap);
- DPU semantics (per-DPU globals kept across launches, 32-bit MRAM addresses, __mram
  variables, logs, perfcounter);
- two outside-user programs built by their own Makefiles and run through the shim;
- the unit-testing API and fixture.
"""
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import random_records
from pimrl.learners.variants import P_N_RECORDS, PARAMS_WORDS, all_variants
from pimrl.dpurt import cc
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.partition import even_bounds, lane_bounds
from pimrl.swiftrl import trainer
from pimrl.pim.errors import DpuError, DpuErrorCode
from pimrl.pim.hardware import get_hardware
from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE

pytestmark = pytest.mark.needs_c

from pimrl.rlkernel import cprogram as swiftrl  # noqa: E402
from pimrl.dpurt.testing import DpuSim, dpu_sim  # noqa: E402,F401  (fixture)

REPO = Path(__file__).resolve().parents[1]
OUTSIDE = REPO / "tests" / "outside"
BIN = REPO / "bin"
# The twelve algo x dtype x sampling variants, from the registry.
VARIANTS = [(v.algo, v.dtype, v.sampling) for v in all_variants()]
S, A = 13, 4
RECORDS = random_records(3001, S, A, seed=5)


def reference_tables(params, n_dpus, tasklets, records=RECORDS):
    lanes = lane_bounds(even_bounds(len(records), n_dpus), tasklets)
    res = [learn_partition(records, S, A, params, lanes[d],
                           lane_ids=np.arange(d * tasklets, (d + 1) * tasklets))
           for d in range(n_dpus)]
    return np.stack([r.q_raw for r in res]), sum(r.saturations for r in res)


def fit(params, n_dpus, tasklets, program="c", workers=None, **kw):
    """PimTrainer, unchanged, with the C kernel (or the numba one) as its program."""
    made = []

    def c_factory(*a, **k):
        made.append(swiftrl.swiftrl_program(*a, workers=workers, **k))
        return made[-1]

    tr = trainer.PimTrainer(params, n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True,
                            kernel=c_factory if program == "c" else "numba",
                            **kw).fit(RECORDS, S, A)
    return tr, (made[-1] if made else None)


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_c_kernels_bit_exact_with_reference_and_numba(algo, dtype, sampling):
    """All twelve variants; 1, 3 and 8 DPUs; 1, 5 and 16 tasklets; 1 and 3 worker threads."""
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=2, stride=3, seed=9,
                      next_action="epsilon-greedy" if algo == "sarsa" else "logged", epsilon=0.2)
    for (n_dpus, tasklets), workers in zip([(1, 1), (3, 16), (8, 5)], [1, 3, 2]):
        expected, sat = reference_tables(p, n_dpus, tasklets)
        tr, prog = fit(p, n_dpus, tasklets, workers=workers, block_bytes=256)
        assert np.array_equal(tr.dpu_tables_.view(np.uint32), expected.view(np.uint32)), \
            (n_dpus, tasklets)
        assert tr.saturations_ == sat
        numba_tr, _ = fit(p, n_dpus, tasklets, program="numba", block_bytes=256)
        assert np.array_equal(tr.counters_, numba_tr.counters_), (n_dpus, tasklets)
        assert tr.timings_.modelled_s["dpu_kernel"] > 0


def test_sarsa_logged_large_stride_and_sync_rounds():
    p = LearnerParams(algo="sarsa", sampling="str", stride=200, epochs=2)
    tr, _ = fit(p, 3, 5)
    assert np.array_equal(tr.dpu_tables_, reference_tables(p, 3, 5)[0])
    # sync:3 rounds: the table is broadcast back and the streams continue in WRAM
    p = LearnerParams(algo="q", dtype="int32", sampling="ran", epochs=5, seed=2)
    c_tr, _ = fit(p, 4, 3, aggregate="sync:3")
    n_tr, _ = fit(p, 4, 3, program="numba", aggregate="sync:3")
    assert np.array_equal(c_tr.q_, n_tr.q_)
    assert np.array_equal(c_tr.counters_, n_tr.counters_)


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_cycle_estimate_agrees_with_numba_model(algo, dtype, sampling):
    """The runtime's estimate (counted basic blocks x DPU instruction costs, exact DMA)
    within 5 % of the numba path's counted model, in every tasklet mode at 16, 11, 4 and 1
    tasklets, on a small table (S=13, A=4; half the variants) or a larger one (S=500, A=6).
    Tasklet mode rows is priced from each tasklet's counters (the kernel built with
    SWIFTRL_TASKLET_STATS). benchmarks/calibrate_kernel_costs.py check runs both shapes for
    every variant (largest gap 3.6 %)."""
    index = VARIANTS.index((algo, dtype, sampling))
    n_states, n_actions = ((S, A), (500, 6))[index % 2]
    records = random_records(8000, n_states, n_actions, seed=11)
    for mode in ("ring", "rows", "unlocked"):
        p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=1, stride=5,
                          next_action="epsilon-greedy" if algo == "sarsa" else "logged",
                          tasklet_mode=mode)
        for tasklets in (16, 11, 4, 1):
            made = []
            trainer.PimTrainer(p, n_dpus=2, tasklets=tasklets, kernel=lambda *a, **k: made.append(
                swiftrl.swiftrl_program(*a, tasklet_stats=True, **k)) or made[-1]).fit(
                records, n_states, n_actions)
            agreement = swiftrl.model_agreement(made[-1])
            assert agreement["max_rel_diff"] < 0.05, (mode, tasklets, agreement)


@pytest.mark.parametrize("algo,dtype,sampling,next_action", [
    (algo, dtype, sampling, "epsilon-greedy" if algo == "sarsa" else "logged")
    for algo, dtype, sampling in VARIANTS] + [("sarsa", "fp32", "seq", "logged"),
                                             ("sarsa", "int32", "seq", "logged")])
def test_c_kernel_rows_mode_bit_exact_with_numba(algo, dtype, sampling, next_action):
    """Tasklet mode rows in UPMEM C, every tasklet at once on the DPU runtime's scheduler:
    the numba kernel's tables and counters, bit for bit, at 3 and 16 tasklets (a heavy state
    split over lanes), 1 and 3 runtime workers. The numba kernel runs the lanes one at a
    time, or in steps (SEQ without draws): any order gives the same tables."""
    recs = RECORDS.copy()
    recs["state"][:600] = 2
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=2, stride=3, seed=9,
                      next_action=next_action, epsilon=0.2, tasklet_mode="rows")
    for (n_dpus, tasklets), workers in zip([(3, 16), (2, 3)], [3, 1]):
        kw = dict(n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True, block_bytes=256)
        made = []
        c_tr = trainer.PimTrainer(p, kernel=lambda *a, **k: made.append(swiftrl.swiftrl_program(
            *a, workers=workers, **k)) or made[-1], **kw).fit(recs, S, A)
        n_tr = trainer.PimTrainer(p, **kw).fit(recs, S, A)
        assert np.array_equal(c_tr.dpu_tables_.view(np.uint32), n_tr.dpu_tables_.view(np.uint32))
        assert np.array_equal(c_tr.counters_, n_tr.counters_)


def test_c_kernel_parallel_mode_fills_the_pipeline():
    """perfcounter_get() in the C kernel at 16 tasklets in tasklet mode rows: the launch's
    cycles within 10 % of its instructions (the pipeline full), where the ring's cycles are
    near 11 per instruction."""
    records = random_records(20000, 500, 6, seed=3)
    perf = {}
    for mode in ("rows", "ring"):
        p = LearnerParams(dtype="int32", epochs=1, tasklet_mode=mode)
        for counter in ("COUNT_CYCLES", "COUNT_INSTRUCTIONS"):
            made = []
            trainer.PimTrainer(p, n_dpus=1, tasklets=16, kernel=lambda *a, **k: made.append(
                swiftrl.swiftrl_program(*a, perfcounter=counter, **k)) or made[-1]).fit(
                records, 500, 6)
            perf[mode, counter] = float(made[-1].last_launch["perf"][0])
    ratio = perf["rows", "COUNT_CYCLES"] / perf["rows", "COUNT_INSTRUCTIONS"]
    assert 1.0 <= ratio < 1.10, ratio
    assert perf["ring", "COUNT_CYCLES"] / perf["ring", "COUNT_INSTRUCTIONS"] > 9


def test_kernel_checks_its_variant_and_wram():
    hw = get_hardware()
    prog = swiftrl.swiftrl_program(S, A, 4, "q", "fp32", "seq", hardware=hw)
    sim = DpuSim(program=prog.path, nr_dpus=1)
    try:
        params = np.zeros(PARAMS_WORDS, np.int64)
        params[:len(LearnerParams(algo="sarsa").kernel_scalars())] = LearnerParams(
            algo="sarsa").kernel_scalars()
        params[P_N_RECORDS] = 10
        sim.write("params", params)
        with pytest.raises(DpuError) as exc:
            sim.launch()
        assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
        assert "__builtin_trap()" in str(exc.value) and "swiftrl.c" in str(exc.value)
    finally:
        sim.free()
    with pytest.raises(ValueError, match="WRAM overflow"):
        swiftrl.swiftrl_program(1500, 4, 16, "q", "fp32", "seq", hardware=hw)


# ----------------------------------------------------------------------------- runtime
FAULTS_C = r"""
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdint.h>
__host uint32_t mode;
__host uint32_t reached;
uint64_t buf[32];
BARRIER_INIT(b, NR_TASKLETS);
int main(void) {
    if (me() == 0) mem_reset();
    barrier_wait(&b);
    if (mode == 1 && me() == 2) mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + 4, buf, 16);
    if (mode == 2 && me() == 1) mram_read(DPU_MRAM_HEAP_POINTER, buf, 12);
    if (mode == 3 && me() == 3) mram_write(buf, DPU_MRAM_HEAP_POINTER, 4096);
    if (mode == 4) { for (int i = 0; i < 100; i++) mem_alloc(4096); }
    if (mode == 5 && me() == 0) handshake_wait_for(1);
    reached++;
    return 0;
}
"""


@pytest.fixture(scope="module")
def faults_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    (d / "faults.c").write_text(FAULTS_C)
    return cc.build([d / "faults.c"], d / "faults", nr_tasklets=4)


@pytest.mark.parametrize("mode,tasklet,words", [
    (1, 2, ["mram_read of 16 bytes", "0x08000004", "not 8-byte aligned"]),
    (2, 1, ["mram_read of 12 bytes", "multiple of 8 in [8, 2048]"]),
    (3, 3, ["mram_write of 4096 bytes", "multiple of 8 in [8, 2048]"]),
    # the tasklets allocate in turn (modelled-time order): 15 blocks fit, the 16th is tasklet 3's
    (4, 3, ["mem_alloc(4096)", "WRAM exhausted", "61440 B already allocated", "65536 B of WRAM"]),
    (5, 0, ["deadlock", "handshake_wait_for(1)"]),
])
def test_faults_report_dpu_tasklet_and_reason(faults_program, mode, tasklet, words, monkeypatch):
    if mode == 1:                   # an unaligned address faults only in strict DMA mode
        monkeypatch.setenv("PIMRL_DPURT_STRICT_DMA", "1")
    with DpuSim(program=faults_program, nr_dpus=3) as sim:
        sim.write("mode", np.uint32(mode))
        with pytest.raises(DpuError) as exc:
            sim.launch()
        msg = str(exc.value)
        assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
        assert f"DPU 0 tasklet {tasklet}: " in msg, msg
        for w in words:
            assert w in msg, msg
        sim.write("mode", np.uint32(0))                  # the DPU runs again afterwards
        sim.launch()


SEGV_C = r"""
#include <defs.h>
#include <stdint.h>
__host uint32_t mode;
__host uint32_t divisor;
__host uint32_t out;
static int deep(int n) { volatile char pad[1024]; pad[0] = (char)n; return n ? deep(n - 1) + pad[0] : 0; }
int main(void) {
    if (mode == 1 && me() == 1) { volatile uint32_t *p = (uint32_t *)(uintptr_t)16; out = *p; }
    if (mode == 2 && me() == 0) out = deep(1000000);
    if (mode == 3) out = 100 / divisor;
    return 0;
}
"""


def test_hardware_faults_fault_the_dpu_not_the_process(dpu_sim, tmp_path):
    (tmp_path / "segv.c").write_text(SEGV_C)
    sim = dpu_sim(tmp_path / "segv.c", nr_dpus=3, nr_tasklets=2, opt="-O1", workers=2)
    for mode, words in ((1, "tasklet 1: invalid memory access (SIGSEGV) at address 0x10"),
                        (2, "tasklet 0: stack overflow of tasklet 0"),
                        (3, "tasklet 0: arithmetic fault (SIGFPE"), (0, None)):
        sim.write("mode", np.uint32(mode))
        sim.write("divisor", np.uint32(0 if mode == 3 else 5))
        if words is None:
            sim.launch()
            continue
        with pytest.raises(DpuError) as exc:
            sim.launch()
        assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT and words in str(exc.value)


ASSERT_C = r"""
#include <assert.h>
#include <defs.h>
#include <stdint.h>
#include <stdio.h>
static_assert(sizeof(uint32_t) == 4, "C11 static_assert works");
__host uint32_t x;
__host uint32_t out;
int main(void) {
    if (me() == 1) {
        printf("before\n");
        assert(x != 7);
        out = x + 1;
    }
    return 0;
}
"""


def test_failed_assert_faults_its_dpu_and_keeps_the_message(dpu_sim, tmp_path):
    """<assert.h> in DPU code: a failed assert faults that DPU (not the host process, as the
    host C library's assert would), its log keeps the message, and the host carries on."""
    (tmp_path / "asrt.c").write_text(ASSERT_C)
    sim = dpu_sim(tmp_path / "asrt.c", nr_dpus=3, nr_tasklets=2, workers=2)
    sim.write("x", np.uint32(3))
    sim.write("x", np.uint32(7), dpu=2)
    with pytest.raises(DpuError) as exc:
        sim.launch()
    assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
    assert "DPU 2" in str(exc.value) and "tasklet 1" in str(exc.value)
    assert "assertion `x != 7' failed at" in str(exc.value) and "asrt.c:12" in str(exc.value)
    assert sim.log(2).endswith("asrt.c:12: main: Assertion `x != 7' failed.\n")
    assert sim.log(2).startswith("before\n")
    sim.write("x", np.uint32(4), dpu=2)                  # the host carries on
    sim.launch()
    assert list(sim.read_each("out", np.uint32)[:, 0]) == [4, 4, 5]
    off = dpu_sim(tmp_path / "asrt.c", nr_dpus=1, nr_tasklets=2, defines={"NDEBUG": None})
    off.write("x", np.uint32(7))
    off.launch()                                          # NDEBUG: no check
    assert off.read("out", np.uint32)[0] == 8


def test_wram_globals_overflow_refused_at_build_and_load(tmp_path):
    """Over the DPU's 64 KiB: refused by the build (as the SDK's linker does); a program
    that fits 64 KiB but not a smaller WRAM (upmem-v1b's) is refused when loaded there."""
    src = tmp_path / "big.c"
    src.write_text("#include <defs.h>\n#include <stdint.h>\nuint8_t big[70000];\n"
                   "int main(void) { big[me()] = 1; return 0; }\n")
    with pytest.raises(cc.BuildError, match="region `wram' overflowed"):
        cc.build([src], tmp_path / "big", nr_tasklets=2)
    src.write_text(src.read_text().replace("70000", "64000"))
    prog = cc.build([src], tmp_path / "big", nr_tasklets=2)
    with pytest.raises(DpuError) as exc:
        DpuSim(program=prog, nr_dpus=1, hardware="upmem-v1b")
    assert exc.value.code == DpuErrorCode.DPU_ERR_ELF_INVALID_FILE
    assert "WRAM" in str(exc.value)


SEMANTICS_C = r"""
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <seqread.h>
#include <stdint.h>
#include <stdio.h>
__host uint32_t launches;
__host uint32_t heap_addr;
__host uint64_t seq_sum;
__host uint64_t cycles[2];
__host uint32_t order[4 * NR_TASKLETS];
__host uint32_t n_order;
__host uint32_t work;
__mram uint64_t init_table[4] = {11, 22, 33, 44};
__mram_noinit uint64_t out_slot;
MUTEX_INIT(lock);
BARRIER_INIT(bar, NR_TASKLETS);
int main(void) {
    uint32_t t = me();
    if (t == 0) {
        mem_reset();
        launches++;
        n_order = 0;
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&bar);
    for (int k = 0; k < 4; k++) {          /* DMA makes tasklets interleave */
        uint64_t tmp[2] __dma_aligned;
        mram_read(&init_table[k & 3], tmp, 8);
        mutex_lock(lock);
        order[n_order++] = t;
        mutex_unlock(lock);
    }
    barrier_wait(&bar);
    if (t == 0) {
        cycles[0] = perfcounter_get();
        volatile uint32_t x = 0;
        for (uint32_t i = 0; i < work; i++) x += i;
        cycles[1] = perfcounter_get();
        heap_addr = (uint32_t)DPU_MRAM_HEAP_POINTER;
        __mram_ptr uint64_t *p = (__mram_ptr uint64_t *)(heap_addr + 8192 * 1024);
        uint64_t v __dma_aligned = 0xC0FFEE00ull + launches;
        mram_write(&v, p, 8);                       /* a page nobody mapped yet */
        out_slot = init_table[1] + launches;        /* direct access to __mram */
        seqreader_buffer_t cache = seqread_alloc();
        seqreader_t sr;
        uint64_t *e = seqread_init(cache, DPU_MRAM_HEAP_POINTER, &sr);
        uint64_t s = 0;
        for (int i = 0; i < 100; i++) { s += *e; e = seqread_get(e, sizeof(uint64_t), &sr); }
        seq_sum = s;
        printf("launch %u on a DPU of %d tasklets\n", launches, NR_TASKLETS);
    }
    return 0;
}
"""


def test_dpu_semantics(dpu_sim, tmp_path):
    (tmp_path / "sem.c").write_text(SEMANTICS_C)
    sim = dpu_sim(tmp_path / "sem.c", nr_dpus=3, nr_tasklets=4, workers=2)
    assert sim.program.symbols["init_table"].address == MRAM_BASE
    data = np.arange(3 * 128, dtype=np.uint64).reshape(3, 128) * 3
    sim.write_each(DPU_MRAM_HEAP_POINTER_NAME, data)
    sim.write("work", np.uint32(10), dpu=1)
    sim.write("work", np.uint32(2000), dpu=2)
    for launch in (1, 2):
        sim.launch()
        assert list(sim.read_each("launches", np.uint32)[:, 0]) == [launch] * 3
        heap = sim.read("heap_addr", np.uint32)[0]
        assert heap == sim.program.symbols[DPU_MRAM_HEAP_POINTER_NAME].address
        for d in range(3):
            assert sim.read("seq_sum", np.uint64, dpu=d)[0] == data[d, :100].sum()
            far = sim.read(DPU_MRAM_HEAP_POINTER_NAME, np.uint64, 1, dpu=d, offset=8192 * 1024)
            assert far[0] == 0xC0FFEE00 + launch
            assert sim.read("out_slot", np.uint64, dpu=d)[0] == 22 + launch
            assert sim.log(d) == f"launch {launch} on a DPU of 4 tasklets\n"
        order = sim.read("order", np.uint32, 16)
        assert sorted(order) == sorted(list(range(4)) * 4)
        assert list(order[:4]) == [0, 1, 2, 3]             # interleaved, not one after another
        c = sim.read_each("cycles", np.uint64)
        assert np.all(c[:, 1] > c[:, 0]) and c[2, 1] - c[2, 0] > 50 * (c[1, 1] - c[1, 0])
    assert sim.cycles[2] > sim.cycles[1] > 0
    assert sim.details[0]["dma_writes"] == 1


def test_build_errors_are_reported(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("#include <defs.h>\nint main(void) { return undefined_thing; }\n")
    with pytest.raises(cc.BuildError, match="undefined_thing"):
        cc.build([bad], tmp_path / "bad")
    r = subprocess.run([str(BIN / "dpu-upmem-dpurte-clang"), "-O2", "-o", str(tmp_path / "x"),
                        str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "undefined_thing" in r.stderr


# ----------------------------------------------------------------------------- outside users
def _outside_dpu_build(name, tmp_path, tasklets):
    out = tmp_path / f"{name}.dpu"
    r = subprocess.run([str(BIN / "dpu-upmem-dpurte-clang"), "-Wall", "-Wextra", "-Werror",
                        "-Isupport", "-O2", f"-DNR_TASKLETS={tasklets}", "-o", str(out),
                        "dpu/task.c"], cwd=OUTSIDE / name, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def test_outside_vector_add_dpu_side(tmp_path):
    prog = _outside_dpu_build("vector_add", tmp_path, 6)
    with DpuSim(program=prog, nr_dpus=2) as sim:
        n = 3000
        a = np.arange(2 * n, dtype=np.int32).reshape(2, n)
        b = (7 - 3 * a).astype(np.int32)
        sim.write("args", np.array([n, 0], np.uint32))
        sim.write_each(DPU_MRAM_HEAP_POINTER_NAME, np.concatenate([a, b], axis=1))
        sim.launch()
        c = sim.read_each(DPU_MRAM_HEAP_POINTER_NAME, np.int32, n, offset=8 * n)
        assert np.array_equal(c, a + b)
        assert np.all(sim.read("blocks_done", np.uint32) > 0)
        assert "vector add: 3000 elements, 6 tasklets" in sim.log(0)


def test_outside_reduction_dpu_side(tmp_path):
    prog = _outside_dpu_build("reduction", tmp_path, 11)
    with DpuSim(program=prog, nr_dpus=3) as sim:
        n = 4000
        data = np.arange(3 * n, dtype=np.uint64).reshape(3, n) ** 2
        sim.write("args", np.array([n, 0], np.uint32))
        sim.write_each(DPU_MRAM_HEAP_POINTER_NAME, data)
        sim.launch()
        res = sim.read_each("result", np.uint64)
        assert np.array_equal(res[:, 0], data.sum(axis=1))
        assert np.array_equal(sim.read_each("mram_total", np.uint64)[:, 0], data.sum(axis=1))


@pytest.mark.parametrize("name", ["vector_add", "reduction", "histogram"])
def test_outside_programs_build_with_their_makefiles_and_pass(name, tmp_path):
    """`make test` with pimrl's bin first on PATH: host side via dpu-pkg-config (the shim),
    DPU side via dpu-upmem-dpurte-clang; the program checks its own result."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    if not (BIN / "dpu-pkg-config").exists():
        pytest.skip("the host shim (bin/dpu-pkg-config) is not there yet")
    work = tmp_path / name
    shutil.copytree(OUTSIDE / name, work, ignore=shutil.ignore_patterns("bin"))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONPATH", None)
    for var in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):      # run as a user would, not as a sub-make
        env.pop(var, None)
    build = subprocess.run(["make", "all"], cwd=work, env=env, capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run(["make", "test"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("OK"), run.stdout
    assert "=== DPU#0x0 ===" in run.stdout         # the DPU log came back through dpu_log_read


# ----------------------------------------------------------------------------- testing API
def test_testing_fixture_and_counts(dpu_sim, tmp_path):
    src = tmp_path / "k.c"
    src.write_text("#include <defs.h>\n#include <stdint.h>\n__host float xs[NR_TASKLETS];\n"
                   "__host float scale;\nint main(void) { xs[me()] = xs[me()] * scale + me(); "
                   "return 0; }\n")
    sim = dpu_sim(src, nr_dpus=2, nr_tasklets=3)
    sim.write("xs", np.array([1, 2, 3], np.float32))
    sim.write("scale", np.float32(0.5), dpu=1)
    sim.write("scale", np.float32(2.0), dpu=0)
    sim.launch()
    assert list(sim.read("xs", np.float32, dpu=0)) == [2, 5, 8]
    assert list(sim.read("xs", np.float32, dpu=1)) == [0.5, 2, 3.5]
    hw = get_hardware()
    # three float multiplies, three float adds (int -> float conversions): soft-float costs
    assert sim.details[0]["instructions"] > 3 * (hw.op_instructions["float_mul"]
                                                + hw.op_instructions["float_add"])
    assert sim.cycles[0] > 0


def test_train_cli_runs_the_c_kernel(capsys):
    """`pimrl train --kernel c`: the UPMEM C kernel gives the numba kernel's table."""
    import json

    from pimrl.cli import main

    args = ["train", "--env", "FrozenLake-v1", "--transitions", "5000", "--backend", "pim",
            "--dpus", "4", "--tasklets", "3", "--dtype", "int32", "--sampling", "ran",
            "--json", "--no-eval"]
    tables = {}
    for kernel in ("c", "numba"):
        assert main(args + ["--kernel", kernel]) == 0
        out = json.loads(capsys.readouterr().out)
        tables[kernel] = out["runs"][0]
        assert out["runs"][0]["kernel"] == kernel
    assert tables["c"]["n_updates"] == tables["numba"]["n_updates"] == 5000
    c_kernel, numba_kernel = (tables[k]["modelled_s"]["dpu_kernel"] for k in ("c", "numba"))
    assert abs(c_kernel / numba_kernel - 1) < 0.15


def test_overrunning_the_last_global_faults_the_dpu(dpu_sim, tmp_path):
    """A kernel writing past its last WRAM global gets a DPU fault, not a dead host."""
    src = tmp_path / "over.c"
    src.write_text("#include <defs.h>\n#include <stdint.h>\n__host uint64_t buf[4];\n"
                   "__host uint64_t n;\nint main(void) { if (me() == 0) for (uint64_t i = 0; "
                   "i < n; i++) buf[i] = i; return 0; }\n")
    sim = dpu_sim(src, nr_dpus=2, nr_tasklets=2)
    sim.write("n", np.uint64(4))
    sim.launch()
    sim.write("n", np.uint64(5000))
    with pytest.raises(DpuError) as exc:
        sim.launch()
    assert exc.value.code == DpuErrorCode.DPU_ERR_DPU_FAULT
    assert "past the end of the program's WRAM globals" in str(exc.value)
    sim.write("n", np.uint64(4))
    sim.launch()                                  # the DPU runs again afterwards


# ----------------------------------------------------------------------------- time
TIMING_C = r"""
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
__host uint32_t mode, n;
__host uint64_t timed[NR_TASKLETS];
__host uint64_t whole, seen, tries;
uint64_t buf[NR_TASKLETS][256] __dma_aligned;
volatile uint32_t flag;
BARRIER_INIT(b, NR_TASKLETS);
static uint32_t spin(uint32_t k)
{
    volatile uint32_t x = 0;
    for (uint32_t i = 0; i < k; i++)
        x += i;
    return x;
}
int main(void)
{
    uint32_t t = me();
    if (t == 0)
        perfcounter_config(mode == 4 ? COUNT_INSTRUCTIONS : COUNT_CYCLES, true);
    barrier_wait(&b);
    uint64_t t0 = perfcounter_get();
    if (mode == 0 || mode == 4)                       /* the same computation in every tasklet */
        spin(n);
    else if (mode == 1 && t == 0)                     /* one transfer of n bytes */
        mram_read(DPU_MRAM_HEAP_POINTER, buf[0], n);
    else if (mode == 2)                               /* n transfers of 2,048 B per tasklet */
        for (uint32_t i = 0; i < n; i++)
            mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + t * 2048, buf[t], 2048);
    else if (mode == 3 && t == 1) {                   /* notify, then raise a flag */
        handshake_notify();
        spin(50);
        flag = 1;
    } else if (mode == 3 && t == 0) {                 /* wait, then spin on the flag */
        handshake_wait_for(1);
        uint64_t k = 0;
        while (!flag && k < 10000000)
            k++;
        seen = flag;
        tries = k;
    }
    timed[t] = perfcounter_get() - t0;
    barrier_wait(&b);
    if (t == 0)
        whole = perfcounter_get();
    return 0;
}
"""


@pytest.fixture(scope="module")
def timing_programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("timing")
    (d / "timing.c").write_text(TIMING_C)
    return {t: cc.build([d / "timing.c"], d / f"timing{t}", nr_tasklets=t) for t in (1, 4, 11, 16)}


def _timed(path, mode, n):
    """(each tasklet's timed cycles, tasklet 0's final counter, launch cycles, details)."""
    with DpuSim(program=path, nr_dpus=1) as sim:
        sim.write("mode", np.uint32(mode))
        sim.write("n", np.uint32(n))
        sim.launch()
        details = dict(sim.details[0], seen=int(sim.read("seen", np.uint64)[0]),
                       tries=int(sim.read("tries", np.uint64)[0]))
        return (sim.read("timed", np.uint64).astype(float), int(sim.read("whole", np.uint64)[0]),
                sim.cycles[0], details)


def test_revolving_pipeline_in_modelled_time(timing_programs):
    """T tasklets run the same loop: each issues once every max(11, T) cycles, so the
    interval one tasklet times holds the others' work (1 instruction a cycle from 11 on)."""
    one = _timed(timing_programs[1], 0, 3000)[0][0]
    for t, factor in ((4, 1.0), (11, 1.0), (16, 16 / 11)):
        timed = _timed(timing_programs[t], 0, 3000)[0]
        assert np.all(np.abs(timed / (one * factor) - 1) < 0.03), (t, timed, one)
    # COUNT_INSTRUCTIONS: the DPU's instructions (every tasklet's) in the same interval
    instr1 = _timed(timing_programs[1], 4, 3000)[0][0]
    assert one / instr1 == pytest.approx(11, rel=0.02)
    instr16 = _timed(timing_programs[16], 4, 3000)[0]
    cyc16 = _timed(timing_programs[16], 0, 3000)[0]
    assert np.all(np.abs(instr16 / cyc16 - 1) < 0.03)                 # one a cycle
    assert np.all(np.abs(instr16 / (16 * instr1) - 1) < 0.03)


def test_dma_alpha_plus_beta_size_and_one_engine(timing_programs):
    hw = get_hardware()
    small = _timed(timing_programs[1], 1, 8)[0][0]
    big = _timed(timing_programs[1], 1, 2048)[0][0]
    assert big - small == pytest.approx(hw.dma_beta * 2040, abs=2)
    # the call sequences around the transfer are a few instructions at 11 cycles each
    assert 0 < small - (hw.dma_alpha_read + hw.dma_beta * 8) < 11 * 25
    per = hw.dma_alpha_read + hw.dma_beta * 2048
    t1 = _timed(timing_programs[1], 2, 20)[0][0]
    assert 20 * per < t1 < 20 * (per + 11 * 15)       # latency bound, plus the loop's instructions
    t16 = _timed(timing_programs[16], 2, 20)[0]
    assert np.max(t16) == pytest.approx(16 * 20 * per, rel=0.03)        # the engine's bound
    assert np.min(t16) > 0.9 * 16 * 20 * per                            # every tasklet waits


def test_a_dma_call_is_one_dpu_instruction_with_its_operands():
    """On a DPU mram_read/mram_write is one DMA instruction: the x86 moves that only place
    its arguments (an immediate size, a register) are free, an address computed for it and
    the call (the DMA instruction) count, and other calls keep their argument moves."""
    from pimrl.dpurt.instrument import instrument

    def cost(body):
        asm = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n" + body + "\tret\n"
        return instrument(asm, "f.c")[1]["blocks"][0][0]

    args = "\tmovl\t$8, %edx\n\tmovq\t%r13, %rsi\n\tleal\t(%rax,%r12), %edi\n"
    assert cost(args + "\tcall\t*mram_read@GOTPCREL(%rip)\n") == 2       # lea, ldma
    assert cost(args + "\tcall\tmram_write@PLT\n") == 2
    assert cost(args + "\tcall\t*other@GOTPCREL(%rip)\n") == 4           # every move
    # only the last write of each argument register before the call is its operand
    assert cost("\tmovl\t$1, %edx\n\taddl\t%edx, %ecx\n\tmovl\t$8, %edx\n"
                "\tcall\tmram_read\n") == 3
    # a size loaded from memory is a load on a DPU too
    assert cost("\tmovl\t12(%rsp), %edx\n\tcall\tmram_read\n") == 2


def test_handshake_wakes_the_notifier_which_runs_alongside(timing_programs):
    """After handshake_wait_for wakes a stopped notifier, both tasklets run: a waiter that
    then spins on a flag the notifier raises sees it (tasklets switch in call-free code)."""
    for t in (4, 16):
        _, whole, cycles, d = _timed(timing_programs[t], 3, 0)
        assert d["seen"] == 1
        assert 0 < d["tries"] < 1000, d["tries"]
        assert cycles >= whole > 0


def test_launch_cycles_are_the_last_tasklets_modelled_time(timing_programs):
    timed, whole, cycles, d = _timed(timing_programs[16], 0, 3000)
    assert cycles == max(d["tasklet_cycles"]) >= whole >= timed.max()
    # the runtime's own host work is no DPU time: the instructions are the program's blocks
    # and the modelled runtime calls only
    assert d["instructions"] * 1.0 <= cycles * 1.001


def test_three_operand_forms_and_builtin_blocks_counted_as_on_a_dpu():
    """x86's two-operand pairs that a DPU does in one three-operand instruction (a copy then an
    operation on the copy; a shift by a constant then an add of it: lsl_add), a GOT load (an
    immediate on a DPU) and an inline-assembly block marked as one DPU operation."""
    from pimrl.dpurt.instrument import instrument

    def block(body):
        asm = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n" + body + "\tret\n"
        return instrument(asm, "f.c")[1]["blocks"][0]

    assert block("\tmovl\t%eax, %ecx\n\tsarl\t$16, %ecx\n")[0] == 2          # asr; ret
    assert block("\tmovl\t%eax, %ecx\n\taddl\t%ecx, %edx\n")[0] == 3          # not a copy's op
    assert block("\tsall\t$8, %esi\n\taddl\t%esi, %eax\n")[0] == 2            # lsl_add; ret
    assert block("\tsall\t$8, %esi\n\taddl\t%esi, %eax\n\tmovl\t%esi, %ecx\n")[0] == 4
    assert block("\tsall\t$8, %eax\n\taddl\t%r10d, %eax\n")[0] == 2
    assert block("\tmovq\tq_table@GOTPCREL(%rip), %rax\n\tmovl\t(%rax), %eax\n")[0] == 2
    plain, ops, _ = block("#APP\n\t# dpurt-op mul8 mul_ul_ul\n\tmovzbl %al, %ecx\n"
                          "\tmovzbl %dl, %esi\n\timull %esi, %ecx\n#NO_APP\n")
    assert (plain, ops) == (1, {"mul8": 1})                                   # the ret; mul8


MUL8_C = r"""
#include <built_ins.h>
#include <defs.h>
#include <stdint.h>
__host uint32_t args[2];
__host int32_t out[12];
int main(void)
{
    const uint32_t a = args[0], b = args[1];
    __builtin_mul_ul_ul_rrr(out[0], a, b);
    __builtin_mul_ul_uh_rrr(out[1], a, b);
    __builtin_mul_uh_ul_rrr(out[2], a, b);
    __builtin_mul_uh_uh_rrr(out[3], a, b);
    __builtin_mul_sl_sl_rrr(out[4], a, b);
    __builtin_mul_sl_sh_rrr(out[5], a, b);
    __builtin_mul_sh_sl_rrr(out[6], a, b);
    __builtin_mul_sh_sh_rrr(out[7], a, b);
    __builtin_mul_sl_ul_rrr(out[8], a, b);
    __builtin_mul_sl_uh_rrr(out[9], a, b);
    __builtin_mul_sh_ul_rrr(out[10], a, b);
    __builtin_mul_sh_uh_rrr(out[11], a, b);
    return 0;
}
"""


def test_dpu_8x8_multiply_builtins(dpu_sim, tmp_path):
    """The SDK's __builtin_mul_<x>_<y>_rrr (<built_ins.h>): byte l (bits 0-7) or h (8-15) of
    each operand, signed (s) or not (u), their 16-bit product; each one DPU instruction (the
    operation mul8). Without the include they do not build, as on the SDK."""
    src = tmp_path / "mul8.c"
    src.write_text(MUL8_C.replace("#include <built_ins.h>\n", ""))
    with pytest.raises(Exception, match="undefined symbol: __builtin_mul_"):
        dpu_sim(src, nr_dpus=1, nr_tasklets=1)
    src.write_text(MUL8_C)
    sim = dpu_sim(src, nr_dpus=1, nr_tasklets=1)
    rs = np.random.default_rng(0)

    def byte(x, which, signed):
        v = (int(x) >> (8 if which == "h" else 0)) & 0xFF
        return v - 256 if signed and v >= 128 else v

    forms = ["ul_ul", "ul_uh", "uh_ul", "uh_uh", "sl_sl", "sl_sh", "sh_sl", "sh_sh", "sl_ul",
             "sl_uh", "sh_ul", "sh_uh"]
    for a, b in [(0xFFFF, 0xFFFF), (0x8080, 0x7F01)] + [tuple(rs.integers(0, 2**32, 2))
                                                        for _ in range(20)]:
        sim.write("args", np.array([a, b], np.uint32))
        sim.launch()
        got = sim.read("out", np.int32, dpu=0)
        want = [byte(a, f[1], f[0] == "s") * byte(b, f[4], f[3] == "s") for f in forms]
        assert got.tolist() == want, (hex(a), hex(b))
    blocks = sim.program.blocks
    assert sum(b[1].get("mul8", 0) for b in blocks) == 12
