/* Byte histogram on one DPU, with the SDK's system library: the input is read with a
 * sequential reader to the last byte of an __mram_noinit array; each tasklet counts its
 * share into a shared WRAM histogram (a virtual mutex per bin) and into an MRAM copy of it
 * (4-byte counters updated with mram_update_int_atomic, two per 8-byte word). */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <seqread.h>
#include <stdint.h>
#include <stdio.h>
#include <vmutex.h>

#include "common.h"

#define CHUNK 1024                      /* bytes a tasklet takes at a time */

__host dpu_args_t args;
__host uint32_t histogram[BINS];
uint32_t local[NR_TASKLETS][BINS];      /* each tasklet's own counts */
__mram int32_t mram_histogram[BINS];
__mram_noinit uint8_t input[MAX_BYTES];

BARRIER_INIT(sync_all, NR_TASKLETS)
VMUTEX_INIT(bin_locks, BINS, 8);
STDOUT_BUFFER_INIT(256)

static void add(int *counter, void *amount)
{
    *counter += *(int *)amount;
}

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        mem_reset();
        for (int b = 0; b < BINS; b++)
            histogram[b] = 0;
        for (int b = 0; b < BINS; b++)
            mram_histogram[b] = 0;
    }
    barrier_wait(&sync_all);
    seqreader_buffer_t cache = seqread_alloc();
    uint32_t *mine = local[t];
    for (int b = 0; b < BINS; b++)
        mine[b] = 0;
    for (uint32_t start = t * CHUNK; start < args.n_bytes; start += NR_TASKLETS * CHUNK) {
        uint32_t end = start + CHUNK < args.n_bytes ? start + CHUNK : args.n_bytes;
        seqreader_t sr;
        uint8_t *p = seqread_init(cache, &input[start], &sr);
        for (uint32_t i = start; i < end; i++) {
            mine[*p]++;
            p = seqread_get(p, 1, &sr);
        }
    }
    for (uint16_t b = 0; b < BINS; b++) {
        if (!mine[b])
            continue;
        vmutex_lock(&bin_locks, b);
        histogram[b] += mine[b];
        vmutex_unlock(&bin_locks, b);
        int amount = (int)mine[b];
        mram_update_int_atomic(&mram_histogram[b], add, &amount);
    }
    barrier_wait(&sync_all);
    if (t == 0)
        printf("histogram of %u bytes, %d tasklets\n", args.n_bytes, NR_TASKLETS);
    return 0;
}
