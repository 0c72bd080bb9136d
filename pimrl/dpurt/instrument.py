"""Basic-block instrumentation of gcc's x86-64 assembly, and what each block costs on a DPU.

The compiler driver compiles every DPU source to assembly (``gcc -S``), passes it through
:func:`instrument`, and assembles the result. A *block* starts at every function entry, at
every label a jump or a jump table refers to, and after every conditional jump; it ends at
the next block start or after a jump, call or return. At each block start the driver inserts (:data:`PROBE`)

    pushfq; addq $1, .Ldpurt_bbc+8*k(%rip)
    pushq %rax; movq .Ldpurt_bbw+8*k(%rip), %rax     # the block's DPU cost (fixed point)
    addq __dpurt_icount(%rip), %rax; movq %rax, __dpurt_icount(%rip)
    cmpq __dpurt_ilimit(%rip), %rax; popq %rax
    jb 1f; call __dpurt_preempt; 1: popfq

(flags and registers preserved; the driver compiles with ``-mno-red-zone`` so the pushes
are safe), so every DPU run yields exact execution counts of the program's own blocks, the
running tasklet's modelled instructions advance block by block, and a tasklet that has run
a quantum of instructions without a runtime call can give way to an earlier one (the
runtime fills ``dpurt_bbw`` with the block costs when it is set up). The inserted lines
are not counted. Each block's static instructions are classified (:func:`pimrl.dpurt.x86.classify`) into plain
instructions and emulated operations (the argument moves of a DMA call are its DPU
instruction's operands: :func:`dma_operand_moves`; an inline-assembly block whose first
line is ``# dpurt-op NAME`` or ``# dpurt-insn N``, a DPU builtin's host code, is one operation
NAME or N instructions in all); ``block_cost`` turns a
block into DPU instructions with the hardware's ``op_instructions`` (docs/dpu-runtime.md,
"Time").
"""
from __future__ import annotations

import json
import re

from pimrl.dpurt.x86 import (
    CONDITIONAL_JUMP, address_registers, classify, dma_operand_moves, split_instruction,
    three_operand_fusions,
)

_LABEL = re.compile(r"^([A-Za-z_.$][\w.$@]*):\s*(#.*)?$")
_LOCAL_REF = re.compile(r"\.L\w+")

#: Inserted at every block start (k-th block: ``off`` = 8 k).
PROBE = """\tpushfq
\taddq\t$1, .Ldpurt_bbc+{off}(%rip)
\tpushq\t%rax
\tmovq\t.Ldpurt_bbw+{off}(%rip), %rax
\taddq\t__dpurt_icount(%rip), %rax
\tmovq\t%rax, __dpurt_icount(%rip)
\tcmpq\t__dpurt_ilimit(%rip), %rax
\tpopq\t%rax
\tjb\t1f
\tcall\t__dpurt_preempt
1:
\tpopfq"""
#: The probe of code that never gives way (the system library's C parts): counts and time
#: only, so a library routine runs as one step, as the SDK's tasklet-safe routines do.
PROBE_NO_PREEMPT = """\tpushfq
\taddq\t$1, .Ldpurt_bbc+{off}(%rip)
\tpushq\t%rax
\tmovq\t.Ldpurt_bbw+{off}(%rip), %rax
\taddq\t__dpurt_icount(%rip), %rax
\tmovq\t%rax, __dpurt_icount(%rip)
\tpopq\t%rax
\tpopfq"""
#: The first line of an inline-assembly block that stands for a DPU instruction the host has
#: no single instruction for (host/dpurt/include/dpurt_builtins.h, from <built_ins.h>):
#: ``dpurt-op NAME``, the whole block one operation NAME of the hardware's ``op_instructions``
#: (``mul8``: the 8x8 multiply), or ``dpurt-insn N``, N plain instructions.
_FIXED_COST = re.compile(r"^#\s*dpurt-(insn|op)\s+([\w.]+)")



def _section_of(directive: str, current: str, stack: list, previous: str) -> tuple[str, str]:
    d = directive.strip()
    head = d.split(None, 1)[0]
    if head in (".text", ".data", ".bss"):
        rest = d[len(head):].strip()
        return head + (("." + rest) if rest else ""), current
    if head in (".section", ".pushsection"):
        name = d.split(None, 1)[1].split(",")[0].strip().strip('"')
        if head == ".pushsection":
            stack.append(current)
        return name, current
    if head == ".popsection":
        return (stack.pop() if stack else ".text"), current
    if head == ".previous":
        return previous, current
    return current, previous


def _is_code(section: str, flags: dict) -> bool:
    return section.startswith(".text") or "x" in flags.get(section, "")


def instrument(asm: str, tu: str, preempt: bool = True) -> tuple[str, dict]:
    """Instrument one translation unit's assembly. Returns (new assembly, block info).
    ``preempt=False``: probes that never give way (:data:`PROBE_NO_PREEMPT`).

    Block info: ``{"tu": name, "blocks": [[plain, {op: n}, function], ...]}`` in counter
    order; the counters are ``.Ldpurt_bbc`` (``dpurt_bbc`` section, 8 bytes each).
    """
    lines = asm.splitlines()
    functions = set()
    flags: dict = {}
    targets = set()
    # pass 1: function symbols, section flags, referenced local labels
    section, previous, stack = ".text", ".text", []
    for line in lines:
        s = line.strip()
        if s.startswith(".type") and "@function" in s:
            functions.add(s.split(None, 1)[1].split(",")[0].strip())
        if s.startswith((".section", ".pushsection")):
            parts = [p.strip() for p in s.split(None, 1)[1].split(",")]
            if len(parts) > 1:
                flags[parts[0].strip('"')] = parts[1].strip('"')
        if s.startswith((".text", ".data", ".bss", ".section", ".pushsection", ".popsection",
                         ".previous")):
            section, previous = _section_of(s, section, stack, previous)
            continue
        if not s or s.startswith("#") or _LABEL.match(s):
            continue
        if s.startswith("."):
            if section.startswith(".rodata") or section.startswith(".data.rel.ro"):
                targets.update(_LOCAL_REF.findall(s))
            continue
        m, ops = split_instruction(s)
        if m and m.startswith("j"):
            targets.update(_LOCAL_REF.findall(ops))

    # pass 2: insert counters
    out = []
    blocks = []
    pending_instr: dict = {}
    cur = None                   # [plain, ops, function]
    pending = False
    function = "?"
    section, previous, stack = ".text", ".text", []
    instr_lines = []             # (index in lines, mnemonic) to look one ahead
    for i, line in enumerate(lines):
        s = line.strip()
        if s and not s.startswith("#") and not s.startswith(".") and not _LABEL.match(s):
            instr_lines.append(i)
    next_instr = {}
    for a, b in zip(instr_lines, instr_lines[1:]):
        next_instr[a] = split_instruction(lines[b].strip())[0]

    fixed = None                 # a "dpurt-insn N" block's cost: N, then 0 to its end
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith((".text", ".data", ".bss", ".section", ".pushsection", ".popsection",
                         ".previous")):
            section, previous = _section_of(s, section, stack, previous)
            cur = None
            out.append(line)
            continue
        insn = _FIXED_COST.match(s)
        if insn:
            fixed = float(insn.group(2)) if insn.group(1) == "insn" else insn.group(2)
        elif s.startswith("#NO_APP"):
            fixed = None
        code = _is_code(section, flags)
        lab = _LABEL.match(s)
        if lab:
            name = lab.group(1)
            if code and (name in functions or name in targets):
                pending = True
                if name in functions:
                    function = name
            out.append(line)
            continue
        if not s or s.startswith("#") or s.startswith("."):
            out.append(line)
            continue
        if not code:
            out.append(line)
            continue
        m, ops = split_instruction(s)
        if pending or cur is None:
            k = len(blocks)
            cur = [0.0, {}, function]
            blocks.append(cur)
            pending_instr[id(cur)] = []
            out.extend((PROBE if preempt else PROBE_NO_PREEMPT).format(off=8 * k).splitlines())
            pending = False
        pending_instr[id(cur)].append((m, ops, next_instr.get(i), fixed))
        if fixed is not None:
            fixed = 0.0                   # the block's first instruction carries its cost
        out.append(line)
        if CONDITIONAL_JUMP.match(m) or m.startswith("call"):
            # after a call too: the instructions after it are charged when they run, after
            # whatever the callee did (a runtime call may read the clock or wait)
            pending = True
        elif m in ("jmp", "ret", "retq", "ud2") or m.startswith("jmp"):
            cur = None
    for blk in blocks:                # classify each block with its address registers
        instrs = pending_instr[id(blk)]
        regs = address_registers([(m, ops) for m, ops, _, _ in instrs])
        operands = dma_operand_moves(instrs) | three_operand_fusions(instrs)
        for i, (m, ops, nxt, cost) in enumerate(instrs):
            if i in operands:
                continue
            if isinstance(cost, str):   # a "dpurt-op NAME" block: one operation NAME
                blk[1][cost] = blk[1].get(cost, 0) + 1
                continue
            if cost is not None:        # a "dpurt-insn N" block: N for the whole block
                blk[0] += cost
                continue
            plain, op, k = classify(m, ops, nxt, regs)
            blk[0] += plain
            if op:
                blk[1][op] = blk[1].get(op, 0) + k
    n = max(len(blocks), 1)
    info = {"tu": tu, "blocks": blocks}
    out.append("\t.section\tdpurt_bbc,\"aw\",@nobits")
    out.append("\t.p2align 3")
    out.append(".Ldpurt_bbc:")
    out.append(f"\t.zero\t{8 * n}")
    out.append("\t.section\tdpurt_bbw,\"aw\",@nobits")
    out.append("\t.p2align 3")
    out.append(".Ldpurt_bbw:")
    out.append(f"\t.zero\t{8 * n}")
    out.append("\t.hidden\t__dpurt_icount")
    if preempt:
        out.append("\t.hidden\t__dpurt_ilimit")
        out.append("\t.hidden\t__dpurt_preempt")
    text = json.dumps(info, separators=(",", ":")) + "\n"
    if not blocks:
        info["blocks"] = [[0.0, {}, "?"]]
        text = json.dumps(info, separators=(",", ":")) + "\n"
    out.append("\t.section\tdpurt_bbinfo,\"\",@progbits")
    for k in range(0, len(text), 200):
        chunk = text[k:k + 200].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.append(f'\t.ascii\t"{chunk}"')
    out.append("\t.text")
    return "\n".join(out) + "\n", info


def block_cost(block, op_instructions: dict) -> float:
    """DPU instructions charged per execution of one block."""
    plain, ops = block[0], block[1]
    return float(plain + sum(n * float(op_instructions.get(op, 1)) for op, n in ops.items()))


def parse_bbinfo(data: bytes) -> list:
    """The blocks of every translation unit, in counter order (link order)."""
    blocks = []
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip("\x00 \t")
        if line:
            blocks.extend(json.loads(line)["blocks"])
    return blocks
