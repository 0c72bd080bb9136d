/* mram_unaligned.h, implemented in DPU C (pimrl DPU runtime's system library): built like a
 * user's source, so its instructions and DMA are counted as the program's. */
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <string.h>

VMUTEX_INIT(__mram_unaligned_access_virtual_locks, 1 << __MRAM_UNALIGNED_ACCESS_LOG_NB_VLOCK, 1)
__dma_aligned uint8_t __mram_unaligned_access_buffer[DPU_NR_THREADS << 3];

#define CHUNK 2048u

void *mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes)
{
    uintptr_t a = (uintptr_t)from, lo = a & ~(uintptr_t)7;
    uintptr_t hi = (a + nb_of_bytes + 7) & ~(uintptr_t)7;
    uint8_t *w = (uint8_t *)(((uintptr_t)buffer + 7) & ~(uintptr_t)7);
    if (nb_of_bytes > CHUNK)
        __dpurt_fault(__FILE__, __LINE__, "mram_read_unaligned: more than 2048 bytes");
    for (uintptr_t p = lo; p < hi; p += CHUNK) {
        uintptr_t n = hi - p < CHUNK ? hi - p : CHUNK;
        mram_read((const __mram_ptr void *)p, w + (p - lo), (unsigned int)n);
    }
    return w + (a - lo);
}

/* Bytes [a, end) of the word at w, from `src`, under the word's lock. */
static void patch_word(uintptr_t w, uintptr_t a, uintptr_t end, const uint8_t *src)
{
    uint8_t *buf = &__mram_unaligned_access_buffer[me() << 3];
    uint16_t lock = __MRAM_UNALIGNED_VLOCK(w);
    vmutex_lock(&__mram_unaligned_access_virtual_locks, lock);
    mram_read((__mram_ptr void *)w, buf, 8);
    memcpy(buf + (a - w), src, end - a);
    mram_write(buf, (__mram_ptr void *)w, 8);
    vmutex_unlock(&__mram_unaligned_access_virtual_locks, lock);
}

void mram_write_unaligned(const void *from, __mram_ptr void *dest, unsigned nb_of_bytes)
{
    uintptr_t a = (uintptr_t)dest, end = a + nb_of_bytes;
    const uint8_t *src = (const uint8_t *)from;
    if (nb_of_bytes > CHUNK)
        __dpurt_fault(__FILE__, __LINE__, "mram_write_unaligned: more than 2048 bytes");
    if (((uintptr_t)from & 7) != (a & 7))
        __dpurt_fault(__FILE__, __LINE__, "mram_write_unaligned: the WRAM and MRAM addresses "
                      "must have the same alignment (address mod 8)");
    if (!nb_of_bytes)
        return;
    uintptr_t p = a;
    if (a & 7 || end - a < 8) {                       /* partial first word */
        uintptr_t w = a & ~(uintptr_t)7;
        uintptr_t stop = end < w + 8 ? end : w + 8;
        patch_word(w, a, stop, src);
        p = stop;
    }
    uintptr_t q = end & ~(uintptr_t)7;
    if (p < end && end & 7) {                         /* partial last word */
        patch_word(q, q, end, src + (q - a));
    } else {
        q = end;
    }
    for (; p < q; p += CHUNK) {                        /* whole words in between */
        uintptr_t n = q - p < CHUNK ? q - p : CHUNK;
        mram_write(src + (p - a), (__mram_ptr void *)p, (unsigned int)n);
    }
}
