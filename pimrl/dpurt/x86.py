"""What an x86-64 instruction of gcc's assembly costs on a DPU: plain instructions, emulated
operations (the DPU has no FPU, and multiplies 8 bits at a time) and free ones, by operand
width (:func:`classify`); the argument moves of a DMA call (:func:`dma_operand_moves`) and the
shift-and-add pairs a DPU instruction fuses (:func:`three_operand_fusions`). The block
instrumentation (:mod:`pimrl.dpurt.instrument`) sums them per block (docs/dpu-runtime.md,
"Time").
"""
from __future__ import annotations

import re

#: Conditional jumps: they end a block and start one (the fall-through).
CONDITIONAL_JUMP = re.compile(r"^j(n?[abcegloszp]|n?[ab]e|n?[gl]e|p[eo]|[er]cxz)$")
# SSE scalar operations -> emulated DPU operations (the DPU has no FPU).
_FLOAT_OPS = {
    "addss": "float_add", "subss": "float_sub", "mulss": "float_mul", "divss": "float_div",
    "sqrtss": "float_div", "ucomiss": "float_cmp", "comiss": "float_cmp",
    "minss": "float_cmp", "maxss": "float_cmp", "cmpss": "float_cmp",
    "addsd": "double_add", "subsd": "double_sub", "mulsd": "double_mul",
    "divsd": "double_div", "sqrtsd": "double_div", "ucomisd": "float_cmp",
    "comisd": "float_cmp", "minsd": "float_cmp", "maxsd": "float_cmp", "cmpsd": "float_cmp",
    "cvtsi2ss": "float_add", "cvtsi2ssl": "float_add", "cvtsi2ssq": "float_add",
    "cvttss2si": "float_add", "cvtss2si": "float_add", "cvttss2sil": "float_add",
    "cvttss2siq": "float_add",
    "cvtsi2sd": "double_add", "cvtsi2sdl": "double_add", "cvtsi2sdq": "double_add",
    "cvttsd2si": "double_add", "cvtsd2si": "double_add", "cvttsd2sil": "double_add",
    "cvttsd2siq": "double_add", "cvtss2sd": "double_add", "cvtsd2ss": "double_add",
}
# Packed (vector) forms: as many emulated operations as lanes.
_PACKED = {"addps": ("float_add", 4), "subps": ("float_sub", 4), "mulps": ("float_mul", 4),
           "divps": ("float_div", 4), "addpd": ("double_add", 2), "subpd": ("double_sub", 2),
           "mulpd": ("double_mul", 2), "divpd": ("double_div", 2)}
# Free: alignment padding, control-flow markers.
_FREE = {"nop", "nopw", "nopl", "endbr64", "endbr32", "notrack"}
# Moves and address arithmetic: one DPU instruction even with a memory operand.
_MOVE_PREFIXES = ("mov", "lea", "push", "pop", "cmov", "set", "call", "jmp", "ret", "cvt",
                  "cqto", "cltq", "cltd", "cwtl", "cqo", "xchg", "prefetch", "pxor",
                  "xorps", "xorpd", "movs", "movz", "stos", "rep")

_ALU = ("add", "sub", "and", "or", "xor", "adc", "sbb", "neg", "not", "inc", "dec", "shl",
        "shr", "sar", "sal", "rol", "ror", "cmp", "test")
_REG_NAME = re.compile(r"%([a-z0-9]+)")
_REG_ONLY = re.compile(r"^%([a-z0-9]+)$")
_MEM = re.compile(r"\(([^)]*)\)")


def _reg_family(name: str) -> str:
    """``rax``/``eax``/``ax``/``al`` -> ``a``; ``r8``/``r8d``/``r8b`` -> ``r8``."""
    m = re.fullmatch(r"r(\d+)[dwb]?", name)
    if m:
        return "r" + m.group(1)
    name = name.lstrip("re")
    return {"al": "a", "bl": "b", "cl": "c", "dl": "d", "sil": "si", "dil": "di", "spl": "sp",
            "bpl": "bp", "ah": "a", "bh": "b", "ch": "c", "dh": "d"}.get(name, name.rstrip("x") or name)


def address_registers(operand_list) -> set:
    """Register families a block uses as addresses (bases and indexes of its memory operands,
    destinations of ``lea``): the host's 64-bit pointers, which are 32-bit on a DPU."""
    regs = {"sp", "bp", "ip"}
    for m, ops in operand_list:
        for inner in _MEM.findall(ops):
            regs.update(_reg_family(r) for r in _REG_NAME.findall(inner))
        if m.startswith("lea"):
            dest = _REG_NAME.findall(ops.rsplit(",", 1)[-1])
            regs.update(_reg_family(r) for r in dest)
    return regs


#: x86 operand size of a mnemonic's size suffix (AT&T syntax), in bits.
_SUFFIX_BITS = {"b": 8, "w": 16, "l": 32, "q": 64}
_REG_BITS = {**{r: 64 for r in ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rsp", "rbp", "rip")},
             **{r: 32 for r in ("eax", "ebx", "ecx", "edx", "esi", "edi", "esp", "ebp", "eip")},
             **{r: 16 for r in ("ax", "bx", "cx", "dx", "si", "di", "sp", "bp")},
             **{r: 8 for r in ("al", "bl", "cl", "dl", "ah", "bh", "ch", "dh", "sil", "dil",
                               "spl", "bpl")}}
#: The emulated integer multiplies and divisions: stem and size suffix.
_MULDIV = re.compile(r"^(imul|mul|mulx|idiv|div)([bwlq]?)$")
#: Shifts and rotates, whose ``%cl`` count is no data operand.
_SHIFTS = ("shl", "shr", "sar", "sal", "rol", "ror")


def register_bits(name: str) -> int | None:
    """Width in bits of general-purpose register ``name`` (without ``%``): ``rax``/``r8`` 64,
    ``eax``/``r8d`` 32, ``ax``/``r8w`` 16, ``al``/``r8b`` 8; None for any other register."""
    m = re.fullmatch(r"r(\d+)([dwb]?)", name)
    if m:
        return {"": 64, "d": 32, "w": 16, "b": 8}[m.group(2)]
    return _REG_BITS.get(name)


def split_operands(operands: str) -> list:
    """An instruction's operands, split at the commas outside parentheses (a memory operand
    ``disp(base,index,scale)`` stays one operand)."""
    parts, depth, cur = [], 0, []
    for ch in operands:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _register_operands(operands: str) -> list:
    """The register operands (``%eax``, not the registers of a memory operand's address)."""
    regs = []
    for o in split_operands(operands):
        m = _REG_ONLY.match(o)
        if m:
            regs.append(m.group(1))
    return regs


def operand_bits(mnemonic: str, operands: str, suffix: str | None = None) -> int | None:
    """x86 operand size of an integer instruction, in bits: its mnemonic's size suffix
    (``l`` 32, ``q`` 64, ``w`` 16, ``b`` 8; ``suffix`` when the caller has split it off,
    else the last letter of ``mnemonic`` if what precedes it is an arithmetic stem), or,
    without one, its last register operand's width (``imul %rsi, %rdi``: 64). Never the
    registers of a memory operand's address ``disp(base,index,scale)``, which are the
    host's 64-bit pointers whatever the data's width (``imull 0(%rbp,%rax), %edx``: 32).
    None when neither tells (a memory operand alone, SSE registers)."""
    if suffix is None:
        stem, last = mnemonic[:-1], mnemonic[-1:]
        if last in _SUFFIX_BITS and stem in _ALU + ("imul", "mul", "mulx", "idiv", "div"):
            suffix = last
    if suffix:
        return _SUFFIX_BITS[suffix]
    for r in reversed(_register_operands(operands)):
        bits = register_bits(r)
        if bits is not None:
            return bits
    return None


def _wide_data(mnemonic: str, operands: str, addr_regs) -> bool:
    """A 64-bit integer operation on data (not on a pointer): two DPU instructions. The
    width is :func:`operand_bits`; data means no register operand (a shift's ``%cl`` count
    aside) is one the block uses as an address; a 64-bit memory form is data."""
    if operand_bits(mnemonic, operands) != 64 or addr_regs is None:
        return False
    regs = _register_operands(operands)
    if mnemonic.startswith(_SHIFTS) and len(regs) > 1 and regs[0] == "cl":
        regs = regs[1:]
    return not any(_reg_family(r) in addr_regs for r in regs) or "(" in operands


def classify(mnemonic: str, operands: str, next_mnemonic: str | None,
             addr_regs: set | None = None) -> tuple[float, str | None, int]:
    """(plain DPU instructions, emulated operation or None, how many) for one x86 instruction.

    The DPU is a 32-bit load/store machine (docs/dpu-runtime.md, "Time"); the rules are
    calibrated on PrIM's arithmetic loop ``a[i] = a[i] OP k`` (6 DPU instructions an INT32
    element, 7 an INT64 one, plus the routine of an emulated operation):

    - SSE arithmetic is the DPU's soft-float routine; ``imul``/``mul``/``div``/``idiv`` are
      the emulated 32- or 64-bit routines by operand width (:func:`operand_bits`: the size
      suffix, else the register operands, never a memory operand's address registers), a
      one-operand ``mul``/``imul`` (32 x 32 -> 64) the 64-bit one; a multiply by a constant
      is two shift-and-add instructions;
    - an arithmetic instruction that reads and writes memory is a load, the operation and a
      store (3); one that reads memory a load and the operation (2);
    - a compare (or test) and its conditional jump are two instructions;
    - a 64-bit operation on data (width as above; not on a register the block uses as an
      address: pointers are 32-bit on a DPU) takes two 32-bit instructions, its memory forms
      one more;
    - moves, loads and stores of any width (the DPU loads and stores 64-bit pairs), ``lea``,
      calls and returns are one instruction; everything else is one;
    - loading a global's address from the GOT (position-independent host code) is none: a
      DPU's WRAM addresses are immediates of its loads and stores.
    """
    m = mnemonic
    if m in _FREE or m.startswith("."):
        return 0.0, None, 0
    if m in ("rep", "repz", "repnz", "lock"):
        return 1.0, None, 0
    if m.startswith("mov") and "@GOTPCREL(%rip)" in operands:
        return 0.0, None, 0                          # a global's address: an immediate on a DPU
    base = m[1:] if m.startswith("v") and (m[1:] in _FLOAT_OPS or m[1:] in _PACKED) else m
    if base in _FLOAT_OPS:
        return 0.0, _FLOAT_OPS[base], 1
    if base in _PACKED:
        op, lanes = _PACKED[base]
        return 0.0, op, lanes
    muldiv = _MULDIV.match(base)
    if muldiv:
        stem, suffix = muldiv.groups()
        bits = operand_bits(base, operands, suffix)
        if stem.endswith("div"):
            return 0.0, "int64_div" if bits == 64 else "int32_div", 1
        ops = split_operands(operands)
        if ops and ops[0].startswith("$"):
            return 2.0, None, 0                     # constant multiply: shifts and adds
        # one operand (edx:eax = eax * src) and mulx: a 32 x 32 -> 64 widening multiply
        widening = len(ops) == 1 or stem == "mulx"
        return 0.0, "int64_mul" if bits == 64 or (widening and bits == 32) else "int32_mul", 1
    alu = base.startswith(_ALU) and not base.startswith(_MOVE_PREFIXES)
    wide = alu and _wide_data(base, operands, addr_regs)
    if (base.startswith("cmp") or base.startswith("test")) and next_mnemonic and CONDITIONAL_JUMP.match(next_mnemonic):
        return (2.0 if wide else 1.0) + (1.0 if "(" in operands else 0.0), None, 0
    if "(" in operands and alu:
        ops = [o.strip() for o in operands.split(",")]
        rmw = len(ops) == 1 or "(" in ops[-1]
        if base.startswith(("cmp", "test")):
            rmw = False
        return (3.0 if rmw else 2.0) + (1.0 if wide else 0.0), None, 0
    if "(" in operands and not base.startswith(_MOVE_PREFIXES):
        return 2.0, None, 0                         # load + operation
    if wide:
        return 2.0, None, 0
    return 1.0, None, 0


#: The DMA routines: on a DPU each is one instruction (``ldma``/``sdma``) whose operands are
#: the two addresses in registers and the size as an immediate or a register.
DMA_ROUTINES = ("mram_read", "mram_write")
_DMA_CALL = re.compile(r"\b(?:" + "|".join(DMA_ROUTINES) + r")\b")
#: The host's first three argument registers: wram/mram address and size of a DMA call.
_ARG_FAMILIES = ("di", "si", "d")
_PLAIN_SOURCE = re.compile(r"^(\$[-\w.+]+|%[a-z0-9]+)$")


def dma_operand_moves(instrs) -> set:
    """Indexes of the instructions of a block ending in a call of ``mram_read`` or
    ``mram_write`` that only place the call's arguments: the last write to each argument
    register before the call, if it is a move of an immediate or a register. On a DPU the
    call is one DMA instruction and these are its operands (the x86 calling convention's
    moves, not DPU instructions); an address computed for the call (``lea``, ``add``) stays
    counted. The call itself is counted once, as the DMA instruction."""
    if not instrs or not instrs[-1][0].startswith("call") or not _DMA_CALL.search(instrs[-1][1]):
        return set()
    free, seen = set(), set()
    for i in range(len(instrs) - 2, -1, -1):
        m, ops = instrs[i][0], instrs[i][1]
        parts = [o.strip() for o in ops.split(",")] if ops else []
        dest = _REG_NAME.fullmatch(parts[-1]) if parts else None
        family = _reg_family(dest.group(1)) if dest else None
        if family not in _ARG_FAMILIES or family in seen:
            continue
        seen.add(family)
        if (m.startswith("mov") and len(parts) == 2 and _PLAIN_SOURCE.match(parts[0])
                and "(" not in ops):
            free.add(i)
    return free


_SHIFT_IMM = ("sal", "shl", "shr")
_THREE_OPERAND = ("add", "sub", "and", "or", "xor", "sal", "shl", "shr", "sar", "neg", "not",
                  "inc", "dec")


def _base_op(mnemonic: str) -> str:
    """``addl`` -> ``add``, ``sall`` -> ``sal``: the operation without its size suffix."""
    stem = mnemonic[:-1]
    return stem if mnemonic[-1:] in "lqwb" and (stem in _THREE_OPERAND or stem in _SHIFT_IMM) \
        else mnemonic


def _operands(ops: str) -> list:
    return [o.strip() for o in ops.split(",")] if ops else []


def _reads(mnemonic: str, ops: str, family: str) -> bool:
    """Whether an instruction reads register ``family`` (any operand, addresses included;
    a plain move's destination is not read)."""
    parts = _operands(ops)
    if mnemonic.startswith("mov") and len(parts) == 2 and _REG_ONLY.match(parts[1]):
        parts = parts[:1]
    return any(_reg_family(r) == family for p in parts for r in _REG_NAME.findall(p))


def three_operand_fusions(instrs) -> set:
    """Indexes of instructions of a block that a DPU does not need, x86's two-operand forms
    being one three-operand DPU instruction with the next:

    - a register copy ``mov %a, %b`` followed by an operation that writes ``%b`` from it
      (``add $k, %b``, ``sar $16, %b``, ...): one ``add rc, ra, k`` or ``asr rc, ra, 16``;
    - a shift by a constant followed by an add of the shifted register (``shl $8, %r; add %r,
      %s`` or ``add %s, %r``): the DPU's ``lsl_add rc, ra, rb, 8`` (``lsr_add`` for ``shr``),
      when the shifted value is not read again (the DPU keeps ``rb`` unshifted).
    """
    fused = set()
    for i in range(len(instrs) - 1):
        if instrs[i][3] is not None or instrs[i + 1][3] is not None:
            continue
        m, ops = instrs[i][0], instrs[i][1]
        m2, ops2 = instrs[i + 1][0], instrs[i + 1][1]
        a, b = _operands(ops), _operands(ops2)
        if (m in ("movl", "movq") and len(a) == 2 and _REG_ONLY.match(a[0])
                and _REG_ONLY.match(a[1]) and _base_op(m2) in _THREE_OPERAND and b
                and _REG_ONLY.match(b[-1])
                and _reg_family(a[1][1:]) == _reg_family(b[-1][1:])
                and not any(_reg_family(r) == _reg_family(a[1][1:])
                            for p in b[:-1] for r in _REG_NAME.findall(p))):
            fused.add(i)
        elif (_base_op(m) in _SHIFT_IMM and len(a) == 2 and a[0].startswith("$")
              and _REG_ONLY.match(a[1]) and _base_op(m2) == "add" and len(b) == 2
              and all(_REG_ONLY.match(x) for x in b)):
            shifted = _reg_family(a[1][1:])
            src, dst = _reg_family(b[0][1:]), _reg_family(b[1][1:])
            if dst == shifted and src != shifted:
                fused.add(i)
            elif src == shifted and dst != shifted and not any(
                    _reads(mm, oo, shifted) for mm, oo, _, _ in instrs[i + 2:]):
                fused.add(i)
    return fused


def split_instruction(line: str):
    """(mnemonic, operands) of an instruction line."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None, ""
    parts = text.split(None, 1)
    m = parts[0]
    ops = parts[1] if len(parts) > 1 else ""
    if m in ("rep", "repz", "repe", "repnz", "repne", "lock", "notrack") and ops:
        inner = ops.split(None, 1)
        if m == "notrack":
            return inner[0], inner[1] if len(inner) > 1 else ""
        return m, ops
    return m, ops
