"""Study configurations (TOML) and their expansion into runs.

A study file has a ``[study]`` table (name, seed, hardware), a ``[learner]`` table (the
:class:`~pimrl.learners.params.LearnerParams` fields shared by every run: epochs, alpha,
gamma, epsilon, next_action, stride), a ``[data]`` table (the behaviour policy of the
generated datasets), a ``[baselines]`` table and one or more ``[[sweep]]`` tables. A sweep is
the cross product of its lists::

    [[sweep]]
    name = "strong"              # unique
    kind = "strong"              # strong: a fixed dataset of `transitions` over `dpus`
    envs = ["FrozenLake-v1", "Taxi-v3"]
    transitions = 1_000_000      # strong (or a list of sizes: a data-size study); weak
                                 # scaling gives `transitions_per_dpu` instead
    dpus = [125, 250, 500, 1000, 2000]
    variants = "all"             # or ["q-fp32-seq", "sarsa-int32-ran", ...]
    tasklets = [16]
    tasklet_modes = ["rows"]     # ring | rows | unlocked (docs/design.md; default rows)
    aggregators = ["mean"]       # mean | weighted | sync:R
    epochs = 20                  # optional: any [learner] key may be overridden per sweep

Every run is keyed by its parameters (:func:`run_key`), which is what lets an interrupted
sweep resume without recomputing finished rows.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from itertools import product
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

from pimrl.learners.variants import (
    DEFAULT_TASKLET_MODE, TASKLET_MODES, expand_variants, parse_variant,
)
from pimrl.learners.params import LearnerParams
from pimrl.learners.aggregate import parse_aggregate
from pimrl.pim.hardware import PRESETS, get_hardware
from pimrl import limits as L

LEARNER_KEYS = ("epochs", "alpha", "gamma", "epsilon", "next_action", "stride", "frac_bits")
SWEEP_KEYS = {"name", "kind", "envs", "transitions", "transitions_per_dpu", "dpus", "variants",
              "tasklets", "tasklet_modes", "aggregators", *LEARNER_KEYS}
DEFAULT_LEARNER = {"epochs": 1, "alpha": 0.1, "gamma": 0.95, "epsilon": 0.1,
                   "next_action": "logged", "stride": 4, "frac_bits": 16}
DEFAULT_BASELINES = {"cpu": True, "cpu_threads": "all", "cpu_repeats": 1, "gpu": True,
                     "gpu_partitions": "dpus", "gpu_repeats": 1, "gpu_threads_per_block": 64,
                     "c_loop": False, "cpu_quality": False}

#: The parameters of a run, in the order they appear in results.csv.
PARAM_COLUMNS = ("sweep", "kind", "env", "variant", "algo", "dtype", "sampling", "next_action",
                 "epochs", "alpha", "gamma", "epsilon", "stride", "frac_bits", "seed",
                 "data_policy", "n_transitions", "transitions_per_dpu", "n_dpus", "tasklets",
                 "tasklet_mode", "aggregator", "hardware")


class ConfigError(ValueError):
    """A study file that cannot be run; the message names the file and the key."""


@dataclass
class StudyConfig:
    path: str
    text: str
    study: dict
    learner: dict
    data: dict
    baselines: dict
    sweeps: list

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def as_dict(self) -> dict:
        return {"study": self.study, "learner": self.learner, "data": self.data,
                "baselines": self.baselines, "sweep": self.sweeps}


#: The type each [learner] key must have in a study file: a string, or a number in its
#: range (pimrl.limits; booleans are not numbers here).
LEARNER_TYPES = {"epochs": L.EPOCHS, "stride": L.STRIDE, "frac_bits": L.FRAC_BITS,
                 "alpha": L.LEARNING_RATE, "gamma": L.DISCOUNT, "epsilon": L.PROBABILITY,
                 "next_action": "string"}
#: The type of each [baselines] key; a number range with a word is that word or a number.
BASELINE_TYPES = {"cpu": "boolean", "gpu": "boolean", "c_loop": "boolean",
                  "cpu_quality": "boolean", "cpu_threads": (L.THREADS, "all"),
                  "cpu_repeats": L.REPEATS, "gpu_repeats": L.REPEATS,
                  "gpu_partitions": (L.DPU_COUNT, "dpus"),
                  "gpu_threads_per_block": L.integer(1, 1024)}
#: Bytes of memory per transition of a row's dataset: the records, the DPUs' copy and the
#: partitioned or baseline copy (checked against this machine's memory before any row runs).
ROW_BYTES_PER_TRANSITION = 3 * 16


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_types(table: dict, types: dict, where: str, prefix: str):
    """A one-line ConfigError naming the key, the value and what it must be, for the first
    ill-typed or out-of-range entry: a word ("string", "boolean"), a range of
    :mod:`pimrl.limits`, or (range, word) for a number or that word."""
    for key, kind in types.items():
        if key not in table:
            continue
        value = table[key]
        if kind in ("string", "boolean"):
            if not isinstance(value, str if kind == "string" else bool):
                raise ConfigError(f"{where}: {prefix}{key} = {_short(value)}: must be a {kind}")
            continue
        rng, word = kind if isinstance(kind, tuple) else (kind, None)
        if word is not None and value == word:
            continue
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise L.OutOfRange(key)           # "10" is text in TOML, not a number
            rng.parse(value, key)
        except L.OutOfRange:
            raise ConfigError(f"{where}: {prefix}{key} = {_short(value)}: expected "
                              f"{rng.describe()}" + (f" or \"{word}\"" if word else "")) from None


def _short(value) -> str:
    """A TOML value for a message: its repr, cut short (a table can be large or deep)."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<a deeply nested {type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _as_list(value, name, where):
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError(f"{where}: {name} is an empty list")
        return list(value)
    return [value]


#: Bytes of a study file: far beyond any study, short of a file that is not one.
MAX_CONFIG_BYTES = 16 * 2**20


def load_config(path) -> StudyConfig:
    path = Path(path)
    from pimrl.io import check_regular_input

    check_regular_input(str(path), "config")           # a FIFO would block the read
    with open(path, "rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: over {MAX_CONFIG_BYTES // 2**20} MiB: not a study config")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}, line {line}); TOML files "
                          f"are UTF-8") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:                  # the TOML reader recurses per nesting level
        raise ConfigError(f"{path}: arrays or tables nested too deeply") from None
    return parse_config(raw, str(path), text)


def parse_config(raw: dict, path: str = "<config>", text: str | None = None) -> StudyConfig:
    where = path
    unknown = set(raw) - {"study", "learner", "data", "baselines", "sweep"}
    if unknown:
        raise ConfigError(f"{where}: unknown table(s) {sorted(unknown)}; expected study, learner, "
                          f"data, baselines, sweep")
    for name in ("study", "learner", "data", "baselines"):
        if not isinstance(raw.get(name, {}), dict):
            raise ConfigError(f"{where}: {name} = {_short(raw[name])}: must be a table ([{name}])")
    sweeps = raw.get("sweep", [])
    if not isinstance(sweeps, list) or not all(isinstance(sw, dict) for sw in sweeps):
        raise ConfigError(f"{where}: sweep = {_short(sweeps)}: must be tables ([[sweep]])")
    study = {"name": Path(path).stem, "seed": 0, "hardware": "auto", **raw.get("study", {})}
    bad = set(study) - {"name", "seed", "hardware"}
    if bad:
        raise ConfigError(f"{where}: unknown [study] key(s) {sorted(bad)}; known: hardware, "
                          f"name, seed")
    if study["hardware"] != "auto":
        if not isinstance(study["hardware"], str) or study["hardware"] not in PRESETS:
            raise ConfigError(f"{where}: study.hardware {_short(study['hardware'])} is not auto or a "
                              f"preset ({', '.join(PRESETS)})")
    _check_types(study, {"name": "string", "seed": L.SEED}, where, "study.")
    learner = {**DEFAULT_LEARNER, **raw.get("learner", {})}
    bad = set(learner) - set(LEARNER_KEYS)
    if bad:
        raise ConfigError(f"{where}: unknown [learner] key(s) {sorted(bad)}; known: {LEARNER_KEYS}")
    _check_types(learner, LEARNER_TYPES, where, "learner.")
    data = {"policy": "uniform", **raw.get("data", {})}
    bad = set(data) - {"policy"}
    if bad:
        raise ConfigError(f"{where}: unknown [data] key(s) {sorted(bad)}; known: policy")
    if data["policy"] != "uniform":
        raise ConfigError(f"{where}: data.policy {_short(data['policy'])}: studies generate "
                          f"uniformly random data (policy = \"uniform\")")
    baselines = {**DEFAULT_BASELINES, **raw.get("baselines", {})}
    bad = set(baselines) - set(DEFAULT_BASELINES)
    if bad:
        raise ConfigError(f"{where}: unknown [baselines] key(s) {sorted(bad)}; known: "
                          f"{sorted(DEFAULT_BASELINES)}")
    _check_types(baselines, BASELINE_TYPES, where, "baselines.")
    if baselines["cpu_quality"] and baselines["cpu_repeats"] != 1:
        raise ConfigError(f"{where}: baselines.cpu_quality times one epoch-by-epoch run; "
                          f"set cpu_repeats = 1 (got {baselines['cpu_repeats']})")
    if not sweeps:
        raise ConfigError(f"{where}: no [[sweep]] table")
    names = set()
    out = []
    for i, sw in enumerate(sweeps):
        w = f"{where}: sweep #{i + 1}"
        bad = set(sw) - SWEEP_KEYS
        if bad:
            raise ConfigError(f"{w}: unknown key(s) {sorted(bad)}; known: {sorted(SWEEP_KEYS)}")
        _check_types(sw, LEARNER_TYPES, w, "")
        _check_types(sw, {"name": "string", "kind": "string"}, w, "")
        variants = sw.get("variants", "all")
        if not (isinstance(variants, str) or (isinstance(variants, list)
                                              and all(isinstance(v, str) for v in variants))):
            raise ConfigError(f"{w}: variants = {_short(variants)}: must be \"all\" or a list of "
                              f"variant names such as [\"q-fp32-seq\"]")
        for key in ("envs", "aggregators"):
            if key in sw and not all(isinstance(v, str) for v in _as_list(sw[key], key, w)):
                raise ConfigError(f"{w}: {key} = {_short(sw[key])}: must be a list of names")
        name = sw.get("name", f"sweep{i + 1}")
        if name in names:
            raise ConfigError(f"{w}: duplicate sweep name {name!r}")
        names.add(name)
        kind = sw.get("kind", "strong")
        if kind not in ("strong", "weak"):
            raise ConfigError(f"{w}: kind must be strong or weak, got {kind!r}")
        if kind == "strong" and "transitions" not in sw:
            raise ConfigError(f"{w}: a strong-scaling sweep needs `transitions`")
        if kind == "weak" and "transitions_per_dpu" not in sw:
            raise ConfigError(f"{w}: a weak-scaling sweep needs `transitions_per_dpu`")
        for key in ("envs", "dpus"):
            if key not in sw:
                raise ConfigError(f"{w}: missing `{key}`")
        def ints(key, rng, default=None):
            """A key's list of integers, each in ``rng`` (pimrl.limits)."""
            values = _as_list(sw.get(key, default), key, w)
            for v in values:
                if isinstance(v, bool) or not isinstance(v, int) or not rng.lo <= v <= rng.hi:
                    raise ConfigError(f"{w}: {key} = {_short(v)}: expected {rng.describe()}")
            return values

        for key in ("tasklet_modes",):
            if key in sw and not all(isinstance(v, str) for v in _as_list(sw[key], key, w)):
                raise ConfigError(f"{w}: {key} = {_short(sw[key])}: must be a list of names")
        s = {"name": name, "kind": kind,
             "envs": _as_list(sw["envs"], "envs", w),
             "dpus": ints("dpus", L.DPU_COUNT),
             "tasklets": ints("tasklets", L.integer(1, 24), 16),
             "tasklet_modes": [str(m) for m in _as_list(sw.get("tasklet_modes",
                                                                DEFAULT_TASKLET_MODE),
                                                         "tasklet_modes", w)],
             "aggregators": [str(a) for a in _as_list(sw.get("aggregators", "mean"), "aggregators", w)],
             "learner": {**learner, **{k: sw[k] for k in LEARNER_KEYS if k in sw}}}
        from pimrl.envs import make
        from pimrl.envs.registry import table_shape

        shapes = []
        for env_id in s["envs"]:
            try:
                # a registered env is checked from its spec, without building its tables
                shape = table_shape(env_id)
                shapes.append(shape if shape is not None else make(env_id).next_state.shape)
            except ValueError as exc:
                raise ConfigError(f"{w}: envs: {exc}") from None
        for m in s["tasklet_modes"]:
            if m not in TASKLET_MODES:
                raise ConfigError(f"{w}: tasklet_modes: {m!r} is not one of "
                                  f"{', '.join(TASKLET_MODES)}")
        try:
            s["variants"] = expand_variants(sw.get("variants", "all"))
            for a in s["aggregators"]:
                spec = parse_aggregate(a, "aggregators")
                if spec.rounds > s["learner"]["epochs"]:
                    raise ValueError(f"aggregator {a} needs at least {spec.rounds} epochs")
            LearnerParams(**s["learner"])
        except ValueError as exc:
            raise ConfigError(f"{w}: {exc}") from None
        key = "transitions" if kind == "strong" else "transitions_per_dpu"
        if isinstance(sw[key], list) and kind == "weak":
            raise ConfigError(f"{w}: {key} = {_short(sw[key])}: expected {L.TRANSITIONS.describe()}")
        # A strong sweep may list several dataset sizes (a data-size study): each size is
        # the prefix of one dataset generated at the largest.
        sizes = ints(key, L.TRANSITIONS)
        s[key] = sizes if isinstance(sw[key], list) else sizes[0]
        # Each row's memory, before any row runs: its dataset (and copies), and the DPUs'
        # Q-tables with the host's gathered copy.
        for d, size in product(s["dpus"], sizes):
            n = size if kind == "strong" else size * d
            if n > L.MAX_TRANSITIONS:
                raise ConfigError(f"{w}: transitions_per_dpu {s[key]:,} x {d:,} DPUs = {n:,} "
                                  f"transitions, more than the {L.show(L.MAX_TRANSITIONS)} allowed")
            if all(parse_aggregate(a).name == "own" for a in s["aggregators"]):
                # state ownership: each DPU at most a WRAM's worth (its share in the local
                # layout), the host its tables
                table = max(S * A for S, A, *_ in shapes) * 4
                tables = table * 4 + min(table, 64 << 10) * d
            else:
                tables = max(S * A for S, A, *_ in shapes) * 4 * 2 * d
            try:
                L.check_memory(n * ROW_BYTES_PER_TRANSITION + tables,
                               f"{w}: a row of {n:,} transitions on {d:,} DPUs")
            except L.OutOfRange as exc:
                raise ConfigError(str(exc)) from None
        for d in s["dpus"]:
            preset = hardware_for(study["hardware"], d)
            have = get_hardware(preset).n_dpus
            if d > have:
                why = (" (study.hardware = \"auto\" takes upmem-2556, or upmem-2560 beyond "
                       "2,556 DPUs)" if study["hardware"] == "auto" else "")
                fits = [n for n, hw in PRESETS.items() if hw.n_dpus >= d]
                advice = (f"use study.hardware = \"{fits[0]}\"" if fits
                          else "no hardware preset has that many")
                raise ConfigError(f"{w}: dpus {d}: {preset} has {have} functional DPUs{why}; "
                                  f"{advice}")
        out.append(s)
    return StudyConfig(path, text if text is not None else json.dumps(raw), study, learner, data,
                       baselines, out)


def hardware_for(study_hw: str, n_dpus: int) -> str:
    """The preset of a run: ``auto`` is upmem-2556 (the PrIM server), or upmem-2560 beyond
    2,556 DPUs."""
    if study_hw == "auto":
        return "upmem-2556" if n_dpus <= 2556 else "upmem-2560"
    return study_hw


def expand_runs(cfg: StudyConfig) -> list[dict]:
    """Every run of every sweep, in order: sweep, env, dataset size, variant, aggregator,
    tasklets, tasklet mode, DPUs."""
    runs = []
    for sw in cfg.sweeps:
        lp = sw["learner"]
        sizes = sw["transitions"] if sw["kind"] == "strong" else sw["transitions_per_dpu"]
        sizes = sizes if isinstance(sizes, list) else [sizes]
        for env, size, variant, agg, tasklets, mode, d in product(
                sw["envs"], sizes, sw["variants"], sw["aggregators"], sw["tasklets"],
                sw["tasklet_modes"], sw["dpus"]):
            n = size if sw["kind"] == "strong" else size * d
            runs.append({
                "sweep": sw["name"], "kind": sw["kind"], "env": env,
                "variant": variant, **parse_variant(variant),
                "next_action": lp["next_action"], "epochs": int(lp["epochs"]),
                "alpha": float(lp["alpha"]), "gamma": float(lp["gamma"]),
                "epsilon": float(lp["epsilon"]), "stride": int(lp["stride"]),
                "frac_bits": int(lp["frac_bits"]), "seed": int(cfg.study["seed"]),
                "data_policy": str(cfg.data["policy"]), "n_transitions": int(n),
                "transitions_per_dpu": (sw.get("transitions_per_dpu", "")
                                        if sw["kind"] == "weak" else ""),
                "n_dpus": int(d), "tasklets": int(tasklets), "tasklet_mode": mode,
                "aggregator": agg, "hardware": hardware_for(cfg.study["hardware"], d),
            })
    seen = set()
    for r in runs:
        k = run_key(r)
        if k in seen:
            raise ConfigError(f"{cfg.path}: run listed twice: {r}")
        seen.add(k)
    return runs


def _canon(value) -> str:
    """Parameters as the CSV stores them (so a key computed from a CSV row matches)."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def run_key(run: dict) -> str:
    """A stable identifier of a run's parameters (hex digest of their canonical text)."""
    text = json.dumps({k: _canon(run[k]) for k in PARAM_COLUMNS}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def learner_params(run: dict) -> LearnerParams:
    return LearnerParams(algo=run["algo"], dtype=run["dtype"], sampling=run["sampling"],
                         epochs=int(run["epochs"]), alpha=float(run["alpha"]),
                         gamma=float(run["gamma"]), epsilon=float(run["epsilon"]),
                         next_action=run["next_action"], stride=int(run["stride"]),
                         seed=int(run["seed"]), frac_bits=int(run["frac_bits"]),
                         tasklet_mode=run.get("tasklet_mode") or "ring")
