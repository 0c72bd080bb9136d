/* dpurt_builtins.h (pimrl DPU runtime): the DPU compiler's builtins.
 *
 * Two parts, as on the SDK:
 *
 * 1. The DPU clang's own builtins (its BuiltinsDPU.def: __builtin_dpu_tid, __builtin_dpu_ldma,
 *    __builtin_dpu_sdma, __builtin_dpu_seqread_get), which a program may call without any
 *    header. The compiler driver force-includes this file into every DPU source
 *    (pimrl/dpurt/cc.py, -include) for them; only they are defined then.
 * 2. The instruction builtins __builtin_<instruction>_<operand kinds>, which the SDK's
 *    <built_ins.h> defines as macros of inline assembly: defined only once <built_ins.h>
 *    (which includes this file again) is included, so without it a call does not build, here
 *    as on the SDK (the link names the undefined builtin and the line of the call).
 *
 * Operands as in the SDK: rc the destination (an lvalue), ra / rb registers (any integer
 * expression), an immediate a string literal pasted into the instruction ("12", "-1",
 * "0x7f"), as the SDK's macros paste it into their assembly. Each builtin is one DPU
 * instruction: its x86 code is an inline-assembly block whose first line is "dpurt-insn 1"
 * (the 8x8 multiplies: "dpurt-op mul8", one operation mul8 of the hardware's table), which
 * pimrl/dpurt/instrument.py charges as that, whatever the x86 code's length. The x86 code
 * never branches (a branch would split the instrumented block).
 *
 * Not provided (docs/dpu-runtime.md, "DPU builtins"): the forms that set rc from a condition
 * or jump (_rrrc, _rrrci, _rric, _rrici, _rrif, _zrr ...: C cannot branch on them, and their
 * condition codes are not modelled): calling one is a compile-time error naming it; the
 * carry forms (addc, subc, rsubc: the carry of the previous DPU instruction does not exist
 * in C), the 64-bit (.s / .u, dc) forms, lslx / lsrx / lsl1x / lsr1x, hash, sats, time,
 * time_cfg, the loads, stores, DMA, synchronisation and control instructions: not defined, so
 * the link fails naming the builtin and the line of the call. */

/* ------------------------------------------------------------------ part 1 */
#ifndef PIMRL_DPURT_COMPILER_BUILTINS_H
#define PIMRL_DPURT_COMPILER_BUILTINS_H

/* Reserved names bound to the runtime's symbols (asm labels), so that the force-included
 * part declares nothing a program could collide with. mram_read / mram_write keep their
 * symbol names: the instrumentation prices a call of them as one DMA instruction. */
unsigned int __dpurt_builtin_tid(void) __asm__("me");
void __dpurt_builtin_ldma(const void *mram, void *wram, unsigned int nb_of_bytes) __asm__("mram_read");
void __dpurt_builtin_sdma(const void *wram, void *mram, unsigned int nb_of_bytes) __asm__("mram_write");
void __dpurt_builtin_unsupported_seqread(void)
    __attribute__((error("__builtin_dpu_seqread_get is the SDK's internal step of seqread_get(): "
                         "the pimrl DPU runtime implements seqread_get() (<seqread.h>) without it")));

/* The running tasklet's id (the DPU's id register). */
#define __builtin_dpu_tid() __dpurt_builtin_tid()
/* MRAM -> WRAM and WRAM -> MRAM DMA (ldma / sdma): the WRAM address first, as in the SDK. */
#define __builtin_dpu_ldma(wram, mram, nb_of_bytes) \
    __dpurt_builtin_ldma((const void *)(mram), (void *)(wram), (unsigned int)(nb_of_bytes))
#define __builtin_dpu_sdma(wram, mram, nb_of_bytes) \
    __dpurt_builtin_sdma((const void *)(wram), (void *)(mram), (unsigned int)(nb_of_bytes))
#define __builtin_dpu_seqread_get(...) __dpurt_builtin_unsupported_seqread()

#endif /* PIMRL_DPURT_COMPILER_BUILTINS_H */

/* ------------------------------------------------------------------ part 2 */
#if defined(PIMRL_DPURT_BUILT_INS_H) && !defined(PIMRL_DPURT_BUILTINS_H)
#define PIMRL_DPURT_BUILTINS_H

#include <stdint.h>

/* One DPU instruction computing rc from x86 code `code`: %0 the result, %1 a scratch
 * register, %2 ra, %3 rb (every operand 32-bit: %k). */
#define __DPURT_INSN(code, ...)                                                             \
    __extension__({                                                                         \
        uint32_t __dpurt_rc, __dpurt_tmp;                                                   \
        __asm__ volatile("# dpurt-insn 1\n\t" code                                          \
                         : "=&r"(__dpurt_rc), "=&r"(__dpurt_tmp) : __VA_ARGS__ : "cc");      \
        (void)__dpurt_tmp;                                                                  \
        __dpurt_rc;                                                                         \
    })
#define __DPURT_RR(rc, ra, code) ((rc) = __DPURT_INSN(code, "r"((uint32_t)(ra))))
#define __DPURT_RRR(rc, ra, rb, code) \
    ((rc) = __DPURT_INSN(code, "r"((uint32_t)(ra)), "r"((uint32_t)(rb))))
/* rb in %ecx: the count of an x86 shift by a register (which, as the DPU's, uses its low 5
 * bits). */
#define __DPURT_RRC(rc, ra, rb, code) \
    ((rc) = __DPURT_INSN(code, "r"((uint32_t)(ra)), "c"((uint32_t)(rb))))
/* An immediate shift count is a DPU u5: 0..31, else the build fails (the assembler's
 * .error), as the SDK's assembler refuses it (x86 would take it modulo 32). */
#define __DPURT_U5(name, imm)                                                               \
    ".if (" imm ") < 0 || (" imm ") > 31\n\t.error \"" name ": shift " imm                  \
    " is not in 0..31\"\n\t.endif\n\t"

/* rc = op(ra, rb) and rc = op(ra, imm) from one x86 two-operand instruction `op` (on a copy
 * of ra); with `not`, the complement of the result (nand, nor, nxor). */
#define __DPURT_OP_RRR(rc, ra, rb, op, post) __DPURT_RRR(rc, ra, rb, "movl %k2, %k0\n\t" op " %k3, %k0" post)
#define __DPURT_OP_RRI(rc, ra, imm, op, post) __DPURT_RR(rc, ra, "movl %k2, %k0\n\t" op " $" imm ", %k0" post)
#define __DPURT_NOT "\n\tnotl %k0"

/* --- arithmetic */
#define __builtin_add_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "addl", "")
#define __builtin_add_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "addl", "")
#define __builtin_sub_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "subl", "")
/* sub rc, imm, ra: rc = imm - ra (the DPU's sub with an immediate first operand) */
#define __builtin_sub_rir(rc, imm, ra) __DPURT_RR(rc, ra, "movl $" imm ", %k0\n\tsubl %k2, %k0")
/* rsub rc, ra, rb: rc = rb - ra */
#define __builtin_rsub_rrr(rc, ra, rb) __DPURT_RRR(rc, ra, rb, "movl %k3, %k0\n\tsubl %k2, %k0")

/* --- logic */
#define __builtin_and_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "andl", "")
#define __builtin_and_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "andl", "")
#define __builtin_or_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "orl", "")
#define __builtin_or_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "orl", "")
#define __builtin_xor_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "xorl", "")
#define __builtin_xor_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "xorl", "")
#define __builtin_nand_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "andl", __DPURT_NOT)
#define __builtin_nand_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "andl", __DPURT_NOT)
#define __builtin_nor_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "orl", __DPURT_NOT)
#define __builtin_nor_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "orl", __DPURT_NOT)
#define __builtin_nxor_rrr(rc, ra, rb) __DPURT_OP_RRR(rc, ra, rb, "xorl", __DPURT_NOT)
#define __builtin_nxor_rri(rc, ra, imm) __DPURT_OP_RRI(rc, ra, imm, "xorl", __DPURT_NOT)
/* andn / orn complement ra: rc = ~ra & rb, rc = ~ra | rb */
#define __builtin_andn_rrr(rc, ra, rb) __DPURT_RRR(rc, ra, rb, "movl %k2, %k0\n\tnotl %k0\n\tandl %k3, %k0")
#define __builtin_andn_rri(rc, ra, imm) __DPURT_RR(rc, ra, "movl %k2, %k0\n\tnotl %k0\n\tandl $" imm ", %k0")
#define __builtin_orn_rrr(rc, ra, rb) __DPURT_RRR(rc, ra, rb, "movl %k2, %k0\n\tnotl %k0\n\torl %k3, %k0")
#define __builtin_orn_rri(rc, ra, imm) __DPURT_RR(rc, ra, "movl %k2, %k0\n\tnotl %k0\n\torl $" imm ", %k0")

/* --- shifts and rotations by rb (its low 5 bits) or by an immediate 0..31; lsl1 / lsr1
 * shift ones in: ~(~ra << n), ~(~ra >> n) */
#define __DPURT_SHIFT_RRR(rc, ra, rb, op, pre, post) \
    __DPURT_RRC(rc, ra, rb, "movl %k2, %k0" pre "\n\t" op " %%cl, %k0" post)
#define __DPURT_SHIFT_RRI(name, rc, ra, imm, op, pre, post) \
    __DPURT_RR(rc, ra, __DPURT_U5(name, imm) "movl %k2, %k0" pre "\n\t" op " $" imm ", %k0" post)
#define __builtin_asr_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "sarl", "", "")
#define __builtin_asr_rri(rc, ra, imm) __DPURT_SHIFT_RRI("__builtin_asr_rri", rc, ra, imm, "sarl", "", "")
#define __builtin_lsl_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "shll", "", "")
#define __builtin_lsl_rri(rc, ra, imm) __DPURT_SHIFT_RRI("__builtin_lsl_rri", rc, ra, imm, "shll", "", "")
#define __builtin_lsr_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "shrl", "", "")
#define __builtin_lsr_rri(rc, ra, imm) __DPURT_SHIFT_RRI("__builtin_lsr_rri", rc, ra, imm, "shrl", "", "")
#define __builtin_rol_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "roll", "", "")
#define __builtin_rol_rri(rc, ra, imm) __DPURT_SHIFT_RRI("__builtin_rol_rri", rc, ra, imm, "roll", "", "")
#define __builtin_ror_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "rorl", "", "")
#define __builtin_ror_rri(rc, ra, imm) __DPURT_SHIFT_RRI("__builtin_ror_rri", rc, ra, imm, "rorl", "", "")
#define __builtin_lsl1_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "shll", __DPURT_NOT, __DPURT_NOT)
#define __builtin_lsl1_rri(rc, ra, imm) \
    __DPURT_SHIFT_RRI("__builtin_lsl1_rri", rc, ra, imm, "shll", __DPURT_NOT, __DPURT_NOT)
#define __builtin_lsr1_rrr(rc, ra, rb) __DPURT_SHIFT_RRR(rc, ra, rb, "shrl", __DPURT_NOT, __DPURT_NOT)
#define __builtin_lsr1_rri(rc, ra, imm) \
    __DPURT_SHIFT_RRI("__builtin_lsr1_rri", rc, ra, imm, "shrl", __DPURT_NOT, __DPURT_NOT)

/* --- shift-and-add: lsl_add rc, rb, ra, n: rc = rb + (ra << n) (the DPU's operand order:
 * the added register first); lsl_sub: rb - (ra << n); lsr_add: rb + (ra >> n); rol_add:
 * rb + rol(ra, n). Here %2 is rb, %3 ra. */
#define __DPURT_SHIFT_ADD(name, rc, rb, ra, imm, shift, combine) \
    __DPURT_RRR(rc, rb, ra, __DPURT_U5(name, imm) "movl %k3, %k0\n\t" shift " $" imm ", %k0\n\t" combine)
#define __builtin_lsl_add_rrri(rc, rb, ra, imm) \
    __DPURT_SHIFT_ADD("__builtin_lsl_add_rrri", rc, rb, ra, imm, "shll", "addl %k2, %k0")
#define __builtin_lsl_sub_rrri(rc, rb, ra, imm) \
    __DPURT_SHIFT_ADD("__builtin_lsl_sub_rrri", rc, rb, ra, imm, "shll", "negl %k0\n\taddl %k2, %k0")
#define __builtin_lsr_add_rrri(rc, rb, ra, imm) \
    __DPURT_SHIFT_ADD("__builtin_lsr_add_rrri", rc, rb, ra, imm, "shrl", "addl %k2, %k0")
#define __builtin_rol_add_rrri(rc, rb, ra, imm) \
    __DPURT_SHIFT_ADD("__builtin_rol_add_rrri", rc, rb, ra, imm, "roll", "addl %k2, %k0")

/* --- counts: leading zeros (32 for 0), leading ones, leading sign bits (the bits equal to
 * bit 31, bit 31 included: clz of a non-negative ra, clo of a negative one), all ones.
 * bsr leaves ZF set for 0, then the cmov makes the index -1, i.e. 32 leading zeros. */
#define __DPURT_CLZ_OF_TMP "bsrl %k1, %k0\n\tmovl $-1, %k1\n\tcmovzl %k1, %k0\n\tnegl %k0\n\taddl $31, %k0"
#define __builtin_clz_rr(rc, ra) __DPURT_RR(rc, ra, "movl %k2, %k1\n\t" __DPURT_CLZ_OF_TMP)
#define __builtin_clo_rr(rc, ra) __DPURT_RR(rc, ra, "movl %k2, %k1\n\tnotl %k1\n\t" __DPURT_CLZ_OF_TMP)
#define __builtin_cls_rr(rc, ra) \
    __DPURT_RR(rc, ra, "movl %k2, %k1\n\tsarl $31, %k1\n\txorl %k2, %k1\n\t" __DPURT_CLZ_OF_TMP)
/* population count without popcnt (not on every x86-64) */
#define __builtin_cao_rr(rc, ra)                                                            \
    __DPURT_RR(rc, ra,                                                                      \
               "movl %k2, %k0\n\tmovl %k0, %k1\n\tshrl $1, %k1\n\tandl $0x55555555, %k1\n\t"     \
               "subl %k1, %k0\n\tmovl %k0, %k1\n\tshrl $2, %k1\n\tandl $0x33333333, %k0\n\t"    \
               "andl $0x33333333, %k1\n\taddl %k1, %k0\n\tmovl %k0, %k1\n\tshrl $4, %k1\n\t"    \
               "addl %k1, %k0\n\tandl $0x0f0f0f0f, %k0\n\timull $0x01010101, %k0, %k0\n\t"      \
               "shrl $24, %k0")

/* --- sign / zero extension of the low byte or half-word */
#define __builtin_extsb_rr(rc, ra) __DPURT_RR(rc, ra, "movsbl %b2, %k0")
#define __builtin_extsh_rr(rc, ra) __DPURT_RR(rc, ra, "movswl %w2, %k0")
#define __builtin_extub_rr(rc, ra) __DPURT_RR(rc, ra, "movzbl %b2, %k0")
#define __builtin_extuh_rr(rc, ra) __DPURT_RR(rc, ra, "movzwl %w2, %k0")

/* --- moves */
#define __builtin_move_rr(rc, ra) __DPURT_RR(rc, ra, "movl %k2, %k0")
#define __builtin_move_ri(rc, imm) ((rc) = __DPURT_INSN("movl $" imm ", %k0", "i"(0)))

/* --- cmpb4: byte i of rc is 1 where byte i of ra equals byte i of rb, else 0 (a zero-byte
 * test of ra ^ rb, exact: no carry crosses a byte) */
#define __builtin_cmpb4_rrr(rc, ra, rb)                                                     \
    __DPURT_RRR(rc, ra, rb,                                                                 \
                "movl %k2, %k0\n\txorl %k3, %k0\n\tmovl %k0, %k1\n\tandl $0x7f7f7f7f, %k1\n\t"  \
                "addl $0x7f7f7f7f, %k1\n\torl %k0, %k1\n\torl $0x7f7f7f7f, %k1\n\tnotl %k1\n\t" \
                "shrl $7, %k1\n\tmovl %k1, %k0")

/* --- nop: one instruction doing nothing (the delay loops of the synchronisation benchmarks) */
#define __builtin_nop_() __asm__ volatile("# dpurt-insn 1\n\tnop")

/* --- the 8x8 multiplies: __builtin_mul_<x>_<y>_rrr(dst, a, b) sets dst to one byte of a times
 * one byte of b, each byte chosen by its letters: l the low byte (bits 0-7), h the next one
 * (bits 8-15); s signed, u unsigned. On a DPU each is one instruction (mul_ul_ul rc, ra, rb
 * and its eleven siblings); here each is x86 code inside an inline-assembly block that
 * begins with "dpurt-op mul8", which the instrumentation charges as one operation mul8 of
 * the hardware's operation table (one instruction). */

/* The byte of input operand n into output operand r (32-bit). */
#define __DPURT_UL(r, n) "movzbl %b" #n ", %k" #r "\n\t"
#define __DPURT_SL(r, n) "movsbl %b" #n ", %k" #r "\n\t"
#define __DPURT_UH(r, n) "movl %k" #n ", %k" #r "\n\tshrl $8, %k" #r "\n\tmovzbl %b" #r ", %k" #r "\n\t"
#define __DPURT_SH(r, n) "movl %k" #n ", %k" #r "\n\tshll $16, %k" #r "\n\tsarl $24, %k" #r "\n\t"

#define __DPURT_MUL8(name, type, sel_a, sel_b)                                              \
    static inline __attribute__((always_inline)) type __dpurt_##name(uint32_t a, uint32_t b) \
    {                                                                                     \
        uint32_t r, t;                                                                    \
        __asm__ volatile("# dpurt-op mul8 " #name "\n\t" sel_a(0, 2) sel_b(1, 3) "imull %k1, %k0"   \
                : "=&r"(r), "=&r"(t) : "r"(a), "r"(b));                                   \
        return (type)r;                                                                   \
    }
__DPURT_MUL8(mul_ul_ul, uint32_t, __DPURT_UL, __DPURT_UL)
__DPURT_MUL8(mul_ul_uh, uint32_t, __DPURT_UL, __DPURT_UH)
__DPURT_MUL8(mul_uh_ul, uint32_t, __DPURT_UH, __DPURT_UL)
__DPURT_MUL8(mul_uh_uh, uint32_t, __DPURT_UH, __DPURT_UH)
__DPURT_MUL8(mul_sl_sl, int32_t, __DPURT_SL, __DPURT_SL)
__DPURT_MUL8(mul_sl_sh, int32_t, __DPURT_SL, __DPURT_SH)
__DPURT_MUL8(mul_sh_sl, int32_t, __DPURT_SH, __DPURT_SL)
__DPURT_MUL8(mul_sh_sh, int32_t, __DPURT_SH, __DPURT_SH)
__DPURT_MUL8(mul_sl_ul, int32_t, __DPURT_SL, __DPURT_UL)
__DPURT_MUL8(mul_sl_uh, int32_t, __DPURT_SL, __DPURT_UH)
__DPURT_MUL8(mul_sh_ul, int32_t, __DPURT_SH, __DPURT_UL)
__DPURT_MUL8(mul_sh_uh, int32_t, __DPURT_SH, __DPURT_UH)
#undef __DPURT_MUL8

#define __builtin_mul_ul_ul_rrr(dst, a, b) ((dst) = __dpurt_mul_ul_ul((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_ul_uh_rrr(dst, a, b) ((dst) = __dpurt_mul_ul_uh((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_uh_ul_rrr(dst, a, b) ((dst) = __dpurt_mul_uh_ul((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_uh_uh_rrr(dst, a, b) ((dst) = __dpurt_mul_uh_uh((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sl_sl_rrr(dst, a, b) ((dst) = __dpurt_mul_sl_sl((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sl_sh_rrr(dst, a, b) ((dst) = __dpurt_mul_sl_sh((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sh_sl_rrr(dst, a, b) ((dst) = __dpurt_mul_sh_sl((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sh_sh_rrr(dst, a, b) ((dst) = __dpurt_mul_sh_sh((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sl_ul_rrr(dst, a, b) ((dst) = __dpurt_mul_sl_ul((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sl_uh_rrr(dst, a, b) ((dst) = __dpurt_mul_sl_uh((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sh_ul_rrr(dst, a, b) ((dst) = __dpurt_mul_sh_ul((uint32_t)(a), (uint32_t)(b)))
#define __builtin_mul_sh_uh_rrr(dst, a, b) ((dst) = __dpurt_mul_sh_uh((uint32_t)(a), (uint32_t)(b)))

/* --- the condition and jump forms of the instructions above: a compile-time error naming
 * the builtin (gcc's error attribute: the call does not build). They either jump (C cannot
 * branch on an assembly block) or set rc from a condition code, which is not modelled. */
#define __DPURT_NO(form)                                                                    \
    void __builtin_##form() __attribute__((error("__builtin_" #form ": the DPU's condition "  \
        "and jump forms are not available in the pimrl DPU runtime (C cannot branch on them; "  \
        "write the comparison in C)")));
#define __DPURT_NO_CC_RRR(op)                                                               \
    __DPURT_NO(op##_rrrc) __DPURT_NO(op##_rrrci) __DPURT_NO(op##_zrr) __DPURT_NO(op##_zrrc)   \
    __DPURT_NO(op##_zrrci)
#define __DPURT_NO_CC_RRI(op)                                                               \
    __DPURT_NO(op##_rric) __DPURT_NO(op##_rrici) __DPURT_NO(op##_rrif) __DPURT_NO(op##_zri)   \
    __DPURT_NO(op##_zric) __DPURT_NO(op##_zrici) __DPURT_NO(op##_zrif)
#define __DPURT_NO_CC_RR(op) __DPURT_NO(op##_rrci) __DPURT_NO(op##_zr) __DPURT_NO(op##_zrci)
#define __DPURT_NO_CC_RRRI(op) __DPURT_NO(op##_rrrici) __DPURT_NO(op##_zrri) __DPURT_NO(op##_zrrici)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"  /* any operands: each call is an error */
#pragma GCC diagnostic ignored "-Wpedantic"
__DPURT_NO_CC_RRR(add) __DPURT_NO_CC_RRI(add)
__DPURT_NO_CC_RRR(sub) __DPURT_NO(sub_rirc) __DPURT_NO(sub_rirci) __DPURT_NO(sub_rirf)
__DPURT_NO(sub_zir) __DPURT_NO(sub_zirc) __DPURT_NO(sub_zirci) __DPURT_NO(sub_zirf)
__DPURT_NO(sub_rric) __DPURT_NO(sub_rrici) __DPURT_NO(sub_rrif) __DPURT_NO(sub_zrici) __DPURT_NO(sub_zrif)
__DPURT_NO_CC_RRR(rsub)
__DPURT_NO_CC_RRR(and) __DPURT_NO_CC_RRI(and)
__DPURT_NO_CC_RRR(or) __DPURT_NO_CC_RRI(or)
__DPURT_NO_CC_RRR(xor) __DPURT_NO_CC_RRI(xor)
__DPURT_NO_CC_RRR(nand) __DPURT_NO_CC_RRI(nand)
__DPURT_NO_CC_RRR(nor) __DPURT_NO_CC_RRI(nor)
__DPURT_NO_CC_RRR(nxor) __DPURT_NO_CC_RRI(nxor)
__DPURT_NO_CC_RRR(andn) __DPURT_NO_CC_RRI(andn)
__DPURT_NO_CC_RRR(orn) __DPURT_NO_CC_RRI(orn)
__DPURT_NO_CC_RRR(asr) __DPURT_NO_CC_RRI(asr)
__DPURT_NO_CC_RRR(lsl) __DPURT_NO_CC_RRI(lsl)
__DPURT_NO_CC_RRR(lsr) __DPURT_NO_CC_RRI(lsr)
__DPURT_NO_CC_RRR(rol) __DPURT_NO_CC_RRI(rol)
__DPURT_NO_CC_RRR(ror) __DPURT_NO_CC_RRI(ror)
__DPURT_NO_CC_RRR(lsl1) __DPURT_NO_CC_RRI(lsl1)
__DPURT_NO_CC_RRR(lsr1) __DPURT_NO_CC_RRI(lsr1)
__DPURT_NO_CC_RRR(cmpb4)
__DPURT_NO_CC_RRRI(lsl_add) __DPURT_NO_CC_RRRI(lsl_sub) __DPURT_NO_CC_RRRI(lsr_add)
__DPURT_NO_CC_RRRI(rol_add)
__DPURT_NO_CC_RR(clz) __DPURT_NO_CC_RR(clo) __DPURT_NO_CC_RR(cls) __DPURT_NO_CC_RR(cao)
__DPURT_NO_CC_RR(extsb) __DPURT_NO_CC_RR(extsh) __DPURT_NO_CC_RR(extub) __DPURT_NO_CC_RR(extuh)
__DPURT_NO_CC_RR(move) __DPURT_NO(move_rici) __DPURT_NO(move_rrf) __DPURT_NO(move_rif)
#pragma GCC diagnostic pop
#undef __DPURT_NO_CC_RRR
#undef __DPURT_NO_CC_RRI
#undef __DPURT_NO_CC_RR
#undef __DPURT_NO_CC_RRRI
#undef __DPURT_NO

#endif /* PIMRL_DPURT_BUILTINS_H */
