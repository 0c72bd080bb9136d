/* Sum reduction: every tasklet sums its blocks of the DPU's uint64 array (MRAM heap) into
 * its slot of a WRAM array; after a barrier, the partial sums are folded right to left with
 * a handshake chain (tasklet t waits for t + 1, adds its sum, notifies t - 1), so tasklet 0
 * ends with the total, which it also writes to MRAM (an __mram_noinit variable). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

__host dpu_args_t args;
__host dpu_result_t result;
__host uint32_t launches;
__mram_noinit uint64_t mram_total;
uint64_t partial[NR_TASKLETS];

BARRIER_INIT(start, NR_TASKLETS);
BARRIER_INIT(summed, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        perfcounter_config(COUNT_CYCLES, true);
        launches++;
    }
    barrier_wait(&start);
    uint64_t *cache = mem_alloc(BLOCK_BYTES);
    uint32_t bytes = args.n_elems * sizeof(uint64_t);
    uint64_t sum = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + off, cache, len);
        for (uint32_t i = 0; i < len / sizeof(uint64_t); i++)
            sum += cache[i];
    }
    partial[t] = sum;
    barrier_wait(&summed);
    if (t + 1 < NR_TASKLETS) {
        handshake_wait_for(t + 1);
        partial[t] += partial[t + 1];
    }
    if (t > 0) {
        handshake_notify();
    } else {
        uint64_t total __dma_aligned = partial[0];
        mram_write(&total, &mram_total, sizeof total);
        result.sum = total;
        result.cycles = perfcounter_get();
        printf("reduction: launch %u, sum %llu\n", launches, (unsigned long long)total);
    }
    return 0;
}
