"""The SwiftRL host side (pimrl.swiftrl.PimTrainer): its aggregators (mean, weighted, sync:R
rounds) against a host replica, and its partitions (remainder spread, seeded shuffle)."""
import numpy as np
import pytest

from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import learn_partition
from pimrl.partition import even_bounds, lane_bounds
from pimrl.learners.aggregate import float_to_raw, raw_to_float
from pimrl.swiftrl.trainer import PimTrainer
from test_rlkernel import A, RECORDS, S


def test_sync_rounds_equal_host_replica():
    """sync:R: after each round the mean is broadcast back; the lanes' streams continue."""
    p = LearnerParams(algo="q", dtype="int32", sampling="ran", epochs=5, seed=2)
    D, T, R = 4, 3, 3
    tr = PimTrainer(p, n_dpus=D, tasklets=T, aggregate=f"sync:{R}").fit(RECORDS, S, A)
    lanes = lane_bounds(even_bounds(len(RECORDS), D), T)
    from pimrl.rng import lane_seeds

    rng = [lane_seeds(p.seed, np.arange(d * T, (d + 1) * T)) for d in range(D)]
    q_init = [None] * D
    for epochs in np.diff(even_bounds(p.epochs, R)):
        pr = LearnerParams(**{**p.as_dict(), "epochs": int(epochs)})
        res = [learn_partition(RECORDS, S, A, pr, lanes[d], rng=rng[d], q_init=q_init[d]) for d in range(D)]
        rng = [r.rng for r in res]
        mean = raw_to_float(np.stack([r.q_raw for r in res]), "int32", 16).mean(axis=0)
        q_init = [float_to_raw(mean, "int32", 16)] * D
    assert np.array_equal(tr.q_, mean)
    assert tr.timings_.modelled_s["inter_dpu"] > 0


def test_weighted_aggregate_uses_visit_counts():
    p = LearnerParams(epochs=2)
    D = 5
    tr = PimTrainer(p, n_dpus=D, tasklets=2, aggregate="weighted", keep_dpu_tables=True).fit(RECORDS, S, A)
    b = even_bounds(len(RECORDS), D)
    visits = np.stack([np.bincount(RECORDS["state"][b[d]:b[d + 1]].astype(np.int64) * A
                                   + RECORDS["action"][b[d]:b[d + 1]], minlength=S * A).reshape(S, A) * 2
                       for d in range(D)]).astype(float)
    q = tr.dpu_tables_.astype(float)
    expected = np.where(visits.sum(0) > 0, (visits * q).sum(0) / np.maximum(visits.sum(0), 1), q.mean(0))
    assert np.allclose(tr.q_, expected)


def test_mean_aggregate_is_numpys_mean_bit_for_bit():
    """The compiled mean adds the tables in DPU order, as numpy's mean over axis 0 does: the
    same bits for float32 tables of every magnitude (where the order of the sums shows),
    NaN and infinities included, and for Q-format int32 ones."""
    from pimrl.learners.aggregate import mean_tables

    rng = np.random.default_rng(3)
    wide = rng.standard_normal((300, 17, 5)) * np.exp(rng.uniform(-30, 30, (300, 17, 5)))
    tables = wide.astype(np.float32)
    tables[7, 2, 1], tables[9, 4, 0], tables[11, 4, 0] = np.nan, np.inf, -np.inf
    fixed = rng.integers(-2**31, 2**31, (300, 17, 5)).astype(np.int32)
    with np.errstate(invalid="ignore"):              # inf + -inf is a NaN
        for raw, scale in ((tables, 1.0), (fixed, 2.0 ** -16), (tables[:1], 1.0)):
            expected = raw.mean(axis=0, dtype=np.float64) * scale
            assert np.array_equal(mean_tables(raw, scale), expected, equal_nan=True)
        assert not np.array_equal(tables.astype(np.float64).sum(0), np.sort(tables, 0).astype(
            np.float64).sum(0), equal_nan=True)      # the order shows in these tables


def test_remainder_spread_and_shuffle_seeded():
    p = LearnerParams()
    tr = PimTrainer(p, n_dpus=7).fit(RECORDS, S, A)
    sizes = np.diff(tr.bounds_)
    assert sizes.sum() == len(RECORDS) and sizes.max() - sizes.min() == 1
    a = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=4).fit(RECORDS, S, A).q_
    b = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=4).fit(RECORDS, S, A).q_
    c = PimTrainer(p, n_dpus=7, partition="shuffle", shuffle_seed=5).fit(RECORDS, S, A).q_
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_sync_weighted_rounds_equal_host_replica():
    """sync:R:weighted weights each round by that round's updates (SEQ: known counts)."""
    p = LearnerParams(epochs=4)
    D, R = 3, 2
    tr = PimTrainer(p, n_dpus=D, tasklets=1, aggregate=f"sync:{R}:weighted").fit(RECORDS, S, A)
    b = even_bounds(len(RECORDS), D)
    counts = np.stack([np.bincount(RECORDS["state"][b[d]:b[d + 1]].astype(np.int64) * A
                                   + RECORDS["action"][b[d]:b[d + 1]], minlength=S * A).reshape(S, A)
                       for d in range(D)]).astype(float)
    q_init = None
    for _ in range(R):                   # SEQ draws no random numbers: no streams to carry
        pr = LearnerParams(epochs=2)
        res = [learn_partition(RECORDS, S, A, pr, np.array([[b[d], b[d + 1]]]), q_init=q_init)
               for d in range(D)]
        q = np.stack([r.q_raw for r in res]).astype(float)
        w = counts * 2
        agg = np.where(w.sum(0) > 0, (w * q).sum(0) / np.maximum(w.sum(0), 1), q.mean(0))
        q_init = agg.astype(np.float32)
    assert np.allclose(tr.q_, agg, rtol=0, atol=1e-12)
    from pimrl.learners.aggregate import parse_aggregate

    assert parse_aggregate("sync:3:weighted").label == "sync:3:weighted"
    with pytest.raises(ValueError, match="sync:R:weighted"):
        parse_aggregate("sync:0")


@pytest.mark.parametrize("aggregate", ["mean", "sync:3", "own:3"])
def test_on_round_gets_the_round_the_table_and_the_ledger(aggregate):
    """One round-callback contract for every scheme (pimrl.learners.aggregate.OnRound, as
    online's): ``(round, q, ledger)`` after each round, its dict merged into ``rounds_``; the
    last round's table is the run's, the ledger the run's so far."""
    p = LearnerParams(algo="q", dtype="fp32", sampling="seq", epochs=3, seed=4)
    seen = []

    def on_round(r, q, ledger):
        seen.append((r, q.copy(), ledger.modelled_total_s))
        return {"probe": r} if r else None          # None merges nothing

    tr = PimTrainer(p, n_dpus=4, tasklets=2, aggregate=aggregate, on_round=on_round).fit(
        RECORDS, S, A)
    rounds = 1 if aggregate == "mean" else 3
    assert [s[0] for s in seen] == list(range(rounds))
    assert [e.get("probe") for e in tr.rounds_] == [None] + list(range(1, rounds))
    assert np.array_equal(seen[-1][1], tr.q_) and seen[-1][1].shape == (S, A)
    assert seen[-1][2] == tr.timings_.modelled_total_s
    if rounds > 1:
        assert seen[0][2] < seen[-1][2]
