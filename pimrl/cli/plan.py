"""``pimrl train``'s and ``pimrl data info``'s memory plans from their arguments
(:mod:`pimrl.memplan` computes them; this module reads the command line, puts a plan in
words, and refuses one past --max-memory or streams its records in windows to fit it)."""
from __future__ import annotations

from pimrl.memplan import MemoryPlan, plan_memory, show


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

    def plan_for(window):
        return plan_memory(n, s, a, backend=args.backend, n_dpus=counts or 1,
                           tasklets=args.tasklets, aggregate=args.aggregate, algo=args.algo,
                           dtype=args.dtype, sampling=args.sampling, tasklet_mode=mode,
                           hardware=hw if hw is not None else args.hardware,
                           block_bytes=args.block_bytes, partition=args.partition,
                           source=source, device=args.device, executor=args.executor,
                           partitions=args.partitions or args.threads, mram_window=window,
                           stride=getattr(args, "stride", None) or 4)
    try:
        plan = plan_for(getattr(args, "mram_window", None))
    except ValueError:          # parameters the run itself refuses, in its own words
        return None
    limit = getattr(args, "max_memory", None)
    if limit is not None:
        why = refusal(plan, limit, source == "generated")
        if why and args.backend == "pim" and getattr(args, "mram_window", None) is None:
            # windows hold each record once (the push buffer) where a whole push holds it
            # twice (and the MRAM): the largest window that fits the limit, if one does
            fits = fitting_window(plan_for, limit, args.tasklets,
                                  hw.mram_bytes if hw is not None else 64 << 20)
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


# --------------------------------------------------------------------- the plan in words
#: What each part is, and what shrinks it (``{fewer}``: how to ask for fewer transitions).
PARTS = {
    "baseline": ("the interpreter, numpy, numba and the loaded kernels (measured)",
                 "nothing shrinks it"),
    "dataset": ("the dataset file's mapped pages, all read by the load's checks",
                "{fewer}; more --dpus do not help"),
    "generated_records": ("the generated records, held for the whole run",
                          "{fewer}, or write them to a file first (pimrl data generate): a "
                          "mapped file past 256 MiB is handed back once the push buffer is "
                          "made; more --dpus do not help"),
    "shuffled_copy": ("--partition shuffle's shuffled copy of the records (the mapping is "
                      "then kept too)", "--partition contiguous"),
    "push_buffer": ("the DPUs' push buffer (n_dpus x longest partition x 16 B)",
                    "{fewer}; more --dpus do not help (the same records, split otherwise)"),
    "lane_arrays": ("tasklet mode rows' lane arrays (n_dpus x states)",
                    "fewer --dpus, or --tasklet-mode ring"),
    "mram_pages": ("the simulated MRAM pages written (the records pushed) and their page "
                   "table", "{fewer}, or --mram-window BYTES (the records streamed in windows: "
                   "the MRAM holds one); more --dpus do not help"),
    "window_buffer": ("the host's buffer of one window of records (n_dpus x window)",
                      "a smaller --mram-window"),
    "wram_images": ("the simulated WRAM pages the kernel touches (n_dpus x its globals)",
                    "fewer --dpus (or a smaller table)"),
    "dpu_tables": ("the DPU tables gathered (n_dpus x S x A x 4 B; visit counts too for "
                   "weighted) and the launches' per-DPU counters",
                   "fewer --dpus{visits}"),
    "aggregation": ("the aggregation buffers (float64 tables)", "a smaller table"),
    "learner_copy": ("the learner's copy of the records (16 B each)", "{fewer}"),
    "kept_memories": ("an earlier --dpus count's simulated memories, kept for reuse",
                      "one --dpus count per run"),
    "owner_sort": ("own:R's sort of the records by state (int64 states, actions, order, "
                   "DPU index)", "{fewer}; more --dpus do not help"),
    "ordered_copy": ("own:R's records in DPU order (and its order)",
                     "{fewer}; more --dpus do not help"),
}


_PHASE_TEXT = {"load": "loading the data", "prep": "making the push buffer",
               "push": "pushing to the DPUs", "run": "running and gathering",
               "train": "training", "owner_sort": "sorting by state",
               "reorder": "ordering the records"}
LABELS = {"baseline": "baseline", "dataset": "dataset mapping",
          "generated_records": "generated records", "shuffled_copy": "shuffled copy",
          "push_buffer": "push buffer", "lane_arrays": "lane arrays",
          "mram_pages": "simulated MRAM", "wram_images": "simulated WRAM",
          "window_buffer": "window buffer",
          "dpu_tables": "DPU tables", "aggregation": "aggregation",
          "learner_copy": "learner's copy", "kept_memories": "kept memories",
          "owner_sort": "state sort", "ordered_copy": "ordered copy"}


def plan_lines(plan: MemoryPlan) -> list:
    """One or two lines: the planned total and its largest parts, the DPUs' memories."""
    top = sorted(plan.parts.items(), key=lambda kv: -kv[1])[:3]
    lines = [f"memory plan: {show(plan.total)} planned at its peak "
             f"({_PHASE_TEXT.get(plan.peak_phase, plan.peak_phase)}), of which "
             + ", ".join(f"{LABELS.get(k, k)} {show(v)}" for k, v in top)]
    if plan.mram_bytes_per_dpu is not None and plan.wram_bytes_per_dpu is not None:
        w = plan.windows
        lines.append(f"             per DPU (planned): MRAM {show(plan.mram_bytes_per_dpu)} of "
                     f"{show(plan.mram_bank_bytes)}, WRAM {plan.wram_bytes_per_dpu / 1024:.1f} of "
                     f"{plan.wram_bank_bytes / 1024:.0f} KiB" + (
                         "" if w is None else
                         f"; records streamed in windows, {'' if w['exact_count'] else 'at least '}"
                         f"{w['windows_per_epoch']:,} per epoch"))
    return lines


def refusal(plan: MemoryPlan, limit: int, generated: bool) -> str | None:
    """The one line refusing a plan above ``limit`` (None when it fits): the total, the
    largest part and what would shrink it, and what a smaller part would save when an
    option drops it whole."""
    if plan.total <= limit:
        return None
    name, size = plan.largest()
    what, helps = PARTS.get(name, (name, ""))
    fewer = "fewer --transitions" if generated else \
        "fewer transitions (a smaller dataset: pimrl data generate --n N)"
    visits = ", or --aggregate mean (no visit counts)" if plan.visits else ""
    line = (f"--max-memory {show(limit)}: the plan needs {show(plan.total)} (planned); its "
            f"largest part is {LABELS.get(name, name)}, {show(size)}: {what}. What shrinks "
            f"it: {helps.format(fewer=fewer, visits=visits)}")
    saves = {"generated_records": "writing the records to a file first (pimrl data generate) "
                                  "would save the generated records'",
             "shuffled_copy": "--partition contiguous would save the shuffled copy's",
             "kept_memories": "one --dpus count per run would save the kept memories'"}
    extra = [f"{text} {show(plan.parts[k])}" for k, text in saves.items()
             if k != name and plan.parts.get(k)]
    return line + "".join(f"; {e}" for e in extra)


def fitting_window(plan_for, limit: int, tasklets: int, mram_bytes: int):
    """``(window_bytes, plan)``: the largest ``--mram-window`` (a power of two up to
    ``mram_bytes``, at least 4 KiB and a record per tasklet) whose plan ``plan_for(window_bytes)`` fits ``limit``,
    or None where none does (or the run refuses windows: own:R)."""
    from pimrl.swiftrl.windows import check_window

    window = 1 << (int(mram_bytes).bit_length() - 1)
    while window >= max(4096, 16 * tasklets):
        try:
            check_window(window, tasklets, mram_bytes)
            plan = plan_for(window)
        except ValueError:
            return None
        if plan.windows is None:
            return None
        if plan.total <= limit:
            return window, plan
        window //= 2
    return None


def dataset_shape(path):
    """(n_transitions, n_states, n_actions) from a dataset file's header alone (nothing
    mapped, no record read); the header's errors as load_dataset raises them."""
    import os

    from pimrl.data.format import HEADER_SIZE, decode_header
    from pimrl.io import check_regular_input

    path = check_regular_input(path)
    with open(path, "rb") as f:
        header = decode_header(f.read(HEADER_SIZE), path=path, file_size=os.path.getsize(path))
    return header["n_transitions"], header["n_states"], header["n_actions"]
