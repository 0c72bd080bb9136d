"""Minari datasets in and out (discrete observations and actions).

Minari (the Farama Foundation's offline-RL format, D4RL's successor) stores episodes:
``observations`` (T + 1), ``actions``, ``rewards``, ``terminations``, ``truncations`` (T).
pimrl stores transitions (docs/dataset-format.md). The mapping:

- step ``t`` of an episode is the record ``(state=obs[t], action=actions[t],
  reward=rewards[t], next_state=obs[t+1], terminated, truncated)``, episodes one after the
  other in the dataset's order;
- ``next_action`` is the episode's next action (``actions[t+1]``). The last step of an
  episode has none in Minari's format: pimrl's own export keeps it in the episode's infos
  (``infos["pimrl_next_action"]``, T + 1 entries, the first unused), so pimrl -> Minari ->
  pimrl is exact; for other datasets it is drawn uniformly over the actions from
  ``numpy.random.Generator(PCG64(seed))`` in record order (``rng.integers(0, A, n)``) and
  counted as imputed, as for SwiftRL text files;
- ``terminated`` and ``truncated`` are kept as the episode has them (an episode cut short by
  its collector keeps both 0);
- the environment is the dataset's ``env_spec`` (as ``gym:ID,kwargs``), or, for datasets
  pimrl wrote for its own environments, the ``pimrl-env-id:`` line of its description, or
  the one the caller gives. Every transition must be possible in it (some outcome of
  ``(s, a)`` with positive probability has that next state and that reward, within
  1e-6), as for SwiftRL text files.

Export writes episodes split where a record ends an episode (terminated or truncated) or
where the next record does not start at its next state. Minari -> pimrl -> Minari gives the
same episodes, step for step.

``minari`` (with ``h5py``) is an optional dependency: ``pip install 'pimrl[minari]'``.
Datasets are local: a path to a dataset folder, or an id under Minari's local root
(``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``); pimrl never downloads one.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .records import MAX_ACTIONS, NO_ACTION, TRANSITION_DTYPE

ENV_ID_LINE = "pimrl-env-id: "
NEXT_ACTION_INFO = "pimrl_next_action"
REWARD_TOL = 1e-6


class MinariFormatError(ValueError):
    """A Minari dataset pimrl cannot read: ``source`` and what is wrong, in one line."""

    def __init__(self, source, message: str):
        self.source = str(source)
        super().__init__(f"{source}: {message}")


def _minari():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import minari
    except ImportError:
        raise ValueError("Minari datasets need the minari package: pip install 'pimrl[minari]'") \
            from None
    return minari


def open_minari(source):
    """The ``MinariDataset`` at a local path (the dataset folder or its ``data`` folder) or
    with a local id."""
    minari = _minari()
    path = Path(str(source)).expanduser()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if path.exists():
                data = path / "data" if (path / "data").is_dir() else path
                if not (data / "metadata.json").is_file():
                    raise MinariFormatError(source, "not a Minari dataset folder (no "
                                            "metadata.json in it or in its data folder)")
                return minari.MinariDataset(data)
            if "/" in str(source) and str(source).startswith((".", "/", "~")):
                raise MinariFormatError(source, "no such file or folder")
            return minari.load_dataset(str(source), download=False)
    except MinariFormatError:
        raise
    except FileNotFoundError as exc:
        root = os.environ.get("MINARI_DATASETS_PATH", "~/.minari/datasets")
        raise MinariFormatError(source, f"no local Minari dataset of that id under {root} "
                                f"(pimrl downloads none: give a path or a local id) ({exc})") from None
    except Exception as exc:                       # noqa: BLE001 - h5py, json, minari's own
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise MinariFormatError(source, f"cannot read it as a Minari dataset: {detail}") from None


def _discrete_n(space, what: str, source) -> int:
    n, start = getattr(space, "n", None), getattr(space, "start", 0)
    if type(space).__name__ != "Discrete" or n is None or int(start) != 0:
        raise MinariFormatError(source, f"its {what} space is {space}; pimrl imports Discrete(n) "
                                f"{what}s only (starting at 0)")
    return int(n)


def dataset_env_id(ds) -> str | None:
    """The environment a Minari dataset names: its env_spec as ``gym:ID,kwargs``, or the
    ``pimrl-env-id:`` line pimrl's export writes into the description; None if neither."""
    from pimrl.envs.gymnasium_env import canonical_id

    spec = getattr(ds, "env_spec", None)
    if spec is not None and getattr(spec, "id", None):
        kwargs = {k: v for k, v in (spec.kwargs or {}).items() if k != "render_mode"}
        if spec.max_episode_steps is not None:
            import gymnasium

            registered = gymnasium.spec(spec.id).max_episode_steps \
                if spec.id in gymnasium.registry else None
            if registered != spec.max_episode_steps:
                kwargs["max_episode_steps"] = spec.max_episode_steps
        return canonical_id(spec.id, kwargs)
    for line in str(ds.storage.metadata.get("description") or "").splitlines():
        if line.startswith(ENV_ID_LINE):
            return line[len(ENV_ID_LINE):].strip()
    return None


def import_minari(source, env=None, seed: int = 0, return_stats: bool = False):
    """Records (TRANSITION_DTYPE) of a local Minari dataset (see the module docstring).

    ``env``: a ``TabularEnv`` or spec string; default the one the dataset names. Raises
    ``MinariFormatError`` (a ValueError) naming the dataset, episode and step at fault."""
    from pimrl.envs import make

    ds = open_minari(source)
    S = _discrete_n(ds.observation_space, "observation", source)
    A = _discrete_n(ds.action_space, "action", source)
    if A > MAX_ACTIONS:
        raise MinariFormatError(source, f"{A} actions; a record holds at most {MAX_ACTIONS}")
    if env is None:
        env_id = dataset_env_id(ds)
        if env_id is None:
            raise MinariFormatError(source, "names no environment (no env_spec): give one with --env")
        try:
            env = make(env_id)
        except ValueError as exc:
            raise MinariFormatError(source, f"its environment {env_id!r}: {exc}") from None
    elif isinstance(env, str):
        env = make(env)
    if (env.n_states, env.n_actions) != (S, A):
        raise MinariFormatError(source, f"Discrete({S}) observations and Discrete({A}) actions, "
                                f"but {env.env_id} has {env.n_states} states and {env.n_actions} actions")
    parts, known = [], []
    n_episodes = 0
    try:
        episodes = ds.iterate_episodes()
        for ep in episodes:
            n_episodes += 1
            rec, kn = _episode_records(ep, source, S, A)
            parts.append(rec)
            known.append(kn)
    except MinariFormatError:
        raise
    except Exception as exc:                       # noqa: BLE001 - a damaged file mid-way
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise MinariFormatError(source, f"cannot read episode {n_episodes}: {detail}") from None
    records = np.concatenate(parts) if parts else np.empty(0, TRANSITION_DTYPE)
    known_na = np.concatenate(known) if known else np.empty(0, bool)
    _check_possible(records, env, source, parts)
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    unknown = ~known_na
    n_imputed = int(unknown.sum())
    records["next_action"][unknown] = rng.integers(0, A, size=n_imputed)
    if not return_stats:
        return records
    stats = dict(env_id=env.env_id, dataset=str(source), n_episodes=n_episodes,
                 n_steps=len(records), n_imputed=n_imputed,
                 n_terminated=int(records["terminated"].sum()),
                 n_truncated=int(records["truncated"].sum()))
    return records, stats


def _episode_records(ep, source, S: int, A: int):
    where = f"episode {ep.id}"
    obs = np.asarray(ep.observations)
    fields = {k: np.asarray(getattr(ep, k)) for k in ("actions", "rewards", "terminations",
                                                    "truncations")}
    T = len(fields["actions"])
    if obs.ndim != 1 or len(obs) != T + 1:
        raise MinariFormatError(source, f"{where}: {obs.shape} observations for {T} actions "
                                f"(a discrete episode has T + 1 observations for T steps)")
    for k, v in fields.items():
        if v.ndim != 1 or len(v) != T:
            raise MinariFormatError(source, f"{where}: {k} has shape {v.shape}, expected ({T},)")
    for name, v, n in (("observation", obs, S), ("action", fields["actions"], A)):
        if not np.issubdtype(v.dtype, np.integer):
            raise MinariFormatError(source, f"{where}: {name}s of dtype {v.dtype}, not integers")
        bad = np.flatnonzero((v < 0) | (v >= n))
        if bad.size:
            raise MinariFormatError(source, f"{where}, step {int(bad[0])}: {name} {v[bad[0]]} "
                                    f"outside [0, {n})")
    r = fields["rewards"].astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(r) | (np.abs(r) > np.finfo(np.float32).max))
    if bad.size:
        raise MinariFormatError(source, f"{where}, step {int(bad[0])}: reward {r[bad[0]]} is not "
                                "a finite float32")
    rec = np.empty(T, dtype=TRANSITION_DTYPE)
    rec["state"] = obs[:-1]
    rec["next_state"] = obs[1:]
    rec["reward"] = r
    rec["action"] = fields["actions"]
    rec["terminated"] = fields["terminations"].astype(bool)
    rec["truncated"] = fields["truncations"].astype(bool)
    rec["next_action"] = NO_ACTION
    known = np.zeros(T, dtype=bool)
    if T:
        rec["next_action"][:-1] = fields["actions"][1:]
        known[:-1] = True
    kept = (ep.infos or {}).get(NEXT_ACTION_INFO) if isinstance(ep.infos, dict) else None
    if kept is not None:
        kept = np.asarray(kept)
        if kept.shape == (T + 1,) and np.issubdtype(kept.dtype, np.integer) \
                and np.all((kept[1:] >= 0) & (kept[1:] < A)):
            rec["next_action"] = kept[1:]
            known[:] = True
    return rec, known


def _check_possible(records, env, source, parts) -> None:
    """Every transition must be an outcome of its (s, a) in ``env``."""
    if not len(records):
        return
    s, a, ns = (records[f].astype(np.int64) for f in ("state", "action", "next_state"))
    r = records["reward"].astype(np.float64)
    match = ((env.prob[s, a] > 0) & (env.next_state[s, a] == ns[:, None])
             & (np.abs(env.reward[s, a] - r[:, None]) <= REWARD_TOL * np.maximum(1.0, np.abs(r[:, None]))))
    bad = np.flatnonzero(~match.any(axis=1))
    if bad.size:
        i = int(bad[0])
        ends = np.cumsum([len(p) for p in parts])
        e = int(np.searchsorted(ends, i, side="right"))
        step = i - (int(ends[e - 1]) if e else 0)
        raise MinariFormatError(source, f"episode {e}, step {step}: ({s[i]}, {a[i]}) -> state "
                                f"{ns[i]} with reward {r[i]:g} is not possible in {env.env_id}")


def _episodes(records: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each episode: a record that ends one (terminated or truncated), or
    whose successor does not start at its next state, closes it."""
    n = len(records)
    if not n:
        return []
    ends = (records["terminated"] != 0) | (records["truncated"] != 0)
    ends[:-1] |= records["state"][1:] != records["next_state"][:-1]
    ends[-1] = True
    stops = np.flatnonzero(ends) + 1
    starts = np.concatenate([[0], stops[:-1]])
    return list(zip(starts.tolist(), stops.tolist()))


def export_minari(records: np.ndarray, env, dataset_id: str, root=None,
                  author: str | None = None) -> Path:
    """Write ``records`` as the Minari dataset ``dataset_id`` under ``root`` (default Minari's
    local root) and return its folder. Written in a temporary folder and moved into place,
    so a failed export leaves nothing; an existing dataset of that id is refused."""
    from pimrl.envs import make
    from pimrl.envs.gymnasium_env import is_gym_id, parse_gym_id

    minari = _minari()
    import gymnasium
    from minari.data_collector import EpisodeBuffer

    env = make(env) if isinstance(env, str) else env
    records = np.asarray(records)
    if records.dtype != TRANSITION_DTYPE:
        raise ValueError(f"records must be TRANSITION_DTYPE, got {records.dtype}")
    if not len(records):
        raise ValueError("an empty dataset has no episode to export")
    root = Path(root if root is not None else
                os.environ.get("MINARI_DATASETS_PATH", Path.home() / ".minari" / "datasets")).expanduser()
    root = root.absolute()         # Minari resolves a relative root against itself (twice)
    final = root / dataset_id
    if final.exists():
        raise ValueError(f"{final}: a Minari dataset {dataset_id!r} exists already")
    buffers = []
    for i, (lo, hi) in enumerate(_episodes(records)):
        ep = records[lo:hi]
        na = np.concatenate([[0], ep["next_action"].astype(np.int64)])
        buffers.append(EpisodeBuffer(
            id=i, observations=np.concatenate([ep["state"], ep["next_state"][-1:]]).astype(np.int64),
            actions=ep["action"].astype(np.int64), rewards=ep["reward"].astype(np.float32),
            terminations=ep["terminated"].astype(bool), truncations=ep["truncated"].astype(bool),
            infos={NEXT_ACTION_INFO: na}))
    spaces = dict(observation_space=gymnasium.spaces.Discrete(env.n_states),
                  action_space=gymnasium.spaces.Discrete(env.n_actions))
    description = (f"Exported by pimrl from {len(records)} transitions of {env.env_id}.\n"
                   f"{ENV_ID_LINE}{env.env_id}")
    env_arg = None
    if is_gym_id(env.env_id):
        name, kwargs = parse_gym_id(env.env_id)
        spec = gymnasium.spec(name)
        steps = kwargs.pop("max_episode_steps", spec.max_episode_steps)
        from dataclasses import replace

        env_arg = replace(spec, kwargs={**spec.kwargs, **kwargs}, max_episode_steps=steps)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pimrl-minari-", dir=root))
    saved = os.environ.get("MINARI_DATASETS_PATH")
    try:
        os.environ["MINARI_DATASETS_PATH"] = str(tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            minari.create_dataset_from_buffers(
                dataset_id, buffers, env=env_arg, algorithm_name="pimrl export",
                author=author, description=description, data_format="hdf5", **spaces)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / dataset_id, final)
    finally:
        if saved is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = saved
        shutil.rmtree(tmp, ignore_errors=True)
    return final
