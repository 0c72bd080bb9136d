/* barrier.h: tasklet barriers (pimrl DPU runtime), with the SDK's barrier_t. */
#ifndef PIMRL_DPURT_BARRIER_H
#define PIMRL_DPURT_BARRIER_H

#include <stdint.h>
#include "atomic_bit.h"

typedef struct barrier_t {
    uint8_t wait_queue;      /* 0xFF: nobody waits; else the last tasklet that began to wait */
    uint8_t count;           /* tasklets still expected in this round */
    uint8_t initial_count;   /* tasklets per round */
    uint8_t lock;            /* the barrier's atomic bit on the DPU (unused here) */
} barrier_t;

/* Like the SDK's expansion, this one ends with ';' (so it may be written without one) and
 * takes one atomic bit. */
#define BARRIER_INIT(_name, _count) \
    _Static_assert((_count) < 128 && (_count) >= -127, "BARRIER_INIT: the tasklet count must fit in a signed byte"); \
    ATOMIC_BIT_INIT(__CONCAT(barrier_, _name)); \
    barrier_t _name = {0xFF, (uint8_t)(_count), (uint8_t)(_count), 0};

/* Count this tasklet in and wait until initial_count tasklets have; the barrier then
 * starts a new round. */
void barrier_wait(barrier_t *barrier);

#endif
