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
    transitions = 1_000_000      # strong; weak scaling gives `transitions_per_dpu` instead
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

LEARNER_KEYS = ("epochs", "alpha", "gamma", "epsilon", "next_action", "stride", "frac_bits")
SWEEP_KEYS = {"name", "kind", "envs", "transitions", "transitions_per_dpu", "dpus", "variants",
              "tasklets", "tasklet_modes", "aggregators", *LEARNER_KEYS}
DEFAULT_LEARNER = {"epochs": 1, "alpha": 0.1, "gamma": 0.95, "epsilon": 0.1,
                   "next_action": "logged", "stride": 4, "frac_bits": 16}
DEFAULT_BASELINES = {"cpu": True, "cpu_threads": "all", "cpu_repeats": 1, "gpu": True,
                     "gpu_partitions": "dpus", "gpu_repeats": 1, "gpu_threads_per_block": 64}

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


#: The type each [learner] key must have in a study file (booleans are not numbers here).
LEARNER_TYPES = {"epochs": "integer", "stride": "integer", "frac_bits": "integer",
                 "alpha": "number", "gamma": "number", "epsilon": "number", "next_action": "string"}
#: The type of each [baselines] key: "all"/"dpus" are the words those two keys also take.
BASELINE_TYPES = {"cpu": "boolean", "gpu": "boolean", "cpu_threads": "positive integer or \"all\"",
                  "cpu_repeats": "positive integer", "gpu_repeats": "positive integer",
                  "gpu_partitions": "positive integer or \"dpus\"",
                  "gpu_threads_per_block": "positive integer"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(value, kind: str) -> bool:
    if kind == "integer":
        return _is_int(value)
    if kind == "number":
        return _is_int(value) or isinstance(value, float)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind.startswith("positive integer"):
        word = kind.split('"')[1] if '"' in kind else None
        return (_is_int(value) and value >= 1) or (word is not None and value == word)
    raise AssertionError(kind)


def _check_types(table: dict, types: dict, where: str, prefix: str):
    """A one-line ConfigError naming the key and value of the first ill-typed entry."""
    for key, kind in types.items():
        if key in table and not _type_ok(table[key], kind):
            article = "an" if kind[0] in "aeiou" else "a"
            raise ConfigError(f"{where}: {prefix}{key} = {table[key]!r}: must be {article} {kind}")


def _as_list(value, name, where):
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError(f"{where}: {name} is an empty list")
        return list(value)
    return [value]


def load_config(path) -> StudyConfig:
    path = Path(path)
    text = path.read_text()
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(raw, str(path), text)


def parse_config(raw: dict, path: str = "<config>", text: str | None = None) -> StudyConfig:
    where = path
    unknown = set(raw) - {"study", "learner", "data", "baselines", "sweep"}
    if unknown:
        raise ConfigError(f"{where}: unknown table(s) {sorted(unknown)}; expected study, learner, "
                          f"data, baselines, sweep")
    study = {"name": Path(path).stem, "seed": 0, "hardware": "auto", **raw.get("study", {})}
    bad = set(study) - {"name", "seed", "hardware"}
    if bad:
        raise ConfigError(f"{where}: unknown [study] key(s) {sorted(bad)}; known: hardware, "
                          f"name, seed")
    if study["hardware"] != "auto":
        if study["hardware"] not in PRESETS:
            raise ConfigError(f"{where}: study.hardware {study['hardware']!r} is not auto or a "
                              f"preset ({', '.join(PRESETS)})")
    if not isinstance(study["name"], str):
        raise ConfigError(f"{where}: study.name = {study['name']!r}: must be a string")
    if not _is_int(study["seed"]) or study["seed"] < 0:
        raise ConfigError(f"{where}: study.seed must be a non-negative integer")
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
        raise ConfigError(f"{where}: data.policy {data['policy']!r}: studies generate "
                          f"uniformly random data (policy = \"uniform\")")
    baselines = {**DEFAULT_BASELINES, **raw.get("baselines", {})}
    bad = set(baselines) - set(DEFAULT_BASELINES)
    if bad:
        raise ConfigError(f"{where}: unknown [baselines] key(s) {sorted(bad)}; known: "
                          f"{sorted(DEFAULT_BASELINES)}")
    _check_types(baselines, BASELINE_TYPES, where, "baselines.")
    sweeps = raw.get("sweep", [])
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
        for key in ("name", "kind"):
            if key in sw and not isinstance(sw[key], str):
                raise ConfigError(f"{w}: {key} = {sw[key]!r}: must be a string")
        variants = sw.get("variants", "all")
        if not (isinstance(variants, str) or (isinstance(variants, list)
                                              and all(isinstance(v, str) for v in variants))):
            raise ConfigError(f"{w}: variants = {variants!r}: must be \"all\" or a list of "
                              f"variant names such as [\"q-fp32-seq\"]")
        for key in ("envs", "aggregators"):
            if key in sw and not all(isinstance(v, str) for v in _as_list(sw[key], key, w)):
                raise ConfigError(f"{w}: {key} = {sw[key]!r}: must be a list of names")
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
        def ints(key, default=None):
            values = _as_list(sw.get(key, default), key, w)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise ConfigError(f"{w}: `{key}` must be integers, got {values!r}")
            return values

        s = {"name": name, "kind": kind,
             "envs": _as_list(sw["envs"], "envs", w),
             "dpus": ints("dpus"),
             "tasklets": ints("tasklets", 16),
             "tasklet_modes": [str(m) for m in _as_list(sw.get("tasklet_modes",
                                                                DEFAULT_TASKLET_MODE),
                                                         "tasklet_modes", w)],
             "aggregators": [str(a) for a in _as_list(sw.get("aggregators", "mean"), "aggregators", w)],
             "learner": {**learner, **{k: sw[k] for k in LEARNER_KEYS if k in sw}}}
        from pimrl.envs import make

        for env_id in s["envs"]:
            try:
                make(str(env_id))
            except ValueError as exc:
                raise ConfigError(f"{w}: envs: {exc}") from None
        if any(not 1 <= t <= 24 for t in s["tasklets"]):
            raise ConfigError(f"{w}: tasklets must lie in [1, 24], got {s['tasklets']}")
        for m in s["tasklet_modes"]:
            if m not in TASKLET_MODES:
                raise ConfigError(f"{w}: tasklet_modes: {m!r} is not one of "
                                  f"{', '.join(TASKLET_MODES)}")
        try:
            s["variants"] = expand_variants(sw.get("variants", "all"))
            for a in s["aggregators"]:
                spec = parse_aggregate(a)
                if spec.rounds > s["learner"]["epochs"]:
                    raise ValueError(f"aggregator {a} needs at least {spec.rounds} epochs")
            LearnerParams(**s["learner"])
        except ValueError as exc:
            raise ConfigError(f"{w}: {exc}") from None
        key = "transitions" if kind == "strong" else "transitions_per_dpu"
        if not isinstance(sw[key], int) or isinstance(sw[key], bool) or sw[key] < 1:
            raise ConfigError(f"{w}: `{key}` must be a positive integer, got {sw[key]!r}")
        s[key] = sw[key]
        if any(d < 1 for d in s["dpus"]):
            raise ConfigError(f"{w}: DPU counts must be positive")
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
    """Every run of every sweep, in order: sweep, env, variant, aggregator, tasklets, tasklet
    mode, DPUs."""
    runs = []
    for sw in cfg.sweeps:
        lp = sw["learner"]
        for env, variant, agg, tasklets, mode, d in product(
                sw["envs"], sw["variants"], sw["aggregators"], sw["tasklets"],
                sw["tasklet_modes"], sw["dpus"]):
            n = sw["transitions"] if sw["kind"] == "strong" else sw["transitions_per_dpu"] * d
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
