/* check_abi.c: pimrl's host headers against the SDK's documented host ABI (2025.1).
 *
 * Compiled with nothing but `$(dpu-pkg-config --cflags --libs dpu)` and -Werror: the
 * function declarations of declarations.h must agree with pimrl's, every enumerator must
 * have the SDK's value (values.h), and the types below the SDK's sizes and field offsets
 * (x86-64, LP64). test_sdk_abi.py appends a table of the address of every declared
 * function, so the program also links only if libdpu defines them all. Run, it checks the
 * few contracts a compiler cannot: dpu_error_to_string's string belongs to the caller, and
 * DPU_INCBIN embeds a file. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dpu.h>
#include <dpu_description.h>
#include <dpu_elf.h>
#include <dpu_log.h>
#include <dpu_management.h>
#include <dpu_memory.h>
#include <dpu_program.h>
#include <dpu_runner.h>

#include "declarations.h"
#include "values.h"

#define LAYOUT(expr, value) _Static_assert((expr) == (value), #expr " is " #value " in the SDK")

/* sets */
LAYOUT(sizeof(struct dpu_set_t), 24);
LAYOUT(offsetof(struct dpu_set_t, kind), 0);
LAYOUT(offsetof(struct dpu_set_t, list.nr_ranks), 8);
LAYOUT(offsetof(struct dpu_set_t, list.ranks), 16);
LAYOUT(offsetof(struct dpu_set_t, dpu), 8);
LAYOUT(sizeof(struct dpu_set_rank_iterator_t), 48);
LAYOUT(offsetof(struct dpu_set_rank_iterator_t, next), 24);
LAYOUT(sizeof(struct dpu_set_dpu_iterator_t), 88);
LAYOUT(offsetof(struct dpu_set_dpu_iterator_t, has_next), 56);
LAYOUT(offsetof(struct dpu_set_dpu_iterator_t, next), 64);
LAYOUT(sizeof(struct dpu_iterator_t), 32);
/* programs and symbols */
LAYOUT(sizeof(struct dpu_symbol_t), 8);
LAYOUT(sizeof(struct dpu_incbin_t), 24);
LAYOUT(sizeof(struct dpu_program_t), 80);
LAYOUT(offsetof(struct dpu_program_t, symbols), 24);
LAYOUT(offsetof(struct dpu_program_t, reference_count), 64);
LAYOUT(offsetof(struct dpu_program_t, program_path), 72);
LAYOUT(sizeof(dpu_elf_runtime_info_t), 216);
/* transfers */
LAYOUT(sizeof(struct sg_block_info), 16);
LAYOUT(sizeof(get_block_t), 24);
LAYOUT(sizeof(struct sg_xfer_buffer), 32);
LAYOUT(sizeof(struct dpu_transfer_matrix), 528);
LAYOUT(sizeof(struct dpu_fifo_rank_t), 2104);
LAYOUT(sizeof(struct dpu_fifo_link_t), 24);
/* hardware */
LAYOUT(sizeof(struct _dpu_description_t), 88);
LAYOUT(offsetof(struct _dpu_description_t, type), 52);
LAYOUT(sizeof(struct dpu_hw_description_t), 52);
LAYOUT(sizeof(struct _dpu_run_context_t), 24);
LAYOUT(sizeof(struct dpu_context_t), 120);
LAYOUT(sizeof(bank_interface_pmc_result_t), 8);
LAYOUT(sizeof(bank_interface_pmc_config_t), 12);
LAYOUT(sizeof(struct dpu_slice_target), 8);
LAYOUT(sizeof(dpu_event_kind_t), 1);
/* scalar types */
LAYOUT(sizeof(iram_addr_t), 2);
LAYOUT(sizeof(iram_size_t), 2);
LAYOUT(sizeof(wram_addr_t), 4);
LAYOUT(sizeof(mram_addr_t), 4);
LAYOUT(sizeof(dpu_rank_id_t), 2);
LAYOUT(sizeof(dpu_id_t), 4);
LAYOUT(sizeof(dpu_slice_id_t), 1);
LAYOUT(sizeof(dpu_member_id_t), 1);
LAYOUT(sizeof(dpuinstruction_t), 8);
LAYOUT(sizeof(dpuword_t), 4);
/* macros */
LAYOUT(DPU_ALLOCATE_ALL, UINT_MAX);
LAYOUT(DPU_CHECKPOINT_ALL, 0x1b);
LAYOUT(DPU_ERROR_ASYNC_JOB_TYPE_SHIFT, 16);
LAYOUT(DPU_MAX_NR_CIS, 8);
LAYOUT(DPU_MAX_NR_DPUS_PER_CI, 8);
LAYOUT(DPU_BOOT_THREAD, 0);
LAYOUT(DPU_MAX_NR_GROUPS, 8);
LAYOUT(MAX_NR_DPUS_PER_RANK, 64);
LAYOUT(EM_DPU, 245);
LAYOUT(NEXT_DPU_CHIP_IDX, 16);

DPU_INCBIN(embedded_file, "check_abi.c")

extern void *const pimrl_abi_functions[];
extern const size_t pimrl_abi_nr_functions;

int main(void)
{
    char *text = dpu_error_to_string(DPU_ERR_TOO_MANY_TASKLETS);
    int failures = 0;
    if (text == NULL || strstr(text, "tasklets") == NULL) {
        printf("FAIL: dpu_error_to_string(DPU_ERR_TOO_MANY_TASKLETS) = %s\n", text ? text : "NULL");
        failures++;
    }
    free(text); /* the caller owns it: free() must accept it */
    if (strcmp(DPU_MRAM_HEAP_POINTER_NAME, "__sys_used_mram_end") != 0) {
        printf("FAIL: DPU_MRAM_HEAP_POINTER_NAME\n");
        failures++;
    }
    if (embedded_file.size < 100 || memcmp(embedded_file.buffer, "/* check_abi.c", 14) != 0) {
        printf("FAIL: DPU_INCBIN did not embed the file\n");
        failures++;
    }
    for (size_t i = 0; i < pimrl_abi_nr_functions; i++) {
        if (pimrl_abi_functions[i] == NULL) {
            printf("FAIL: function %zu has no address\n", i);
            failures++;
        }
    }
    printf("%zu functions linked, %s\n", pimrl_abi_nr_functions, failures ? "FAIL" : "OK");
    return failures != 0;
}
