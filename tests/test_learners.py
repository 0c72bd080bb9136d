"""Reference learners: the oracle for every other backend."""
import dataclasses
import json

import numba
import numpy as np
import pytest

from conftest import random_records
from pimrl.learners.variants import all_variants
from pimrl.cli import main
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners import fixedpoint
from pimrl.learners.oracle import oracle_learn
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import OfflineLearner, learn_partition
from pimrl.partition import SPLIT, even_bounds, lane_bounds, state_lanes
from pimrl.rng import below, lane_seed, lane_seeds, xorshift32

# The twelve algo x dtype x sampling variants, from the registry.
VARIANTS = [(v.algo, v.dtype, v.sampling) for v in all_variants()]


def test_xorshift32_known_values():
    # Marsaglia's xorshift32 (13, 17, 5) from state 1.
    x, seen = 1, []
    for _ in range(3):
        x = int(xorshift32(np.uint32(x)))
        seen.append(x)
    assert seen == [270369, 67634689, 2647435461]
    assert below(np.uint32(0xFFFFFFFF), 10) == 9 and below(np.uint32(0), 10) == 0


def test_lane_seeds_vectorised_equals_scalar():
    for seed in (0, 1, 2**33 + 5, 2**64 - 1):
        ids = np.arange(0, 5000, 37)
        assert list(lane_seeds(seed, ids)) == [lane_seed(seed, int(i)) for i in ids]
    assert len(set(lane_seeds(0, np.arange(100000)).tolist())) > 99990


def test_even_bounds_spread_remainder():
    b = even_bounds(10, 4)
    assert list(b) == [0, 3, 6, 8, 10]
    lanes = lane_bounds(even_bounds(103, 7), 16)
    sizes = lanes[..., 1] - lanes[..., 0]
    assert sizes.sum() == 103 and sizes.max() - sizes.min() <= 1
    assert np.all(lanes[:, 1:, 0] == lanes[:, :-1, 1])


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_reference_equals_plain_python_oracle(algo, dtype, sampling, records_small):
    """The compiled reference follows docs/design.md exactly: compare with a pure-Python
    re-statement, several lanes, several epochs, both SARSA next-action modes."""
    recs = records_small
    for next_action in (["logged", "epsilon-greedy"] if algo == "sarsa" else ["logged"]):
        p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=3, stride=3,
                          next_action=next_action, epsilon=0.3, seed=11)
        lanes = lane_bounds(even_bounds(len(recs), 1), 5)[0]
        res = learn_partition(recs, 11, 4, p, lanes, lane_ids=np.arange(20, 25))
        q, sat = oracle_learn(recs, 11, 4, p, [tuple(map(int, x)) for x in lanes], range(20, 25))
        assert np.array_equal(res.q_raw, q)
        assert res.saturations == sat


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_rows_mode_equals_plain_python_oracle(algo, dtype, sampling, records_small):
    """Tasklet mode ``rows``: the lanes grouped by the states they own, each epoch a snapshot,
    every lane bootstrapping from its own rows live and its siblings' from the snapshot,
    against the pure-Python re-statement; one heavy state included."""
    recs = records_small.copy()
    recs["state"][:400] = 3                       # one state holds a third of the records
    for next_action in (["logged", "epsilon-greedy"] if algo == "sarsa" else ["logged"]):
        p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=3, stride=3,
                          next_action=next_action, epsilon=0.3, seed=11, tasklet_mode="rows")
        order, lanes, owner, state_list, list_bounds = state_lanes(
            recs["state"], [0, len(recs)], 5, 11, recs["action"], 4)
        ordered = recs[order]
        assert owner[0, 3] == SPLIT, "the heavy state is split over lanes by action"
        res = learn_partition(ordered, 11, 4, p, lanes[0], lane_ids=np.arange(20, 25),
                              owners=(owner[0], state_list[0], list_bounds[0]))
        q, sat = oracle_learn(ordered, 11, 4, p, [tuple(map(int, x)) for x in lanes[0]],
                              range(20, 25), owner=owner[0])
        assert np.array_equal(res.q_raw, q), next_action
        assert res.saturations == sat
        ring = learn_partition(ordered, 11, 4, dataclasses.replace(p, tasklet_mode="ring"),
                               lanes[0], lane_ids=np.arange(20, 25))
        assert not np.array_equal(ring.q_raw, res.q_raw)     # the modes differ


@pytest.mark.parametrize("algo,dtype,sampling", VARIANTS)
def test_one_lane_loop_equals_plain_python_oracle(algo, dtype, sampling, records_small):
    """The one-lane loop (the CPU baseline's; its record loop has its own shape per kind of
    variant) against the pure-Python oracle: one lane over odd record ranges, a stride that
    divides none of them, several epochs, both SARSA next-action modes."""
    recs = records_small
    for next_action in (["logged", "epsilon-greedy"] if algo == "sarsa" else ["logged"]):
        p = LearnerParams(algo=algo, dtype=dtype, sampling=sampling, epochs=3, stride=5,
                          next_action=next_action, epsilon=0.3, seed=11)
        for lo, hi in ((0, len(recs)), (3, 4), (101, 104), (7, 650)):
            res = learn_partition(recs, 11, 4, p, [(lo, hi)], lane_ids=[9])
            q, sat = oracle_learn(recs, 11, 4, p, [(lo, hi)], [9])
            assert np.array_equal(res.q_raw, q), (lo, hi, next_action)
            assert res.saturations == sat


def test_int32_loops_refuse_rewards_apart_from_the_words(records_small):
    """INT32 loops read the Q-format reward in word 2 of the records: a rewards array that is
    not the words themselves (record_words gives one array twice) is refused, not ignored."""
    from pimrl.learners.kernels import compiled
    from pimrl.learners.reference import record_words

    p = LearnerParams(dtype="int32", epochs=1)
    words, rewards = record_words(records_small, p)
    assert rewards is words
    args = (np.array([[[0, len(records_small)]]]), np.ones((1, 1), np.uint32),
            np.zeros((1, 11, 4), np.int32), p.kernel_scalars(), np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="reads the rewards from the words"):
        compiled(p.variant).partitions(words, words.copy(), *args)
    compiled(p.variant).partitions(words, rewards, *args)


@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_reference_equals_oracle_on_fractional_and_large_rewards(dtype):
    """Rewards that are not integers exercise Q-format rounding (ties included) and FP32's
    operation order; large ones push values toward the int32 range."""
    recs = random_records(400, 6, 3, seed=3)
    rs = np.random.default_rng(4)
    recs["reward"] = (rs.normal(0, 40, len(recs)) + rs.choice([0.5, 0.25, 1 / 3], len(recs))).astype(np.float32)
    recs["reward"][:5] = [2.5, -2.5, 0.5 / 65536, 1.5 / 65536, 30000.0]
    for algo in ("q", "sarsa"):
        p = LearnerParams(algo=algo, dtype=dtype, sampling="ran", epochs=4, alpha=0.37,
                          gamma=0.99, next_action="epsilon-greedy", seed=1)
        lanes = lane_bounds(even_bounds(len(recs), 1), 3)[0]
        res = learn_partition(recs, 6, 3, p, lanes, lane_ids=[0, 1, 2])
        q, sat = oracle_learn(recs, 6, 3, p, [tuple(map(int, x)) for x in lanes], [0, 1, 2])
        assert np.array_equal(res.q_raw, q)
        assert res.saturations == sat


def test_str_order_visits_every_record_once_per_epoch():
    recs = random_records(50, 50, 1, p_terminal=1.0)
    recs["state"] = np.arange(50)
    recs["reward"] = 1.0
    for stride in (1, 3, 7, 49, 60):
        p = LearnerParams(sampling="str", stride=stride, alpha=1.0, epochs=1)
        q = learn_partition(recs, 50, 1, p, np.array([[0, 50]])).q_raw
        assert np.all(q[:, 0] == 1.0), stride


def test_terminal_stops_bootstrapping_and_max_starts_at_first_action():
    # Two records: s=0 -> s'=1 (non-terminal, reward -1); Q[1] all negative.
    from pimrl.data.records import TRANSITION_DTYPE

    rec = np.zeros(2, TRANSITION_DTYPE)
    rec[0] = (1, 1, -5.0, 0, 0, 1, 0)          # terminal: Q[1,0] = -5 with alpha 1
    rec[1] = (0, 1, -1.0, 0, 0, 0, 0)
    p = LearnerParams(alpha=1.0, gamma=0.5)
    q = OfflineLearner(p).fit(rec, 2, 1).q_
    assert q[1, 0] == -5.0
    assert q[0, 0] == -1.0 + 0.5 * -5.0        # not clipped at 0 (SwiftRL's max fault)


def test_sarsa_logged_rejects_unknown_next_action():
    rec = random_records(10, 3, 2, p_terminal=0.0)
    rec["next_action"][4] = 255
    with pytest.raises(ValueError, match="record 4: next_action=255"):
        OfflineLearner(algo="sarsa").fit(rec, 3, 2)
    OfflineLearner(algo="sarsa", next_action="epsilon-greedy").fit(rec, 3, 2)


def test_records_out_of_range_named():
    rec = random_records(10, 3, 2)
    rec["next_state"][6] = 3
    with pytest.raises(ValueError, match=r"record 6: next_state=3 outside \[0, 3\)"):
        OfflineLearner().fit(rec, 3, 2)
    # The first bad record in the data's order is named, whichever its field.
    rec["state"][8] = -1
    rec["action"][2] = 2
    with pytest.raises(ValueError, match=r"record 2: action=2 outside \[0, 2\)"):
        OfflineLearner().fit(rec, 3, 2)
    rec["action"][2] = 0
    rec["next_state"][6] = 0
    with pytest.raises(ValueError, match=r"record 8: state=-1 outside \[0, 3\)"):
        OfflineLearner().fit(rec, 3, 2)


def test_checks_over_threads_name_the_first_bad_record():
    """Large datasets are checked (and their rewards put in Q format) in ranges on several
    threads: still the first bad record of the data is named, not the first one found."""
    assert numba.config.NUMBA_NUM_THREADS >= 2
    from pimrl.learners.reference import check_records

    rec = random_records(400_000, 3, 2, p_terminal=0.0)
    rec["state"][390_000], rec["action"][150_000] = 7, 5
    with pytest.raises(ValueError, match=r"record 150000: action=5"):
        check_records(rec, 3, 2, LearnerParams())
    rec["reward"][399_999], rec["reward"][210_000] = 1e9, np.inf
    with pytest.raises(ValueError, match=r"reward\[210000\]=np.float64\(inf\)"):
        fixedpoint.records_with_fixed_rewards(rec, 16)


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "Taxi-v3", "CliffWalking-v1"])
@pytest.mark.parametrize("algo", ["q", "sarsa"])
def test_int32_agrees_with_fp32_within_stated_bound(env_id, algo):
    env = make(env_id)
    recs = generate_dataset(env, 100_000, seed=1)
    kw = dict(algo=algo, epochs=2, sampling="ran", seed=3)
    qf = OfflineLearner(dtype="fp32", **kw).fit(recs, env.n_states, env.n_actions)
    qi = OfflineLearner(dtype="int32", **kw).fit(recs, env.n_states, env.n_actions)
    assert qi.saturations_ == 0
    diff = np.abs(qf.q_ - qi.q_).max()
    bound = fixedpoint.error_bound(0.1, 0.95, 16, float(np.abs(recs["reward"]).max()),
                                   float(np.abs(qf.q_).max()))
    q_max = float(np.abs(qf.q_).max())
    assert diff <= bound
    assert bound < 0.005 * (1.0 + q_max)   # informative: well under 1 % of the values
    assert diff > 0          # the two paths really differ (fixed point is not float)


def test_overflow_tested_saturation_equals_the_int64_clamp():
    """add_sat32 and sub_sat32 (the 32-bit overflow test the INT32 loops use) give sat32 of
    the exact int64 sum or difference, and count the same saturations, at every edge."""
    from numba import njit

    from pimrl.learners.kernels import add_sat32, sat32, sub_sat32

    @njit
    def both(a, b):
        out = np.empty((a.size, 4), np.int64)
        for i in range(a.size):
            v, n = add_sat32(a[i], b[i], 0)
            w, m = sat32(np.int64(a[i]) + np.int64(b[i]), 0)
            d, k = sub_sat32(a[i], b[i], 0)
            e, l = sat32(np.int64(a[i]) - np.int64(b[i]), 0)
            out[i] = (v - w, n - m, d - e, k - l)
        return out

    edges = np.array([fixedpoint.INT32_MIN, fixedpoint.INT32_MIN + 1, -(2**30), -2, -1, 0, 1, 2,
                      2**30, fixedpoint.INT32_MAX - 1, fixedpoint.INT32_MAX], np.int64)
    rs = np.random.default_rng(0)
    a = np.concatenate([np.repeat(edges, edges.size),
                        rs.integers(fixedpoint.INT32_MIN, fixedpoint.INT32_MAX, 20000, endpoint=True)])
    b = np.concatenate([np.tile(edges, edges.size),
                        rs.integers(fixedpoint.INT32_MIN, fixedpoint.INT32_MAX, 20000, endpoint=True)])
    diff = both(a.astype(np.int32), b.astype(np.int32))
    assert not diff.any()
    sums = a + b
    assert ((sums > fixedpoint.INT32_MAX) | (sums < fixedpoint.INT32_MIN)).sum() > 1000   # both paths


def test_fixed_point_saturates_and_counts_never_wraps():
    rec = random_records(200, 2, 1, p_terminal=0.0)
    rec["state"] = 0
    rec["next_state"] = 0
    rec["reward"] = 30000.0      # fits Q15.16 (< 32768) but the return does not
    r = OfflineLearner(dtype="int32", alpha=1.0, gamma=0.9).fit(rec, 2, 1)
    assert r.saturations_ > 0
    assert r.q_raw_[0, 0] == fixedpoint.INT32_MAX
    with pytest.raises(ValueError, match="reward"):
        rec["reward"][3] = 40000.0
        OfflineLearner(dtype="int32").fit(rec, 2, 1)


@pytest.mark.slow
@pytest.mark.parametrize("data_seed", [0, 1, 3])
def test_frozenlake_policy_within_002_of_optimum(tmp_path, capsys, data_seed):
    """1M uniform-random transitions of slippery FrozenLake. SwiftRL's alpha = 0.1 leaves
    noise of the size of the action gaps (it misses by 0.02-0.28 depending on the data seed);
    a small constant step over several passes converges (README, 'Policy quality')."""
    q = tmp_path / "q.npy"
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "1000000", "--data-seed",
                 str(data_seed), "--alpha", "0.005", "--epochs", "50", "--save-q", str(q),
                 "--no-eval"]) == 0
    capsys.readouterr()
    assert main(["eval", "--q", str(q), "--env", "FrozenLake-v1", "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert abs(ev["success_rate"] - ev["optimal_success_rate"]) <= 0.02


@pytest.mark.slow
def test_taxi_policy_within_01_of_optimal_return(tmp_path, capsys):
    q = tmp_path / "q.npy"
    assert main(["train", "--env", "Taxi-v3", "--transitions", "1000000", "--save-q", str(q),
                 "--no-eval"]) == 0
    capsys.readouterr()
    assert main(["eval", "--q", str(q), "--env", "Taxi-v3", "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert abs(ev["mean_return"] - ev["optimal_mean_return"]) <= 0.1


def test_train_json_and_saved_table(tmp_path, capsys):
    q = tmp_path / "q.npy"
    assert main(["train", "--env", "CliffWalking-v1", "--transitions", "20000", "--algo",
                 "sarsa", "--dtype", "int32", "--json", "--save-q", str(q)]) == 0
    out = json.loads(capsys.readouterr().out)
    saved = np.load(q)
    assert saved.dtype == np.float64 and saved.shape == (48, 4)
    assert out["n_updates"] == 20000 and out["saturations"] == 0
    assert set(out["evaluation"]) >= {"success_rate", "mean_return", "optimal_success_rate",
                                      "optimal_mean_return"}


def test_train_rejects_bad_input(tmp_path, capsys):
    assert main(["train", "--env", "Nope-v0", "--transitions", "10"]) == 2
    assert "Nope" in capsys.readouterr().err
    assert main(["train", "--env", "Taxi-v3", "--transitions", "10", "--alpha", "2"]) == 2
    assert "alpha" in capsys.readouterr().err


def test_results_never_replace_special_files(capsys):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "100", "--save-q", "/dev/null",
                 "--no-eval"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    import stat
    import os

    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_variant_registry_is_the_one_source():
    """Names, codes and parameter words come from one registry; the C header is generated
    from it and current; LearnerParams packs its words in the registry's order."""
    from pimrl.rlkernel.cprogram import header_is_current
    from pimrl.learners import variants as V

    assert header_is_current()
    assert len(V.ALL_VARIANTS) == 12
    assert {v.key for v in V.all_variants("epsilon-greedy")} >= {"sarsa-int32-ran+epsilon-greedy"}
    assert V.get_variant("sarsa-fp32-str+epsilon-greedy") == V.Variant("sarsa", "fp32", "str", "epsilon-greedy")
    # Q-learning ignores the next action: one kernel.
    assert V.Variant("q", next_action="epsilon-greedy") == V.Variant("q")
    p = LearnerParams(algo="sarsa", dtype="int32", sampling="ran", next_action="epsilon-greedy")
    words = {name: p.kernel_scalars()[i] for i, (name, _) in enumerate(V.PARAM_FIELDS)
             if name in V.KERNEL_SCALARS}
    assert words["algo"] == V.ALGO.code("sarsa") and words["dtype"] == V.DTYPE.code("int32")
    assert words["sampling"] == V.SAMPLING.code("ran") and words["sarsa_draw"] == 1
    assert p.kernel_scalars()[V.P_EPOCHS] == p.epochs
    with pytest.raises(ValueError, match="sampling must be one of seq, str, ran"):
        V.Variant("q", "fp32", "zigzag")


def test_state_lanes_balance_and_ownership():
    """Tasklet mode rows' lanes (pimrl.partition.state_lanes): every record in the lane that
    writes its entry, each state owned by one lane or marked split, a state heavier than a
    fair share split by action, lanes balanced longest-first, the order within a lane kept;
    the same call gives the same lanes."""
    rs = np.random.default_rng(4)
    n, T = 4000, 8
    states = rs.integers(0, 40, n).astype(np.int32)
    states[:900] = 7                                     # heavier than n / T = 500
    actions = rs.integers(0, 4, n).astype(np.uint8)
    bounds = np.array([0, 2500, n])
    order, lanes, owner, slist, lists = state_lanes(states, bounds, T, 40, actions, 4)
    again = state_lanes(states, bounds, T, 40, actions, 4)
    assert all(np.array_equal(x, y) for x, y in zip((order, lanes, owner, slist, lists), again))
    assert sorted(order.tolist()) == list(range(n))
    for p in range(2):
        part = order[bounds[p]:bounds[p + 1]]
        assert part.min() >= bounds[p] and part.max() < bounds[p + 1]
        entry_lane = {}
        for t in range(T):
            idx = order[lanes[p, t, 0]:lanes[p, t, 1]]
            assert np.all(np.diff(idx) > 0)                   # the lane keeps the records' order
            for i in idx:
                assert entry_lane.setdefault((states[i], actions[i]), t) == t
                assert owner[p, states[i]] in (t, SPLIT)
        sizes = lanes[p, :, 1] - lanes[p, :, 0]
        assert sizes.max() <= 1.15 * (bounds[p + 1] - bounds[p]) / T
        snap = slist[p, :lists[p, -1]]
        assert sorted(snap.tolist()) == sorted({int(s) for s in states[bounds[p]:bounds[p + 1]]})
    assert owner[0, 7] == SPLIT and (owner[:, 40 - 1] != 255).all()
