/* Vector add on one DPU: c = a + b over this DPU's n elements, which the host put at the
 * start of the MRAM heap (a, then b, each padded to a multiple of 8 bytes); c goes after
 * them. Tasklets take blocks in turn. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host dpu_args_t args;
__host uint64_t kernel_cycles;
__host uint32_t blocks_done[NR_TASKLETS];

BARRIER_INIT(sync_all, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        perfcounter_config(COUNT_CYCLES, true);
    }
    barrier_wait(&sync_all);

    uint32_t n = args.n_elems;
    uint32_t bytes = n * sizeof(int32_t);
    uint32_t padded = (bytes + 7) & ~7u;
    uint32_t a_addr = (uint32_t)DPU_MRAM_HEAP_POINTER;
    uint32_t b_addr = a_addr + padded;
    uint32_t c_addr = b_addr + padded;

    int32_t *a = mem_alloc(BLOCK_BYTES);
    int32_t *b = mem_alloc(BLOCK_BYTES);
    uint32_t done = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        uint32_t dma = (len + 7) & ~7u;
        mram_read((__mram_ptr void *)(a_addr + off), a, dma);
        mram_read((__mram_ptr void *)(b_addr + off), b, dma);
        for (uint32_t i = 0; i < len / sizeof(int32_t); i++)
            a[i] += b[i];
        mram_write(a, (__mram_ptr void *)(c_addr + off), dma);
        done++;
    }
    blocks_done[t] = done;
    barrier_wait(&sync_all);
    if (t == 0) {
        kernel_cycles = perfcounter_get();
        printf("vector add: %u elements, %u tasklets\n", n, NR_TASKLETS);
    }
    return 0;
}
