/* fsb_allocator.h: fixed-size block allocators (pimrl DPU runtime; the SDK's API). An
 * allocator is a pointer to the head of a free list threaded through the free blocks;
 * fsb_alloc takes its blocks from mem_alloc (block_size rounded up to a multiple of 8,
 * at least 8). fsb_get returns NULL when every block is in use. */
#ifndef PIMRL_DPURT_FSB_ALLOCATOR_H
#define PIMRL_DPURT_FSB_ALLOCATOR_H

typedef void **fsb_allocator_t;

fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks);
void *fsb_get(fsb_allocator_t allocator);
void fsb_free(fsb_allocator_t allocator, void *ptr);

#endif
