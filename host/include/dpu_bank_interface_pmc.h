/* dpu_bank_interface_pmc.h: the bank interface's performance counters (pimrl's libdpu).
 *
 * Declared as in the SDK. The simulator models no bank-interface counters: every call
 * answers DPU_ERR_SYSTEM.
 */
#ifndef DPU_BANK_INTERFACE_PMC
#define DPU_BANK_INTERFACE_PMC

#include <stdint.h>

#include <dpu_error.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_set_t;

typedef enum {
    BANK_INTERFACE_PMC_NONE = 0x0,
    BANK_INTERFACE_PMC_LDMA_INSTRUCTION = 0x1,
    BANK_INTERFACE_PMC_SDMA_INSTRUCTION = 0x2,
    BANK_INTERFACE_PMC_READ_64BIT_INSTRUCTION = 0x4,
    BANK_INTERFACE_PMC_WRITE_64BIT_INSTRUCTION = 0x8,
    BANK_INTERFACE_PMC_HOST_ACTIVATE_COMMAND = 0x10,
    BANK_INTERFACE_PMC_HOST_REFRESH_COMMAND = 0x20,
    BANK_INTERFACE_PMC_ROW_HAMMER_REFRESH_COMMAND = 0x40,
    BANK_INTERFACE_PMC_CYCLES = 0x80
} bank_interface_pmc_event_t;

typedef enum {
    BANK_INTERFACE_PMC_32BIT_MODE = 0x0,
    BANK_INTERFACE_PMC_64BIT_MODE = 0x1,
} bank_interface_pmc_mode_t;

typedef struct {
    bank_interface_pmc_mode_t mode;
    bank_interface_pmc_event_t counter_1;
    bank_interface_pmc_event_t counter_2;
} bank_interface_pmc_config_t;

typedef struct {
    union {
        struct {
            uint32_t counter_1;
            uint32_t counter_2;
        } two_32bits;
        struct {
            uint64_t counter_1;
        } one_64bits;
    };
} bank_interface_pmc_result_t;

dpu_error_t dpu_bank_interface_pmc_enable(struct dpu_set_t set, bank_interface_pmc_config_t configuration);
dpu_error_t dpu_bank_interface_pmc_disable(struct dpu_set_t set);
dpu_error_t dpu_bank_interface_pmc_stop_counters(struct dpu_set_t set);
dpu_error_t dpu_bank_interface_pmc_read_counters(struct dpu_set_t set, bank_interface_pmc_result_t *result);

#ifdef __cplusplus
}
#endif

#endif /* DPU_BANK_INTERFACE_PMC */
