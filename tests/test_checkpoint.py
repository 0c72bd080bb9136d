"""pimrl train --checkpoint / --resume: a run stopped at a round boundary (killed, or by
SIGINT/SIGTERM) resumes to the uninterrupted run's tables, modelled times and quality, bit
for bit; a resume with other settings is refused in one line (exit 2)."""
import contextlib
import io
import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pimrl.cli import main
from pimrl import checkpoint as ckpt

BASE = ["train", "--env", "FrozenLake-v1", "--transitions", "3000", "--backend", "pim",
        "--dpus", "4", "--tasklets", "4", "--epochs", "8", "--json"]


class Killed(BaseException):
    """Stands for a kill right after a checkpoint (nothing of the process survives it but
    the files it wrote)."""


def _run(args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(BASE + list(args))
    return rc, (json.loads(buf.getvalue()) if rc == 0 else None)


def _killed_after(monkeypatch, round_k):
    original = ckpt.Checkpoint.boundary

    def boundary(self, round_done, n_rounds, snapshot):
        original(self, round_done, n_rounds, snapshot)
        if round_done == round_k:
            raise Killed
    monkeypatch.setattr(ckpt.Checkpoint, "boundary", boundary)


def _same_results(full, resumed, q_full, q_resumed):
    assert np.array_equal(np.load(q_full), np.load(q_resumed))
    a, b = full["runs"][0], resumed["runs"][0]
    for key in ("modelled_s", "modelled_total_s", "rounds", "quality_round",
                "time_to_quality_modelled_s", "n_updates", "saturations"):
        assert a[key] == b[key], key
    # modelled, own:R's host merges included (pimrl.pim.host.host_owned_seconds)
    assert a["energy"] == b["energy"]
    assert a.get("energy_to_quality_modelled_j") == b.get("energy_to_quality_modelled_j")
    assert full["evaluation"] == resumed["evaluation"]


@pytest.mark.parametrize("aggregate,kill_after,extra", [
    ("sync:4", 2, []), ("sync:3:weighted", 1, []), ("own:4", 3, []),
    # the ring's lanes, INT32, SARSA (own:R's policy weights), a shuffled partition
    ("sync:4", 1, ["--tasklet-mode", "ring", "--dtype", "int32", "--partition", "shuffle"]),
    ("own:4", 2, ["--algo", "sarsa", "--dtype", "int32", "--sampling", "ran"]),
    # records streamed through the MRAM in windows (12 per epoch)
    ("sync:4", 2, ["--mram-window", "1K", "--sampling", "str"]),
    # the C kernel of kernels/swiftrl.c (its barriers and other globals are saved too)
    pytest.param("sync:3:weighted", 2, ["--kernel", "c"], marks=pytest.mark.needs_c),
    pytest.param("own:4", 1, ["--kernel", "c"], marks=pytest.mark.needs_c),
])
def test_resume_after_kill_is_bit_exact(tmp_path, monkeypatch, aggregate, kill_after, extra):
    rc, full = _run(["--aggregate", aggregate, *extra, "--save-q", str(tmp_path / "full.npy")])
    assert rc == 0
    folder = tmp_path / "ck"
    with monkeypatch.context() as m:
        _killed_after(m, kill_after)
        with pytest.raises(Killed):
            _run(["--aggregate", aggregate, *extra, "--checkpoint", str(folder)])
    with np.load(folder / ckpt.FILE) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        assert "dpu/q_table" in z.files and "dpu/rng_state" in z.files
        if aggregate.endswith("weighted"):
            assert "visits_before" in z.files and "dpu/visits" in z.files
        if aggregate.startswith("own"):
            assert "v" in z.files and "dpu/v_table" in z.files
    assert meta["round"] == kill_after and not meta["complete"]
    assert len(meta["config_hash"]) == 64 and meta["pimrl_version"]
    rc, resumed = _run(["--aggregate", aggregate, *extra, "--resume", str(folder),
                        "--save-q", str(tmp_path / "resumed.npy")])
    assert rc == 0
    _same_results(full, resumed, tmp_path / "full.npy", tmp_path / "resumed.npy")


def test_every_n_rounds_and_single_round_end(tmp_path, monkeypatch):
    # --checkpoint-every 2 of sync:4: the kill after round 3 leaves round 2's checkpoint
    rc, full = _run(["--aggregate", "sync:4", "--save-q", str(tmp_path / "full.npy")])
    with monkeypatch.context() as m:
        _killed_after(m, 3)
        with pytest.raises(Killed):
            _run(["--aggregate", "sync:4", "--checkpoint", str(tmp_path / "ck"),
                  "--checkpoint-every", "2"])
    with np.load(tmp_path / "ck" / ckpt.FILE) as z:
        assert json.loads(bytes(z["meta"]).decode())["round"] == 2
    rc, resumed = _run(["--aggregate", "sync:4", "--resume", str(tmp_path / "ck"),
                        "--save-q", str(tmp_path / "resumed.npy")])
    _same_results(full, resumed, tmp_path / "full.npy", tmp_path / "resumed.npy")
    # plain mean: one round, a checkpoint at its end only, which resumes to the same result
    rc, full = _run(["--save-q", str(tmp_path / "m.npy"), "--checkpoint", str(tmp_path / "m")])
    with np.load(tmp_path / "m" / ckpt.FILE) as z:
        assert json.loads(bytes(z["meta"]).decode())["complete"]
    rc, again = _run(["--resume", str(tmp_path / "m"), "--save-q", str(tmp_path / "m2.npy")])
    _same_results(full, again, tmp_path / "m.npy", tmp_path / "m2.npy")


@pytest.mark.parametrize("change,needle", [(["--alpha", "0.2"], "--alpha"),
                                           (["--transitions", "2999"], "dataset"),
                                           (["--dpus", "5"], "--dpus"),
                                           ("version", "pimrl version")])
def test_resume_with_other_settings_is_refused(tmp_path, monkeypatch, capsys, change, needle):
    folder = tmp_path / "ck"
    with monkeypatch.context() as m:
        _killed_after(m, 1)
        with pytest.raises(Killed):
            _run(["--aggregate", "sync:4", "--checkpoint", str(folder)])
    capsys.readouterr()
    if change == "version":
        import pimrl

        monkeypatch.setattr(pimrl, "__version__", "999.0")
        change = []
    rc, _ = _run(["--aggregate", "sync:4", "--resume", str(folder), *change])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err


def test_resume_needs_a_checkpoint(tmp_path, capsys):
    rc, _ = _run(["--aggregate", "sync:4", "--resume", str(tmp_path / "none")])
    assert rc == 2 and "no checkpoint" in capsys.readouterr().err


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_checkpoints_at_the_next_boundary_and_exits_130(tmp_path, signum):
    args = ["train", "--env", "FrozenLake-v1", "--transitions", "20000", "--backend", "pim",
            "--dpus", "4", "--tasklets", "4", "--epochs", "16", "--aggregate", "sync:16",
            "--json"]
    folder = tmp_path / "ck"
    p = subprocess.Popen([sys.executable, "-m", "pimrl", *args, "--checkpoint", str(folder)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_sigint)
    deadline = time.monotonic() + 120
    while not folder.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)           # the folder is made once signals are deferred
    p.send_signal(signum)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 130, err
    assert "checkpoint of round" in err and "--resume" in err
    with np.load(folder / ckpt.FILE) as z:
        meta = json.loads(bytes(z["meta"]).decode())
    assert 1 <= meta["round"] < 16 and not meta["complete"]
    rc, full = _run_args(args + ["--save-q", str(tmp_path / "full.npy")])
    rc, resumed = _run_args(args + ["--resume", str(folder),
                                    "--save-q", str(tmp_path / "resumed.npy")])
    _same_results(full, resumed, tmp_path / "full.npy", tmp_path / "resumed.npy")


def _run_args(args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(args))
    assert rc == 0
    return rc, json.loads(buf.getvalue())


@pytest.mark.parametrize("argv,needle", [
    (["--dpus", "4,8", "--checkpoint", "ck"], "one --dpus count"),
    (["--executor", "dask:1", "--checkpoint", "ck"], "--executor local"),
    (["--checkpoint-every", "2"], "--checkpoint-every applies"),
])
def test_checkpoint_refuses_what_it_cannot_resume(tmp_path, monkeypatch, capsys, argv, needle):
    monkeypatch.chdir(tmp_path)
    rc, _ = _run(["--aggregate", "sync:4", *argv])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and needle in lines[0], lines


def test_reference_backend_refuses_checkpoint(tmp_path, capsys):
    rc = main(["train", "--env", "FrozenLake-v1", "--transitions", "500", "--no-eval",
               "--checkpoint", str(tmp_path / "ck")])
    assert rc == 2 and "--backend pim" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--checkpoint", "--resume"])
def test_an_empty_folder_name_is_refused(capsys, flag):
    rc, _ = _run(["--aggregate", "sync:4", flag, ""])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "empty" in lines[0], lines


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path, capsys):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / ckpt.FILE).write_bytes(b"not a zip")
    rc, _ = _run(["--aggregate", "sync:4", "--resume", str(tmp_path / "ck")])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "not a pimrl checkpoint" in lines[0], lines


ONLINE = ["train", "--online", "--env", "FrozenLake-v1", "--dpus", "8", "--tasklets", "4",
          "--steps", "6000", "--json"]


@pytest.mark.parametrize("extra,kill_after", [
    (["--aggregate", "sync:4"], 2),
    (["--aggregate", "sync:3:weighted", "--force-mram", "--algo", "sarsa", "--dtype", "int32"], 1),
    (["--agents", "independent", "--grid", "alpha=0.05,0.1;seed=0-3"], 1),
    pytest.param(["--aggregate", "sync:4", "--kernel", "c"], 3, marks=pytest.mark.needs_c),
])
def test_online_resume_after_kill_is_bit_exact(tmp_path, monkeypatch, extra, kill_after):
    """Online shared and independent agents: the lanes' environment states, episode
    counters and streams, and the tables (in MRAM with --force-mram) come back bit for bit."""
    def run(args):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(ONLINE + extra + args)
        return rc, (json.loads(buf.getvalue()) if rc == 0 else None)

    rc, full = run(["--save-q", str(tmp_path / "full.npy")])
    assert rc == 0
    folder = tmp_path / "ck"
    n_rounds = 1 if "independent" in extra else int(extra[1].split(":")[1])
    if kill_after >= n_rounds:          # a single round: kill at its end, resume finished
        kill_after = n_rounds
    with monkeypatch.context() as m:
        _killed_after(m, kill_after)
        with pytest.raises(Killed):
            run(["--checkpoint", str(folder)])
    rc, resumed = run(["--resume", str(folder), "--save-q", str(tmp_path / "resumed.npy")])
    assert rc == 0
    assert np.array_equal(np.load(tmp_path / "full.npy"), np.load(tmp_path / "resumed.npy"))
    for key in ("modelled_s", "modelled_total_s", "rounds", "env_steps", "episodes",
                "saturations", "evaluation", "time_to_quality_modelled_s", "agents_result"):
        assert full.get(key) == resumed.get(key), key


def test_online_resume_with_other_settings_is_refused(tmp_path, capsys):
    assert main(ONLINE + ["--aggregate", "sync:2", "--checkpoint", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(ONLINE + ["--aggregate", "sync:2", "--steps", "7000",
                          "--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--steps was 6000 in the checkpoint, 7000 now" in err and len(err.splitlines()) == 1
