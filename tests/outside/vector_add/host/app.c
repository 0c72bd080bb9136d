/* Vector add host program: written against the UPMEM SDK's dpu.h only. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifndef DPU_BINARY
#define DPU_BINARY "./bin/dpu_code"
#endif
#ifndef NR_DPUS
#define NR_DPUS 4
#endif
#ifndef N_ELEMS
#define N_ELEMS 10002
#endif

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));

    uint32_t per_dpu = (N_ELEMS + nr_dpus - 1) / nr_dpus;
    per_dpu += per_dpu & 1;                           /* 8-byte transfers */
    uint32_t bytes = per_dpu * sizeof(int32_t);
    int32_t *a = calloc((size_t)per_dpu * nr_dpus, sizeof(int32_t));
    int32_t *b = calloc((size_t)per_dpu * nr_dpus, sizeof(int32_t));
    int32_t *c = calloc((size_t)per_dpu * nr_dpus, sizeof(int32_t));
    for (i = 0; i < N_ELEMS; i++) {
        a[i] = (int32_t)(i * 7 - 3000);
        b[i] = (int32_t)(100000 - i * 3);
    }
    dpu_args_t args = {per_dpu, 0};
    DPU_ASSERT(dpu_broadcast_to(set, "args", 0, &args, sizeof args, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, a + (size_t)i * per_dpu));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, bytes,
                             DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, b + (size_t)i * per_dpu));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, bytes, bytes,
                             DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, c + (size_t)i * per_dpu));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 2 * bytes,
                             bytes, DPU_XFER_DEFAULT));

    int errors = 0;
    for (i = 0; i < (uint32_t)per_dpu * nr_dpus; i++)
        if (c[i] != a[i] + b[i]) {
            if (errors < 5)
                fprintf(stderr, "c[%u] = %d, expected %d\n", i, c[i], a[i] + b[i]);
            errors++;
        }
    uint64_t cycles = 0;
    uint32_t blocks[64] = {0};
    DPU_FOREACH(set, dpu, i) {
        if (i == 0) {
            DPU_ASSERT(dpu_copy_from(dpu, "kernel_cycles", 0, &cycles, sizeof cycles));
            DPU_ASSERT(dpu_copy_from(dpu, "blocks_done", 0, blocks, NR_TASKLETS * sizeof(uint32_t)));
            DPU_ASSERT(dpu_log_read(dpu, stdout));
        }
    }
    int busy = 0;
    for (i = 0; i < NR_TASKLETS; i++)
        busy += blocks[i] > 0;
    printf("DPU 0: %llu cycles, %d of %d tasklets did blocks\n", (unsigned long long)cycles,
           busy, NR_TASKLETS);
    if (busy < 2 || cycles == 0)
        errors++;
    DPU_ASSERT(dpu_free(set));
    free(a);
    free(b);
    free(c);
    printf("%s\n", errors ? "FAIL" : "OK");
    return errors ? 1 : 0;
}
