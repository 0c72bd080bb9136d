"""``pimrl train``'s and ``pimrl data info``'s memory plans from their arguments
(:mod:`pimrl.memplan` computes them; this module reads the command line and refuses)."""
from __future__ import annotations

from pimrl.memplan import (
    MemoryPlan, dataset_shape, fitting_window, plan_lines, plan_memory, refusal, show,
)


def train_plan(args, counts=None, hw=None) -> MemoryPlan | None:
    """``pimrl train``'s plan from its arguments, before any data is made or read: printed
    (two lines, unless --json), refused past ``--max-memory`` (a UserError: one line, exit
    status 2). None where the data cannot be sized yet (a bad file or environment: the load
    then says what is wrong)."""
    from pimrl.cli import UserError

    if (args.data is None) == (args.env is None):
        return None
    try:
        if args.data is not None:
            n, s, a = dataset_shape(args.data)
            source = "file"
        else:
            from pimrl.envs import make

            env = make(args.env)
            n, s, a, source = args.transitions, env.n_states, env.n_actions, "generated"
    except (ValueError, OSError, KeyError):
        return None
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE

    mode = (args.tasklet_mode or DEFAULT_TASKLET_MODE) if args.backend == "pim" else "ring"
    try:
        plan = plan_memory(n, s, a, backend=args.backend, n_dpus=counts or 1,
                           tasklets=args.tasklets, aggregate=args.aggregate, algo=args.algo,
                           dtype=args.dtype, sampling=args.sampling, tasklet_mode=mode,
                           hardware=hw if hw is not None else args.hardware,
                           block_bytes=args.block_bytes, partition=args.partition,
                           source=source, device=args.device, executor=args.executor,
                           partitions=args.partitions or args.threads,
                           mram_window=getattr(args, "mram_window", None),
                           stride=getattr(args, "stride", None) or 4)
    except ValueError:          # parameters the run itself refuses, in its own words
        return None
    limit = getattr(args, "max_memory", None)
    if limit is not None:
        why = refusal(plan, limit, source == "generated")
        if why and args.backend == "pim" and getattr(args, "mram_window", None) is None:
            # windows hold each record once (the push buffer) where a whole push holds it
            # twice (and the MRAM): the largest window that fits the limit, if one does
            fits = fitting_window(lambda w: plan_memory(
                n, s, a, backend="pim", n_dpus=counts or 1, tasklets=args.tasklets,
                aggregate=args.aggregate, algo=args.algo, dtype=args.dtype,
                sampling=args.sampling, tasklet_mode=mode,
                hardware=hw if hw is not None else args.hardware, block_bytes=args.block_bytes,
                partition=args.partition, source=source, device=args.device,
                executor=args.executor, mram_window=w, stride=args.stride or 4),
                limit, args.tasklets, hw.mram_bytes if hw is not None else 64 << 20)
            if fits is not None:
                args.mram_window, plan, why = fits[0], fits[1], None
                if not args.json:
                    print(f"--max-memory {show(limit)}: the records stream through each DPU's "
                          f"MRAM in windows of {show(fits[0])} (--mram-window) to fit",
                          flush=True)
        if why:
            raise UserError(why)
    if not args.json:
        for line in plan_lines(plan):
            print(line, flush=True)
    return plan


def default_plans(n_transitions: int, n_states: int, n_actions: int) -> dict:
    """``pimrl data info``: the plans of ``pimrl train FILE`` (the reference learner) and of
    ``pimrl train FILE --backend pim`` with the command line's defaults, by label."""
    from pimrl.cli.catalogue import trainer_defaults
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE

    t = trainer_defaults()
    return {"train": plan_memory(n_transitions, n_states, n_actions, backend="reference"),
            f"train --backend pim ({t['n_dpus']} DPUs)": plan_memory(
                n_transitions, n_states, n_actions, backend="pim", n_dpus=t["n_dpus"],
                tasklets=t["tasklets"], aggregate=t["aggregate"], hardware=t["hardware"],
                tasklet_mode=DEFAULT_TASKLET_MODE)}
