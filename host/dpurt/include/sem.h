/* sem.h: counting semaphores (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_SEM_H
#define PIMRL_DPURT_SEM_H

#include <stdint.h>

typedef struct sem_t {
    int32_t count;
} sem_t;

#define SEMAPHORE_INIT(_name, _value) sem_t _name = {(_value)}

void sem_take(sem_t *sem);
void sem_give(sem_t *sem);

#endif
