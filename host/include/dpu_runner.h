/* dpu_runner.h: booting and polling ranks and DPUs (pimrl's libdpu).
 *
 * In the simulator a boot runs the loaded program to completion (as dpu_launch does on the
 * rank or DPU); polls and statuses then report done, with the fault flag of that run.
 * Booting a single tasklet (dpu_launch_thread_on_*) answers DPU_ERR_SYSTEM.
 */
#ifndef DPU_RUNNER_H
#define DPU_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_error.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_rank_t;
struct dpu_t;

dpu_error_t dpu_launch_thread_on_rank(struct dpu_rank_t *rank, dpu_thread_t thread, bool should_resume);
dpu_error_t dpu_launch_thread_on_dpu(struct dpu_t *dpu, dpu_thread_t thread, bool should_resume);
dpu_error_t dpu_poll_rank(struct dpu_rank_t *rank);
dpu_error_t dpu_poll_dpu(struct dpu_t *dpu, bool *dpu_is_running, bool *dpu_is_in_fault);

/** What the last poll of a rank found, one bit per DPU of each control interface. */
typedef struct _dpu_run_context_t {
    dpu_bitfield_t dpu_running[DPU_MAX_NR_CIS];
    dpu_bitfield_t dpu_in_fault[DPU_MAX_NR_CIS];
    dpu_error_t poll_status;
    uint8_t nb_dpu_running;
} * dpu_run_context_t;

dpu_run_context_t dpu_get_run_context(struct dpu_rank_t *rank);
dpu_error_t dpu_boot_dpu(struct dpu_t *dpu);
dpu_error_t dpu_boot_rank(struct dpu_rank_t *rank);
dpu_error_t dpu_status_rank(struct dpu_rank_t *rank, bool *done, bool *fault);
dpu_error_t dpu_status_dpu(struct dpu_t *dpu, bool *done, bool *fault);

#ifdef __cplusplus
}
#endif

#endif /* DPU_RUNNER_H */
