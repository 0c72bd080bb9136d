"""Build ``libdpu.so``: the SDK's C host API over pimrl's simulator (cffi embedding mode).

The library's C layer is ``host/src/dpu_shim.c``; every SDK call it receives goes to a
function that cffi exports and :mod:`pimrl.shim.runtime` implements in Python. The embedded
interpreter is told at build time where to find pimrl and its dependencies (this
interpreter's site-packages and the repository), so a C program linked against the library
needs nothing else: no PYTHONPATH, no activated virtual environment.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from pimrl.io import atomic_write_text
from pimrl.resources import HOST, PACKAGE_PARENT, writable_dir

INCLUDE = HOST / "include"
SOURCES = tuple(HOST / "src" / name for name in ("dpu_shim.c", "dpu_fast.c", "dpu_lowlevel.c"))
DEFAULT_BUILD_DIR = HOST / "build"
MODULE = "_pimrl_libdpu"
LIBRARY = "libdpu.so"


class ShimUnavailable(RuntimeError):
    """The C path cannot be built here (no compiler, no Python headers, no cffi)."""


# Types the Python side reads and writes (must match host/include/dpu_types.h and
# host/src/shim_internal.h; cffi checks the layouts when it compiles).
CDEF = """
struct dpu_symbol_t { uint32_t address; uint32_t size; };
typedef struct dpu_elf_symbol { char *name; unsigned int value; unsigned int size; } dpu_elf_symbol_t;
typedef struct dpu_elf_symbols { unsigned int nr_symbols; dpu_elf_symbol_t *map; } dpu_elf_symbols_t;
struct dpu_program_t { uint8_t nr_threads_enabled; int32_t printf_buffer_address; int32_t printf_buffer_size;
    int32_t printf_write_pointer_address; int32_t printf_buffer_has_wrapped_address;
    dpu_elf_symbols_t *symbols; int32_t mcount_address; int32_t ret_mcount_address;
    int32_t thread_profiling_address; int32_t perfcounter_end_value_address;
    dpu_elf_symbols_t *profiling_symbols; int32_t open_print_sequence_addr; int32_t close_print_sequence_addr;
    int32_t reference_count; char *program_path; };
struct pimrl_program { struct dpu_program_t sdk; uint32_t pimrl_id; };
struct pimrl_mem { int32_t valid; int32_t phase; uint8_t *wram; uint64_t wram_bytes; uint64_t mram_bytes;
                   int32_t *page_table; uint64_t pages_per_bank; uint8_t *pool; int64_t *program_of;
                   uint8_t *running; uint32_t nr_programs; struct pimrl_program **programs; };
struct pimrl_alloc { uint32_t handle; uint32_t nr_ranks; uint32_t dpus_per_rank; uint32_t nr_slots;
                     int32_t freed; int32_t sg_enabled; struct pimrl_mem mem; ...; };
struct pimrl_set_ref { uint32_t kind; uint32_t pimrl_handle; uint32_t pimrl_rank; uint32_t pimrl_dpu; };
struct pimrl_record { uint32_t handle; uint32_t op; int32_t phase; uint32_t program; uint32_t symbol;
                      uint32_t n_dpus; uint32_t n_ranks; uint32_t pad; uint64_t bytes; };
void _pimrl_set_message(const char *message);
void _pimrl_set_error(int code, const char *message);
void _pimrl_mark_ready(void);
size_t _pimrl_take_records(struct pimrl_record **records);
"""

EMBEDDING_MARKER = "/* Implemented by the Python side (cffi embedding API)"


def embedding_api() -> str:
    """The functions Python implements: declared once, in host/src/shim_internal.h."""
    text = (HOST / "src" / "shim_internal.h").read_text()
    start = text.index(EMBEDDING_MARKER)
    block = text[text.index("*/", start) + 2:]
    return block[:block.index("\n\n")].strip() + "\n"


INIT_CODE = """
import sys
if not getattr(sys, "argv", None):
    sys.argv = ["libdpu"]
_paths = {paths!r}
for _p in reversed(_paths):
    if _p not in sys.path:
        sys.path.insert(0, _p)
import site
for _p in _paths[1:]:
    site.addsitedir(_p)          # runs .pth files (the editable install of pimrl)
from {module} import ffi, lib
from pimrl.shim import runtime as _pimrl_runtime
_pimrl_runtime.install(ffi, lib)
"""


def python_paths() -> list:
    """What the embedded interpreter puts first on sys.path: the folder holding pimrl (the
    checkout, or the site-packages it is installed in), then this interpreter's
    site-packages."""
    paths = [str(PACKAGE_PARENT)]
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p and p not in paths:
            paths.append(p)
    return paths


def find_compiler() -> str | None:
    """The C compiler cffi would use ($CC, else cc/gcc/clang on PATH), or None."""
    cc = os.environ.get("CC")
    if cc:
        exe = cc.split()[0]
        return cc if shutil.which(exe) else None
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def c_toolchain() -> tuple:
    """(True, compiler) when the C path can be built, else (False, reason)."""
    try:
        import cffi  # noqa: F401
    except ImportError:
        return False, "cffi is not installed (pip install cffi)"
    cc = find_compiler()
    if cc is None:
        return False, ("no C compiler found (looked for $CC, cc, gcc, clang); install one, "
                       "e.g. apt-get install gcc")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.exists():
        return False, (f"the Python headers are missing ({include}); install the "
                       f"python{sys.version_info.major}.{sys.version_info.minor}-dev package")
    return True, cc


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def default_build_dir() -> Path:
    """``host/build`` (of the checkout or the installed package), or a private temporary
    folder where that is not writable."""
    return writable_dir(DEFAULT_BUILD_DIR, "shim")


def library_path(build_dir=None) -> Path:
    return Path(build_dir or default_build_dir()) / LIBRARY


def _ffi(sanitize: str | None):
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.embedding_api(embedding_api())
    compile_args = ["-O2", "-g", "-Wall"]
    link_args = []
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        link_args.append(f"-Wl,-rpath,{libdir}")       # find libpython without LD_LIBRARY_PATH
    if sanitize:
        compile_args += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer"]
        link_args += [f"-fsanitize={sanitize}"]
    ffi.set_source(
        MODULE,
        '#include "shim_internal.h"\n',
        sources=[str(s) for s in SOURCES],
        include_dirs=[str(INCLUDE), str(HOST / "src")],
        define_macros=[("PIMRL_PYTHON_EXECUTABLE", '"%s"' % _c_string(sys.executable))],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    ffi.embedding_init_code(INIT_CODE.format(paths=python_paths(), module=MODULE))
    return ffi


def _interpreter_id() -> str:
    """The interpreter a library embeds (its executable and the paths it puts on sys.path)."""
    return "\n".join([sys.executable, *python_paths()]) + "\n"


def _interpreter_file(lib: Path) -> Path:
    return lib.with_name(lib.name + ".python")


def needs_build(build_dir=None) -> bool:
    """True when the library is missing, older than one of its sources, or built for another
    interpreter (it would start that one's Python, without this one's packages)."""
    lib = library_path(build_dir)
    if not lib.exists():
        return True
    made_for = _interpreter_file(lib)
    if not made_for.exists() or made_for.read_text() != _interpreter_id():
        return True
    built = lib.stat().st_mtime
    inputs = list(SOURCES) + list(INCLUDE.glob("*.h")) + list((HOST / "src").glob("*.h")) + [
        Path(__file__)]
    return any(p.stat().st_mtime > built for p in inputs if p.exists())


def build_shim(build_dir=None, sanitize: str | None = None, force: bool = False,
               verbose: bool = False) -> Path:
    """Build ``libdpu.so`` into ``build_dir`` (default ``host/build``); returns its path.

    ``sanitize="address"`` builds the C layer with AddressSanitizer (for programs that are
    themselves built with ``-fsanitize=address``). Raises :class:`ShimUnavailable` with the
    reason when the C path cannot be built here.
    """
    ok, what = c_toolchain()
    if not ok:
        raise ShimUnavailable(what)
    build_dir = Path(build_dir or default_build_dir()).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    lib = library_path(build_dir)
    if not force and not needs_build(build_dir):
        return lib
    ffi = _ffi(sanitize)
    # Compile in a private folder, then move the library in place atomically: a concurrent
    # build (two test sessions) never leaves a half-written libdpu.so behind.
    with tempfile.TemporaryDirectory(prefix=".shim-", dir=build_dir) as tmp:
        try:
            out = ffi.compile(tmpdir=tmp, target="libdpu.*", verbose=verbose)
        except Exception as exc:  # cffi wraps compiler failures in VerificationError
            raise ShimUnavailable(f"compiling {LIBRARY} failed: {exc}") from exc
        os.replace(out, lib)
    atomic_write_text(_interpreter_file(lib), _interpreter_id())
    return lib


def pkg_config_flags(build_dir=None) -> dict:
    """What ``bin/dpu-pkg-config`` prints for this build folder."""
    build_dir = Path(build_dir or default_build_dir()).resolve()
    return {
        # one word, as the SDK's dpu.pc (projects pass it unsplit); dpu.h defines
        # PIMRL_SIMULATOR itself
        "cflags": f"-I{INCLUDE}",
        "libs": f"-L{build_dir} -Wl,-rpath,{build_dir} -ldpu",
    }


def run_self_test(build_dir=None) -> subprocess.CompletedProcess:
    """Compile and run a ten-line program against the library (used by ``pimrl shim check``)."""
    cc = find_compiler()
    flags = pkg_config_flags(build_dir)
    src = r'''
#include <dpu.h>
int main(void) {
    struct dpu_set_t set, dpu; uint32_t n = 0, i = 0, seen = 0;
    DPU_ASSERT(dpu_alloc(3, "hardware=upmem-640", &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &n));
    DPU_FOREACH(set, dpu, i) { seen = i + 1; }
    DPU_ASSERT(dpu_free(set));
    printf("pimrl shim: %u DPUs allocated, %u iterated\n", n, seen);
    return !(n == 3 && seen == 3);
}
'''
    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp) / "selftest.c"
        c.write_text(src)
        exe = Path(tmp) / "selftest"
        cmd = [*cc.split(), str(c), *flags["cflags"].split(), *flags["libs"].split(), "-o", str(exe)]
        built = subprocess.run(cmd, capture_output=True, text=True)
        if built.returncode:
            return built
        return subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
