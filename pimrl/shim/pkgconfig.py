"""``dpu-pkg-config``: pimrl's stand-in for the UPMEM SDK's command of the same name.

    cc app.c $(dpu-pkg-config --cflags --libs dpu)

points the compiler at pimrl's ``dpu.h`` and ``libdpu.so``, the SDK host API served by the
Python simulator. ``--modelled-clock`` (pimrl only) adds ``-DPIMRL_MODELLED_CLOCK=1`` to the
flags: a program built with it runs on the modelled clock (its own host clock advances by
the modelled time of each simulator call in place of the call's wall time, as with
``PIMRL_MODELLED_CLOCK=1`` in the environment, which when set decides; docs/real-hardware.md). ``--libs`` builds the library first when it is missing or older than its
sources. ``PIMRL_SHIM_BUILD_DIR`` picks another build folder. Installed as a command by
``pip install`` (and run by ``bin/dpu-pkg-config`` in a checkout).

For SDK projects that do not call ``dpu-pkg-config`` (docs/real-hardware.md, "Building SDK
projects"): ``--upmem-home`` prints pimrl's UPMEM_HOME-style tree (``bin/clang``,
``bin/dpu-clang``, ``share/upmem/cmake/include/host/DpuHost.cmake``); ``--env`` prints the
shell lines that stand in for the SDK's ``upmem_env.sh`` (``eval "$(dpu-pkg-config --env)"``:
UPMEM_HOME, that tree's bin first on PATH, and CPATH, LIBRARY_PATH, LD_LIBRARY_PATH and
LD_RUN_PATH at pimrl's dpu.h and libdpu.so, so ``cc app.c -I/usr/include/dpu -ldpu`` builds
against the simulator); ``--variable=includedir|libdir|prefix dpu`` answers as pkg-config
does. ``--env`` and ``--variable=libdir`` build the library first, as ``--libs`` does.
"""
from __future__ import annotations

import os
import shlex
import sys

SDK_VERSION = "2025.1.0"
PROG = "dpu-pkg-config"
USAGE = f"""usage: {PROG} [--cflags] [--libs] [--modversion] [--exists] [--modelled-clock] dpu
       {PROG} --variable=includedir|libdir|prefix dpu
       {PROG} --upmem-home | --env | --version | --help
pimrl simulator shim: flags for building UPMEM host programs against pimrl's libdpu.so.
  --modelled-clock  the program's host clock is the modelled clock (pimrl only)
  --upmem-home      pimrl's UPMEM_HOME-style tree (bin/clang, bin/dpu-clang, DpuHost.cmake)
  --env             shell lines for eval: UPMEM_HOME, PATH, CPATH, LIBRARY_PATH,
                    LD_LIBRARY_PATH, LD_RUN_PATH (for -I/usr/include/dpu -ldpu builds)
"""
#: What ``--variable=NAME dpu`` answers.
VARIABLES = ("includedir", "libdir", "prefix")
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
    variables = []
    for arg in argv:
        if arg in ("--upmem-home", "--env"):
            want.add(arg[2:])
        elif arg.startswith("--variable="):
            variables.append(arg.split("=", 1)[1])
        elif arg in ("--cflags", "--cflags-only-I"):
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
    build_dir = os.environ.get("PIMRL_SHIM_BUILD_DIR") or None
    if want & {"upmem-home", "env"}:
        if want - {"upmem-home", "env"} or variables or len(want) > 1:
            print(f"{PROG}: --upmem-home and --env take no other option", file=sys.stderr)
            return 1
        if "upmem-home" in want:
            from pimrl.resources import UPMEM_HOME

            print(UPMEM_HOME)
            return 0
        if _ensure_library(build_dir):
            return 1
        sys.stdout.write(env_script(build_dir))
        return 0
    if not pkgs:
        print(f"{PROG}: name a package (dpu)", file=sys.stderr)
        return 1
    for p in pkgs:
        if p != "dpu":
            print(f"Package {p} was not found in the pkg-config search path (pimrl provides "
                  "only 'dpu').", file=sys.stderr)
            return 1
    if variables:
        if want - {"modelled-clock"} or len(variables) > 1 or variables[0] not in VARIABLES:
            print(f"{PROG}: --variable takes one of {', '.join(VARIABLES)}, and no other "
                  "option", file=sys.stderr)
            return 1
        if variables[0] == "libdir" and _ensure_library(build_dir):
            return 1
        print(_variable(variables[0], build_dir))
        return 0
    if want <= {"exists", "modelled-clock"}:
        return 0
    if "modversion" in want:
        print(SDK_VERSION)
    if "libs" in want and _ensure_library(build_dir):
        return 1
    flags = build.pkg_config_flags(build_dir)
    out = [flags[k] for k in ("cflags", "libs") if k in want]
    if "modelled-clock" in want and want & {"cflags", "libs"}:
        # on the compile line it selects the clock; on a link-only line it is inert
        out.append(MODELLED_CLOCK_FLAG)
    if out:
        print(" ".join(out))
    return 0


def _ensure_library(build_dir) -> int:
    """Build libdpu.so when it is missing or stale; 0 when it is there, 1 (said why) if not."""
    from pimrl.shim import build

    if not build.needs_build(build_dir):
        return 0
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
    return 0


def _variable(name: str, build_dir) -> str:
    from pimrl.resources import UPMEM_HOME
    from pimrl.shim import build

    if name == "includedir":
        return str(build.INCLUDE)
    if name == "libdir":
        return str(build.library_path(build_dir).parent.resolve())
    return str(UPMEM_HOME)


def env_script(build_dir=None) -> str:
    """What ``--env`` prints: POSIX shell lines that set up an SDK-style environment
    (``eval "$(dpu-pkg-config --env)"``), each folder put first once (evaluating it twice
    changes nothing)."""
    from pimrl.resources import UPMEM_HOME

    include = _variable("includedir", build_dir)
    libdir = _variable("libdir", build_dir)
    lines = ["# pimrl: the UPMEM SDK environment, served by the simulator "
             '(eval "$(dpu-pkg-config --env)")',
             f"export UPMEM_HOME={shlex.quote(str(UPMEM_HOME))}"]
    for var, folder in (("PATH", str(UPMEM_HOME / "bin")), ("CPATH", include),
                        ("LIBRARY_PATH", libdir), ("LD_LIBRARY_PATH", libdir),
                        ("LD_RUN_PATH", libdir)):
        q = shlex.quote(folder)
        # no empty entry: an empty CPATH or LD_LIBRARY_PATH entry means the current folder
        lines.append(f'case ":${{{var}:-}}:" in *:{q}:*) ;; '
                     f'*) {var}={q}${{{var}:+":${var}"}} ;; esac; export {var}')
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
