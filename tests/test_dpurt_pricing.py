"""How the DPU runtime prices x86 instructions by operand width (pimrl/dpurt/x86.py).

The width of an emulated multiply or division comes from the mnemonic's size suffix (``l``
32-bit, ``q`` 64-bit) or, without one, from its register operands, never from the 64-bit
host pointers that address a memory operand: ``imull 0(%rbp,%rax), %edx`` is a 32-bit
multiply (``int32_mul``, 29 instructions), not a 64-bit one (``int64_mul``, 131).
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from pimrl.dpurt import cc
from pimrl.dpurt.instrument import instrument
from pimrl.dpurt.x86 import classify, operand_bits, split_operands
from pimrl.pim.hardware import get_hardware

#: Address registers as a block that indexes memory with them has them.
ADDR = {"sp", "bp", "ip", "a", "b"}


def price(line: str, addr_regs=ADDR):
    """classify() of one AT&T line: (plain, operation, how many)."""
    mnemonic, _, operands = line.strip().partition(" ")
    return classify(mnemonic, operands.strip(), None, addr_regs)


@pytest.mark.parametrize("line,op", [
    # two-operand forms: the destination register's width, whatever addresses the source
    ("imull 0(%rbp,%rax), %edx", "int32_mul"),
    ("imull (%rsp), %ecx", "int32_mul"),
    ("imull 8(%rsp,%rcx,8), %r10d", "int32_mul"),
    ("imulq 8(%rsp), %rax", "int64_mul"),
    ("imulq (%rax,%rbx,8), %rdx", "int64_mul"),
    ("imull %esi, %edi", "int32_mul"),
    ("imulq %rsi, %rdi", "int64_mul"),
    # no suffix (AT&T): the registers decide
    ("imul %esi, %edi", "int32_mul"),
    ("imul %rsi, %rdi", "int64_mul"),
    ("imul %r8d, %r9d", "int32_mul"),
    ("imul %r8, %r9", "int64_mul"),
    ("imul (%rax), %ecx", "int32_mul"),
    ("imul 4(%rax,%rbx), %r11", "int64_mul"),
    # one operand: edx:eax = eax * src, the 32 x 32 -> 64 widening multiply at 32 bits
    ("imul %rcx", "int64_mul"),
    ("imulq %rcx", "int64_mul"),
    ("mulq %rcx", "int64_mul"),
    ("mul %rcx", "int64_mul"),
    ("mulq 8(%rsp)", "int64_mul"),
    ("mull %ecx", "int64_mul"),
    ("mul %ecx", "int64_mul"),
    ("mull 4(%rax)", "int64_mul"),
    ("imull %ecx", "int64_mul"),
    # 8- and 16-bit multiplies are at most a 32-bit one
    ("mulb %cl", "int32_mul"),
    ("mulw %cx", "int32_mul"),
    ("imulw %si, %di", "int32_mul"),
])
def test_multiply_priced_by_operand_width(line, op):
    for regs in (ADDR, set(), None):
        assert price(line, regs) == (0.0, op, 1), (line, regs)


@pytest.mark.parametrize("line,op", [
    ("idivl (%rsp)", "int32_div"),
    ("idivl 12(%rsp,%rax,4)", "int32_div"),
    ("idivq (%rsp)", "int64_div"),
    ("divl 4(%rax)", "int32_div"),
    ("divq 4(%rax)", "int64_div"),
    ("divq %rcx", "int64_div"),
    ("divl %ecx", "int32_div"),
    ("div %ecx", "int32_div"),
    ("div %rcx", "int64_div"),
    ("idiv %r8d", "int32_div"),
    ("idiv %r8", "int64_div"),
    ("idivl %r14d", "int32_div"),
    ("idivq %r14", "int64_div"),
])
def test_division_priced_by_operand_width(line, op):
    for regs in (ADDR, set(), None):
        assert price(line, regs) == (0.0, op, 1), (line, regs)


@pytest.mark.parametrize("line", ["imull $7, (%rax,%rbx,4), %ecx", "imull $7, %esi, %ecx",
                                  "imulq $7, %rax, %rax", "imul $100, 8(%rsp), %r9",
                                  "imull $-3, %ecx"])
def test_constant_multiply_is_two_shift_and_add_instructions(line):
    """A multiply by a constant (an immediate first operand, in any of its forms) is the
    DPU's shifts and adds (2), not an emulated multiply, at any width and address."""
    assert price(line) == (2.0, None, 0)


def test_operand_bits_reads_suffix_then_registers_never_addresses():
    assert operand_bits("imull", "0(%rbp,%rax), %edx") == 32
    assert operand_bits("imul", "0(%rbp,%rax), %edx") == 32
    assert operand_bits("imul", "0(%rbp,%rax), %rdx") == 64
    assert operand_bits("idivl", "(%rsp)") == 32
    assert operand_bits("idivq", "(%rsp)") == 64
    assert operand_bits("addq", "$1, 8(%rsp)") == 64
    assert operand_bits("addl", "%eax, (%rax,%rbx)") == 32
    assert operand_bits("addw", "$1, (%rax)") == 16
    assert operand_bits("subb", "%al, %dl") == 8
    assert operand_bits("sar", "%cl, %rdx") == 64       # the count is not the width
    assert operand_bits("shl", "%cl, %esi") == 32
    assert operand_bits("add", "%r12w, %r13w") == 16
    assert operand_bits("and", "%r12b, %r13b") == 8
    assert operand_bits("div", "(%rsp)") is None          # nothing to tell by
    assert operand_bits("addss", "%xmm1, %xmm0") is None
    # the suffix split off by the caller wins over the registers
    assert operand_bits("imul", "%rax, %rbx", "l") == 32


def test_split_operands_keeps_memory_operands_whole():
    assert split_operands("$7, (%rax,%rbx,4), %ecx") == ["$7", "(%rax,%rbx,4)", "%ecx"]
    assert split_operands("0(%rbp,%rax), %edx") == ["0(%rbp,%rax)", "%edx"]
    assert split_operands("(%rsp)") == ["(%rsp)"]
    assert split_operands("") == []


def test_64_bit_data_operations_by_width():
    """The ALU rule reads width the same way: 64-bit operations on data are two DPU
    instructions, on pointers (registers the block uses as addresses) one; the registers
    of a memory operand's address never make an operation 64-bit."""
    assert price("addq %rdx, %rcx", set()) == (2.0, None, 0)
    assert price("add %rdx, %rcx", set()) == (2.0, None, 0)
    assert price("addq %rax, %rbx", ADDR) == (1.0, None, 0)          # pointer arithmetic
    assert price("addl %edx, %ecx", set()) == (1.0, None, 0)
    assert price("addl (%rax,%rbx,4), %ecx", ADDR) == (2.0, None, 0)  # load + add
    assert price("addq (%rax,%rbx,8), %rcx", ADDR) == (3.0, None, 0)  # load + 64-bit add
    assert price("addq $1, 8(%rsp)", ADDR) == (4.0, None, 0)           # load, 2 adds, store
    assert price("addl $1, 8(%rsp)", ADDR) == (3.0, None, 0)           # load, add, store
    assert price("sarq $3, %rdx", set()) == (2.0, None, 0)
    assert price("sarl $3, %edx", set()) == (1.0, None, 0)
    # a shift's count register is no pointer: the 64-bit shift of data is two
    assert price("salq %cl, %rdx", {"sp", "bp", "ip", "c"}) == (2.0, None, 0)
    assert price("salq %cl, %rdx", {"sp", "bp", "ip", "d"}) == (1.0, None, 0)
    # compare + conditional jump
    # compare and conditional jump (the jump is its own instruction): 64-bit data two
    assert classify("cmpq", "$2147483647, %rdx", "jg", set()) == (2.0, None, 0)
    assert classify("cmpl", "$7, %edx", "jg", set()) == (1.0, None, 0)
    assert classify("cmpl", "$7, (%rax,%rbx,4)", "jne", ADDR) == (2.0, None, 0)


def test_float_conversions_both_widths_one_soft_float_operation():
    """The operation table has one conversion cost per float type (an add), so the 32- and
    64-bit integer forms of a conversion are priced alike."""
    for m in ("cvtsi2ssl", "cvtsi2ssq", "cvtsi2ss", "cvttss2sil", "cvttss2siq"):
        assert price(f"{m} %eax, %xmm0")[1] == "float_add", m
    for m in ("cvtsi2sdl", "cvtsi2sdq", "cvtsi2sd", "cvttsd2sil", "cvttsd2siq"):
        assert price(f"{m} %eax, %xmm0")[1] == "double_add", m


def _block(body: str):
    asm = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n" + body + "\tret\n"
    return instrument(asm, "f.c")[1]["blocks"][0]


def test_instrumented_block_prices_memory_operand_multiply_as_int32():
    """Through instrument(): the block indexes memory with %rbp and %rax, and its 32-bit
    multiply reads one of those words: one int32_mul (the issue's 131 -> 29)."""
    plain, ops, _ = _block("\tmovl\t(%rbp,%rax), %ecx\n\timull\t0(%rbp,%rax), %edx\n"
                           "\taddl\t%edx, %ecx\n")
    assert ops == {"int32_mul": 1}
    plain, ops, _ = _block("\tidivl\t(%rsp)\n\tidivq\t8(%rsp)\n")
    assert ops == {"int32_div": 1, "int64_div": 1}
    hw = get_hardware("upmem-2556")
    assert hw.op_instructions["int32_mul"] == 29 and hw.op_instructions["int64_mul"] == 131


# ---------------------------------------------------------------- end to end
DOT_C = r"""
#include <defs.h>
#include <stdint.h>

#define N 64
__host int32_t x[N];
__host int32_t w[N];
__host int32_t out;

int main(void)
{
    if (me() != 0)
        return 0;
    int32_t s = 0;
    for (int i = 0; i < N; i++)
        s += x[i] * w[i];    /* gcc -O2: movl (%rax,%rdi), %edx; imull (%rax,%rsi), %edx */
    out = s;
    return 0;
}
"""
N = 64
#: A 32-bit multiply whose source is a memory operand addressed by 64-bit registers.
MEM_IMULL = re.compile(r"^\s*imull\s+[^,]*\(%r\w+(,%r\w+)?(,\d)?\)\s*,\s*%(e\w\w|r\d+d)\s*$", re.M)


@pytest.mark.needs_c
def test_memory_operand_32_bit_multiply_priced_at_int32_cost(tmp_path):
    """A dot product of two int32 arrays: gcc -O2 folds one load into the multiply
    (``imull (%rax,%rsi), %edx``); each of the 64 multiplies costs int32_mul: raising
    int32_mul by 1000 adds exactly 64,000 instructions to the launch, raising int64_mul
    adds none."""
    src = tmp_path / "dot.c"
    src.write_text(DOT_C)
    asm = tmp_path / "dot.s"
    subprocess.run([cc.host_cc(), "-I", str(cc.INCLUDE), "-O2", "-DNR_TASKLETS=1",
                    *map(str, cc.CODE_FLAGS), "-S", str(src), "-o", str(asm)], check=True)
    text = asm.read_text()
    if not MEM_IMULL.search(text):
        pytest.skip(f"{cc.host_cc()} did not fold the load into the multiply here:\n"
                    + "\n".join(line for line in text.splitlines() if "mul" in line))
    blocks = instrument(text, "dot.c")[1]["blocks"]
    assert any(b[1].get("int32_mul") == 1 for b in blocks)
    assert not any("int64_mul" in b[1] for b in blocks)

    from pimrl.dpurt.testing import DpuSim
    program = tmp_path / "dot.dpu"
    cc.build([src], program, nr_tasklets=1)
    base = get_hardware("upmem-2556")
    rs = np.random.default_rng(3)
    x = rs.integers(-1000, 1000, N).astype(np.int32)
    w = rs.integers(-1000, 1000, N).astype(np.int32)
    ops = base.op_instructions
    counted = {}
    for name, hw in (("base", base),
                     ("int32", base.with_overrides(op_int32_mul=ops["int32_mul"] + 1000)),
                     ("int64", base.with_overrides(op_int64_mul=ops["int64_mul"] + 1000))):
        with DpuSim(program=program, nr_dpus=1, hardware=hw) as sim:
            sim.write("x", x)
            sim.write("w", w)
            sim.launch()
            assert sim.read("out", np.int32)[0] == int(np.dot(x.astype(np.int64), w))
            counted[name] = sim.details[0]["instructions"]
    assert counted["int32"] - counted["base"] == pytest.approx(N * 1000)
    assert counted["int64"] == counted["base"]
