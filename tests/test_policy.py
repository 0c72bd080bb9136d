"""Learned tables as policies: callables on an observation, a file that loads with numpy
alone, ``pimrl train --save-policy`` and ``pimrl eval`` in the real Gymnasium env."""
import json
import subprocess
import sys

import numpy as np
import pytest

from pimrl.envs import evaluate_exact, make, value_iteration
from pimrl.policy import EpsilonGreedyPolicy, GreedyPolicy, load_policy


def test_greedy_policy_is_the_argmax_lowest_among_ties():
    q = np.array([[0.0, 1.0, 1.0], [2.0, 2.0, -1.0]])
    pi = GreedyPolicy(q, env_id="x")
    assert [pi(0), pi(np.int64(1))] == [1, 0]
    with pytest.raises(ValueError, match="outside"):
        pi(2)
    with pytest.raises(ValueError, match="not a discrete state"):
        pi("zero")
    with pytest.raises(ValueError, match="NaN"):
        GreedyPolicy(np.array([[np.nan]]))


def test_epsilon_greedy_explores_at_its_rate_and_is_seeded():
    q = np.tile([0.0, 0.0, 5.0, 0.0], (3, 1))
    a = EpsilonGreedyPolicy(q, 0.3, seed=4)
    acts = np.array([a(1) for _ in range(20000)])
    # greedy 70 % + a quarter of the explorations
    assert abs((acts == 2).mean() - (0.7 + 0.3 / 4)) < 0.015
    b = EpsilonGreedyPolicy(q, 0.3, seed=4)
    assert [b(1) for _ in range(20000)] == acts.tolist()


def test_policy_file_loads_without_pimrl(tmp_path):
    env = make("FrozenLake-v1")
    q, _ = value_iteration(env, 0.95)
    path = tmp_path / "p.npz"
    GreedyPolicy(q, env.env_id, {"note": "vi"}).save(path)
    code = ("import json, numpy; z = numpy.load(%r, allow_pickle=False); "
            "m = json.loads(str(z['metadata'])); "
            "print(m['format'], m['env_id'], m['note'], int(z['greedy_action'][0]), z['q'].shape)"
            % str(path))
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout.split()
    assert out[:4] == ["pimrl-policy", "FrozenLake-v1", "vi", str(int(np.argmax(q[0])))]
    back = load_policy(path)
    assert isinstance(back, GreedyPolicy) and back.env_id == "FrozenLake-v1"
    assert np.array_equal(back.q, q) and back.metadata == {"note": "vi"}
    EpsilonGreedyPolicy(q, 0.1, 7).save(tmp_path / "e.npz")
    e = load_policy(tmp_path / "e.npz")
    assert isinstance(e, EpsilonGreedyPolicy) and (e.epsilon, e.seed) == (0.1, 7)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a pimrl policy file"):
        load_policy(tmp_path / "bad.npz")


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "pimrl", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_save_policy_then_roll_it_out_in_gymnasium(tmp_path):
    pytest.importorskip("gymnasium")
    pol = tmp_path / "lake.npz"
    r = run("train", "--env", "gym:FrozenLake-v1", "--transitions", "100000", "--epochs", "2",
            "--save-policy", str(pol), "--no-eval")
    assert r.returncode == 0, r.stderr
    pi = load_policy(pol)
    assert pi.env_id == "gym:FrozenLake-v1" and pi.metadata["learner"]["epochs"] == 2
    r = run("eval", "--q", str(pol), "--env", "gym:FrozenLake-v1", "--rollouts", "1500", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    g = res["gymnasium"]
    exact = evaluate_exact(make("FrozenLake-v1"), pi.q)
    assert res["success_rate"] == pytest.approx(exact.success_rate)
    # the real env agrees with the tables within its confidence interval (x1.5 for safety)
    assert abs(g["success_rate"] - exact.success_rate) <= 1.5 * g["success_rate_ci95"]
    assert g["n_episodes"] == 1500 and g["success_rate_ci95"] > 0
    r = run("train", "--env", "Taxi-v3", "--transitions", "100", "--save-policy", str(tmp_path / "p.npy"))
    assert r.returncode == 2 and "PATH.npz" in r.stderr
