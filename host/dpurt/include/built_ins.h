/* built_ins.h (pimrl DPU runtime): the DPU compiler's builtins that have C equivalents. */
#ifndef PIMRL_DPURT_BUILT_INS_H
#define PIMRL_DPURT_BUILT_INS_H
#include "defs.h"
#endif
