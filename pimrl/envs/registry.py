"""``make(env_id)``: the registry of environments and the spec-string syntax.

A spec string is ``Name[:key=value,key=value]`` for pimrl's own environments, or
``gym:ID[,key=value,...]`` for any Gymnasium environment with a transition table
(:mod:`pimrl.envs.gymnasium_env`). For example ``FrozenLake-v1``,
``FrozenLake-v1:slippery=0``, ``FrozenLake-v1:seed=7,size=32``, ``CliffWalking-v1:max_steps=500``,
``Taxi-v3:copies=4096`` (4,096 independent Taxis side by side: 2,048,000 states).
Every value is a bounded non-negative integer (:mod:`pimrl.limits`). ``env.env_id`` is canonical: the registered name
(aliases resolved), keys sorted, options equal to their default omitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from pimrl.envs import toy_text
from pimrl.envs.core import TabularEnv
from pimrl.limits import EPISODE_STEPS, SEED, OutOfRange, integer
from pimrl.registry import Registry


@dataclass(frozen=True)
class _Option:
    default: int | None          # None: absent unless given
    range: integer               # pimrl.limits: the accepted values, bounded
    note: str = ""               # when the option applies

    @property
    def choices(self) -> str:
        """The valid values in words (``pimrl list``, error messages)."""
        return self.range.describe() + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class _Entry:
    build: Callable[[dict], tuple]   # options -> (tables, default max steps, description, desc)
    options: dict[str, _Option] = field(default_factory=dict)
    # options -> (S, A, K) without building the tables: sizes are checked before the work
    shape: Callable[[dict], tuple] | None = None


_SLIPPERY = _Option(1, integer(0, 1))
_MAX_STEPS = _Option(None, EPISODE_STEPS)
#: K copies side by side: a table K times larger with the same dynamics (tables that outgrow
#: the CPU's caches and a DPU's WRAM). 8,192 copies of Taxi are 4.1M states.
MAX_COPIES = 1 << 16
MAX_TABLE_ENTRIES = 1 << 28      # S x A x K: 5.6 GB of outcome tables
_COPIES = _Option(None, integer(1, MAX_COPIES),
                  "independent copies (1 when absent), state = copy * S + state")


def tile_copies(tables, copies: int):
    """``copies`` independent copies of the outcome tables side by side: state ``c * S + s``
    is state ``s`` of copy ``c``; every outcome stays in its copy, and an episode starts in a
    copy drawn uniformly (the start distribution divided by ``copies``). Its optimum is each
    copy's, so exact evaluation and value iteration give the one copy's answers."""
    if copies == 1:
        return tables
    next_state, prob, reward, terminated, initial, goal = tables
    n_states = next_state.shape[0]
    offset = (np.arange(copies, dtype=np.int64) * n_states)[:, None, None, None]
    tiled_next = (offset + next_state[None]).astype(np.int32).reshape(-1, *next_state.shape[1:])

    def tile(x):
        return np.broadcast_to(x[None], (copies,) + x.shape).reshape(-1, *x.shape[1:])

    return (tiled_next, tile(prob), tile(reward), tile(terminated),
            tile(np.asarray(initial, np.float64)) / copies, tile(goal))


def _frozen_lake_shape(map_name):
    def shape(opts):
        side = opts.get("size") or (4 if map_name == "4x4" else 8)
        return side * side * opts.get("copies", 1), 4, 3 if opts.get("slippery", 1) else 1
    return shape


def _frozen_lake(map_name):
    def build(opts):
        size = opts.get("size")
        if map_name == "4x4" and size is not None:
            desc = toy_text.generate_frozen_lake_map(size, opts.get("seed", 0))
            limit = 25 * size
        else:
            desc = toy_text.FROZEN_LAKE_MAPS[map_name]
            limit = 100 if map_name == "4x4" else 200
        tables = toy_text.frozen_lake_tables(desc, slippery=bool(opts["slippery"]))
        return tables, limit, toy_text.FROZEN_LAKE_DOC, desc
    return build


def _taxi(opts):
    return toy_text.taxi_tables(), 200, toy_text.TAXI_DOC, None


def _cliff_walking(opts):
    return toy_text.cliff_walking_tables(), 200, toy_text.CLIFF_WALKING_DOC, None


#: name -> builder and its options (the one place environments are registered)
REGISTRY = Registry("environments")
REGISTRY.add("FrozenLake-v1", _Entry(_frozen_lake("4x4"), {
    "slippery": _SLIPPERY,
    # 1024 x 1024 = 1M states already takes about 250 MB of tables.
    "size": _Option(None, integer(2, 1024), "a generated size x size map"),
    "seed": _Option(0, SEED, "with size"),
    "max_steps": _MAX_STEPS, "copies": _COPIES}, _frozen_lake_shape("4x4")),
    "Gymnasium's 4x4 FrozenLake, or a seeded size x size map")
REGISTRY.add("FrozenLake8x8-v1", _Entry(_frozen_lake("8x8"), {
    "slippery": _SLIPPERY, "max_steps": _MAX_STEPS, "copies": _COPIES},
    _frozen_lake_shape("8x8")), "Gymnasium's 8x8 FrozenLake")
REGISTRY.add("Taxi-v3", _Entry(_taxi, {"max_steps": _MAX_STEPS, "copies": _COPIES},
                               lambda opts: (500 * opts.get("copies", 1), 6, 1)),
             "Gymnasium's Taxi (dry: not rainy, not fickle)")
REGISTRY.add("CliffWalking-v1", _Entry(_cliff_walking, {"max_steps": _MAX_STEPS,
                                                        "copies": _COPIES},
                                       lambda opts: (48 * opts.get("copies", 1), 4, 1)),
             "Gymnasium's CliffWalking, truncated after 200 steps")
#: other names accepted for registered environments
ALIASES = {"Taxi-v4": "Taxi-v3"}


def env_ids() -> list[str]:
    """The registered names (aliases excluded)."""
    return list(REGISTRY)


def _int_value(name: str, key: str, raw, option: _Option) -> int:
    """An option's value through the one bounded parser; the message names the token."""
    value = int(raw) if isinstance(raw, bool) else raw     # make(..., slippery=False)
    try:
        return option.range.parse(value.strip() if isinstance(value, str) else value, key)
    except OutOfRange:
        raise ValueError(f"invalid value '{key}={raw}' for {name}: expected "
                         f"{option.choices}") from None


def parse_spec(env_id: str, **overrides) -> tuple[str, dict[str, int]]:
    """Split a spec string into ``(registered name, options)``, validated, defaults filled in.

    ``overrides`` (keyword options) take precedence over options in the string.
    """
    if not isinstance(env_id, str) or not env_id.strip():
        raise ValueError(f"environment id must be a non-empty string, got {env_id!r}")
    name, _, rest = env_id.strip().partition(":")
    name = ALIASES.get(name, name)
    if name not in REGISTRY:
        valid = ", ".join(sorted(list(REGISTRY) + list(ALIASES)))
        raise ValueError(f"unknown environment {name!r}; valid names: {valid}, or gym:ID for a "
                         "Gymnasium environment")
    entry = REGISTRY[name]
    given: dict[str, object] = {}
    for token in filter(None, (t.strip() for t in rest.split(","))) if rest else ():
        key, eq, value = token.partition("=")
        key = key.strip()
        if not eq:
            raise ValueError(f"option {token!r} in {env_id!r} is not of the form key=value")
        if key in given:
            raise ValueError(f"option {key!r} given twice in {env_id!r}")
        given[key] = value
    given.update(overrides)
    opts: dict[str, int] = {}
    for key, raw in given.items():
        if key not in entry.options:
            valid = ", ".join(sorted(entry.options)) or "none"
            raise ValueError(f"unknown option {key!r} for {name}; valid options: {valid}")
        opts[key] = _int_value(name, key, raw, entry.options[key])
    if "seed" in opts and "size" not in opts:
        raise ValueError(f"option 'seed' for {name} needs 'size' (a generated map)")
    for key, spec in entry.options.items():
        if key not in opts and spec.default is not None:
            opts[key] = spec.default
    return name, opts


def table_shape(env_id: str) -> tuple | None:
    """``(S, A, K)`` of a spec string's tables without building them (validating the spec),
    or None for a Gymnasium id (known only once made): for size checks before the work."""
    from pimrl.envs.gymnasium_env import is_gym_id

    if is_gym_id(env_id):
        return None
    name, opts = parse_spec(env_id)
    shape = REGISTRY[name].shape
    return None if shape is None else tuple(int(x) for x in shape(opts))


def make(env_id: str, **overrides) -> TabularEnv:
    """Build the ``TabularEnv`` of a spec string such as ``"FrozenLake-v1:size=32,seed=7"``.

    Keyword ``overrides`` set options too (``make("FrozenLake-v1", slippery=0)``). Unknown
    names, keys or values raise ``ValueError`` naming the offending token and the choices.
    """
    from pimrl.envs.gymnasium_env import is_gym_id, make_gym

    if is_gym_id(env_id):
        if overrides:
            raise ValueError(f"{env_id!r}: give a Gymnasium environment's options in its id "
                             f"(gym:ID,key=value), not as {sorted(overrides)}")
        return make_gym(env_id)
    name, opts = parse_spec(env_id, **overrides)
    entry = REGISTRY[name]
    entries = int(np.prod(entry.shape(opts))) if entry.shape is not None else 0
    if entries > MAX_TABLE_ENTRIES:         # before any table is built
        raise ValueError(f"{env_id}: {'x'.join(map(str, entry.shape(opts)))} makes "
                         f"{entries:,} outcome entries; at most {MAX_TABLE_ENTRIES:,} (about "
                         f"21 B each) are built (fewer copies or a smaller size)")
    tables, limit, description, desc = entry.build(opts)
    if opts.get("max_steps") == limit:
        del opts["max_steps"]
    if opts.get("copies") == 1:          # one copy is the environment itself
        del opts["copies"]
    max_steps = opts.get("max_steps", limit)
    shown = {k: v for k, v in opts.items() if entry.options[k].default != v}
    if "size" in opts:            # a generated map always names its seed
        shown["seed"] = opts["seed"]
    canonical = name + (":" + ",".join(f"{k}={shown[k]}" for k in sorted(shown)) if shown else "")
    next_state, prob, reward, terminated, initial, goal = tile_copies(tables,
                                                                      opts.get("copies", 1))
    return TabularEnv(next_state=next_state, prob=prob, reward=reward, terminated=terminated,
                      initial_dist=initial, goal=goal, max_episode_steps=max_steps,
                      env_id=canonical, description=description, desc=desc)
