"""Data larger than MRAM (pimrl/swiftrl/windows.py): each epoch streams a DPU's records
through its MRAM in windows. SEQ and STR give the tables of a run with MRAM enough, bit for
bit, in every tasklet mode and on both kernels; RAN draws within each window, checked
against a plain Python statement of that contract; each window's push is priced."""
import contextlib
import io
import json

import numpy as np
import pytest

from pimrl.cli import main
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners.params import LearnerParams
from pimrl.partition import even_bounds
from pimrl.pim.hardware import get_hardware
from pimrl.rng import below, lane_seed, xorshift32
from pimrl.swiftrl.trainer import PimTrainer
from pimrl.swiftrl.windows import fill_window, lane_geometry, plan_windows

#: 4 KiB of MRAM per DPU: 256 records, under a tenth of each DPU's 2,575 or more
SMALL_MRAM = get_hardware("upmem-2556", {"mram_bytes": 4096})


@pytest.fixture(scope="module")
def taxi():
    env = make("Taxi-v3")
    return generate_dataset(env, 10_303, 0), env.n_states, env.n_actions


def _fit(data, p, hardware="upmem-2556", **kw):
    rec, s, a = data
    kw.setdefault("n_dpus", 4)
    kw.setdefault("tasklets", 4)
    return PimTrainer(p, aggregate="sync:2", keep_dpu_tables=True, hardware=hardware,
                      **kw).fit(rec, s, a)


@pytest.mark.parametrize("algo,dtype,sampling,mode", [
    ("q", "fp32", "seq", "rows"), ("q", "fp32", "str", "rows"), ("q", "int32", "seq", "ring"),
    ("sarsa", "fp32", "str", "ring"), ("sarsa", "int32", "str", "rows"),
    ("q", "fp32", "str", "unlocked"),
])
def test_ten_times_the_mram_in_windows_is_bit_exact(taxi, algo, dtype, sampling, mode):
    p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, tasklet_mode=mode, epochs=4,
                      stride=7, next_action="epsilon-greedy" if algo == "sarsa" else "logged")
    full = _fit(taxi, p)
    streamed = _fit(taxi, p, hardware=SMALL_MRAM)
    w = streamed.windows_
    assert full.windows_ is None and w is not None
    assert w.records * 16 <= SMALL_MRAM.mram_bytes
    assert np.diff(streamed.bounds_).min() * 16 >= 10 * SMALL_MRAM.mram_bytes
    assert w.n_windows >= 10
    assert np.array_equal(full.dpu_tables_, streamed.dpu_tables_)
    assert np.array_equal(full.q_, streamed.q_)
    assert streamed.n_updates_ == full.n_updates_ and streamed.saturations_ == full.saturations_
    assert streamed.conflicts_ == full.conflicts_
    # every window's records are pushed again each epoch, and priced as CPU-DPU transfers
    cpu_dpu = streamed.timings_.modelled_s["cpu_dpu"]
    assert cpu_dpu > (p.epochs - 0.5) * full.timings_.modelled_s["cpu_dpu"]


@pytest.mark.parametrize("mode", ["ring", "rows"])
def test_any_window_size_gives_the_same_seq_tables(taxi, mode):
    p = LearnerParams(sampling="seq", tasklet_mode=mode, epochs=2)
    want = _fit(taxi, p).dpu_tables_
    for window in (16 * 4, 16 * 4 * 37, 16 * 4 * 625, 16 * 4 * 10_000):
        got = _fit(taxi, p, mram_window=window)
        assert np.array_equal(got.dpu_tables_, want), window


@pytest.mark.needs_c
@pytest.mark.parametrize("sampling,mode", [("str", "rows"), ("seq", "ring"), ("ran", "rows")])
def test_the_c_kernel_streams_as_the_simulator_does(taxi, sampling, mode):
    p = LearnerParams(sampling=sampling, tasklet_mode=mode, epochs=2, stride=5)
    rec, s, a = taxi
    small = (rec[:3000], s, a)
    numba = _fit(small, p, mram_window=16 * 4 * 50)
    c = _fit(small, p, mram_window=16 * 4 * 50, kernel="c")
    assert np.array_equal(numba.dpu_tables_, c.dpu_tables_)
    assert np.array_equal(numba.counters_, c.counters_)


def _ran_in_windows(rec, n_dpus, tasklets, epochs, steps, alpha, gamma, seed, n_states, n_actions):
    """The contract of docs/design.md for RAN in windows, written out plainly (tasklet mode
    ring, Q-learning, FP32, one round): window w holds each lane's steps [w*steps,
    (w+1)*steps); the lane draws within its slice, as many draws as the slice has records;
    the tasklets take turns, one update each."""
    f = np.float32
    tables = np.zeros((n_dpus, n_states, n_actions), np.float32)
    bounds = even_bounds(len(rec), n_dpus)
    for d in range(n_dpus):
        part = rec[bounds[d]:bounds[d + 1]]
        n = len(part)
        lens = [n // tasklets + (t < n % tasklets) for t in range(tasklets)]
        starts = np.cumsum([0] + lens[:-1])
        rng = [lane_seed(seed, d * tasklets + t) for t in range(tasklets)]
        q = tables[d]
        for _ in range(epochs):
            for i0 in range(0, max(lens), steps):
                slices = [(starts[t] + min(i0, lens[t]), max(0, min(lens[t] - i0, steps)))
                          for t in range(tasklets)]
                for i in range(max(c for _, c in slices)):
                    for t, (lo, c) in enumerate(slices):
                        if i >= c:
                            continue
                        rng[t] = int(xorshift32(np.uint32(rng[t])))
                        r = part[lo + int(below(np.uint32(rng[t]), c))]
                        s, a = r["state"], r["action"]
                        if r["terminated"]:
                            target = f(r["reward"])
                        else:
                            target = f(f(r["reward"]) + f(f(gamma) * q[r["next_state"]].max()))
                        q[s, a] = f(q[s, a] + f(f(alpha) * f(target - q[s, a])))
    return tables


def test_ran_draws_within_each_window(taxi):
    rec, s, a = taxi
    rec = rec[:2001]
    p = LearnerParams(sampling="ran", tasklet_mode="ring", epochs=2, seed=3)
    for steps in (7, 50, 1000):
        got = PimTrainer(p, n_dpus=3, tasklets=4, keep_dpu_tables=True,
                         mram_window=16 * 4 * steps).fit(rec, s, a)
        want = _ran_in_windows(rec, 3, 4, 2, steps, p.alpha, p.gamma, p.seed, s, a)
        assert np.array_equal(got.dpu_tables_, want), steps
    # one window holding the whole partition is the unwindowed run
    whole = PimTrainer(p, n_dpus=3, tasklets=4, keep_dpu_tables=True).fit(rec, s, a)
    assert np.array_equal(whole.dpu_tables_, want)


def test_str_windows_follow_the_stride_order():
    # one DPU, one lane of 11 records, stride 4: 0 4 8 1 5 9 2 6 10 3 7
    rec = np.zeros((1, 11), [("v", "<i4", (4,))])
    rec["v"][0, :, 0] = np.arange(11)
    start, length = lane_geometry(np.array([11]), 1, None)
    plan = plan_windows(np.array([11]), 1, 16 * 3, 1 << 20, 16, None, "str", 4)
    assert plan.n_windows == 4 and plan.records == 3
    seen = []
    out = np.empty((1, plan.records), rec.dtype)
    for w in range(plan.n_windows):
        out, bounds = fill_window(plan, rec.ravel(), np.zeros(1, np.int64), w, out)
        seen += list(out["v"][0, : bounds[0, -1], 0])
    assert seen == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7]


def _cli(args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue()


def test_cli_streams_past_the_mram_and_plans_it(capsys):
    base = ["train", "--env", "Taxi-v3", "--transitions", "40000", "--backend", "pim",
            "--dpus", "4", "--tasklets", "16", "--epochs", "2", "--no-eval"]
    rc, out = _cli(base + ["--hw", "mram_bytes=16384", "--json"])
    assert rc == 0
    got = json.loads(out)
    run, plan = got["runs"][0], got["memory_plan"]
    assert run["windows"]["windows_per_epoch"] == 10 and run["windows"]["window_bytes"] == 16384
    assert plan["streams"] and plan["mram_bytes_per_dpu"] == 16384
    assert plan["windows"]["windows_per_epoch"] <= 10
    rc, full = _cli(base + ["--json"])
    assert rc == 0 and not json.loads(full)["memory_plan"]["streams"]
    rc, text = _cli(base + ["--mram-window", "4K"])
    assert rc == 0 and "records streamed through each DPU's MRAM: 40 windows per epoch" in text
    assert "records streamed in windows" in text


@pytest.mark.parametrize("extra,needle", [
    (["--mram-window", "8"], "fewer than one record for each of the 16 tasklets"),
    (["--mram-window", "1G"], "exceeds a DPU's 67108864 B MRAM"),
    (["--mram-window", "64K", "--aggregate", "own:2"], "own:R keeps each DPU's records"),
    (["--mram-window", "64K", "--backend", "cpu"], "--mram-window only applies to --backend pim"),
])
def test_bad_windows_are_refused_in_one_line(capsys, extra, needle):
    args = ["train", "--env", "Taxi-v3", "--transitions", "4000", "--backend", "pim",
            "--dpus", "4", "--no-eval", *extra]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_a_mapped_file_streams_in_place(tmp_path, monkeypatch, taxi):
    """Outside tasklet mode rows the windows are read from the dataset's mapping itself (no
    push buffer), its pages handed back window by window (a large file's SEQ and RAN
    windows are read with pread instead, lane slice by lane slice): the tables of a run with
    MRAM enough, and the file's bytes unchanged."""
    from pimrl.data import format as format_module
    from pimrl.data.format import load_dataset, save_dataset

    rec, s, a = taxi
    path = tmp_path / "taxi.pimrl"
    save_dataset(path, rec, "Taxi-v3", 0, "uniform", n_states=s, n_actions=a)
    mapped = load_dataset(path).records
    monkeypatch.setattr(format_module, "DROP_MAPPED_BYTES", 0)
    from pimrl.swiftrl import windows

    reads, read = [], windows.FileSlices.read
    monkeypatch.setattr(windows.FileSlices, "read",
                        lambda self, *a: reads.append(a[2]) or read(self, *a))
    for dtype, sampling in (("int32", "str"), ("fp32", "ran"), ("int32", "seq")):
        p = LearnerParams(dtype=dtype, sampling=sampling, tasklet_mode="ring", epochs=2)
        want = _fit(taxi, p, mram_window=4096)
        got = _fit((mapped, s, a), p, mram_window=4096)
        assert np.array_equal(got.dpu_tables_, want.dpu_tables_)
        assert np.array_equal(got.timings_.modelled_s["cpu_dpu"], want.timings_.modelled_s["cpu_dpu"])
    assert mapped.tobytes() == rec.tobytes()
    assert len(reads) == 2 * 2 * 11                     # SEQ and RAN: 2 epochs x 11 windows
