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
               "seqread error: invalid cache size defined");

typedef uintptr_t seqreader_buffer_t;
typedef struct {
    seqreader_buffer_t wram_cache;   /* 2 * SEQREAD_CACHE_SIZE bytes */
    uintptr_t mram_addr;             /* MRAM address of wram_cache[0] */
} seqreader_t;

static inline seqreader_buffer_t seqread_alloc(void)
{
    return (seqreader_buffer_t)mem_alloc(2 * SEQREAD_CACHE_SIZE);
}

static inline void *seqread_init(seqreader_buffer_t cache, __mram_ptr void *mram_addr,
                                 seqreader_t *reader)
{
    uintptr_t addr = (uintptr_t)mram_addr;
    uintptr_t aligned = addr & ~(uintptr_t)7;
    reader->wram_cache = cache;
    reader->mram_addr = aligned;
    mram_read((__mram_ptr void *)aligned, (void *)cache, 2 * SEQREAD_CACHE_SIZE);
    return (void *)(cache + (addr - aligned));
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

/* Move the reader to mram_addr (any alignment); refills the cache unless the address is
 * already in its first half. Returns the pointer in the cache for mram_addr. */
static inline void *seqread_seek(__mram_ptr void *mram_addr, seqreader_t *reader)
{
    uintptr_t addr = (uintptr_t)mram_addr;
    if (addr >= reader->mram_addr && addr - reader->mram_addr < SEQREAD_CACHE_SIZE)
        return (void *)(reader->wram_cache + (addr - reader->mram_addr));
    return seqread_init(reader->wram_cache, mram_addr, reader);
}

static inline __mram_ptr void *seqread_tell(void *ptr, seqreader_t *reader)
{
    return (__mram_ptr void *)(reader->mram_addr + ((uintptr_t)ptr - reader->wram_cache));
}

#endif
