/* mutex_pool.h: pools of hardware mutexes (pimrl DPU runtime; the SDK's API and layout).
 * Element `id` is guarded by mutex id & (NB_MUTEXES - 1) of the pool. */
#ifndef PIMRL_DPURT_MUTEX_POOL_H
#define PIMRL_DPURT_MUTEX_POOL_H

#include <stdint.h>
#include "mutex.h"

struct mutex_pool {
    uint8_t *hw_mutexes;       /* the pool's atomic bits */
    uint8_t hw_mutexes_mask;   /* NB_MUTEXES - 1 */
};

/* NB_MUTEXES: a power of two. Ends with ';' like the SDK's. */
#define MUTEX_POOL_INIT(NAME, NB_MUTEXES) \
    _Static_assert((NB_MUTEXES) > 0, "at least one hardware mutex is needed"); \
    _Static_assert(__builtin_popcount(NB_MUTEXES) == 1, "the hardware mutex count must be a power of two"); \
    uint8_t __atomic_bit hw_mutexes_##NAME[NB_MUTEXES] = {0}; \
    struct mutex_pool NAME = {.hw_mutexes = hw_mutexes_##NAME, .hw_mutexes_mask = (NB_MUTEXES) - 1};

static inline void mutex_pool_lock(struct mutex_pool *mp, uint16_t id)
{
    mutex_lock(&mp->hw_mutexes[id & mp->hw_mutexes_mask]);
}

static inline void mutex_pool_unlock(struct mutex_pool *mp, uint16_t id)
{
    mutex_unlock(&mp->hw_mutexes[id & mp->hw_mutexes_mask]);
}

#endif
