"""``pimrl train --online``: environments stepped on the (simulated) DPUs, no dataset.

Shared agents (default): every DPU steps ``--env`` with its own lanes and the tables are
aggregated after each round of ``--aggregate`` (``mean`` | ``weighted`` | ``sync:R`` |
``sync:R:weighted``); the aggregate is evaluated exactly after every round, and the time to
quality is the modelled time of the first round whose greedy policy is optimal within
``--tolerance``. Independent agents (``--agents independent``): every DPU is its own agent,
on its own map (``--map-per-dpu``: DPU d steps ``ENV`` with ``seed=d``) and/or with its own
hyperparameters (``--grid``); each agent is evaluated exactly against its own environment's
optimum and the output gives the distribution and the best grid point.
"""
from __future__ import annotations

import itertools
import json

import numpy as np

from pimrl.learners.variants import ALGOS, DTYPES
from pimrl.online.params import MAX_DECAY_STEPS


def add_arguments(p) -> None:
    """The online options of ``pimrl train`` (the learner options are shared)."""
    from pimrl import limits as L

    g = p.add_argument_group("online (with --online; options of offline training are refused)")
    g.add_argument("--online", action="store_true",
                   help="step --env on the DPUs (no dataset): rounds of --aggregate, exact "
                        "evaluation after each round, time to quality")
    g.add_argument("--steps", type=L.STEPS, default=None, metavar="K",
                   help="environment steps per DPU in all (split over its tasklets and rounds)")
    g.add_argument("--agents", choices=("shared", "independent"), default="shared",
                   help="shared: one aggregated agent; independent: one agent per DPU")
    g.add_argument("--map-per-dpu", action="store_true",
                   help="independent agents: DPU d steps ENV with seed=d (e.g. "
                        "--env FrozenLake-v1:size=8: one seeded 8x8 lake per DPU)")
    g.add_argument("--grid", default=None, metavar="SPEC",
                   help="independent agents: a hyperparameter grid, one point per DPU (at most "
                        "the hardware's DPUs), e.g. 'alpha=0.05,0.1,0.2;epsilon=0.1,0.3;seed=0-3' "
                        "(--dpus defaults to its size)")
    g.add_argument("--epsilon-end", type=L.PROBABILITY, default=None,
                   help="decay epsilon linearly from --epsilon to this (default: constant)")
    g.add_argument("--decay-steps", type=L.integer(0, MAX_DECAY_STEPS), default=0,
                   help="lane steps of the linear epsilon decay")
    g.add_argument("--tolerance", type=L.PROBABILITY, default=1e-6,
                   help="quality target: success rate and mean return within this (relative "
                        "for returns) of the optimum's (default 1e-6: optimal)")
    g.add_argument("--cpu-baseline", action="store_true",
                   help="also run the same online work on this machine's cores (measured)")
    g.add_argument("--force-mram", action="store_true",
                   help="keep the Q-table and environment table in MRAM even when they fit WRAM")


GRID_KEYS = ("alpha", "epsilon", "seed")


def _grid_values(key: str, text: str) -> list:
    """One axis of --grid: its values, a seed range ``LO-HI`` kept as a ``range`` (never
    expanded here: a grid is sized before it is built)."""
    from pimrl import limits as L

    name = f"--grid {key}"
    parser = {"alpha": L.LEARNING_RATE, "epsilon": L.PROBABILITY, "seed": L.SEED}[key]
    vals = []
    for v in (x.strip() for x in text.split(",")):
        lo, dash, hi = v.partition("-")
        if key == "seed" and dash and lo.strip():           # LO-HI; "-1" is a value
            lo, hi = L.SEED.parse(lo, f"{name} range {v!r}"), L.SEED.parse(hi, f"{name} range {v!r}")
            if hi < lo:
                raise ValueError(f"{name}: seed range {v!r} is empty")
            vals.append(range(lo, hi + 1))
        else:
            vals.append(parser.parse(v, name))
    return vals


def parse_grid(spec: str, max_points: int | None = None, allowed: str | None = None) -> list:
    """``'alpha=0.05,0.1;epsilon=0.1;seed=0-3'`` -> list of dicts (cartesian product, in the
    order written, the last key varying fastest). Its size is computed from the axes first
    and refused above ``max_points`` (default :data:`pimrl.limits.MAX_GRID_POINTS`)."""
    from pimrl import limits as L

    axes = []
    for part in (x.strip() for x in spec.split(";")):
        if not part:
            continue
        key, sep, values = part.partition("=")
        key = key.strip()
        if not sep or key not in GRID_KEYS:
            raise ValueError(f"--grid: {part!r} must be KEY=VALUES with KEY in {', '.join(GRID_KEYS)}")
        axes.append((key, _grid_values(key, values)))
    if not axes:
        raise ValueError("--grid: empty")
    keys = [k for k, _ in axes]
    if len(set(keys)) != len(keys):
        raise ValueError(f"--grid: a key appears twice in {spec!r}")
    limit = L.MAX_GRID_POINTS if max_points is None else max_points
    L.check_product((sum(len(v) if isinstance(v, range) else 1 for v in vals) for _, vals in axes),
                    "--grid", limit, "points (one per DPU)", allowed)
    flat = [[x for v in vals for x in (v if isinstance(v, range) else (v,))] for _, vals in axes]
    return [dict(zip(keys, combo)) for combo in itertools.product(*flat)]


def quality(ev: dict, tol: float) -> bool:
    """Whether an evaluation is within ``tol`` of its optimum (success rate absolute, mean
    return relative to max(1, |optimal return|)); a better policy also counts."""
    return (ev["success_rate"] >= ev["optimal_success_rate"] - tol
            and ev["mean_return"] >= ev["optimal_mean_return"] - tol * max(1.0, abs(ev["optimal_mean_return"])))


def suboptimal_states(env, q, q_star, tol: float = 1e-6) -> int:
    """How many states the greedy policy of ``q`` can reach from the start (episodes not yet
    terminated) where its action is not optimal under ``q_star`` (value iteration's Q*, within
    ``tol`` relative): 0 means the policy is optimal wherever it goes."""
    pi = np.argmax(q, axis=1)
    s_all = np.arange(env.n_states)
    v_star = q_star.max(axis=1)
    bad = q_star[s_all, pi] < v_star - tol * np.maximum(1.0, np.abs(v_star))
    go = (~env.terminated[s_all, pi]) & (env.prob[s_all, pi] > 0)        # (S, K)
    reach = env.initial_dist > 0
    while True:
        src = np.flatnonzero(reach)
        nxt = env.next_state[s_all, pi][src][go[src]]
        grown = reach.copy()
        grown[nxt] = True
        if np.array_equal(grown, reach):
            break
        reach = grown
    return int((bad & reach).sum())


def _params(args, **override):
    from pimrl.online.params import OnlineParams

    kw = dict(algo=args.algo, dtype=args.dtype, alpha=args.alpha, gamma=args.gamma,
              epsilon=args.epsilon, epsilon_end=args.epsilon_end, decay_steps=args.decay_steps,
              seed=args.seed, frac_bits=args.frac_bits)
    kw.update(override)
    return OnlineParams(**kw)


def _check_sizes(args, hw, spec, n) -> None:
    """The tables against a DPU's memories and the run against this machine's, from the
    environment's shape alone: before any table is built (a 1024 x 1024 lake takes a while)."""
    from pimrl.cli import UserError
    from pimrl.envs.registry import table_shape
    from pimrl.limits import check_memory
    from pimrl.online.program import online_layout

    try:
        shape = table_shape(args.env)
    except ValueError as exc:
        raise UserError(f"--env: {exc}") from None
    if args.tasklets > hw.max_tasklets:
        raise UserError(f"--tasklets {args.tasklets}: a DPU of {hw.name} runs at most "
                        f"{hw.max_tasklets}")
    if shape is None:                        # a Gymnasium id: known once made
        return
    S, A, K = shape
    try:
        layout = online_layout(S, A, K, 1, args.tasklets, hw, count_visits=spec.needs_visits,
                               force_mram=args.force_mram)
        # per table: the env's arrays, its DPU records and their copies (about 64 B an
        # outcome); per DPU: its WRAM and what its MRAM holds
        tables = n if args.map_per_dpu else 1
        check_memory(tables * S * A * K * 64 + n * (hw.wram_bytes + layout.mram_used),
                     f"--online on {n} DPUs with {args.env}")
    except ValueError as exc:
        raise UserError(f"--env {args.env}: {exc}") from None


def checkpoint_config(args, params, n: int) -> dict:
    """The settings an online checkpoint is bound to: every option that affects the results
    (by its flag) and pimrl's version."""
    from pimrl import __version__

    plist = params if isinstance(params, list) else [params]
    return {"--online": True, "params": [p.as_dict() for p in plist], "--dpus": n,
            "--tasklets": args.tasklets, "--aggregate": args.aggregate,
            "--agents": args.agents, "--env": args.env, "--steps": args.steps,
            "--map-per-dpu": bool(args.map_per_dpu), "--grid": args.grid,
            "--hardware": args.hardware, "--hw": list(args.hw), "--kernel": args.kernel,
            "--force-mram": bool(args.force_mram), "--no-eval": bool(args.no_eval),
            "--tolerance": args.tolerance, "pimrl version": __version__}


def run_online(args, holder: dict | None = None) -> int:
    from pimrl.cli import UserError
    from pimrl.envs import make
    from pimrl.envs.evaluation import evaluate_against_optimum
    from pimrl.online.trainer import OnlineTrainer
    from pimrl.pim.hardware import get_hardware, parse_overrides

    if args.data is not None or args.env is None:
        raise UserError("--online steps an environment: give --env, not a dataset file")
    if args.steps is None:
        raise UserError("--online needs --steps K (environment steps per DPU)")
    if args.algo not in ALGOS or args.dtype not in DTYPES:
        raise UserError(f"--algo/--dtype: {args.algo}/{args.dtype}")
    if args.tasklet_mode not in (None, "ring"):
        raise UserError(f"--tasklet-mode {args.tasklet_mode}: online learning runs its tasklets "
                        "in the ring order (docs/design.md, 'Online learning'); the tasklet "
                        "modes apply to offline training")
    if args.sampling != "seq" or args.epochs != 1 or args.next_action != "logged":
        raise UserError("--sampling, --epochs and --next-action describe offline datasets; "
                        "online SARSA always takes the next action it chose")
    from pimrl.cli.train import given_options

    ignored = given_options(args, args.offline_only)
    if ignored:
        # said, not silently ignored: online runs on this process's simulated DPUs
        raise UserError(f"{', '.join(ignored)} appl{'y' if len(ignored) > 1 else 'ies'} to "
                        "offline training; --online steps --env on this process's simulated "
                        "DPUs")
    independent = args.agents == "independent"
    if (args.map_per_dpu or args.grid) and not independent:
        raise UserError("--map-per-dpu and --grid need --agents independent")
    from pimrl.limits import DPU_COUNT
    from pimrl.online.trainer import online_aggregate

    try:
        hw = get_hardware(args.hardware, parse_overrides(args.hw))
        spec = online_aggregate(args.aggregate, args.agents)
        dpus = str(args.dpus).split(",")
        if len(dpus) != 1:
            raise ValueError("--online takes one --dpus count")
        n = DPU_COUNT.parse(dpus[0].strip(), "--dpus")
        # one point per DPU: a grid is sized (not built) against the machine first
        grid = (parse_grid(args.grid, hw.n_dpus, f"the {hw.n_dpus:,} DPUs of {hw.name}")
                if args.grid else None)
        if grid is not None and args.dpus == args.pim_defaults["dpus"]:
            n = len(grid)
        if grid is not None and len(grid) != n:
            raise ValueError(f"--grid has {len(grid)} points for {n} DPUs: one point per DPU")
        if n > hw.n_dpus:
            raise ValueError(f"--dpus {n}: {hw.name} has {hw.n_dpus} functional DPUs")
        if args.steps < spec.rounds:
            raise ValueError(f"--aggregate {args.aggregate}: {spec.rounds} rounds need at least "
                             f"as many steps per DPU; got --steps {args.steps}")
        base = _params(args)
        params = [_params(args, **pt) for pt in grid] if grid else base
    except ValueError as exc:
        raise UserError(str(exc)) from None
    _check_sizes(args, hw, spec, n)
    try:
        if args.map_per_dpu:
            envs = [make(args.env, seed=d) for d in range(n)]
        else:
            envs = [make(args.env)]
    except ValueError as exc:
        raise UserError(f"--env: {exc}") from None
    env0 = envs[0]
    out = {"mode": "online", "agents": args.agents, "env_id": env0.env_id if not args.map_per_dpu
           else f"{args.env} with seed=d on DPU d", "dpus": n, "tasklets": args.tasklets,
           "steps_per_dpu": args.steps, "aggregate": args.aggregate, "kernel": args.kernel,
           "hardware": "UPMEM (real DPUs)" if args.device != "simulator" else hw.name,
           "device": args.device, "params": base.as_dict(), "tolerance": args.tolerance}
    evals = []
    q_star = None
    if not independent and not args.no_eval:
        from pimrl.envs.planning import value_iteration

        q_star, _ = value_iteration(env0, base.gamma)

    def on_round(r, q, ledger):
        if independent or args.no_eval:
            return {}
        ev = evaluate_against_optimum(env0, q, base.gamma)
        evals.append(ev)
        return {"success_rate": ev["success_rate"], "mean_return": ev["mean_return"],
                "optimal": quality(ev, args.tolerance),
                "suboptimal_states": suboptimal_states(env0, q, q_star)}

    from pimrl.cli.checkpoints import make_checkpoint
    from pimrl.cli.train import check_save_destinations, save_learned

    check_save_destinations(args)
    checkpoint = make_checkpoint(args, params, [n], checkpoint_config(args, params, n))
    if checkpoint is not None:
        from pimrl.io import ensure_folder

        ensure_folder(checkpoint.folder, "--checkpoint")
        if holder is not None:
            holder["ck"] = checkpoint
            checkpoint.interrupted = holder.get("early")   # a signal before now: first boundary
    if args.device != "simulator":
        from pimrl.devices import DeviceError, dpu_package

        try:
            dpu_package(args.device)      # the SDK's package, or a clear error, before any build
        except DeviceError as exc:
            raise UserError(str(exc)) from None
        if args.kernel == args.pim_defaults["kernel"]:
            args.kernel = "c"              # real DPUs run the C kernel
        if args.kernel != "c" or args.executor != "local" or checkpoint is not None:
            raise UserError(f"--device {args.device}: runs kernels/online.c (--kernel c) on this "
                            "machine's DPUs (--executor local, no --checkpoint)")
        out["kernel"] = args.kernel
    if args.executor != "local" and args.kernel != "numba":     # before any worker starts
        raise UserError(f"--kernel {args.kernel}: a DPU set on Dask workers runs the numba "
                        "kernel only")
    from pimrl.pim.distributed import placement_for

    with placement_for(args.executor, args.workers, args.threads_per_worker) as placement:
        trainer = OnlineTrainer(params, n_dpus=n, tasklets=args.tasklets,
                                aggregate=args.aggregate, agents=args.agents, hardware=hw,
                                kernel=args.kernel, force_mram=args.force_mram,
                                checkpoint=checkpoint, placement=placement,
                                device=args.device, on_round=on_round)
        trainer.fit(envs, args.steps)
    out["executor"] = args.executor
    if hasattr(trainer, "worker_transfers_"):
        out["worker_transfers"] = trainer.worker_transfers_
    if checkpoint is not None and not evals and not independent and not args.no_eval:
        evals.append(evaluate_against_optimum(env0, trainer.q_, base.gamma))  # resumed at its end
    L = trainer.layout_
    out.update(trainer.timings_.as_dict())
    out["layout"] = {"q_table": "WRAM" if L.q_in_wram else "MRAM",
                     "env_table": "WRAM" if L.env_in_wram else "MRAM"}
    # simulated DPUs: modelled times; real ones (--device upmem): the host's clock
    kind = "measured" if args.device != "simulator" else "modelled"
    out["time_kind"] = kind
    out["env_steps"] = trainer.env_steps_
    out[f"env_steps_per_{kind}_s"] = trainer.env_steps_ / out[f"{kind}_total_s"]
    out[f"kernel_env_steps_per_{kind}_s"] = trainer.env_steps_ / out[f"{kind}_s"]["dpu_kernel"]
    c = trainer.counters_
    from pimrl.online.kernels import OC

    out["episodes"] = int(c[:, OC["episodes"]].sum())
    out["saturations"] = trainer.saturations_
    out["rounds"] = trainer.rounds_
    if not independent:
        reached = [row for row in trainer.rounds_ if row.get("optimal")]
        out[f"time_to_quality_{kind}_s"] = reached[0][f"{kind}_s"] if reached else None
        out["steps_to_quality_per_dpu"] = reached[0]["steps_per_dpu"] if reached else None
        # Stricter: the first round from which the policy is Q*-greedy wherever it goes.
        strict = None
        for row in reversed(trainer.rounds_):
            if row.get("suboptimal_states", 1) != 0:
                break
            strict = row
        out[f"time_to_optimal_policy_{kind}_s"] = strict[f"{kind}_s"] if strict else None
        if evals:
            out["evaluation"] = evals[-1]
    else:
        out["agents_result"] = independent_summary(envs, trainer.q_, params, base.gamma,
                                                   args.tolerance, grid)
    if args.cpu_baseline:
        from pimrl.online.cpu import cpu_online

        if independent:
            raise UserError("--cpu-baseline runs shared agents only")
        res = cpu_online(env0, base, n, args.tasklets, args.steps, args.aggregate)
        same = bool(np.array_equal(res.raw.view(np.uint32), trainer.raw_.view(np.uint32)))
        out["cpu_baseline"] = {"threads": res.threads, "train_measured_s": res.train_measured_s,
                               "aggregate_measured_s": res.aggregate_measured_s,
                               "env_steps_per_measured_s": res.env_steps_per_s_measured,
                               "tables_equal_dpus": same}
    save_learned(args, trainer.q_, env0, base, out)
    if args.json:
        print(json.dumps(out, sort_keys=True, default=float))
    else:
        print_online(out)
    return 0


def independent_summary(envs, q, params, gamma, tol, grid) -> dict:
    """Each agent against its own environment's optimum: the distribution of the success
    ratio (agent / optimum), how many are optimal, and per grid point the mean over seeds."""
    from pimrl.envs.evaluation import evaluate_against_optimum

    n = q.shape[0]
    rows = []
    for d in range(n):
        env = envs[d] if len(envs) > 1 else envs[0]
        g = params[d].gamma if isinstance(params, list) else gamma
        ev = evaluate_against_optimum(env, q[d], g)
        rows.append((ev["success_rate"], ev["optimal_success_rate"], ev["mean_return"],
                     ev["optimal_mean_return"], quality(ev, tol)))
    a = np.array([r[:4] for r in rows], dtype=np.float64)
    ratio = np.where(a[:, 1] > 0, a[:, 0] / np.where(a[:, 1] > 0, a[:, 1], 1.0), 1.0)
    qs = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
    out = {"agents": n, "optimal_agents": int(sum(r[4] for r in rows)),
           "success_ratio_quantiles": {f"{int(p * 100)}%": float(np.quantile(ratio, p)) for p in qs},
           "success_rate_mean": float(a[:, 0].mean()),
           "optimal_success_rate_mean": float(a[:, 1].mean()),
           "success_ratio_histogram": np.histogram(np.clip(ratio, 0, 1), bins=10, range=(0, 1))[0].tolist()}
    if grid is not None:
        points = {}
        for d, pt in enumerate(grid):
            key = tuple((k, v) for k, v in pt.items() if k != "seed")
            points.setdefault(key, []).append(d)
        table = []
        for key, ds in points.items():
            table.append({**dict(key), "agents": len(ds), "success_ratio_mean": float(ratio[ds].mean()),
                          "optimal_agents": int(sum(rows[d][4] for d in ds))})
        table.sort(key=lambda r: -r["success_ratio_mean"])
        out["grid"] = table
        out["best_point"] = table[0]
    return out


def print_online(out: dict) -> None:
    p = out["params"]
    eps = f"epsilon={p['epsilon']}" + (f"->{p['epsilon_end']} over {p['decay_steps']} steps"
                                       if p["epsilon_end"] is not None else "")
    print(f"online    {out['env_id']}, {out['agents']} agents, {out['dpus']} DPUs x "
          f"{out['tasklets']} tasklets on {out['hardware']}, {out['kernel']} kernel")
    print(f"learner   {p['algo']} {p['dtype']} alpha={p['alpha']} gamma={p['gamma']} {eps} "
          f"seed={p['seed']}; {out['steps_per_dpu']} steps per DPU, aggregate {out['aggregate']}")
    print(f"tables    Q-table in {out['layout']['q_table']}, environment table in "
          f"{out['layout']['env_table']}")
    kind = out.get("time_kind", "modelled")
    m = out[f"{kind}_s"]
    print("  time category          ms   kind")
    for key, label in (("cpu_dpu", "CPU-DPU"), ("dpu_kernel", "DPU kernel"),
                       ("inter_dpu", "Inter-DPU"), ("dpu_cpu", "DPU-CPU")):
        print(f"  {label:<14}{m.get(key, 0.0) * 1e3:10.3f}   {kind}")
    print(f"  {'total':<14}{out[f'{kind}_total_s'] * 1e3:10.3f}   {kind}")
    if "simulation_wall" in out["measured_s"]:
        print(f"  {'simulation':<14}{out['measured_s']['simulation_wall'] * 1e3:10.3f}   "
              "measured (simulator wall clock)")
    if "worker_transfers" in out:
        w = out["worker_transfers"]
        print(f"  {'worker traffic':<14}{w['transfer_measured_s'] * 1e3:10.3f}   measured: "
              f"{(w['to_workers_bytes'] + w['from_workers_bytes']) / 1e6:.1f} MB between this "
              f"process and {len(w['workers'])} Dask workers (not a PIM time; DPUs per worker: "
              f"{', '.join(map(str, w['dpus_per_worker']))})")
    print(f"throughput {out['env_steps']} environment steps, {out['episodes']} episodes ended: "
          f"{out[f'env_steps_per_{kind}_s'] / 1e6:.1f} M steps per {kind} second "
          f"(kernel only {out[f'kernel_env_steps_per_{kind}_s'] / 1e6:.1f} M)")
    if "cpu_baseline" in out:
        c = out["cpu_baseline"]
        print(f"CPU baseline ({c['threads']} threads, same work): "
              f"{c['env_steps_per_measured_s'] / 1e6:.1f} M steps per measured second; tables "
              f"{'equal' if c['tables_equal_dpus'] else 'DIFFER from'} the DPUs' bit for bit")
    if p["dtype"] == "int32":
        print(f"fixed-point saturations: {out['saturations']}")
    if out["agents"] == "shared":
        print(f"\nround  steps/DPU   {kind:>8} ms   success   mean return   >= optimum   "
              "non-Q*-greedy reachable states")
        for r in out["rounds"]:
            if "success_rate" in r:
                print(f"{r['round']:5d} {r['steps_per_dpu']:10d} {r[f'{kind}_s'] * 1e3:13.3f} "
                      f"{r['success_rate']:9.4f} {r['mean_return']:13.4f}   "
                      f"{'yes' if r['optimal'] else 'no':>10}   {r['suboptimal_states']:6d}")
        if "evaluation" in out:
            e = out["evaluation"]
            print(f"optimum: success {e['optimal_success_rate']:.4f}, mean return "
                  f"{e['optimal_mean_return']:.4f} (exact, horizon {e['horizon']})")
            t = out[f"time_to_quality_{kind}_s"]
            print("time to quality: " + (f"{t * 1e3:.3f} ms {kind} "
                                         f"({out['steps_to_quality_per_dpu']} steps per DPU)"
                                         if t is not None else "not reached"))
            t = out[f"time_to_optimal_policy_{kind}_s"]
            print("Q*-greedy wherever it goes from then on: " + (f"{t * 1e3:.3f} ms {kind}"
                                                                 if t is not None else "not reached"))
    else:
        a = out["agents_result"]
        print(f"\n{a['agents']} independent agents, each against its own optimum (exact): "
              f"{a['optimal_agents']} optimal")
        print("  success ratio (agent / optimum) quantiles: " + "  ".join(
            f"{k} {v:.3f}" for k, v in a["success_ratio_quantiles"].items()))
        print(f"  histogram over [0, 1] in tenths: {a['success_ratio_histogram']}")
        if "best_point" in a:
            print("  grid (mean success ratio over seeds), best first:")
            for row in a["grid"][:10]:
                keys = "  ".join(f"{k}={row[k]}" for k in row if k not in ("agents", "success_ratio_mean", "optimal_agents"))
                print(f"    {keys:<30} {row['success_ratio_mean']:.4f}  ({row['optimal_agents']}/{row['agents']} optimal)")
