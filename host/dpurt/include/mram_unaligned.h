/* mram_unaligned.h: MRAM access at any address and size (pimrl DPU runtime; the SDK's API).
 * Both calls move at most 2048 bytes. mram_read_unaligned reads the 8-byte words that cover
 * [from, from + n) into buffer (which must hold n + 16 bytes) and returns the pointer in
 * buffer to the byte at `from`. mram_write_unaligned writes n bytes from a WRAM address with
 * the same alignment as `dest`; the partial words at both ends are read, patched and written
 * back under the virtual mutex of their word, so tasklets writing neighbouring bytes do not
 * lose each other's updates. The *_atomic macros update a 4-byte int or a byte under the
 * same locks. */
#ifndef PIMRL_DPURT_MRAM_UNALIGNED_H
#define PIMRL_DPURT_MRAM_UNALIGNED_H

#include <stdint.h>
#include "defs.h"
#include "mram.h"
#include "vmutex.h"

#ifndef __MRAM_UNALIGNED_ACCESS_LOG_NB_VLOCK
#define __MRAM_UNALIGNED_ACCESS_LOG_NB_VLOCK 11
#endif

extern struct vmutex __mram_unaligned_access_virtual_locks;
extern __dma_aligned uint8_t __mram_unaligned_access_buffer[DPU_NR_THREADS << 3];

void *mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes);
void mram_write_unaligned(const void *from, __mram_ptr void *dest, unsigned nb_of_bytes);

/* The virtual lock of the 8-byte MRAM word holding address a. */
#define __MRAM_UNALIGNED_VLOCK(a) \
    ((uint16_t)(((uintptr_t)(a) >> 3) & ((1u << __MRAM_UNALIGNED_ACCESS_LOG_NB_VLOCK) - 1)))

/* Read the word holding `dest` into this tasklet's buffer, let STMT change the bytes at
 * __p (the buffer's copy of dest), write the word back: all under the word's lock. */
#define __MRAM_UNALIGNED_RMW(dest, type, STMT) \
    do { \
        uintptr_t __a = (uintptr_t)(dest), __w = __a & ~(uintptr_t)7; \
        uint8_t *__buf = &__mram_unaligned_access_buffer[me() << 3]; \
        vmutex_lock(&__mram_unaligned_access_virtual_locks, __MRAM_UNALIGNED_VLOCK(__a)); \
        mram_read((__mram_ptr void *)__w, __buf, 8); \
        type *__p = (type *)(__buf + (__a - __w)); \
        STMT; \
        mram_write(__buf, (__mram_ptr void *)__w, 8); \
        vmutex_unlock(&__mram_unaligned_access_virtual_locks, __MRAM_UNALIGNED_VLOCK(__a)); \
    } while (0)

/* dest: a 4-byte aligned int in MRAM; update_func(int *, void *args) changes it in place. */
#define mram_update_int_atomic(dest, update_func, args) \
    __MRAM_UNALIGNED_RMW(dest, int, (*(update_func))(__p, (args)))
#define mram_write_int_atomic(dest, val) __MRAM_UNALIGNED_RMW(dest, int, *__p = (val))
/* dest: a byte in MRAM; update_func(uint8_t *, void *args). */
#define mram_update_byte_atomic(dest, update_func, args) \
    __MRAM_UNALIGNED_RMW(dest, uint8_t, (*(update_func))(__p, (args)))
#define mram_write_byte_atomic(dest, val) __MRAM_UNALIGNED_RMW(dest, uint8_t, *__p = (val))

#endif
