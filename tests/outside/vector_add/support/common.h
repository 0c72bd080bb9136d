/* Shared by the host and the DPU program. */
#ifndef VA_COMMON_H
#define VA_COMMON_H
#include <stdint.h>

#define BLOCK_BYTES 512                 /* one mram_read of each input */
#define BLOCK_ELEMS (BLOCK_BYTES / sizeof(int32_t))

typedef struct {
    uint32_t n_elems;                   /* elements on this DPU (a multiple of 2) */
    uint32_t pad;
} dpu_args_t;

#endif
