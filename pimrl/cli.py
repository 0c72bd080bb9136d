"""The ``pimrl`` command. Each sub-command lives beside the code it drives and registers
itself here through a ``register(subparsers)`` function."""
from __future__ import annotations

import argparse
import importlib
import sys

#: Modules that contribute sub-commands, in the order ``pimrl --help`` lists them.
COMMAND_MODULES = (
    "pimrl.data.cli",        # data generate | import | info
    "pimrl.learners.cli",    # train
    "pimrl.envs.cli",        # eval
    "pimrl.experiments.cli", # scale | plot | demo
    "pimrl.calibration.cli", # calibrate | sensitivity | cost-doc
    "pimrl.shim.cli",        # shim (build the C host library)
)


class UserError(Exception):
    """A problem with the user's input: printed as one clear line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pimrl",
        description="Processing-in-memory reinforcement learning: tabular Q-learning and SARSA "
        "on simulated UPMEM DPUs, with reference learners and exact evaluation.",
    )
    from pimrl import __version__

    parser.add_argument("--version", action="version", version=f"pimrl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        # Every command module imports with the base install; optional extras (the GPU) are
        # imported by the commands themselves when used.
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"pimrl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, OSError, MemoryError) as exc:
        # Validation errors from the library already name the file, line or field at fault.
        print(f"pimrl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from pimrl.pim.errors import DpuError

        if isinstance(exc, DpuError):      # the simulated system refused, as the SDK would
            print(f"pimrl {args.command}: error: {exc}", file=sys.stderr)
            return 2
        raise
