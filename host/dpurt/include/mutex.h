/* mutex.h: tasklet mutexes (pimrl DPU runtime). As in the SDK, a mutex is an atomic bit and
 * a mutex_id_t its address; a zero mutex_id_t names bit 0, as on the DPU. */
#ifndef PIMRL_DPURT_MUTEX_H
#define PIMRL_DPURT_MUTEX_H

#include <stdbool.h>
#include <stdint.h>
#include "atomic_bit.h"
#include "sysdef.h"

typedef uint8_t *mutex_id_t;

#define MUTEX_GET(_name) _name
#define MUTEX_INIT(_name) \
    ATOMIC_BIT_INIT(__CONCAT(mutex_, _name)); \
    const mutex_id_t MUTEX_GET(_name) = &ATOMIC_BIT_GET(__CONCAT(mutex_, _name))

void mutex_lock(mutex_id_t mutex);
bool mutex_trylock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);

#endif
