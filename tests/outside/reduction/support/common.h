/* Shared by the host and the DPU program. */
#ifndef RED_COMMON_H
#define RED_COMMON_H
#include <stdint.h>

#define BLOCK_BYTES 1024

typedef struct {
    uint32_t n_elems;                   /* uint64 elements on this DPU */
    uint32_t pad;
} dpu_args_t;

typedef struct {
    uint64_t sum;                       /* the DPU's reduction */
    uint64_t cycles;                    /* perfcounter at the end */
} dpu_result_t;

#endif
