"""Where pimrl's non-Python files are: the C shim (``host/``), the DPU kernels
(``kernels/``), the SDK stand-in commands (``bin/``), the UPMEM_HOME-style tree (``host/upmem/``:
``bin/clang``, ``bin/dpu-clang``, ``share/upmem/cmake/...``), the shipped configs
(``experiments/*.toml``) and the docs.

In a source checkout they are the repository's folders beside the ``pimrl`` package. An
installed package (``pip install .``) carries copies under ``pimrl/_data/`` (put there by
``setup.py``'s build step); ``ROOT`` is whichever holds them. Nothing else in pimrl finds
files relative to its own source.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The folder that holds the ``pimrl`` package (the checkout, or site-packages): what an
#: embedded interpreter puts on ``sys.path`` to import pimrl.
PACKAGE_PARENT = Path(__file__).resolve().parents[1]
#: The folders and files copied into an installed package (relative to ROOT).
DATA_DIRS = ("host", "kernels", "bin", "experiments", "docs")
_INSTALLED = Path(__file__).resolve().parent / "_data"
#: Where host/, kernels/, bin/, experiments/ and docs/ are.
ROOT = _INSTALLED if (_INSTALLED / "host").is_dir() else PACKAGE_PARENT
INSTALLED = ROOT == _INSTALLED

HOST = ROOT / "host"
KERNEL_DIR = ROOT / "kernels"
BIN = ROOT / "bin"
#: What ``dpu-pkg-config --upmem-home`` prints: laid out as the SDK's ${UPMEM_HOME} (its
#: commands run those of BIN; docs/real-hardware.md, "Building SDK projects").
UPMEM_HOME = ROOT / "host" / "upmem"
EXPERIMENTS = ROOT / "experiments"
DOCS = ROOT / "docs"


def writable_dir(preferred: Path, name: str) -> Path:
    """``preferred`` (created) if this user can write there, else a private folder under the
    temporary directory (an installed package may sit in a read-only site-packages)."""
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        if os.access(preferred, os.W_OK):
            return preferred
    except OSError:
        pass
    p = Path(tempfile.gettempdir()) / f"pimrl-{os.getuid()}" / name
    p.mkdir(parents=True, exist_ok=True)
    return p
