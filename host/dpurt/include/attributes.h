/* attributes.h: pimrl DPU runtime (host execution of UPMEM DPU programs).
 * Same names as the UPMEM SDK's; on the host they place variables in the sections the
 * pimrl loader maps to WRAM (ordinary globals), MRAM (dpu_mram / dpu_mram_noinit) and the
 * atomic bits (dpurt_atomic). */
#ifndef PIMRL_DPURT_ATTRIBUTES_H
#define PIMRL_DPURT_ATTRIBUTES_H

#define DEPRECATED __attribute__((deprecated))
#if __STDC_VERSION__ >= 201112L
#define __NO_RETURN _Noreturn
#else
#define __NO_RETURN
#endif

#define __aligned(a) __attribute__((aligned(a)))
#define __dma_aligned __attribute__((aligned(8)))
#define __mram_ptr
#define __mram __attribute__((section("dpu_mram"), aligned(8), used))
#define __mram_noinit __attribute__((section(".bss.dpu_mram_noinit"), aligned(8), used))
/* "keep": the DPU linker must not drop them; they are never dropped here. */
#define __mram_keep __mram
#define __mram_noinit_keep __mram_noinit
#define __mram_fast __mram
#define __host __attribute__((aligned(8), used))
#define __keep __attribute__((used))
#define __noinline __attribute__((noinline))
#define __atomic_bit __attribute__((section("dpurt_atomic")))
/* A WRAM variable the DPU addresses as an immediate: an ordinary global here. */
#define __lower_data(name) __attribute__((used))
#define __section(s) __attribute__((section(s)))
#define __used __attribute__((used))
#define __weak __attribute__((weak))

#endif
