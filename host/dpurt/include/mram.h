/* mram.h: MRAM <-> WRAM DMA (pimrl DPU runtime).
 * MRAM addresses are 32-bit DPU addresses (MRAM byte 0 is 0x08000000), so
 * (uint32_t)DPU_MRAM_HEAP_POINTER round-trips. Both calls check the SDK's rules at run
 * time (8 <= n <= 2048, n a multiple of 8, both addresses 8-byte aligned) and fault the DPU
 * otherwise; the calling tasklet yields while the transfer is "in flight". */
#ifndef PIMRL_DPURT_MRAM_H
#define PIMRL_DPURT_MRAM_H

#include <stdint.h>
#include "attributes.h"

extern uint32_t __dpurt_mram_heap_addr;
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void *)(uintptr_t)__dpurt_mram_heap_addr)

void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes);
void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes);

#endif
