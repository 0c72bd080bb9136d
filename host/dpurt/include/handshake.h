/* handshake.h: tasklet rendezvous (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_HANDSHAKE_H
#define PIMRL_DPURT_HANDSHAKE_H

#include "defs.h"

/* Block until a tasklet waits for the caller (handshake_wait_for(me())). */
void handshake_notify(void);
/* Block until tasklet `notifier` calls handshake_notify(). Returns 0, or EINVAL for a bad
 * notifier (itself or out of range), EALREADY if another tasklet already waits for it. */
int handshake_wait_for(sysname_t notifier);

#endif
