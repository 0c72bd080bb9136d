/* dpu_probe.h: the SDK's time and energy probe (pimrl simulator shim).
 *
 * The simulator has no energy model: DPU_ENERGY answers DPU_ERR_SYSTEM ("unavailable").
 * DPU_TIME answers the host wall-clock seconds between dpu_probe_start and dpu_probe_stop
 * (measured, not modelled; modelled times come from pimrl_sim.h).
 */
#ifndef DPU_PROBE_H
#define DPU_PROBE_H

#include "dpu_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _dpu_probe_option_t {
    DPU_ENERGY,
    DPU_TIME,
} dpu_probe_option_t;

typedef enum _dpu_probe_value_t {
    DPU_AVERAGE,
    DPU_ACCUMULATE,
} dpu_probe_value_t;

struct dpu_probe_t {
    const char *name;
    int running;
    unsigned int nr_samples;
    double started_s;
    double accumulated_s;
};

dpu_error_t dpu_probe_init(const char *name, struct dpu_probe_t *probe);
dpu_error_t dpu_probe_deinit(struct dpu_probe_t *probe);
dpu_error_t dpu_probe_start(struct dpu_probe_t *probe);
dpu_error_t dpu_probe_stop(struct dpu_probe_t *probe);
dpu_error_t dpu_probe_get(struct dpu_probe_t *probe, dpu_probe_option_t option,
                          dpu_probe_value_t value, double *result);

#ifdef __cplusplus
}
#endif

#endif /* DPU_PROBE_H */
