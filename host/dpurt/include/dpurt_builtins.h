/* dpurt_builtins.h (pimrl DPU runtime): the 8x8 multiplies of the SDK's <built_ins.h>, which
 * includes this file (a DPU program includes <built_ins.h>, not this file).
 *
 * The 8x8 multiplies: __builtin_mul_<x>_<y>_rrr(dst, a, b) sets dst to one byte of a times
 * one byte of b, each byte chosen by its letters: l the low byte (bits 0-7), h the next one
 * (bits 8-15); s signed, u unsigned. On a DPU each is one instruction (mul_ul_ul rc, ra, rb
 * and its eleven siblings); here each is x86 code inside an inline-assembly block that
 * begins with "dpurt-op mul8", which the instrumentation charges as one operation mul8 of
 * the hardware's operation table (one instruction). */
#ifndef PIMRL_DPURT_BUILTINS_H
#define PIMRL_DPURT_BUILTINS_H

#include <stdint.h>

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
#endif
