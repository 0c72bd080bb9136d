/* dpu_log.h: what one DPU printed (pimrl's libdpu). */
#ifndef DPU_LOG_H
#define DPU_LOG_H

#include <stdio.h>

#include <dpu_error.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_t;

/** Write the output of the DPU's last run to `stream` (no header line; dpu_log_read of
 *  dpu.h adds one). */
dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *stream);

#ifdef __cplusplus
}
#endif

#endif /* DPU_LOG_H */
