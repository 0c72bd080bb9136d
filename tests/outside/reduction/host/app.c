/* Sum reduction host program: written against the UPMEM SDK's dpu.h only. Two launches
 * on different data; every DPU's sum is checked, and the MRAM copy on the first DPU. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#ifndef DPU_BINARY
#define DPU_BINARY "./bin/dpu_code"
#endif
#ifndef NR_DPUS
#define NR_DPUS 3
#endif
#define PER_DPU 5000

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    int errors = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    uint64_t *data = malloc(sizeof(uint64_t) * PER_DPU * nr_dpus);
    dpu_result_t *results = calloc(nr_dpus, sizeof *results);
    dpu_args_t args = {PER_DPU, 0};
    DPU_ASSERT(dpu_broadcast_to(set, "args", 0, &args, sizeof args, DPU_XFER_DEFAULT));
    for (int round = 0; round < 2; round++) {
        for (i = 0; i < PER_DPU * nr_dpus; i++)
            data[i] = (uint64_t)i * (round + 1) + 0x100000000ull;
        DPU_FOREACH(set, dpu, i) {
            DPU_ASSERT(dpu_prepare_xfer(dpu, data + (size_t)i * PER_DPU));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
                                 PER_DPU * sizeof(uint64_t), DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH(set, dpu, i) {
            DPU_ASSERT(dpu_prepare_xfer(dpu, &results[i]));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "result", 0, sizeof(dpu_result_t),
                                 DPU_XFER_DEFAULT));
        for (i = 0; i < nr_dpus; i++) {
            uint64_t want = 0;
            for (uint32_t k = 0; k < PER_DPU; k++)
                want += data[(size_t)i * PER_DPU + k];
            if (results[i].sum != want) {
                fprintf(stderr, "round %d DPU %u: sum %llu, expected %llu\n", round, i,
                        (unsigned long long)results[i].sum, (unsigned long long)want);
                errors++;
            }
            if (results[i].cycles == 0)
                errors++;
        }
    }
    uint64_t mram_total = 0;
    uint32_t launches = 0;
    DPU_FOREACH(set, dpu, i) {
        if (i == 0) {
            DPU_ASSERT(dpu_copy_from(dpu, "mram_total", 0, &mram_total, sizeof mram_total));
            DPU_ASSERT(dpu_copy_from(dpu, "launches", 0, &launches, sizeof launches));
            DPU_ASSERT(dpu_log_read(dpu, stdout));
        }
    }
    if (mram_total != results[0].sum || launches != 2) {
        fprintf(stderr, "DPU 0: MRAM total %llu (sum %llu), %u launches\n",
                (unsigned long long)mram_total, (unsigned long long)results[0].sum, launches);
        errors++;
    }
    printf("DPU 0: %llu cycles in the last launch\n", (unsigned long long)results[0].cycles);
    DPU_ASSERT(dpu_free(set));
    free(data);
    free(results);
    printf("%s\n", errors ? "FAIL" : "OK");
    return errors ? 1 : 0;
}
