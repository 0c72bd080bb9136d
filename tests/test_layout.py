"""The layout: the command line is a front end the library never imports."""
from __future__ import annotations

import ast
from pathlib import Path

import pimrl

PKG = Path(pimrl.__file__).resolve().parent


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_only_the_cli_package_imports_the_cli():
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] in ("cli", "__main__.py"):
            continue
        offenders += [f"pimrl/{rel.as_posix()}: {m}" for m in _imports(path)
                      if m == "pimrl.cli" or m.startswith("pimrl.cli.")]
    assert not offenders, offenders


def test_every_command_module_lives_in_the_cli_package():
    assert not [p for p in PKG.rglob("cli.py")]
