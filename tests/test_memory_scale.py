"""Big datasets with bounded memory: generation straight into the file, the PIM trainer's
data preparation in one pass (no permutation, no reordered or converted copies), mapped
pages handed back once read, a simulated MRAM pool that never grows by copying, and the
peak RSS reported by ``pimrl train``."""
import contextlib
import io
import json

import numba
import numpy as np
import pytest

from conftest import random_records
from pimrl.cli import main
from pimrl.data.format import drop_mapped_pages, load_dataset, save_dataset
from pimrl.data.generate import generate_dataset, generate_to_file
from pimrl.learners import fixedpoint
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.partition import even_bounds, lane_bounds, state_lanes
from pimrl.pim import memory
from pimrl.data import format as format_module
from pimrl.swiftrl.records import check_dpu_records, dpu_record_matrix, dpu_records, rows_layout
from pimrl.swiftrl.trainer import PimTrainer

S, A = 11, 3


def skewed_records(n, seed=3):
    """Random records with a heavy state (split by action over the lanes in mode rows)."""
    recs = random_records(n, S, A, seed=seed)
    recs["state"][: n // 5] = 4
    return recs


# ------------------------------------------------------------------------------- generation
@pytest.mark.parametrize("chunk", [1, 7, 4096, 10**6])
def test_generation_into_the_file_is_byte_identical(tmp_path, chunk):
    """generate_to_file writes, chunk by chunk, the very bytes save_dataset writes for the
    array generate_dataset returns, whatever the chunk (episodes and draws cross chunks)."""
    whole = tmp_path / "whole.pimrl"
    save_dataset(whole, generate_dataset("Taxi-v3", 5003, 11), "Taxi-v3", 11, "uniform")
    chunked = tmp_path / f"chunked{chunk}.pimrl"
    generate_to_file(chunked, "Taxi-v3", 5003, 11, chunk=chunk)
    assert chunked.read_bytes() == whole.read_bytes()
    q = np.random.default_rng(0).random((16, 4))
    kw = dict(policy="epsilon-greedy:0.3", q=q, max_episode_steps=9)
    save_dataset(whole, generate_dataset("FrozenLake-v1", 777, 2, **kw), "FrozenLake-v1", 2,
                 "epsilon-greedy:0.3")
    generate_to_file(chunked, "FrozenLake-v1", 777, 2, chunk=chunk, **kw)
    assert chunked.read_bytes() == whole.read_bytes()


def test_data_generate_command_streams_into_the_file(tmp_path, capsys):
    out = tmp_path / "taxi.pimrl"
    assert main(["data", "generate", "--env", "Taxi-v3", "--n", "3000", "--seed", "4",
                 "--out", str(out)]) == 0
    assert "generated 3,000 transitions" in capsys.readouterr().err
    ref = tmp_path / "ref.pimrl"
    save_dataset(ref, generate_dataset("Taxi-v3", 3000, 4), "Taxi-v3", 4, "uniform")
    assert out.read_bytes() == ref.read_bytes()


def test_generation_names_the_chunk_record_that_fails(tmp_path):
    """A chunk failing validation names its record by its index in the whole dataset, and
    nothing is written."""
    from pimrl.data.format import DatasetError, write_dataset

    good = random_records(50, S, A)
    done = [0]

    def fill(buf):
        buf[:] = good[done[0]:done[0] + len(buf)]
        if done[0] == 30:
            buf["state"][2] = S
        done[0] += len(buf)
    with pytest.raises(DatasetError, match="record 32: field 'state'"):
        write_dataset(tmp_path / "x.pimrl", 50, fill, "Taxi-v3", 0, "uniform", n_states=S,
                      n_actions=A, chunk=10)
    assert not (tmp_path / "x.pimrl").exists()


# ----------------------------------------------------------------------- data preparation
def old_matrix(records, bounds, tasklets, params):
    """The data preparation as it was: rows_layout's reorder, the padded matrix, the
    rewards rewritten in Q format."""
    words = None
    if params.tasklet_mode == "rows":
        records, words = rows_layout(records, bounds, tasklets, S, A)
    matrix = dpu_record_matrix(records, bounds)
    if params.dtype == "int32":
        matrix = fixedpoint.records_with_fixed_rewards(matrix, params.frac_bits)
    return matrix, words


@pytest.mark.parametrize("mode", ["rows", "ring"])
@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_dpu_records_equal_the_reorder_and_copies_they_replace(mode, dtype):
    """One pass gives the matrix and lane words the reorder, the padding and the Q-format
    copy gave, uneven partitions included, on 1 and 2 threads."""
    recs = skewed_records(2003)
    p = LearnerParams(dtype=dtype, tasklet_mode=mode)
    for n_dpus, tasklets in ((7, 16), (1, 3), (5, 1)):
        bounds = even_bounds(len(recs), n_dpus)
        want, want_words = old_matrix(recs, bounds, tasklets, p)
        for threads in (1, 2):
            numba.set_num_threads(threads)
            try:
                got, words = dpu_records(recs, bounds, tasklets, S, A, p)
            finally:
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            assert got.flags.writeable and got.flags.c_contiguous
            assert got.tobytes() == want.tobytes(), (n_dpus, tasklets, threads)
            if mode == "rows":
                assert words.keys() == want_words.keys()
                for k in words:
                    assert words[k].dtype == want_words[k].dtype
                    assert np.array_equal(words[k], want_words[k]), k
            else:
                assert words is None


def rows_reference(records, params, n_dpus, tasklets):
    bounds = even_bounds(len(records), n_dpus)
    order, lanes, owner, states, lists = state_lanes(records["state"], bounds, tasklets, S,
                                                     records["action"], A)
    ordered = records[order]
    return np.stack([learn_partition(ordered, S, A, params, lanes[d],
                                     lane_ids=np.arange(d * tasklets, (d + 1) * tasklets),
                                     owners=(owner[d], states[d], lists[d])).q_raw
                     for d in range(n_dpus)])


def ring_reference(records, params, n_dpus, tasklets):
    lanes = lane_bounds(even_bounds(len(records), n_dpus), tasklets)
    return np.stack([learn_partition(records, S, A, params, lanes[d],
                                     lane_ids=np.arange(d * tasklets, (d + 1) * tasklets)).q_raw
                     for d in range(n_dpus)])


@pytest.mark.parametrize("mode", ["rows", "ring"])
@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_trainer_tables_bit_identical_from_a_mapped_file(tmp_path, monkeypatch, mode, dtype):
    """The DPUs' tables equal the reference learner's, from an in-memory array and from a
    memory-mapped dataset whose pages the preparation hands back (threshold lowered to 0),
    uneven partitions, rows and ring, FP32 and INT32."""
    recs = skewed_records(3001)
    path = tmp_path / "d.pimrl"
    save_dataset(path, recs, "Taxi-v3", 0, "uniform", n_states=S, n_actions=A)
    mapped = load_dataset(path).records
    monkeypatch.setattr(format_module, "DROP_MAPPED_BYTES", 0)
    p = LearnerParams(dtype=dtype, sampling="ran", epochs=2, seed=5, tasklet_mode=mode)
    n_dpus, tasklets = 7, 4
    expected = (rows_reference if mode == "rows" else ring_reference)(recs, p, n_dpus, tasklets)
    for data in (recs, mapped):
        tr = PimTrainer(p, n_dpus=n_dpus, tasklets=tasklets, keep_dpu_tables=True,
                        block_bytes=256).fit(data, S, A)
        assert np.array_equal(tr.dpu_tables_, expected)
    assert mapped.tobytes() == recs.tobytes()           # the pages read back unchanged


def test_checks_name_the_first_bad_record_over_threads():
    """The trainer's one-pass checks: the first record outside the table across the threads'
    ranges, then (INT32) the first reward outside Q format by its index in the data; a record
    outside the table is named before any reward."""
    assert numba.config.NUMBA_NUM_THREADS >= 2
    recs = random_records(400_000, S, A, p_terminal=0.0)
    p32 = LearnerParams(dtype="int32")
    check_dpu_records(recs, S, A, p32)
    recs["reward"][399_999], recs["reward"][210_000] = 1e9, np.inf
    with pytest.raises(ValueError, match=r"reward\[210000\]=np.float64\(inf\) does not fit"):
        check_dpu_records(recs, S, A, p32)
    check_dpu_records(recs, S, A, LearnerParams())           # FP32 takes any reward
    recs["state"][390_000], recs["action"][300_000] = S, A
    with pytest.raises(ValueError, match=r"record 300000: action=3 outside \[0, 3\)"):
        check_dpu_records(recs, S, A, p32)
    with pytest.raises(ValueError, match=r"record 300000: action=3"):
        PimTrainer(p32, n_dpus=4).fit(recs, S, A)
    sarsa = LearnerParams(algo="sarsa", next_action="logged")
    ok = random_records(100, S, A, p_terminal=0.0)
    ok["next_action"][17] = 255
    with pytest.raises(ValueError, match=r"record 17: next_action=255 is unknown"):
        check_dpu_records(ok, S, A, sarsa)


# -------------------------------------------------------------------------------- memory
def test_dropping_mapped_pages_keeps_the_bytes(tmp_path):
    recs = random_records(5000, S, A)
    path = tmp_path / "d.pimrl"
    save_dataset(path, recs, "Taxi-v3", 0, "uniform", n_states=S, n_actions=A)
    ds = load_dataset(path)
    assert drop_mapped_pages(ds.records) and drop_mapped_pages(np.asarray(ds.records)[100:])
    assert ds.records.tobytes() == recs.tobytes()
    copy = recs.copy()
    assert not drop_mapped_pages(copy) and copy.tobytes() == recs.tobytes()
    assert not drop_mapped_pages(load_dataset(path, mmap=False).records)


def test_mram_pool_is_reserved_and_never_moves(monkeypatch):
    """The pool holds a row for every page of every bank without committing them: pushes
    never move it (the shim and the C runtime keep its address); where the reservation is
    refused, the pool grows as before, with the same contents."""
    m = memory.PagedMram(3, 1 << 20)
    assert m.pool.shape[0] == 3 * 256
    start = m.pool.ctypes.data
    data = np.arange(3 * 10000, dtype=np.uint32).view(np.uint8).reshape(3, -1) % 251
    m.write(np.arange(3), 0, data)
    m.write(np.array([1]), 500_000, np.full((1, 70_000), 3, np.uint8))
    assert m.pool.ctypes.data == start and m.backed_pages == m.n_pages
    monkeypatch.setattr(memory, "reserved_zeros", lambda *a: None)
    g = memory.PagedMram(3, 1 << 20)
    g.write(np.arange(3), 0, data)
    g.write(np.array([1]), 500_000, np.full((1, 70_000), 3, np.uint8))
    for mram in (m, g):
        assert np.array_equal(mram.read(np.arange(3), 0, data.shape[1]), data)
        assert (mram.read(np.array([1]), 500_000, 70_000) == 3).all()
        assert not mram.read(np.array([0, 2]), 500_000, 70_000).any()


def test_train_reports_peak_rss(tmp_path, capsys):
    path = tmp_path / "d.pimrl"
    save_dataset(path, generate_dataset("Taxi-v3", 4000, 0), "Taxi-v3", 0, "uniform")
    args = ["train", str(path), "--backend", "pim", "--dpus", "8", "--epochs", "1", "--no-eval"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args + ["--json"]) == 0
    peak = json.loads(out.getvalue())["peak_rss_measured_bytes"]
    assert isinstance(peak, int) and peak > 10 << 20
    assert main(args) == 0
    assert "peak memory" in capsys.readouterr().out
