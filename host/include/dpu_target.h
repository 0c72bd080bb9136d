/* dpu_target.h: the kinds of DPU backend a profile can name (pimrl's libdpu). */
#ifndef __DPU_TARGET_H
#define __DPU_TARGET_H

#include <stdbool.h>
#include <string.h>

#define __MAYBE_UNUSED__ __attribute__((unused))

/** Backend kinds; pimrl's simulator answers to the functional simulator's name. */
typedef enum _dpu_type_t {
    FUNCTIONAL_SIMULATOR = 0,
    CYCLE_ACCURATE_SIMULATOR = 1,
    RTL_SIMULATOR = 2,
    HW = 3,
    BACKUP_SPI = 4,
    SCENARIO = 5,
    NB_OF_DPU_TYPES = 6
} dpu_type_t;

/** The enumerator's name as a string. */
__MAYBE_UNUSED__ static inline const char *dpu_type_to_string(dpu_type_t dpu_type)
{
    static const char *const names[] = { "FUNCTIONAL_SIMULATOR", "CYCLE_ACCURATE_SIMULATOR",
        "RTL_SIMULATOR", "HW", "BACKUP_SPI", "SCENARIO" };
    return ((unsigned)dpu_type < NB_OF_DPU_TYPES) ? names[dpu_type] : "UNKNOWN";
}

/** The backend a profile's `backend=` value names; false for an unknown one. */
__MAYBE_UNUSED__ static inline bool dpu_type_from_profile_string(const char *string, dpu_type_t *dpu_type)
{
    static const char *const keys[] = { "simulator", "cas", "model", "hw", "spi", "scenario" };
    for (unsigned i = 0; i < NB_OF_DPU_TYPES; i++) {
        if (strcmp(string, keys[i]) == 0) {
            *dpu_type = (dpu_type_t)i;
            return true;
        }
    }
    return false;
}

#endif /* __DPU_TARGET_H */
