/* dpu_characteristics.h: the DPU's fixed resources (pimrl DPU runtime; SDK names and values). */
#ifndef PIMRL_DPURT_DPU_CHARACTERISTICS_H
#define PIMRL_DPURT_DPU_CHARACTERISTICS_H

#define DPU_NR_THREADS 24        /* hardware threads (tasklets at most) */
#define DPU_NR_ATOMIC_BITS 256   /* atomic bits: mutexes, barriers, semaphores */
#define DPU_NR_WORK_REGS 24      /* 32-bit work registers per thread */

#endif
