"""The build cache of pimrl's own DPU kernels (``kernels/*.c``, built by :mod:`pimrl.dpurt.cc`).

One built file per variant, under :func:`build_dir`, named by the caller (the variant and its
build flags) and suffixed with :func:`sources_key`: a hash of the kernel's own sources and of
every file :func:`pimrl.dpurt.cc.build` links into a program (:func:`linked_sources`). An
edit to any of them gives a new name, so a stale kernel is never loaded; both rooms that
build kernels (:mod:`pimrl.rlkernel.cprogram`, :mod:`pimrl.online.cprogram`) go through
:func:`cached_build`.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pimrl.dpurt import cc
from pimrl.resources import KERNEL_DIR


def linked_sources() -> list:
    """Every file besides a kernel's own sources that goes into a program built by
    :func:`pimrl.dpurt.cc.build`: the runtime and its linker script, the DPU headers, the
    system library (``host/dpurt/lib/*.c``, linked into every program), and the compiler
    driver and instrumenter that turn them into code."""
    return [cc.RUNTIME_SRC, cc.LINKER_SCRIPT, *cc.TOOL_SOURCES,
            *sorted(cc.INCLUDE.glob("*.h")), *sorted(cc.SYSLIB_SRC.glob("*.c"))]


def sources_key(sources) -> str:
    """12 hex digits of a SHA-256 over ``sources`` (a kernel's own files, in order) and
    :func:`linked_sources`."""
    h = hashlib.sha256()
    for p in (*sources, *linked_sources()):
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:12]


def build_dir() -> Path:
    """Where built kernels are kept: ``PIMRL_KERNEL_BUILD``, else ``kernels/build``, else
    (a read-only install) a folder under the DPU runtime's cache."""
    env = os.environ.get("PIMRL_KERNEL_BUILD")
    p = Path(env) if env else KERNEL_DIR / "build"
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError:
        p = cc.cache_dir() / "kernels"
        p.mkdir(parents=True, exist_ok=True)
    return p


def cached_build(name: str, source: Path, depends=(), nr_tasklets: int | None = None,
                 defines: dict | None = None, opt: str = "-O2") -> Path:
    """The program built from ``source`` (with ``kernels/`` on the include path), as
    ``<build_dir>/<name>-<key>``; built once per key, the key covering ``source``, the
    headers it includes (``depends``) and :func:`linked_sources`."""
    out = build_dir() / f"{name}-{sources_key([source, *depends])}"
    if not out.exists():
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        cc.build([source], tmp, nr_tasklets=nr_tasklets, defines=defines, opt=opt,
                 include_dirs=[KERNEL_DIR])
        os.replace(tmp, out)
    return out


# ------------------------------------------------------------- builds by the SDK's compiler
def sdk_compiler(compiler: str = "dpu-upmem-dpurte-clang") -> tuple:
    """``(path, key)`` of the DPU compiler ``compiler`` on PATH (on a UPMEM machine the
    SDK's), ``key`` naming it and its version (its file's modification time) for the build
    cache; FileNotFoundError saying how to put it there."""
    import shutil

    found = shutil.which(compiler)
    if found is None:
        raise FileNotFoundError(f"{compiler}: not found on PATH (load the UPMEM SDK's "
                                "environment: source <sdk>/upmem_env.sh)")
    real = Path(found).resolve()
    return found, f"{real}:{real.stat().st_mtime_ns}"


def build_once(out: Path, line_for) -> Path:
    """``out``, made by running the command ``line_for(tmp)`` (which writes ``tmp``) once:
    built beside it and renamed into place, so a failed or interrupted build leaves none."""
    import subprocess

    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        line = line_for(tmp)
        done = subprocess.run(line, capture_output=True, text=True)
        if done.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"{' '.join(line)} failed (exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-2000:]}")
        os.replace(tmp, out)
    return out
