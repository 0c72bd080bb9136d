"""The SDK's host ABI (UPMEM SDK 2025.1): the declaration test.

tests/sdk_abi/check_abi.c includes pimrl's dpu.h and the low-level headers, then the SDK's
own list of function declarations (declarations.h): a conflicting return or parameter type
fails the build. values.h holds every enumerator of the SDK's host headers with its value;
check_abi.c adds the sizes and field offsets of the SDK's types. Built with
`-Wall -Wextra -Werror` through dpu-pkg-config, linked with a table of the address of every
declared function (so libdpu must define them all), and run.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_shim import sh, shim  # noqa: F401  (the session fixture builds libdpu)

ABI = Path(__file__).resolve().parent / "sdk_abi"


def declared_functions() -> list:
    text = (ABI / "declarations.h").read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    names = [m.group(1) for m in re.finditer(r"\b([a-z_]\w*)\s*\((?:[^()]|\([^()]*\))*\)\s*;", text)]
    return names


def test_declaration_list_is_the_sdk_host_api():
    names = declared_functions()
    assert len(names) == len(set(names)) == 136
    for required in ("dpu_alloc", "dpu_error_to_string", "dpu_callback", "dpu_load_from_memory",
                     "dpu_load_from_incbin", "dpu_push_sg_xfer", "dpulog_read_for_dpu",
                     "dpu_get_rank_id", "dpu_get_member_id", "dpu_from_set", "dpu_rank_from_set",
                     "dpu_copy_to_mram", "dpu_boot_rank", "dpu_get_common_program"):
        assert required in names


@pytest.mark.needs_c_shim
def test_headers_declare_define_and_lay_out_the_sdk_abi(shim, tmp_path):  # noqa: F811
    _, env = shim
    table = tmp_path / "functions.c"
    names = declared_functions()
    table.write_text(
        "#include <stddef.h>\n#include <dpu.h>\n#include <dpu_description.h>\n#include <dpu_elf.h>\n"
        "#include <dpu_log.h>\n#include <dpu_management.h>\n#include <dpu_memory.h>\n"
        "#include <dpu_program.h>\n#include <dpu_runner.h>\n"
        "void *const pimrl_abi_functions[] = {\n"
        + "".join(f"    (void *){n},\n" for n in names)
        + "    (void *)dpu_slice_target_names,\n};\n"
        "const size_t pimrl_abi_nr_functions = sizeof(pimrl_abi_functions) / sizeof(void *);\n")
    exe = tmp_path / "check_abi"
    r = sh(f"cc -std=gnu11 -Wall -Wextra -Werror check_abi.c {table} -o {exe} "
           f"$(dpu-pkg-config --cflags --libs dpu)", env, cwd=ABI)
    assert r.returncode == 0, r.stderr[-4000:]
    r = sh(str(exe), env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(names) + 1} functions linked, OK" in r.stdout


@pytest.mark.needs_c_shim
def test_a_conflicting_declaration_fails_the_check(shim, tmp_path):  # noqa: F811
    """The check can fail: the pre-2024 prototype of dpu_error_to_string no longer compiles."""
    _, env = shim
    src = tmp_path / "old.c"
    src.write_text("#include <dpu.h>\nconst char *dpu_error_to_string(dpu_error_t status);\n"
                   "int main(void) { return 0; }\n")
    r = sh(f"cc -c {src} -o {tmp_path / 'old.o'} $(dpu-pkg-config --cflags dpu)", env)
    assert r.returncode != 0 and "conflicting types" in r.stderr


@pytest.mark.needs_c_shim
def test_dpu_h_alone_brings_the_low_level_headers(shim, tmp_path):  # noqa: F811
    _, env = shim
    src = tmp_path / "only_dpu_h.c"
    src.write_text("#include <dpu.h>\n"
                   "int main(void) {\n"
                   "    struct dpu_set_t set, dpu;\n"
                   "    DPU_ASSERT(dpu_alloc(2, NULL, &set));\n"
                   "    DPU_ASSERT(dpu_load(set, \"pimrl:diag\", NULL));\n"
                   "    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));\n"
                   "    DPU_FOREACH(set, dpu) {\n"
                   "        printf(\"member %u of rank %u\\n\", dpu_get_member_id(dpu.dpu),\n"
                   "               dpu_get_rank_id(dpu_get_rank(dpu_from_set(dpu))));\n"
                   "        DPU_ASSERT(dpulog_read_for_dpu(dpu.dpu, stdout));\n"
                   "    }\n"
                   "    printf(\"%u rank(s)\\n\", set.list.nr_ranks);\n"
                   "    DPU_ASSERT(dpu_free(set));\n"
                   "    return 0;\n"
                   "}\n")
    exe = tmp_path / "only_dpu_h"
    r = sh(f"cc -Wall -Wextra -Werror {src} -o {exe} $(dpu-pkg-config --cflags --libs dpu)", env)
    assert r.returncode == 0, r.stderr
    r = sh(str(exe), env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["member 0 of rank 0", "diag: launch 1 on DPU 0",
                                     "member 1 of rank 0", "diag: launch 1 on DPU 1", "1 rank(s)"]
