"""State-owned learning (--aggregate own:R), Q-learning and SARSA: the owner plan, the merge,
SARSA's policy value, bit-exactness of the reference, numba and C kernels at any thread
count, the modelled latencies and time to quality (docs/state-owned.md)."""
import dataclasses
import json

import numba
import numpy as np
import pytest

from conftest import HAVE_C, random_records
from pimrl.cli import main
from pimrl.data import generate_dataset
from pimrl.data.records import TRANSITION_DTYPE
from pimrl.envs import evaluate_against_optimum, make
from pimrl.experiments.quality import reaches_optimum, round_evaluator, time_to_quality
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.learners.variants import Variant, get_variant
from pimrl.partition import even_bounds, lane_bounds
from pimrl.learners.aggregate import parse_aggregate
from pimrl.pim.hardware import get_hardware
from pimrl.swiftrl.owned import (
    kernel_values, local_ids, merge_edges, plan_owners, policy_weights, reference_owned,
)
from pimrl.swiftrl.trainer import PimTrainer

S, A = 9, 3


def skewed_records(n=900, seed=3):
    """Random transitions over 9 states, state 4 holding half of them (a heavy state)."""
    rec = random_records(n, S, A, seed=seed)
    rec["state"][::2] = 4
    return rec


def records_of(states, actions):
    rec = np.zeros(len(states), TRANSITION_DTYPE)
    rec["state"], rec["action"] = states, actions
    rec["next_state"] = states
    return rec


def test_plan_balances_by_count_and_splits_heavy_states():
    # 12 transitions: state 0 x2, state 1 x6 (heavy), state 3 x4; 3 DPUs of 4.
    states = np.array([1, 3, 1, 0, 1, 3, 1, 0, 1, 3, 1, 3])
    actions = np.array([0, 1, 1, 0, 0, 1, 2, 1, 0, 0, 1, 0])
    plan = plan_owners(records_of(states, actions), 5, 3, 3)
    assert plan.bounds.tolist() == [0, 4, 8, 12]
    assert plan.own.tolist() == [[0, 2], [1, 2], [3, 4]]
    assert plan.split.tolist() == [False, True, False, False, False]
    # DPU 0 holds both 0s (actions 0, 1) and the first two of state 1's six transitions in
    # stable order (actions 0, 1); DPU 1 the other four (0, 2, 0, 1).
    assert plan.edge_counts[0].tolist() == [[1, 1, 0], [1, 1, 0]]
    assert plan.edge_counts[1].tolist() == [[2, 1, 1], [0, 0, 0]]      # one state: edge 0 only
    assert plan.shared.tolist() == [2, 3, 0]
    assert plan.fresh.tolist() == [[0, 1], [2, 1], [3, 4]]
    # Every record lands on a DPU whose range holds its state.
    st = states[plan.order]
    dpu = np.repeat(np.arange(3), np.diff(plan.bounds))
    assert np.all((plan.own[dpu, 0] <= st) & (st < plan.own[dpu, 1]))


def test_merge_weights_copies_by_their_transitions():
    states = np.array([1] * 6 + [0, 0])
    actions = np.array([0, 0, 0, 1, 1, 1, 0, 1])
    plan = plan_owners(records_of(states, actions), 2, 2, 2)     # DPU 0: 0, 0, 1, 1; DPU 1: 1 x4
    assert plan.split.tolist() == [False, True]
    edges = np.zeros((2, 2, 2), np.float32)
    edges[0, 1] = [10.0, 99.0]            # DPU 0's copy of state 1: saw action 0 twice, 1 never
    edges[1, 0] = [4.0, 6.0]              # DPU 1's: action 0 once, action 1 three times
    merged = merge_edges(plan, edges, 2, 1.0)
    assert merged[1].tolist() == [(2 * 10 + 1 * 4) / 3, 6.0]


def test_one_dpu_is_plain_q_learning_over_the_state_sorted_data():
    rec = random_records(500, S, A, seed=1)
    p = LearnerParams(epochs=4)
    tr = PimTrainer(p, n_dpus=1, tasklets=4, aggregate="own:4", keep_dpu_tables=True).fit(rec, S, A)
    ordered = rec[np.argsort(rec["state"], kind="stable")]
    lanes = lane_bounds(even_bounds(len(rec), 1), 4)[0]
    expect = learn_partition(ordered, S, A, p, lanes)
    assert np.array_equal(tr.dpu_tables_[0], expect.q_raw)


def fits_at_1_and_2_threads(rec, p):
    """(threads, fitted trainer) on 7 DPUs x 3 tasklets, own:3, at 1 and 2 numba threads."""
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            tr = PimTrainer(p, n_dpus=7, tasklets=3, aggregate="own:3",
                            keep_dpu_tables=True).fit(rec, S, A)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        yield threads, tr


@pytest.mark.parametrize("dtype,sampling", [("fp32", "seq"), ("int32", "str"), ("fp32", "ran"),
                                            ("int32", "ran")])
def test_numba_kernel_bit_exact_with_reference_any_threads(dtype, sampling):
    rec = skewed_records()
    p = LearnerParams(epochs=6, dtype=dtype, sampling=sampling)
    q_ref, raw_ref, plan = reference_owned(rec, S, A, p, 7, 3, 3)
    assert plan.split[4]                   # the heavy state is shared
    for threads, tr in fits_at_1_and_2_threads(rec, p):
        assert np.array_equal(tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32)), threads
        assert np.array_equal(tr.q_, q_ref)


# --------------------------------------------------------------------------- SARSA
def test_policy_value_primitives_known_answers_and_numpy_agreement():
    from pimrl.learners.kernels import policy_value_f32, policy_value_i32

    q = np.array([[1.0, 4.0, 2.0]], np.float32)
    w = np.array([[0.25, 0.5, 0.25]], np.float32)
    z = np.float32(0)
    # Epsilon-greedy: float32(cmean * (1 + 4 + 2)) + float32(cmax * 4), cmean 0.1, cmax 0.7.
    v, scanned = policy_value_f32(q, 0, True, w, 0, np.float32(0.1), np.float32(0.7))
    assert v == np.float32(np.float32(np.float32(0.1) * np.float32(7))
                           + np.float32(np.float32(0.7) * np.float32(4))) and scanned == 3
    assert v == pytest.approx(3.5, abs=1e-6)
    # Logged: 0.25 * 1 + 0.5 * 4 + 0.25 * 2 (exact in float32).
    assert policy_value_f32(q, 0, False, w, 0, z, z)[0] == 2.75
    # Q format (F = 8): rows 1.0, -2.0, 3.0.
    qi = np.array([[256, -512, 768]], np.int32)
    wi = np.array([[64, 128, 64]], np.int32)                      # 0.25, 0.5, 0.25
    vi, _, nsat = policy_value_i32(qi, 0, False, wi, 0, np.int32(0), np.int32(0), 8, 0)
    assert vi == 64 - 256 + 192 and nsat == 0                     # 0.25 - 1 + 0.75 = 0
    vi, _, nsat = policy_value_i32(qi, 0, True, wi, 0, np.int32(64), np.int32(128), 8, 0)
    assert vi == 128 + 384 and nsat == 0                          # 0.25 * 2 + 0.5 * 3
    big = np.array([[2**31 - 1] * 3], np.int32)
    vi, _, nsat = policy_value_i32(big, 0, True, wi, 0, np.int32(256), np.int32(256), 8, 0)
    assert vi == 2**31 - 1 and nsat == 2             # the sum, then the sum of the two terms
    # The host's vectorised copy of the kernels' arithmetic agrees, extremes included.
    from pimrl.learners.variants import (
        P_POLICY_MAX32, P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX,
    )
    rng = np.random.default_rng(0)
    rows = rng.normal(0, 50, (200, 5)).astype(np.float32)
    wf = rng.uniform(0, 0.3, (200, 5)).astype(np.float32)
    cm, cx = np.float32(0.02), np.float32(0.9)
    words = {P_POLICY_MEAN32: int(cm.view(np.int32)), P_POLICY_MAX32: int(cx.view(np.int32))}
    for eg, ww in ((True, None), (False, wf)):
        expect = np.array([policy_value_f32(rows, i, eg, wf, i, cm, cx)[0] for i in range(200)],
                          np.float32)
        got = kernel_values(rows, "fp32", 8, words, ww)
        assert np.array_equal(got.view(np.uint32), expect.view(np.uint32)), eg
    rows_i = rng.integers(-2**31, 2**31, (200, 5)).astype(np.int32)
    wi = rng.integers(0, 3 << 12, (200, 5)).astype(np.int32)
    words = {P_POLICY_MEAN_FX: 800, P_POLICY_MAX_FX: 3000}
    for eg, ww in ((True, None), (False, wi)):
        expect = [policy_value_i32(rows_i, i, eg, wi, i, np.int32(800), np.int32(3000), 12, 0)[0]
                  for i in range(200)]
        assert np.array_equal(kernel_values(rows_i, "int32", 12, words, ww), expect), eg


def test_target_policy_weights():
    rec = records_of(np.array([0, 0, 0, 2]), np.array([1, 1, 0, 2]))
    logged = policy_weights(rec, 3, 3, LearnerParams(algo="sarsa"))
    assert not logged.uniform
    np.testing.assert_array_equal(logged.w, [[1 / 3, 2 / 3, 0], [0, 0, 0], [0, 0, 1]])
    eg = policy_weights(rec, 3, 3, LearnerParams(algo="sarsa", next_action="epsilon-greedy",
                                                 epsilon=0.25))
    assert eg.uniform and eg.cmax == 0.75 and eg.cmean == 0.25 / 3   # floor(0.25 * 2^32) / 2^32
    rows = np.array([[1.0, 4.0, 2.0]])
    assert eg.values(rows, np.array([0]))[0] == pytest.approx(0.75 * 4 + 0.25 * 7 / 3)
    assert logged.values(rows, np.array([0]))[0] == pytest.approx(1 / 3 + 8 / 3)
    assert policy_weights(rec, 3, 3, LearnerParams()) is None    # Q-learning: the max


@pytest.mark.parametrize("dtype,sampling,next_action", [("fp32", "seq", "epsilon-greedy"),
                                                        ("fp32", "seq", "logged"),
                                                        ("int32", "ran", "epsilon-greedy"),
                                                        ("int32", "ran", "logged")])
def test_sarsa_numba_kernel_bit_exact_with_reference_any_threads(dtype, sampling, next_action):
    rec = skewed_records()
    p = LearnerParams(algo="sarsa", epochs=6, dtype=dtype, sampling=sampling,
                      next_action=next_action, epsilon=0.3)
    q_ref, raw_ref, plan = reference_owned(rec, S, A, p, 7, 3, 3)
    assert plan.split[4]
    for threads, tr in fits_at_1_and_2_threads(rec, p):
        assert np.array_equal(tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32)), threads
        assert np.array_equal(tr.q_, q_ref)
    # The other next-action mode learns another table (the weights differ).
    other = "logged" if next_action == "epsilon-greedy" else "epsilon-greedy"
    q_other, _, _ = reference_owned(rec, S, A, LearnerParams(
        algo="sarsa", epochs=6, dtype=dtype, sampling=sampling, next_action=other,
        epsilon=0.3), 7, 3, 3)
    assert not np.allclose(q_other, q_ref)


@pytest.mark.parametrize("dtype", ["fp32", "int32"])
def test_sarsa_with_epsilon_zero_is_owned_q_learning(dtype):
    """Epsilon-greedy with epsilon 0 is greedy: V = 1 * max + 0 * sum, Q-learning's value."""
    rec = skewed_records(600)
    kw = dict(epochs=4, dtype=dtype, sampling="seq" if dtype == "fp32" else "ran")
    q_sarsa, _, _ = reference_owned(rec, S, A, LearnerParams(
        algo="sarsa", next_action="epsilon-greedy", epsilon=0.0, **kw), 5, 2, 3)
    q_q, _, _ = reference_owned(rec, S, A, LearnerParams(**kw), 5, 2, 3)
    assert np.array_equal(q_sarsa, q_q)


def test_sarsa_chain_learns_its_target_policys_values():
    """States 0 -> 1 -> 2 -> 3, one per DPU; state 3 ends the episode with reward 1 for action
    0 and 0 for action 1, logged 3 : 1. Rewards elsewhere are zero, so every value is a power of
    gamma times V(3): 0.75 for the logged policy, 1 - p/2 for epsilon-greedy, 1 for
    Q-learning."""
    n = 40
    rec = np.zeros(4 * n, TRANSITION_DTYPE)
    rec["state"] = np.repeat(np.arange(4), n)
    rec["next_state"] = np.minimum(rec["state"] + 1, 3)
    rec["action"] = np.tile([0, 0, 0, 1], n)
    rec["next_action"] = rec["action"]
    rec["terminated"] = rec["state"] == 3
    rec["reward"] = np.where(rec["terminated"] & (rec["action"] == 0), 1.0, 0.0)
    gamma = 0.5
    for algo, na, v3 in (("sarsa", "logged", 0.75), ("sarsa", "epsilon-greedy", 1 - 0.2 / 2),
                         ("q", "logged", 1.0)):
        p = LearnerParams(algo=algo, next_action=na, epsilon=0.2, epochs=12, alpha=0.5,
                          gamma=gamma)
        q = PimTrainer(p, n_dpus=4, tasklets=1, aggregate="own:6").fit(rec, 4, 2).q_
        np.testing.assert_allclose(q[3], [1.0, 0.0], atol=1e-6)
        for s in range(3):
            np.testing.assert_allclose(q[s], gamma ** (3 - s) * v3, rtol=1e-4, err_msg=f"{na} {s}")


def test_owned_bootstrap_differs_from_own_table_and_learns_the_chain():
    """A 5-state chain 0 -> 1 -> ... -> 4 (terminal, reward 1), one state per DPU: the value
    crosses one DPU per round, so the start's greedy value after R rounds is known."""
    n = 50
    rec = np.zeros(5 * n, TRANSITION_DTYPE)
    rec["state"] = np.repeat(np.arange(5), n)
    rec["next_state"] = np.minimum(rec["state"] + 1, 4)
    rec["terminated"] = rec["state"] == 4
    rec["reward"] = np.where(rec["terminated"], 1.0, 0.0)
    p = LearnerParams(epochs=8, alpha=0.5, gamma=0.5)
    for rounds, reached in ((2, [3, 4]), (4, [1, 2, 3, 4]), (8, [0, 1, 2, 3, 4])):
        q = PimTrainer(p, n_dpus=5, tasklets=1, aggregate=f"own:{rounds}").fit(rec, 5, 1).q_
        assert np.flatnonzero(q[:, 0] > 1e-6).tolist() == reached, rounds
    np.testing.assert_allclose(q[:, 0], [0.0625, 0.125, 0.25, 0.5, 1.0], rtol=1e-5)


def test_variant_registry_entry():
    v = get_variant("q-fp32-seq@owned")
    assert v.owned and v.key == "q-fp32-seq@owned" and v.c_defines()["SWIFTRL_BOOTSTRAP"] == 1
    # Owned SARSA draws nothing; its next action names the target policy it evaluates.
    s = Variant("sarsa", bootstrap="owned", next_action="epsilon-greedy")
    assert s.epsilon_greedy and not s.draws_next_action and not s.uses_rng
    assert s.key == "sarsa-fp32-seq+epsilon-greedy@owned" and get_variant(s.key) == s
    assert parse_aggregate("own:5").label == "own:5"
    with pytest.raises(ValueError, match="own:R"):
        parse_aggregate("own:0")


def test_latencies_are_charged_per_launch_and_round():
    rec = random_records(400, S, A, seed=2)
    p = LearnerParams(epochs=4)
    runs = {}
    for lat in (0.0, 1e-3):
        hw = get_hardware("upmem-2556", {"launch_latency_s": lat, "sync_latency_s": lat / 2})
        runs[lat] = PimTrainer(p, n_dpus=4, tasklets=2, aggregate="own:4", hardware=hw).fit(rec, S, A)
    d = {c: runs[1e-3].timings_.modelled_s[c] - runs[0.0].timings_.modelled_s[c]
         for c in ("dpu_kernel", "inter_dpu")}
    assert d["dpu_kernel"] == pytest.approx(4 * 1.5e-3)     # four launches, each waited for
    assert d["inter_dpu"] == 0.0


def test_time_to_quality_per_round():
    from pimrl.data import generate_dataset
    from pimrl.envs import make

    env = make("CliffWalking-v1")
    rec = generate_dataset(env, 30_000, 0)
    p = LearnerParams(epochs=16)
    tr = PimTrainer(p, n_dpus=16, tasklets=4, aggregate="own:16",
                    on_round=round_evaluator(env, p.gamma)).fit(rec, env.n_states, env.n_actions)
    times = [e["modelled_s"] for e in tr.rounds_]
    assert len(times) == 16 and np.all(np.diff(times) > 0)
    assert times[-1] == pytest.approx(tr.timings_.modelled_total_s)
    ttq = time_to_quality(tr.rounds_)
    assert ttq["quality_round"] is not None and ttq["time_to_quality_modelled_s"] < times[-1]
    assert tr.rounds_[-1]["mean_return"] == pytest.approx(-13.0)
    assert not tr.rounds_[0]["reached"]


def test_tolerance():
    assert reaches_optimum(1.0, 7.9233, 1.0, 7.93)
    assert not reaches_optimum(1.0, 7.80, 1.0, 7.93)
    assert reaches_optimum(0.72, 0.72, 0.7298, 0.7298)
    assert not reaches_optimum(0.71, 0.71, 0.7298, 0.7298)


def test_cli_reports_time_to_quality_and_runs_sarsa(capsys):
    args = ["train", "--env", "CliffWalking-v1", "--transitions", "5000", "--backend", "pim",
            "--dpus", "4", "--tasklets", "2", "--epochs", "4", "--aggregate", "own:4"]
    assert main(args + ["--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert len(run["rounds"]) == 4 and "quality_tolerance" in run
    assert main(args) == 0
    assert "time to quality" in capsys.readouterr().out
    assert main(args + ["--algo", "sarsa", "--next-action", "epsilon-greedy", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert len(run["rounds"]) == 4


@pytest.mark.needs_c
@pytest.mark.parametrize("dtype,sampling", [("fp32", "ran"), ("int32", "seq")])
def test_c_kernel_bit_exact_with_reference_any_workers(dtype, sampling):
    from pimrl.rlkernel import cprogram as swiftrl

    rec = skewed_records(400)
    p = LearnerParams(epochs=4, dtype=dtype, sampling=sampling)
    q_ref, raw_ref, _ = reference_owned(rec, S, A, p, 5, 3, 2)
    for workers in (1, 2):
        def program(*a, **k):
            return swiftrl.swiftrl_program(*a, workers=workers, **k)

        tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2", keep_dpu_tables=True,
                        kernel=program).fit(rec, S, A)
        numba_tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2").fit(rec, S, A)
        assert np.array_equal(tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32)), workers
        assert np.array_equal(tr.q_, q_ref)
        assert np.array_equal(tr.counters_, numba_tr.counters_)    # the same counted work


@pytest.mark.needs_c
@pytest.mark.parametrize("dtype,sampling,next_action", [("fp32", "ran", "epsilon-greedy"),
                                                        ("int32", "seq", "logged")])
def test_sarsa_c_kernel_bit_exact_with_reference_any_workers(dtype, sampling, next_action):
    from pimrl.rlkernel import cprogram as swiftrl

    rec = skewed_records(400)
    p = LearnerParams(algo="sarsa", epochs=4, dtype=dtype, sampling=sampling,
                      next_action=next_action, epsilon=0.3)
    q_ref, raw_ref, _ = reference_owned(rec, S, A, p, 5, 3, 2)
    numba_tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2").fit(rec, S, A)
    for workers in (1, 2):
        built = []

        def program(*a, **k):
            built.append(swiftrl.swiftrl_program(*a, workers=workers, **k))
            return built[-1]

        tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2", keep_dpu_tables=True,
                        kernel=program).fit(rec, S, A)
        assert np.array_equal(tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32)), workers
        assert np.array_equal(tr.q_, q_ref)
        assert np.array_equal(tr.counters_, numba_tr.counters_)
        # The cost model prices the policy value as the C kernel's instructions run.
        assert swiftrl.model_agreement(built[0])["max_rel_diff"] < 0.06


def test_tradeoff_table_picks_the_cheapest_run_that_keeps_the_optimum():
    from pimrl.experiments.quality import tradeoff_table

    def row(agg, ret, total, ttq=None):
        return {"env": "E", "n_dpus": "8", "aggregator": agg, "success_rate": "1",
                "mean_return": str(ret), "optimal_success_rate": "1", "optimal_mean_return": "10",
                "pim_total_modelled_s": str(total), "time_to_quality_modelled_s": str(ttq or total)}

    rows = [row("mean", 0, 1.0), row("own:4", 5, 1.2), row("own:8", 10, 1.5, 1.1),
            row("own:16", 10, 2.0), row("sync:8:weighted", 10, 3.0)]
    line = tradeoff_table(rows).splitlines()[-1]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2] == "not reached"
    assert cells[-1] == "own:8: 1500.0 ms, 1.50x mean; first at 1100.0 ms"
    assert cells[-2].startswith("sync:8:weighted: 3000.0 ms, 3.00x mean")


def test_time_to_quality_figure_tells_variants_apart_under_one_scheme(tmp_path, monkeypatch):
    """A sweep of one scheme over several variants (experiments/tasklet_modes.toml) gets a
    line, a colour and a legend entry per variant; several schemes keep one entry each."""
    import pimrl.experiments.quality as quality

    figs = []
    monkeypatch.setattr(quality, "atomic_savefig", lambda fig, path, **kw: figs.append(fig))

    def row(agg, variant):
        return {"sweep": "s", "env": "E", "n_dpus": "8", "aggregator": agg, "variant": variant,
                "optimal_mean_return": "1", "quality_curve": "0.001:0:0|0.002:1:1"}

    def legend(rows):
        figs.clear()
        quality.plot_time_to_quality(rows, tmp_path, [])
        texts = [t.get_text() for t in figs[0].legends[0].get_texts()]
        colours = {tuple(h.get_color()) if not isinstance(h.get_color(), str) else h.get_color()
                   for h in figs[0].legends[0].legend_handles}
        return texts, colours

    texts, colours = legend([row("own:20", "q-fp32-seq"), row("own:20", "q-int32-seq")])
    assert texts == ["own:20, q-fp32-seq", "own:20, q-int32-seq"] and len(colours) == 2
    texts, _ = legend([row("mean", "q-fp32-seq"), row("mean", "q-int32-seq"),
                       row("own:20", "q-fp32-seq")])
    assert texts == ["mean", "own:20"]


# --------------------------------------------------------------------------- tasklet modes
@pytest.mark.parametrize("algo,dtype,sampling,next_action", [
    ("q", "fp32", "seq", "logged"), ("q", "int32", "ran", "logged"),
    ("sarsa", "fp32", "str", "epsilon-greedy"), ("sarsa", "int32", "seq", "logged")])
def test_rows_mode_bit_exact_with_reference(algo, dtype, sampling, next_action):
    """State-owned learning with its DPUs in tasklet mode rows: each DPU's states spread over
    its tasklets, the broadcast V for the states it does not alone hold, the snapshot for its
    tasklets' siblings; the numba kernel equals the reference, and the C kernel equals both."""
    rec = skewed_records(600)
    p = LearnerParams(algo=algo, epochs=4, dtype=dtype, sampling=sampling,
                      next_action=next_action, epsilon=0.3, tasklet_mode="rows")
    q_ref, raw_ref, plan = reference_owned(rec, S, A, p, 3, 4, 2)
    ring_q, _, _ = reference_owned(rec, S, A, dataclasses.replace(p, tasklet_mode="ring"), 3, 4, 2)
    assert not np.array_equal(q_ref, ring_q)
    tr = PimTrainer(p, n_dpus=3, tasklets=4, aggregate="own:2", keep_dpu_tables=True).fit(
        rec, S, A)
    assert np.array_equal(tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32))
    assert np.array_equal(tr.q_, q_ref)
    if HAVE_C:
        from pimrl.rlkernel import cprogram as swiftrl

        c_tr = PimTrainer(p, n_dpus=3, tasklets=4, aggregate="own:2", keep_dpu_tables=True,
                          kernel=swiftrl.swiftrl_program).fit(rec, S, A)
        assert np.array_equal(c_tr.dpu_tables_.view(np.uint32), raw_ref.view(np.uint32))
        assert np.array_equal(c_tr.counters_, tr.counters_)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["Taxi-v3", "CliffWalking-v1"])
def test_own_rounds_keep_the_optimum_at_2000_dpus_in_rows_mode(env_id):
    """own:20 with 2,000 DPUs x 16 tasklets in tasklet mode rows keeps the optimal policy
    (exact evaluation), in less modelled time than the ring's."""
    env = make(env_id)
    rec = generate_dataset(env, 1_000_000, seed=0)
    times = {}
    for mode in ("rows", "ring"):
        p = LearnerParams(dtype="int32", epochs=20, tasklet_mode=mode)
        tr = PimTrainer(p, n_dpus=2000, tasklets=16, aggregate="own:20").fit(
            rec, env.n_states, env.n_actions)
        ev = evaluate_against_optimum(env, tr.q_, p.gamma)
        assert ev["success_rate"] >= ev["optimal_success_rate"] - 1e-9, mode
        assert ev["mean_return"] >= ev["optimal_mean_return"] - 1e-6, mode
        times[mode] = tr.timings_.modelled_total_s
    assert times["rows"] < times["ring"]


# --------------------------------------------------------------------------- local layout
@pytest.mark.parametrize("dtype,sampling,mode,algo,next_action", [
    ("fp32", "seq", "rows", "q", "logged"), ("int32", "ran", "rows", "q", "logged"),
    ("fp32", "ran", "ring", "sarsa", "logged"), ("int32", "str", "rows", "sarsa",
                                                 "epsilon-greedy")])
def test_local_layout_is_bit_exact_with_the_global_one(dtype, sampling, mode, algo,
                                                       next_action):
    """Each DPU holding only its rows and its halo's values learns the global layout's
    tables bit for bit, with the same work counted; only the exchange differs."""
    rec = skewed_records()
    p = LearnerParams(algo=algo, epochs=6, dtype=dtype, sampling=sampling, tasklet_mode=mode,
                      next_action=next_action, epsilon=0.3)
    q_ref, raw_ref, plan = reference_owned(rec, S, A, p, 7, 3, 3)
    glob = PimTrainer(p, n_dpus=7, tasklets=3, aggregate="own:3",
                      own_layout="global").fit(rec, S, A)
    loc = PimTrainer(p, n_dpus=7, tasklets=3, aggregate="own:3", own_layout="local",
                     keep_dpu_tables=True).fit(rec, S, A)
    assert (glob.own_layout_, loc.own_layout_) == ("global", "local")
    assert glob.program_states_ == S and loc.program_states_ <= S
    assert np.array_equal(loc.q_, q_ref) and np.array_equal(glob.q_, q_ref)
    assert np.array_equal(loc.counters_, glob.counters_)
    for d in range(7):      # a DPU's local row k is its state own_lo + k
        lo, hi = plan.own[d]
        assert np.array_equal(loc.dpu_tables_[d, : hi - lo].view(np.uint32),
                              raw_ref[d, lo:hi].view(np.uint32))


def test_local_ids_renumber_ranges_and_halos():
    # 3 states per DPU range; DPU 0 owns 0-1 and leads to 5 and 3; DPU 1 owns 2-4, leads to 0.
    rec = records_of(np.array([0, 1, 1, 2, 3, 4]), np.zeros(6, int))
    rec["next_state"] = [5, 3, 1, 0, 4, 2]
    plan = plan_owners(rec, 6, 1, 2)
    ids = local_ids(plan, rec[plan.order], 6)
    assert plan.own.tolist() == [[0, 2], [2, 5]]
    assert ids.records["state"].tolist() == [0, 1, 1, 0, 1, 2]
    assert ids.records["next_state"].tolist() == [3, 2, 1, 3, 2, 0]
    assert ids.n_local == 4
    assert ids.halo.tolist() == [[0, 1, 3, 5], [2, 3, 4, 0]]
    v = np.arange(10, 16, dtype=np.float32)
    assert ids.values(v).tolist() == [[10, 11, 13, 15], [12, 13, 14, 10]]


def test_a_table_larger_than_wram_is_learned_in_the_local_layout():
    """CliffWalking x 64 (3,072 states, a 48 KiB table: more than WRAM holds beside the
    buffers): the default layout is local, and the tables equal the oracle's."""
    env = make("CliffWalking-v1:copies=64")
    rec = generate_dataset(env, 40_000, seed=1)
    p = LearnerParams(epochs=4, sampling="ran")
    tr = PimTrainer(p, n_dpus=16, tasklets=4, aggregate="own:2").fit(rec, env.n_states,
                                                                     env.n_actions)
    assert tr.own_layout_ == "local" and tr.program_states_ < env.n_states // 4
    with pytest.raises(ValueError, match="WRAM"):
        PimTrainer(p, n_dpus=16, tasklets=4, aggregate="own:2",
                   own_layout="global").fit(rec, env.n_states, env.n_actions)
    q_ref, _, _ = reference_owned(rec, env.n_states, env.n_actions, p, 16, 4, 2)
    assert np.array_equal(tr.q_, q_ref)


@pytest.mark.needs_c
def test_c_kernel_runs_the_local_layout_bit_exact():
    """The UPMEM C kernel, built for the local layout's state count, learns the oracle's
    table and counts the numba kernel's work."""
    rec = skewed_records(400)
    p = LearnerParams(epochs=4, dtype="int32", sampling="ran")
    q_ref, _, _ = reference_owned(rec, S, A, p, 5, 3, 2)
    tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2", own_layout="local",
                    kernel="c").fit(rec, S, A)
    numba_tr = PimTrainer(p, n_dpus=5, tasklets=3, aggregate="own:2",
                          own_layout="local").fit(rec, S, A)
    assert tr.own_layout_ == "local"
    assert np.array_equal(tr.q_, q_ref)
    assert np.array_equal(tr.counters_, numba_tr.counters_)


def test_c_kernel_refuses_a_table_past_wram_before_compiling(monkeypatch):
    """The C program is checked as the numba one is, before the compiler runs: one
    ValueError naming the overflow (the CLI's one-line error), not a build failure."""
    from pimrl.rlkernel import cprogram

    built = []
    monkeypatch.setattr(cprogram, "build_kernel", lambda *a, **k: built.append(a))
    with pytest.raises(ValueError, match="WRAM overflow"):
        cprogram.swiftrl_program(4096, 4, 16, "q", "fp32", "seq", 2048,
                                 get_hardware("upmem-2556"), False, tasklet_mode="rows")
    assert built == []
