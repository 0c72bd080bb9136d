"""Tests of pimrl.data: the file format, generation, SwiftRL import and the data commands."""
from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimrl.data import (
    HEADER_SIZE,
    NO_ACTION,
    TRANSITION_DTYPE,
    Dataset,
    DatasetError,
    SwiftRLFormatError,
    export_swiftrl,
    generate_dataset,
    import_swiftrl,
    load_dataset,
    policy_description,
    save_dataset,
)
from pimrl.data import format as fmt
from pimrl.data import generate as gen
from pimrl.envs import make


@pytest.fixture(scope="module")
def lake():
    return make("FrozenLake-v1")


@pytest.fixture(scope="module")
def taxi():
    return make("Taxi-v3")


@pytest.fixture
def saved(tmp_path, lake):
    recs = generate_dataset(lake, 1000, seed=3)
    path = tmp_path / "lake.ds"
    save_dataset(path, recs, lake.env_id, 3, "uniform")
    return path, recs


def _patch(path, offset, raw: bytes):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(raw)


def _rec_offset(i, field):
    return HEADER_SIZE + i * 16 + TRANSITION_DTYPE.fields[field][1]


def _reseal(path):
    """Recompute the header CRC after a deliberate header edit."""
    with open(path, "r+b") as f:
        buf = f.read(HEADER_SIZE)
        f.seek(fmt._CRC_OFFSET)
        f.write(struct.pack("<I", fmt._header_crc(buf)))


# ---------------------------------------------------------------------------- file format
def test_round_trip(saved, lake):
    path, recs = saved
    for mmap in (True, False):
        ds = load_dataset(path, mmap=mmap)
        assert isinstance(ds, Dataset)
        assert len(ds) == 1000 and ds.records.dtype == TRANSITION_DTYPE
        assert ds.records.tobytes() == recs.tobytes()
        assert (ds.env_id, ds.seed, ds.policy) == ("FrozenLake-v1", 3, "uniform")
        assert (ds.n_states, ds.n_actions, ds.n_imputed) == (16, 4, 0)
        with pytest.raises(ValueError):
            ds.records["state"][0] = 1  # read-only
    assert os.path.getsize(path) == HEADER_SIZE + 1000 * 16
    assert HEADER_SIZE % 8 == 0
    env = load_dataset(path).env()
    assert env.env_id == lake.env_id and np.array_equal(env.prob, lake.prob)
    info = load_dataset(path).info()
    assert info["n_transitions"] == 1000 and info["env_id"] == "FrozenLake-v1"
    assert info["reward_min"] == 0.0 and info["reward_max"] <= 1.0
    assert 0 < info["frac_terminated"] < 1 and info["state_coverage"] <= 1.0
    json.dumps(info)


def test_seed_none_policy_and_empty(tmp_path, lake):
    path = tmp_path / "empty.ds"
    save_dataset(path, np.zeros(0, TRANSITION_DTYPE), "FrozenLake-v1:slippery=0", None,
                 "epsilon-greedy:0.1", n_states=16, n_actions=4)
    ds = load_dataset(path)
    assert ds.seed is None and ds.policy == "epsilon-greedy:0.1" and len(ds) == 0
    assert ds.env_id == "FrozenLake-v1:slippery=0"
    assert ds.info()["n_transitions"] == 0
    with pytest.raises(ValueError, match="env_id"):
        save_dataset(tmp_path / "x.ds", np.zeros(0, TRANSITION_DTYPE), "E" * 100, 0, "uniform",
                     n_states=1, n_actions=1)


def test_header_bytes_match_documentation(saved):
    path, _ = saved
    raw = open(path, "rb").read(HEADER_SIZE)
    assert raw[:8] == b"PIMRLDS\x00"
    version, hsize, rsize, flags, n = struct.unpack_from("<IIIIQ", raw, 8)
    assert (version, hsize, rsize, flags, n) == (1, 256, 16, 1, 1000)
    assert struct.unpack_from("<IIQQ", raw, 32) == (16, 4, 3, 0)
    (ln,) = struct.unpack_from("<H", raw, 64)
    assert raw[66 : 66 + ln].decode() == fmt.LAYOUT
    (ln,) = struct.unpack_from("<H", raw, 160)
    assert raw[162 : 162 + ln] == b"uniform"
    (ln,) = struct.unpack_from("<H", raw, 192)
    assert raw[194 : 194 + ln] == b"FrozenLake-v1"


def _expect(path, field, *fragments):
    with pytest.raises(DatasetError) as ei:
        load_dataset(path)
    msg = str(ei.value)
    assert str(path) in msg and ei.value.field == field, msg
    for frag in fragments:
        assert frag in msg, msg
    return ei.value


def test_wrong_magic(saved):
    path, _ = saved
    _patch(path, 0, b"NOTPIMRL")
    _expect(path, "magic", "magic", "NOTPIMRL")


def test_unsupported_version(saved):
    path, _ = saved
    _patch(path, 8, struct.pack("<I", 7))
    _expect(path, "version", "version 7")


def test_truncated_and_overlong(saved):
    path, _ = saved
    full = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(full - 5)
    _expect(path, "n_transitions", "truncated", str(full), str(full - 5))
    with open(path, "r+b") as f:
        f.truncate(full + 16)
    _expect(path, "n_transitions", str(full), str(full + 16))
    with open(path, "r+b") as f:
        f.truncate(100)
    _expect(path, "header", "truncated header")


def test_record_size_layout_and_crc(saved, tmp_path):
    path, recs = saved
    _patch(path, 16, struct.pack("<I", 20))
    _expect(path, "record_size", "record_size")
    save_dataset(path, recs, "FrozenLake-v1", 3, "uniform")
    _patch(path, 66, b"STATE")  # the layout string now names another field
    _reseal(path)
    _expect(path, "layout", "layout")
    save_dataset(path, recs, "FrozenLake-v1", 3, "uniform")
    _patch(path, 32, struct.pack("<I", 17))  # n_states edited without resealing
    _expect(path, "header_crc32", "checksum")


@pytest.mark.parametrize(
    "field,raw,value",
    [
        ("state", struct.pack("<i", 16), 16),
        ("state", struct.pack("<i", -1), -1),
        ("next_state", struct.pack("<i", 99), 99),
        ("action", bytes([4]), 4),
        ("next_action", bytes([7]), 7),
        ("terminated", bytes([2]), 2),
        ("truncated", bytes([3]), 3),
        ("reward", struct.pack("<f", float("nan")), None),
        ("reward", struct.pack("<f", float("inf")), float("inf")),
    ],
)
def test_content_errors_name_record_field_value(saved, field, raw, value):
    path, _ = saved
    _patch(path, _rec_offset(700, field), raw)
    _patch(path, _rec_offset(811, field), raw)  # only the first offender is reported
    err = _expect(path, field, "record 700", repr(field))
    assert err.index == 700
    if value is not None:
        assert err.value == value and repr(value) in str(err)
    else:
        assert np.isnan(err.value) and "nan" in str(err)
    # the header still loads without the content checks
    assert len(load_dataset(path, validate=False)) == 1000


def test_no_action_is_valid_and_both_flags_rejected(saved):
    path, _ = saved
    _patch(path, _rec_offset(5, "next_action"), bytes([NO_ACTION]))
    assert load_dataset(path).records["next_action"][5] == NO_ACTION
    _patch(path, _rec_offset(9, "terminated"), b"\x01\x01")
    _expect(path, "truncated", "record 9")


def test_save_validates_and_checks_dtype(tmp_path, lake):
    recs = generate_dataset(lake, 50, seed=0)
    recs["action"][10] = 9
    dest = tmp_path / "bad.ds"
    with pytest.raises(DatasetError, match="record 10: field 'action' = 9"):
        save_dataset(dest, recs, lake.env_id, 0, "uniform")
    with pytest.raises(DatasetError, match="dtype"):
        save_dataset(dest, np.zeros(3, dtype=np.int64), lake.env_id, 0, "uniform")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- atomic write
@pytest.mark.parametrize("exc", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_atomic_write_failure_leaves_nothing(tmp_path, lake, monkeypatch, exc):
    recs = generate_dataset(lake, 10_000, seed=1)
    dest = tmp_path / "out.ds"

    def half_then_fail(f, records):
        f.write(memoryview(records[: len(records) // 2]).cast("B"))
        raise exc

    monkeypatch.setattr(fmt, "_write_records", half_then_fail)
    with pytest.raises(type(exc)):
        save_dataset(dest, recs, lake.env_id, 1, "uniform")
    assert os.listdir(tmp_path) == []  # no destination, no temporary file


def test_atomic_write_keeps_old_file(tmp_path, lake, monkeypatch):
    dest = tmp_path / "out.ds"
    old = generate_dataset(lake, 100, seed=1)
    save_dataset(dest, old, lake.env_id, 1, "uniform")
    before = dest.read_bytes()

    def fail_fsync(fd):
        raise OSError("fsync failed")

    monkeypatch.setattr(fmt.os, "fsync", fail_fsync)
    with pytest.raises(OSError, match="fsync failed"):
        save_dataset(dest, generate_dataset(lake, 200, seed=2), lake.env_id, 2, "uniform")
    assert dest.read_bytes() == before
    assert os.listdir(tmp_path) == ["out.ds"]


# ------------------------------------------------------------------------------ generation
def _episode_checks(recs, env, limit):
    s, ns, a, na = recs["state"], recs["next_state"], recs["action"], recs["next_action"]
    term, trunc = recs["terminated"].astype(bool), recs["truncated"].astype(bool)
    end = term | trunc
    assert not (term & trunc).any()
    # within an episode the next record continues it, with the logged next action
    cont = ~end[:-1]
    assert np.array_equal(s[1:][cont], ns[:-1][cont])
    assert np.array_equal(a[1:][cont], na[:-1][cont])
    # after an end, the next record starts from a start state
    starts = np.concatenate([[0], np.flatnonzero(end[:-1]) + 1])
    assert (env.initial_dist[s[starts]] > 0).all()
    # episode lengths: never above the limit; truncated exactly at the limit
    ends = np.flatnonzero(end)
    lengths = ends + 1 - starts[: len(ends)]
    assert lengths.max() <= limit
    assert (lengths[trunc[ends]] == limit).all()
    assert (lengths[term[ends]] <= limit).all()
    # the rewards and terminal flags are those of a possible outcome
    match = (env.next_state[s, a] == ns[:, None]) & (env.prob[s, a] > 0)
    match &= env.reward[s, a] == recs["reward"][:, None]
    match &= env.terminated[s, a] == term[:, None]
    assert match.any(axis=1).all()
    return lengths


def test_generation_matches_env_dynamics(lake):
    recs = generate_dataset(lake, 200_000, seed=11)
    s = recs["state"].astype(np.int64)
    a = recs["action"].astype(np.int64)
    ns = recs["next_state"].astype(np.int64)
    S, A = lake.n_states, lake.n_actions
    counts = np.zeros((S, A, S))
    np.add.at(counts, (s, a, ns), 1)
    expected_p = np.zeros((S, A, S))
    for k in range(lake.n_outcomes):  # aggregate repeated outcome slots by next state
        np.add.at(expected_p, (np.arange(S)[:, None], np.arange(A)[None, :],
                               lake.next_state[:, :, k]), lake.prob[:, :, k])
    n_sa = counts.sum(axis=2)
    chi2_total, dof_total = 0.0, 0
    for si in range(S):
        for ai in range(A):
            if n_sa[si, ai] < 200:
                continue
            p = expected_p[si, ai]
            support = p > 0
            assert counts[si, ai, ~support].sum() == 0
            exp = n_sa[si, ai] * p[support]
            chi2 = ((counts[si, ai, support] - exp) ** 2 / exp).sum()
            assert chi2 < 30, (si, ai, chi2)  # df <= 2: p < 1e-6 by chance
            chi2_total += chi2
            dof_total += support.sum() - 1
    assert dof_total > 20
    assert chi2_total < dof_total + 6 * np.sqrt(2 * dof_total)
    # uniform behaviour: every action equally likely
    freq = np.bincount(a, minlength=A) / len(a)
    assert np.abs(freq - 1 / A).max() < 0.01
    _episode_checks(recs, lake, lake.max_episode_steps)


def test_generation_episodes_truncate_and_reset(taxi):
    recs = generate_dataset(taxi, 50_000, seed=5, max_episode_steps=13)
    lengths = _episode_checks(recs, taxi, 13)
    assert recs["truncated"].sum() > 1000 and (lengths == 13).sum() > 1000
    starts = recs["state"][np.flatnonzero(recs["terminated"][:-1] | recs["truncated"][:-1]) + 1]
    assert len(np.unique(starts)) > 250  # Taxi has 300 start states
    recs = generate_dataset(taxi, 100_000, seed=6)
    _episode_checks(recs, taxi, 200)
    cliff = make("CliffWalking-v1")
    _episode_checks(generate_dataset(cliff, 50_000, seed=7), cliff, cliff.max_episode_steps)


def test_generation_determinism_and_blocks(lake, monkeypatch):
    a = generate_dataset(lake, 5000, seed=42)
    b = generate_dataset(lake, 5000, seed=42)
    c = generate_dataset(lake, 5000, seed=43)
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()
    assert generate_dataset(lake, 1234, seed=42).tobytes() == a[:1234].tobytes()
    monkeypatch.setattr(gen, "BLOCK", 77)  # the block size does not change the stream
    assert generate_dataset(lake, 5000, seed=42).tobytes() == a.tobytes()


def _reference_generate(env, n, seed, limit):
    """The documented seed -> draws mapping, in plain Python (uniform policy)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    A = env.n_actions
    cum_init = gen._cumulative(env.initial_dist, 0)
    cum = gen._cumulative(env.prob, 2)

    def pick(c, u):
        return next((k for k in range(len(c) - 1) if u < c[k]), len(c) - 1)

    u0 = rng.random(2)
    s, act, t = pick(cum_init, u0[0]), min(int(u0[1] * A), A - 1), 0
    out = []
    u = rng.random((n, 4))
    for i in range(n):
        k = pick(cum[s, act], u[i, 0])
        ns, d = int(env.next_state[s, act, k]), bool(env.terminated[s, act, k])
        t += 1
        tr = (not d) and t >= limit
        na = min(int(u[i, 1] * A), A - 1)
        out.append((s, ns, np.float32(env.reward[s, act, k]), act, na, int(d), int(tr)))
        if d or tr:
            s, act, t = pick(cum_init, u[i, 2]), min(int(u[i, 3] * A), A - 1), 0
        else:
            s, act = ns, na
    return np.array(out, dtype=TRANSITION_DTYPE)


def test_generation_follows_documented_stream(lake, taxi):
    for env, limit in ((lake, 100), (taxi, 9)):
        got = generate_dataset(env, 3000, seed=9, max_episode_steps=limit)
        assert got.tobytes() == _reference_generate(env, 3000, 9, limit).tobytes()


def test_epsilon_greedy(lake):
    S, A = lake.n_states, lake.n_actions
    q = np.zeros((S, A))
    recs = generate_dataset(lake, 2000, seed=1, policy="epsilon-greedy", q=q, epsilon=0.0)
    assert (recs["action"] == 0).all() and (recs["next_action"] == 0).all()  # ties: lowest
    q = np.random.default_rng(0).random((S, A))
    greedy = q.argmax(axis=1)
    recs = generate_dataset(lake, 100_000, seed=1, policy="epsilon-greedy:0.2", q=q)
    is_greedy = recs["action"] == greedy[recs["state"]]
    assert abs(is_greedy.mean() - (0.8 + 0.2 / A)) < 0.01
    assert abs((recs["next_action"] == greedy[recs["next_state"]]).mean() - 0.85) < 0.01
    _episode_checks(recs, lake, 100)
    assert policy_description("epsilon-greedy", 0.2) == "epsilon-greedy:0.2"
    with pytest.raises(ValueError, match="Q-table"):
        generate_dataset(lake, 10, seed=1, policy="epsilon-greedy", epsilon=0.1)
    with pytest.raises(ValueError, match="shape"):
        generate_dataset(lake, 10, seed=1, policy="epsilon-greedy", q=np.zeros((3, 3)),
                         epsilon=0.1)
    with pytest.raises(ValueError, match="unknown behaviour policy"):
        generate_dataset(lake, 10, seed=1, policy="softmax")


# ---------------------------------------------------------------------------- SwiftRL text
LAKE_TEXT = """\
# a hand-written FrozenLake-v1 (slippery) file
0 2 0 1
1 2 0 2   # trailing comment

2 1 0 6
0 1 0 4
4 2 0 5
\t0  0\t0 0\r
6 1 0 10
10 1 0 14
14 2 1 15
0 3 0 0
"""


def test_import_hand_written(tmp_path, lake):
    path = tmp_path / "lake.txt"
    path.write_text(LAKE_TEXT)
    recs, stats = import_swiftrl(path, "FrozenLake-v1", seed=0, return_stats=True)
    assert list(recs["state"]) == [0, 1, 2, 0, 4, 0, 6, 10, 14, 0]
    assert list(recs["action"]) == [2, 2, 1, 1, 2, 0, 1, 1, 2, 3]
    assert list(recs["next_state"]) == [1, 2, 6, 4, 5, 0, 10, 14, 15, 0]
    assert list(recs["reward"]) == [0] * 8 + [1, 0]
    assert list(recs["terminated"]) == [0, 0, 0, 0, 1, 0, 0, 0, 1, 0]
    # 2 -> 6 is followed by a line starting at 0; 0 -> 0 by a line starting at 6
    assert list(recs["truncated"]) == [0, 0, 1, 0, 0, 1, 0, 0, 0, 0]
    na = recs["next_action"]
    assert list(na[[0, 1, 3, 6, 7]]) == [2, 1, 2, 1, 2]
    imputed = [2, 4, 5, 8, 9]
    assert stats["n_imputed"] == 5 and (na[imputed] < 4).all()
    assert np.array_equal(na[imputed],
                          np.random.Generator(np.random.PCG64(0)).integers(0, 4, size=5))
    other = import_swiftrl(path, "FrozenLake-v1", seed=1)
    assert np.array_equal(other[["state", "action"]], recs[["state", "action"]])
    no_imp = import_swiftrl(path, lake, impute=False)
    assert (no_imp["next_action"][imputed] == NO_ACTION).all()


@pytest.mark.parametrize("chunk", [1, 9, 23, 64])
def test_import_in_small_chunks(tmp_path, lake, monkeypatch, chunk):
    from pimrl.data import swiftrl

    path = tmp_path / "lake.txt"
    path.write_text(LAKE_TEXT)
    whole = import_swiftrl(path, lake)
    monkeypatch.setattr(swiftrl, "_CHUNK_BYTES", chunk)
    assert import_swiftrl(path, lake).tobytes() == whole.tobytes()
    path.write_text(LAKE_TEXT + "0 1 0\n")
    with pytest.raises(SwiftRLFormatError, match=r":13: expected 4"):
        import_swiftrl(path, lake)
    path.write_text(LAKE_TEXT.replace("6 1 0 10", "6 1 0 11"))
    with pytest.raises(SwiftRLFormatError, match=r":9: impossible"):
        import_swiftrl(path, lake)


def test_import_float_rewards_and_taxi(tmp_path, taxi):
    # Taxi: state 0 is row 0, col 0, passenger at R, destination R; south moves to row 1
    s = 0
    south = int(taxi.next_state[s, 0, 0])
    path = tmp_path / "taxi.txt"
    path.write_text(f"{s} 0 -1.0 {south}\n{south} 4 -10 {south}\n{south} 1 -1e0 {s}\n")
    recs = import_swiftrl(path, taxi)
    assert list(recs["reward"]) == [-1, -10, -1]
    assert list(recs["next_action"][:2]) == [4, 1]


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "Taxi-v3", "CliffWalking-v1"])
def test_import_round_trip_of_exported_dataset(tmp_path, env_id):
    env = make(env_id)
    recs = generate_dataset(env, 20_000, seed=4, max_episode_steps=50)
    path = export_swiftrl(recs, tmp_path / "data.txt")
    got, stats = import_swiftrl(path, env_id, return_stats=True)
    for f in ("state", "action", "reward", "next_state", "terminated"):
        assert np.array_equal(got[f], recs[f]), f
    # continuing records keep their logged next action; every cut in the text is a truncation
    cont = (recs["terminated"] == 0) & (recs["truncated"] == 0)
    cont[-1] = False
    assert np.array_equal(got["next_action"][cont], recs["next_action"][cont])
    assert (recs["truncated"][got["truncated"] == 1] == 1).all()
    assert stats["n_imputed"] == len(recs) - stats["n_continuing"]
    assert stats["n_imputed"] >= (recs["terminated"].sum() + recs["truncated"].sum()) * 0.5
    # and a file saved from the import keeps the imputed count
    out = tmp_path / "imp.ds"
    save_dataset(out, got, env_id, 0, "swiftrl-import", n_imputed=stats["n_imputed"])
    assert load_dataset(out).info()["n_imputed_next_actions"] == stats["n_imputed"]


def test_export_float_rewards(tmp_path):
    recs = np.zeros(3, dtype=TRANSITION_DTYPE)
    recs["reward"] = [0.1, -2.5, 3]
    recs["state"] = [0, 12345, 7]
    text = export_swiftrl(recs, tmp_path / "f.txt").read_text().splitlines()
    assert text[1] == "12345 0 -2.5 0"
    assert np.float32(float(text[0].split()[2])) == np.float32(0.1)


@pytest.mark.parametrize(
    "body,line,fragment",
    [
        ("0 2 0 1\n1 2 0\n", 2, "expected 4"),
        ("# c\n\n0 2 0 1 5\n", 3, "found 5"),
        ("0 2 0 1\n1 x 0 2\n", 2, "action 'x' is not an integer"),
        ("0 2 0 1\n1.5 2 0 2\n", 2, "state '1.5' is not an integer"),
        ("0 2 0 1\n1 2 0 2\n2 2 zero 3\n", 3, "reward 'zero' is not a number"),
        ("0 2 0 1\n1 2 1_0 2\n", 2, "not a number"),
        ("0 2 0 1\n16 2 0 2\n", 2, "state 16 is out of range"),
        ("0 2 0 1\n1 2 0 -1\n", 2, "next state -1 is out of range"),
        ("0 2 0 1\n1 4 0 2\n", 2, "action 4 is out of range"),
        ("0 2 0 1\n1 2 nan 2\n", 2, "not finite"),
        ("0 2 0 1\n1 2 -inf 2\n", 2, "not finite"),
        ("0 2 0 1\n1 2 0 2\n2 2 0 9\n", 3, "impossible transition"),
        ("0 2 0 1\n1 2 5 2\n", 2, "impossible transition"),
        ("# only comments\n\n", 0, "no transitions"),
    ],
)
def test_import_errors_name_file_and_line(tmp_path, body, line, fragment):
    path = tmp_path / "bad.txt"
    path.write_text(body)
    with pytest.raises(SwiftRLFormatError) as ei:
        import_swiftrl(path, "FrozenLake-v1")
    assert ei.value.line == line
    assert f"{path}:{line}:" in str(ei.value) and fragment in str(ei.value), str(ei.value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 499), st.integers(0, 5),
                          st.sampled_from(["\t", " ", "  ", " \t "])), min_size=1, max_size=50))
def test_import_tokenizer_property(tmp_path_factory, rows):
    """Any whitespace layout of valid Taxi transitions parses back to the same integers."""
    taxi = make("Taxi-v3")
    lines = []
    for s, a, ws in rows:
        ns = int(taxi.next_state[s, a, 0])
        r = int(taxi.reward[s, a, 0])
        lines.append(ws.join(map(str, (s, a, r, ns))) + ws)
    path = tmp_path_factory.mktemp("prop") / "t.txt"
    path.write_text("\n".join(lines))  # no final newline
    recs = import_swiftrl(path, taxi)
    assert list(recs["state"]) == [r[0] for r in rows]
    assert list(recs["action"]) == [r[1] for r in rows]


# ---------------------------------------------------------------------------------- CLI
def test_cli_generate_info_import_export(tmp_path, capsys):
    from pimrl.cli import main

    out = tmp_path / "taxi.ds"
    assert main(["data", "generate", "--env", "Taxi-v3", "--n", "5000", "--seed", "2",
                 "--out", str(out)]) == 0
    assert "generated 5,000 transitions" in capsys.readouterr().err
    ds = load_dataset(out)
    assert ds.records.tobytes() == generate_dataset(make("Taxi-v3"), 5000, 2).tobytes()
    assert main(["data", "info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["env_id"] == "Taxi-v3" and info["n_transitions"] == 5000 and info["seed"] == 2
    assert info["reward_min"] == -10 and "state_coverage" in info
    assert main(["data", "info", str(out)]) == 0
    assert "frac_truncated" in capsys.readouterr().out

    text = tmp_path / "taxi.txt"
    assert main(["data", "export", str(out), "--out", str(text)]) == 0
    imp = tmp_path / "imp.ds"
    assert main(["data", "import", str(text), "--env", "Taxi-v3", "--out", str(imp),
                 "--seed", "3"]) == 0
    capsys.readouterr()
    ds2 = load_dataset(imp)
    assert ds2.policy == "swiftrl-import" and ds2.seed == 3 and ds2.n_imputed > 0
    assert np.array_equal(ds2.records["next_state"], ds.records["next_state"])
    assert main(["data", "info", str(imp), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_imputed_next_actions"] == ds2.n_imputed


def test_cli_epsilon_greedy_and_errors(tmp_path, capsys):
    from pimrl.cli import main

    qfile = tmp_path / "q.npy"
    np.save(qfile, np.zeros((16, 4)))
    out = tmp_path / "eg.ds"
    assert main(["data", "generate", "--env", "FrozenLake-v1:slippery=0", "--n", "300",
                 "--seed", "1", "--policy", "epsilon-greedy", "--q", str(qfile),
                 "--epsilon", "0.25", "--out", str(out)]) == 0
    assert load_dataset(out).policy == "epsilon-greedy:0.25"
    capsys.readouterr()
    assert main(["data", "generate", "--env", "FrozenLake-v1", "--n", "10", "--seed", "1",
                 "--policy", "epsilon-greedy", "--epsilon", "0.1", "--out", str(out)]) == 2
    assert "--q" in capsys.readouterr().err
    _patch(out, 0, b"XXXXXXXX")
    assert main(["data", "info", str(out)]) == 2
    assert "magic" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 0\n")
    assert main(["data", "import", str(bad), "--env", "FrozenLake-v1", "--out",
                 str(tmp_path / "x.ds")]) == 2
    assert f"{bad}:1:" in capsys.readouterr().err
    assert not (tmp_path / "x.ds").exists()
    assert main(["data", "info", str(tmp_path / "missing.ds")]) == 2
