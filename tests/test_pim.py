"""The simulated UPMEM system: bit-exact kernels, SDK transfer rules, memory, aggregation."""
import dataclasses
import itertools
import json
import subprocess
import sys

import numba
import numpy as np
import pytest

from conftest import random_records
from pimrl.learners.variants import all_variants
from pimrl.cli import main
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.partition import even_bounds, lane_bounds
from pimrl.pim import system as sdk
from pimrl.learners.aggregate import float_to_raw, raw_to_float
from pimrl.pim.errors import DpuError, DpuErrorCode
from pimrl.pim.hardware import get_hardware
from pimrl.learners.variants import P_N_RECORDS, PARAMS_WORDS
from pimrl.rlkernel.costs import C
from pimrl.rlkernel.program import RlProgram
from pimrl.pim.system import KernelProgram, Machine, dpu_alloc
from pimrl.swiftrl.trainer import PimTrainer

# The twelve algo x dtype x sampling variants, from the registry.
VARIANTS = [(v.algo, v.dtype, v.sampling) for v in all_variants()]
S, A = 13, 4
RECORDS = random_records(3001, S, A, seed=5)


def reference_tables(params, n_dpus, tasklets, records=RECORDS):
    lanes = lane_bounds(even_bounds(len(records), n_dpus), tasklets)
    return np.stack([learn_partition(records, S, A, params, lanes[d],
                                     lane_ids=np.arange(d * tasklets, (d + 1) * tasklets)).q_raw
                     for d in range(n_dpus)])


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_kernels_bit_exact_with_reference(algo, dtype, sampling):
    """All twelve variants, 1, 2 and 64 DPUs, 1 and 16 tasklets, 1 and 2 numba threads."""
    assert numba.config.NUMBA_NUM_THREADS >= 2
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=2, stride=3, seed=9,
                      next_action="epsilon-greedy" if algo == "sarsa" else "logged", epsilon=0.2)
    for n_dpus, tasklets in itertools.product([1, 2, 64], [1, 16]):
        expected = reference_tables(p, n_dpus, tasklets)
        for threads in (1, 2):
            numba.set_num_threads(threads)
            try:
                tr = PimTrainer(p, n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True,
                                block_bytes=256).fit(RECORDS, S, A)
            finally:
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            assert np.array_equal(tr.dpu_tables_, expected), (n_dpus, tasklets, threads)
            assert np.allclose(tr.q_, raw_to_float(expected, dtype, 16).mean(axis=0))


def test_sarsa_logged_and_large_block_bit_exact():
    p = LearnerParams(algo="sarsa", sampling="str", stride=200, epochs=2)
    tr = PimTrainer(p, n_dpus=3, tasklets=5, keep_dpu_tables=True).fit(RECORDS, S, A)
    assert np.array_equal(tr.dpu_tables_, reference_tables(p, 3, 5))


def test_sync_rounds_equal_host_replica():
    """sync:R: after each round the mean is broadcast back; the lanes' streams continue."""
    p = LearnerParams(algo="q", dtype="int32", sampling="ran", epochs=5, seed=2)
    D, T, R = 4, 3, 3
    tr = PimTrainer(p, n_dpus=D, tasklets=T, aggregate=f"sync:{R}").fit(RECORDS, S, A)
    lanes = lane_bounds(even_bounds(len(RECORDS), D), T)
    from pimrl.rng import lane_seeds

    rng = [lane_seeds(p.seed, np.arange(d * T, (d + 1) * T)) for d in range(D)]
    q_init = [None] * D
    for epochs in np.diff(even_bounds(p.epochs, R)):
        pr = LearnerParams(**{**p.as_dict(), "epochs": int(epochs)})
        res = [learn_partition(RECORDS, S, A, pr, lanes[d], rng=rng[d], q_init=q_init[d]) for d in range(D)]
        rng = [r.rng for r in res]
        mean = raw_to_float(np.stack([r.q_raw for r in res]), "int32", 16).mean(axis=0)
        q_init = [float_to_raw(mean, "int32", 16)] * D
    assert np.array_equal(tr.q_, mean)
    assert tr.timings_.modelled_s["inter_dpu"] > 0


def test_weighted_aggregate_uses_visit_counts():
    p = LearnerParams(epochs=2)
    D = 5
    tr = PimTrainer(p, n_dpus=D, tasklets=2, aggregate="weighted", keep_dpu_tables=True).fit(RECORDS, S, A)
    b = even_bounds(len(RECORDS), D)
    visits = np.stack([np.bincount(RECORDS["state"][b[d]:b[d + 1]].astype(np.int64) * A
                                   + RECORDS["action"][b[d]:b[d + 1]], minlength=S * A).reshape(S, A) * 2
                       for d in range(D)]).astype(float)
    q = tr.dpu_tables_.astype(float)
    expected = np.where(visits.sum(0) > 0, (visits * q).sum(0) / np.maximum(visits.sum(0), 1), q.mean(0))
    assert np.allclose(tr.q_, expected)


def test_mean_aggregate_is_numpys_mean_bit_for_bit():
    """The compiled mean adds the tables in DPU order, as numpy's mean over axis 0 does: the
    same bits for float32 tables of every magnitude (where the order of the sums shows),
    NaN and infinities included, and for Q-format int32 ones."""
    from pimrl.learners.aggregate import mean_tables

    rng = np.random.default_rng(3)
    wide = rng.standard_normal((300, 17, 5)) * np.exp(rng.uniform(-30, 30, (300, 17, 5)))
    tables = wide.astype(np.float32)
    tables[7, 2, 1], tables[9, 4, 0], tables[11, 4, 0] = np.nan, np.inf, -np.inf
    fixed = rng.integers(-2**31, 2**31, (300, 17, 5)).astype(np.int32)
    with np.errstate(invalid="ignore"):              # inf + -inf is a NaN
        for raw, scale in ((tables, 1.0), (fixed, 2.0 ** -16), (tables[:1], 1.0)):
            expected = raw.mean(axis=0, dtype=np.float64) * scale
            assert np.array_equal(mean_tables(raw, scale), expected, equal_nan=True)
        assert not np.array_equal(tables.astype(np.float64).sum(0), np.sort(tables, 0).astype(
            np.float64).sum(0), equal_nan=True)      # the order shows in these tables


def test_remainder_spread_and_shuffle_seeded():
    p = LearnerParams()
    tr = PimTrainer(p, n_dpus=7).fit(RECORDS, S, A)
    sizes = np.diff(tr.bounds_)
    assert sizes.sum() == len(RECORDS) and sizes.max() - sizes.min() == 1
    a = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=4).fit(RECORDS, S, A).q_
    b = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=4).fit(RECORDS, S, A).q_
    c = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=5).fit(RECORDS, S, A).q_
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_wram_overflow_is_a_clear_error():
    with pytest.raises(ValueError, match="WRAM overflow.*4096 x 4"):
        RlProgram(4096, 4, 16, "q", "fp32", "seq", 2048, get_hardware())


# ----------------------------------------------------------------------------- SDK rules
def code(exc_info):
    return exc_info.value.code


def small_machine(**over):
    return Machine(get_hardware("upmem-2556", {"n_ranks": 3, "n_faulty_dpus": 2, **over}))


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


def test_train_pim_cli_json_and_scaling_text(capsys, tmp_path):
    q = tmp_path / "q.npy"
    assert main(["train", "--env", "Taxi-v3", "--transitions", "50000", "--backend", "pim",
                 "--dpus", "125", "--tasklets", "11", "--dtype", "int32", "--sampling", "str",
                 "--json", "--save-q", str(q)]) == 0
    out = json.loads(capsys.readouterr().out)
    run = out["runs"][0]
    assert set(run["modelled_s"]) == {"cpu_dpu", "dpu_kernel", "inter_dpu", "dpu_cpu"}
    assert run["modelled_s"]["dpu_kernel"] > 0 and "host_aggregation" in run["measured_s"]
    assert np.load(q).shape == (500, 6)
    assert main(["train", "--env", "Taxi-v3", "--transitions", "50000", "--backend", "pim",
                 "--dpus", "125,250,500"]) == 0
    text = capsys.readouterr().out
    assert "modelled" in text and "measured" in text and "efficiency" in text
    assert "Parallel efficiency of the total" in text
    assert main(["train", "--env", "Taxi-v3", "--transitions", "100", "--backend", "pim",
                 "--dpus", "10", "--hw", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err


def test_sync_weighted_rounds_equal_host_replica():
    """sync:R:weighted weights each round by that round's updates (SEQ: known counts)."""
    p = LearnerParams(epochs=4)
    D, R = 3, 2
    tr = PimTrainer(p, n_dpus=D, tasklets=1, aggregate=f"sync:{R}:weighted").fit(RECORDS, S, A)
    b = even_bounds(len(RECORDS), D)
    counts = np.stack([np.bincount(RECORDS["state"][b[d]:b[d + 1]].astype(np.int64) * A
                                   + RECORDS["action"][b[d]:b[d + 1]], minlength=S * A).reshape(S, A)
                       for d in range(D)]).astype(float)
    q_init = None
    for _ in range(R):                   # SEQ draws no random numbers: no streams to carry
        pr = LearnerParams(epochs=2)
        res = [learn_partition(RECORDS, S, A, pr, np.array([[b[d], b[d + 1]]]), q_init=q_init)
               for d in range(D)]
        q = np.stack([r.q_raw for r in res]).astype(float)
        w = counts * 2
        agg = np.where(w.sum(0) > 0, (w * q).sum(0) / np.maximum(w.sum(0), 1), q.mean(0))
        q_init = agg.astype(np.float32)
    assert np.allclose(tr.q_, agg, rtol=0, atol=1e-12)
    from pimrl.learners.aggregate import parse_aggregate

    assert parse_aggregate("sync:3:weighted").label == "sync:3:weighted"
    with pytest.raises(ValueError, match="sync:R:weighted"):
        parse_aggregate("sync:0")


def test_kernel_faults_on_bad_records_and_parameters():
    """The kernel trusts nothing a host program wrote: bad records or parameters fault the
    DPU with a report instead of corrupting memory."""
    from pimrl.learners.variants import PARAMS_WORDS, P_N_RECORDS

    p = LearnerParams()
    prog = RlProgram(S, A, 2, "q", "fp32", "seq", 256, get_hardware())
    s = dpu_alloc(3, machine=small_machine())
    s.load(prog)
    recs = RECORDS[:32].copy()
    recs["next_state"][5] = S + 100                      # out of the table
    s.scatter_to(sdk.DPU_MRAM_HEAP_POINTER_NAME, 0, np.stack([recs.view(np.uint8)] * 3))
    params = np.zeros((3, PARAMS_WORDS), np.int64)
    params[:, :len(p.kernel_scalars())] = p.kernel_scalars()
    params[:, P_N_RECORDS] = [32, 5, 10**9]             # DPU 1 stops before the bad record
    s.scatter_to("params", 0, params.view(np.uint8).reshape(3, -1))
    with pytest.raises(DpuError) as e:
        s.launch()
    assert code(e) == DpuErrorCode.DPU_ERR_DPU_FAULT
    msg = str(e.value)
    assert "DPU 0 tasklet" in msg and "record 5" in msg and "and 1 more" in msg


@pytest.mark.parametrize("variant", ["q-fp32-seq", "sarsa-int32-str", "q-int32-ran"])
def test_kernel_reads_records_alike_from_mram_pages_and_wram_buffers(variant):
    """Records whose MRAM pages all exist are read where they lie; a DPU with a page never
    written (it reads as zeros) copies each DMA into its WRAM buffers instead. Both ways learn
    the same table, streams and counters, bit for bit."""
    from pimrl.learners.variants import parse_variant
    from pimrl.learners.variants import PARAMS_WORDS, P_N_RECORDS

    v = parse_variant(variant)
    p = LearnerParams(**v, epochs=2)
    prog = RlProgram(S, A, 3, v["algo"], v["dtype"], v["sampling"], 256, get_hardware())
    s = dpu_alloc(2, machine=small_machine())
    s.load(prog)
    recs = RECORDS[:200].copy()
    if v["dtype"] == "int32":
        recs["reward"] = float_to_raw(recs["reward"], "int32", p.frac_bits).view(np.float32)
    n = 300                                  # 4,800 B: past the first 4 KiB page
    padded = np.zeros(n, recs.dtype)
    padded[:len(recs)] = recs
    data = np.zeros((2, n * 16), np.uint8)
    data[:] = padded.view(np.uint8)
    d0, d1 = s.dpu_sets()
    heap = sdk.DPU_MRAM_HEAP_POINTER_NAME
    # Pages of other bytes come first in the page pool: reading the wrong pool row cannot go
    # unnoticed. DPU 0's records go in one transfer (read in place); DPU 1's second page is
    # never written (it copies each DMA).
    d0.scatter_to(heap, 5 * 4096, np.full((1, 4096), 0x5A, np.uint8))
    d1.scatter_to(heap, 0, data[1:, :4096])
    d0.scatter_to(heap, 0, data[:1])
    params = np.zeros((2, PARAMS_WORDS), np.int64)
    params[:, :len(p.kernel_scalars())] = p.kernel_scalars()
    params[:, P_N_RECORDS] = n
    s.scatter_to("params", 0, params.view(np.uint8).reshape(2, -1))
    s.broadcast_to("rng_state", 0, np.array([7, 8, 9], np.uint32).view(np.uint8))
    s.launch()
    for sym in ("q_table", "rng_state", "stats"):
        out = s.gather_from(sym, 0, prog.symbols[sym].size)
        assert np.array_equal(out[0], out[1]), sym
    assert s.gather_from("stats", 0, prog.symbols["stats"].size).view(np.int64)[0, 0] == 2 * n
    # DPU 1 wrote its DMA buffers, and its launch said so: the next allocation of this size
    # gets the memory back all zero.
    wram = s.alloc.wram
    s.free()
    t = dpu_alloc(2, machine=small_machine())
    assert t.alloc.wram is wram and not wram.any()


def test_operation_overrides_reach_the_kernel_time(capsys):
    """--hw op_<name>=N reaches the DPUs' cost (the what-if of the README's tour): an 8x8
    multiply at two instructions slows the INT32 kernel, and nothing else."""
    args = ["train", "--env", "Taxi-v3", "--transitions", "20000", "--backend", "pim",
            "--dpus", "8", "--dtype", "int32", "--no-eval", "--json"]
    times = []
    for extra in ([], ["--hw", "op_mul8=2"]):
        assert main(args + extra) == 0
        times.append(json.loads(capsys.readouterr().out)["runs"][0]["modelled_s"])
    assert times[1]["dpu_kernel"] > times[0]["dpu_kernel"] * 1.05
    assert times[1]["cpu_dpu"] == times[0]["cpu_dpu"]


@pytest.mark.parametrize("override,message", [
    ("n_ranks=abc", "n_ranks='abc' must be an integer"),
    ("n_ranks=1.5", "must be an integer"),
    ("dma_beta=-1", "dma_beta=-1 must be positive"),
    ("xfer_sizes=3", "xfer_sizes=3 must be a tuple"),
    ("op_int64_mul=x", "op_int64_mul='x' must be a number"),
    ("nonsense=1", "unknown hardware parameter 'nonsense'"),
])
def test_bad_hardware_overrides_are_clear_errors(capsys, override, message):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "200", "--backend", "pim",
                 "--dpus", "2", "--hw", override, "--no-eval"]) == 2
    assert message in capsys.readouterr().err


def test_more_dpus_than_the_machine_has(capsys):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "5000", "--backend", "pim",
                 "--dpus", "3000", "--no-eval"]) == 2
    assert "upmem-2556 has 2556 functional DPUs" in capsys.readouterr().err
    assert get_hardware("upmem-2556", {"n_ranks": 64.0}).n_ranks == 64


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
    assert tr.fit(RECORDS, S, A).dpu_tables_.any()
    kept = [key for key in memory._SPARES if key[0] == "array"]
    assert kept
    for _, shape, dtype in kept:
        assert not memory.reused_zeros(shape, np.dtype(dtype)).any()


# ----------------------------------------------------------------------------- tasklet modes
def rows_reference(params, n_dpus, tasklets, records=RECORDS):
    """Tasklet mode rows by the reference learner: each DPU's records grouped by state
    (pimrl.partition.state_lanes) and its lanes learned with their owners."""
    from pimrl.partition import state_lanes

    bounds = even_bounds(len(records), n_dpus)
    order, lanes, owner, states, lists = state_lanes(records["state"], bounds, tasklets, S,
                                                     records["action"], A)
    ordered = records[order]
    return np.stack([learn_partition(ordered, S, A, params, lanes[d],
                                     lane_ids=np.arange(d * tasklets, (d + 1) * tasklets),
                                     owners=(owner[d], states[d], lists[d])).q_raw
                     for d in range(n_dpus)])


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_rows_mode_bit_exact_with_reference(algo, dtype, sampling):
    """Tasklet mode rows, all twelve variants: the DPU kernel equals the reference for 1, 3
    and 16 tasklets (a heavy state split over lanes among them), 1 and 2 numba threads, and
    differs from the ring's table (the modes are not one order)."""
    recs = RECORDS.copy()
    recs["state"][:600] = 2                      # a heavy state: split by action over lanes
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=2, stride=3, seed=9,
                      next_action="epsilon-greedy" if algo == "sarsa" else "logged",
                      epsilon=0.2, tasklet_mode="rows")
    for n_dpus, tasklets in ((1, 16), (3, 3), (2, 1)):
        expected = rows_reference(p, n_dpus, tasklets, recs)
        for threads in (1, 2):
            numba.set_num_threads(threads)
            try:
                tr = PimTrainer(p, n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True,
                                block_bytes=256).fit(recs, S, A)
            finally:
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            assert np.array_equal(tr.dpu_tables_, expected), (n_dpus, tasklets, threads)
            c = tr.counters_
            assert (c[:, C["snapshot_rows"]] > 0).all() and (c[:, C["conflicts"]] == 0).all()
            if tasklets > 1:
                assert (c[:, C["snapshot_reads"]] > 0).all()
            if tasklets == 1:                        # one lane: the ring's order
                ring = PimTrainer(dataclasses.replace(p, tasklet_mode="ring"), n_dpus=n_dpus,
                                  tasklets=1, keep_dpu_tables=True).fit(recs, S, A)
                assert np.array_equal(ring.dpu_tables_, tr.dpu_tables_)
        if tasklets == 16:
            ring = reference_tables(dataclasses.replace(p, tasklet_mode="ring"), n_dpus, 16, recs)
            assert not np.array_equal(ring, expected)


@pytest.mark.parametrize("variant", ["q-int32-seq", "sarsa-fp32-ran"])
def test_unlocked_mode_is_the_rings_table_with_its_conflicts_counted(variant):
    """Tasklet mode unlocked computes the ring's table bit for bit, prices every tasklet at
    once (below the ring's kernel time) and counts two tasklets' updates of one entry at one
    round-robin step (known answer: every lane holds the same record)."""
    algo, dtype, sampling = variant.split("-")
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=2, seed=4)
    ring = PimTrainer(p, n_dpus=2, tasklets=16, keep_dpu_tables=True).fit(RECORDS, S, A)
    unl = PimTrainer(dataclasses.replace(p, tasklet_mode="unlocked"), n_dpus=2, tasklets=16,
                     keep_dpu_tables=True).fit(RECORDS, S, A)
    assert np.array_equal(unl.dpu_tables_, ring.dpu_tables_)
    assert unl.timings_.modelled_s["dpu_kernel"] < 0.2 * ring.timings_.modelled_s["dpu_kernel"]
    assert unl.conflicts_ > 0 and ring.conflicts_ == 0
    # Every record alike: at each step all 4 lanes update one entry, 3 of them conflict.
    same = np.repeat(RECORDS[:1], 64)
    seq = LearnerParams(tasklet_mode="unlocked", epochs=3)
    tr = PimTrainer(seq, n_dpus=1, tasklets=4).fit(same, S, A)
    assert tr.conflicts_ == 3 * (64 // 4) * 3


def test_tasklet_mode_wram_and_lane_checks():
    """An impossible mode for the table and the tasklets is refused in one line naming what
    fits; bad lane words from a host fault the DPU, naming the words."""
    hw = get_hardware()
    with pytest.raises(ValueError, match=r"WRAM overflow: .*snapshot.*--tasklets \d+"):
        RlProgram(500, 6, 16, "sarsa", "fp32", "seq", 2048, hw, count_visits=True,
                  tasklet_mode="rows")
    # the trainer's default block fits the buffers beside the globals
    p = LearnerParams(algo="sarsa", tasklet_mode="rows", epochs=1)
    recs = random_records(4000, 500, 6, seed=2)
    tr = PimTrainer(p, n_dpus=2, tasklets=16, aggregate="weighted").fit(recs, 500, 6)
    assert tr.block_ < 2048 and tr.block_ % 16 == 0
    prog = RlProgram(S, A, 4, "q", "fp32", "seq", 256, hw, tasklet_mode="rows")
    s = dpu_alloc(1, machine=small_machine())
    s.load(prog)
    params = np.zeros((1, PARAMS_WORDS), np.int64)
    params[0, :len(LearnerParams().kernel_scalars())] = LearnerParams(
        tasklet_mode="rows").kernel_scalars()
    params[0, P_N_RECORDS] = 32
    s.scatter_to(sdk.DPU_MRAM_HEAP_POINTER_NAME, 0, RECORDS[:32].view(np.uint8)[None])
    s.scatter_to("params", 0, params.view(np.uint8))
    s.broadcast_to("lane_bounds", 0, np.array([0, 10, 20, 30, 40, 0, 0, 0, 0, 0], np.int32))
    with pytest.raises(DpuError, match="lane_bounds' record ranges"):
        s.launch()
    s.free()


def test_tasklet_mode_cli(capsys):
    """--tasklet-mode on pimrl train: its JSON names the mode, the block and, unlocked, the
    conflicts; online refuses the modes it does not run, in one line."""
    base = ["train", "--env", "CliffWalking-v1", "--transitions", "3000", "--backend", "pim",
            "--dpus", "3", "--tasklets", "4", "--epochs", "2", "--json", "--no-eval"]
    for mode in ("rows", "unlocked", None):
        assert main(base + (["--tasklet-mode", mode] if mode else [])) == 0
        run = json.loads(capsys.readouterr().out)["runs"][0]
        assert run["tasklet_mode"] == (mode or "rows") and run["block_bytes"] == 2048
        assert (run["conflicts"] is not None) == (mode == "unlocked")
    assert main(["train", "--env", "CliffWalking-v1", "--online", "--steps", "100", "--dpus",
                 "2", "--tasklet-mode", "rows"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "ring order" in err
    assert main(["train", "--env", "CliffWalking-v1", "--transitions", "1000",
                 "--tasklet-mode", "rows"]) == 2
    assert "only applies to --backend pim" in capsys.readouterr().err
