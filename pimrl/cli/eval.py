"""``pimrl eval``: the greedy policy of a saved Q-table beside the optimum."""
from __future__ import annotations

import argparse
import json
import os

import numpy as np


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate the greedy policy of a Q-table (.npy) against the optimum",
        description="Evaluate the greedy policy (lowest action among ties) of a Q-table saved "
        "as a (states, actions) .npy array, beside the greedy policy of value iteration's Q* "
        "with the same gamma. Exact (from the tables, over the episode limit) unless "
        "--rollouts is given. For a Gymnasium environment (--env gym:ID) --rollouts runs the "
        "policy in the real Gymnasium env instead, beside the exact evaluation.",
    )
    p.add_argument("--q", required=True, metavar="PATH",
                   help="Q-table (.npy, shape (S, A)) or a policy file (.npz, pimrl train "
                   "--save-policy)")
    p.add_argument("--env", required=True, metavar="ENV_ID",
                   help="environment spec, e.g. FrozenLake-v1 or FrozenLake-v1:size=32,seed=7 "
                   "(pimrl list)")
    from pimrl import limits as L

    p.add_argument("--gamma", type=L.DISCOUNT, default=0.95,
                   help="discount of the value iteration giving the optimum (default 0.95)")
    p.add_argument("--rollouts", type=L.integer(2, L.MAX_ROLLOUTS), default=None, metavar="N",
                   help="estimate by N seeded rollouts instead of exactly")
    p.add_argument("--seed", type=L.SEED, default=0, help="seed of the rollouts (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_eval)


def load_q(path: str, env) -> np.ndarray:
    """Load and validate a Q-table for ``env``; raises ``UserError`` naming the file."""
    from pimrl.cli import UserError

    from pimrl.io import check_regular_input

    if os.path.lexists(path):
        check_regular_input(path)     # a FIFO would block the read forever
    if str(path).endswith(".npz"):
        from pimrl.policy import load_policy

        try:
            q = np.array(load_policy(path).q)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    else:
        q = None
    try:
        if q is None:
            q = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, ValueError, EOFError) as exc:      # EOFError: an empty file
        why = ("it holds Python objects, which pimrl never loads" if "pickle" in str(exc)
               else "the file is empty" if isinstance(exc, EOFError) else str(exc))
        raise UserError(f"{path}: not a readable .npy array ({why})") from None
    if not isinstance(q, np.ndarray) or not (np.issubdtype(q.dtype, np.floating)
                                             or np.issubdtype(q.dtype, np.integer)):
        raise UserError(f"{path}: expected a numeric array, got dtype {getattr(q, 'dtype', '?')}")
    expected = (env.n_states, env.n_actions)
    if q.shape != expected:
        raise UserError(f"{path}: Q-table has shape {q.shape}, expected {expected} "
                        f"(states, actions) for {env.env_id}")
    q = q.astype(np.float64)
    bad = np.argwhere(~np.isfinite(q))
    if len(bad):
        first = tuple(int(i) for i in bad[0])
        raise UserError(f"{path}: Q-table has {len(bad)} non-finite entries (NaN or infinite), "
                        f"the first ({q[first]}) at {first}: state {first[0]}, action {first[1]}")
    return q


def run_eval(args: argparse.Namespace) -> int:
    from pimrl.cli import UserError
    from pimrl.envs import evaluate_against_optimum, make

    try:
        env = make(args.env)
    except ValueError as exc:
        raise UserError(f"--env: {exc}") from None
    if not 0.0 <= args.gamma < 1.0:
        raise UserError(f"--gamma must be in [0, 1), got {args.gamma}")
    if args.rollouts is not None and args.rollouts < 2:
        raise UserError(f"--rollouts must be >= 2, got {args.rollouts}")
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")
    q = load_q(args.q, env)
    from pimrl.envs.gymnasium_env import is_gym_id, rollouts_in_gymnasium

    in_gym = is_gym_id(env.env_id) and args.rollouts is not None
    res = evaluate_against_optimum(env, q, args.gamma, seed=args.seed,
                                   n_rollouts=None if in_gym else args.rollouts)
    res["q"] = args.q
    if in_gym:
        from pimrl.policy import GreedyPolicy

        res["gymnasium"] = rollouts_in_gymnasium(env.env_id, GreedyPolicy(q), args.rollouts,
                                                 args.seed, env.max_episode_steps, env.goal)
    if args.json:
        print(json.dumps(res, sort_keys=True))
        return 0
    if args.rollouts is None or in_gym:
        how = f"computed exactly from the tables, horizon {res['horizon']} steps"
        fmt = lambda x, se: f"{x:12.4f}"  # noqa: E731
    else:
        how = (f"estimated by {args.rollouts} seeded rollouts (seed {args.seed}, horizon "
               f"{res['horizon']} steps), +- one standard error")
        fmt = lambda x, se: f"{x:9.4f} +- {se:.4f}"  # noqa: E731
    se = lambda k: res.get(k + "_se")  # noqa: E731
    rows = [("greedy policy of Q", res["success_rate"], se("success_rate"),
             res["mean_return"], se("mean_return")),
            (f"optimum (VI, gamma {args.gamma:g})", res["optimal_success_rate"],
             se("optimal_success_rate"), res["optimal_mean_return"], se("optimal_mean_return"))]
    width = max(len(r[0]) for r in rows)
    cells = [[fmt(r[1], r[2]), fmt(r[3], r[4])] for r in rows]
    cw = max(len("success rate"), max(len(c[0]) for c in cells))
    rw = max(len("mean return"), max(len(c[1]) for c in cells))
    print(f"{env.env_id}: {args.q} ({how})")
    print(f"{'':{width}}  {'success rate':>{cw}}  {'mean return':>{rw}}")
    for r, c in zip(rows, cells):
        print(f"{r[0]:{width}}  {c[0]:>{cw}}  {c[1]:>{rw}}")
    if in_gym:
        g = res["gymnasium"]
        print(f"greedy policy of Q in Gymnasium: {g['n_episodes']} episodes (reset seeds "
              f"{g['seed']}..{g['seed'] + g['n_episodes'] - 1}, at most {g['horizon']} steps): "
              f"success rate {g['success_rate']:.4f} +- {g['success_rate_ci95']:.4f}, mean return "
              f"{g['mean_return']:.4f} +- {g['mean_return_ci95']:.4f} (95 % confidence intervals)")
    return 0
