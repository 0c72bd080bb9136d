/* dpu_log.h: reading what a DPU printed (pimrl simulator shim). */
#ifndef DPU_LOG_H
#define DPU_LOG_H

#include <stdio.h>

#include "dpu_error.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Write the log of one DPU (a single-DPU set, e.g. from DPU_FOREACH) to `stream`;
 *  a set of several DPUs gives DPU_ERR_INVALID_DPU_SET. */
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

#ifdef __cplusplus
}
#endif

#endif /* DPU_LOG_H */
