/* fsb_allocator.h, implemented in DPU C (pimrl DPU runtime's system library). The scheduler
 * switches tasklets only at runtime calls, and none is made between reading and updating a
 * free list, so get and free are tasklet-safe as the SDK's are. */
#include <alloc.h>
#include <fsb_allocator.h>
#include <stdint.h>

fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks)
{
    unsigned int size = block_size < 8 ? 8 : (block_size + 7) & ~7u;
    fsb_allocator_t head = mem_alloc(sizeof(void *));
    uint8_t *blocks = mem_alloc((size_t)size * nb_of_blocks);
    void *next = NULL;
    for (unsigned int i = nb_of_blocks; i-- > 0;) {   /* list in address order */
        *(void **)(blocks + (size_t)i * size) = next;
        next = blocks + (size_t)i * size;
    }
    *head = next;
    return head;
}

void *fsb_get(fsb_allocator_t allocator)
{
    void *block = *allocator;
    if (block)
        *allocator = *(void **)block;
    return block;
}

void fsb_free(fsb_allocator_t allocator, void *ptr)
{
    *(void **)ptr = *allocator;
    *allocator = ptr;
}
