/* wramfifo.h: the host fills the input fifo before the launch and reads the output fifo
 * after it. MODE 0: each input is squared by one tasklet (process_inputs_each_tasklet,
 * outputs in input order); MODE 1: every tasklet adds its part of an input's 4 words and
 * tasklet 0 reduces (process_inputs_all_tasklets). */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stddef.h>
#include <stdint.h>
#include <wramfifo.h>

INPUT_FIFO_INIT(input_fifo, 5, 32);    /* 32 elements of 4 uint64 */
OUTPUT_FIFO_INIT(output_fifo, 5, 8);   /* 32 elements of 1 uint64 */
BARRIER_INIT(bar, NR_TASKLETS);
MUTEX_INIT(fifo_mutex);

__host uint64_t active;
__host uint32_t mode;
uint64_t partial[NR_TASKLETS];
uint64_t scratch[NR_TASKLETS] __dma_aligned;

static void square_all(uint8_t *in, uint8_t *out)
{
    uint64_t *v = (uint64_t *)in, s = 0;
    mram_read(DPU_MRAM_HEAP_POINTER, &scratch[me()], 8);   /* tasklets finish out of order */
    for (int i = 0; i < 4; i++)
        s += v[i] * v[i];
    *(uint64_t *)out = s + me() * 0;
}

static void add_part(uint8_t *in, void *ctx)
{
    (void)ctx;
    uint64_t *v = (uint64_t *)in;
    partial[me()] = me() < 4 ? v[me()] : 0;
}

static void reduce_parts(uint8_t *in, uint8_t *out, void *ctx)
{
    (void)in, (void)ctx;
    uint64_t s = 0;
    for (int t = 0; t < NR_TASKLETS; t++)
        s += partial[t];
    *(uint64_t *)out = s;
}

int main(void)
{
    if (mode == 0)
        process_inputs_each_tasklet(&input_fifo, &output_fifo, square_all, fifo_mutex, &active);
    else
        process_inputs_all_tasklets(&input_fifo, &output_fifo, add_part, reduce_parts, NULL, &bar,
                                    &active);
    return 0;
}
