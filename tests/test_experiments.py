"""``pimrl scale`` / ``pimrl plot`` / ``pimrl demo`` on tiny configs: the CSV, the JSON, the
figures, and resumption after an interrupt without recomputing finished rows."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from pimrl.cli import main
from pimrl.experiments.config import ConfigError, expand_runs, load_config, run_key
from pimrl.experiments.runner import COLUMNS, SweepInterrupted, read_results, run_scale

TINY = """
[study]
name = "tiny"
seed = 3

[learner]
epochs = 4

[baselines]
cpu_threads = "all"

[[sweep]]
name = "strong"
kind = "strong"
envs = ["FrozenLake-v1", "CliffWalking-v1"]
transitions = 3000
dpus = [1, 2, 4]
variants = ["q-fp32-seq", "sarsa-int32-ran"]
tasklets = [4]
aggregators = ["mean", "sync:2"]

[[sweep]]
name = "weak"
kind = "weak"
envs = ["FrozenLake-v1"]
transitions_per_dpu = 300
dpus = [1, 2, 4]
variants = ["q-int32-str"]
tasklets = [2]

[[sweep]]
name = "tasklets"
kind = "strong"
envs = ["Taxi-v3"]
transitions = 2000
dpus = [2]
variants = ["q-fp32-seq"]
tasklets = [1, 4]
"""
N_ROWS = 2 * 2 * 2 * 3 + 3 + 2
DETERMINISTIC = [c for c in COLUMNS if "measured" not in c and c not in ("finished_at", "session")]


@pytest.fixture()
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def _rows(d):
    return read_results(Path(d) / "results.csv")


def test_scale_and_plot(tiny, tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["scale", str(tiny), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total_rows"] == N_ROWS and report["computed_rows"] == N_ROWS
    with open(out / "results.csv", newline="") as f:
        header = next(csv.reader(f))
    assert tuple(header) == COLUMNS
    rows = _rows(out)
    assert len(rows) == N_ROWS
    # Every time says its unit and whether it is modelled or measured.
    for c in COLUMNS:
        if c.endswith("_s"):
            assert c.endswith("_modelled_s") or c.endswith("_measured_s"), c
    for r in rows:
        assert r["row_key"] == run_key(r)
        assert float(r["pim_total_modelled_s"]) == pytest.approx(sum(
            float(r[c]) for c in ("pim_cpu_dpu_modelled_s", "pim_kernel_modelled_s",
                                  "pim_inter_dpu_modelled_s", "pim_dpu_cpu_modelled_s")))
        assert float(r["cpu_1t_measured_s"]) > 0 and float(r["cpu_mt_measured_s"]) > 0
        assert 0 <= float(r["success_rate"]) <= float(r["optimal_success_rate"]) + 1e-9
        assert int(r["pim_updates"]) == int(r["n_transitions"]) * 4
        if r["gpu_status"].startswith("not measured"):
            assert r["gpu_kernel_measured_s"] == "" and r["gpu_total_measured_s"] == ""
    weak = [r for r in rows if r["kind"] == "weak"]
    assert [int(r["n_transitions"]) for r in weak] == [300, 600, 1200]
    sync = [r for r in rows if r["aggregator"] == "sync:2" and int(r["n_dpus"]) > 1]
    assert all(float(r["pim_inter_dpu_modelled_s"]) > 0 for r in sync)
    meta = json.loads((out / "meta.json").read_text())
    for key in ("versions", "machine", "seeds", "config", "gpu", "sessions", "columns"):
        assert key in meta, key
    assert meta["versions"]["numba"] and meta["config"]["study"]["seed"] == 3
    assert meta["sessions"][-1]["status"] == "complete"
    assert meta["config_sha256"] and meta["n_rows_planned"] == N_ROWS

    assert main(["plot", str(out), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    names = {Path(f).name for f in files}
    for stem in ("scaling_strong", "breakdown_strong", "quality_strong", "scaling_weak",
                 "pim_vs_baselines", "tasklets_tasklets"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names, stem
    import matplotlib.image as mpimg

    for f in files:
        if f.endswith(".md"):
            continue
        assert Path(f).stat().st_size > 5000, f
        if f.endswith(".png"):
            img = mpimg.imread(f)
            assert img.shape[0] > 300 and img.shape[1] > 300 and img.std() > 0.05, f
        if f.endswith(".svg"):
            text = Path(f).read_text()
            assert "<svg" in text and ("modelled" in text or "measured" in text or "exact" in text), f
    assert "modelled" in (out / "summary.md").read_text()


def test_interrupt_then_resume_recomputes_nothing(tiny, tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    clean = run_scale(tiny, full, progress=False)
    assert clean.pim_runs == N_ROWS

    seen = []
    with pytest.raises(SweepInterrupted):
        run_scale(tiny, part, progress=False, stop_after=7, on_row=lambda r, rep: seen.append(r["row_key"]))
    first = _rows(part)
    assert len(first) == 7 and [r["row_key"] for r in first] == seen
    meta = json.loads((part / "meta.json").read_text())
    assert meta["sessions"][-1]["status"] == "interrupted"

    again = []
    rep = run_scale(tiny, part, progress=False, on_row=lambda r, rep: again.append(r["row_key"]))
    assert rep.reused_rows == 7 and rep.computed_rows == N_ROWS - 7
    assert rep.pim_runs == N_ROWS - 7                   # no finished row was run again
    assert not set(again) & set(seen)
    final = _rows(part)
    assert len(final) == N_ROWS
    by_key = {r["row_key"]: r for r in final}
    for r in first:                                     # finished rows kept byte for byte
        assert by_key[r["row_key"]] == r
    ref = _rows(full)
    assert [r["row_key"] for r in final] == [r["row_key"] for r in ref]
    for a, b in zip(final, ref):                        # same results as an uninterrupted run
        assert {c: a[c] for c in DETERMINISTIC} == {c: b[c] for c in DETERMINISTIC}
    # Each row names the session that computed it, and each session its machine.
    assert {r["session"] for r in final} == {"0", "1"}
    sessions = json.loads((part / "meta.json").read_text())["sessions"]
    assert all("machine" in s and "versions" in s for s in sessions)

    # A third run finds nothing to do.
    rep = run_scale(tiny, part, progress=False)
    assert rep.computed_rows == 0 and rep.pim_runs == rep.cpu_runs == 0
    assert _rows(part) == final


def test_interrupt_through_the_command_line(tiny, tmp_path, monkeypatch, capsys):
    out = tmp_path / "cli"
    monkeypatch.setenv("PIMRL_SCALE_STOP_AFTER", "3")
    assert main(["scale", str(tiny), "--out", str(out)]) == 130
    assert "resume" in capsys.readouterr().err
    assert len(_rows(out)) == 3
    monkeypatch.delenv("PIMRL_SCALE_STOP_AFTER")
    assert main(["scale", str(tiny), "--out", str(out), "--no-progress"]) == 0
    assert f"{N_ROWS - 3} computed, 3 resumed" in capsys.readouterr().out


def test_demo_command_runs_scale_then_plot(tiny, tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--config", str(tiny), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "scaling_strong.png" in text and (out / "figures" / "scaling_strong.png").exists()
    # Every run's per-round quality reaches the plot and the trade-off table.
    rows = _rows(out)
    assert all(r["quality_curve"] for r in rows)
    assert (out / "figures" / "time_to_quality_strong.png").exists()
    assert (out / "tradeoff.md").read_text().startswith("| env | DPUs |")


def test_config_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[sweep]]\nname="s"\nenvs=["Taxi-v3"]\ndpus=[2]\ntransitions=10\nbogus=1\n')
    with pytest.raises(ConfigError, match="bogus"):
        load_config(bad)
    assert main(["scale", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "bogus" in capsys.readouterr().err
    bad.write_text('[[sweep]]\nname="s"\nkind="weak"\nenvs=["Taxi-v3"]\ndpus=[2]\n')
    with pytest.raises(ConfigError, match="transitions_per_dpu"):
        load_config(bad)
    bad.write_text('[[sweep]]\nname="s"\nenvs=["Taxi-v3"]\ndpus=[2]\ntransitions=10\n'
                   'variants=["q-fp16-seq"]\n')
    with pytest.raises(ConfigError, match="unknown variant"):
        load_config(bad)


SWEEP = '[[sweep]]\nname="s"\nenvs=["Taxi-v3"]\ndpus=[2]\ntransitions=10\n'


@pytest.mark.parametrize("body,message", [
    ('[study]\nhardwre="upmem-640"\n' + SWEEP, "unknown [study] key(s) ['hardwre']"),
    ('[data]\nfoo=1\n' + SWEEP, "unknown [data] key(s) ['foo']"),
    ('[study]\nhardware="nope"\n' + SWEEP, "study.hardware 'nope'"),
    (SWEEP.replace('dpus=[2]', 'dpus=["x"]'), "`dpus` must be integers"),
    (SWEEP.replace('Taxi-v3', 'Nope-v0'), "envs: unknown environment"),
    (SWEEP + 'tasklets=[40]\n', "tasklets must lie in [1, 24]"),
    (SWEEP.replace('transitions=10', 'transitions="10"'), "`transitions` must be a positive integer"),
])
def test_config_errors_name_the_file_and_key(tmp_path, body, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(body)
    with pytest.raises(ConfigError) as exc:
        load_config(bad)
    assert message in str(exc.value) and str(bad) in str(exc.value)


def test_rows_of_another_config_move_out_and_accumulate(tiny, tmp_path):
    """Resuming with a smaller config moves the extra rows out of results.csv at once, and
    results.dropped.csv keeps rows dropped by every session."""
    out = tmp_path / "o"
    run_scale(tiny, out, progress=False)
    n_all = len(_rows(out))
    smaller = tmp_path / "smaller.toml"
    smaller.write_text(TINY.split("[[sweep]]\nname = \"weak\"")[0])
    run_scale(smaller, out, progress=False)
    first = len(read_results(out / "results.dropped.csv"))
    assert first == n_all - len(_rows(out)) > 0
    smallest = tmp_path / "smallest.toml"
    smallest.write_text(TINY.split("[[sweep]]\nname = \"weak\"")[0].replace(
        '"CliffWalking-v1"', '').replace('["FrozenLake-v1", ]', '["FrozenLake-v1"]'))
    report = run_scale(smallest, out, progress=False)
    assert report.computed_rows == 0
    assert len(read_results(out / "results.dropped.csv")) == n_all - len(_rows(out)) > first


def test_shipped_configs_parse():
    root = Path(__file__).resolve().parents[1] / "experiments"
    study = load_config(root / "swiftrl.toml")
    runs = expand_runs(study)
    strong = [r for r in runs if r["sweep"] == "strong"]
    assert {r["env"] for r in strong} == {"FrozenLake-v1", "Taxi-v3", "CliffWalking-v1"}
    assert {r["n_transitions"] for r in strong} == {1_000_000}
    assert len({r["variant"] for r in strong}) == 12
    assert min(r["n_dpus"] for r in strong) == 125 and max(r["n_dpus"] for r in strong) == 2000
    assert all(r["hardware"] == "upmem-2556" for r in runs)
    assert len(expand_runs(load_config(root / "demo.toml"))) < len(runs)
    assert np.all([len(run_key(r)) == 16 for r in runs])


def test_turning_the_cpu_baseline_on_fills_it_on_resume(tiny, tmp_path):
    out = tmp_path / "o"
    off = tmp_path / "off.toml"
    off.write_text(TINY.replace('cpu_threads = "all"', 'cpu_threads = "all"\ncpu = false'))
    run_scale(off, out, progress=False)
    assert all(r["cpu_1t_measured_s"] == "" for r in _rows(out))
    rep = run_scale(tiny, out, progress=False)
    assert rep.computed_rows == N_ROWS and rep.cpu_runs > 0
    assert all(r["cpu_1t_measured_s"] != "" for r in _rows(out))
    assert run_scale(tiny, out, progress=False).computed_rows == 0
