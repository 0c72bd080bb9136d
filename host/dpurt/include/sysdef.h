/* sysdef.h: system name types (pimrl DPU runtime). */
#ifndef PIMRL_DPURT_SYSDEF_H
#define PIMRL_DPURT_SYSDEF_H

typedef unsigned int thread_id_t;   /* a tasklet number */
typedef unsigned int sysname_t;     /* the id of a system object (tasklet, mutex, ...) */

#endif
