"""The simulated UPMEM system (pimrl.pim): whole-rank allocation, the SDK's error codes and
transfer rules, prepared pushes, launches and faults, lazy paged memory and its reuse."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import code, random_records, small_machine
from pimrl.learners.params import LearnerParams
from pimrl.pim import system as sdk
from pimrl.pim.errors import DpuError, DpuErrorCode
from pimrl.pim.hardware import get_hardware
from pimrl.pim.system import KernelProgram, Machine, dpu_alloc
from pimrl.swiftrl.trainer import PimTrainer


def test_alloc_takes_whole_ranks_and_disables_surplus():
    m = small_machine()
    s = dpu_alloc(100, machine=m)
    assert s.nr_dpus == 100 and s.nr_ranks == 2
    assert len(s.dpu_sets()) == 100 and [r.nr_dpus for r in s.rank_sets()] == [64, 36]
    rest = dpu_alloc(sdk.DPU_ALLOCATE_ALL, machine=m)
    assert rest.nr_dpus == 62                  # the last rank, less its 2 faulty DPUs
    with pytest.raises(DpuError) as e:
        dpu_alloc(1, machine=m)
    assert code(e) == DpuErrorCode.DPU_ERR_ALLOCATION
    s.free()
    assert dpu_alloc(128, machine=m).nr_ranks == 2
    with pytest.raises(DpuError) as e:
        dpu_alloc(10, profile="backend=hw")
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_PROFILE
    with pytest.raises(DpuError) as e:
        dpu_alloc(10, profile="nonsense")
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_PROFILE
    assert sdk.dpu_alloc_ranks(1, machine=small_machine()).nr_dpus == 64


def test_error_codes_match_sdk_enum():
    assert DpuErrorCode.DPU_OK == 0
    assert DpuErrorCode.DPU_ERR_ALLOCATION == 4
    assert DpuErrorCode.DPU_ERR_INVALID_MRAM_ACCESS == 10
    assert DpuErrorCode.DPU_ERR_TRANSFER_ALREADY_SET == 13
    assert DpuErrorCode.DPU_ERR_DPU_FAULT == 23
    assert DpuErrorCode.DPU_ERR_UNKNOWN_SYMBOL == 29


def _program(name="p", kernel=None):
    return KernelProgram(name, kernel or (lambda a, s: np.full(len(s), 100.0)),
                         wram={"w": 64, "w2": 16}, mram={"m": 256}, iram={"code": 64})


def test_transfer_rules_each_named():
    s = dpu_alloc(70, machine=small_machine())
    with pytest.raises(DpuError) as e:
        s.copy_to("w", 0, np.zeros(4, np.uint8))
    assert code(e) == DpuErrorCode.DPU_ERR_NO_PROGRAM_LOADED
    dpus = s.dpu_sets()
    dpus[0].load(_program("a"))
    s.rank_sets()[1].load(_program("b"))
    with pytest.raises(DpuError) as e:                       # first check: one program
        s.copy_to("nope", 3, np.zeros(3, np.uint8))
    assert code(e) == DpuErrorCode.DPU_ERR_DIFFERENT_DPU_PROGRAMS
    s.load(_program("c"))
    cases = [
        (("nope", 3, 3), "DPU_ERR_UNKNOWN_SYMBOL"),          # before bounds and alignment
        (("m", 256, 8), "DPU_ERR_INVALID_SYMBOL_ACCESS"),    # before alignment
        (("w", 60, 8), "DPU_ERR_INVALID_SYMBOL_ACCESS"),
        (("m", 4, 8), "DPU_ERR_INVALID_MRAM_ACCESS"),
        (("m", 8, 12), "DPU_ERR_INVALID_MRAM_ACCESS"),
        (("w", 2, 4), "DPU_ERR_INVALID_WRAM_ACCESS"),
        (("w", 4, 6), "DPU_ERR_INVALID_WRAM_ACCESS"),
        (("code", 4, 8), "DPU_ERR_INVALID_IRAM_ACCESS"),
    ]
    for (sym, off, n), name in cases:
        for op in ("copy_to", "broadcast", "push"):
            with pytest.raises(DpuError) as e:
                if op == "copy_to":
                    s.copy_to(sym, off, np.zeros(n, np.uint8))
                elif op == "broadcast":
                    s.broadcast_to(sym, off, np.zeros(n, np.uint8))
                else:
                    s.prepare_xfer(np.zeros(n, np.uint8))
                    try:
                        s.push_xfer(sdk.DPU_XFER_TO_DPU, sym, off, n)
                    finally:
                        s.alloc.prepared.clear()
            assert code(e).name == name, (sym, off, n, op)
    with pytest.raises(DpuError) as e:
        s.copy_from("w", 0, 4)
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_DPU_SET
    with pytest.raises(DpuError) as e:
        s.log()
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_DPU_SET
    with pytest.raises(DpuError) as e:
        s.push_xfer(7, "w", 0, 4)
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_MEMORY_TRANSFER
    with pytest.raises(DpuError) as e:
        s.launch(5)
    assert code(e) == DpuErrorCode.DPU_ERR_INVALID_LAUNCH_POLICY


def test_prepare_push_semantics():
    s = dpu_alloc(6, machine=small_machine())
    s.load(_program())
    dpus = s.dpu_sets()
    bufs = [np.full(16, i + 1, np.uint8) for i in range(6)]
    for i in (0, 2, 5):
        dpus[i].prepare_xfer(bufs[i])
    with pytest.raises(DpuError) as e:
        dpus[2].prepare_xfer(bufs[2])
    assert code(e) == DpuErrorCode.DPU_ERR_TRANSFER_ALREADY_SET
    s.push_xfer(sdk.DPU_XFER_TO_DPU, "m", 8, 16, sdk.DPU_XFER_NO_RESET)   # kept
    s.push_xfer(sdk.DPU_XFER_TO_DPU, "m", 24, 16)                         # then cleared
    assert s.alloc.prepared == {}
    for i in range(6):
        got = dpus[i].copy_from("m", 8, 32)
        want = bufs[i].tolist() * 2 if i in (0, 2, 5) else [0] * 32         # others skipped
        assert got.tolist() == want
    outs = [np.zeros(16, np.uint8) for _ in range(6)]
    for d, o in zip(dpus, outs):
        d.prepare_xfer(o)
    s.push_xfer(sdk.DPU_XFER_FROM_DPU, "m", 24, 16)
    assert [o[0] for o in outs] == [1, 0, 3, 0, 0, 6]
    s.broadcast_to("w", 4, np.arange(8, dtype=np.uint8))
    assert all(d.copy_from("w", 4, 8).tolist() == list(range(8)) for d in dpus)
    heap = s.get_symbol(sdk.DPU_MRAM_HEAP_POINTER_NAME)
    assert heap.size == (64 << 20) - 256 and heap.address == sdk.MRAM_BASE + 256


def test_launch_async_sync_fault_and_persistence():
    def bump(alloc, slots):
        # A WRAM global keeps its value across launches; DPU 3 faults on its second launch.
        w = alloc.wram[slots, 0:4].copy().view(np.int32)
        w += 1
        alloc.wram[slots, 0:4] = w.view(np.uint8)
        faults = [(int(s), 2, "test fault") for s, v in zip(slots, w[:, 0]) if s == 3 and v == 2]
        return sdk.LaunchResult(cycles=np.full(len(slots), 350.0), faults=faults)

    s = dpu_alloc(8, machine=small_machine())
    s.load(_program(kernel=bump))
    s.launch(sdk.DPU_ASYNCHRONOUS)
    with pytest.raises(DpuError) as e:
        s.launch(sdk.DPU_SYNCHRONOUS)
    assert code(e) == DpuErrorCode.DPU_ERR_DPU_ALREADY_RUNNING
    s.sync()
    with pytest.raises(DpuError, match="DPU 3 tasklet 2: test fault") as e:
        s.launch(sdk.DPU_SYNCHRONOUS)
    assert code(e) == DpuErrorCode.DPU_ERR_DPU_FAULT
    assert s.dpu_sets()[5].copy_from("w", 0, 4).view(np.int32)[0] == 2
    hw = s.alloc.hw           # two launches, each with its latencies (boot, completion wait)
    assert s.alloc.ledger.modelled_s["dpu_kernel"] == pytest.approx(
        2 * (350 / 350e6 + hw.launch_latency_s + hw.sync_latency_s))
    s.load(_program(kernel=bump))                      # reload re-initialises WRAM globals
    assert s.dpu_sets()[5].copy_from("w", 0, 4).view(np.int32)[0] == 0


def test_memory_is_lazy_and_pages_cross_correctly():
    s = dpu_alloc(sdk.DPU_ALLOCATE_ALL, machine=Machine(get_hardware("upmem-2560")))
    assert s.nr_dpus == 2560
    s.load(_program())
    data = np.arange(2560 * 24, dtype=np.uint32).view(np.uint8).reshape(2560, -1)
    s.scatter_to(sdk.DPU_MRAM_HEAP_POINTER_NAME, 4096 - 256 - 48, data)  # straddles a page
    assert np.array_equal(s.gather_from(sdk.DPU_MRAM_HEAP_POINTER_NAME, 4096 - 256 - 48, 96), data)
    assert s.alloc.mram.bytes_allocated == 2560 * 2 * 4096          # 2 pages each, not 64 MiB
    assert s.alloc.ledger.modelled_s["cpu_dpu"] > 0 and s.alloc.ledger.modelled_s["dpu_cpu"] > 0


@pytest.mark.slow
def test_peak_memory_2560_dpus_1m_transitions_under_2gib():
    # The child's own peak (VmHWM of its address space): ru_maxrss would carry over the
    # peak of the process it was spawned from (Linux keeps it across exec).
    code_ = r"""
import numpy as np
from pimrl.envs import make
from pimrl.data import generate_dataset
from pimrl.learners.params import LearnerParams
from pimrl.swiftrl.trainer import PimTrainer
env = make("Taxi-v3")
rec = generate_dataset(env, 1_000_000, 0)
tr = PimTrainer(LearnerParams(), n_dpus=2560, tasklets=16, hardware="upmem-2560").fit(rec, 500, 6)
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(tr.n_updates_, int(hwm.split()[1]))
"""
    out = subprocess.run([sys.executable, "-c", code_], capture_output=True, text=True, check=True)
    updates, maxrss_kib = map(int, out.stdout.split())
    assert updates == 1_000_000
    assert maxrss_kib < 2 * 1024 * 1024, f"peak RSS {maxrss_kib / 1024:.0f} MiB"


def test_freed_memories_are_reused_zeroed_and_capped(monkeypatch):
    """A freed allocation's memories serve the next one of the same size, read as zeros
    again, and the spares stay under their byte cap (oldest let go first)."""
    from pimrl.pim import memory

    a = memory.reused_zeros((4, 16), np.uint8)
    a[:] = 7
    memory.release_array(a)
    b = memory.reused_zeros((4, 16), np.uint8)
    assert b is a and not b.any()
    b[:, :5] = 7                                     # its user wrote columns 0-4 only
    memory.release_array(b, written=5)
    assert not memory.reused_zeros((4, 16), np.uint8).any()

    m = memory.PagedMram.reused(2, 8192)
    m.write(np.array([0, 1]), 4000, np.full((2, 200), 9, np.uint8))     # spans two pages
    assert m.n_pages == 4
    m.release()
    m2 = memory.PagedMram.reused(2, 8192)
    assert m2 is m and m2.n_pages == 0 and not m2.page_table.any()
    assert not m2.read(np.array([0, 1]), 0, 8192).any()
    m2.write(np.array([1]), 0, np.arange(8, dtype=np.uint8))
    assert list(m2.read(np.array([0, 1]), 0, 8)[1]) == list(range(8)) and m2.n_pages == 1
    # Its page took a pool row the 9s were written to: what the write left reads as zero.
    assert not m2.read(np.array([1]), 8, 8184).any()
    m2.write(np.array([0]), 4096, np.full((1, 4096), 5, np.uint8))     # a whole stale page
    assert (m2.read(np.array([0]), 4096, 4096) == 5).all()

    monkeypatch.setattr(memory, "SPARE_BYTES", 100)
    monkeypatch.setattr(memory, "_SPARES", {})
    first, second = np.zeros(64, np.uint8), np.zeros((2, 32), np.uint8)
    memory.release_array(first)
    memory.release_array(second)                     # 128 B > 100: the oldest goes
    assert memory.reused_zeros((64,), np.uint8) is not first
    assert memory.reused_zeros((2, 32), np.uint8) is second

    # Through the SDK: a set freed hands its memories on; using it afterwards fails.
    s = dpu_alloc(4, machine=small_machine())
    wram = s.alloc.wram
    s.free()
    t = dpu_alloc(4, machine=small_machine())
    assert t.alloc.wram is wram and not wram.any()
    with pytest.raises(DpuError):
        s.copy_from("anything", 0, 8)

    # A launch says which WRAM it wrote; only that is cleared for the next allocation.
    monkeypatch.setattr(memory, "SPARE_BYTES", 1 << 30)
    monkeypatch.setattr(memory, "_SPARES", {})
    tr = PimTrainer(LearnerParams(epochs=2), n_dpus=3, tasklets=5, keep_dpu_tables=True)
    assert tr.fit(random_records(3001, 13, 4, seed=5), 13, 4).dpu_tables_.any()
    kept = [key for key in memory._SPARES if key[0] == "array"]
    assert kept
    for _, shape, dtype in kept:
        assert not memory.reused_zeros(shape, np.dtype(dtype)).any()
