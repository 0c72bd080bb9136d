/* attributes.h: pimrl DPU runtime (host execution of UPMEM DPU programs).
 * Same names as the UPMEM SDK's; on the host they place variables in the sections the
 * pimrl loader maps to WRAM (ordinary globals) and MRAM (dpu_mram / dpu_mram_noinit). */
#ifndef PIMRL_DPURT_ATTRIBUTES_H
#define PIMRL_DPURT_ATTRIBUTES_H

#define __dma_aligned __attribute__((aligned(8)))
#define __mram_ptr
#define __mram __attribute__((section("dpu_mram"), aligned(8), used))
#define __mram_noinit __attribute__((section(".bss.dpu_mram_noinit"), aligned(8), used))
#define __mram_fast __mram
#define __host __attribute__((used))
#define __keep __attribute__((used))
#define __noinline __attribute__((noinline))
#define __atomic_bit
#define __section(s) __attribute__((section(s)))
#define __used __attribute__((used))
#define __weak __attribute__((weak))

#endif
