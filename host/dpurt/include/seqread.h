/* seqread.h: sequential MRAM readers (pimrl DPU runtime), built on mram_read.
 * SEQREAD_CACHE_SIZE (default 256, a power of two in [32, 1024]) sizes the cache: every
 * refill reads 2 * SEQREAD_CACHE_SIZE bytes, so near the end of an MRAM array it reads the
 * MRAM that follows it (the next variables or the heap), as on the DPU. */
#ifndef PIMRL_DPURT_SEQREAD_H
#define PIMRL_DPURT_SEQREAD_H

#include <stdint.h>
#include "alloc.h"
#include "mram.h"

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif
_Static_assert(SEQREAD_CACHE_SIZE == 32 || SEQREAD_CACHE_SIZE == 64 || SEQREAD_CACHE_SIZE == 128
               || SEQREAD_CACHE_SIZE == 256 || SEQREAD_CACHE_SIZE == 512 || SEQREAD_CACHE_SIZE == 1024,
               "SEQREAD_CACHE_SIZE must be 32, 64, 128, 256, 512 or 1024");

typedef uintptr_t seqreader_buffer_t;
typedef struct {
    seqreader_buffer_t wram_cache;   /* 2 * SEQREAD_CACHE_SIZE bytes */
    uintptr_t mram_addr;             /* MRAM address of wram_cache[0] */
} seqreader_t;

static inline seqreader_buffer_t seqread_alloc(void)
{
    return (seqreader_buffer_t)mem_alloc(2 * SEQREAD_CACHE_SIZE);
}

/* Move the reader to mram_addr (any alignment): as the SDK's, the cache holds the
 * SEQREAD_CACHE_SIZE-aligned page of the address and the next one, refilled unless the
 * address is in the page already cached. Returns the pointer in the cache for mram_addr. */
static inline void *seqread_seek(__mram_ptr void *mram_addr, seqreader_t *reader)
{
    uintptr_t target = (uintptr_t)mram_addr;
    uintptr_t off = target - reader->mram_addr;
    if (off & ~(uintptr_t)(SEQREAD_CACHE_SIZE - 1)) {
        uintptr_t page = target & ~(uintptr_t)(SEQREAD_CACHE_SIZE - 1);
        mram_read((__mram_ptr void *)page, (void *)reader->wram_cache, 2 * SEQREAD_CACHE_SIZE);
        reader->mram_addr = page;
        off = target - page;
    }
    return (void *)(reader->wram_cache + off);
}

static inline void *seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr,
                                 seqreader_t *reader)
{
    reader->wram_cache = cache;
    reader->mram_addr = ~(uintptr_t)0 & ~(uintptr_t)(SEQREAD_CACHE_SIZE - 1);  /* nothing cached */
    return seqread_seek(mram_addr, reader);
}

static inline void *seqread_get(void *ptr, uint32_t inc, seqreader_t *reader)
{
    uintptr_t p = (uintptr_t)ptr + inc;
    uintptr_t off = p - reader->wram_cache;
    if (off >= SEQREAD_CACHE_SIZE) {
        uintptr_t shift = off & ~(uintptr_t)(SEQREAD_CACHE_SIZE - 1);
        reader->mram_addr += shift;
        mram_read((__mram_ptr void *)reader->mram_addr, (void *)reader->wram_cache,
                  2 * SEQREAD_CACHE_SIZE);
        p -= shift;
    }
    return (void *)p;
}

static inline __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader)
{
    return (__mram_ptr void *)(reader->mram_addr + ((uintptr_t)ptr - reader->wram_cache));
}

#endif
