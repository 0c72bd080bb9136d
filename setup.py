"""Build step that makes an installed pimrl carry its non-Python files.

``pip install .`` (not editable) copies host/ (the C shim and the DPU runtime), kernels/
(the SwiftRL kernels in UPMEM C), bin/, host/upmem/ (the UPMEM_HOME-style tree), experiments/
(configs, figures) and docs/ into the package as ``pimrl/_data/``, where
:mod:`pimrl.resources` finds them. Build outputs are left out. An editable install reads
them from the checkout instead. The metadata is in pyproject.toml.
"""
import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# pimrl/resources.py (standard library only) says which folders ship; loaded by path, since
# pimrl's dependencies need not be installed when the package is built.
_spec = importlib.util.spec_from_file_location("_pimrl_resources", HERE / "pimrl" / "resources.py")
resources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(resources)

SKIP_DIRS = {"build", "__pycache__"}
SKIP_SUFFIXES = (".so", ".o", ".a", ".pyc", ".tmp")


def data_files():
    """(source, path relative to the data folder) of every file the package carries."""
    for top in resources.DATA_DIRS:
        for folder, dirs, files in os.walk(HERE / top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.startswith(".") or name.endswith(SKIP_SUFFIXES):
                    continue
                src = Path(folder) / name
                yield src, src.relative_to(HERE)


class build_py_with_data(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "pimrl" / "_data"
        for src, rel in data_files():
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)          # keeps the commands' executable bits


setup(cmdclass={"build_py": build_py_with_data})
