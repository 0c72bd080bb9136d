"""The ``pimrl`` command against bad input, as a new user would try it: Ctrl-C, odd files,
bad parameters, and the text a user reads (help, tables, JSON)."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pimrl.cli import main

REPO = Path(__file__).resolve().parents[1]


def _default_sigint():
    """In the child: Ctrl-C as in a terminal. A shell starts background jobs (a test run
    under `cmd &`, say) with SIGINT ignored, and children inherit that; pimrl rightly leaves
    an ignored SIGINT alone, so the tests that send one must undo it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _pimrl(*args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "pimrl", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
                            **kwargs)


def _one_error_line(err: str, *needles) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------------------- Ctrl-C
@pytest.mark.slow
def test_ctrl_c_stops_train_inside_compiled_loops(tmp_path):
    """A long run inside numba loops (minutes of work) ends soon after SIGINT, with status
    130, one line, and no output file (complete or absent)."""
    q = tmp_path / "q.npy"
    p = _pimrl("train", "--env", "Taxi-v3", "--transitions", "200000", "--epochs", "200000",
               "--backend", "pim", "--dpus", "1,2", "--save-q", str(q), cwd=tmp_path)
    try:
        line = p.stderr.readline()          # printed just before the simulated DPUs start
        assert "simulating 1 DPUs" in line, line + p.stderr.read()
        time.sleep(1.0)
        assert p.poll() is None
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    _one_error_line(err, "interrupted (Ctrl-C)")
    assert elapsed < 30, elapsed               # the whole job would take about an hour
    assert os.listdir(tmp_path) == []          # no Q-table, no temporary file


CLEAN_UP_SLOWLY = """
import sys, time
import pimrl.cli.catalogue
from pimrl.cli import main

def run_list(args):
    try:
        print("ready", file=sys.stderr, flush=True)
        while True:
            time.sleep(0.01)
    except KeyboardInterrupt:
        time.sleep(1.5)                   # longer than the grace time for compiled code
        print("cleaned up", file=sys.stderr, flush=True)
        raise

pimrl.cli.catalogue.run_list = run_list
sys.exit(main(["list"]))
"""


def test_ctrl_c_lets_python_clean_up_in_its_own_time():
    """The timer that ends a process stuck in compiled code is cancelled as soon as Python
    runs: a command's clean-up after Ctrl-C (a sweep recording where it stopped) finishes."""
    p = subprocess.Popen([sys.executable, "-c", CLEAN_UP_SLOWLY], stderr=subprocess.PIPE,
                         text=True, preexec_fn=_default_sigint)
    try:
        assert "ready" in p.stderr.readline()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130
    assert err.split() == ["cleaned", "up", "pimrl", "list:", "interrupted", "(Ctrl-C)"], err


def test_ctrl_c_in_python_code_is_one_line(tmp_path, monkeypatch, capsys):
    import pimrl.envs

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pimrl.envs, "evaluate_against_optimum", interrupted)
    q = tmp_path / "q.npy"
    np.save(q, np.zeros((16, 4)))
    assert main(["eval", "--q", str(q), "--env", "FrozenLake-v1"]) == 130
    _one_error_line(capsys.readouterr().err, "pimrl eval: interrupted (Ctrl-C)")


# --------------------------------------------------------------------------- bad input
def test_sensitivity_unknown_parameter_is_a_clear_error(capsys):
    rc = main(["sensitivity", "--param", "nosuch", "--transitions", "1000"])
    assert rc == 2
    _one_error_line(capsys.readouterr().err, "'nosuch'", "frequency_hz")


@pytest.mark.parametrize("content", [
    pytest.param(b"0 1 0 4\r1 2 0 5\r" * 3, id="cr-only"),
    pytest.param(b"1 " * 600_000, id="one-long-line"),
    pytest.param(bytes(np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8)).replace(b"\n", b""),
                 id="binary"),
])
def test_import_without_line_breaks_names_the_file(tmp_path, capsys, content):
    path = tmp_path / "in.txt"
    path.write_bytes(content)
    rc = main(["data", "import", str(path), "--env", "FrozenLake-v1", "--out",
               str(tmp_path / "o.pimrl")])
    assert rc == 2
    line = _one_error_line(capsys.readouterr().err, str(path))
    assert len(line) < 400                    # never echoes the "line"
    if b"\r" in content and b"\n" not in content and content.isascii():
        assert "CR" in line
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]


def test_import_of_a_huge_sparse_file_uses_bounded_memory(tmp_path):
    from pimrl.data.swiftrl import SwiftRLFormatError, import_swiftrl

    path = tmp_path / "sparse.txt"
    with open(path, "wb") as f:
        f.truncate(64 << 20)                  # 64 MiB of NUL bytes, no line break
    tracemalloc.start()
    try:
        with pytest.raises(SwiftRLFormatError, match=r"sparse.txt:1: NUL byte") as exc:
            import_swiftrl(path, "FrozenLake-v1")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 48 << 20, peak              # less than the file, whatever its size
    assert len(str(exc.value)) < 200


def test_data_info_on_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    p = _pimrl("data", "info", str(fifo))
    try:
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2
    _one_error_line(err, str(fifo), "not a regular file")


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_eval_refuses_non_finite_q(tmp_path, capsys, bad):
    q = np.zeros((16, 4))
    q[5, 2] = bad
    path = tmp_path / "q.npy"
    np.save(path, q)
    assert main(["eval", "--q", str(path), "--env", "FrozenLake-v1"]) == 2
    _one_error_line(capsys.readouterr().err, str(path), "non-finite", "state 5, action 2")


def test_write_errors_name_the_users_path_not_a_temporary_file(tmp_path, capsys, monkeypatch):
    import tempfile

    import pimrl.io

    dest = tmp_path / "q.npy"

    def no_space(*a, dir=None, **k):
        raise OSError(28, "No space left on device", os.path.join(dir, ".q.npy.x1y2.tmp"))

    monkeypatch.setattr(pimrl.io.tempfile, "mkstemp", no_space)
    rc = main(["train", "--env", "FrozenLake-v1", "--transitions", "500", "--no-eval",
               "--save-q", str(dest)])
    assert rc == 2
    line = _one_error_line(capsys.readouterr().err, str(dest), "No space left on device")
    assert ".tmp" not in line and "Errno" not in line
    monkeypatch.setattr(pimrl.io.tempfile, "mkstemp", tempfile.mkstemp)

    def replace_fails(src, dst):
        raise OSError(18, "Invalid cross-device link", src, dst)

    monkeypatch.setattr(pimrl.io.os, "replace", replace_fails)
    rc = main(["train", "--env", "FrozenLake-v1", "--transitions", "500", "--no-eval",
               "--save-q", str(dest)])
    line = _one_error_line(capsys.readouterr().err, str(dest))
    assert rc == 2 and ".tmp" not in line and "Errno" not in line
    assert os.listdir(tmp_path) == []


def test_output_folder_that_is_a_file_is_named(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["calibrate", "--plot", str(afile)]) == 2
    line = _one_error_line(capsys.readouterr().err, str(afile), "not a folder")
    assert "Errno" not in line


def test_outputs_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["data", "generate", "--env", "FrozenLake-v1", "--n", "100", "--seed", "0",
                     "--out", str(tmp_path / "d.pimrl")]) == 0
        assert main(["train", str(tmp_path / "d.pimrl"), "--no-eval", "--save-q",
                     str(tmp_path / "q.npy")]) == 0
        assert main(["data", "export", str(tmp_path / "d.pimrl"), "--out",
                     str(tmp_path / "d.txt")]) == 0
        os.umask(0o027)
        assert main(["data", "generate", "--env", "FrozenLake-v1", "--n", "10", "--seed", "0",
                     "--out", str(tmp_path / "e.pimrl")]) == 0
    finally:
        os.umask(old)
    for name in ("d.pimrl", "q.npy", "d.txt"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name
    assert (tmp_path / "e.pimrl").stat().st_mode & 0o777 == 0o640
    os.chmod(tmp_path / "q.npy", 0o600)          # a replaced file keeps its mode
    assert main(["train", str(tmp_path / "d.pimrl"), "--no-eval", "--save-q",
                 str(tmp_path / "q.npy")]) == 0
    assert (tmp_path / "q.npy").stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------------------------- what is read
from conftest import cli_parsers as _parsers  # noqa: E402  (every command's parser)


def test_every_command_has_a_description_and_shows_its_defaults():
    import argparse

    seen = set()
    for name, p in _parsers():
        seen.add(name)
        assert p.description, f"{name} has no description"
        fmt = p._get_formatter()
        for action in p._actions:
            d = action.default
            if (not action.option_strings or d is None or d is False or d == []
                    or d is argparse.SUPPRESS):
                continue
            text = fmt._get_help_string(action) or ""
            assert "default" in text, f"{name} {action.option_strings[0]}: no default shown"
    assert {"pimrl train", "pimrl calibrate", "pimrl sensitivity", "pimrl cost-doc",
            "pimrl data export", "pimrl data info"} <= seen
    text = dict(_parsers())["pimrl train"].format_help()
    assert re.search(r"--alpha ALPHA\s+learning rate \(default 0\.1\)", text)


def test_time_table_columns_line_up():
    from pimrl.cli.train_report import time_table

    run = {"modelled_s": {"cpu_dpu": 0.0012, "dpu_kernel": 1.5, "inter_dpu": 0.0,
                          "dpu_cpu": 0.0003},
           "modelled_total_s": 1.5015,
           "measured_s": {"host_aggregation": 0.00006, "simulation_wall": 12.3}}
    lines = time_table(run)
    assert len(lines) == 8
    ends = {m.end() for m in (re.search(r"\d+\.\d{3}", ln) for ln in lines[1:])}
    assert len(ends) == 1, lines                # every number ends in the same column
    assert lines[0].index("ms") + 2 == ends.pop()
    kinds = {ln.index("measured") if "measured" in ln else ln.index("modelled") for ln in lines[1:]}
    assert len(kinds) == 1, lines


def test_json_and_text_agree_on_a_certain_success(capsys):
    """Taxi's optimal policy always succeeds: JSON says 1.0, as the text's 1.0000."""
    assert main(["train", "--env", "Taxi-v3", "--transitions", "20000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evaluation"]["optimal_success_rate"] == 1.0
    assert out["evaluation"]["optimal_mean_return"] == 7.93


def test_readme_what_if_compares_with_a_run_on_screen():
    """The tour's --hw what-if repeats an earlier command of the tour, plus the overrides."""
    text = (REPO / "README.md").read_text()
    tour = text[text.index("## A tour"):]
    tour = tour[: tour.index("```", tour.index("```sh") + 5)]
    commands = [shlex.split(ln) for ln in tour.splitlines() if ln.startswith("pimrl ")]
    what_ifs = [c for c in commands if "--hw" in c]
    assert what_ifs
    for c in what_ifs:
        base = []
        it = iter(c)
        for tok in it:
            if tok == "--hw":
                next(it)
            else:
                base.append(tok)
        earlier = commands[: commands.index(c)]
        assert base in earlier, f"{' '.join(c)} has no run to compare with"
