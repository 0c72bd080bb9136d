/* defs.h: tasklet identity and DPU control (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_DEFS_H
#define PIMRL_DPURT_DEFS_H

#include <stdint.h>
#include "attributes.h"
#include "macro_utils.h"
#include "sysdef.h"

#ifndef NR_TASKLETS
#define NR_TASKLETS 1
#endif

#define __PIMRL_DPURT__ 1

/* The id of the running tasklet, 0 .. NR_TASKLETS - 1. */
sysname_t me(void);
void halt(void) __attribute__((noreturn));
/* Remaining stack bytes of the running tasklet (as the model counts them). */
int check_stack(void);
/* The DPU's nop instruction: one instruction of time (delay loops). */
static inline void nop(void) { __asm__ volatile("# dpurt-insn 1\n\tnop"); }

/* A fault of this DPU (DPU_ERR_DPU_FAULT at launch), with a reason. __builtin_trap()
 * faults as the DPU's `fault` instruction does. */
void __dpurt_fault(const char *file, int line, const char *what) __attribute__((noreturn));
#define __builtin_trap() __dpurt_fault(__FILE__, __LINE__, "__builtin_trap()")
/* As in the SDK, halt() is the DPU's fault instruction: the DPU stops in fault (FAULT_HALT)
 * and dpu_launch reports DPU_ERR_DPU_FAULT. */
#define halt() __dpurt_fault(__FILE__, __LINE__, "halt() (FAULT_HALT)")
/* Let the other tasklets run (the system library's waiting loops). */
void __dpurt_yield(void);

#endif
