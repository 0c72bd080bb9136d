"""A fuzzer of the ``pimrl`` command line (issue 30, "What to build" 5).

For every command, the test walks its argparse parser (``pimrl.cli.build_parser``) and
draws a command line: each optional option with some probability, its value from a
strategy chosen by the option's type (a :mod:`pimrl.limits` range: small valid values,
the bounds, one past them, huge, negative, nan, inf, empty, non-UTF-8; a choice; a
file; an environment spec, aggregator, grid or ``--hw`` override; a study config, valid,
mutated, deeply nested or not UTF-8). Every run must end with exit status 0, 2 or 130
(1 where a command documents it), print no traceback, say an error in one line, and never
run out of memory (an address-space limit is set for the run: a size that is not checked
before its allocation shows as "out of memory").

The runs are in-process (``pimrl.cli.main``) for speed; a watchdog interrupts one that runs
past its time, which must then end cleanly (130), and is reported. Valid sizes are drawn
small (``WORK`` options: at most 16 steps, transitions, epochs, ...) so a valid command
ends quickly. Not run, only parsed: ``shim`` (builds the C library: minutes, and
tests/test_shim.py's), ``calibrate --prim`` (fetches and builds PrIM). ``cost-doc`` always
writes to a temporary ``--path``.

The fast subset draws ``FAST_EXAMPLES`` command lines per command (a quarter for the
``HEAVY`` ones); the ``slow`` variant ``SLOW_EXAMPLES``, other ones. Both are derandomized,
so a run of the suite is the same run everywhere; ``PIMRL_FUZZ_RANDOM=1`` draws the slow
variant's at random, to look further (a failure prints the example to add as a test).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import threading
import _thread
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from pimrl import limits
from pimrl.cli import build_parser, main

FAST_EXAMPLES = 12
SLOW_EXAMPLES = 100
#: Commands whose valid runs take seconds (training twelve variants, plotting).
HEAVY = {"sensitivity", "calibrate", "demo", "plot"}
#: Seconds a run may take before the watchdog interrupts it.
RUN_LIMIT_S = 60.0
#: Address space a run may add to the process's.
RUN_MEMORY = 3 * 2**30

#: Options whose size is work: their valid values are drawn from [lo, lo + 16].
WORK = {"--transitions", "--n", "--steps", "--epochs", "--repeats", "--rollouts",
        "--partitions", "--threads", "--workers", "--threads-per-worker", "--decay-steps"}
#: Commands only parsed, never run (see the module docstring).
PARSE_ONLY = {"shim build", "shim check", "shim flags"}
#: Exit status 1 is documented for these: a figure outside its tolerance, a stale doc.
MAY_RETURN_1 = {"calibrate", "cost-doc"}


# ----------------------------------------------------------------------------- the parsers
def _leaves(parser, prefix=()):
    """(command words, parser) of every command that runs something."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if prefix and parser.get_default("func") is not None:
        yield prefix, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, prefix + (name,))


COMMANDS = {" ".join(words): p for words, p in _leaves(build_parser())}


def test_the_walk_sees_every_command():
    assert {"train", "eval", "data generate", "data import", "data export", "data info", "scale",
            "plot", "demo", "calibrate", "sensitivity", "cost-doc", "list", "shim build"} <= set(COMMANDS)


# ----------------------------------------------------------------------------- the files
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Inputs the strategies name: a dataset, Q-tables good and bad, garbage, a folder, a
    results folder, files with non-UTF-8 names."""
    from pimrl.data import generate_dataset
    from pimrl.data.format import save_dataset
    from pimrl.envs import make

    root = tmp_path_factory.mktemp("fuzz")
    env = make("Taxi-v3")
    save_dataset(root / "taxi.pimrl", generate_dataset(env, 300, 0), env.env_id, 0, "uniform",
                 n_states=500, n_actions=6)
    np.save(root / "q.npy", np.zeros((500, 6)))
    np.save(root / "q16.npy", np.zeros((16, 4)))
    np.save(root / "qnan.npy", np.full((500, 6), np.nan))
    (root / "garbage.bin").write_bytes(os.urandom(64))
    (root / "empty").write_bytes(b"")
    (root / "folder").mkdir()
    (root / "text.txt").write_text("0 1 -1 2\n3 0 -1 4\n")
    odd = os.fsencode(str(root)) + b"/caf\xe9.npy"        # a non-UTF-8 file name
    with open(odd, "wb") as f:
        np.save(f, np.zeros((500, 6)))
    results = root / "results"
    results.mkdir()
    (results / "results.csv").write_text("row_key,sweep\nx,y\n")
    (root / "tiny.toml").write_text(TINY_CONFIG)
    assert main(["scale", str(root / "tiny.toml"), "--out", str(root / "swept"),
                 "--no-progress"]) == 0                    # a results folder to plot
    return root


# ----------------------------------------------------------------------------- strategies
HUGE = [10**20, -(10**20), 2**63, 2**64, -1, 0, "1" * 500]
JUNK = ["", " ", "nan", "inf", "-inf", "1e309", "0x10", "1e3", "1.5", "abc", "\udcff", "٣",
        "--", "-", "\x00"]


def _integer(opt: str, rng: limits.integer):
    """(valid, bad) values of an integer option: small valid values for work sizes."""
    hi_valid = min(rng.hi, rng.lo + 16) if opt in WORK else rng.hi
    valid = st.one_of(st.integers(rng.lo, min(hi_valid, rng.lo + 16)), st.integers(rng.lo, hi_valid),
                      st.sampled_from([rng.lo, hi_valid])).map(str)
    bad = st.one_of(st.sampled_from([rng.lo - 1, rng.hi + 1] + HUGE).map(str), st.sampled_from(JUNK))
    return valid, bad


def _real(rng: limits.real):
    lo = -1e6 if rng.lo is None else rng.lo
    hi = 1e6 if rng.hi is None else rng.hi
    valid = st.floats(lo, hi, exclude_min=rng.lo_open, exclude_max=rng.hi_open,
                      allow_nan=False).map(repr)
    bad = st.one_of(st.sampled_from([lo - 1, hi + 1, float("nan"), float("inf"), -float("inf"),
                                     1e308]).map(repr), st.sampled_from(JUNK))
    return valid, bad


def _text():
    return st.one_of(st.sampled_from(JUNK), st.text(max_size=12),
                     st.binary(max_size=8).map(os.fsdecode))


GOOD_ENVS = ["Taxi-v3", "FrozenLake-v1", "FrozenLake-v1:slippery=0", "CliffWalking-v1",
             "FrozenLake8x8-v1", "FrozenLake-v1:size=6,seed=3", "Taxi-v3:max_steps=50"]
BAD_ENVS = ["FrozenLake-v1:size=1024", "FrozenLake-v1:size=99999999999999999999",
            "Taxi-v3:max_steps=99999999999999999999", "Taxi-v3:max_steps=-1", "Taxi-v3:max_steps=",
            "FrozenLake-v1:seed=3", "FrozenLake-v1:size=4,size=5", "Nope-v0", "Taxi-v3:",
            "Taxi-v3:x=1", "gym:", ":", "\udcff", "FrozenLake-v1:seed=99999999999999999999,size=4"]


def _env():
    return st.sampled_from(GOOD_ENVS), st.one_of(st.sampled_from(BAD_ENVS), _text())


def _aggregate():
    good = st.one_of(st.sampled_from(["mean", "weighted", "sync:2", "sync:3:weighted", "own:2"]))
    rounds = st.one_of(st.sampled_from(HUGE).map(str), st.sampled_from(JUNK))
    spec = st.builds(lambda w, r, tail: f"{w}:{r}{tail}", st.sampled_from(["sync", "own"]),
                     rounds, st.sampled_from(["", ":weighted", ":x", ":"]))
    return good, st.one_of(spec, st.sampled_from(["sync", "own", "x", "sync:2:own"]), _text())


def _grid():
    good = st.lists(st.sampled_from(["alpha=0.1,0.2", "epsilon=0.1", "seed=0-2", "seed=4"]),
                    min_size=1, max_size=3, unique=True).map(";".join)
    bad_axis = st.sampled_from(["seed=0-99999999", "seed=0-99999999999999999999999", "seed=-1",
                                "seed=5-3", "alpha=nan", "epsilon=2", "alpha=", "x=1", "seed=1e3",
                                "seed=0--3", "alpha=0.1;alpha=0.2", ""])
    return good, st.one_of(bad_axis, _text())


def _dpus():
    good = st.lists(st.integers(1, 8), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v)))
    bad = st.one_of(st.sampled_from(["0", "-1", "2,,3", "99999999999999999999", "3000", "1,x", ""]),
                    _text())
    return good, bad


def _hw():
    from pimrl.pim.hardware import DEFAULT_OP_INSTRUCTIONS, Hardware
    import dataclasses

    keys = [f.name for f in dataclasses.fields(Hardware)] + [f"op_{k}" for k in DEFAULT_OP_INSTRUCTIONS]
    good = st.one_of(st.sampled_from(["frequency_hz=500e6", "op_mul8=2", "op_int64_mul=1",
                                      "op_int32_mul=1", "dma_beta=0.6", "n_ranks=41"]))
    value = st.sampled_from(["0", "-1", "nan", "inf", "1e308", "99999999999",
                             "99999999999999999999", "x", "", "1.5"])
    bad = st.one_of(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(keys + ["nope", ""]), value),
                    _text())
    return good, bad


def _path(files):
    return (st.sampled_from(["out.npy", "p.npz", "out.pimrl", "o"]),
            st.sampled_from(["sub/dir/out", "/dev/null", str(files / "folder"), "", "\udcff.npy",
                             str(files / "folder") + "/x.txt", str(files / "taxi.pimrl") + "/x"]))


def _input(files, good=("taxi.pimrl", "q.npy")):
    names = ("taxi.pimrl", "q.npy", "garbage.bin", "empty", "folder", "text.txt", "missing",
             "q16.npy", "qnan.npy", "results")
    return (st.sampled_from([str(files / n) for n in good]),
            st.sampled_from([str(files / n) for n in names if n not in good]
                            + [os.fsdecode(os.fsencode(str(files)) + b"/caf\xe9.npy"), "", "\udcff"]))


TINY_CONFIG = """[study]
name = "fuzz"
seed = 0
[learner]
epochs = 1
[baselines]
cpu = false
gpu = false
[[sweep]]
name = "s"
envs = ["Taxi-v3"]
transitions = 200
dpus = [2]
variants = ["q-fp32-seq"]
"""


def _config_bytes():
    """A study config's bytes: the tiny valid one, a line of it mutated, deep nesting, huge
    numbers, or bytes that are not UTF-8."""
    lines = TINY_CONFIG.splitlines()
    value = st.sampled_from(["99999999999999999999", "-1", "0", "nan", "inf", "\"x\"", "[]",
                             "{}", "[[1]]", "true", "1e308", "\"FrozenLake-v1:size=1024\"",
                             "[\"sync:99999999\"]", "[99999999999]", "3000", "[\"own:2\"]"])

    def mutate(i, v):
        out = list(lines)
        if "=" in out[i]:
            out[i] = out[i].split("=")[0] + "= " + v
        return ("\n".join(out) + "\n").encode()

    mutated = st.builds(mutate, st.integers(0, len(lines) - 1), value)
    nested = st.integers(10, 20000).map(lambda d: ("x = " + "[" * d + "]" * d + "\n").encode())
    tables = st.integers(10, 5000).map(lambda d: ("a = " + "{b = " * d + "1" + "}" * d + "\n").encode())
    good = st.just(TINY_CONFIG.encode())
    bad = st.one_of(mutated, mutated, nested, tables, st.binary(max_size=64),
                    st.just(TINY_CONFIG.replace("fuzz", "caf\xe9").encode("latin-1")),
                    st.just(TINY_CONFIG.encode() + b"extra = 1\n"))
    return good, bad


def _value(opt: str, action, files):
    """(valid, bad) strategies of one option's value: from its type, choices or name."""
    if isinstance(action.type, limits.integer):
        return _integer(opt, action.type)
    if isinstance(action.type, limits.real):
        return _real(action.type)
    if action.choices is not None:
        return st.sampled_from(list(action.choices)), _text()
    by_name = {"--env": _env(), "--aggregate": _aggregate(), "--grid": _grid(), "--dpus": _dpus(),
               "--hw": _hw(),
               "--executor": (st.just("local"), st.sampled_from(["nope", "", "dask:", "local:x"])),
               "--policy": (st.sampled_from(["uniform", "epsilon-greedy:0.5"]),
                            st.sampled_from(["epsilon-greedy:nan", "epsilon-greedy:2", "x", "",
                                             "epsilon-greedy:"])),
               "--param": (st.sampled_from(["frequency_hz", "op_mul8", "dma_beta"]),
                           st.sampled_from(["nope", "", "op_", "name"])),
               "--q": _input(files, ("q.npy",)),
               "--minari": (st.nothing(), st.sampled_from(["", "nope/none-v0", str(files / "folder")])),
               "--config": _config_bytes()}
    if opt in by_name:
        return by_name[opt]
    if opt in ("--out", "--save-q", "--save-policy", "--plot", "--build-dir", "--path"):
        return _path(files)
    return st.nothing(), _text()


def _groups(parser) -> dict:
    """option -> the title of its argparse group (train's: learner, PIM backend, online, ...)."""
    return {a.option_strings[-1]: g.title for g in parser._action_groups
            for a in g._group_actions if a.option_strings}


#: train's modes: the option groups each draws from (others only as a fault).
TRAIN_MODES = {"reference": ("learner", "output"), "cpu": ("learner", "CPU backend", "output"),
               "pim": ("learner", "PIM backend", "output"),
               "online": ("learner", "PIM backend", "output")}


@st.composite
def command_lines(draw, command: str, files):
    """A command line of ``command``: its required options and positionals, some others,
    all valid but for at most two (the faults), and for train the options of one mode."""
    parser = COMMANDS[command]
    argv = command.split()
    config = None
    faults = draw(st.sampled_from([0, 0, 1, 1, 1, 2]))
    groups = _groups(parser)
    mode = draw(st.sampled_from(sorted(TRAIN_MODES))) if command == "train" else None
    picked = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        opt = action.option_strings[-1] if action.option_strings else action.dest
        if command == "calibrate" and opt in ("--prim", "--no-fetch", "--quick"):
            continue                                       # PrIM: fetched and built
        if command == "train" and opt in ("--online", "--backend", "--env", "data", "--transitions"):
            continue                                       # set by the mode, below
        in_mode = mode is None or groups.get(opt, "").startswith(TRAIN_MODES[mode]) or (
            mode == "online" and groups.get(opt, "").startswith("online"))
        chance = 30 if in_mode else 3
        if action.required or (not action.option_strings and action.nargs != "?") \
                or draw(st.integers(0, 99)) < chance:
            picked.append((opt, action))
    bad = set(draw(st.sets(st.sampled_from([o for o, _ in picked]), max_size=faults))
              if picked and faults else ())
    for opt, action in picked:
        if action.option_strings and isinstance(action, (argparse._StoreTrueAction,
                                                         argparse._StoreFalseAction)):
            argv.append(opt)
            continue
        if action.dest == "config" or opt == "--config":
            good, wrong = _config_bytes()
            config = draw(wrong if opt in bad else good)
            value = "{config}"
        elif action.dest == "dir":
            value = draw(st.sampled_from(["{results}"] if opt not in bad else
                                         [str(files / "results"), str(files / "folder"), "missing"]))
        elif not action.option_strings:
            good, wrong = _input(files)
            value = draw(wrong if opt in bad else good)
        else:
            good, wrong = _value(opt, action, files)
            value = draw(wrong if opt in bad or good.is_empty else good)
        if not action.option_strings:
            argv.append(value)
        elif isinstance(action, argparse._AppendAction):
            argv += [opt, value]
            if draw(st.booleans()):
                good, wrong = _value(opt, action, files)
                argv += [opt, draw(good if not good.is_empty else wrong)]
        else:
            argv += [opt, value]
    if command == "train":
        env = draw(st.sampled_from(BAD_ENVS if draw(st.integers(0, 5)) == 0 else GOOD_ENVS))
        if mode == "online":
            argv += ["--online", "--env", env]
            if "--steps" not in argv:
                argv += ["--steps", str(draw(st.integers(1, 400)))]
        else:
            argv += ["--backend", mode]
            if draw(st.booleans()):
                argv.append(str(files / "taxi.pimrl"))
            else:
                argv += ["--env", env, "--transitions",
                         str(draw(st.integers(1, 3000)))]
    if command == "demo" and "--config" not in argv:        # never the real (2-minute) demo
        config = draw(_config_bytes()[0])
        argv += ["--config", "{config}"]
    if command == "cost-doc" and "--path" not in argv:      # never the repository's doc
        argv += ["--path", "cost-model.md"]
    return argv, config


# ----------------------------------------------------------------------------- one run
def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class _Watchdog:
    """Interrupts the main thread (as Ctrl-C does) when a run passes its time."""

    def __init__(self, seconds: float):
        self.fired = False
        self._timer = threading.Timer(seconds, self._fire)

    def _fire(self):
        self.fired = True
        _thread.interrupt_main()

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        return False


def run_cli(argv, cwd: Path):
    """``pimrl argv`` in this process: (status, stdout, stderr, seconds, interrupted). stdout
    encodes strictly as a terminal's would (non-UTF-8 names must not break it)."""
    out_bytes = io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict")
    err = io.StringIO()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_bytes() + RUN_MEMORY
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    old = os.getcwd()
    t0 = time.perf_counter()
    os.chdir(cwd)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        with _Watchdog(RUN_LIMIT_S) as dog, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                rc = main(list(argv))
            except SystemExit as exc:                       # main returns; never raises
                rc = ("SystemExit", exc.code)
            except KeyboardInterrupt:                         # the watchdog, outside main's reach
                rc = 130
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        os.chdir(old)
    out.flush()
    return rc, out_bytes.getvalue().decode("utf-8", "replace"), err.getvalue(), \
        time.perf_counter() - t0, dog.fired


def check_run(command, argv, rc, out, err, seconds, interrupted):
    if os.environ.get("PIMRL_FUZZ_VERBOSE"):
        import sys
        print(f"[{rc}] {seconds:5.1f}s {' '.join(map(repr, argv))[:300]}\n      {err.strip()[-300:]}", file=sys.__stderr__)
    note(f"pimrl {' '.join(map(repr, argv))} -> {rc} in {seconds:.1f} s\nstderr: {err[-1500:]}")
    assert "Traceback" not in err, err
    assert "out of memory" not in err, "a size not checked before its allocation: " + err
    assert "codec can't" not in err, err                  # a non-UTF-8 name broke the output
    if interrupted:
        assert rc == 130, (rc, err)
        return
    allowed = {0, 2, 130} | ({1} if command in MAY_RETURN_1 else set())
    assert rc in allowed, (rc, err[-2000:])
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, f"an error in {len(lines)} lines:\n{err[-2000:]}"
        assert ": error: " in lines[0], lines[0]


def _fuzz(command, files, data, tmp_path_factory):
    argv, config = data.draw(command_lines(command, files), label="argv")
    cwd = Path(tmp_path_factory.mktemp("run"))
    # Minari writes under its root: a temporary one, never the user's
    os.environ["MINARI_DATASETS_PATH"] = str(cwd / "minari")
    if config is not None:
        (cwd / "config.toml").write_bytes(config)
    argv = [a.replace("{config}", str(cwd / "config.toml")).replace("{results}", str(files / "swept"))
            for a in argv]
    if command in PARSE_ONLY:
        # parsed, not run: the parser's errors must be one line too
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                build_parser().parse_args(argv)
                rc = 0
            except SystemExit as exc:
                rc = exc.code
        check_run(command, argv, rc, "", err.getvalue(), 0.0, False)
        return
    check_run(command, argv, *run_cli(argv, cwd))


SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _own_minari_root(monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", "/nonexistent/pimrl-fuzz-minari")


def _examples(command: str, budget: int) -> int:
    """Heavy commands (their valid runs train or plot for seconds) get a quarter."""
    return max(2, budget // 4) if command in HEAVY else budget


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_fuzz_command_line(command, files, tmp_path_factory):
    @settings(max_examples=_examples(command, FAST_EXAMPLES), derandomize=True, **SETTINGS)
    @given(data=st.data())
    def fuzz(data):
        _fuzz(command, files, data, tmp_path_factory)

    fuzz()


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_fuzz_command_line_slow(command, files, tmp_path_factory):
    @settings(max_examples=_examples(command, SLOW_EXAMPLES),
              derandomize=os.environ.get("PIMRL_FUZZ_RANDOM") != "1", **SETTINGS)
    @given(data=st.data())
    def fuzz(data):
        _fuzz(command, files, data, tmp_path_factory)

    fuzz()


@settings(max_examples=200, derandomize=True, **SETTINGS)
@given(value=st.one_of(st.integers(-10, 10**6).map(str), st.text(max_size=8),
                       st.binary(max_size=6).map(os.fsdecode)))
def test_fuzz_numba_threads_variable(value):
    """NUMBA_NUM_THREADS, checked before numba reads it: accepted in [1, 4096] (or empty:
    numba's default), else one line naming it."""
    from pimrl.cli import check_environment

    import re

    problem = check_environment({"NUMBA_NUM_THREADS": value})
    text = value.strip()
    ok = not text or (re.fullmatch(r"\+?[0-9]+", text) is not None
                      and 1 <= int(text) <= limits.MAX_THREADS)
    if ok:
        assert problem is None, problem
    else:
        assert problem is not None and "\n" not in problem and "NUMBA_NUM_THREADS" in problem
