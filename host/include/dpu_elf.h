/* dpu_elf.h: DPU program files and their symbols (pimrl's libdpu).
 *
 * The types are the SDK's; struct dpu_program_t (dpu_program.h) lists a program's symbols
 * as a dpu_elf_symbols_t. The functions read UPMEM DPU ELF files in the SDK and are declared
 * for completeness; the simulator loads its own program format and answers DPU_ERR_SYSTEM.
 */
#ifndef DPU_ELF_H
#define DPU_ELF_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_error.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EM_DPU 245

typedef struct dpu_elf_symbol {
    char *name;
    unsigned int value;
    unsigned int size;
} dpu_elf_symbol_t;

typedef struct dpu_elf_symbols {
    unsigned int nr_symbols;
    dpu_elf_symbol_t *map;
} dpu_elf_symbols_t;

typedef struct _dpu_elf_runtime_info_item {
    uint32_t value;
    uint32_t size;
    bool exists;
} dpu_elf_runtime_info_item_t;

typedef struct _dpu_elf_runtime_info {
    dpu_elf_runtime_info_item_t sys_heap_pointer_reset;
    dpu_elf_runtime_info_item_t sys_heap_pointer;
    dpu_elf_runtime_info_item_t sys_wq_table;
    dpu_elf_runtime_info_item_t sys_stack_table;
    dpu_elf_runtime_info_item_t printf_buffer;
    dpu_elf_runtime_info_item_t printf_state;
    dpu_elf_runtime_info_item_t sys_end;
    dpu_elf_runtime_info_item_t mcount;
    dpu_elf_runtime_info_item_t ret_mcount;
    dpu_elf_runtime_info_item_t thread_profiling;
    dpu_elf_runtime_info_item_t nr_threads;
    dpu_elf_runtime_info_item_t perfcounter_end_value;
    dpu_elf_runtime_info_item_t open_print_sequence;
    dpu_elf_runtime_info_item_t close_print_sequence;
    dpu_elf_symbols_t mutex_info;
    dpu_elf_symbols_t semaphore_info;
    dpu_elf_symbols_t barrier_info;
} dpu_elf_runtime_info_t;

typedef void *dpu_elf_file_t;

dpu_error_t dpu_elf_open(const char *path, dpu_elf_file_t *file);
dpu_error_t dpu_elf_map(uint8_t *memory, unsigned int size, dpu_elf_file_t *file, const char *filename_or_null);
void dpu_elf_close(dpu_elf_file_t file);
dpu_error_t dpu_elf_load_section(dpu_elf_file_t file, const char *name, unsigned int *size, uint8_t **buffer);
dpu_error_t dpu_elf_load_symbols(dpu_elf_file_t file, const char *name, dpu_elf_symbols_t **symbols);
void dpu_elf_free_symbols(dpu_elf_symbols_t *symbols);
dpu_error_t dpu_elf_get_sections(dpu_elf_file_t file, unsigned int *nr_sections, char ***sections);
void dpu_elf_get_runtime_info(dpu_elf_file_t file, dpu_elf_runtime_info_t *runtime_info);
void free_runtime_info(dpu_elf_runtime_info_t *runtime_info);
dpu_error_t dpu_elf_create_core_dump(const char *exe_path, const char *core_file_path, uint8_t *wram, uint8_t *mram,
                                     uint8_t *iram, uint8_t *context, uint32_t wram_size, uint32_t mram_size,
                                     uint32_t iram_size, uint32_t context_size);

#ifdef __cplusplus
}
#endif

#endif /* DPU_ELF_H */
