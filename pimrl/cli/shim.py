"""``pimrl shim``: build and check the C host library (the UPMEM SDK API over the simulator)."""
from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "shim",
        help="build the C host library libdpu.so (UPMEM SDK host API over the simulator)",
        description="Build libdpu.so, the UPMEM SDK's host API (host/include/dpu.h) served by "
        "pimrl's simulator through cffi's embedding mode, so that a C host program built with "
        "`cc app.c $(dpu-pkg-config --cflags --libs dpu)` (bin/ first on PATH) runs on "
        "simulated DPUs. Needs a C compiler and the Python headers; without them the Python "
        "simulator still works and this command says what is missing.",
    )
    sub = p.add_subparsers(dest="shim_command", metavar="ACTION")
    b = sub.add_parser("build", help="build libdpu.so (default folder host/build)")
    b.add_argument("--build-dir", metavar="DIR", help="output folder (default host/build)")
    b.add_argument("--sanitize", choices=("address",), help="build with a sanitizer (ASan)")
    b.add_argument("--force", action="store_true", help="rebuild even if up to date")
    b.add_argument("-v", "--verbose", action="store_true", help="show the compiler commands")
    b.set_defaults(func=run_build)
    c = sub.add_parser("check", help="build if needed, then compile and run a tiny C program")
    c.add_argument("--build-dir", metavar="DIR")
    c.set_defaults(func=run_check)
    f = sub.add_parser("flags", help="print the compiler flags dpu-pkg-config gives")
    f.add_argument("--build-dir", metavar="DIR")
    f.set_defaults(func=run_flags)
    p.set_defaults(func=lambda args: (p.print_help(), 1)[1])


def _unavailable(reason: str) -> int:
    print(f"pimrl shim: the C path is unavailable: {reason}.\n"
          "The Python simulator works without it (e.g. `pimrl train --backend pim`).",
          file=sys.stderr)
    return 2


def run_build(args: argparse.Namespace) -> int:
    from pimrl.shim.build import ShimUnavailable, build_shim

    try:
        lib = build_shim(args.build_dir, sanitize=args.sanitize, force=args.force,
                         verbose=args.verbose)
    except ShimUnavailable as exc:
        return _unavailable(str(exc))
    print(f"pimrl shim: {lib}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from pimrl.shim.build import ShimUnavailable, build_shim, run_self_test

    try:
        build_shim(args.build_dir)
    except ShimUnavailable as exc:
        return _unavailable(str(exc))
    result = run_self_test(args.build_dir)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return 0 if result.returncode == 0 else 1


def run_flags(args: argparse.Namespace) -> int:
    from pimrl.shim.build import pkg_config_flags

    flags = pkg_config_flags(args.build_dir)
    print(flags["cflags"], flags["libs"])
    return 0
