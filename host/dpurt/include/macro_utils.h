/* macro_utils.h: preprocessor helpers of the SDK (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_MACRO_UTILS_H
#define PIMRL_DPURT_MACRO_UTILS_H

/* The C library defines its own __CONCAT (without expanding its arguments) in a header
 * stdint.h pulls in; pull it in first so the DPU definition below is the one that stays. */
#include <stdint.h>
#include "dpu_characteristics.h"

#undef __CONCAT
#define __PIMRL_STR2(x) #x
#define __STR(x) __PIMRL_STR2(x)
#define __PIMRL_CONCAT2(x, y) x##y
#define __CONCAT(x, y) __PIMRL_CONCAT2(x, y)

#endif
