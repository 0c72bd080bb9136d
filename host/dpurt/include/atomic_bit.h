/* atomic_bit.h: the DPU's 256 atomic bits (pimrl DPU runtime). A bit is a byte of the
 * dpurt_atomic section; the runtime keeps its state, so these bytes are only names. More
 * than 256 bits in one program is refused when it is linked, as by the SDK. */
#ifndef PIMRL_DPURT_ATOMIC_BIT_H
#define PIMRL_DPURT_ATOMIC_BIT_H

#include <stdint.h>
#include "attributes.h"
#include "macro_utils.h"

#define ATOMIC_BIT_GET(_name) __CONCAT(__atomic_bit_, _name)
#define ATOMIC_BIT_INIT(_name) uint8_t __atomic_bit ATOMIC_BIT_GET(_name)
#define ATOMIC_BIT_EXTERN(_name) extern ATOMIC_BIT_INIT(_name)

extern uint8_t __atomic_start_addr;
#define ATOMIC_BIT_INDEX(_name) (&ATOMIC_BIT_GET(_name) - &__atomic_start_addr)

/* Take / release a bit (busy on the DPU; here the tasklet waits its turn). */
void mutex_lock(uint8_t *mutex);
void mutex_unlock(uint8_t *mutex);
#define ATOMIC_BIT_ACQUIRE(_name) mutex_lock(&ATOMIC_BIT_GET(_name))
#define ATOMIC_BIT_RELEASE(_name) mutex_unlock(&ATOMIC_BIT_GET(_name))
#define __ATOMIC_BIT_ACQUIRE(_reg, _bit) mutex_lock((uint8_t *)(_reg) + (_bit))
#define __ATOMIC_BIT_RELEASE(_reg, _bit) mutex_unlock((uint8_t *)(_reg) + (_bit))

#endif
