/* buddy_alloc.h: a buddy allocator over a block of the WRAM heap (pimrl DPU runtime; the
 * SDK's API). buddy_init(size) takes `size` bytes (rounded up to a power of two, at least
 * 16) from mem_alloc; blocks are powers of two of at least 16 bytes, 8-byte aligned (fit
 * for DMA). buddy_alloc returns NULL and sets errno to EINVAL for a size of 0 or above the
 * heap, ENOMEM when no block is free; buddy_free of a pointer anywhere inside an allocated
 * block frees that block, of anything else sets errno to EINVAL.
 * Difference: the SDK initialises only at the first call after loading (its state and the
 * heap bytes it lives in stay in WRAM across launches); here the heap's bytes do not
 * survive a launch, so buddy_init starts over at every call: call it in every launch. */
#ifndef PIMRL_DPURT_BUDDY_ALLOC_H
#define PIMRL_DPURT_BUDDY_ALLOC_H

#include <stddef.h>

void buddy_init(size_t size_of_heap);
void buddy_reset(void);
void *buddy_alloc(size_t size);
void buddy_free(void *pointer);
void *buddy_realloc(void *ptr, size_t size);

#endif
