/* vmutex.h: virtual mutexes (pimrl DPU runtime; the SDK's API and layout). Each virtual
 * mutex is one bit of WRAM (vm); a hardware mutex, hw_mutexes[(id >> 3) & mask], guards
 * only the update of that bit, so the critical section itself holds no hardware mutex. */
#ifndef PIMRL_DPURT_VMUTEX_H
#define PIMRL_DPURT_VMUTEX_H

#include <stdint.h>
#include "defs.h"
#include "mutex.h"

struct vmutex {
    uint8_t *vm;               /* NB_VMUTEXES / 8 bytes of state bits */
    uint8_t *hw_mutexes;       /* the guarding atomic bits */
    uint8_t hw_mutexes_mask;   /* NB_MUTEXES - 1 */
};

/* NB_VMUTEXES: a multiple of 8; NB_MUTEXES: a power of two. Ends with ';' like the SDK's. */
#define VMUTEX_INIT(NAME, NB_VMUTEXES, NB_MUTEXES) \
    _Static_assert((NB_MUTEXES) > 0, "at least one hardware mutex is needed"); \
    _Static_assert(__builtin_popcount(NB_MUTEXES) == 1, "the hardware mutex count must be a power of two"); \
    _Static_assert(((NB_VMUTEXES) & 7) == 0, "the virtual mutex count must be a multiple of 8"); \
    uint8_t __atomic_bit hw_mutexes_##NAME[NB_MUTEXES] = {0}; \
    uint8_t vmutex_##NAME[(NB_VMUTEXES) >> 3] = {0}; \
    struct vmutex NAME = {.vm = vmutex_##NAME, .hw_mutexes = hw_mutexes_##NAME, \
                          .hw_mutexes_mask = (NB_MUTEXES) - 1};

static inline void vmutex_lock(struct vmutex *vm, uint16_t id)
{
    uint8_t *byte = vm->vm + (id >> 3);
    uint8_t bit = (uint8_t)(1u << (id & 7));
    uint8_t *hw = vm->hw_mutexes + ((id >> 3) & vm->hw_mutexes_mask);
    for (;;) {
        mutex_lock(hw);
        uint8_t before = *byte;
        *byte = (uint8_t)(before | bit);
        mutex_unlock(hw);
        if (!(before & bit))
            return;
        __dpurt_yield();        /* held by another tasklet: try again after the others ran */
    }
}

static inline void vmutex_unlock(struct vmutex *vm, uint16_t id)
{
    uint8_t *hw = vm->hw_mutexes + ((id >> 3) & vm->hw_mutexes_mask);
    mutex_lock(hw);
    vm->vm[id >> 3] &= (uint8_t)~(1u << (id & 7));
    mutex_unlock(hw);
}

#endif
