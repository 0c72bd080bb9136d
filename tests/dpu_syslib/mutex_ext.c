/* mutex_pool.h, vmutex.h, atomic_bit.h and dpu_characteristics.h as UPMEM documents them:
 * many tasklets update a table element by element, each element guarded by a pool mutex
 * or a virtual mutex, with a DMA transfer (a yield) inside the critical section. */
#include <atomic_bit.h>
#include <barrier.h>
#include <defs.h>
#include <dpu_characteristics.h>
#include <mram.h>
#include <mutex_pool.h>
#include <stdint.h>
#include <vmutex.h>

#define N_ELEMS 64
#define ROUNDS 6

_Static_assert(DPU_NR_THREADS == 24, "24 hardware threads");
_Static_assert(DPU_NR_ATOMIC_BITS == 256, "256 atomic bits");

MUTEX_POOL_INIT(pool, 8);
VMUTEX_INIT(vlocks, 256, 4);
ATOMIC_BIT_INIT(my_bit);
BARRIER_INIT(bar, NR_TASKLETS);

__host uint32_t errors;
__host uint32_t checks;
__host uint32_t pool_table[N_ELEMS];
__host uint32_t vm_table[N_ELEMS];
__host uint32_t bit_total;
uint64_t scratch[NR_TASKLETS] __dma_aligned;

__host uint32_t failed_line;     /* the line of the last failed check */
#define CHECK(c) do { checks++; if (!(c)) { errors++; failed_line = __LINE__; } } while (0)

static void dma_pause(void)
{
    mram_read(DPU_MRAM_HEAP_POINTER, &scratch[me()], 8);
}

int main(void)
{
    if (me() == 0) {
        errors = checks = bit_total = 0;
        for (int i = 0; i < N_ELEMS; i++)
            pool_table[i] = vm_table[i] = 0;
        CHECK(pool.hw_mutexes_mask == 7 && vlocks.hw_mutexes_mask == 3);
        CHECK(ATOMIC_BIT_INDEX(my_bit) >= 0 && ATOMIC_BIT_INDEX(my_bit) < DPU_NR_ATOMIC_BITS);
    }
    barrier_wait(&bar);
    for (int r = 0; r < ROUNDS; r++) {
        for (uint16_t id = (uint16_t)me(); id < N_ELEMS; id = (uint16_t)(id + 3)) {
            mutex_pool_lock(&pool, id);
            uint32_t v = pool_table[id];
            dma_pause();
            pool_table[id] = v + 1;
            mutex_pool_unlock(&pool, id);

            vmutex_lock(&vlocks, id);
            uint32_t w = vm_table[id];
            dma_pause();
            vm_table[id] = w + 2;
            vmutex_unlock(&vlocks, id);
        }
        ATOMIC_BIT_ACQUIRE(my_bit);
        uint32_t b = bit_total;
        dma_pause();
        bit_total = b + 1;
        ATOMIC_BIT_RELEASE(my_bit);
    }
    barrier_wait(&bar);
    if (me() == 0) {
        for (int id = 0; id < N_ELEMS; id++) {
            uint32_t writers = 0;            /* tasklets t with t = id mod 3, t < NR_TASKLETS */
            for (int t = id % 3; t < NR_TASKLETS && t <= id; t += 3)
                writers++;
            CHECK(pool_table[id] == writers * ROUNDS);
            CHECK(vm_table[id] == 2 * writers * ROUNDS);
        }
        CHECK(bit_total == NR_TASKLETS * ROUNDS);
        for (int i = 0; i < (256 >> 3); i++)
            CHECK(vlocks.vm[i] == 0);        /* every virtual mutex released */
    }
    return 0;
}
