/* alloc.h: the WRAM heap (pimrl DPU runtime). The heap starts empty at every boot; it holds
 * what WRAM leaves after the globals and NR_TASKLETS stacks, and mem_alloc beyond it faults
 * the DPU. As in the SDK, it brings in the fixed-size-block and buddy allocators. */
#ifndef PIMRL_DPURT_ALLOC_H
#define PIMRL_DPURT_ALLOC_H

#include <stddef.h>
#include "attributes.h"
#include "buddy_alloc.h"
#include "fsb_allocator.h"

/* size bytes, 8-byte aligned; never freed (but see mem_reset). */
void *mem_alloc(size_t size);
/* Forget every allocation; returns the start of the heap. */
void *mem_reset(void);

#endif
