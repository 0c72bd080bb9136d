/* stdio.h for DPU programs (pimrl DPU runtime): printf writes into the DPU's log, which the
 * host reads with dpu_log_read after the launch (the log holds the last launch's output). */
#ifndef PIMRL_DPURT_STDIO_H
#define PIMRL_DPURT_STDIO_H

#include <stdarg.h>
#include <stddef.h>

int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
int putchar(int c);

#endif
