"""``pimrl advise``: search PIM configurations by simulating them, print the Pareto front of
modelled time and energy to a quality target and a ``pimrl train`` command for the
recommended point (pimrl/advise.py says what is searched and how)."""
from __future__ import annotations

import json
import shlex
import sys

from pimrl.advise import (
    DEFAULT_AGGREGATORS, DEFAULT_DPUS, DEFAULT_EPOCHS, DEFAULT_EPOCHS_PER_ROUND, DEFAULT_MODES,
    DEFAULT_ROUNDS,
)

HOW = (
    "Searched: DPU counts (--dpus, capped by --max-dpus and the hardware) x tasklets (16 and "
    "the most that fit WRAM) x tasklet modes (rows, ring) x aggregators (mean and weighted with "
    "--epochs passes; sync:R and own:R for R in --rounds, R x --epochs-per-round passes) x "
    "--sampling. How: every candidate evaluated is simulated (PimTrainer, the greedy policy "
    "evaluated exactly after every round, as pimrl train does), so its modelled time and energy "
    "to the target are those pimrl train reports for the printed flags; each (aggregator, R, "
    "epochs) is its own candidate (round r of sync:R is not sync:r). Stage 1 runs every DPU "
    "count x aggregator x epochs at 16 tasklets, mode rows; an R-round run that first reaches "
    "the target at round r < R adds the r-round candidate (run, not assumed); stage 2 runs the "
    "other tasklet counts and modes only for the points of stage 1's Pareto front (a heuristic; "
    "--exhaustive runs the whole grid). A candidate is skipped, exactly, when the cost model's "
    "time and energy of pushing its records alone (a lower bound of any run on that many DPUs) "
    "are both matched by a point already found. Energy is pimrl train's "
    "energy_to_quality_modelled_j, except that for own:R the host's work between rounds, "
    "which pimrl train prices from a time measured on this machine, is left out (and "
    "reported apart): every figure the advice prints is deterministic.")


def _ints(text, name, lo=1):
    from pimrl.cli import UserError

    try:
        out = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{name} {text!r}: a comma-separated list of whole numbers") from None
    if not out or any(v < lo or v > 10**6 for v in out):
        raise UserError(f"{name} {text!r}: whole numbers from {lo} to 10^6, comma separated")
    return out


def register(subparsers) -> None:
    from pimrl import limits as L
    from pimrl.learners.variants import ALGOS, DTYPES, SAMPLINGS
    from pimrl.pim.hardware import PRESETS

    p = subparsers.add_parser(
        "advise", help="search PIM configurations (by simulating them) for the least modelled "
        "time or energy to a quality target",
        description="Which DPU count, tasklets, tasklet mode, aggregator and epochs reach a "
        "quality target with the least modelled time (or energy), for one dataset and learner. "
        + HOW + " Prints the Pareto front of modelled time and modelled energy to the target "
        "and a pimrl train command for the recommended point; the progress goes to stderr. "
        "When no searched configuration reaches the target: one line, exit status 2.")
    p.add_argument("data", nargs="?", metavar="DATA", help="dataset file (or --data, or --env)")
    p.add_argument("--data", dest="data_file", metavar="FILE", help="dataset file (as DATA)")
    p.add_argument("--env", metavar="ENV_ID", help="generate data for this environment")
    p.add_argument("--transitions", type=L.TRANSITIONS, default=1_000_000, metavar="N",
                   help="transitions to generate with --env")
    p.add_argument("--data-seed", type=L.SEED, default=0, help="seed of generated data")
    p.add_argument("--target", default="optimum",
                   help="optimum (exact evaluation within pimrl train's tolerance; pimrl train "
                   "reports its time as time_to_quality_modelled_s) or success=RATE (the first "
                   "round whose exact success rate is at least RATE; pimrl train --json lists "
                   "every round's modelled_s and success_rate)")
    p.add_argument("--objective", choices=("time", "energy"), default="time",
                   help="what the recommended point minimises (both are modelled)")
    p.add_argument("--algo", choices=ALGOS, default="q", help="learner (fixed)")
    p.add_argument("--dtype", choices=DTYPES, default="fp32", help="table type (fixed)")
    p.add_argument("--sampling", default="seq",
                   help=f"one of {', '.join(SAMPLINGS)}, a comma list to search, or 'search' "
                   "(all of them)")
    p.add_argument("--alpha", type=L.LEARNING_RATE, default=0.1, help="learning rate (fixed)")
    p.add_argument("--gamma", type=L.DISCOUNT, default=0.95, help="discount (fixed)")
    p.add_argument("--seed", type=L.SEED, default=0, help="seed of the learner's streams")
    p.add_argument("--hardware", choices=list(PRESETS), default="upmem-2556",
                   help="hardware preset (pimrl list)")
    p.add_argument("--max-dpus", type=L.DPU_COUNT, default=None,
                   help="largest DPU count searched (default: the hardware's functional DPUs)")
    p.add_argument("--dpus", default=",".join(map(str, DEFAULT_DPUS)),
                   help="DPU counts searched (comma list; those above --max-dpus dropped)")
    p.add_argument("--tasklets", default="16,max",
                   help="tasklet counts searched; 'max': the most that fit WRAM")
    p.add_argument("--tasklet-modes", default=",".join(DEFAULT_MODES), help="modes searched")
    p.add_argument("--aggregators", default=",".join(DEFAULT_AGGREGATORS),
                   help="families searched: mean, weighted, sync (sync:R), sync:weighted "
                   "(sync:R:weighted), own (own:R)")
    p.add_argument("--rounds", default=",".join(map(str, DEFAULT_ROUNDS)),
                   help="R searched for sync:R and own:R")
    p.add_argument("--epochs", default=",".join(map(str, DEFAULT_EPOCHS)),
                   help="passes searched for mean and weighted")
    p.add_argument("--epochs-per-round", default=",".join(map(str, DEFAULT_EPOCHS_PER_ROUND)),
                   help="passes a round searched for sync:R and own:R (epochs = R x this)")
    p.add_argument("--exhaustive", action="store_true",
                   help="run every combination (no stage heuristic; exact pruning only)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run_advise)


def _problem(args):
    import numpy as np

    from pimrl.advise import Problem, parse_target
    from pimrl.cli import UserError
    from pimrl.learners.params import LearnerParams
    from pimrl.pim.hardware import get_hardware

    try:
        target = parse_target(args.target)
        params = LearnerParams(algo=args.algo, dtype=args.dtype, alpha=args.alpha,
                               gamma=args.gamma, seed=args.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.data_file is not None:
        if args.data is not None:
            raise UserError("give the dataset once: DATA or --data FILE")
        args.data = args.data_file
    if (args.data is None) == (args.env is None):
        raise UserError("give either a dataset file or --env (to generate one), not both")
    hw = get_hardware(args.hardware, {})
    if args.data is not None:
        from pimrl.data import load_dataset

        ds = load_dataset(args.data)
        records, env = np.asarray(ds.records), ds.env()
        data_args = [args.data]
    else:
        from pimrl.data import generate_dataset
        from pimrl.envs import make

        try:
            env = make(args.env)
        except ValueError as exc:
            raise UserError(f"--env: {exc}") from None
        from pimrl.data.records import TRANSITION_DTYPE
        from pimrl.limits import check_memory

        # the records, and a DPU-side copy of them (as pimrl train checks)
        check_memory(3 * args.transitions * TRANSITION_DTYPE.itemsize,
                     f"--transitions {args.transitions:,}")
        records = generate_dataset(env, args.transitions, args.data_seed)
        data_args = ["--env", args.env, "--transitions", str(args.transitions),
                     "--data-seed", str(args.data_seed)]
    return Problem(records, env, params, hw, args.hardware, target, data_args)


def _bar(done, total, o, stream=None):
    stream = sys.stderr if stream is None else stream   # the current one, not import time's
    width = 30
    fill = int(width * done / max(total, 1))
    c = o.candidate
    text = (f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {c.dpus} DPUs "
            f"{c.tasklets}x{c.tasklet_mode} {c.aggregate} e{c.epochs}: {o.status}")
    stream.write(text[:110].ljust(110))
    stream.flush()


def run_advise(args) -> int:
    from pimrl.advise import aggregator_grid, recommend, search, train_command
    from pimrl.cli import UserError
    from pimrl.learners.variants import SAMPLINGS, TASKLET_MODES

    problem = _problem(args)
    hw = problem.hw
    cap = min(args.max_dpus or hw.n_dpus, hw.n_dpus, len(problem.records))
    dpus = list(dict.fromkeys(n for n in _ints(args.dpus, "--dpus") if n <= cap)) or [cap]
    tasklets = []
    for t in str(args.tasklets).split(","):
        t = t.strip()
        if t == "max":
            tasklets.append("max")
        elif t:
            tasklets += _ints(t, "--tasklets")
    modes = [m.strip() for m in args.tasklet_modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in TASKLET_MODES]
    samplings = (list(SAMPLINGS) if args.sampling == "search"
                 else [s.strip() for s in args.sampling.split(",") if s.strip()])
    bad += [s for s in samplings if s not in SAMPLINGS]
    over = [t for t in tasklets if t != "max" and t > hw.max_tasklets]
    if over:
        raise UserError(f"--tasklets {over[0]}: {hw.name} runs at most {hw.max_tasklets} "
                        "tasklets a DPU")
    if bad or not modes or not samplings or not tasklets:
        raise UserError(f"unknown or empty choice {', '.join(bad) or ''}; tasklet modes: "
                        f"{', '.join(TASKLET_MODES)}; samplings: {', '.join(SAMPLINGS)}")
    try:
        grid = aggregator_grid([a.strip() for a in args.aggregators.split(",") if a.strip()],
                               _ints(args.rounds, "--rounds"), _ints(args.epochs, "--epochs"),
                               _ints(args.epochs_per_round, "--epochs-per-round"))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    progress = None if args.no_progress else _bar
    res = search(problem, dpus, tasklets, modes, samplings, grid, args.exhaustive, progress)
    if progress:
        sys.stderr.write("\n")
    outcomes, front = res["outcomes"], res["front"]
    ran = sum(o.status in ("reached", "not reached") for o in outcomes)
    best = recommend(front, args.objective)
    if best is None:            # one line, exit status 2 (pimrl.cli's errors)
        raise UserError(f"no searched configuration reaches {problem.target.text} "
                        f"({len(outcomes)} searched, {ran} simulated); widen the search (more "
                        f"--rounds, fewer --dpus, own in --aggregators) or ask less (--target "
                        f"success=RATE)")
    argv = train_command(problem, best.candidate)
    command = "pimrl " + " ".join(shlex.quote(a) for a in argv)

    def point(o):
        d = o.as_dict()
        d["command"] = "pimrl " + " ".join(shlex.quote(a)
                                           for a in train_command(problem, o.candidate))
        return d

    rec = point(best)
    out = {"recommended": rec, "front": [point(o) for o in front], "searched": len(outcomes),
           "simulated": ran, "pruned": sum(o.status == "pruned" for o in outcomes),
           "refused": sum(o.status == "refused" for o in outcomes),
           "target": problem.target.text, "objective": args.objective,
           "elapsed_measured_s": res["elapsed_s"],
           "bound_violations": res["bound_violations"],
           "candidates": [o.as_dict() for o in outcomes]}
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    print(f"target: {problem.target.describe()}")
    print(f"searched {len(outcomes)} configurations: {ran} simulated, {out['pruned']} pruned by "
          f"the cost model's lower bound, {out['refused']} refused by the simulator "
          f"(does not fit); {res['elapsed_s']:.1f} s measured")
    print("\nPareto front (time and energy to the target, both modelled):")
    print(f"  {'DPUs':>5} {'tasklets':>8} {'mode':<5} {'aggregate':<12} {'epochs':>6} "
          f"{'round':>5} {'time ms (modelled)':>19} {'energy J (modelled)':>20}")
    for o in front:
        c = o.candidate
        mark = "  <- recommended" if o is best else ""
        print(f"  {c.dpus:>5} {c.tasklets:>8} {c.tasklet_mode:<5} {c.aggregate:<12} "
              f"{c.epochs:>6} {o.round:>5} {o.time_s * 1e3:>19.3f} {o.energy_j:>20.4f}{mark}")
    print(f"\nrecommended (least modelled {args.objective}): {best.time_s * 1e3:.3f} ms and "
          f"{best.energy_j:.4f} J to the target, modelled (round {best.round})")
    print(command)
    return 0
