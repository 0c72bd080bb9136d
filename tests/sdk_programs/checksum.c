/* The SDK tutorial's checksum: the tasklets add up the bytes of an MRAM buffer, each its
 * own blocks, into one WRAM slot each. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define BUFFER_SIZE (1 << 16)
#define BLOCK 256

__mram_noinit uint8_t buffer[BUFFER_SIZE];
__host uint32_t checksums[NR_TASKLETS];
__host uint32_t launches;

BARRIER_INIT(done, NR_TASKLETS);

int main()
{
    __dma_aligned uint8_t cache[BLOCK];
    uint32_t sum = 0;
    for (uint32_t at = me() * BLOCK; at < BUFFER_SIZE; at += NR_TASKLETS * BLOCK) {
        mram_read(&buffer[at], cache, BLOCK);
        for (uint32_t i = 0; i < BLOCK; i++)
            sum += cache[i];
    }
    checksums[me()] = sum;
    barrier_wait(&done);
    if (me() == 0)
        launches++;
    return 0;
}
