"""``pimrl data generate | import | export | info``."""
from __future__ import annotations

import json
import sys
import time

import numpy as np


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def _make_env(spec: str):
    from pimrl.cli import UserError
    from pimrl.envs import make

    try:
        return make(spec)
    except (ValueError, KeyError) as exc:
        raise UserError(f"--env {spec!r}: {exc}") from None


def _minari_id(args) -> None:
    """--minari names a dataset (or a folder): an empty one would be Minari's whole root."""
    from pimrl.cli import UserError

    if args.minari is not None and not args.minari.strip():
        raise UserError("--minari: give a dataset id such as pimrl/taxi-random-v0 (or, to "
                        "import, a dataset folder)")


def _cmd_generate(args) -> int:
    from pimrl.cli import UserError

    from pimrl.data.format import HEADER_SIZE
    from pimrl.data.generate import FILE_CHUNK, generate_to_file, parse_policy

    from pimrl.io import check_destination

    from pimrl.data.records import TRANSITION_DTYPE
    from pimrl.limits import check_memory

    out = check_destination(args.out)        # before the work, not after
    # the records go straight to the file, one chunk at a time: memory for a chunk, disk
    # for the file
    check_memory(min(args.n, FILE_CHUNK) * TRANSITION_DTYPE.itemsize, f"--n {args.n:,}")
    import shutil

    need = HEADER_SIZE + args.n * TRANSITION_DTYPE.itemsize
    free = shutil.disk_usage(out.parent if str(out.parent) else ".").free
    if need > free:
        raise UserError(f"--out {args.out}: the file needs {need:,} bytes; its folder's disk "
                        f"has {free:,} free")
    env = _make_env(args.env)
    try:
        name, eps = parse_policy(args.policy, args.epsilon)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    q = None
    if name == "epsilon-greedy":
        if args.q is None:
            raise UserError("--policy epsilon-greedy needs --q Q.npy (a Q-table of shape (S, A))")
        from pimrl.io import check_regular_input

        check_regular_input(args.q, "--q")
        try:
            q = np.load(args.q, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:      # EOFError: an empty file
            raise UserError(f"--q {args.q}: cannot read a .npy array: {exc}") from None
        if q.shape != (env.n_states, env.n_actions):
            raise UserError(f"--q {args.q}: shape {q.shape}, {env.env_id} needs "
                            f"({env.n_states}, {env.n_actions})")
    elif args.q is not None:
        raise UserError("--q is only used with --policy epsilon-greedy")
    t0 = time.perf_counter()
    generate_to_file(args.out, env, args.n, args.seed, name, q=q, epsilon=eps,
                     max_episode_steps=args.max_episode_steps)
    dt = time.perf_counter() - t0
    _err(f"generated {args.n:,} transitions of {env.env_id} into {args.out} in {dt:.2f} s "
         f"measured ({args.n / max(dt, 1e-9) / 1e6:.1f} M/s, writing included)")
    return 0


def _cmd_import(args) -> int:
    from pimrl.cli import UserError
    from pimrl.data.format import save_dataset
    from pimrl.data.swiftrl import import_swiftrl

    if (args.text is None) == (args.minari is None):
        raise UserError("give a SwiftRL text file or --minari PATH_OR_ID, not both")
    if args.minari is not None:
        _minari_id(args)
        return _import_minari(args)
    if args.env is None:
        raise UserError("a SwiftRL text file needs --env (the environment the data came from)")
    env = _make_env(args.env)
    t0 = time.perf_counter()
    records, stats = import_swiftrl(args.text, env, seed=args.seed, return_stats=True)
    dt = time.perf_counter() - t0
    _err(f"imported {stats['n_lines']:,} transitions of {env.env_id} from {args.text} in "
         f"{dt:.2f} s ({stats['n_terminated']:,} terminated, {stats['n_truncated']:,} cut, "
         f"{stats['n_imputed']:,} next actions imputed)")
    save_dataset(args.out, records, env.env_id, args.seed, "swiftrl-import",
                 n_states=env.n_states, n_actions=env.n_actions, n_imputed=stats["n_imputed"])
    _err(f"wrote {args.out}")
    return 0


def _import_minari(args) -> int:
    from pimrl.data.format import save_dataset
    from pimrl.data.minari_io import import_minari
    from pimrl.io import check_destination

    check_destination(args.out)
    env = _make_env(args.env) if args.env is not None else None
    t0 = time.perf_counter()
    records, stats = import_minari(args.minari, env, seed=args.seed, return_stats=True)
    dt = time.perf_counter() - t0
    _err(f"imported {stats['n_steps']:,} transitions in {stats['n_episodes']:,} episodes of "
         f"{stats['env_id']} from Minari dataset {args.minari} in {dt:.2f} s measured "
         f"({stats['n_terminated']:,} terminated, {stats['n_truncated']:,} truncated, "
         f"{stats['n_imputed']:,} next actions imputed)")
    from pimrl.envs import make

    env = env or make(stats["env_id"])
    save_dataset(args.out, records, env.env_id, args.seed, "minari-import",
                 n_states=env.n_states, n_actions=env.n_actions, n_imputed=stats["n_imputed"])
    _err(f"wrote {args.out}")
    return 0


def _export_minari(args, ds) -> int:
    from pimrl.data.minari_io import export_minari

    path = export_minari(ds.records, ds.env(), args.minari, root=args.out)
    _err(f"wrote {len(ds):,} transitions of {ds.env_id} as Minari dataset {args.minari} ({path})")
    return 0


def _cmd_export(args) -> int:
    from pimrl.cli import UserError
    from pimrl.data.format import load_dataset
    from pimrl.data.swiftrl import export_swiftrl

    from pimrl.io import check_destination

    if args.minari is not None:
        _minari_id(args)
        return _export_minari(args, load_dataset(args.file))
    if args.out is None:
        raise UserError("--out: the text file to write (or --minari NAME for a Minari dataset)")
    check_destination(args.out)        # before the work, not after
    ds = load_dataset(args.file)
    export_swiftrl(ds.records, args.out)
    _err(f"wrote {len(ds):,} lines to {args.out}")
    return 0


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _cmd_info(args) -> int:
    from pimrl.data.format import load_dataset
    from pimrl.cli.plan import default_plans
    from pimrl.cli.plan import LABELS
    from pimrl.memplan import show

    ds = load_dataset(args.file, validate=not args.no_validate)
    info = ds.info()
    plans = default_plans(len(ds), ds.n_states, ds.n_actions)     # pimrl/cli/plan.py
    if args.json:
        info["memory_plan"] = {label: p.as_dict() for label, p in plans.items()}
        print(json.dumps(info))
        return 0
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key:<{width}}  {_fmt(value)}")
    for label, p in plans.items():
        name, size = p.largest()
        print(f"memory plan of pimrl {label}: {show(p.total)} planned (largest part: "
              f"{LABELS.get(name, name)} {show(size)})")
    return 0


def register(subparsers) -> None:
    """Add ``pimrl data`` and its sub-commands to the top-level parser."""
    p = subparsers.add_parser("data", help="generate, import, export and inspect datasets",
                              description="Offline experience datasets (docs/dataset-format.md).")
    sub = p.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 1)[1])

    g = sub.add_parser("generate", help="run a behaviour policy in an environment",
                       description="Generate a dataset by running a behaviour policy in ENV.")
    g.add_argument("--env", required=True, help="environment spec, e.g. FrozenLake-v1, Taxi-v3 "
                   "(pimrl list)")
    from pimrl import limits as L

    g.add_argument("--n", required=True, type=L.integer(0, L.MAX_TRANSITIONS),
                   help="number of transitions")
    g.add_argument("--seed", required=True, type=L.SEED, help="seed")
    from pimrl.data.generate import POLICIES, POLICY_DESCRIPTIONS

    g.add_argument("--policy", default=POLICIES[0], help="behaviour policy: " + "; ".join(
        f"{name}: {text}" for name, text in POLICY_DESCRIPTIONS.items()))
    g.add_argument("--q", help="Q-table .npy of shape (S, A) for epsilon-greedy")
    g.add_argument("--epsilon", type=L.PROBABILITY, help="exploration rate for epsilon-greedy")
    g.add_argument("--max-episode-steps", type=L.integer(0, L.MAX_EPISODE_STEPS), default=None,
                   help="episode limit (default: the environment's; 0: no limit)")
    g.add_argument("--out", required=True, help="output dataset file")
    g.set_defaults(func=_cmd_generate)

    i = sub.add_parser("import", help="import a SwiftRL text file (s a r s' per line) or a "
                       "Minari dataset",
                       description="Import a SwiftRL text dataset for ENV, or a local Minari "
                       "dataset (--minari: discrete observations and actions; its environment "
                       "is the one it names unless --env is given; docs/dataset-format.md).")
    i.add_argument("text", nargs="?", help="the text file")
    i.add_argument("--minari", metavar="PATH_OR_ID",
                   help="a Minari dataset folder, or the id of one under Minari's local root "
                   "(MINARI_DATASETS_PATH); needs pimrl[minari]")
    i.add_argument("--env", help="environment the data came from (required for text)")
    i.add_argument("--out", required=True, help="output dataset file")
    i.add_argument("--seed", type=L.SEED, default=0,
                   help="seed of the draws imputing unknown next actions (default 0)")
    i.set_defaults(func=_cmd_import)

    e = sub.add_parser("export", help="write a dataset as SwiftRL text (s a r s' per line) or "
                       "as a Minari dataset",
                       description="Write the transitions of a dataset as SwiftRL text, one "
                       "'s a r s'' line each (integer rewards as integers, others with 9 "
                       "significant digits), or with --minari NAME as a Minari dataset of that "
                       "id (episodes; under --out, default Minari's local root); written "
                       "atomically.")
    e.add_argument("file", help="dataset file")
    e.add_argument("--out", help="output text file (with --minari: the root folder of Minari "
                   "datasets, default MINARI_DATASETS_PATH or ~/.minari/datasets)")
    e.add_argument("--minari", metavar="NAME", help="write a Minari dataset with this id "
                   "(e.g. pimrl/taxi-random-v0); needs pimrl[minari]")
    e.set_defaults(func=_cmd_export)

    n = sub.add_parser("info", help="header fields and summary statistics of a dataset",
                       description="Print a dataset's header fields (environment, policy, seed, "
                       "sizes) and summary statistics (reward range, episode ends, state and "
                       "state-action coverage), after checking every record, and the "
                       "memory plan of training on it with the defaults (planned).")
    n.add_argument("file", help="dataset file")
    n.add_argument("--json", action="store_true", help="print one JSON object")
    n.add_argument("--no-validate", action="store_true",
                   help="skip the record content checks (header checks still run)")
    n.set_defaults(func=_cmd_info)
