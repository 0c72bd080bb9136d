"""``dpu-upmem-dpurte-clang`` for pimrl: builds a UPMEM DPU program for host execution.

Takes the SDK compiler's usual command line (``-DNR_TASKLETS=16 -O2 -o task task.c``, also
``-c`` then a separate link, ``-I``, ``-D``, ``-W``, ``-g``, ``-std=``) and produces a shared
object the pimrl loader (:func:`pimrl.dpurt.load_program`, the shim's ``dpu_load``) runs:

1. each C source is compiled by the host compiler to assembly with pimrl's DPU headers
   (``host/dpurt/include``: ``defs.h``, ``mram.h``, ``alloc.h``, ``stdio.h``...) first on
   the include path and flags that keep the code DPU-like (no vectorisation, no fused
   multiply-add, no red zone);
2. the assembly gets a counter at every basic block (:mod:`pimrl.dpurt.instrument`);
3. the objects are linked with the runtime (``host/dpurt/src/dpurt.c``) into a shared
   object with a linker script that keeps the WRAM image (``.data`` .. ``.bss``) contiguous;
   a symbol nothing defines fails the link (``-z defs``), named with the line of its call
   (:func:`undefined_symbols_message`), as the SDK's linker fails it;
4. the linked file is sealed (:func:`pimrl.dpurt.elf.seal`: a SHA-256 of its bytes appended),
   so that a load refuses a file damaged or truncated since (it is native host code).

Flags for the DPU toolchain only (``-mcpu=...``, ``-flto``, ``-Wl,...``) are ignored with a
note. ``PIMRL_DPURT_CC`` names the host compiler (default ``gcc``); ``PIMRL_DPURT_CACHE``
where the runtime object is cached; ``-v`` prints the commands.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pimrl.dpurt.elf import seal
from pimrl.dpurt.instrument import instrument

from pimrl.resources import ROOT as REPO    # the checkout, or the installed package's data
INCLUDE = REPO / "host" / "dpurt" / "include"
RUNTIME_SRC = REPO / "host" / "dpurt" / "src" / "dpurt.c"
LINKER_SCRIPT = REPO / "host" / "dpurt" / "src" / "dpurt.ld"
#: The system library in DPU C (mram_unaligned, buddy_alloc, fsb_allocator, wramfifo):
#: built and instrumented like a program's sources, linked as an archive (only what a
#: program uses, as from the SDK's runtime library).
SYSLIB_SRC = REPO / "host" / "dpurt" / "lib"
ABI = 4
#: The Python that turns DPU C into code (this driver, the instrumenter and its x86 pricing):
#: part of every build cache's key.
TOOL_SOURCES = [Path(__file__), Path(__file__).with_name("instrument.py"),
                Path(__file__).with_name("x86.py")]
#: The SDK's limits, checked at build time as its compiler and linker do.
MAX_TASKLETS = 24

#: Flags every DPU source is compiled with (after the user's, so they win).
CODE_FLAGS = ["-fPIC", "-fno-semantic-interposition", "-mno-red-zone", "-fno-tree-vectorize", "-fno-tree-slp-vectorize",
              "-ffp-contract=off", "-fno-stack-protector", "-fcf-protection=none",
              "-fno-asynchronous-unwind-tables", "-fno-plt", "-Wno-int-to-pointer-cast",
              "-Wno-pointer-to-int-cast", "-D__PIMRL_DPURT__=1",
              # loops of a small constant trip count unrolled completely, as the DPU
              # toolchain's clang -O2 does (gcc -O2 only when the code does not grow); trip
              # counts not inferred from array bounds, so an overrunning loop still runs
              # (and faults) as on the DPU
              "-fpeel-loops", "-fno-aggressive-loop-optimizations",
              # the DPU compiler's own builtins (__builtin_dpu_tid ...) need no header
              "-include", str(INCLUDE / "dpurt_builtins.h")]
#: Line tables (no code change) so that the linker names the line of an undefined call;
#: added when the user's flags choose no -g level.
LINE_INFO_FLAGS = ["-g1"]
#: ``-z defs``: a symbol no object, the runtime or the C library defines fails the link, as
#: the SDK's linker fails it, not the load.
LINK_FLAGS = ["-shared", "-Wl,-Bsymbolic", "-Wl,-z,now", "-Wl,-z,noexecstack", "-Wl,-z,defs"]
#: Linked after the program: the C and math libraries (the runtime's memcpy, memset ...; a
#: program's sqrt, which on the host resolves like any libc call).
LINK_LIBS = ["-lm"]


class BuildError(RuntimeError):
    pass


def host_cc() -> str:
    return os.environ.get("PIMRL_DPURT_CC") or os.environ.get("PIMRL_CC") or "gcc"


def have_compiler() -> bool:
    return shutil.which(host_cc()) is not None


def cache_dir() -> Path:
    env = os.environ.get("PIMRL_DPURT_CACHE")
    if env:
        p = Path(env)
    else:
        p = REPO / "host" / "dpurt" / "build"
        try:
            p.mkdir(parents=True, exist_ok=True)
            if not os.access(p, os.W_OK):
                raise OSError
        except OSError:
            p = Path(tempfile.gettempdir()) / f"pimrl-dpurt-{os.getuid()}"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _run(cmd, verbose=False, what="compile"):
    if verbose:
        print(" ".join(shlex.quote(str(c)) for c in cmd), file=sys.stderr)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): "
                         + " ".join(shlex.quote(str(c)) for c in cmd) + "\n" + proc.stderr)
    if proc.stdout:
        sys.stdout.write(proc.stdout)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    return proc


def runtime_object(verbose=False) -> Path:
    """The runtime compiled once per source version (cached)."""
    src = RUNTIME_SRC.read_bytes()
    cc = host_cc()
    key = hashlib.sha256(src + cc.encode() + b"abi%d" % ABI).hexdigest()[:16]
    out = cache_dir() / f"dpurt-{key}.o"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp.o")
        _run([cc, "-O2", "-fPIC", "-fno-stack-protector", "-fcf-protection=none",
              "-fvisibility=hidden", "-Wall", "-c", RUNTIME_SRC, "-o", tmp], verbose,
             "building the pimrl DPU runtime")
        os.replace(tmp, out)
    return out


def syslib_archive(verbose=False) -> Path:
    """The system library (host/dpurt/lib/*.c), instrumented, as a static archive (cached
    per source version)."""
    h = hashlib.sha256(host_cc().encode() + b"abi%d" % ABI)
    for f in sorted(SYSLIB_SRC.glob("*.c")) + sorted(INCLUDE.glob("*.h")) + TOOL_SOURCES:
        h.update(f.name.encode() + f.read_bytes())
    out = cache_dir() / f"libdpusys-{h.hexdigest()[:16]}.a"
    if out.exists():
        return out
    ar = os.environ.get("AR") or "ar"
    with tempfile.TemporaryDirectory(prefix="dpurt-") as tmp:
        objs = []
        for src in sorted(SYSLIB_SRC.glob("*.c")):
            obj = Path(tmp) / (src.stem + ".o")
            # the SDK's routines are tasklet-safe: here each runs as one step (no preemption)
            compile_source(src, obj, ["-O2", "-Wall", "-Wextra", "-Werror"], verbose, preempt=False)
            objs.append(obj)
        tmp_a = Path(tmp) / "lib.a"
        _run([ar, "rcs", tmp_a, *objs], verbose, "archiving the DPU system library")
        part = out.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(tmp_a, part)
        os.replace(part, out)
    return out


def check_tasklets(flags) -> None:
    """NR_TASKLETS outside [1, 24] is refused at build time, as by the SDK."""
    value = _defines(flags).get("NR_TASKLETS")
    if value is None:
        return
    try:
        n = int(value, 0)
    except ValueError:
        return                       # an expression: the DPU compiler would evaluate it
    if not 1 <= n <= MAX_TASKLETS:
        raise BuildError(f"NR_TASKLETS={value}: a DPU runs 1 to {MAX_TASKLETS} tasklets")


def check_wram(path: Path, flags, name: str | None = None) -> None:
    """The built program's WRAM (globals + NR_TASKLETS stacks) must fit the DPU's 64 KiB, as
    the SDK's linker requires; the atomic bits are checked by the linker script."""
    from pimrl.dpurt.elf import Elf
    from pimrl.pim.hardware import get_hardware

    hw = get_hardware()
    elf = Elf(path.read_bytes())
    secs = [x for x in (elf.section(".data"), elf.section(".bss")) if x is not None]
    if not secs:
        return
    image = max(x.end for x in secs) - min(x.addr for x in secs)
    defs = _defines(flags)
    n = int(defs["NR_TASKLETS"], 0) if defs.get("NR_TASKLETS", "").isdigit() else 1
    stack = (int(defs["STACK_SIZE_DEFAULT"]) if defs.get("STACK_SIZE_DEFAULT", "").isdigit()
             else hw.stack_bytes_per_tasklet)
    need = image + n * stack
    if need > hw.wram_bytes:
        raise BuildError(f"{name or path.name}: region `wram' overflowed by {need - hw.wram_bytes} bytes: {image} B of "
                         f"WRAM globals + {n} tasklet stacks x {stack} B = {need} B > "
                         f"{hw.wram_bytes} B of WRAM")


def _defines(flags) -> dict:
    out = {}
    it = iter(flags)
    for f in it:
        if f == "-D":
            f = "-D" + next(it, "")
        if f.startswith("-D"):
            name, _, value = f[2:].partition("=")
            out[name] = value if _ else "1"
    return out


def compile_source(src: Path, obj: Path, flags: list, verbose=False, preempt=True) -> None:
    """One C source -> instrumented object (``preempt=False``: its code never gives way to
    another tasklet between runtime calls, see instrument.PROBE_NO_PREEMPT)."""
    cc = host_cc()
    with tempfile.TemporaryDirectory(prefix="dpurt-") as tmp:
        asm = Path(tmp) / (src.stem + ".s")
        line_info = [] if any(f.startswith("-g") for f in flags) else LINE_INFO_FLAGS
        _run([cc, "-I", INCLUDE, *flags, *CODE_FLAGS, *line_info, "-S", src, "-o",
              asm], verbose)
        text, info = instrument(asm.read_text(), src.name, preempt)
        defs = _defines(flags)
        meta = {"nr_tasklets": int(defs["NR_TASKLETS"]) if defs.get("NR_TASKLETS", "").isdigit() else None,
                "stack_size": int(defs["STACK_SIZE_DEFAULT"]) if defs.get("STACK_SIZE_DEFAULT", "").isdigit() else None}
        inst = Path(tmp) / (src.stem + ".dpurt.s")
        inst.write_text(text + _info_section("dpurt_tuinfo", {"tu": src.name, **meta}))
        _run([cc, "-c", inst, "-o", obj], verbose, "assembling")


def _info_section(name: str, payload: dict) -> str:
    text = json.dumps(payload, separators=(",", ":")) + "\n"
    esc = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'\t.section\t{name},"",@progbits\n\t.ascii\t"{esc}"\n\t.text\n'


def link(objects: list, out: Path, flags: list, verbose=False) -> None:
    cc = host_cc()
    defs = _defines(flags)
    meta = {"abi": ABI, "nr_tasklets": int(defs["NR_TASKLETS"]) if defs.get("NR_TASKLETS", "").isdigit() else None,
            "stack_size": int(defs["STACK_SIZE_DEFAULT"]) if defs.get("STACK_SIZE_DEFAULT", "").isdigit() else None}
    with tempfile.TemporaryDirectory(prefix="dpurt-") as tmp:
        info_s = Path(tmp) / "dpurt_info.s"
        info_s.write_text(_info_section("dpurt_info", meta))
        info_o = Path(tmp) / "dpurt_info.o"
        _run([cc, "-c", info_s, "-o", info_o], verbose, "assembling")
        tmp_out = Path(tmp) / "program.so"
        cmd = [cc, *LINK_FLAGS, f"-Wl,-T,{LINKER_SCRIPT}", "-o", tmp_out, *objects,
               syslib_archive(verbose), runtime_object(verbose), info_o, *LINK_LIBS]
        try:
            _run(cmd, verbose, "linking")
        except BuildError as exc:
            undefined = undefined_symbols_message(str(exc))
            if undefined is None:
                raise
            raise BuildError(undefined) from None
        check_wram(tmp_out, flags, str(out))
        out.parent.mkdir(parents=True, exist_ok=True)
        # Sealed (the loader checks it), then written whole: a reader never sees half a file.
        part = out.with_name(f".{out.name}.{os.getpid()}.part")
        try:
            part.write_bytes(seal(tmp_out.read_bytes()))
            os.chmod(part, 0o755)
            os.replace(part, out)
        finally:
            part.unlink(missing_ok=True)


_LD_PREFIX = re.compile(r"^\S*ld(?:\.\w+)?: (?:error: )?")
_GNU_UNDEFINED = re.compile(r"undefined reference to [`']([^'`]+)'")
_GNU_IN_FUNCTION = re.compile(r"in function [`']([^'`]+)'")
_LLD_UNDEFINED = re.compile(r"undefined symbol: (\S+)")
_LLD_REFERENCED = re.compile(r">>> referenced by (.+)")
_MAX_REFERENCES = 3


def _reference(location: str, function: str | None) -> str:
    """``file:line`` (with line tables), else the file the linker names (``f.c:(.text+0x1a)``
    without them), and the calling function."""
    location = location.strip()
    m = re.fullmatch(r"(.*?):\(.*\)", location)
    if m:
        location = m.group(1)
    return location + (f" (in function {function})" if function else "")


def _builtins_provided() -> set:
    """The instruction builtins <built_ins.h> defines (dpurt_builtins.h's macros)."""
    text = (INCLUDE / "dpurt_builtins.h").read_text()
    return set(re.findall(r"^#define (__builtin_\w+)\(", text, re.M))


def undefined_symbols_message(linker_output: str) -> str | None:
    """The linker's undefined symbols as the SDK's linker reports them (``undefined symbol:
    NAME`` then ``>>> referenced by FILE:LINE``), each with what defines it; None when the
    link failed for another reason. Reads GNU ld's and lld's messages."""
    refs: dict = {}
    function = None
    for line in linker_output.splitlines():
        text = _LD_PREFIX.sub("", line.strip())
        fn = _GNU_IN_FUNCTION.search(text)
        if fn:
            function = fn.group(1)
            continue
        gnu = _GNU_UNDEFINED.search(text)
        if gnu:
            location = text[:gnu.start()].rstrip(": ")
            refs.setdefault(gnu.group(1), []).append(_reference(location, function))
            continue
        lld = _LLD_UNDEFINED.search(text)
        if lld:
            current = lld.group(1)
            refs.setdefault(current, [])
            continue
        ref = _LLD_REFERENCED.search(text)
        if ref and refs:
            refs[list(refs)[-1]].append(_reference(ref.group(1), None))
    if not refs:
        return None
    provided = _builtins_provided()
    out = []
    for sym, where in refs.items():
        out.append(f"undefined symbol: {sym}")
        seen = list(dict.fromkeys(where))
        out += [f">>> referenced by {w}" for w in seen[:_MAX_REFERENCES]]
        if len(seen) > _MAX_REFERENCES:
            out.append(f">>> referenced {len(seen) - _MAX_REFERENCES} more times")
        if sym in provided:
            out.append(">>> a DPU builtin of <built_ins.h>: include <built_ins.h>")
        elif sym.startswith("__builtin_"):
            out.append(">>> a DPU builtin the pimrl DPU runtime does not provide "
                       "(docs/dpu-runtime.md, \"DPU builtins\")")
        elif sym == "main":
            out.append(">>> a DPU program defines main()")
        else:
            out.append(">>> defined by no source of the program, nor by the DPU system library, "
                       "the pimrl runtime or the C library")
    return "\n".join(out)


_IGNORED_PREFIXES = ("-mcpu", "-march", "-mtune", "-flto", "-Wl,", "-fuse-ld", "--target",
                     "-target", "-mno-", "-mllvm", "-save-temps")
_WITH_ARG = {"-o", "-I", "-D", "-U", "-include", "-isystem", "-x", "-MF", "-MT", "-MQ", "-L", "-l"}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "dpu-upmem-dpurte-clang"
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: {prog} [-DNR_TASKLETS=n] [-O2] [-I dir] [-c] -o OUTPUT SOURCE.c...\n"
              "pimrl: builds a UPMEM DPU program for the pimrl simulator (host execution).")
        return 0 if argv else 1
    if argv[0] in ("--version", "-v") and len(argv) == 1:
        print(f"{prog} (pimrl DPU runtime, abi {ABI}) over {host_cc()}")
        return 0
    out = None
    compile_only = False
    verbose = False
    flags, sources, objects = [], [], []
    it = iter(argv)
    for a in it:
        if a == "-o":
            out = next(it, None)
        elif a == "-c":
            compile_only = True
        elif a == "-v":
            verbose = True
        elif a in ("-target", "--target"):        # the target as the next word
            target = next(it, "")
            if verbose:
                print(f"{prog}: note: ignoring DPU toolchain flag {a} {target}", file=sys.stderr)
        elif a in _WITH_ARG:
            val = next(it, "")
            if a in ("-L", "-l"):
                continue
            flags += [a, val]
        elif a.startswith(_IGNORED_PREFIXES) or a.startswith("-l") or a.startswith("-L"):
            if verbose:
                print(f"{prog}: note: ignoring DPU toolchain flag {a}", file=sys.stderr)
        elif a.startswith("-"):
            flags.append(a)
        elif a.endswith((".c", ".C")):
            sources.append(Path(a))
        elif a.endswith((".o", ".obj", ".so")):       # .obj: CMake's object names
            objects.append(Path(a))
        elif a.endswith((".s", ".S")):
            print(f"{prog}: error: {a}: DPU assembly cannot run in the pimrl simulator; "
                  "write the kernel in C", file=sys.stderr)
            return 1
        else:
            print(f"{prog}: error: unknown input {a!r}", file=sys.stderr)
            return 1
    if not sources and not objects:
        print(f"{prog}: error: no input files", file=sys.stderr)
        return 1
    if not have_compiler():
        print(f"{prog}: error: no host C compiler ({host_cc()}) on PATH; pimrl needs one to "
              "run DPU programs (set PIMRL_DPURT_CC)", file=sys.stderr)
        return 1
    for s in sources:
        if not s.exists():
            print(f"{prog}: error: {s}: no such file", file=sys.stderr)
            return 1
    try:
        check_tasklets(flags)
        if compile_only:
            if out and len(sources) > 1:
                print(f"{prog}: error: -o with -c takes one source", file=sys.stderr)
                return 1
            for s in sources:
                compile_source(s, Path(out) if out else Path(s.stem + ".o"), flags, verbose)
            return 0
        with tempfile.TemporaryDirectory(prefix="dpurt-") as tmp:
            objs = list(objects)
            for i, s in enumerate(sources):
                o = Path(tmp) / f"{i}-{s.stem}.o"
                compile_source(s, o, flags, verbose)
                objs.append(o)
            link(objs, Path(out or "a.out"), flags, verbose)
    except BuildError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    return 0


def build(sources, output, nr_tasklets: int | None = None, defines: dict | None = None,
          opt: str = "-O2", include_dirs=(), extra_flags=(), verbose=False) -> Path:
    """Python API: build ``sources`` into the DPU program ``output`` (raises BuildError)."""
    flags = [opt]
    if nr_tasklets is not None:
        flags.append(f"-DNR_TASKLETS={int(nr_tasklets)}")
    for k, v in (defines or {}).items():
        flags.append(f"-D{k}" if v is None else f"-D{k}={v}")
    for d in include_dirs:
        flags += ["-I", str(d)]
    flags += list(extra_flags)
    srcs = [Path(s) for s in ([sources] if isinstance(sources, (str, Path)) else sources)]
    if not have_compiler():
        raise BuildError(f"no host C compiler ({host_cc()}) on PATH")
    output = Path(output)
    check_tasklets(flags)
    with tempfile.TemporaryDirectory(prefix="dpurt-") as tmp:
        objs = []
        for i, s in enumerate(srcs):
            o = Path(tmp) / f"{i}-{s.stem}.o"
            compile_source(s, o, flags, verbose)
            objs.append(o)
        link(objs, output, flags, verbose)
    return output


if __name__ == "__main__":
    sys.exit(main())
