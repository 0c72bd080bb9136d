"""What ``dpu_load(set, path, &program)`` loads in the simulator, for every host API (the
``dpu`` package and the C host shim).

``path`` is one of:

- a built-in program name, ``pimrl:<program>?key=value&...`` (:data:`BUILTINS`):

  - ``pimrl:swiftrl?states=S&actions=A[&tasklets=16&algo=q&dtype=fp32&sampling=seq&block=2048&visits=1]``
    the SwiftRL kernel (:class:`pimrl.rlkernel.program.RlProgram`): ``algo`` q | sarsa,
    ``dtype`` fp32 | int32, ``sampling`` seq | str | ran, ``block`` the DMA block in bytes,
    ``visits`` 1 to count visits per (s, a) (the weighted aggregator needs them; each count
    costs DPU time) or 0;
  - ``pimrl:diag[?cycles=N]`` a tiny diagnostic program for tests of the host API (symbols
    in WRAM, MRAM and IRAM; it counts its launches, writes a log, faults on request);

  An application's program is registered by the dotted name of its factory
  (``"package.module:function"``), imported on its first load: the simulator imports no
  application;

- a file: a missing one gives ``DPU_ERR_ELF_NO_SUCH_FILE``. A file whose content starts with
  ``pimrl:`` is a *program descriptor* naming a built-in program (so a host program can keep
  the file path it uses on real hardware). Other files go through :data:`FILE_LOADERS`, the
  hook where loading real DPU programs (ELF files from the C kernels) plugs in; until then
  they give ``DPU_ERR_ELF_INVALID_FILE``;

- or the bytes of one of these (``dpu_load_from_memory``, ``DpuSet.load(binary=bytes)``):
  :func:`load_program_data`, which writes no file.
"""
from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np

from pimrl.io import atomic_write_bytes
from pimrl.pim.errors import fail
from pimrl.registry import Registry
from pimrl.pim.system import (DPU_MRAM_HEAP_POINTER_NAME, IRAM_BASE, MRAM_BASE, DpuProgram,
                              LaunchResult, Symbol)

BUILTIN_PREFIX = "pimrl:"
DESCRIPTOR_MAX_BYTES = 4096


def parse_options(name: str, query: str, allowed: dict) -> dict:
    """``key=value&...`` -> dict of typed values (``allowed``: key -> type); unknown keys and
    bad values are errors (``DPU_ERR_ELF_INVALID_FILE``) naming ``pimrl:NAME``."""
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
    opts = parse_options("diag", query, {"cycles": int})
    return DiagProgram(hardware, opts.get("cycles", 1000))


#: Built-in programs by name (``pimrl:NAME?query``): a factory (query string, hardware) ->
#: DpuProgram, or the dotted name of one (``"package.module:function"``), imported on its
#: first load, so that an application's program is registered without the simulator
#: importing the application.
BUILTINS = Registry("built-in DPU programs")
BUILTINS.add("swiftrl", "pimrl.rlkernel.builtin:swiftrl_builtin",
             "the SwiftRL kernel: states=S&actions=A[&tasklets=16&algo=q&"
             "dtype=fp32&sampling=seq&block=2048&visits=1]")
BUILTINS.add("diag", _diag, "a diagnostic program that spends cycles=N cycles per launch")


def resolve(factory):
    """``factory`` itself, or the function a dotted name ``"package.module:function"`` names."""
    if not isinstance(factory, str):
        return factory
    module, _, attr = factory.partition(":")
    return getattr(importlib.import_module(module), attr)


def builtin_program(spec: str, hardware) -> DpuProgram:
    """``spec`` without the ``pimrl:`` prefix, e.g. ``swiftrl?states=16&actions=4``."""
    name, _, query = spec.strip().partition("?")
    if name not in BUILTINS:
        raise fail("ELF_NO_SUCH_FILE", f"{BUILTIN_PREFIX}{name}: no such built-in program "
                   f"(built-in: {', '.join(BUILTIN_PREFIX + n for n in BUILTINS)})")
    return resolve(BUILTINS[name])(query, hardware)


def _descriptor_loader(path: Path, hardware):
    """A small text file whose content is a ``pimrl:`` program name."""
    with open(path, "rb") as f:
        head = f.read(DESCRIPTOR_MAX_BYTES + 1)
    if not head.startswith(BUILTIN_PREFIX.encode()) or len(head) > DESCRIPTOR_MAX_BYTES:
        return None
    text = head.decode("utf-8", "replace").strip().splitlines()[0]
    return builtin_program(text[len(BUILTIN_PREFIX):], hardware)


#: DPU programs built by ``dpu-upmem-dpurte-clang`` (:mod:`pimrl.dpurt`, which stands on the
#: simulator), from a file and from a program's bytes: imported on the first load.
DPURT_FILE_LOADER = "pimrl.dpurt.program:file_loader"
DPURT_DATA_LOADER = "pimrl.dpurt.program:data_loader"

#: Loaders tried in order for a file path, each a function (path, hardware) or its dotted
#: name (:func:`resolve`): each returns a DpuProgram, or None if the file is not its kind.
FILE_LOADERS: list = [_descriptor_loader, DPURT_FILE_LOADER]


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
            program = resolve(loader)(p, hardware)
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
    program = resolve(DPURT_DATA_LOADER)(data, hardware, name)
    if program is not None:
        return program
    others = [f for f in FILE_LOADERS if f not in (_descriptor_loader, DPURT_FILE_LOADER)]
    if others:
        with tempfile.TemporaryDirectory(prefix="pimrl-dpu-program-") as tmp:
            path = atomic_write_bytes(os.path.join(tmp, "program.dpu"), data)
            for loader in others:
                program = resolve(loader)(Path(path), hardware)
                if program is not None:
                    return program
    raise fail("ELF_INVALID_FILE", f"{name}: not a program the simulator can run: build DPU "
               "programs with pimrl's dpu-upmem-dpurte-clang (UPMEM's own DPU ELF binaries "
               "need the real hardware)")
