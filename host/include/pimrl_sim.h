/* pimrl_sim.h: what only the pimrl simulator can answer. Not part of the UPMEM SDK.
 *
 * Include it under `#ifdef PIMRL_SIMULATOR` (defined by pimrl's `dpu-pkg-config --cflags
 * dpu`), so that the same host source still builds against the real SDK, e.g.
 *
 *     #ifdef PIMRL_SIMULATOR
 *     #include <pimrl_sim.h>
 *     #endif
 */
#ifndef PIMRL_SIM_H
#define PIMRL_SIM_H

#include "dpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PrIM's four time categories, as the simulator's ledger names them. */
#define PIMRL_SIM_CPU_DPU "cpu_dpu"
#define PIMRL_SIM_DPU_KERNEL "dpu_kernel"
#define PIMRL_SIM_INTER_DPU "inter_dpu"
#define PIMRL_SIM_DPU_CPU "dpu_cpu"

/** Count the transfers that follow on the set's allocation as `category` (one of the four
 *  above), e.g. PIMRL_SIM_INTER_DPU around a gather-average-broadcast; NULL goes back to the
 *  default (to the DPUs: CPU-DPU, from them: DPU-CPU). */
dpu_error_t pimrl_sim_set_phase(struct dpu_set_t dpu_set, const char *category);

/** Modelled seconds booked so far in `category` by the allocation of `dpu_set` (also valid
 *  after dpu_free of that allocation). */
dpu_error_t pimrl_sim_modelled_seconds(struct dpu_set_t dpu_set, const char *category,
                                       double *seconds);

/** Transfers done so far by libdpu's C fast path, without the Python interpreter
 *  (docs/real-hardware.md, "Host time per call"). */
unsigned long long pimrl_sim_fast_path_transfers(void);

/** The simulator's explanation of the last failed call in this process ("" if none). */
const char *pimrl_sim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PIMRL_SIM_H */
