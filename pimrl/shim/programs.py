"""What ``dpu_load(set, path, &program)`` loads in the simulator.

``path`` is one of:

- a built-in program name, ``pimrl:<program>?key=value&...``:

  - ``pimrl:swiftrl?states=S&actions=A[&tasklets=16&algo=q&dtype=fp32&sampling=seq&block=2048&visits=1]``
    the SwiftRL kernel (:class:`pimrl.rlkernel.program.RlProgram`): ``algo`` q | sarsa,
    ``dtype`` fp32 | int32, ``sampling`` seq | str | ran, ``block`` the DMA block in bytes,
    ``visits`` 1 to count visits per (s, a) (the weighted aggregator needs them; each count
    costs DPU time) or 0;
  - ``pimrl:diag[?cycles=N]`` a tiny diagnostic program for tests of the host API (symbols
    in WRAM, MRAM and IRAM; it counts its launches, writes a log, faults on request);

- a file: a missing one gives ``DPU_ERR_ELF_NO_SUCH_FILE``. A file whose content starts with
  ``pimrl:`` is a *program descriptor* naming a built-in program (so a host program can keep
  the file path it uses on real hardware). Other files go through :data:`FILE_LOADERS`, the
  hook where loading real DPU programs (ELF files from the C kernels) plugs in; until then
  they give ``DPU_ERR_ELF_INVALID_FILE``;

- or the bytes of one of these (``dpu_load_from_memory``, ``DpuSet.load(binary=bytes)``):
  :func:`load_program_data`, which writes no file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np

from pimrl.learners.variants import ALGO, DTYPE, SAMPLING
from pimrl.io import atomic_write_bytes
from pimrl.pim.errors import fail
from pimrl.registry import Registry
from pimrl.pim.system import (DPU_MRAM_HEAP_POINTER_NAME, IRAM_BASE, MRAM_BASE, DpuProgram,
                              LaunchResult, Symbol)

BUILTIN_PREFIX = "pimrl:"
DESCRIPTOR_MAX_BYTES = 4096


def _options(name: str, query: str, allowed: dict) -> dict:
    """``key=value&...`` -> dict of typed values; unknown keys and bad values are errors."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise fail("ELF_INVALID_FILE", f"{BUILTIN_PREFIX}{name}: cannot parse {query!r} as "
                   "key=value&key=value") from None
    out = {}
    for key, value in pairs:
        if key not in allowed:
            raise fail("ELF_INVALID_FILE", f"{BUILTIN_PREFIX}{name}: unknown parameter {key!r} "
                       f"(known: {', '.join(allowed)})")
        kind = allowed[key]
        try:
            out[key] = kind(value)
        except ValueError:
            raise fail("ELF_INVALID_FILE", f"{BUILTIN_PREFIX}{name}: {key}={value!r} is not "
                       f"a valid {kind.__name__}") from None
    return out


def _swiftrl(query: str, hardware):
    from pimrl.rlkernel.program import RlProgram

    opts = _options("swiftrl", query, {"states": int, "actions": int, "tasklets": int,
                                       "algo": str, "dtype": str, "sampling": str, "block": int,
                                       "visits": int})
    for key in ("states", "actions"):
        if key not in opts:
            raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl needs {key}=N (the Q-table is "
                       "states x actions)")
    if opts["states"] < 1 or not 1 <= opts["actions"] <= 255:
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: states must be >= 1 and actions in "
                   f"[1, 255]; got states={opts['states']}, actions={opts['actions']}")
    choices = {axis.name: axis.names for axis in (ALGO, DTYPE, SAMPLING)}
    for key, allowed in choices.items():
        if key in opts and opts[key] not in allowed:
            raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: {key}={opts[key]!r}; use one of "
                       f"{', '.join(allowed)}")
    if opts.get("visits", 1) not in (0, 1):
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: visits={opts['visits']}; use 0 or 1")
    try:
        return RlProgram(opts["states"], opts["actions"], opts.get("tasklets", 16),
                         opts.get("algo", "q"), opts.get("dtype", "fp32"),
                         opts.get("sampling", "seq"), opts.get("block", 2048), hardware,
                         count_visits=bool(opts.get("visits", 1)))
    except ValueError as exc:
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: {exc}") from None


class DiagProgram(DpuProgram):
    """A diagnostic DPU program for tests of the host API, one symbol in each memory.

    WRAM: ``counter`` (uint64, launches so far), ``fault`` (uint32: non-zero makes the next
    launch fault), ``words`` (64 x uint32, each incremented by every launch). MRAM:
    ``buffer`` (4 KiB) and the heap after it. IRAM: ``iram_code`` (64 B, not host-accessible
    in the simulator). Each launch appends a line to the DPU's log.
    """

    WORDS = 64

    def __init__(self, hardware, cycles: int = 1000):
        self.name = "pimrl-diag"
        self.cycles = float(cycles)
        mram = hardware.mram_bytes if hardware is not None else 64 << 20
        self.symbols = {
            "counter": Symbol("counter", 0, 8),
            "fault": Symbol("fault", 8, 4),
            "words": Symbol("words", 16, 4 * self.WORDS),
            "buffer": Symbol("buffer", MRAM_BASE, 4096),
            DPU_MRAM_HEAP_POINTER_NAME: Symbol(DPU_MRAM_HEAP_POINTER_NAME, MRAM_BASE + 4096,
                                               mram - 4096),
            "iram_code": Symbol("iram_code", IRAM_BASE, 64),
        }
        self.wram_used = 16 + 4 * self.WORDS
        self.mram_used = 4096

    def launch(self, alloc, slots) -> LaunchResult:
        slots = np.asarray(slots, dtype=np.int64)
        w = alloc.wram
        counter = w[slots, 0:8].copy().view(np.uint64)[:, 0] + np.uint64(1)
        w[slots, 0:8] = counter.view(np.uint8).reshape(-1, 8)
        words = w[slots, 16:16 + 4 * self.WORDS].copy().view(np.uint32) + np.uint32(1)
        w[slots, 16:16 + 4 * self.WORDS] = words.view(np.uint8).reshape(len(slots), -1)
        flags = w[slots, 8:12].copy().view(np.uint32)[:, 0]
        faults = []
        for s, c, f in zip(slots, counter, flags):
            line = f"diag: launch {int(c)} on DPU {int(s)}\n".encode()
            alloc.logs[int(s)] = alloc.logs.get(int(s), b"") + line
            if f:
                faults.append((int(s), 0, f"diag: the host set 'fault' to {int(f)}"))
        return LaunchResult(cycles=np.full(len(slots), self.cycles), faults=faults)


def _diag(query: str, hardware):
    opts = _options("diag", query, {"cycles": int})
    return DiagProgram(hardware, opts.get("cycles", 1000))


#: Built-in programs by name (``pimrl:NAME?query``): (query string, hardware) -> DpuProgram.
BUILTINS = Registry("built-in DPU programs")
BUILTINS.add("swiftrl", _swiftrl, "the SwiftRL kernel: states=S&actions=A[&tasklets=16&algo=q&"
             "dtype=fp32&sampling=seq&block=2048&visits=1]")
BUILTINS.add("diag", _diag, "a diagnostic program that spends cycles=N cycles per launch")


def builtin_program(spec: str, hardware) -> DpuProgram:
    """``spec`` without the ``pimrl:`` prefix, e.g. ``swiftrl?states=16&actions=4``."""
    name, _, query = spec.strip().partition("?")
    if name not in BUILTINS:
        raise fail("ELF_NO_SUCH_FILE", f"{BUILTIN_PREFIX}{name}: no such built-in program "
                   f"(built-in: {', '.join(BUILTIN_PREFIX + n for n in BUILTINS)})")
    return BUILTINS[name](query, hardware)


def _descriptor_loader(path: Path, hardware):
    """A small text file whose content is a ``pimrl:`` program name."""
    with open(path, "rb") as f:
        head = f.read(DESCRIPTOR_MAX_BYTES + 1)
    if not head.startswith(BUILTIN_PREFIX.encode()) or len(head) > DESCRIPTOR_MAX_BYTES:
        return None
    text = head.decode("utf-8", "replace").strip().splitlines()[0]
    return builtin_program(text[len(BUILTIN_PREFIX):], hardware)


def _dpurt_loader(path, hardware):
    """DPU programs built by ``dpu-upmem-dpurte-clang`` (pimrl.dpurt)."""
    from pimrl.dpurt.program import file_loader

    return file_loader(path, hardware)


#: Loaders tried in order for a file path: each returns a DpuProgram, or None if the file is
#: not its kind.
FILE_LOADERS: list = [_descriptor_loader, _dpurt_loader]


def load_program(path: str, hardware) -> DpuProgram:
    """The program ``dpu_load`` loads for ``path`` (raises DpuError as the SDK would)."""
    if path.startswith(BUILTIN_PREFIX):
        return builtin_program(path[len(BUILTIN_PREFIX):], hardware)
    p = Path(path)
    try:
        exists = bool(path) and "\0" not in path and p.exists()
        is_file = exists and p.is_file()
    except (OSError, ValueError) as exc:            # a name too long, a NUL in it ...
        raise fail("ELF_NO_SUCH_FILE", f"{path!r}: no such DPU program file ({exc})") from None
    if not exists:
        raise fail("ELF_NO_SUCH_FILE", f"{path!r}: no such DPU program file")
    if not is_file:
        raise fail("ELF_INVALID_FILE", f"{path!r} is not a file")
    try:
        for loader in FILE_LOADERS:
            program = loader(p, hardware)
            if program is not None:
                return program
    except OSError as exc:
        raise fail("ELF_INVALID_FILE", f"{path!r}: {exc}") from None
    raise fail("ELF_INVALID_FILE", f"{path!r}: not a program the simulator can run: build DPU "
               "programs with pimrl's dpu-upmem-dpurte-clang (UPMEM's own DPU ELF binaries "
               "need the real hardware), or load a built-in program, e.g. "
               "'pimrl:swiftrl?states=16&actions=4&tasklets=16&algo=q&dtype=fp32&sampling=seq'")


def load_program_data(data: bytes, hardware, name: str = "<program in memory>") -> DpuProgram:
    """The program ``dpu_load_from_memory`` loads for the bytes of a program file (``name``
    names it in messages). A descriptor or a pimrl DPU program is read from the bytes; only
    a file kind that an added :data:`FILE_LOADERS` hook reads goes through a private file,
    removed before this returns."""
    data = bytes(data)
    if data.startswith(BUILTIN_PREFIX.encode()) and len(data) <= DESCRIPTOR_MAX_BYTES:
        text = data.decode("utf-8", "replace").strip().splitlines()[0]
        return builtin_program(text[len(BUILTIN_PREFIX):], hardware)
    from pimrl.dpurt.program import data_loader

    program = data_loader(data, hardware, name)
    if program is not None:
        return program
    others = [f for f in FILE_LOADERS if f not in (_descriptor_loader, _dpurt_loader)]
    if others:
        with tempfile.TemporaryDirectory(prefix="pimrl-dpu-program-") as tmp:
            path = atomic_write_bytes(os.path.join(tmp, "program.dpu"), data)
            for loader in others:
                program = loader(Path(path), hardware)
                if program is not None:
                    return program
    raise fail("ELF_INVALID_FILE", f"{name}: not a program the simulator can run: build DPU "
               "programs with pimrl's dpu-upmem-dpurte-clang (UPMEM's own DPU ELF binaries "
               "need the real hardware)")
