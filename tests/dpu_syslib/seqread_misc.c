/* seqread over a whole __mram_noinit array (the last MRAM variable: the read-ahead reads the
 * MRAM after it), seqread_seek / seqread_tell, the __mram_keep and __mram_noinit_keep
 * attributes, __lower_data, STDOUT_BUFFER_INIT, perfcounter_get_both and profiling.h
 * (built with -DDPU_PROFILING). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <profiling.h>
#include <seqread.h>
#include <stdint.h>
#include <stdio.h>

#define N 1000                      /* 8000 B: not a multiple of the 512 B read-ahead */

STDOUT_BUFFER_INIT(64)
PROFILING_INIT(prof);
BARRIER_INIT(bar, NR_TASKLETS);

__mram_keep uint64_t kept_table[2] = {0x1111, 0x2222};
__mram_noinit_keep uint64_t kept_noinit;
__lower_data("fast") uint32_t fast_value = 77;
__mram_noinit uint64_t values[N];   /* written by the host */

__host uint32_t errors;
__host uint32_t checks;
__host uint64_t sum, tail_sum;
__host uint64_t both_cycles[2], both_instr[2];

__host uint32_t failed_line;     /* the line of the last failed check */
#define CHECK(c) do { checks++; if (!(c)) { errors++; failed_line = __LINE__; } } while (0)

int main(void)
{
    if (me() == 0) {
        errors = checks = 0;
        mem_reset();
    }
    barrier_wait(&bar);
    profiling_start(&prof);
    if (me() == 0) {
        perfcounter_get_both(true);
        seqreader_buffer_t cache = seqread_alloc();
        seqreader_t sr;
        uint64_t *e = seqread_init(cache, values, &sr);
        uint64_t s = 0;
        for (int i = 0; i < N; i++) {
            s += *e;
            e = seqread_get(e, sizeof(uint64_t), &sr);
        }
        sum = s;
        CHECK(seqread_tell(e, &sr) == (__mram_ptr void *)&values[N]);
        /* seek back into the array and read its last 100 values */
        e = seqread_seek(&values[N - 100], &sr);
        CHECK(seqread_tell(e, &sr) == (__mram_ptr void *)&values[N - 100]);
        s = 0;
        for (int i = 0; i < 100; i++) {
            s += *e;
            e = seqread_get(e, sizeof(uint64_t), &sr);
        }
        tail_sum = s;
        perfcounter_pair_t a = perfcounter_get_both(false);
        volatile uint32_t x = 0;
        for (uint32_t i = 0; i < 1000; i++)
            x += i;
        perfcounter_pair_t b = perfcounter_get_both(true);
        perfcounter_pair_t c = perfcounter_get_both(false);
        both_cycles[0] = a.cycles, both_cycles[1] = b.cycles;
        both_instr[0] = a.instr, both_instr[1] = b.instr;
        CHECK(b.cycles > a.cycles && b.instr > a.instr + 1000);
        CHECK(c.instr < b.instr);               /* counted again from the reset */
        uint64_t k[2] __dma_aligned;
        mram_read(kept_table, k, 16);
        CHECK(k[0] == 0x1111 && k[1] == 0x2222);
        kept_noinit = 0x5151;                   /* direct access to an MRAM variable */
        CHECK(fast_value == 77);
        printf("this line and the next are longer than the 64 bytes of stdout buffer\n");
        printf("so the host sees only the first 64 bytes\n");
    }
    profiling_stop(&prof);
    return 0;
}
