"""``pimrl list``: every registry pimrl draws a command-line choice from, with descriptions.

The entries come from the registries themselves (environments, hardware presets,
aggregators, DPU programs, learner choices, behaviour policies, baseline variants), and the
parsers take their choices, help and defaults from the same places, so a new entry shows
up in ``pimrl list`` and in ``--help`` without touching the command line.
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field, fields


@dataclass
class Section:
    """One registry: where it lives, the option that picks from it, and its entries."""

    title: str
    option: str
    source: str
    entries: list = field(default_factory=list)     # (name, description)


def _choice_words() -> dict:
    """The words behind the learner choices' short names, from the variant registry."""
    from pimrl.learners.variants import AXES

    return {c.name: c.description.split(":")[0] for axis in AXES for c in axis.choices}


#: The words behind the learner choices' short names (``q``, ``fp32``, ``ran``, ...).
CHOICE_WORDS = _choice_words()


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring, on one line, without reST markup."""
    text = " ".join((doc or "").replace("``", "").split())
    for end in (". ", ".\n"):
        if end in text:
            return text[: text.index(end) + 1]
    return text


def describe_choices(choices, default=None) -> str:
    """``q (Q-learning), sarsa (SARSA); default q``."""
    text = ", ".join(f"{c} ({CHOICE_WORDS[c]})" if c in CHOICE_WORDS else c for c in choices)
    return text + (f"; default {default}" if default is not None else "")


def learner_defaults() -> dict:
    """LearnerParams' defaults: the one place a learner default is written."""
    from pimrl.learners.params import LearnerParams

    return {f.name: f.default for f in fields(LearnerParams)}


def trainer_defaults() -> dict:
    """PimTrainer's keyword defaults (DPUs, tasklets, aggregator, partition, hardware, ...)."""
    from pimrl.swiftrl.trainer import PimTrainer

    return {name: p.default for name, p in inspect.signature(PimTrainer).parameters.items()
            if p.default is not inspect.Parameter.empty}


def hardware_summary(hw) -> str:
    return (f"{hw.n_dpus} DPUs ({hw.n_ranks} ranks of {hw.dpus_per_rank}, "
            f"{hw.n_faulty_dpus} faulty) at {hw.frequency_hz / 1e6:g} MHz, "
            f"{hw.wram_bytes:,} B WRAM, {hw.mram_bytes // (1 << 20)} MiB MRAM, "
            f"up to {hw.max_tasklets} tasklets")


def catalogue() -> list:
    """Every registry, as Sections."""
    from pimrl.learners.variants import ALL_VARIANTS
    from pimrl.data.generate import POLICIES, POLICY_DESCRIPTIONS
    from pimrl.envs import make
    from pimrl.envs.registry import ALIASES, REGISTRY
    from pimrl.learners.variants import (
        ALGOS, DEFAULT_TASKLET_MODE, DTYPES, NEXT_ACTIONS, SAMPLINGS, TASKLET_MODE,
    )
    from pimrl.learners.aggregate import AGGREGATORS
    from pimrl.pim.hardware import PRESETS
    from pimrl.swiftrl.trainer import KERNELS

    envs = Section("environments", "--env", "pimrl.envs.registry.REGISTRY")
    for name, entry in REGISTRY.items():
        aliases = [a for a, target in ALIASES.items() if target == name]
        opts = ", ".join(f"{k} ({o.choices})" for k, o in entry.options.items())
        text = first_sentence(make(name).description)
        text += f" Options: {opts}." if opts else ""
        text += f" Also known as {', '.join(aliases)}." if aliases else ""
        envs.entries.append((name, text))
    envs.entries.append(("gym:ID[,k=v]", "any Gymnasium environment with a transition table "
                         "(env.unwrapped.P) and Discrete spaces, made by gymnasium.make(ID, k=v); "
                         "e.g. gym:FrozenLake-v1,map_name=8x8 (pimrl[gym]; docs/environments.md)"))
    hardware = Section("hardware presets", "--hardware", "pimrl.pim.hardware.PRESETS",
                       [(n, hardware_summary(hw)) for n, hw in PRESETS.items()])
    aggregators = Section("aggregators", "--aggregate", "pimrl.learners.aggregate.AGGREGATORS",
                          AGGREGATORS.describe())
    aggregators.entries.append(
        ("sync:R[:weighted]", f"R >= 1 rounds; after each, the aggregate ({' or '.join(AGGREGATORS)}"
         ") is broadcast back to every DPU, as in federated Q-learning"))
    aggregators.entries.append(
        ("own:R", "state-owned Q-learning or SARSA: each DPU owns a range of states and sees "
         "all their transitions; R rounds broadcast the value vector V (docs/state-owned.md)"))
    from pimrl.backends import BACKENDS

    backends = Section("training backends", "pimrl train --backend", "pimrl.backends.BACKENDS",
                       BACKENDS.describe())
    programs = Section("DPU programs", "--kernel", "pimrl.swiftrl.trainer.KERNELS",
                       KERNELS.describe())
    from pimrl.devices import DEVICES

    devices = Section("DPU devices", "--device", "pimrl.devices.DEVICES", DEVICES.describe())
    d = learner_defaults()
    learner = Section("learner choices", "--algo/--dtype/--sampling/--next-action",
                      "pimrl.learners.variants.AXES",
                      [(opt, describe_choices(choices, d[key])) for opt, key, choices in (
                          ("--algo", "algo", ALGOS), ("--dtype", "dtype", DTYPES),
                          ("--sampling", "sampling", SAMPLINGS),
                          ("--next-action", "next_action", NEXT_ACTIONS))])
    modes = Section("tasklet modes", "--tasklet-mode (pimrl train --backend pim; tasklet_modes "
                    "in a sweep config)", "pimrl.learners.variants.TASKLET_MODE",
                    [(c.name + (" (default)" if c.name == DEFAULT_TASKLET_MODE else ""),
                      c.description) for c in TASKLET_MODE.choices])
    policies = Section("behaviour policies", "pimrl data generate --policy",
                       "pimrl.data.generate.POLICIES",
                       [(p, POLICY_DESCRIPTIONS[p]) for p in POLICIES])
    variants = Section("kernel variants", "variants = [...] in a sweep config",
                       "pimrl.learners.variants.ALL_VARIANTS",
                       [(v, ", ".join(CHOICE_WORDS.get(w, w) for w in v.split("-")))
                        for v in ALL_VARIANTS])
    return [envs, backends, hardware, aggregators, programs, devices, learner, modes, policies,
            variants]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "list", help="every registry (environments, hardware, aggregators, ...) with descriptions",
        description="List every registry a command-line choice comes from: environments, "
        "hardware presets, aggregators, DPU programs, learner choices, behaviour policies and "
        "baseline variants, each entry with its description.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_list)


def run_list(args) -> int:
    sections = catalogue()
    if args.json:
        print(json.dumps({s.title: {"option": s.option, "source": s.source,
                                    "entries": dict(s.entries)} for s in sections}, indent=1))
        return 0
    import textwrap

    for s in sections:
        print(f"{s.title} ({s.option}; {s.source})")
        width = max(len(n) for n, _ in s.entries)
        for name, text in s.entries:
            lines = textwrap.wrap(text, 96 - width) or [""]
            print(f"  {name:<{width}}  {lines[0]}")
            for more in lines[1:]:
                print(f"  {'':<{width}}  {more}")
        print()
    return 0
