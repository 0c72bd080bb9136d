"""The training backends behind one contract (pimrl.backends): every backend's trainer fits
the same way and leaves the same attributes; ``pimrl train`` picks one by name."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import random_records
from pimrl.backends import BACKENDS
from pimrl.cli import main
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import OfflineLearner

ROOT = Path(__file__).resolve().parents[1]
S, A = 11, 4
RECORDS = random_records(4000, S, A, seed=3)


def _time_keys(report: dict) -> list:
    return [k for k in report if k.endswith("_s")]


@pytest.mark.parametrize("name,options", [
    ("reference", {}), ("cpu", {"threads": 2, "partitions": 2}),
    ("pim", {"n_dpus": 4, "tasklets": 3})])
def test_every_backend_fits_to_one_contract(name, options):
    """fit returns the trainer, which holds a float64 (S, A) table, its update and saturation
    counts, and a report whose times all say measured or modelled; the tables are the ones
    the backend's own definition gives (the reference: the plain learner; CPU and PIM at one
    partition of one lane: the same table)."""
    p = LearnerParams(dtype="int32", epochs=2)
    tr = BACKENDS[name](p, **options)
    assert tr.fit(RECORDS, S, A) is tr
    assert tr.q_.dtype == np.float64 and tr.q_.shape == (S, A)
    assert tr.n_updates_ == 2 * len(RECORDS) and tr.saturations_ >= 0
    times = _time_keys(tr.report_)
    assert times and all("measured" in k or "modelled" in k for k in times), times
    assert tr.report_["n_updates"] == tr.n_updates_
    one = {"reference": {}, "cpu": {"threads": 1, "partitions": 1},
           "pim": {"n_dpus": 1, "tasklets": 1}}[name]
    alone = BACKENDS[name](p, **one).fit(RECORDS, S, A)
    assert np.array_equal(alone.q_, OfflineLearner(p).fit(RECORDS, S, A).q_)


def test_backends_are_listed_with_their_options(capsys):
    """``pimrl list --json`` names every backend; the GPU takes its
    partitions from ``--dpus``."""
    assert list(BACKENDS) == ["reference", "cpu", "gpu", "pim"]
    assert BACKENDS.entries["gpu"].flags["options"]["partitions"] == "dpus"
    assert main(["list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)["training backends"]
    assert all(name in json.dumps(listing) for name in BACKENDS)


def _train(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "pimrl", "train", "--env", "Taxi-v3",
                           "--transitions", "3000", "--epochs", "2", *argv], cwd=ROOT,
                          capture_output=True, text=True, env=env)


def test_gpu_backend_learns_the_dpus_tables(tmp_path):
    """``--backend gpu --dpus D --tasklets T`` learns the PIM run's tables (its partitions
    are the DPUs, its lanes the tasklets, tasklet mode rows by default) and averages them as
    ``mean`` does: bit for bit, in numba's CUDA simulator, which times nothing."""
    sim = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    for mode in ("rows", "ring"):
        gpu = _train("--backend", "gpu", "--dpus", "6", "--tasklets", "4", "--tasklet-mode",
                     mode, "--save-q", str(tmp_path / "g.npy"), "--json", env=sim)
        assert gpu.returncode == 0, gpu.stderr
        out = json.loads(gpu.stdout)
        assert out["backend"] == "gpu" and out["partitions"] == 6 and out["lanes"] == 4
        assert not out["measured"] and not _time_keys(out)       # the simulator: no times
        assert out["params"]["tasklet_mode"] == mode
        pim = _train("--backend", "pim", "--dpus", "6", "--tasklets", "4", "--tasklet-mode",
                     mode, "--save-q", str(tmp_path / "p.npy"), "--no-eval")
        assert pim.returncode == 0, pim.stderr
        assert np.array_equal(np.load(tmp_path / "g.npy"), np.load(tmp_path / "p.npy"))


def test_gpu_backend_without_a_gpu_says_so_in_one_line():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = _train("--backend", "gpu", "--dpus", "4", env=env)
    if done.returncode == 0:
        pytest.skip("a GPU is present")
    assert done.returncode == 2
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and "--backend gpu" in err[0] and "NUMBA_ENABLE_CUDASIM=1" in err[0]


@pytest.mark.parametrize("argv,needle", [
    (["--backend", "cpu", "--threads-per-block", "32"],
     "--threads-per-block only applies to --backend gpu (this run: --backend cpu)"),
    (["--backend", "gpu", "--threads", "2"], "--threads only applies to --backend cpu"),
    (["--backend", "gpu", "--aggregate", "weighted"], "--aggregate only applies to --backend pim"),
    (["--backend", "reference", "--tasklets", "4", "--dpus", "3"],
     "--dpus only applies to --backend gpu or pim"),
    (["--backend", "gpu", "--dpus", "4,8"], "the GPU runs one count of partitions"),
])
def test_an_option_of_another_backend_is_refused_in_one_line(capsys, argv, needle):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "100", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
