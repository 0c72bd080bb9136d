/* built_ins.h (pimrl DPU runtime): the DPU instruction builtins __builtin_<instruction>_<operand
 * kinds> (__builtin_add_rrr, __builtin_clz_rr, __builtin_cmpb4_rrr, __builtin_nop_, the 8x8
 * multiplies __builtin_mul_ul_ul_rrr ...). As in the UPMEM SDK, where this header defines
 * each of them as a macro of inline assembly, a DPU program that calls one includes
 * <built_ins.h>; without it the call does not build, here as on the SDK. They are defined in
 * dpurt_builtins.h (its second part, enabled by this header's guard), with which ones are
 * provided and how each is priced. */
#ifndef PIMRL_DPURT_BUILT_INS_H
#define PIMRL_DPURT_BUILT_INS_H
#include "defs.h"
#include "dpurt_builtins.h"
#endif
