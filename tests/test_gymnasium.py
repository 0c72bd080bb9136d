"""Gymnasium environments by id (``gym:ID[,key=value]``): the tables are read from
``env.unwrapped.P`` and equal pimrl's own for every toy-text environment, a user's own
registered environment works, and what pimrl cannot use is refused in one line."""
import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="the gym extra is not installed (pip install 'pimrl[gym]')")

from pimrl.envs import make  # noqa: E402

FIELDS = ("next_state", "prob", "reward", "terminated", "initial_dist", "goal")


@pytest.mark.parametrize("gym_id,own_id", [
    ("gym:FrozenLake-v1", "FrozenLake-v1"),
    ("gym:FrozenLake-v1,is_slippery=False", "FrozenLake-v1:slippery=0"),
    ("gym:FrozenLake8x8-v1", "FrozenLake8x8-v1"),
    ("gym:FrozenLake-v1,map_name=8x8,max_episode_steps=200", "FrozenLake8x8-v1"),
    ("gym:Taxi-v4", "Taxi-v3"),
    ("gym:CliffWalking-v1", "CliffWalking-v1"),
])
def test_toy_text_tables_equal_pimrls_own(gym_id, own_id):
    g, own = make(gym_id), make(own_id)
    for f in FIELDS:
        assert np.array_equal(getattr(g, f), getattr(own, f)), f
    assert g.max_episode_steps == own.max_episode_steps
    assert make(g.env_id).env_id == g.env_id                    # the canonical id remakes it


def test_options_are_gymnasiums_and_the_registered_limit_is_kept():
    env = make("gym:FrozenLake-v1,map_name='8x8'")
    assert env.n_states == 64 and env.max_episode_steps == 100   # FrozenLake-v1's limit
    assert env.env_id == "gym:FrozenLake-v1,map_name='8x8'"
    assert env.desc[0] == "SFFFFFFF"
    assert "no registered limit" in make("gym:CliffWalking-v1").description


class Chain(gym.Env):
    """A user's own discrete environment with a transition table: a 5-state chain, action 1
    moves right with probability 0.9 (else stays), action 0 resets to 0; the last state
    terminates with reward 1. Its start is sampled (no initial_state_distrib)."""

    def __init__(self, n=5):
        self.observation_space = gym.spaces.Discrete(n)
        self.action_space = gym.spaces.Discrete(2)
        self.P = {s: {0: [(1.0, 0, 0.0, False)],
                      1: [(0.9, min(s + 1, n - 1), float(s + 1 == n - 1), s + 1 == n - 1),
                          (0.1, s, 0.0, False)]} for s in range(n)}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.s = int(self.np_random.integers(0, 2))
        return self.s, {}


def test_a_users_registered_environment():
    gym.register(id="pimrl-test/Chain-v0", entry_point=Chain, max_episode_steps=12)
    env = make("gym:pimrl-test/Chain-v0,n=6")
    assert (env.n_states, env.n_actions, env.n_outcomes) == (6, 2, 2)
    assert env.max_episode_steps == 12
    assert env.prob[2, 1].tolist() == [0.9, 0.1] and env.next_state[2, 1].tolist() == [3, 2]
    assert env.prob[2, 0].tolist() == [1.0, 0.0]                   # padded as pimrl pads
    assert env.goal.tolist() == [False] * 5 + [True]
    # sampled start: about half each of states 0 and 1
    assert env.initial_dist[2:].sum() == 0 and abs(env.initial_dist[0] - 0.5) < 0.02
    assert "estimated from 10000 resets" in env.description


@pytest.mark.parametrize("spec,words", [
    ("gym:Blackjack-v1", "observation space is Tuple"),
    ("gym:NoSuchEnv-v0", "Gymnasium cannot make it"),
    ("gym:FrozenLake-v1,bogus=1", "bad options"),
    ("gym:FrozenLake-v1,is_slippery", "not of the form key=value"),
    ("gym:", "no Gymnasium id"),
])
def test_what_pimrl_cannot_use_is_refused_in_one_line(spec, words):
    with pytest.raises(ValueError, match=words) as exc:
        make(spec)
    assert "\n" not in str(exc.value)


def test_an_env_without_a_table_is_refused():
    gym.register(id="pimrl-test/NoTable-v0", entry_point=_NoTable)
    with pytest.raises(ValueError, match="no transition table P"):
        make("gym:pimrl-test/NoTable-v0")


class _NoTable(gym.Env):
    observation_space = gym.spaces.Discrete(3)
    action_space = gym.spaces.Discrete(2)


def test_train_on_a_gymnasium_id_learns_the_same_table_as_pimrls_own(tmp_path):
    import subprocess
    import sys

    tables = []
    for env_id in ("gym:CliffWalking-v1", "CliffWalking-v1"):
        out = tmp_path / (env_id.replace(":", "_") + ".npy")
        r = subprocess.run([sys.executable, "-m", "pimrl", "train", "--env", env_id,
                            "--transitions", "100000", "--save-q", str(out), "--no-eval"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        tables.append(np.load(out))
    assert np.array_equal(tables[0], tables[1])


def test_without_the_extra_the_error_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gymnasium", None)       # import gymnasium fails
    with pytest.raises(ValueError, match=r"pip install 'pimrl\[gym\]'"):
        make("gym:FrozenLake-v1")
    from pimrl.data.minari_io import import_minari

    monkeypatch.setitem(sys.modules, "minari", None)
    with pytest.raises(ValueError, match=r"pip install 'pimrl\[minari\]'"):
        import_minari("some/dataset-v0")
