"""The SwiftRL DPU program built into the simulator (pimrl.rlkernel): its kernels bit for bit
against the reference learner (every variant, ring and rows tasklet modes), its faults, its
records read alike from MRAM pages and WRAM buffers, and its WRAM checks."""
import dataclasses
import itertools

import numba
import numpy as np
import pytest

from conftest import code, random_records, small_machine
from pimrl.learners.variants import all_variants
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.partition import even_bounds, lane_bounds
from pimrl.pim import system as sdk
from pimrl.learners.aggregate import float_to_raw, raw_to_float
from pimrl.pim.errors import DpuError, DpuErrorCode
from pimrl.pim.hardware import get_hardware
from pimrl.learners.variants import P_N_RECORDS, PARAMS_WORDS
from pimrl.rlkernel.costs import C
from pimrl.rlkernel import program
from pimrl.rlkernel.program import RlProgram
from pimrl.pim.system import dpu_alloc
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


def test_wram_overflow_is_a_clear_error():
    with pytest.raises(ValueError, match="WRAM overflow.*4096 x 4"):
        RlProgram(4096, 4, 16, "q", "fp32", "seq", 2048, get_hardware())


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


@pytest.mark.parametrize("algo,dtype,aggregate", [
    ("q", "fp32", "mean"), ("q", "int32", "weighted"), ("sarsa", "fp32", "weighted"),
    ("sarsa", "int32", "mean")])
def test_rows_mode_in_steps_equals_a_lane_at_a_time(monkeypatch, algo, dtype, aggregate):
    """Tasklet mode rows under SEQ without draws: the fast kernel runs the lanes in steps
    and counts each lane's work once per launch; the general kernel runs them one at a
    time and counts every update. Same tables, visits, counters and each tasklet's
    counters, bit for bit (16 tasklets: a heavy state split over lanes; lanes of unequal
    lengths; empty lanes where the data has fewer state-action pairs than tasklets)."""
    recs = RECORDS.copy()
    recs["state"][:600] = 2
    recs["terminated"][::97] = 1
    few = recs[:300].copy()                     # 2 states x 4 actions: 8 of 16 lanes run
    few["state"] %= 2
    few["next_state"] %= 2
    p = LearnerParams(algo=algo, dtype=dtype, sampling="seq", epochs=3, seed=9,
                      next_action="logged", tasklet_mode="rows")

    def fit(data):
        return PimTrainer(p, n_dpus=3, tasklets=16, keep_dpu_tables=True, block_bytes=256,
                          aggregate=aggregate).fit(data, S, A)

    stepped = [fit(data) for data in (recs, few)]
    general = program.dpu_kernel
    monkeypatch.setattr(program, "dpu_kernel",
                        lambda variant, visits, n_actions, fast: general(variant, visits,
                                                                         n_actions, False))
    for data, fast in zip((recs, few), stepped):
        slow = fit(data)
        assert np.array_equal(fast.dpu_tables_.view(np.uint32), slow.dpu_tables_.view(np.uint32))
        assert np.array_equal(fast.q_, slow.q_)
        assert np.array_equal(fast.counters_, slow.counters_)
        assert np.array_equal(fast.tasklet_counters_, slow.tasklet_counters_)
    lanes = [tr.tasklet_counters_[:, :, C["updates"]] for tr in stepped]
    assert (lanes[0].min(axis=1) < lanes[0].max(axis=1)).all() and (lanes[1] == 0).any()
    assert (stepped[0].tasklet_counters_[:, :, C["snapshot_reads"]] > 0).any()
    assert stepped[0].counters_[:, C["terminal_updates"]].sum() > 0
