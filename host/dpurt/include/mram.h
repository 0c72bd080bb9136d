/* mram.h: MRAM <-> WRAM DMA (pimrl DPU runtime).
 * MRAM addresses are 32-bit DPU addresses (MRAM byte 0 is 0x08000000), so
 * (uint32_t)DPU_MRAM_HEAP_POINTER round-trips. The size must be a multiple of 8 in
 * [8, 2048] (else the DPU faults). As on the DPU, the DMA engine ignores the low three bits
 * of both addresses: a transfer at an address that is not a multiple of 8 works on the
 * address aligned down (counted per DPU as `dma_unaligned`; with PIMRL_DPURT_STRICT_DMA=1
 * in the environment it faults instead). The calling tasklet yields while the transfer is
 * "in flight". */
#ifndef PIMRL_DPURT_MRAM_H
#define PIMRL_DPURT_MRAM_H

#include <stdint.h>
#include "attributes.h"
#include "dpu_characteristics.h"

extern uint32_t __dpurt_mram_heap_addr;
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)(uintptr_t)__dpurt_mram_heap_addr)

void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes);
void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes);

#endif
