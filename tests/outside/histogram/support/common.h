/* Shared by the host and the DPU program. */
#ifndef HISTO_COMMON_H
#define HISTO_COMMON_H
#include <stdint.h>

#define MAX_BYTES (64 << 10)            /* input bytes per DPU at most */
#define BINS 256

typedef struct {
    uint32_t n_bytes;                   /* input bytes on this DPU (any number) */
    uint32_t pad;
} dpu_args_t;

#endif
