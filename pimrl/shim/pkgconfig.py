"""``dpu-pkg-config``: pimrl's stand-in for the UPMEM SDK's command of the same name.

    cc app.c $(dpu-pkg-config --cflags --libs dpu)

points the compiler at pimrl's ``dpu.h`` and ``libdpu.so``, the SDK host API served by the
Python simulator. ``--modelled-clock`` (pimrl only) adds ``-DPIMRL_MODELLED_CLOCK=1`` to the
flags: a program built with it runs on the modelled clock (its own host clock advances by
the modelled time of each simulator call in place of the call's wall time, as with
``PIMRL_MODELLED_CLOCK=1`` in the environment, which when set decides; docs/real-hardware.md). ``--libs`` builds the library first when it is missing or older than its
sources. ``PIMRL_SHIM_BUILD_DIR`` picks another build folder. Installed as a command by
``pip install`` (and run by ``bin/dpu-pkg-config`` in a checkout).
"""
from __future__ import annotations

import os
import sys

SDK_VERSION = "2025.1.0"
PROG = "dpu-pkg-config"
USAGE = f"""usage: {PROG} [--cflags] [--libs] [--modversion] [--exists] [--modelled-clock] dpu
       {PROG} --version | --help
pimrl simulator shim: flags for building UPMEM host programs against pimrl's libdpu.so.
  --modelled-clock  the program's host clock is the modelled clock (pimrl only)
"""
#: What ``--modelled-clock`` adds: dpu.h then defines ``pimrl_modelled_clock_built``, which
#: libdpu.so reads at the first simulator call.
MODELLED_CLOCK_FLAG = "-DPIMRL_MODELLED_CLOCK=1"


def main(argv=None) -> int:
    from pimrl.shim import build

    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.stderr.write(USAGE)
        return 1
    want = set()
    pkgs = []
    for arg in argv:
        if arg in ("--cflags", "--cflags-only-I"):
            want.add("cflags")
        elif arg in ("--libs", "--libs-only-l", "--libs-only-L"):
            want.add("libs")
        elif arg in ("--modversion", "--exists"):
            want.add(arg[2:])
        elif arg == "--modelled-clock":
            want.add("modelled-clock")
        elif arg == "--version":
            print(f"{SDK_VERSION} (pimrl simulator shim)")
            return 0
        elif arg in ("--static", "--print-errors", "--short-errors", "--silence-errors"):
            pass
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        elif arg.startswith("-"):
            sys.stderr.write(f"{PROG}: unknown option {arg}\n{USAGE}")
            return 1
        else:
            pkgs.append(arg)
    if not pkgs:
        print(f"{PROG}: name a package (dpu)", file=sys.stderr)
        return 1
    for p in pkgs:
        if p != "dpu":
            print(f"Package {p} was not found in the pkg-config search path (pimrl provides "
                  "only 'dpu').", file=sys.stderr)
            return 1
    if want <= {"exists", "modelled-clock"}:
        return 0
    if "modversion" in want:
        print(SDK_VERSION)
    build_dir = os.environ.get("PIMRL_SHIM_BUILD_DIR") or None
    if "libs" in want and build.needs_build(build_dir):
        print(f"{PROG}: building {build.library_path(build_dir)} ...", file=sys.stderr)
        try:
            # The compiler's output goes to stderr: stdout is the flags a Makefile reads.
            stdout, sys.stdout = sys.stdout, sys.stderr
            try:
                build.build_shim(build_dir)
            finally:
                sys.stdout = stdout
        except build.ShimUnavailable as exc:
            print(f"{PROG}: could not build libdpu.so: {exc}", file=sys.stderr)
            return 1
    flags = build.pkg_config_flags(build_dir)
    out = [flags[k] for k in ("cflags", "libs") if k in want]
    if "modelled-clock" in want and want & {"cflags", "libs"}:
        # on the compile line it selects the clock; on a link-only line it is inert
        out.append(MODELLED_CLOCK_FLAG)
    if out:
        print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
