"""The build cache of pimrl's own kernels (pimrl.dpurt.cache): one cache for the SwiftRL and
the online kernels, keyed by every source linked into a program, so that an edit to any of
them (the system library's ``host/dpurt/lib/*.c`` included) rebuilds the kernel."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pimrl.dpurt import cache, cc
from pimrl.learners.variants import OnlineVariant
from pimrl.online import cprogram as online
from pimrl.online.program import online_layout
from pimrl.pim.hardware import get_hardware
from pimrl.rlkernel import cprogram as swiftrl


def _swiftrl_kernel() -> Path:
    return swiftrl.build_kernel(6, 3, 2, "q", "fp32", "seq")


def _online_kernel() -> Path:
    layout = online_layout(16, 4, 3, 1, 2, get_hardware(), count_visits=False)
    return online.build_online_kernel(OnlineVariant("q", "fp32"), layout)


KERNELS = {"swiftrl": _swiftrl_kernel, "online": _online_kernel}


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """The system library's sources copied to a folder the builds read instead, and private
    kernel and runtime build folders; returns the copy."""
    lib = tmp_path / "lib"
    shutil.copytree(cc.SYSLIB_SRC, lib)
    monkeypatch.setattr(cc, "SYSLIB_SRC", lib)
    monkeypatch.setenv("PIMRL_KERNEL_BUILD", str(tmp_path / "kernels"))
    monkeypatch.setenv("PIMRL_DPURT_CACHE", str(tmp_path / "dpurt"))
    return lib


def _edit(lib: Path) -> None:
    src = sorted(lib.glob("*.c"))[0]
    src.write_text(src.read_text() + "\n/* edited by a test */\n")


def test_every_linked_source_is_in_the_key():
    linked = set(cache.linked_sources())
    assert {cc.RUNTIME_SRC, cc.LINKER_SCRIPT, Path(cc.__file__)} <= linked
    assert set(cc.SYSLIB_SRC.glob("*.c")) and set(cc.SYSLIB_SRC.glob("*.c")) <= linked
    assert set(cc.INCLUDE.glob("*.h")) <= linked


@pytest.mark.parametrize("room", list(KERNELS))
def test_an_edited_library_source_rebuilds_the_kernel(room, library_copy, monkeypatch):
    """Each room's kernel, built through the one cache (the compiler stubbed: the key is
    what is checked), is built again after an edit to a linked library source, under a new
    name, and not after no edit."""
    built = []

    def fake_build(sources, output, **kw):
        built.append(Path(output))
        Path(output).write_bytes(b"a built kernel")
        return Path(output)

    monkeypatch.setattr(cc, "build", fake_build)
    first = KERNELS[room]()
    assert KERNELS[room]() == first and len(built) == 1          # cached
    assert first.parent == cache.build_dir()
    _edit(library_copy)
    second = KERNELS[room]()
    assert len(built) == 2 and second != first and second.exists()


@pytest.mark.needs_c
def test_an_edited_library_source_rebuilds_a_real_online_kernel(library_copy, tmp_path):
    """The same with the DPU compiler: the rebuilt kernel is another file, linked with the
    library archive built from the edited sources."""
    first = _online_kernel()
    archives = set((tmp_path / "dpurt").glob("libdpusys-*.a"))
    assert _online_kernel() == first and len(archives) == 1
    _edit(library_copy)
    second = _online_kernel()
    assert second != first and second.exists() and first.exists()
    assert len(set((tmp_path / "dpurt").glob("libdpusys-*.a")) - archives) == 1
