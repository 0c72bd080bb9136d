/* stdio.h for DPU programs (pimrl DPU runtime): printf writes into the DPU's log, which the
 * host reads with dpu_log_read after the launch (the log holds the last launch's output). */
#ifndef PIMRL_DPURT_STDIO_H
#define PIMRL_DPURT_STDIO_H

#include <stdarg.h>
#include <stddef.h>
#include "attributes.h"

/* The log's capacity, as in the SDK: `size` bytes (a multiple of 8) of MRAM; output past it
 * is dropped and the log says it was truncated. Written where a global would be. */
#define STDOUT_BUFFER_INIT(size) \
    _Static_assert((size) >= 8 && ((size) & 7) == 0, "STDOUT_BUFFER_INIT: the size must be a positive multiple of 8"); \
    unsigned char __dma_aligned __mram_noinit __stdout_buffer[(size)]; \
    const unsigned int __stdout_buffer_size = (size);

int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
int putchar(int c);

#endif
