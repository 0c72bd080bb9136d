/* Unaligned MRAM access: mram_read at an address that is not a multiple of 8 (the DMA
 * engine clears the low three bits, as on hardware), and mram_unaligned.h's API. The host
 * fills the MRAM heap with bytes i & 0xff and checks the writes afterwards. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <stdint.h>
#include <string.h>

BARRIER_INIT(bar, NR_TASKLETS);

__host uint32_t errors;
__host uint32_t checks;
__host uint64_t hw_word;          /* 8 bytes read at heap + 3 */
uint8_t buffer[2048 + 16] __dma_aligned;
uint8_t wbuf[64] __dma_aligned;

__host uint32_t failed_line;     /* the line of the last failed check */
#define CHECK(c) do { checks++; if (!(c)) { errors++; failed_line = __LINE__; } } while (0)
#define HEAP ((uintptr_t)DPU_MRAM_HEAP_POINTER)

static void add_one(int *x, void *args) { *x += *(int *)args; }
static void inc_byte(uint8_t *x, void *args) { (void)args; *x += 1; }

int main(void)
{
    if (me() == 0) {
        errors = checks = 0;
        /* the hardware's behaviour: heap + 3 reads the word at heap + 0 */
        uint64_t w __dma_aligned;
        mram_read((__mram_ptr void *)(HEAP + 3), &w, 8);
        hw_word = w;
        CHECK(w == 0x0706050403020100ull);
        /* mram_read_unaligned: any address, any size up to 2048 */
        static const uint32_t offs[] = {0, 1, 5, 7, 13, 100};
        static const uint32_t sizes[] = {1, 3, 8, 9, 100, 2048};
        for (unsigned i = 0; i < 6; i++)
            for (unsigned j = 0; j < 6; j++) {
                uint8_t *p = mram_read_unaligned((__mram_ptr void *)(HEAP + offs[i]), buffer, sizes[j]);
                int ok = 1;
                for (uint32_t k = 0; k < sizes[j]; k++)
                    ok &= p[k] == (uint8_t)(offs[i] + k);
                CHECK(ok);
            }
        /* mram_write_unaligned: WRAM with the MRAM address's alignment (5 mod 8) */
        for (int k = 0; k < 30; k++)
            wbuf[5 + k] = (uint8_t)(0xA0 + k);
        mram_write_unaligned(&wbuf[5], (__mram_ptr void *)(HEAP + 4096 + 5), 30);
        uint8_t *back = mram_read_unaligned((__mram_ptr void *)(HEAP + 4096), buffer, 48);
        for (int k = 0; k < 48; k++)
            CHECK(back[k] == ((k >= 5 && k < 35) ? (uint8_t)(0xA0 + k - 5) : (uint8_t)(4096 + k)));
        mram_write_unaligned(&wbuf[5], (__mram_ptr void *)(HEAP + 8192 + 5), 2); /* inside a word */
        back = mram_read_unaligned((__mram_ptr void *)(HEAP + 8192), buffer, 8);
        CHECK(back[4] == 4 && back[5] == 0xA0 && back[6] == 0xA1 && back[7] == 7);
        /* neighbouring ints of one word, zeroed for the atomic updates below */
        mram_write_int_atomic((__mram_ptr int *)(HEAP + 12288), 0);
        mram_write_int_atomic((__mram_ptr int *)(HEAP + 12292), 0);
        for (int b = 0; b < 8; b++)
            mram_write_byte_atomic((__mram_ptr uint8_t *)(HEAP + 12296 + b), 0);
    }
    barrier_wait(&bar);
    /* every tasklet updates both ints of one 8-byte word, and the 8 bytes of the next word */
    int step = 1 + (int)me();
    for (int r = 0; r < 10; r++) {
        mram_update_int_atomic((__mram_ptr int *)(HEAP + 12288), add_one, &step);
        mram_update_int_atomic((__mram_ptr int *)(HEAP + 12292), add_one, &step);
        mram_update_byte_atomic((__mram_ptr uint8_t *)(HEAP + 12296 + (me() + r) % 8), inc_byte, NULL);
    }
    barrier_wait(&bar);
    if (me() == 0) {
        int32_t ints[2] __dma_aligned;
        mram_read((__mram_ptr void *)(HEAP + 12288), ints, 8);
        int want = 10 * NR_TASKLETS * (NR_TASKLETS + 1) / 2;
        CHECK(ints[0] == want && ints[1] == want);
        uint8_t bytes[8] __dma_aligned;
        mram_read((__mram_ptr void *)(HEAP + 12296), bytes, 8);
        uint32_t total = 0;
        for (int b = 0; b < 8; b++)
            total += bytes[b];
        CHECK(total == 10 * NR_TASKLETS);
    }
    return 0;
}
