"""pimrl.envs tables, spec strings and the stateful API, checked against Gymnasium."""
from __future__ import annotations


import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.toy_text.frozen_lake import is_valid

from pimrl.envs import (
    TabularEnv,
    generate_frozen_lake_map,
    make,
    parse_spec,
    sample_outcome,
    sample_outcome_nb,
)

# (pimrl id, Gymnasium id, Gymnasium kwargs)
CASES = [
    ("FrozenLake-v1", "FrozenLake-v1", {}),
    ("FrozenLake-v1:slippery=0", "FrozenLake-v1", {"is_slippery": False}),
    ("FrozenLake8x8-v1", "FrozenLake8x8-v1", {}),
    ("FrozenLake8x8-v1:slippery=0", "FrozenLake8x8-v1", {"is_slippery": False}),
    ("Taxi-v3", "Taxi-v4", {}),
    ("CliffWalking-v1", "CliffWalking-v1", {}),
]


def assert_same_tables(env: TabularEnv, P: dict) -> None:
    """Every entry of Gymnasium's P[s][a] = [(prob, next, reward, terminated), ...], in order,
    and padding after it."""
    assert env.n_states == len(P)
    assert env.n_actions == len(P[0])
    assert env.n_outcomes == max(len(P[s][a]) for s in P for a in P[s])
    for s in range(env.n_states):
        for a in range(env.n_actions):
            li = P[s][a]
            for k, (p, ns, r, t) in enumerate(li):
                assert env.prob[s, a, k] == p, (s, a, k)
                assert env.next_state[s, a, k] == ns, (s, a, k)
                assert env.reward[s, a, k] == r, (s, a, k)
                assert bool(env.terminated[s, a, k]) == bool(t), (s, a, k)
            for k in range(len(li), env.n_outcomes):
                assert env.prob[s, a, k] == 0.0
                assert env.next_state[s, a, k] == s
                assert env.reward[s, a, k] == 0.0
                assert not env.terminated[s, a, k]


@pytest.mark.parametrize("env_id,gym_id,kwargs", CASES)
def test_tables_match_gymnasium(env_id, gym_id, kwargs):
    env = make(env_id)
    genv = gym.make(gym_id, **kwargs)
    assert_same_tables(env, genv.unwrapped.P)
    np.testing.assert_array_equal(env.initial_dist, genv.unwrapped.initial_state_distrib)
    assert env.next_state.dtype == np.int32 and env.prob.dtype == np.float64
    assert env.reward.dtype == np.float64 and env.terminated.dtype == np.bool_
    limit = gym.spec(gym_id).max_episode_steps
    assert env.max_episode_steps == (limit if limit is not None else 200)


def test_known_sizes_and_goals():
    taxi = make("Taxi-v3")
    assert (taxi.n_states, taxi.n_actions, taxi.n_outcomes) == (500, 6, 1)
    assert np.count_nonzero(taxi.initial_dist) == 300
    # goal states: exactly the successors of successful dropoffs
    delivered = np.unique(taxi.next_state[taxi.terminated])
    np.testing.assert_array_equal(np.flatnonzero(taxi.goal), delivered)
    assert delivered.size == 4
    # 404 states observable in episodes from the start distribution
    reach = taxi.initial_dist > 0
    while True:
        new = reach.copy()
        new[taxi.next_state[reach & ~taxi.goal].ravel()] = True  # episodes end in a goal
        if (new == reach).all():
            break
        reach = new
    assert reach.sum() == 404
    cliff = make("CliffWalking-v1")
    assert np.flatnonzero(cliff.goal).tolist() == [47]
    assert np.flatnonzero(cliff.initial_dist).tolist() == [36]
    fl = make("FrozenLake-v1")
    assert np.flatnonzero(fl.goal).tolist() == [15]
    assert fl.n_outcomes == 3


@pytest.mark.parametrize("size,seed,slippery", [(2, 0, 1), (5, 1, 1), (6, 2, 0), (12, 3, 1), (16, 4, 0)])
def test_generated_frozen_lake_matches_gymnasium(size, seed, slippery):
    env = make(f"FrozenLake-v1:size={size},seed={seed},slippery={slippery}")
    desc = generate_frozen_lake_map(size, seed)
    assert env.desc == desc
    assert len(desc) == size and all(len(r) == size for r in desc)
    assert desc[0][0] == "S" and desc[-1][-1] == "G"
    assert is_valid([list(r) for r in desc], size)
    genv = gym.make("FrozenLake-v1", desc=list(desc), is_slippery=bool(slippery))
    assert_same_tables(env, genv.unwrapped.P)
    np.testing.assert_array_equal(env.initial_dist, genv.unwrapped.initial_state_distrib)
    assert env.max_episode_steps == 25 * size


def test_generator_is_seeded_and_varied():
    a = generate_frozen_lake_map(10, 7)
    assert a == generate_frozen_lake_map(10, 7)
    assert a != generate_frozen_lake_map(10, 8)
    holes = sum(r.count("H") for r in generate_frozen_lake_map(40, 0))
    assert 0.1 < holes / 1600 < 0.3


def test_large_map_builds_valid_tables():
    env = make("FrozenLake-v1:size=64,seed=2")
    again = make("FrozenLake-v1:size=64,seed=2")
    for field in ("next_state", "prob", "reward", "terminated"):
        np.testing.assert_array_equal(getattr(env, field), getattr(again, field))  # seeded
    assert env.next_state.shape == (4096, 4, 3)
    assert env.next_state.min() >= 0 and env.next_state.max() < 4096
    assert env.reward.max() == 1.0 and set(np.unique(env.reward)) <= {0.0, 1.0}
    assert env.max_episode_steps == 1600
    np.testing.assert_allclose(env.prob.sum(axis=2), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("spec,canonical", [
    ("FrozenLake-v1", "FrozenLake-v1"),
    ("FrozenLake-v1:slippery=1", "FrozenLake-v1"),
    ("FrozenLake-v1:slippery=0", "FrozenLake-v1:slippery=0"),
    ("FrozenLake-v1:slippery=0,size=32,seed=7", "FrozenLake-v1:seed=7,size=32,slippery=0"),
    ("FrozenLake-v1: size=8 ", "FrozenLake-v1:seed=0,size=8"),
    ("FrozenLake8x8-v1:max_steps=200", "FrozenLake8x8-v1"),
    ("Taxi-v4", "Taxi-v3"),
    ("CliffWalking-v1:max_steps=500", "CliffWalking-v1:max_steps=500"),
])
def test_canonical_ids_round_trip(spec, canonical):
    env = make(spec)
    assert env.env_id == canonical
    again = make(env.env_id)
    assert again.env_id == canonical
    for name in ("next_state", "prob", "reward", "terminated", "initial_dist", "goal"):
        np.testing.assert_array_equal(getattr(env, name), getattr(again, name))
    assert again.max_episode_steps == env.max_episode_steps


def test_overrides_and_max_steps():
    assert make("FrozenLake-v1", slippery=0).env_id == "FrozenLake-v1:slippery=0"
    assert make("FrozenLake-v1:slippery=0", slippery=True).env_id == "FrozenLake-v1"
    assert make("CliffWalking-v1").max_episode_steps == 200
    assert make("CliffWalking-v1", max_steps=1000).max_episode_steps == 1000
    assert parse_spec("Taxi-v4") == ("Taxi-v3", {})


@pytest.mark.parametrize("spec,token", [
    ("FrozenLake-v2", "FrozenLake-v2"),
    ("Taxi-v3:slippery=1", "slippery"),
    ("FrozenLake-v1:slippery=2", "slippery=2"),
    ("FrozenLake-v1:slippery=yes", "slippery=yes"),
    ("FrozenLake-v1:size=1", "size=1"),
    ("FrozenLake-v1:seed=3", "seed"),
    ("FrozenLake-v1:size", "size"),
    ("FrozenLake-v1:size=4,size=5", "size"),
    ("CliffWalking-v1:max_steps=0", "max_steps=0"),
    ("", "''"),
])
def test_bad_ids_name_the_token(spec, token):
    with pytest.raises(ValueError) as exc:
        make(spec)
    assert token in str(exc.value)


def test_bad_name_lists_choices():
    with pytest.raises(ValueError, match="FrozenLake-v1.*Taxi-v3"):
        make("Blackjack-v1")
    with pytest.raises(ValueError, match="valid options: copies, max_steps, seed, size, slippery"):
        make("FrozenLake-v1:color=1")


def test_arrays_are_read_only():
    env = make("FrozenLake-v1")
    with pytest.raises(ValueError):
        env.prob[0, 0, 0] = 0.5


@pytest.mark.parametrize("env_id,gym_id,kwargs", [CASES[0], CASES[2], CASES[4], CASES[5]])
def test_reset_step_follow_gymnasium_draw_for_draw(env_id, gym_id, kwargs):
    """Same seed, same actions: the same trajectory as Gymnasium (same generator, same
    inverse-CDF draws), truncation included."""
    env = make(env_id, max_steps=gym.spec(gym_id).max_episode_steps or 200)
    genv = gym.make(gym_id, max_episode_steps=env.max_episode_steps, **kwargs)
    acts = np.random.default_rng(0)
    for episode in range(20):
        ours = env.reset(seed=episode)
        theirs = genv.reset(seed=episode)
        assert ours[0] == theirs[0]
        done = False
        while not done:
            a = int(acts.integers(env.n_actions))
            o = env.step(a)
            g = genv.step(a)
            assert o[:4] == tuple(g[:4])
            done = o[2] or o[3]
    with pytest.raises(RuntimeError):
        env.step(0)


def test_reset_without_seed_continues_stream():
    env = make("FrozenLake-v1")
    env.reset(seed=1)
    s1 = [env.step(1)[0] for _ in range(3)]
    env.reset(seed=1)
    assert [env.step(1)[0] for _ in range(3)] == s1
    s, info = env.reset()
    assert s == 0 and info["prob"] == 1.0


def test_sample_outcome_frequencies_and_numba_twin():
    env = make("FrozenLake-v1")
    u = np.random.default_rng(3).random(30000)
    k = sample_outcome(env, 6, 2, u)
    assert k.shape == u.shape
    np.testing.assert_allclose(np.bincount(k, minlength=3) / u.size, [1 / 3] * 3, atol=0.01)
    assert sample_outcome(env, 5, 0, 0.999999999) == 0       # hole: one outcome, never padding
    assert sample_outcome(env, 6, 2, np.nextafter(1.0, 0)) == 2
    for s, a, uu in [(0, 0, 0.0), (6, 1, 0.5), (6, 3, 0.34), (15, 2, 0.9), (14, 2, 0.99999)]:
        assert sample_outcome_nb(env.cum_prob, s, a, uu) == sample_outcome(env, s, a, uu)
    assert (env.cum_prob[..., -1] == 1.0).all()


def test_copies_tile_the_tables_and_keep_the_optimum():
    """K independent copies: copy c's outcomes are copy 0's shifted by c * S, an episode
    starts in a uniformly drawn copy, and the optimum (value iteration, exact evaluation) is
    the single copy's; a policy that is optimal in every copy but one falls short."""
    from pimrl.envs import evaluate_against_optimum
    from pimrl.envs.planning import value_iteration

    one, three = make("Taxi-v3"), make("Taxi-v3:copies=3")
    assert three.env_id == "Taxi-v3:copies=3" and make(three.env_id).n_states == 1500
    assert three.n_states == 3 * one.n_states and three.n_actions == one.n_actions
    for c in range(3):
        block = slice(c * 500, (c + 1) * 500)
        np.testing.assert_array_equal(three.next_state[block], one.next_state + c * 500)
        np.testing.assert_array_equal(three.reward[block], one.reward)
        np.testing.assert_array_equal(three.goal[block], one.goal)
        np.testing.assert_allclose(three.initial_dist[block], one.initial_dist / 3)
    q_one = value_iteration(one, 0.95)[0]
    q = np.tile(q_one, (3, 1))
    ev = evaluate_against_optimum(three, q, 0.95)
    single = evaluate_against_optimum(one, q_one, 0.95)
    assert ev["optimal_mean_return"] == pytest.approx(single["optimal_mean_return"])
    assert ev["mean_return"] == pytest.approx(single["optimal_mean_return"])
    q[1000:] = 0.0                          # copy 2 left unlearned
    assert evaluate_against_optimum(three, q, 0.95)["mean_return"] < ev["mean_return"] - 1


def test_copies_are_bounded():
    with pytest.raises(ValueError, match="copies"):
        make("Taxi-v3:copies=0")
    with pytest.raises(ValueError, match="outcome entries"):
        make("FrozenLake-v1:size=1024,copies=100")
