/* Barriers, semaphores and mutexes with the SDK's layouts, declared as UPMEM's
 * documentation shows (BARRIER_INIT / SEMAPHORE_INIT without a trailing ';'). Every tasklet
 * checks what it sees; the host reads `errors` (0) and the structures' bytes. */
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <sem.h>
#include <stddef.h>
#include <stdint.h>

#define ROUNDS 5

BARRIER_INIT(my_barrier, NR_TASKLETS)
SEMAPHORE_INIT(my_semaphore, 2)
SEMAPHORE_INIT(gate, 0)
MUTEX_INIT(my_mutex);

__host uint32_t errors;
__host uint32_t checks;
__host uint32_t counter;          /* guarded by my_mutex */
__host uint32_t zero_counter;     /* guarded by a zero-initialised mutex_id_t */
__host uint32_t inside, max_inside;
__host uint8_t seen_barrier[4];
__host uint8_t arrived[NR_TASKLETS], released[NR_TASKLETS];
__host uint32_t n_arrived, n_released;
__host uint8_t hs_order[2], hs_order_low[2];
__host uint32_t n_hs, n_hs_low;
mutex_id_t zero_mutex;            /* never initialised: atomic bit 0, as on the DPU */
uint64_t scratch[NR_TASKLETS] __dma_aligned;

__host uint32_t failed_line;     /* the line of the last failed check */
#define CHECK(c) do { checks++; if (!(c)) { errors++; failed_line = __LINE__; } } while (0)

static void dma_pause(void)       /* the tasklet gives way while its transfer runs */
{
    mram_read(DPU_MRAM_HEAP_POINTER, &scratch[me()], 8);
}

int main(void)
{
    if (me() == 0) {
        errors = checks = counter = zero_counter = inside = max_inside = 0;
        CHECK(sizeof(barrier_t) == 4 && sizeof(sem_t) == 4);
        CHECK(offsetof(barrier_t, wait_queue) == 0 && offsetof(barrier_t, count) == 1);
        CHECK(offsetof(barrier_t, initial_count) == 2 && offsetof(barrier_t, lock) == 3);
        CHECK(offsetof(sem_t, count) == 1 && offsetof(sem_t, initial_count) == 2);
        CHECK(my_barrier.initial_count == NR_TASKLETS && my_barrier.count == NR_TASKLETS);
        CHECK(my_barrier.wait_queue == 0xFF);
        CHECK(my_semaphore.count == 2 && my_semaphore.initial_count == 2);
        CHECK(sizeof(mutex_id_t) == sizeof(void *));
    }
    /* The others start after tasklet 0 has read the structures' initial values (tasklets
     * run at once, as on the DPU: without this they could already be in the barrier). */
    if (me() > 0)
        handshake_wait_for(me() - 1);
    if (me() + 1 < NR_TASKLETS)
        handshake_notify();
    barrier_wait(&my_barrier);
    for (int r = 0; r < ROUNDS; r++) {
        mutex_lock(my_mutex);
        uint32_t c = counter;
        dma_pause();                 /* others run here: the mutex keeps them out */
        counter = c + 1;
        mutex_unlock(my_mutex);

        mutex_lock(zero_mutex);
        uint32_t z = zero_counter;
        dma_pause();
        zero_counter = z + 1;
        mutex_unlock(zero_mutex);
    }
    barrier_wait(&my_barrier);
    for (int r = 0; r < ROUNDS; r++) {
        sem_take(&my_semaphore);     /* at most two tasklets between take and give */
        inside++;
        if (inside > max_inside)
            max_inside = inside;
        dma_pause();
        inside--;
        sem_give(&my_semaphore);
    }
    barrier_wait(&my_barrier);
    /* A semaphore resumes its waiters first come, first served: tasklets arrive at the
     * gate in an order of their own (later for lower ids) and leave in that order. */
    if (me() == 0) {
        n_arrived = n_released = 0;
        for (int k = 0; k < 2 * NR_TASKLETS; k++)
            dma_pause();
        for (int k = 1; k < NR_TASKLETS; k++) {
            sem_give(&gate);
            dma_pause();             /* the resumed tasklet records itself meanwhile */
        }
    } else {
        for (int k = 0; k < NR_TASKLETS - (int)me(); k++)
            dma_pause();
        arrived[n_arrived++] = (uint8_t)me();
        sem_take(&gate);
        released[n_released++] = (uint8_t)me();
    }
    barrier_wait(&my_barrier);
    /* A notifier that waited for its waiter goes on first once the waiter arrives. */
    if (me() == 0)
        n_hs = n_hs_low = 0;
    if (NR_TASKLETS > 1 && me() == 0) {
        handshake_notify();
        hs_order[n_hs++] = 0;
    } else if (me() == 1) {
        dma_pause();
        CHECK(handshake_wait_for(0) == 0);
        hs_order[n_hs++] = 1;
    }
    barrier_wait(&my_barrier);
    /* The same when the waiter has the lower id (not a matter of ties between ids). */
    if (NR_TASKLETS > 1 && me() == 1) {
        handshake_notify();
        hs_order_low[n_hs_low++] = 1;
    } else if (NR_TASKLETS > 1 && me() == 0) {
        dma_pause();
        CHECK(handshake_wait_for(1) == 0);
        hs_order_low[n_hs_low++] = 0;
    }
    barrier_wait(&my_barrier);
    if (me() == 0) {
        CHECK(NR_TASKLETS == 1 || (n_hs == 2 && hs_order[0] == 0 && hs_order[1] == 1));
        CHECK(NR_TASKLETS == 1
              || (n_hs_low == 2 && hs_order_low[0] == 1 && hs_order_low[1] == 0));
        CHECK(n_arrived == NR_TASKLETS - 1 && n_released == NR_TASKLETS - 1);
        for (int k = 0; k < NR_TASKLETS - 1; k++)
            CHECK(arrived[k] == released[k]);
        CHECK((int8_t)gate.count == 0 && gate.wait_queue == 0xFF);
        CHECK(counter == NR_TASKLETS * ROUNDS);
        CHECK(zero_counter == NR_TASKLETS * ROUNDS);
        CHECK(max_inside == (NR_TASKLETS < 2 ? NR_TASKLETS : 2));
        CHECK((int8_t)my_semaphore.count == 2);
        CHECK(my_barrier.count == NR_TASKLETS);      /* a new round after each opening */
        CHECK(mutex_trylock(my_mutex));
        CHECK(!mutex_trylock(my_mutex));
        mutex_unlock(my_mutex);
        for (int i = 0; i < 4; i++)
            seen_barrier[i] = ((uint8_t *)&my_barrier)[i];
    }
    return 0;
}
