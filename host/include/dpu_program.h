/* dpu_program.h: a loaded DPU program (pimrl's libdpu).
 *
 * struct dpu_program_t has the SDK's layout. In the simulator `symbols` lists the program's
 * host-visible symbols (name, DPU address, size), `nr_threads_enabled` its tasklets when
 * known (0 otherwise), `program_path` what it was loaded from; the other addresses are -1.
 * The library owns programs: they live until the allocation that loaded them is freed.
 */
#ifndef DPU_PROGRAM_H
#define DPU_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <dpu_elf.h>
#include <dpu_error.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_t;

struct dpu_program_t {
    uint8_t nr_threads_enabled;
    int32_t printf_buffer_address;
    int32_t printf_buffer_size;
    int32_t printf_write_pointer_address;
    int32_t printf_buffer_has_wrapped_address;
    dpu_elf_symbols_t *symbols;
    int32_t mcount_address;
    int32_t ret_mcount_address;
    int32_t thread_profiling_address;
    int32_t perfcounter_end_value_address;
    dpu_elf_symbols_t *profiling_symbols;
    int32_t open_print_sequence_addr;
    int32_t close_print_sequence_addr;
    int32_t reference_count;
    char *program_path;
};

/** Set the reference count to 1. */
void dpu_init_program_ref(struct dpu_program_t *program);
/** Take a reference. */
void dpu_take_program_ref(struct dpu_program_t *program);
/** Drop a reference (the library frees its own programs with their allocation). */
void dpu_free_program(struct dpu_program_t *program);
/** The program loaded on `dpu`, or NULL. */
struct dpu_program_t *dpu_get_program(struct dpu_t *dpu);
/** Declared as in the SDK; the simulator answers nothing (loading goes through dpu_load). */
void dpu_set_program(struct dpu_t *dpu, struct dpu_program_t *program);
dpu_error_t dpu_load_elf_program_from_memory(dpu_elf_file_t *elf_info, const char *path, uint8_t *buffer_start,
                                             size_t buffer_size, struct dpu_program_t *program,
                                             mram_size_t mram_size_hint);
dpu_error_t dpu_load_elf_program(dpu_elf_file_t *elf_info, const char *path, struct dpu_program_t *program,
                                 mram_size_t mram_size_hint);
/** The one program every DPU of the set runs: DPU_ERR_DIFFERENT_DPU_PROGRAMS if they differ,
 *  DPU_ERR_NO_PROGRAM_LOADED if none. */
dpu_error_t dpu_get_common_program(struct dpu_set_t *dpu_set, struct dpu_program_t **program);

#ifdef __cplusplus
}
#endif

#endif /* DPU_PROGRAM_H */
