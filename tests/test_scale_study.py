"""The data-size study (experiments/scale.toml) at test scale: a sweep over several dataset
sizes, the plain-C loop and the CPU's time to quality beside PIM, the report and its
crossover, and results files written before those columns existed."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from pimrl.baselines.cpu import cpu_baseline, cpu_time_to_quality
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.experiments import datasize
from pimrl.experiments.config import ConfigError, expand_runs, load_config
from pimrl.experiments.plots import plot_results
from pimrl.experiments.quality import round_evaluator
from pimrl.experiments.runner import YOUNGER_COLUMNS, load_results, read_results, run_scale
from pimrl.learners.params import LearnerParams

ROOT = Path(__file__).resolve().parents[1]
HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None

SIZES = """
[study]
name = "sizes"
seed = 2

[learner]
epochs = 3

[baselines]
cpu_threads = "all"
gpu = false
c_loop = {c_loop}
cpu_quality = true

[[sweep]]
name = "data"
kind = "strong"
envs = ["Taxi-v3"]
transitions = [3000, 12000]
dpus = [4]
variants = ["q-fp32-seq", "q-int32-ran"]
tasklets = [4]
aggregators = ["mean", "own:3"]
"""


@pytest.fixture()
def sizes_config(tmp_path):
    p = tmp_path / "sizes.toml"
    p.write_text(SIZES.format(c_loop="true" if HAS_CC else "false"))
    return p


def test_a_list_of_sizes_expands_into_rows_per_size(sizes_config):
    runs = expand_runs(load_config(sizes_config))
    assert len(runs) == 2 * 2 * 2
    assert sorted({r["n_transitions"] for r in runs}) == [3000, 12000]
    # weak sweeps keep one size per DPU
    text = sizes_config.read_text().replace('kind = "strong"', 'kind = "weak"').replace(
        "transitions = [3000, 12000]", "transitions_per_dpu = [300, 600]")
    sizes_config.write_text(text)
    with pytest.raises(ConfigError, match="transitions_per_dpu"):
        load_config(sizes_config)


def test_cpu_quality_needs_one_repeat(sizes_config):
    sizes_config.write_text(sizes_config.read_text().replace("cpu_quality = true",
                                                             "cpu_quality = true\ncpu_repeats = 3"))
    with pytest.raises(ConfigError, match="cpu_repeats = 1"):
        load_config(sizes_config)


@pytest.mark.parametrize("variant", [dict(dtype="fp32", sampling="ran"),
                                     dict(dtype="int32", sampling="seq")])
def test_cpu_run_epoch_by_epoch_equals_the_whole_run(variant):
    """Carrying the tables and the streams from one single-pass call to the next gives the
    tables of one call over all passes, bit for bit; each epoch is evaluated."""
    env = make("Taxi-v3")
    rec = generate_dataset(env, 20_000, seed=4)
    p = LearnerParams(epochs=5, **variant)
    whole = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=2, partitions=2)
    calls = []

    def evaluate(epoch, q, ledger):       # the on_round contract: (round, q, ledger)
        assert epoch == len(calls) and ledger is None
        calls.append(q.copy())
        return {"mean_return": float(len(calls)), "success_rate": 0.0, "reached": len(calls) == 3}

    res = cpu_time_to_quality(rec, env.n_states, env.n_actions, p, evaluate, threads=2)
    assert np.array_equal(res["q"], whole.q)
    assert len(calls) == 5 and len(res["curve"]) == 5
    assert res["quality_epoch"] == 3
    times = [e["measured_s"] for e in res["curve"]]
    assert times == sorted(times) and res["time_to_quality_measured_s"] == times[2]
    assert res["seconds"] == times[-1]


def test_cpu_run_reaches_the_optimum_on_enough_data():
    """Taxi, 200k uniformly random transitions: the one-table learner's greedy policy is
    optimal (7.93) from its fourth pass on."""
    env = make("Taxi-v3")
    rec = generate_dataset(env, 200_000, seed=0)
    res = cpu_time_to_quality(rec, env.n_states, env.n_actions, LearnerParams(epochs=6),
                              round_evaluator(env, 0.95))
    assert res["quality_epoch"] == 4
    assert [e["reached"] for e in res["curve"]] == [False] * 3 + [True] * 3
    assert res["curve"][-1]["mean_return"] == pytest.approx(7.93, abs=0.01)


def test_the_data_size_sweep_report(sizes_config, tmp_path):
    out = tmp_path / "out"
    report = run_scale(sizes_config, out, progress=False)
    assert report.failed_rows == [] and report.computed_rows == 8
    rows = read_results(out / "results.csv")
    for r in rows:
        assert int(r["peak_rss_measured_bytes"]) > 0
        assert float(r["cpu_1t_updates_per_s_measured"]) > 0
        if HAS_CC:
            assert float(r["cpu_c_mt_updates_per_s_measured"]) > 0
        epoch = r["cpu_1t_quality_epoch"]
        assert (epoch == "") == (r["cpu_1t_time_to_quality_measured_s"] == "")
        # the CPU stops at the optimum: its passes end there, or run out
        assert int(r["cpu_1t_epochs_run"]) == (int(epoch) if epoch else 3)
        # energy: PIM's modelled, the part up to the optimum no more than the whole; the
        # CPU's package power times its measured time (RAPL unread), the same power at 1
        # and N threads and up to the optimum
        total = float(r["pim_energy_modelled_j"])
        assert total > 0
        assert (r["pim_energy_to_quality_modelled_j"] == "") == (r["quality_round"] == "")
        if r["quality_round"]:
            assert 0 < float(r["pim_energy_to_quality_modelled_j"]) <= total
        if not r["cpu_mt_energy_measured_j"]:
            watts = float(r["cpu_1t_energy_modelled_j"]) / float(r["cpu_1t_measured_s"])
            assert float(r["cpu_mt_energy_modelled_j"]) == pytest.approx(
                watts * float(r["cpu_mt_measured_s"]))
            ttq = r["cpu_mt_time_to_quality_measured_s"]
            assert (r["cpu_mt_energy_to_quality_modelled_j"] == "") == (ttq == "")
            if ttq:
                assert float(r["cpu_mt_energy_to_quality_modelled_j"]) == pytest.approx(
                    watts * float(ttq))
    written = plot_results(out)
    names = {Path(p).name for p in written}
    assert {"throughput_data.png", "time_to_quality_data.png", "scale_data.md"} <= names
    # only the data-size report: the per-size figures would mix sizes
    assert not any(n.startswith("scaling_") for n in names)
    text = (out / "scale_data.md").read_text()
    assert "PIM 4 DPUs, mean" in text and "PIM 4 DPUs, own:3" in text
    assert "CPU numba 1T" in text and ("CPU C 1T" in text) == HAS_CC
    assert text.count("| q-int32-ran |") == 6          # two sizes, three tables
    assert "Energy (PIM **modelled**" in text and "(J/M)" in text
    # the crossover follows from the rows: recompute it from the numbers
    rows, _ = load_results(out / "results.csv")
    cross = datasize.crossover(rows)
    for v in ("q-fp32-seq", "q-int32-ran"):
        big = [r for r in rows if r["variant"] == v and r["n_transitions"] == "12000"]
        pim = max(float(r["pim_updates_per_s_modelled"]) for r in big)
        cpu = max(float(big[0][c]) for c in big[0] if c.endswith("updates_per_s_measured")
                  and big[0][c])
        assert cross[v]["ratio_at_largest"] == pytest.approx(pim / cpu)
        assert f"{v}: " in text


def test_results_written_before_the_younger_columns_still_load(tmp_path):
    """A results.csv of an earlier pimrl (no C-loop, time-to-quality or memory columns) is
    read and plotted as it was."""
    src = ROOT / "experiments" / "tasklet_modes" / "results.csv"
    with open(src, newline="") as f:
        header = next(csv.reader(f))
    assert not set(YOUNGER_COLUMNS) & set(header)
    rows, bad = load_results(src)
    assert rows and not bad


TABLES = """
[study]
name = "tables"
seed = 1

[learner]
epochs = 2

[baselines]
cpu_threads = "all"
gpu = false
c_loop = false
cpu_quality = true

[[sweep]]
name = "tables"
kind = "strong"
envs = ["CliffWalking-v1", "CliffWalking-v1:copies=8"]
transitions = [6000]
dpus = [4]
variants = ["q-fp32-seq"]
tasklets = [4]
aggregators = ["own:2"]
"""


ENERGY_COLUMNS = [c for c in YOUNGER_COLUMNS if "_energy" in c]


def test_a_sweep_written_before_the_energy_columns_resumes(tmp_path):
    """A half-done results.csv of an earlier pimrl (no energy columns) resumes: its rows and
    their baselines are reused as they are (no energy), the missing row is computed (with
    its energy)."""
    cfg = tmp_path / "tables.toml"
    cfg.write_text(TABLES)
    out = tmp_path / "out"
    assert run_scale(cfg, out, progress=False).failed_rows == []
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(float(r["pim_energy_modelled_j"]) > 0 for r in rows)
    header = [c for c in rows[0] if c not in ENERGY_COLUMNS]
    with open(out / "results.csv", "w", newline="") as f:       # as an earlier pimrl wrote
        w = csv.DictWriter(f, header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows[:-1])
    report = run_scale(cfg, out, progress=False)
    assert report.failed_rows == [] and report.computed_rows == 1
    again = read_results(out / "results.csv")
    assert [r["pim_energy_modelled_j"] == "" for r in again] == [True] * (len(rows) - 1) + [False]
    # A new row whose baseline an old row holds: the old baseline (no energy) is not copied
    # into it; the baseline is measured again, with its energy.
    cfg.write_text(TABLES.replace('aggregators = ["own:2"]', 'aggregators = ["own:2", "own:1"]'))
    report = run_scale(cfg, out, progress=False)
    assert report.failed_rows == [] and report.computed_rows == 2 and report.cpu_runs >= 1
    new = [r for r in read_results(out / "results.csv") if r["aggregator"] == "own:1"]
    assert len(new) == 2 and all(r["cpu_1t_energy_modelled_j"] or r["cpu_1t_energy_measured_j"]
                                 for r in new)


def test_the_table_size_sweep_report(tmp_path):
    """One dataset size, tables of several sizes (copies of one environment): the report's
    axis is the Q-table's bytes, and the crossover is computed over them."""
    cfg = tmp_path / "tables.toml"
    cfg.write_text(TABLES)
    out = tmp_path / "out"
    report = run_scale(cfg, out, progress=False)
    assert report.failed_rows == [] and report.computed_rows == 2
    rows, _ = load_results(out / "results.csv")
    assert datasize.size_sweeps(rows) == [("tables", "table")]
    assert datasize.data_sweeps(rows) == []
    cross = datasize.crossover(rows, "table")
    assert cross["q-fp32-seq"]["sizes"] == [48 * 4 * 4, 8 * 48 * 4 * 4]
    written = {Path(p).name for p in plot_results(out)}
    assert {"throughput_tables.png", "time_to_quality_tables.png", "scale_tables.md"} <= written
    text = (out / "scale_tables.md").read_text()
    assert "| variant | Q-table |" in text and "768 B" not in text
    assert "| q-fp32-seq | 0.8 KiB |" in text and "| q-fp32-seq | 6.0 KiB |" in text


def test_only_copies_of_one_environment_make_a_table_sweep():
    def row(env, n=1000):
        return {"kind": "strong", "sweep": "s", "n_transitions": str(n), "env": env}

    assert datasize.size_sweeps([row("Taxi-v3"), row("CliffWalking-v1")]) == []
    assert datasize.size_sweeps([row("Taxi-v3"), row("Taxi-v3:copies=4")]) == [("s", "table")]
    assert datasize.size_sweeps([row("Taxi-v3"), row("Taxi-v3", 2000)]) == [("s", "transitions")]
