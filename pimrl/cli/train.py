"""``pimrl train``: learn a Q-table with the reference learner or on simulated DPUs."""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from pimrl.learners.params import LearnerParams
from pimrl.learners.variants import (
    ALGOS, DEFAULT_TASKLET_MODE, DTYPES, NEXT_ACTIONS, SAMPLINGS, TASKLET_MODE, TASKLET_MODES,
)

from pimrl.cli.checkpoints import checkpoint_every, make_checkpoint
from pimrl.cli.train_report import print_report, scaling_table


def _block_bytes(text: str) -> int:
    """--block-bytes: a DMA block, 16 to 2,048 B in whole 16-byte records (refused by the
    parser, before any DPU is simulated)."""
    from pimrl import limits as L

    value = L.integer(16, 2048)(text)
    if value % 16:
        raise argparse.ArgumentTypeError(f"DMA block of {value} B: must be a multiple of 16 "
                                         "between 16 and 2048")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train tabular Q-learning / SARSA (reference learner or simulated PIM)",
        description="Learn a Q-table from an offline dataset, then evaluate its greedy policy "
        "against the optimum. The data is a dataset file, or generated on the fly with --env "
        "and --transitions (uniformly random behaviour policy). With --backend pim the dataset "
        "is partitioned over simulated DPUs, one Q-table per DPU, aggregated on the host; the "
        "printed times are modelled by pimrl's cost model or measured on this machine, and "
        "say which. Several --dpus values (comma separated) give a strong-scaling table.",
    )
    p.add_argument("data", nargs="?", metavar="DATA", help="dataset file (pimrl data generate)")
    p.add_argument("--env", metavar="ENV_ID", help="generate data for this environment instead "
                   "(pimrl list: environments)")
    from pimrl import limits as L

    p.add_argument("--transitions", type=L.TRANSITIONS, default=1_000_000, metavar="N",
                   help="transitions to generate with --env (default 1,000,000)")
    p.add_argument("--data-seed", type=L.SEED, default=0, help="seed of generated data (default 0)")
    from pimrl.backends import BACKENDS

    p.add_argument("--backend", choices=list(BACKENDS), default="reference",
                   help="; ".join(f"{name}: {text}" for name, text in BACKENDS.describe()))
    # Defaults come from LearnerParams and PimTrainer, choices from their registries.
    from pimrl.cli.catalogue import describe_choices, learner_defaults, trainer_defaults
    from pimrl.learners.aggregate import AGGREGATORS
    from pimrl.pim.hardware import PRESETS
    from pimrl.swiftrl.trainer import KERNELS

    d, t = learner_defaults(), trainer_defaults()
    p.set_defaults(**d)              # LearnerParams' field names are the options' names
    g = p.add_argument_group("learner")
    g.add_argument("--algo", choices=ALGOS, help=describe_choices(ALGOS))
    g.add_argument("--dtype", choices=DTYPES,
                   help=describe_choices(DTYPES) + " (Q-format set by --frac-bits)")
    g.add_argument("--sampling", choices=SAMPLINGS,
                   help="order of the updates: " + describe_choices(SAMPLINGS) + " (k: --stride)")
    g.add_argument("--stride", type=L.STRIDE, help="STR stride k")
    g.add_argument("--epochs", type=L.EPOCHS, help="passes over each partition")
    g.add_argument("--alpha", type=L.LEARNING_RATE, help="learning rate")
    g.add_argument("--gamma", type=L.DISCOUNT, help="discount factor")
    g.add_argument("--epsilon", type=L.PROBABILITY, help="SARSA's epsilon-greedy draw")
    g.add_argument("--next-action", choices=NEXT_ACTIONS,
                   help="SARSA's next action: " + describe_choices(NEXT_ACTIONS))
    g.add_argument("--seed", type=L.SEED, help="seed of the learner's random streams")
    g.add_argument("--frac-bits", type=L.FRAC_BITS, help="INT32 fractional bits F (Q(31-F).F)")
    g = p.add_argument_group("CPU backend")
    g.add_argument("--threads", type=L.THREADS, default=None,
                   help="threads of the CPU baseline (default: all numba threads)")
    g.add_argument("--partitions", type=L.DPU_COUNT, default=None,
                   help="partitions of the CPU baseline, one table each (default: --threads)")
    g.add_argument("--repeats", type=L.REPEATS, default=1,
                   help="timed repeats of the CPU or GPU baseline; the median is reported "
                   "(default 1)")
    g = p.add_argument_group("GPU backend (also --dpus partitions, --tasklets lanes, "
                             "--tasklet-mode, --repeats)")
    g.add_argument("--threads-per-block", type=L.integer(1, 1024), default=64,
                   help="CUDA threads per block, one partition each (default 64)")
    g = p.add_argument_group("PIM backend")
    g.add_argument("--dpus", default=str(t["n_dpus"]),
                   help="DPU count, or a comma list for a scaling table (--backend gpu: its "
                   "partitions, one count)")
    g.add_argument("--tasklets", type=L.integer(1, 24), default=t["tasklets"],
                   help="tasklets (threads) per DPU (--backend gpu: lanes per partition)")
    g.add_argument("--tasklet-mode", choices=TASKLET_MODES, default=None,
                   help="how a DPU's tasklets share its table (docs/design.md): "
                   + "; ".join(f"{c.name}: {c.description}" for c in TASKLET_MODE.choices)
                   + f" (default {DEFAULT_TASKLET_MODE}; --online: ring)")
    g.add_argument("--aggregate", default=t["aggregate"],
                   help=" | ".join(AGGREGATORS) + " | sync:R | sync:R:weighted | own:R "
                   "(state-owned Q-learning or SARSA, R rounds: docs/state-owned.md; pimrl list)")
    g.add_argument("--partition", choices=("contiguous", "shuffle"), default=t["partition"],
                   help="contiguous chunks (SwiftRL), or a seeded shuffle first")
    g.add_argument("--shuffle-seed", type=L.SEED, default=t["shuffle_seed"],
                   help="seed of --partition shuffle")
    g.add_argument("--hardware", choices=list(PRESETS), default=t["hardware"],
                   help="hardware preset (pimrl list)")
    g.add_argument("--hw", action="append", default=[], metavar="KEY=VALUE",
                   help="what-if override, e.g. frequency_hz=500e6 or op_int32_mul=1")
    g.add_argument("--block-bytes", type=_block_bytes, default=t["block_bytes"],
                   help="DMA block size (16..2048; default 2048, or the largest that fits WRAM "
                   "beside the kernel's globals)")
    from pimrl.memplan import max_memory_type

    g.add_argument("--mram-window", type=max_memory_type, default=None, metavar="BYTES",
                   help="stream each DPU's records through BYTES of its MRAM in windows, every "
                   "epoch (bytes, or K, M, G binary multiples); a partition larger than the "
                   "MRAM streams in windows of all of it without this flag (docs/design.md, "
                   "\"Windows of records\")")
    g.add_argument("--kernel", choices=list(KERNELS), default=t["kernel"],
                   help="DPU program (pimrl list): the simulator's numba kernel, or the UPMEM C "
                   "kernel of kernels/ run by the DPU runtime (needs a C compiler; slower)")
    g.add_argument("--host-threads", type=L.integer(1, 1 << 16), default=None, metavar="N",
                   help="threads of the modelled host (the PrIM server's 2 x Xeon Silver 4215) "
                   "for its aggregation or own:R's merges, host_aggregation_modelled_s and the "
                   "energy (default: its 16 cores; more threads count as the cores)")
    from pimrl.devices import DEVICES

    g.add_argument("--device", choices=list(DEVICES), default=t["device"],
                   help="where the DPUs are: simulator (pimrl's, modelled times) or upmem (a "
                   "UPMEM machine through the SDK's dpu package, kernels/swiftrl.c built by the "
                   "SDK's dpu-upmem-dpurte-clang, measured times; docs/real-hardware.md)")
    p.set_defaults(pim_defaults={"hw": [], "dpus": str(t["n_dpus"]), "kernel": t["kernel"],
                                 "aggregate": t["aggregate"], "partition": t["partition"],
                                 "device": t["device"], "tasklet-mode": None})
    from pimrl.cli import add_executor_options

    add_executor_options(p, "--backend pim: the DPU set's whole ranks spread over the workers")
    g = p.add_argument_group("checkpoints (--backend pim or --online, on the simulator)")
    g.add_argument("--checkpoint", metavar="DIR",
                   help="write DIR/checkpoint.npz atomically at round boundaries (after the "
                   "broadcast of sync:R, sync:R:weighted and own:R rounds; a single-round "
                   "scheme such as plain mean can only checkpoint at its end), and at the next "
                   "boundary after SIGINT or SIGTERM, then exit 130")
    g.add_argument("--checkpoint-every", type=checkpoint_every, default=1, metavar="N|Ss",
                   help="rounds between checkpoints (default 1), or, with an s, seconds of "
                   "wall clock (e.g. 60s: the first round boundary a minute after the last "
                   "checkpoint)")
    g.add_argument("--resume", metavar="DIR",
                   help="continue from DIR's checkpoint (and keep checkpointing there) with the "
                   "same options and data: the tables, modelled times and quality equal an "
                   "uninterrupted run's bit for bit; a changed option, dataset or pimrl version "
                   "is refused (exit 2)")
    g = p.add_argument_group("output")
    g.add_argument("--save-q", metavar="PATH", help="write the learned table (.npy, float64)")
    g.add_argument("--save-policy", metavar="PATH.npz",
                   help="write the greedy policy of the learned table: one .npz that loads with "
                   "numpy alone (q, greedy_action, JSON metadata; pimrl.policy.load_policy)")
    g.add_argument("--no-eval", action="store_true", help="skip the policy evaluation")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    g.add_argument("--max-memory", type=max_memory_type, metavar="BYTES",
                   help="refuse, before any work, a run whose memory plan (printed first; "
                   "pimrl/memplan.py) needs more host memory than BYTES: bytes, or K, M, G, T "
                   "binary multiples (e.g. 8G, 512M), from 1 byte to 2^60")
    from pimrl.cli.online import add_arguments as add_online_arguments

    add_online_arguments(p)
    # --online refuses these (rather than ignore them) when given a value of their own
    offline = ("--transitions", "--data-seed", "--backend", "--threads", "--partitions",
               "--repeats", "--threads-per-block", "--partition", "--shuffle-seed",
               "--block-bytes", "--max-memory", "--host-threads", "--mram-window")
    # and offline training refuses the online ones
    online = ("--steps", "--agents", "--map-per-dpu", "--grid", "--epsilon-end",
              "--decay-steps", "--tolerance", "--cpu-baseline", "--force-mram")
    p.set_defaults(offline_only={o: p.get_default(_dest(o)) for o in offline},
                   online_only={o: p.get_default(_dest(o)) for o in online})
    p.set_defaults(func=run_train)


def _dest(option: str) -> str:
    return option[2:].replace("-", "_")


def given_options(args, defaults: dict) -> list:
    """The options of ``defaults`` (option -> default) that the command line set otherwise."""
    return [opt for opt, default in defaults.items() if getattr(args, _dest(opt)) != default]


#: The options of one or a few backends, with their defaults: the PIM group's, then the
#: baselines' (a backend takes the options its entry in pimrl.backends.BACKENDS names).
PIM_OPTIONS = ("--hw", "--dpus", "--kernel", "--aggregate", "--partition", "--device",
               "--tasklet-mode", "--executor", "--workers", "--threads-per-worker",
               "--host-threads", "--mram-window")
BASELINE_OPTIONS = {"--threads": None, "--partitions": None, "--repeats": 1,
                    "--threads-per-block": 64}


def backend_options(backend: str) -> set:
    """The backend-specific options ``--backend backend`` takes."""
    from pimrl.backends import BACKENDS

    if backend == "pim":
        return set(PIM_OPTIONS)
    taken = {"--" + dest.replace("_", "-")
             for dest in BACKENDS.entries[backend].flags["options"].values()}
    return taken | ({"--tasklet-mode"} if "--tasklets" in taken else set())


def refuse_other_backends_options(args) -> None:
    """Refuse, in one line, a backend-specific option given to a backend that does not take
    it (rather than ignore it), naming the backends that do."""
    from pimrl.backends import BACKENDS
    from pimrl.cli import UserError

    defaults = {**{o: args.pim_defaults.get(o[2:], None) for o in PIM_OPTIONS},
                "--executor": "local", **BASELINE_OPTIONS}
    given = [o for o in given_options(args, defaults) if o not in backend_options(args.backend)]
    if given:
        where = {o: [b for b in BACKENDS if o in backend_options(b)] for o in given}
        raise UserError("; ".join(f"{o} only applies to --backend {' or '.join(where[o])}"
                                  for o in given) + f" (this run: --backend {args.backend})")


def _load_data(args):
    from pimrl.cli import UserError
    from pimrl.data import generate_dataset, load_dataset
    from pimrl.envs import make

    if (args.data is None) == (args.env is None):
        raise UserError("give either a dataset file or --env (to generate one), not both")
    if args.data is not None:
        ds = load_dataset(args.data)
        return np.asarray(ds.records), ds.env(), f"{args.data} ({ds.env_id}, {len(ds)} transitions)"
    try:
        env = make(args.env)
    except ValueError as exc:
        raise UserError(f"--env: {exc}") from None
    from pimrl.data.records import TRANSITION_DTYPE
    from pimrl.limits import check_memory

    # the records, and a DPU-side or partitioned copy of them
    check_memory(3 * args.transitions * TRANSITION_DTYPE.itemsize, f"--transitions {args.transitions:,}")
    recs = generate_dataset(env, args.transitions, args.data_seed)
    return recs, env, f"{args.transitions} generated transitions of {env.env_id} (seed {args.data_seed})"


def _params(args) -> LearnerParams:
    from pimrl.cli import UserError

    # the DPUs' tasklet mode (its default on the command line: docs/design.md), which the GPU
    # follows with the DPUs' lanes; the other backends run one lane per partition, where
    # every mode is the ring
    mode = ((args.tasklet_mode or DEFAULT_TASKLET_MODE) if "--tasklet-mode" in
            backend_options(args.backend) else "ring")
    try:
        return LearnerParams(algo=args.algo, dtype=args.dtype, sampling=args.sampling,
                             epochs=args.epochs, alpha=args.alpha, gamma=args.gamma,
                             epsilon=args.epsilon, next_action=args.next_action,
                             stride=args.stride, seed=args.seed, frac_bits=args.frac_bits,
                             tasklet_mode=mode)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _dpu_counts(text: str):
    from pimrl.cli import UserError

    from pimrl.limits import DPU_COUNT

    try:
        counts = [DPU_COUNT.parse(x.strip(), "--dpus") for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise UserError(f"{exc} (or a comma-separated list of them)") from None
    if not counts:
        raise UserError(f"--dpus: {text!r} is not a number or a comma-separated list")
    return counts


def run_pim(records, env, params, args, n_dpus, hw, placement=None, checkpoint=None):
    from pimrl.experiments.quality import round_evaluator
    from pimrl.swiftrl.trainer import PimTrainer

    trainer = PimTrainer(params, n_dpus=n_dpus, tasklets=args.tasklets, aggregate=args.aggregate,
                         partition=args.partition, shuffle_seed=args.shuffle_seed, hardware=hw,
                         block_bytes=args.block_bytes, kernel=args.kernel, placement=placement,
                         on_round=None if args.no_eval else round_evaluator(env, params.gamma),
                         device=args.device, checkpoint=checkpoint,
                         mram_window=args.mram_window)
    return trainer.fit(records, env.n_states, env.n_actions)


def run_train(args: argparse.Namespace) -> int:
    """``pimrl train``; a checkpointed run defers SIGINT and SIGTERM to a round boundary
    (pimrl.interrupt.deferred_interrupts), writes a checkpoint there and exits 130."""
    from pimrl.checkpoint import CheckpointStop

    if getattr(args, "checkpoint", None) is None and getattr(args, "resume", None) is None:
        return _run_train(args)
    from pimrl.interrupt import deferred_interrupts

    holder = {}
    with deferred_interrupts(lambda name: setattr(holder.get("ck"), "interrupted", name)
                             if holder.get("ck") is not None else holder.setdefault("early", name)):
        try:
            return _run_train(args, holder)
        except CheckpointStop as exc:
            print(f"pimrl train: stopped by {exc}", file=sys.stderr)
            return 130


def _run_train(args: argparse.Namespace, holder: dict | None = None) -> int:
    from pimrl.cli import UserError
    from pimrl.pim.hardware import get_hardware, parse_overrides

    if args.online:
        from pimrl.cli.online import run_online

        return run_online(args, holder)
    given = given_options(args, args.online_only)
    if given:
        raise UserError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --online")
    params = _params(args)
    check_save_destinations(args)
    refuse_other_backends_options(args)
    if args.backend == "pim" and args.device == "upmem":
        from pimrl.devices import DeviceError, dpu_package

        try:
            dpu_package("upmem")       # before any data is made: the SDK's package or a clear error
        except DeviceError as exc:
            raise UserError(str(exc)) from None
        if args.kernel == args.pim_defaults["kernel"]:
            args.kernel = "c"              # real DPUs run the C kernel
        if args.executor != "local":
            raise UserError("--device upmem: the DPUs are this machine's; use --executor local")
    if "--dpus" in backend_options(args.backend):
        counts = _dpu_counts(args.dpus)
        if args.backend == "gpu":
            if len(counts) > 1:
                raise UserError(f"--backend gpu --dpus {args.dpus}: the GPU runs one count of "
                                "partitions (a scaling table is PIM's)")
            args.dpus = counts[0]        # its partitions: the DPUs' tables
    if args.backend == "pim":                  # checked before any data is made
        from pimrl.learners.aggregate import parse_aggregate

        try:
            hw = get_hardware(args.hardware, parse_overrides(args.hw))
            spec = parse_aggregate(args.aggregate)
            if args.mram_window is not None:
                from pimrl.swiftrl.windows import check_window

                check_window(args.mram_window, args.tasklets, hw.mram_bytes, spec.name)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    checkpoint = make_checkpoint(args, params, counts if args.backend == "pim" else [])
    if checkpoint is not None:
        from pimrl.io import ensure_folder

        ensure_folder(checkpoint.folder, "--checkpoint")
        holder["ck"] = checkpoint
        checkpoint.interrupted = holder.get("early")    # a signal before now: first boundary
    from pimrl.cli.plan import train_plan   # printed; refused past --max-memory

    plan = train_plan(args, *((counts, hw) if args.backend == "pim" else ()))
    records, env, source = _load_data(args)
    out = {"source": source, "env_id": env.env_id, "backend": args.backend,
           "params": params.as_dict(), "n_transitions": int(len(records))}
    if plan is not None:
        out["memory_plan"] = plan.as_dict()
    if args.backend != "pim":
        from pimrl.backends import BACKENDS

        options = {name: getattr(args, dest) for name, dest in
                   BACKENDS.entries[args.backend].flags["options"].items()}
        try:
            trainer = BACKENDS[args.backend](params, **options).fit(records, env.n_states,
                                                                    env.n_actions)
        except (ValueError, RuntimeError) as exc:
            raise UserError(str(exc)) from None
        out.update(trainer.report_)
        q = trainer.q_
    else:
        runs = []
        # what every run would refuse, before the first prints its progress line
        if len(records) < max(counts):
            raise UserError(f"{len(records)} transitions cannot feed {max(counts)} DPUs")
        rounds = parse_aggregate(args.aggregate).rounds
        if rounds > params.epochs:
            raise UserError(f"{args.aggregate}: {rounds} rounds need at least as many epochs; "
                            f"got {params.epochs}")
        from pimrl.energy import pim_run_energy
        from pimrl.pim.distributed import placement_for

        with placement_for(args.executor, args.workers, args.threads_per_worker) as placement:
            trained = []
            for n in counts:
                if len(counts) > 1 and not args.json:
                    print(f"{'running on' if args.device == 'upmem' else 'simulating'} {n} DPUs ...",
                          file=sys.stderr)
                trained.append(run_pim(records, env, params, args, n, hw, placement,
                                       checkpoint))
        for n, tr in zip(counts, trained):
            run = dict(tr.report_)
            if not args.no_eval:
                from pimrl.experiments.quality import TOLERANCE_TEXT, time_to_quality

                run.update(time_to_quality(tr.rounds_), quality_tolerance=TOLERANCE_TEXT,
                           rounds=tr.rounds_)
            run.update(pim_run_energy(tr, hw, run, args.aggregate,   # pimrl/energy.py
                                      host_threads=args.host_threads))
            if not args.no_eval and len(counts) > 1:
                from pimrl.envs import evaluate_against_optimum

                run["evaluation"] = evaluate_against_optimum(env, tr.q_, params.gamma)
            runs.append(run)
        q = tr.q_                      # --save-q and the evaluation below: the last count
        out["q_from_dpus"] = counts[-1]
        out["runs"] = runs
        if len(runs) > 1 and args.device == "simulator":
            out["scaling"] = scaling_table(runs)
    if not args.no_eval:
        from pimrl.envs import evaluate_against_optimum

        out["evaluation"] = evaluate_against_optimum(env, q, params.gamma)
    save_learned(args, q, env, params, out)
    from pimrl.memplan import peak_rss_bytes
    out["peak_rss_measured_bytes"] = peak_rss_bytes()
    if args.json:
        print(json.dumps(out, sort_keys=True, default=float))
    else:
        print_report(out, params)
    return 0


def check_save_destinations(args) -> None:
    """--save-q and --save-policy checked before any work (a bad path fails at once)."""
    from pimrl.cli import UserError
    from pimrl.io import check_destination

    for path in (args.save_q, args.save_policy):
        if path:
            check_destination(path)
    if args.save_policy and not str(args.save_policy).endswith(".npz"):
        raise UserError(f"--save-policy {args.save_policy!r}: the policy file is an .npz archive; "
                        "name it PATH.npz")


def save_learned(args, q, env, params, out: dict) -> None:
    """Write --save-q (the table) and --save-policy (its greedy policy), atomically."""
    if args.save_q:
        from pimrl.io import atomic_save_npy

        atomic_save_npy(args.save_q, q.astype(np.float64))
        out["saved_q"] = args.save_q
    if args.save_policy:
        from dataclasses import asdict

        from pimrl.policy import GreedyPolicy

        learner = {k: v for k, v in asdict(params).items()
                   if isinstance(v, (int, float, str, bool)) or v is None}
        GreedyPolicy(q, env.env_id, {"learner": learner}).save(args.save_policy)
        out["saved_policy"] = args.save_policy
