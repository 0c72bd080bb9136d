/* barrier.h: tasklet barriers (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_BARRIER_H
#define PIMRL_DPURT_BARRIER_H

#include <stdint.h>

typedef struct barrier_t {
    uint32_t count;        /* tasklets that must arrive */
    uint32_t arrived;
} barrier_t;

#define BARRIER_INIT(_name, _count) barrier_t _name = {(_count), 0}

/* Block until `count` tasklets have called barrier_wait on this barrier. */
void barrier_wait(barrier_t *barrier);

#endif
