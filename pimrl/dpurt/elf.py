"""A minimal ELF64 little-endian reader: section headers and the static symbol table; and
the integrity seal of the DPU programs pimrl builds.

The reader checks every offset against the file: a truncated or damaged file raises
:class:`ElfError` (never ``struct.error`` or ``IndexError``).

**The seal.** ``dpu-upmem-dpurte-clang`` appends :data:`SEAL_MAGIC` and the SHA-256 of every
byte before the digest (the ELF file and the magic) to each program it links: 48 bytes after
the end of the ELF file, which the dynamic loader never reads (it maps what the program
headers name) and this reader ignores (every offset is from the start). :func:`unseal`
checks it before a program is loaded: a flipped byte anywhere, a truncated file or one
edited after the build fails the check, instead of running damaged native code.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

#: Written after the ELF file, then the SHA-256 digest of everything before the digest.
SEAL_MAGIC = b"pimrl-dpu-sha256"
SEAL_BYTES = len(SEAL_MAGIC) + 32

SHT_NOBITS = 8
SHT_SYMTAB = 2
STT_OBJECT, STT_FUNC = 1, 2
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2


class ElfError(ValueError):
    pass


@dataclass
class Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass
class ElfSymbol:
    name: str
    value: int
    size: int
    bind: int
    type: int
    shndx: int


class Elf:
    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF":
            raise ElfError("not an ELF file")
        if len(data) < 64:
            raise ElfError(f"truncated: {len(data)} bytes, shorter than an ELF header")
        if data[4] != 2 or data[5] != 1:
            raise ElfError("not a 64-bit little-endian ELF file")
        self.data = data
        try:
            self._parse(data)
        except (struct.error, IndexError, ValueError, UnicodeError) as exc:
            if isinstance(exc, ElfError):
                raise
            raise ElfError(f"damaged or truncated ELF file ({exc})") from None

    def _parse(self, data: bytes) -> None:
        size = len(data)
        (e_type, e_machine, _, _, _, e_shoff, _, _, _, _, e_shentsize, e_shnum,
         e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        self.type, self.machine = e_type, e_machine
        if e_shnum and (e_shentsize < 64 or e_shoff + e_shnum * e_shentsize > size):
            raise ElfError(f"truncated or damaged: {e_shnum} section headers at offset "
                           f"{e_shoff} do not fit in its {size} bytes")
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
               for i in range(e_shnum)]
        for i, r in enumerate(raw):
            if r[1] != SHT_NOBITS and r[1] != 0 and r[4] + r[5] > size:
                raise ElfError(f"truncated or damaged: section {i} ({r[5]} bytes at offset "
                               f"{r[4]}) runs past the end of its {size} bytes")
        if not raw:
            self.sections, self._raw, self.symbols = [], raw, []
            return
        if e_shstrndx >= len(raw):
            raise ElfError(f"damaged: section name table index {e_shstrndx} of {len(raw)}")
        shstr = raw[e_shstrndx]
        names = data[shstr[4]:shstr[4] + shstr[5]]

        def cstr(table: bytes, off: int) -> str:
            end = table.find(b"\0", off)
            if off >= len(table) or end < 0:
                raise ElfError(f"damaged: a name at offset {off} outside its string table")
            return table[off:end].decode("utf-8", "replace")

        self.sections = [Section(cstr(names, r[0]), r[1], r[2], r[3], r[4], r[5]) for r in raw]
        self._raw = raw
        self.symbols: list[ElfSymbol] = []
        for i, r in enumerate(raw):
            if r[1] != SHT_SYMTAB:
                continue
            if r[6] >= len(raw):
                raise ElfError(f"damaged: symbol table {i} names string table {r[6]}")
            strtab = raw[r[6]]
            strs = data[strtab[4]:strtab[4] + strtab[5]]
            entsize = r[9] or 24
            if entsize < 24:
                raise ElfError(f"damaged: symbol entries of {entsize} bytes")
            for k in range(r[5] // entsize):
                st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
                    "<IBBHQQ", data, r[4] + k * entsize)
                self.symbols.append(ElfSymbol(cstr(strs, st_name), st_value, st_size,
                                              st_info >> 4, st_info & 15, st_shndx))

    def section(self, name: str) -> Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def contents(self, name: str) -> bytes:
        s = self.section(name)
        if s is None:
            raise ElfError(f"no section {name}")
        if s.type == SHT_NOBITS:
            return bytes(s.size)
        return self.data[s.offset:s.offset + s.size]

    def symbol(self, name: str) -> ElfSymbol | None:
        for s in self.symbols:
            if s.name == name:
                return s
        return None


def seal(data: bytes) -> bytes:
    """``data`` (a linked program) with its seal appended."""
    body = data + SEAL_MAGIC
    return body + hashlib.sha256(body).digest()


def is_sealed(data: bytes) -> bool:
    """The file ends with a seal (whether or not its digest matches)."""
    return len(data) > SEAL_BYTES and data[-SEAL_BYTES:-32] == SEAL_MAGIC


def unseal(data: bytes) -> str:
    """``"ok"`` (sealed, digest matches), ``"damaged"`` (sealed, digest differs: a byte
    changed since the build) or ``"unsealed"`` (no seal: truncated, or not linked by
    pimrl's builder of this version)."""
    if not is_sealed(data):
        return "unsealed"
    return "ok" if hashlib.sha256(data[:-32]).digest() == data[-32:] else "damaged"
