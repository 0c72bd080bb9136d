/* sem.h: counting semaphores (pimrl DPU runtime), with the SDK's sem_t. */
#ifndef PIMRL_DPURT_SEM_H
#define PIMRL_DPURT_SEM_H

#include <stdint.h>
#include "atomic_bit.h"

typedef struct sem_t {
    uint8_t wait_queue;      /* 0xFF: nobody waits; else the last tasklet that began to wait */
    uint8_t count;           /* units available, read as a signed byte (< 0: tasklets wait) */
    uint8_t initial_count;
    uint8_t lock;            /* the semaphore's atomic bit on the DPU (unused here) */
} sem_t;

/* Ends with ';' like the SDK's expansion; takes one atomic bit. */
#define SEMAPHORE_INIT(_name, _value) \
    _Static_assert((_value) < 128 && (_value) >= -127, "SEMAPHORE_INIT: the initial count must fit in a signed byte"); \
    ATOMIC_BIT_INIT(__CONCAT(semaphore_, _name)); \
    sem_t _name = {0xFF, (uint8_t)(_value), (uint8_t)(_value), 0};

/* Take one unit: the count drops by one, and the tasklet waits while it is negative. */
void sem_take(sem_t *sem);
/* Give one unit back: if tasklets wait, the next one resumes; the caller goes on. */
void sem_give(sem_t *sem);

#endif
