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
from pimrl.experiments.columns import REPRODUCIBLE_COLUMNS
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
DETERMINISTIC = REPRODUCIBLE_COLUMNS


@pytest.fixture()
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def _rows(d):
    return read_results(Path(d) / "results.csv")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    (SWEEP.replace('dpus=[2]', 'dpus=["x"]'), "dpus = 'x': expected an integer in [1, 2^20]"),
    (SWEEP.replace('Taxi-v3', 'Nope-v0'), "envs: unknown environment"),
    (SWEEP + 'tasklets=[40]\n', "tasklets = 40: expected an integer in [1, 24]"),
    (SWEEP.replace('transitions=10', 'transitions="10"'), "transitions = '10': expected an integer in [1, 2^32]"),
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


@pytest.mark.slow
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


# ---------------------------------------------------------------- bad input (issue: the house)
SMALL = """
[study]
name = "small"
seed = 1

[learner]
epochs = 2

[[sweep]]
name = "strong"
envs = ["FrozenLake-v1"]
transitions = 1200
dpus = [1, 2, 4]
variants = ["q-fp32-seq"]
tasklets = [2]
"""


@pytest.mark.parametrize("edit,key,value", [
    (("epochs = 2", 'alpha = "fast"'), "alpha", "'fast'"),
    (("epochs = 2", 'epochs = "8"'), "epochs", "'8'"),
    (('variants = ["q-fp32-seq"]', "variants = 5"), "variants", "5"),
    (("tasklets = [2]", 'tasklets = [2]\nstride = 1.5'), "stride", "1.5"),
    (("seed = 1", "seed = 1\n[baselines]\ncpu = \"yes\""), "cpu", "'yes'"),
    (("seed = 1", "seed = 1\n[baselines]\ncpu_threads = 0"), "cpu_threads", "0"),
])
def test_wrongly_typed_values_are_one_line_errors(tmp_path, capsys, edit, key, value):
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL.replace(*edit))
    assert main(["scale", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert str(bad) in err and f"{key} = {value}" in err


def test_dpus_beyond_the_preset_get_advice_that_helps(tmp_path, capsys):
    cfg = tmp_path / "big.toml"
    cfg.write_text(SMALL.replace("seed = 1", 'seed = 1\nhardware = "upmem-2560"')
                   .replace("dpus = [1, 2, 4]", "dpus = [3000]"))
    assert main(["scale", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "dpus 3000" in err and "upmem-2560 has 2560 functional DPUs" in err
    assert 'use study.hardware = "upmem-2560"' not in err and "--hardware upmem-2560" not in err
    assert not (tmp_path / "o" / "results.csv").exists()
    from pimrl.learners.params import LearnerParams
    from pimrl.swiftrl.trainer import PimTrainer
    from pimrl.envs import make
    from pimrl.data import generate_dataset

    env = make("FrozenLake-v1")
    recs = generate_dataset(env, 3000, 0)
    with pytest.raises(ValueError) as exc:
        PimTrainer(LearnerParams(), n_dpus=3000, hardware="upmem-2560").fit(recs, env.n_states, env.n_actions)
    assert "--hardware upmem-2560" not in str(exc.value) and "n_ranks=47" in str(exc.value)
    with pytest.raises(ValueError, match="use --hardware upmem-2560"):
        PimTrainer(LearnerParams(), n_dpus=2558, hardware="upmem-2556").fit(recs, env.n_states, env.n_actions)


def test_two_sweeps_into_one_folder_one_is_refused(tmp_path, capsys):
    import threading

    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    out = tmp_path / "o"
    inside, release = threading.Event(), threading.Event()
    first = {}

    def hold(row, report):
        inside.set()
        assert release.wait(60)

    def run_first():
        first["report"] = run_scale(cfg, out, progress=False, on_row=hold)

    t = threading.Thread(target=run_first)
    t.start()
    try:
        assert inside.wait(120)
        assert main(["scale", str(cfg), "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert "another pimrl scale is writing here" in err and f"pid {__import__('os').getpid()}" in err
    finally:
        release.set()
        t.join()
    assert first["report"].computed_rows == 3
    # The refused run wrote nothing; the next one resumes and both sessions are in meta.json.
    assert main(["scale", str(cfg), "--out", str(out), "--no-progress"]) == 0
    assert "0 computed, 3 resumed" in capsys.readouterr().out
    sessions = json.loads((out / "meta.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["complete", "complete"]
    assert [s["rows_computed"] for s in sessions] == [3, 0]


def _rewrite(path, edit_rows):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    edit_rows(rows)
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def test_corrupted_rows_are_not_resumed(tmp_path, capsys):
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    clean, out = tmp_path / "clean", tmp_path / "o"
    run_scale(cfg, clean, progress=False)
    run_scale(cfg, out, progress=False)
    col = {c: i for i, c in enumerate(COLUMNS)}

    def corrupt(rows):
        rows[1][col["success_rate"]] = "nan"
        rows[2][col["pim_kernel_modelled_s"]] = "-1"
        rows[3][col["pim_updates"]] = "abc"

    _rewrite(out / "results.csv", corrupt)
    capsys.readouterr()
    assert main(["plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 2: success_rate = 'nan'" in err and len(err.strip().splitlines()) == 1
    rep = run_scale(cfg, out, progress=False)
    err = capsys.readouterr().err
    assert rep.invalid_rows == 3 and rep.computed_rows == 3 and rep.reused_rows == 0
    for text in ("line 2: success_rate = 'nan'", "line 3: pim_kernel_modelled_s = '-1'",
                 "line 4: pim_updates = 'abc'"):
        assert text in err, text
    assert len(read_results(out / "results.invalid.csv")) == 3
    for a, b in zip(_rows(out), _rows(clean)):
        assert {c: a[c] for c in DETERMINISTIC} == {c: b[c] for c in DETERMINISTIC}


def test_truncated_results_are_named_not_dropped(tmp_path, capsys):
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    out = tmp_path / "o"
    run_scale(cfg, out, progress=False)
    text = (out / "results.csv").read_text()
    (out / "results.csv").write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1] + "\n")
    capsys.readouterr()
    assert main(["plot", str(out)]) == 2
    err = capsys.readouterr().err
    assert "results.csv line 4: truncated" in err
    rep = run_scale(cfg, out, progress=False)
    assert rep.invalid_rows == 1 and rep.computed_rows == 1 and rep.reused_rows == 2
    # A file cut at a line boundary: the plot says what is missing.
    lines = (out / "results.csv").read_text().splitlines()
    (out / "results.csv").write_text("\n".join(lines[:-1]) + "\n")
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0
    assert "holds 2 of the 3 rows" in capsys.readouterr().err


def test_a_failing_row_is_recorded_and_the_others_kept(tmp_path, capsys):
    cfg = tmp_path / "fail.toml"
    # 1,200 transitions cannot feed 2,000 DPUs: that row fails on its own.
    cfg.write_text(SMALL.replace("dpus = [1, 2, 4]", "dpus = [1, 2000, 4]"))
    out = tmp_path / "o"
    assert main(["scale", str(cfg), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "1 row(s) failed" in err and "cannot feed 2000 DPUs" in err
    assert sorted(int(r["n_dpus"]) for r in _rows(out)) == [1, 4]
    session = json.loads((out / "meta.json").read_text())["sessions"][-1]
    assert session["status"] == "failed" and len(session["failed_rows"]) == 1
    assert "cannot feed 2000 DPUs" in session["failed_rows"][0]["error"]


def test_a_stopped_sweep_leaves_no_task_behind_in_its_executor(tmp_path):
    from pimrl.experiments.runner import LocalTasks

    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    ex = LocalTasks()
    with pytest.raises(SweepInterrupted):
        run_scale(cfg, tmp_path / "a", progress=False, executor=ex, stop_after=1)
    assert ex.queue == []
    rep = run_scale(cfg, tmp_path / "b", progress=False, executor=ex)   # reused: only its rows
    assert rep.computed_rows == rep.pim_runs == 3


MODES = """
[study]
name = "modes"
seed = 1

[learner]
epochs = 4

[baselines]
cpu = false

[[sweep]]
name = "owned"
kind = "strong"
envs = ["FrozenLake-v1"]
transitions = 4000
dpus = [2]
variants = ["q-int32-seq"]
tasklets = [4]
tasklet_modes = ["ring", "rows", "unlocked"]
aggregators = ["own:2"]

[[sweep]]
name = "plain"
kind = "strong"
envs = ["FrozenLake-v1"]
transitions = 4000
dpus = [2]
variants = ["q-int32-seq"]
tasklets = [4]
"""


def test_tasklet_modes_sweep_columns_figure_and_table(tmp_path, capsys):
    """A sweep over tasklet modes: one row a mode (column tasklet_mode; a sweep that names
    none runs pimrl's default), unlocked's conflicts in pim_conflicts and the ring's table,
    the modes figure and its table at the sweep's largest DPU count."""
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE

    cfg = tmp_path / "modes.toml"
    cfg.write_text(MODES)
    out = tmp_path / "res"
    assert main(["scale", str(cfg), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    rows = _rows(out)
    by = {r["tasklet_mode"]: r for r in rows if r["sweep"] == "owned"}
    assert set(by) == {"ring", "rows", "unlocked"}
    assert [r["tasklet_mode"] for r in rows if r["sweep"] == "plain"] == [DEFAULT_TASKLET_MODE]
    assert by["unlocked"]["mean_return"] == by["ring"]["mean_return"]
    assert by["unlocked"]["pim_conflicts"] != "" and int(by["unlocked"]["pim_conflicts"]) >= 0
    assert by["ring"]["pim_conflicts"] == by["rows"]["pim_conflicts"] == ""
    kernel = {m: float(r["pim_kernel_modelled_s"]) for m, r in by.items()}
    assert kernel["rows"] < kernel["ring"] and kernel["unlocked"] < kernel["ring"]
    assert main(["plot", str(out), "--json"]) == 0
    names = {Path(f).name for f in json.loads(capsys.readouterr().out)["files"]}
    assert {"modes_owned.png", "modes_owned.md"} <= names and "modes_plain.md" not in names
    table = (out / "modes_owned.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("| FrozenLake-v1")]
    assert [line.split(" | ")[3] for line in lines] == ["ring", "rows", "unlocked"]
    assert lines[0].split(" | ")[5] == "1.0x"


def test_modes_table_has_a_block_per_aggregator():
    """Averaging and state-owned learning in one sweep (experiments/demo.toml): the modes
    table shows both, mean first, each mode against the ring of its own aggregator."""
    from pimrl.experiments.plots import modes_table

    def row(agg, mode, kernel):
        return {"sweep": "q", "env": "E", "variant": "q-int32-seq", "n_dpus": "8",
                "tasklets": "16", "aggregator": agg, "tasklet_mode": mode,
                "pim_kernel_modelled_s": str(kernel), "pim_total_modelled_s": str(kernel),
                "mean_return": "1", "optimal_mean_return": "1", "pim_conflicts": ""}

    table = modes_table([row("own:20", "rows", 1.0), row("own:20", "ring", 3.0),
                         row("mean", "rows", 2.0), row("mean", "ring", 8.0)], "q")
    lines = [line.split(" | ") for line in table.splitlines() if line.startswith("| E")]
    assert [(c[2], c[3], c[5]) for c in lines] == [
        ("mean", "rows", "4.0x"), ("mean", "ring", "1.0x"),
        ("own:20", "rows", "3.0x"), ("own:20", "ring", "1.0x")]


# MODES's study with one sweep of one row: SwiftRL's averaging in 4 rounds
ONE_ROW = MODES[: MODES.index("[[sweep]]")] + """[[sweep]]
name = "strong"
envs = ["FrozenLake-v1"]
transitions = 3000
dpus = [4]
variants = ["q-fp32-seq"]
tasklets = [4]
aggregators = ["sync:4"]
"""


def test_a_half_done_row_goes_on_from_its_checkpoint(tmp_path, monkeypatch):
    """A row cut short after its second round (a Ctrl-C or a kill) leaves its checkpoint;
    the resumed sweep goes on from there, and the row equals an uninterrupted sweep's."""
    from pimrl.experiments import tasks
    from pimrl import checkpoint as ckpt

    cfg = tmp_path / "one.toml"
    cfg.write_text(ONE_ROW)
    clean = run_scale(cfg, tmp_path / "clean", progress=False)
    assert clean.resumed_rows == []
    monkeypatch.setattr(tasks, "ROW_CHECKPOINT_S", 1e-9)        # every boundary
    original = ckpt.Checkpoint.boundary

    def cut(self, round_done, n_rounds, snapshot):
        original(self, round_done, n_rounds, snapshot)
        if round_done == 2:
            raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(ckpt.Checkpoint, "boundary", cut)
        with pytest.raises(KeyboardInterrupt):
            run_scale(cfg, tmp_path / "cut", progress=False)
    assert len(list((tmp_path / "cut" / "checkpoints").glob("*/checkpoint.npz"))) == 1
    rep = run_scale(cfg, tmp_path / "cut", progress=False)
    assert [r["round"] for r in rep.resumed_rows] == [2]
    assert not (tmp_path / "cut" / "checkpoints").exists()
    a, b = _rows(tmp_path / "clean"), _rows(tmp_path / "cut")
    assert len(a) == len(b) == 1
    assert {c: a[0][c] for c in DETERMINISTIC} == {c: b[0][c] for c in DETERMINISTIC}
