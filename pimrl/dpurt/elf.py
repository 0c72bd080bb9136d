"""A minimal ELF64 little-endian reader: section headers and the static symbol table."""
from __future__ import annotations

import struct
from dataclasses import dataclass

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
        if data[4] != 2 or data[5] != 1:
            raise ElfError("not a 64-bit little-endian ELF file")
        self.data = data
        (e_type, e_machine, _, _, _, e_shoff, _, _, _, _, e_shentsize, e_shnum,
         e_shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        self.type, self.machine = e_type, e_machine
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
               for i in range(e_shnum)]
        shstr = raw[e_shstrndx]
        names = data[shstr[4]:shstr[4] + shstr[5]]

        def cstr(table: bytes, off: int) -> str:
            end = table.index(b"\0", off)
            return table[off:end].decode("utf-8", "replace")

        self.sections = [Section(cstr(names, r[0]), r[1], r[2], r[3], r[4], r[5]) for r in raw]
        self._raw = raw
        self.symbols: list[ElfSymbol] = []
        for i, r in enumerate(raw):
            if r[1] != SHT_SYMTAB:
                continue
            strtab = raw[r[6]]
            strs = data[strtab[4]:strtab[4] + strtab[5]]
            entsize = r[9] or 24
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
