/* Checksum of the words the host put at the start of this DPU's MRAM heap: tasklets take
 * blocks in turn, then tasklet 0 adds their partial sums. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "checksum.h"

__host checksum_args_t args;
__host uint32_t checksum;
__host uint32_t partial[NR_TASKLETS];

BARRIER_INIT(sync_all, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0)
        mem_reset();
    barrier_wait(&sync_all);

    uint32_t *buf = mem_alloc(BLOCK_BYTES);
    uint32_t bytes = args.n_words * sizeof(uint32_t);
    uint32_t sum = 0;
    for (uint32_t off = t * BLOCK_BYTES; off < bytes; off += NR_TASKLETS * BLOCK_BYTES) {
        uint32_t len = bytes - off < BLOCK_BYTES ? bytes - off : BLOCK_BYTES;
        mram_read((__mram_ptr void *)(DPU_MRAM_HEAP_POINTER + off), buf, len);
        for (uint32_t i = 0; i < len / sizeof(uint32_t); i++)
            sum += checksum_word(buf[i], off / sizeof(uint32_t) + i, args.seed);
    }
    partial[t] = sum;
    barrier_wait(&sync_all);
    if (t == 0) {
        uint32_t total = 0;
        for (unsigned int i = 0; i < NR_TASKLETS; i++)
            total += partial[i];
        checksum = total;
    }
    return 0;
}
