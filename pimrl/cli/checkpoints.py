"""``pimrl train``'s checkpoint options: the settings a checkpoint is bound to,
``--checkpoint-every``'s rounds or seconds, and the :class:`~pimrl.checkpoint.
Checkpoint` of a run (offline, and online through :mod:`pimrl.cli.online`)."""
from __future__ import annotations

import argparse


def checkpoint_config(args, params, n_dpus: int) -> dict:
    """The settings a checkpoint is bound to: every option that affects the results (by
    its flag), the dataset (its file's SHA-256, or the generated spec) and pimrl's version."""
    from pimrl import __version__
    from pimrl.io import check_regular_input
    from pimrl.checkpoint import file_sha256

    if args.data is not None:
        data = {"file_sha256": file_sha256(check_regular_input(args.data, "dataset"))}
    else:
        data = {"env": args.env, "transitions": args.transitions, "data_seed": args.data_seed}
    config = {f"--{k.replace('_', '-')}": v for k, v in params.as_dict().items()}
    config.update({"--dpus": n_dpus, "--tasklets": args.tasklets, "--aggregate": args.aggregate,
                   "--partition": args.partition, "--shuffle-seed": args.shuffle_seed,
                   "--hardware": args.hardware, "--hw": list(args.hw),
                   "--block-bytes": args.block_bytes, "--kernel": args.kernel,
                   "--device": args.device, "--no-eval": bool(args.no_eval),
                   "--mram-window": args.mram_window,
                   "dataset": data, "pimrl version": __version__})
    return config


def checkpoint_every(text: str):
    """argparse type of ``--checkpoint-every``: rounds (an int), or seconds (a float) where
    the text ends in ``s``."""
    from pimrl import limits as L

    text = str(text).strip()
    if text.lower().endswith("s"):
        try:
            seconds = float(text[:-1])
        except ValueError:
            seconds = float("nan")
        if not 0 < seconds <= 1e9:
            raise argparse.ArgumentTypeError(f"{text!r}: seconds must be a number in (0, 1e9], "
                                             "e.g. 60s")
        return seconds
    return L.integer(1, 1 << 30)(text)


def make_checkpoint(args, params, counts, config: dict | None = None):
    """The run's :class:`~pimrl.checkpoint.Checkpoint` (None without --checkpoint
    or --resume); a resume's checkpoint read and checked against this run's settings
    (``config``, or the offline run's :func:`checkpoint_config`)."""
    from pimrl.cli import UserError
    from pimrl.checkpoint import Checkpoint, CheckpointMismatch

    if args.checkpoint is None and args.resume is None:
        if args.checkpoint_every != 1:
            raise UserError("--checkpoint-every applies to --checkpoint or --resume")
        return None
    flag = "--resume" if args.resume is not None else "--checkpoint"
    folder = args.resume if args.resume is not None else args.checkpoint
    if not folder.strip():
        raise UserError(f"{flag}: give a folder, not an empty name")
    if args.checkpoint is not None and args.resume is not None and args.checkpoint != args.resume:
        raise UserError("--resume DIR keeps checkpointing in DIR: give --checkpoint the same "
                        "folder, or leave it out")
    if args.backend != "pim" and not args.online:
        raise UserError(f"{flag} applies to --backend pim and --online")
    if len(counts) > 1:
        raise UserError(f"{flag}: give one --dpus count, not a list")
    if args.device != "simulator" or args.executor != "local":
        raise UserError(f"{flag}: runs on the simulator in this process only (--device "
                        "simulator, --executor local)")
    try:
        every = args.checkpoint_every
        seconds = isinstance(every, float)
        if config is None:
            config = checkpoint_config(args, params, counts[0])
        return Checkpoint(folder, 1 if seconds else every, config, args.resume is not None,
                          every_s=every if seconds else None)
    except CheckpointMismatch as exc:
        raise UserError(str(exc)) from None
