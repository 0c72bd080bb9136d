/* dpu_description.h: a rank's description (pimrl's libdpu). */
#ifndef DPU_DESCRIPTION_H
#define DPU_DESCRIPTION_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_hw_description.h>
#include <dpu_target.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The hardware, backend kind and configuration of a rank; reference-counted. */
typedef struct _dpu_description_t {
    struct dpu_hw_description_t hw;
    dpu_type_t type;
    struct {
        bool mram_access_by_dpu_only;
        bool api_must_switch_mram_mux;
        bool init_mram_mux;
        bool do_iram_repair;
        bool do_wram_repair;
        bool ignore_vpd;
        bool enable_cycle_accurate_behavior;
        bool disable_api_safe_checks;
        bool disable_reset_on_alloc;
        bool ila_control_refresh;
    } configuration;
    uint32_t refcount;
    struct {
        void *data;
        void (*free)(void *data);
    } _internals;
} * dpu_description_t;

/** Take a reference. */
void dpu_acquire_description(dpu_description_t description);
/** Drop a reference; the last one frees the description. */
void dpu_free_description(dpu_description_t description);

#ifdef __cplusplus
}
#endif

#endif /* DPU_DESCRIPTION_H */
