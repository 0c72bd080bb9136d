"""Registries of named implementations, chosen by name from the command line or a config.

A :class:`Registry` maps each name to its implementation (``registry[name]`` is the factory
or function, as a plain dict would give) and keeps a :class:`Entry` record per name: its
description and flags, which ``pimrl list`` and ``--help`` print. Adding an implementation is
one :meth:`Registry.add` call where the implementation lives.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entry:
    """One registered implementation."""

    name: str
    description: str
    factory: object
    flags: dict = field(default_factory=dict)


class Registry(dict):
    """name -> factory, with an :class:`Entry` per name in :attr:`entries`."""

    def __init__(self, title: str):
        super().__init__()
        self.title = title
        self.entries: dict = {}

    def add(self, name: str, factory, description: str, **flags) -> object:
        if name in self:
            raise ValueError(f"{self.title}: {name!r} is registered already")
        self[name] = factory
        self.entries[name] = Entry(name, description, factory, flags)
        return factory

    def copy(self) -> "Registry":
        """A registry with the same entries (to extend without changing this one)."""
        other = Registry(self.title)
        for e in self.entries.values():
            other.add(e.name, e.factory, e.description, **e.flags)
        return other

    def describe(self) -> list:
        """(name, description) of every entry, in registration order."""
        return [(e.name, e.description) for e in self.entries.values()]
