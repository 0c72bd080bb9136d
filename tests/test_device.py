"""``--device upmem``, tested against the simulator: PimTrainer through a stand-in for the
UPMEM SDK's ``dpu`` package (tests/sdk_standin: pimrl's simulator behind nothing but the
SDK's API, no ``PIMRL_SIMULATOR``, no ``dpu.simulator``) learns the simulator's Q-table bit
for bit, with the C kernel built by the ``dpu-upmem-dpurte-clang`` on PATH, and reports
measured times only; with pimrl's own ``dpu`` the switch is a clear error."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pimrl.cli import main
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners.params import LearnerParams
from pimrl.pim.cost import CATEGORIES
from pimrl.devices import DeviceError
from pimrl.swiftrl.trainer import PimTrainer

from conftest import REPO, SDK_STANDIN as STANDIN

ENV = make("FrozenLake-v1")
RECORDS = generate_dataset(ENV, 3000, 4)


@pytest.mark.needs_sdk_standin
@pytest.mark.parametrize("aggregate,dtype", [("sync:2", "fp32"), ("weighted", "int32")])
def test_upmem_trainer_matches_the_simulator_bit_for_bit(use_sdk_standin, aggregate, dtype):
    params = LearnerParams(dtype=dtype, sampling="ran", epochs=2, seed=3)
    kw = dict(n_dpus=5, tasklets=4, aggregate=aggregate, keep_dpu_tables=True)
    sim = PimTrainer(params, **kw).fit(RECORDS, ENV.n_states, ENV.n_actions)   # numba kernel
    sdk = use_sdk_standin()
    frozen = RECORDS.copy()
    frozen.setflags(write=False)             # e.g. a memory-mapped dataset: copied for the SDK
    upmem = PimTrainer(params, kernel="c", device="upmem", **kw).fit(
        frozen, ENV.n_states, ENV.n_actions)

    # The SDK's calls only: a C binary by path, the SDK's default profile; symbols by name.
    made = [c for c in sdk.CALLS if c[0] == "DpuSet"]
    assert len(made) == 1 and made[0][1]["profile"] == "" and made[0][1]["nr_dpus"] == 5
    assert Path(made[0][1]["binary"]).is_file() and "upmem" in made[0][1]["binary"]
    copied = {c[1] for c in sdk.CALLS if c[0] == "copy"}
    assert {"__sys_used_mram_end", "rng_state", "params", "q_table", "stats"} <= copied
    rounds = 2 if aggregate == "sync:2" else 1
    assert [c[0] for c in sdk.CALLS].count("exec") == rounds

    assert np.array_equal(upmem.q_, sim.q_)                # bit for bit
    assert np.array_equal(upmem.dpu_tables_, sim.dpu_tables_)
    assert np.array_equal(upmem.counters_, sim.counters_)
    assert upmem.n_updates_ == sim.n_updates_ > 0

    # Measured, never modelled: no modelled category, every phase timed by the host clock.
    t = upmem.timings_
    assert t.modelled_s == {} and t.events == []
    assert all(t.measured_s[c] > 0 for c in CATEGORIES if c != "inter_dpu" or rounds > 1)
    assert "run_wall" in t.measured_s and "simulation_wall" not in t.measured_s
    assert set(t.as_dict()) == {"measured_s", "measured_total_s"}
    assert all("measured_s" in r and "modelled_s" not in r for r in upmem.rounds_)
    assert sim.timings_.modelled_total_s > 0 and "modelled_s" in sim.rounds_[0]


@pytest.mark.needs_sdk_standin
def test_pimrl_train_device_upmem_through_the_sdk_package(tmp_path):
    """The command, in a process whose ``dpu`` is the stand-in (PYTHONPATH first, as the
    SDK's upmem_env.sh does), against the simulator's command: same table, measured times."""
    args = ["train", "--backend", "pim", "--env", "FrozenLake-v1", "--transitions", "2000",
            "--dpus", "3", "--tasklets", "4", "--epochs", "2", "--aggregate", "sync:2",
            "--json"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(STANDIN), str(REPO), os.environ.get("PYTHONPATH", "")]),
        PATH=f"{REPO / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, "-m", "pimrl", *args, "--device", "upmem",
                           "--save-q", str(tmp_path / "upmem.npy")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    run = out["runs"][0]
    assert run["device"] == "upmem" and run["kernel"] == "c"
    assert "modelled_s" not in run and "modelled_total_s" not in run
    assert run["measured_total_s"] == pytest.approx(sum(run["measured_s"][c] for c in CATEGORIES))
    assert "time_to_quality_measured_s" in run and "time_to_quality_modelled_s" not in run
    assert main([*args, "--save-q", str(tmp_path / "sim.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "upmem.npy"), np.load(tmp_path / "sim.npy"))


def test_device_upmem_with_pimrls_dpu_is_a_clear_error(capsys):
    rc = main(["train", "--backend", "pim", "--device", "upmem", "--env", "FrozenLake-v1",
               "--transitions", "100"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "pimrl train: error: --device upmem: the dpu package imported" in err
    assert "pimrl's simulator, not the UPMEM SDK's" in err and "upmem_env.sh" in err
    with pytest.raises(DeviceError, match="is pimrl's simulator"):
        PimTrainer(LearnerParams(), n_dpus=2, kernel="c", device="upmem").fit(
            RECORDS, ENV.n_states, ENV.n_actions)


def test_device_choices_are_checked():
    with pytest.raises(ValueError, match="use --kernel c"):
        PimTrainer(LearnerParams(), n_dpus=2, device="upmem").fit(RECORDS, ENV.n_states, ENV.n_actions)
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        PimTrainer(LearnerParams(), n_dpus=2, device="gpu").fit(RECORDS, ENV.n_states, ENV.n_actions)
    with pytest.raises(ValueError, match="own:2: state-owned learning runs on the simulator"):
        PimTrainer(LearnerParams(epochs=2), n_dpus=2, kernel="c", aggregate="own:2",
                   device="upmem").fit(RECORDS, ENV.n_states, ENV.n_actions)


ONLINE = ["train", "--online", "--env", "FrozenLake-v1", "--dpus", "5", "--tasklets", "4",
          "--steps", "600", "--json"]


@pytest.mark.needs_sdk_standin
@pytest.mark.parametrize("extra", [["--aggregate", "sync:3"],
                                   ["--aggregate", "sync:2:weighted", "--force-mram",
                                    "--algo", "sarsa", "--dtype", "int32"]])
def test_online_on_upmem_matches_the_simulator_bit_for_bit(use_sdk_standin, capsys, tmp_path,
                                                           extra):
    """``pimrl train --online --device upmem``: kernels/online.c built by the compiler on
    PATH, driven through nothing but the SDK's DpuSet (copies at offsets of symbols, exec),
    learns the simulator's tables bit for bit (tables in WRAM, and in MRAM), with measured
    times only."""
    assert main(ONLINE + extra + ["--save-q", str(tmp_path / "sim.npy")]) == 0
    sim = json.loads(capsys.readouterr().out)
    sdk = use_sdk_standin()
    assert main(ONLINE + extra + ["--device", "upmem", "--save-q", str(tmp_path / "up.npy")]) == 0
    up = json.loads(capsys.readouterr().out)
    assert (tmp_path / "sim.npy").read_bytes() == (tmp_path / "up.npy").read_bytes()
    made = [c for c in sdk.CALLS if c[0] == "DpuSet"]
    assert len(made) == 1 and "upmem" in made[0][1]["binary"] and made[0][1]["nr_dpus"] == 5
    assert [c[0] for c in sdk.CALLS].count("exec") == len(sim["rounds"])
    assert up["kernel"] == "c" and up["device"] == "upmem" and up["time_kind"] == "measured"
    assert "modelled_s" not in up and "time_to_quality_modelled_s" not in up
    assert up["measured_total_s"] == pytest.approx(sum(up["measured_s"][c] for c in CATEGORIES))
    assert all("measured_s" in r and "modelled_s" not in r for r in up["rounds"])
    for key in ("env_steps", "episodes", "saturations", "evaluation", "layout"):
        assert up[key] == sim[key], key
    for refused, needle in ((["--executor", "dask"], "runs kernels/online.c (--kernel c)"),
                            (["--checkpoint", str(tmp_path / "ck")],
                             "--checkpoint: runs on the simulator in this process only")):
        assert main(ONLINE + ["--device", "upmem", *refused]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1
    assert main(ONLINE[:-1] + ["--device", "upmem"]) == 0         # the text report
    text = capsys.readouterr().out
    assert "measured" in text and "modelled" not in text
