/* buddy_alloc.h, implemented in DPU C (pimrl DPU runtime's system library).
 *
 * The heap is split in 16-byte units; tag[u] describes the block starting at unit u:
 * 0 if no block starts there, else its order + 1 (a block of 16 << order bytes), with
 * 0x80 set while it is allocated. No headers in the blocks, as in the SDK. Tasklet-safe
 * because the scheduler never switches inside these functions. */
#include <alloc.h>
#include <buddy_alloc.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#define UNIT 16u
#define USED 0x80u

static uint8_t *heap;
static uint8_t *tag;
static uint32_t units;          /* heap size / UNIT, a power of two */
static uint8_t max_order;

static uint8_t order_for(size_t size)
{
    uint8_t k = 0;
    while (((size_t)UNIT << k) < size)
        k++;
    return k;
}

void buddy_init(size_t size_of_heap)
{
    max_order = order_for(size_of_heap < UNIT ? UNIT : size_of_heap);
    units = 1u << max_order;
    heap = mem_alloc((size_t)UNIT * units);
    tag = mem_alloc(units);
    buddy_reset();
}

void buddy_reset(void)
{
    if (!tag)
        return;
    memset(tag, 0, units);
    tag[0] = (uint8_t)(max_order + 1);
}

void *buddy_alloc(size_t size)
{
    if (!heap || size == 0 || size > (size_t)UNIT * units) {
        errno = EINVAL;
        return NULL;
    }
    uint8_t want = order_for(size);
    uint32_t best = units;
    uint8_t best_order = 0xff;
    for (uint32_t u = 0; u < units;) {      /* the smallest free block that fits */
        uint8_t t = tag[u], k = (uint8_t)((t & ~USED) - 1);
        if (!(t & USED) && k >= want && k < best_order) {
            best = u;
            best_order = k;
            if (k == want)
                break;
        }
        u += 1u << k;
    }
    if (best == units) {
        errno = ENOMEM;
        return NULL;
    }
    while (best_order > want) {             /* split, keeping the lower half */
        best_order--;
        tag[best + (1u << best_order)] = (uint8_t)(best_order + 1);
    }
    tag[best] = (uint8_t)((want + 1) | USED);
    return heap + (size_t)best * UNIT;
}

/* The unit where the allocated block holding `pointer` starts, or units if none. */
static uint32_t block_of(void *pointer)
{
    uintptr_t p = (uintptr_t)pointer, h = (uintptr_t)heap;
    if (!heap || p < h || p >= h + (uintptr_t)UNIT * units)
        return units;
    uint32_t target = (uint32_t)((p - h) / UNIT);
    for (uint32_t u = 0; u < units;) {
        uint8_t k = (uint8_t)((tag[u] & ~USED) - 1);
        if (target < u + (1u << k))
            return (tag[u] & USED) ? u : units;
        u += 1u << k;
    }
    return units;
}

void buddy_free(void *pointer)
{
    if (!pointer)
        return;
    uint32_t u = block_of(pointer);
    if (u == units) {
        errno = EINVAL;
        return;
    }
    uint8_t k = (uint8_t)((tag[u] & ~USED) - 1);
    tag[u] = (uint8_t)(k + 1);
    while (k < max_order) {                 /* merge with a free buddy of the same order */
        uint32_t b = u ^ (1u << k);
        if (tag[b] != (uint8_t)(k + 1))
            break;
        uint32_t lo = u < b ? u : b;
        tag[u > b ? u : b] = 0;
        k++;
        tag[lo] = (uint8_t)(k + 1);
        u = lo;
    }
}

void *buddy_realloc(void *ptr, size_t size)
{
    if (!ptr)
        return buddy_alloc(size);
    if (size == 0) {
        buddy_free(ptr);
        return ptr;
    }
    uint32_t u = block_of(ptr);
    if (u == units) {
        errno = EINVAL;
        return NULL;
    }
    size_t have = (size_t)UNIT << ((tag[u] & ~USED) - 1);
    uint8_t *start = heap + (size_t)u * UNIT;
    if (size <= have)
        return start;
    uint8_t *bigger = buddy_alloc(size);
    if (!bigger)
        return NULL;
    memcpy(bigger, start, have);
    buddy_free(start);
    return bigger;
}
