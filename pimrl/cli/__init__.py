"""The ``pimrl`` command. Every command's parser lives in this package, one module per
group of commands, each adding its commands through a ``register(subparsers)`` function.
Nothing outside ``pimrl.cli`` imports it, so the library never depends on its front end."""
from __future__ import annotations

import argparse
import importlib
import sys

#: Modules that contribute sub-commands, in the order ``pimrl --help`` lists them.
COMMAND_MODULES = (
    "pimrl.cli.data",         # data generate | import | export | info
    "pimrl.cli.train",        # train
    "pimrl.cli.advise",       # advise (search configurations by simulating them)
    "pimrl.cli.eval",         # eval
    "pimrl.cli.experiments",  # scale | plot | demo
    "pimrl.cli.calibration",  # calibrate | sensitivity | cost-doc
    "pimrl.cli.shim",         # shim (build the C host library)
    "pimrl.cli.catalogue",    # list (every registry)
)


class UserError(Exception):
    """A problem with the user's input: printed as one clear line, exit status 2."""


class HelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default (unless its text already says it)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (action.option_strings and default is not None and default is not False
                and default != [] and default is not argparse.SUPPRESS
                and "default" not in text and "%(default)" not in text):
            shown = "%(default)s"
            if isinstance(default, int) and not isinstance(default, bool) and abs(default) >= 10_000:
                shown = f"{default:,}"
            text = f"{text} (default {shown})" if text else f"default {shown}"
        if hasattr(action.type, "describe"):         # pimrl.limits: the accepted range
            text = f"{text}; {action.type.describe()}" if text else action.type.describe()
        return text


class _SubCommands(argparse._SubParsersAction):
    """Sub-command parsers whose description is at least their one-line help."""

    def add_parser(self, name, **kwargs):
        if kwargs.get("description") is None and kwargs.get("help"):
            text = kwargs["help"].replace("%%", "%")
            kwargs["description"] = text[0].upper() + text[1:] + "."
        return super().add_parser(name, **kwargs)


class Parser(argparse.ArgumentParser):
    """pimrl's parsers: ``HelpFormatter`` everywhere, sub-command parsers included; a
    usage error is one line (the README's promise for bad input), exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _SubCommands)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_executor_options(p, what: str) -> None:
    """pimrl.cluster's --executor, --workers and --threads-per-worker, their counts bounded
    by pimrl.limits like every other number."""
    from pimrl.cluster import add_executor_arguments
    from pimrl.limits import THREADS

    add_executor_arguments(p, what)
    for action in p._actions:
        if {"--workers", "--threads-per-worker"} & set(action.option_strings):
            action.type = THREADS


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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


def describe_error(exc: BaseException) -> str:
    """One line for an error: an OSError names its file and says what went wrong, with no
    ``[Errno N]`` prefix."""
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is not None:
            return f"{exc.filename}: {exc.strerror}"
        return exc.strerror
    return str(exc)


def _interrupt_handling():
    """pimrl.interrupt's prompt Ctrl-C, or Python's own where its handlers cannot be built."""
    try:
        from pimrl.interrupt import answered, prompt_interrupts
    except Exception:                   # no compiler for the handlers: Ctrl-C as Python does
        import contextlib

        return (lambda: None), contextlib.nullcontext
    return answered, prompt_interrupts


def check_environment(environ=None) -> str | None:
    """Why the process environment cannot run pimrl, in one line, or None. Checked before
    numba is imported: numba reads NUMBA_NUM_THREADS once, and fails with a traceback."""
    import os

    from pimrl.limits import MAX_THREADS, OutOfRange, parse_int

    text = (os.environ if environ is None else environ).get("NUMBA_NUM_THREADS", "")
    if text.strip():
        try:
            parse_int(text, "NUMBA_NUM_THREADS", 1, MAX_THREADS)
        except OutOfRange as exc:
            return f"{exc} (numba's thread count; unset it for one per core)"
    return None


def _tolerant_stdout() -> None:
    """A file name that is not UTF-8 reaches pimrl as surrogate escapes (PEP 383); printed,
    it goes out as the bytes it was (as stderr already does with escapes), rather than
    failing half way through a report."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", "") == "strict":
        try:
            reconfigure(errors="surrogateescape")
        except (ValueError, OSError):        # a stream that cannot change: as it is
            pass


def main(argv=None) -> int:
    problem = check_environment()
    if problem is not None:
        print(f"pimrl: error: {problem}", file=sys.stderr)
        return 2
    _tolerant_stdout()
    answered, prompt_interrupts = _interrupt_handling()
    command = "pimrl"
    with prompt_interrupts():
        try:
            parser = build_parser()
            try:
                args = parser.parse_args(argv)
            except SystemExit as exc:      # --help, --version, a usage error: its status
                return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            command = f"pimrl {args.command}" if getattr(args, "command", None) else "pimrl"
            if not getattr(args, "func", None):
                parser.print_help()
                return 1
            return _run(args, command)
        except KeyboardInterrupt:
            answered()
            print(f"\n{command}: interrupted (Ctrl-C)", file=sys.stderr)
            return 130


def _run(args, command: str) -> int:
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        # sizes are checked before the work (pimrl.limits.check_memory); this is the rest
        what = f" ({exc})" if str(exc) else ""
        print(f"{command}: error: out of memory{what}: ask for less (smaller sizes, fewer "
              "DPUs or points)", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:
        # Validation errors from the library already name the file, line or field at fault.
        print(f"{command}: error: {describe_error(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        from pimrl.pim.errors import DpuError

        if isinstance(exc, DpuError):      # the simulated system refused, as the SDK would
            print(f"{command}: error: {exc}", file=sys.stderr)
            return 2
        raise
