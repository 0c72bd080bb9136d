"""One atomic writer (pimrl.io), used by every writer: a failed or interrupted write leaves
the destination as it was and no temporary file."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import numpy as np
import pytest

import pimrl.io
from pimrl.data import generate_dataset
from pimrl.envs import make

PKG = Path(pimrl.io.__file__).resolve().parent
#: The packages whose writers are scanned: pimrl and the top-level ``dpu`` package.
SCANNED = (PKG, PKG.parent / "dpu")

#: Files that write without pimrl.io, and why.
NOT_RESULTS = {
    "pimrl/io.py": "the writer itself",
    "pimrl/dpurt/cc.py": "build artefacts of the DPU compiler, in its private build folder",
    "pimrl/shim/build.py": "a self-test source in a temporary folder",
}


def _direct_writes(tree):
    """Calls that write a file directly: open(..., 'w'/'a'/'x'), write_text/write_bytes,
    savefig(path), np.save/savez/tofile (savefig and savez into the atomic writer's ``f``
    excepted)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name == "open" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            if any(c in str(node.args[1].value) for c in "wax"):
                yield node.lineno, "open for writing"
        elif name in ("write_text", "write_bytes", "tofile"):
            yield node.lineno, name
        elif name in ("savez", "savez_compressed") and not (
                node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "f"):
            yield node.lineno, name             # into the atomic writer's file f is fine
        elif name == "save" and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "np":
            yield node.lineno, "np.save"
        elif name == "savefig" and node.args and not (
                isinstance(node.args[0], ast.Name) and node.args[0].id == "f"):
            yield node.lineno, "savefig to a path"


def test_every_writer_uses_the_atomic_writer():
    found = []
    for path in sorted(p for root in SCANNED for p in root.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        if rel in NOT_RESULTS:
            continue
        for line, what in _direct_writes(ast.parse(path.read_text())):
            found.append(f"{rel}:{line}: {what}")
    assert len(SCANNED) == 2 and all((root / "__init__.py").is_file() for root in SCANNED)
    assert not found, "write through pimrl.io instead:\n" + "\n".join(found)


@pytest.fixture
def failing_fsync(monkeypatch):
    def fail(fd):
        raise OSError("disk on fire")

    monkeypatch.setattr(pimrl.io.os, "fsync", fail)


def test_swiftrl_export_is_atomic(tmp_path, failing_fsync):
    from pimrl.data.swiftrl import export_swiftrl

    dest = tmp_path / "out.txt"
    dest.write_text("old\n")
    with pytest.raises(OSError, match=f"{dest}: cannot write: disk on fire"):
        export_swiftrl(generate_dataset(make("FrozenLake-v1"), 100, 0), dest)
    assert dest.read_text() == "old\n" and os.listdir(tmp_path) == ["out.txt"]


def test_cost_doc_is_written_atomically(tmp_path, monkeypatch):
    from pimrl.calibration.doc import update_doc

    doc = tmp_path / "doc.md"
    old = "x\n<!-- BEGIN GENERATED: t -->\nold\n<!-- END GENERATED -->\n"
    doc.write_text(old)
    monkeypatch.setattr(pimrl.io.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("no")))
    with pytest.raises(OSError):
        update_doc(doc, regions={"t": "new"})
    assert doc.read_text() == old and os.listdir(tmp_path) == ["doc.md"]
    monkeypatch.undo()
    assert update_doc(doc, regions={"t": "new"}) is False
    assert "\nnew\n" in doc.read_text() and os.listdir(tmp_path) == ["doc.md"]


def test_figures_are_written_atomically(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    for name in ("a.png", "a.svg"):
        pimrl.io.atomic_savefig(fig, tmp_path / name)
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "a.svg").read_bytes()[:2000]

    def broken(self, *a, **k):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr(type(fig), "savefig", broken)
    with pytest.raises(RuntimeError):
        pimrl.io.atomic_savefig(fig, tmp_path / "b.png")
    plt.close(fig)
    assert sorted(os.listdir(tmp_path)) == ["a.png", "a.svg"]


def test_npy_round_trip_and_mode(tmp_path):
    old = os.umask(0o077)
    try:
        p = pimrl.io.atomic_save_npy(tmp_path / "q.npy", np.arange(6.0).reshape(2, 3))
    finally:
        os.umask(old)
    assert np.array_equal(np.load(p), np.arange(6.0).reshape(2, 3))
    assert p.stat().st_mode & 0o777 == 0o600
