/* mutex.h: tasklet mutexes (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_MUTEX_H
#define PIMRL_DPURT_MUTEX_H

#include <stdbool.h>
#include <stdint.h>

struct dpurt_mutex {
    uint8_t locked;
    uint8_t owner;
};
typedef struct dpurt_mutex *mutex_id_t;

#define MUTEX_INIT(_name) \
    struct dpurt_mutex __dpurt_mutex_##_name = {0, 0xff}; \
    mutex_id_t const _name = &__dpurt_mutex_##_name
#define MUTEX_GET(_name) (_name)

void mutex_lock(mutex_id_t mutex);
bool mutex_trylock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);

#endif
