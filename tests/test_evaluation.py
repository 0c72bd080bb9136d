"""Value iteration, exact and sampled evaluation, and the ``pimrl eval`` command."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from pimrl.cli import UserError
from pimrl.envs import (
    TabularEnv,
    evaluate_against_optimum,
    evaluate_exact,
    evaluate_rollouts,
    finite_horizon_value,
    greedy_policy,
    make,
    q_backup,
    value_iteration,
)
from pimrl.cli import eval as envs_cli


# ---- value iteration and the known optima -------------------------------------------------
def test_frozen_lake_4x4_optimum():
    env = make("FrozenLake-v1")
    q, v = value_iteration(env, 0.99)
    res = evaluate_exact(env, q)
    assert res.success_rate == pytest.approx(0.740, abs=0.002)
    assert res.mean_return == pytest.approx(res.success_rate, abs=1e-12)   # reward 1 at G only
    # the best success in 100 steps over all (time-dependent) policies: Gymnasium's 0.74
    assert finite_horizon_value(env) == pytest.approx(0.744, abs=0.001)
    assert res.success_rate <= finite_horizon_value(env) + 1e-12


def test_frozen_lake_8x8_optimum():
    env = make("FrozenLake8x8-v1")
    best = finite_horizon_value(env)
    assert best == pytest.approx(0.913, abs=0.001)   # Gymnasium's "optimum = 0.91"
    q, _ = value_iteration(env, 0.995)
    res = evaluate_exact(env, q)
    assert 0.88 < res.success_rate <= best + 1e-12
    # with gamma close to 1 the greedy policy is safe: it reaches G almost surely, given time
    q, _ = value_iteration(env, 0.999)
    assert evaluate_exact(env, q, horizon=5000).success_rate > 0.9999


def test_taxi_optimum():
    env = make("Taxi-v3")
    q, _ = value_iteration(env, 0.95)
    res = evaluate_exact(env, q)
    assert res.success_rate == pytest.approx(1.0, abs=1e-12)
    # 21 - (mean shortest episode length) over the 300 start states; 8.46 was the optimum of
    # older Taxi versions whose start distribution differed
    assert res.mean_return == pytest.approx(7.93, abs=1e-9)
    assert res.mean_return == pytest.approx(finite_horizon_value(env), abs=1e-9)


def test_cliff_walking_optimum():
    env = make("CliffWalking-v1")
    q, v = value_iteration(env, 0.95)
    res = evaluate_exact(env, q)
    assert res.success_rate == 1.0
    assert res.mean_return == -13.0
    assert res.mean_length == 13.0


def test_value_iteration_fixed_point_and_terminals():
    for env_id, gamma in [("FrozenLake-v1", 0.95), ("Taxi-v3", 0.9), ("CliffWalking-v1", 0.99),
                          ("FrozenLake-v1:size=20,seed=5", 0.97)]:
        env = make(env_id)
        q, v = value_iteration(env, gamma, tol=1e-12)
        assert q.dtype == np.float64 and q.shape == (env.n_states, env.n_actions)
        np.testing.assert_array_equal(v, q.max(axis=1))
        np.testing.assert_allclose(q_backup(env, v, gamma), q, atol=1e-9)
    env = make("FrozenLake-v1")
    q, v = value_iteration(env, 0.9)
    assert (q[[5, 7, 11, 12, 15]] == 0.0).all()          # holes and goal: terminated, reward 0
    assert q[14, 2] > 1 / 3                              # the 1/3 chance of G does not bootstrap
    with pytest.raises(RuntimeError, match="did not converge"):
        value_iteration(env, 0.99, max_iter=3)
    with pytest.raises(ValueError):
        value_iteration(env, 1.5)


# ---- exact evaluation -------------------------------------------------------------------
def tiny_env(horizon=3):
    """s0 -a0-> G (p 0.5, +1, terminated) or s1 (p 0.5, 0); s1 -a0-> s0 (-1). a1 stays put, 0."""
    ns = np.array([[[2, 1], [0, 0]], [[0, 1], [1, 1]], [[2, 2], [2, 2]]], dtype=np.int32)
    p = np.array([[[0.5, 0.5], [1, 0]], [[1, 0], [1, 0]], [[1, 0], [1, 0]]], dtype=float)
    r = np.array([[[1, 0], [0, 0]], [[-1, 0], [0, 0]], [[0, 0], [0, 0]]], dtype=float)
    t = np.array([[[1, 0], [0, 0]], [[0, 0], [0, 0]], [[1, 0], [1, 0]]], dtype=bool)
    return TabularEnv(next_state=ns, prob=p, reward=r, terminated=t,
                      initial_dist=[1.0, 0, 0], goal=[False, False, True],
                      max_episode_steps=horizon, env_id="tiny")


def test_exact_evaluation_by_hand():
    env = tiny_env()
    res = evaluate_exact(env, np.array([0, 0, 0]))
    # step 1: success 0.5, reward 0.5; step 2: from s1 reward -0.5; step 3: success 0.25
    assert res.success_rate == pytest.approx(0.75)
    assert res.mean_return == pytest.approx(0.25)
    assert res.mean_length == pytest.approx(2.0)
    assert res.method == "exact" and res.horizon == 3
    res = evaluate_exact(env, np.array([1, 0, 0]))           # stays in s0 until truncation
    assert (res.success_rate, res.mean_return, res.mean_length) == (0.0, 0.0, 3.0)
    res = evaluate_exact(env, np.array([0, 0, 0]), horizon=1)
    assert (res.success_rate, res.mean_return) == (0.5, 0.5)
    roll = evaluate_rollouts(env, np.array([0, 0, 0]), 20000, seed=1)
    assert abs(roll.success_rate - 0.75) < 4 * roll.success_rate_se


def test_greedy_policy_ties_and_policy_inputs():
    q = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [-1.0, -1.0, -1.0]])
    assert greedy_policy(q).tolist() == [0, 1, 0]
    env = make("FrozenLake-v1")
    with pytest.raises(ValueError, match="expected"):
        evaluate_exact(env, np.zeros((16, 3)))
    with pytest.raises(ValueError):
        evaluate_exact(env, np.full(16, 4))


# ---- exact vs rollouts ------------------------------------------------------------------
def _policies():
    rng = np.random.default_rng(11)
    for env_id, gamma in [("FrozenLake-v1", 0.99), ("FrozenLake8x8-v1", 0.99),
                          ("Taxi-v3", 0.95), ("FrozenLake-v1:size=16,seed=3", 0.99)]:
        env = make(env_id)
        yield env_id + " optimal", env, value_iteration(env, gamma)[0]
        yield env_id + " random", env, rng.integers(env.n_actions, size=env.n_states)
    env = make("CliffWalking-v1")
    pi = np.ones(env.n_states, dtype=np.int64)     # Right everywhere ...
    pi[24:36] = 2                                  # ... Down from row 2: into the cliff
    pi[36] = 0                                     # Up from the start
    yield "CliffWalking cliff-prone", env, pi


@pytest.mark.parametrize("name,env,policy", list(_policies()), ids=lambda x: x if isinstance(x, str) else "")
def test_exact_agrees_with_rollouts(name, env, policy):
    exact = evaluate_exact(env, policy)
    roll = evaluate_rollouts(env, policy, 10_000, seed=2024)
    assert roll.n_episodes == 10_000 and roll.method == "rollouts"
    for field in ("success_rate", "mean_return"):
        se = getattr(roll, field + "_se")
        diff = abs(getattr(roll, field) - getattr(exact, field))
        assert diff <= max(4 * se, 1e-9), (field, exact, roll)
    again = evaluate_rollouts(env, policy, 10_000, seed=2024)
    assert again == roll                                   # seeded


def test_rollouts_that_never_end_stop_at_the_horizon():
    env = make("Taxi-v3")
    res = evaluate_rollouts(env, np.zeros((500, 6)), 10_000, seed=0)   # never terminates
    assert res.n_episodes == 10_000 and res.horizon == 200
    assert res.mean_return == -200.0 and res.success_rate == 0.0       # -1 a step, 200 steps
    assert res.mean_return_se == 0.0 and res.success_rate_se == 0.0


def test_exact_on_a_large_map_grows_with_the_horizon():
    env = make("FrozenLake-v1:size=64,seed=1")
    pi = np.random.default_rng(0).integers(4, size=env.n_states)
    short, long = evaluate_exact(env, pi, horizon=800), evaluate_exact(env, pi, horizon=1600)
    assert short.horizon == 800 and long.horizon == 1600
    assert 0.0 <= short.success_rate <= long.success_rate <= 1.0
    q_star, _ = value_iteration(env, 0.99)
    best = evaluate_exact(env, q_star, horizon=1600)
    assert best.success_rate > long.success_rate                      # the optimum does better


def test_evaluate_against_optimum():
    env = make("FrozenLake-v1")
    out = evaluate_against_optimum(env, np.zeros((16, 4)), 0.95)
    assert {"success_rate", "mean_return", "optimal_success_rate", "optimal_mean_return",
            "gamma", "env_id", "method"} <= set(out)
    assert out["method"] == "exact" and out["env_id"] == "FrozenLake-v1" and out["gamma"] == 0.95
    assert out["success_rate"] < out["optimal_success_rate"]
    out = evaluate_against_optimum(env, np.zeros((16, 4)), 0.95, n_rollouts=500, seed=1)
    assert out["method"] == "rollouts" and out["n_episodes"] == 500


# ---- the pimrl eval command -------------------------------------------------------------
def _parse(argv):
    parser = argparse.ArgumentParser(prog="pimrl")
    envs_cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


@pytest.mark.parametrize("env_id,gamma", [("FrozenLake-v1", 0.95), ("Taxi-v4", 0.9)])
def test_cli_json_on_value_iteration_q(tmp_path, capsys, env_id, gamma):
    env = make(env_id)
    q, _ = value_iteration(env, gamma)
    path = tmp_path / "q.npy"
    np.save(path, q)
    args = _parse(["eval", "--q", str(path), "--env", env_id, "--gamma", str(gamma), "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success_rate"] == out["optimal_success_rate"]
    assert out["mean_return"] == out["optimal_mean_return"]
    assert out["env_id"] == env.env_id and out["method"] == "exact" and out["gamma"] == gamma


def test_cli_table_output(tmp_path, capsys):
    path = tmp_path / "q.npy"
    np.save(path, np.zeros((16, 4), dtype=np.float32))
    args = _parse(["eval", "--q", str(path), "--env", "FrozenLake-v1"])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "computed exactly from the tables" in text
    assert "success rate" in text and "mean return" in text and "optimum" in text
    args = _parse(["eval", "--q", str(path), "--env", "FrozenLake-v1", "--rollouts", "300",
                   "--seed", "4"])
    assert args.func(args) == 0
    assert "300 seeded rollouts" in capsys.readouterr().out


def test_cli_rejects_bad_q_files(tmp_path):
    bad_shape = tmp_path / "shape.npy"
    np.save(bad_shape, np.zeros((16, 3)))
    with pytest.raises(UserError, match=r"shape\.npy.*\(16, 3\).*\(16, 4\)"):
        a = _parse(["eval", "--q", str(bad_shape), "--env", "FrozenLake-v1"])
        a.func(a)
    has_nan = tmp_path / "nan.npy"
    q = np.zeros((16, 4))
    q[7, 1] = q[9, 0] = np.nan
    np.save(has_nan, q)
    with pytest.raises(UserError, match=r"nan\.npy.*NaN.*\(7, 1\)"):
        a = _parse(["eval", "--q", str(has_nan), "--env", "FrozenLake-v1"])
        a.func(a)
    with pytest.raises(UserError, match="missing.npy"):
        a = _parse(["eval", "--q", str(tmp_path / "missing.npy"), "--env", "FrozenLake-v1"])
        a.func(a)
    with pytest.raises(UserError, match="Taxi-v9"):
        a = _parse(["eval", "--q", str(has_nan), "--env", "Taxi-v9"])
        a.func(a)


def test_pimrl_main_registers_eval(tmp_path, capsys):
    from pimrl.cli import main

    path = tmp_path / "q.npy"
    np.save(path, np.zeros((48, 4)))
    assert main(["eval", "--q", str(path), "--env", "CliffWalking-v1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["optimal_mean_return"] == -13.0 and out["success_rate"] == 0.0
    assert main(["eval", "--q", str(path), "--env", "FrozenLake-v1"]) == 2
    assert "expected (16, 4)" in capsys.readouterr().err
