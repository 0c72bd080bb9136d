"""The DPU compiler's builtins and the link of a DPU program.

- a call nobody defines fails the build (CLI and Python API), naming the symbol and the
  file:line of the call, as the SDK's linker does; legitimate programs still link (libc,
  libm, separate ``-c`` objects, the compiler's own builtins without a header);
- every instruction builtin of <built_ins.h> against a Python model of the DPU
  instruction over edge values (0, -1, INT_MIN, signed / unsigned bytes ...);
- each one priced as one DPU instruction (the 8x8 multiplies as one operation ``mul8``);
- the condition / jump forms and out-of-range shift immediates fail the build.
"""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pimrl.dpurt import cc

pytestmark = pytest.mark.needs_c

from pimrl.dpurt.instrument import block_cost  # noqa: E402
from pimrl.dpurt.testing import dpu_sim  # noqa: E402,F401  (fixture)
from pimrl.pim.hardware import get_hardware  # noqa: E402

CLANG = Path(__file__).resolve().parents[1] / "bin" / "dpu-upmem-dpurte-clang"
M = 0xFFFFFFFF


# ----------------------------------------------------------------------------- the link
UNDEFINED_C = """\
#include <defs.h>
#include <stdint.h>
__host uint32_t out;
int helper(int x);
int main(void)
{
    out = (uint32_t)helper((int)me());
    return 0;
}
"""
HELPER_LINE = 7


def _clang(*args, cwd=None):
    return subprocess.run([str(CLANG), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_undefined_function_fails_the_cli_build_naming_symbol_file_and_line(tmp_path):
    src = tmp_path / "prog.c"
    src.write_text(UNDEFINED_C)
    out = tmp_path / "prog.dpu"
    r = _clang("-DNR_TASKLETS=2", "-O2", "-o", out, src)
    assert r.returncode != 0
    assert "undefined symbol: helper" in r.stderr
    assert f"referenced by {src}:{HELPER_LINE} (in function main)" in r.stderr, r.stderr
    assert not out.exists()


def test_undefined_function_fails_build_program(tmp_path):
    from pimrl.dpurt import BuildError, build_program

    src = tmp_path / "prog.c"
    src.write_text(UNDEFINED_C)
    with pytest.raises(BuildError) as exc:
        build_program(src, tmp_path / "prog.dpu", nr_tasklets=1)
    assert "undefined symbol: helper" in str(exc.value)
    assert f"{src}:{HELPER_LINE}" in str(exc.value)


def test_builtin_without_its_header_or_unknown_fails_at_build_time(tmp_path):
    src = tmp_path / "b.c"
    src.write_text("#include <stdint.h>\n__attribute__((used)) uint32_t out;\n"
                   "int main(void)\n{\n    __builtin_clz_rr(out, out);\n    return 0;\n}\n")
    r = _clang("-o", tmp_path / "b.dpu", src)
    assert r.returncode != 0
    assert "undefined symbol: __builtin_clz_rr" in r.stderr
    assert f"{src}:5" in r.stderr and "include <built_ins.h>" in r.stderr, r.stderr
    # one the runtime does not provide (the carry forms): still a build error, with the line
    src.write_text("#include <built_ins.h>\n#include <stdint.h>\n__attribute__((used)) uint32_t out;\n"
                   "int main(void)\n{\n    __builtin_addc_rrr(out, out, out);\n    return 0;\n}\n")
    r = _clang("-o", tmp_path / "b.dpu", src)
    assert r.returncode != 0
    assert "undefined symbol: __builtin_addc_rrr" in r.stderr and f"{src}:6" in r.stderr
    assert "does not provide" in r.stderr


def test_separate_objects_libc_libm_and_compiler_builtins_still_link(dpu_sim, tmp_path):
    """Separate -c objects, the C library (memcpy, memset, printf via the runtime), libm (a
    host build links it) and the DPU compiler's own builtins, which need no header."""
    (tmp_path / "a.c").write_text("""\
#include <defs.h>
#include <mram.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int helper(int x);
__host uint32_t out[4];
__host float root;
__mram uint64_t mbuf[2];
int main(void)
{
    uint64_t w[2] __dma_aligned = {0x1122334455667788ull, 7};
    uint64_t back[2] __dma_aligned;
    memset(back, 0, sizeof(back));
    __builtin_dpu_sdma(w, mbuf, sizeof(w));
    __builtin_dpu_ldma(back, mbuf, sizeof(back));
    out[0] = (uint32_t)helper(41);
    out[1] = __builtin_dpu_tid();
    memcpy(&out[2], &back[0], 8);
    root = sqrtf(root);
    printf("done %u\\n", out[0]);
    return 0;
}
""")
    (tmp_path / "b.c").write_text("int helper(int x) { return x + 1; }\n")
    for name in ("a", "b"):
        r = _clang("-DNR_TASKLETS=1", "-O2", "-c", "-o", tmp_path / f"{name}.o", tmp_path / f"{name}.c")
        assert r.returncode == 0, r.stderr
    prog = tmp_path / "ab.dpu"
    r = _clang("-o", prog, tmp_path / "a.o", tmp_path / "b.o")
    assert r.returncode == 0, r.stderr
    sim = dpu_sim(program=prog, nr_dpus=1)
    sim.write("root", np.float32(2.25))
    sim.launch()
    assert sim.read("out", np.uint32).tolist() == [42, 0, 0x55667788, 0x11223344]
    assert sim.read("root", np.float32)[0] == 1.5
    assert "done 42" in sim.log(0)


# ----------------------------------------------------------------------------- the builtins
def s32(x):
    x &= M
    return x - (1 << 32) if x & 0x80000000 else x


def rol(x, n):
    n &= 31
    return ((x << n) | (x >> (32 - n))) & M if n else x & M


def clz(x):
    return 32 - (x & M).bit_length()


def byte(x, which, signed):
    v = (x >> (8 if which == "h" else 0)) & 0xFF
    return v - 256 if signed and v >= 128 else v


def mul8(form):
    def f(a, b):
        return (byte(a, form[1], form[0] == "s") * byte(b, form[4], form[3] == "s")) & M
    return f


# Two-operand instructions (rc = op(ra, rb), and rc = op(ra, imm) where the ISA has an
# immediate form): the DPU's semantics on 32-bit words, shift counts modulo 32.
BINARY = {
    "add": lambda a, b: (a + b) & M,
    "sub": lambda a, b: (a - b) & M,
    "rsub": lambda a, b: (b - a) & M,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "nand": lambda a, b: ~(a & b) & M,
    "nor": lambda a, b: ~(a | b) & M,
    "nxor": lambda a, b: ~(a ^ b) & M,
    "andn": lambda a, b: ~a & b & M,
    "orn": lambda a, b: (~a | b) & M,
    "asr": lambda a, b: (s32(a) >> (b & 31)) & M,
    "lsl": lambda a, b: (a << (b & 31)) & M,
    "lsr": lambda a, b: a >> (b & 31),
    "rol": lambda a, b: rol(a, b),
    "ror": lambda a, b: rol(a, 32 - (b & 31)),
    "lsl1": lambda a, b: ((a << (b & 31)) | ((1 << (b & 31)) - 1)) & M,
    "lsr1": lambda a, b: (a >> (b & 31)) | (M ^ (M >> (b & 31))),
    "cmpb4": lambda a, b: sum(int((a >> 8 * i) & 0xFF == (b >> 8 * i) & 0xFF) << 8 * i
                              for i in range(4)),
}
MUL8_FORMS = ["ul_ul", "ul_uh", "uh_ul", "uh_uh", "sl_sl", "sl_sh", "sh_sl", "sh_sh", "sl_ul",
              "sl_uh", "sh_ul", "sh_uh"]
BINARY.update({f"mul_{f}": mul8(f) for f in MUL8_FORMS})
NO_IMMEDIATE = {"sub", "rsub", "cmpb4"} | {f"mul_{f}" for f in MUL8_FORMS}
SHIFTS = {"asr", "lsl", "lsr", "rol", "ror", "lsl1", "lsr1"}
UNARY = {
    "clz": clz,
    "clo": lambda a: clz(~a),
    "cls": lambda a: clz(a) if a < 0x80000000 else clz(~a),
    "cao": lambda a: bin(a & M).count("1"),
    "extsb": lambda a: byte(a, "l", True) & M,
    "extsh": lambda a: (((a & 0xFFFF) ^ 0x8000) - 0x8000) & M,
    "extub": lambda a: a & 0xFF,
    "extuh": lambda a: a & 0xFFFF,
    "move": lambda a: a,
}
# rc = rb + (ra << n) ... with the DPU's operand order (rc, rb, ra, n)
SHIFT_ADD = {
    "lsl_add": lambda rb, ra, n: (rb + (ra << n)) & M,
    "lsl_sub": lambda rb, ra, n: (rb - (ra << n)) & M,
    "lsr_add": lambda rb, ra, n: (rb + (ra >> n)) & M,
    "rol_add": lambda rb, ra, n: (rb + rol(ra, n)) & M,
}
LOGIC_IMMEDIATES = ["0", "1", "-1", "0x7f", "0x80", "-2147483648", "0x12345678"]
SHIFT_IMMEDIATES = ["0", "1", "7", "8", "31"]


def _cases():
    """(C statement writing out[k], Python model of (a, b)) for every builtin and form."""
    cases = []
    for name, f in BINARY.items():
        cases.append((f"__builtin_{name}_rrr(OUT, a, b);", f))
        if name in NO_IMMEDIATE:
            continue
        for imm in SHIFT_IMMEDIATES if name in SHIFTS else LOGIC_IMMEDIATES:
            cases.append((f'__builtin_{name}_rri(OUT, a, "{imm}");',
                          lambda a, b, f=f, v=int(imm, 0) & M: f(a, v)))
    for imm in LOGIC_IMMEDIATES:
        v = int(imm, 0) & M
        cases.append((f'__builtin_sub_rir(OUT, "{imm}", a);', lambda a, b, v=v: (v - a) & M))
        cases.append((f'__builtin_move_ri(OUT, "{imm}");', lambda a, b, v=v: v))
    for name, f in UNARY.items():
        cases.append((f"__builtin_{name}_rr(OUT, a);", lambda a, b, f=f: f(a)))
    for name, f in SHIFT_ADD.items():
        for imm in SHIFT_IMMEDIATES:
            cases.append((f'__builtin_{name}_rrri(OUT, a, b, "{imm}");',
                          lambda a, b, f=f, n=int(imm): f(a, b, n)))
    return cases


EDGES = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF,
         0x80000000, 0x80000001, 0xFFFFFFFE, M, 31, 32, 33, 0x12345678, 0xDEADBEEF, 0x01FF80FE,
         0x00FF00FF, 0x80808080]
PAIRS_PER_LAUNCH = 16


def test_every_builtin_matches_the_isa(dpu_sim, tmp_path):
    cases = _cases()
    body = "\n".join(f"        {stmt.replace('OUT', f'o[{k}]')}" for k, (stmt, _) in enumerate(cases))
    src = tmp_path / "builtins.c"
    src.write_text(f"""\
#include <built_ins.h>
#include <defs.h>
#include <stdint.h>
#define NR_CASES {len(cases)}
__host uint32_t n_pairs;
__host uint32_t args[{PAIRS_PER_LAUNCH}][2];
__host uint32_t out[{PAIRS_PER_LAUNCH}][NR_CASES];
int main(void)
{{
    for (uint32_t i = 0; i < n_pairs; i++) {{
        const uint32_t a = args[i][0], b = args[i][1];
        uint32_t *o = out[i];
{body}
    }}
    __builtin_nop_();
    return 0;
}}
""")
    sim = dpu_sim(src, nr_dpus=1, nr_tasklets=1)
    rs = np.random.default_rng(7)
    pairs = [(a, b) for a in EDGES for b in EDGES[::3]] + [
        (int(a), int(b)) for a, b in rs.integers(0, 2**32, (64, 2))]
    for start in range(0, len(pairs), PAIRS_PER_LAUNCH):
        chunk = pairs[start:start + PAIRS_PER_LAUNCH]
        sim.write("n_pairs", np.uint32(len(chunk)))
        sim.write("args", np.array(chunk + [(0, 0)] * (PAIRS_PER_LAUNCH - len(chunk)), np.uint32))
        sim.launch()
        got = sim.read("out", np.uint32).reshape(PAIRS_PER_LAUNCH, len(cases))
        for i, (a, b) in enumerate(chunk):
            for k, (stmt, model) in enumerate(cases):
                assert int(got[i, k]) == model(a, b), (stmt, hex(a), hex(b), hex(int(got[i, k])))


def test_each_builtin_is_one_dpu_instruction(dpu_sim, tmp_path):
    """Each call's inline-assembly block, however long its x86 code, costs one DPU
    instruction (the 8x8 multiplies one operation mul8, at the hardware's op_mul8): a function
    of N calls, instrumented as the compiler driver instruments it, costs N more than the same
    code with the builtins' blocks marked free; and the program builds and runs."""
    from pimrl.dpurt.instrument import instrument

    calls = {}
    for name in BINARY:
        calls[f"{name}_rrr"] = f"__builtin_{name}_rrr(r, r, b);"
        if name not in NO_IMMEDIATE:
            calls[f"{name}_rri"] = f'__builtin_{name}_rri(r, r, "{3 if name in SHIFTS else 0x55}");'
    for name in UNARY:
        calls[f"{name}_rr"] = f"__builtin_{name}_rr(r, r);"
    for name in SHIFT_ADD:
        calls[f"{name}_rrri"] = f'__builtin_{name}_rrri(r, r, b, "5");'
    calls["sub_rir"] = '__builtin_sub_rir(r, "100", r);'
    calls["move_ri"] = '__builtin_move_ri(r, "9");'
    calls["nop_"] = "__builtin_nop_();"
    calls["defs_nop"] = "nop();"                 # defs.h's nop(): the same instruction
    n_calls = 5
    src = tmp_path / "price.c"
    src.write_text("#include <built_ins.h>\n#include <defs.h>\n#include <stdint.h>\n"
                   "__host uint32_t in[2], out;\n"
                   + "".join(f"__attribute__((noinline, noclone)) uint32_t f_{k}(uint32_t a, uint32_t b)\n"
                             f"{{\n    uint32_t r = a;\n    (void)b;\n    "
                             + "\n    ".join([c] * n_calls) + "\n    return r;\n}\n"
                             for k, c in calls.items())
                   + "int main(void)\n{\n    uint32_t x = 0;\n"
                   + "".join(f"    x ^= f_{k}(in[0], in[1]);\n" for k in calls)
                   + "    out = x;\n    return 0;\n}\n")
    r = subprocess.run([cc.host_cc(), "-I", str(cc.INCLUDE), "-O2", *cc.CODE_FLAGS, "-S", str(src),
                        "-o", "-"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    free = r.stdout.replace("# dpurt-insn 1", "# dpurt-insn 0").replace("# dpurt-op mul8", "# dpurt-insn 0")
    assert free != r.stdout
    priced, unpriced = instrument(r.stdout, "price.c")[1]["blocks"], instrument(free, "price.c")[1]["blocks"]
    for hw in (get_hardware(), get_hardware("upmem-2556", {"op_mul8": 3})):
        ops = hw.op_instructions

        def cost(blocks, f):
            mine = [b for b in blocks if b[2] == f]
            assert mine, f"no blocks of {f}"
            return sum(block_cost(b, ops) for b in mine)

        for key in calls:
            per_call = (cost(priced, f"f_{key}") - cost(unpriced, f"f_{key}")) / n_calls
            assert per_call == (ops["mul8"] if key.startswith("mul_") else 1), (key, per_call)
    sim = dpu_sim(src, nr_dpus=1, nr_tasklets=1)
    sim.write("in", np.array([0x1234, 7], np.uint32))
    sim.launch()
    assert sim.details[0]["instructions"] > n_calls * len(calls)


@pytest.mark.parametrize("call,message", [
    ('__builtin_add_rrrci(r, r, r, "z", "label");', "__builtin_add_rrrci"),
    ('__builtin_sub_rrrc(r, r, r, "ltu");', "__builtin_sub_rrrc"),
    ('__builtin_clz_rrci(r, r, "max", "label");', "__builtin_clz_rrci"),
    ('__builtin_lsl_rri(r, r, "32");', "__builtin_lsl_rri: shift 32 is not in 0..31"),
])
def test_condition_forms_and_bad_shift_immediates_fail_the_build(tmp_path, call, message):
    src = tmp_path / "cc.c"
    src.write_text("#include <built_ins.h>\n#include <stdint.h>\n__attribute__((used)) uint32_t r;\n"
                   f"int main(void)\n{{\n    {call}\n    return 0;\n}}\n")
    r = _clang("-O2", "-o", tmp_path / "cc.dpu", src)
    assert r.returncode != 0 and message in r.stderr, r.stderr
