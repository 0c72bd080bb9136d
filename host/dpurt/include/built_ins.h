/* built_ins.h (pimrl DPU runtime): the DPU compiler's builtins. As in the UPMEM SDK, where
 * this header defines each __builtin_* instruction as a macro of inline assembly, a DPU
 * program that calls one includes <built_ins.h>; without it the call does not build, here
 * as on the SDK. The 8x8 multiplies: dpurt_builtins.h. */
#ifndef PIMRL_DPURT_BUILT_INS_H
#define PIMRL_DPURT_BUILT_INS_H
#include "defs.h"
#include "dpurt_builtins.h"
#endif
