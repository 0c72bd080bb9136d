/* dpu_types.h: the types of the UPMEM host API (pimrl simulator shim).
 *
 * The SDK keeps `struct dpu_set_t` public but its fields are internal; host programs only
 * copy sets by value and walk them with DPU_FOREACH / DPU_RANK_FOREACH. pimrl's layout is a
 * kind plus three numbers naming a set inside the Python simulator.
 */
#ifndef DPU_TYPES_H
#define DPU_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Addresses in the DPU's address space (MRAM symbols start at 0x08000000). */
typedef uint32_t mram_addr_t;
typedef uint32_t wram_addr_t;
typedef uint32_t iram_addr_t;
typedef uint32_t dpu_mem_max_addr_t;
typedef uint32_t dpu_mem_max_size_t;

/** A loaded DPU program (opaque; owned by the allocation that loaded it). */
struct dpu_program_t;

/** A host-visible symbol of a DPU program: its DPU address and size in bytes. */
struct dpu_symbol_t {
    mram_addr_t address;
    uint32_t size;
};

/** What a `struct dpu_set_t` designates. */
enum dpu_set_kind_t {
    DPU_SET_RANKS, /**< ranks: a whole allocation, or one of its ranks */
    DPU_SET_DPU,   /**< one DPU */
};

/** A set of DPUs: a whole allocation, one of its ranks, or one DPU. Copy it by value. */
struct dpu_set_t {
    enum dpu_set_kind_t kind;
    uint32_t pimrl_handle; /**< the allocation, as numbered by the simulator (0: none) */
    uint32_t pimrl_rank;   /**< rank inside the allocation, or UINT32_MAX for all of them */
    uint32_t pimrl_dpu;    /**< DPU_SET_DPU: the DPU's slot inside the allocation */
};

#ifdef __cplusplus
}
#endif

#endif /* DPU_TYPES_H */
