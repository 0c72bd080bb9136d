/* Host side of checksum.c: one buffer per DPU pushed with prepare/push, a launch, the
 * per-tasklet sums pulled back the same way, and every DPU's checksum checked.
 *   dpu-upmem-dpurte-clang -DNR_TASKLETS=16 -O2 -o checksum checksum.c
 *   cc -O2 -o checksum_host checksum_host.c `dpu-pkg-config --cflags --libs dpu` */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NR_DPUS 8
#define NR_TASKLETS 16
#define BUFFER_SIZE (1 << 16)

static uint8_t buffers[NR_DPUS][BUFFER_SIZE];
static uint32_t sums[NR_DPUS][NR_TASKLETS];

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t each, nr_dpus, launches = 0;
    int failures = 0;

    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./checksum", NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    srand(7);
    for (int d = 0; d < NR_DPUS; d++)
        for (int i = 0; i < BUFFER_SIZE; i++)
            buffers[d][i] = (uint8_t)rand();

    DPU_FOREACH (set, dpu, each) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, buffers[each]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 0, BUFFER_SIZE, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH (set, dpu, each) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, sums[each]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "checksums", 0, sizeof(sums[0]), DPU_XFER_DEFAULT));

    for (uint32_t d = 0; d < nr_dpus; d++) {
        uint32_t expected = 0, got = 0;
        for (int i = 0; i < BUFFER_SIZE; i++)
            expected += buffers[d][i];
        for (int t = 0; t < NR_TASKLETS; t++)
            got += sums[d][t];
        if (got != expected) {
            printf("FAIL: DPU %u checksum 0x%08x, expected 0x%08x\n", d, got, expected);
            failures++;
        }
    }
    DPU_FOREACH (set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "launches", 0, &launches, sizeof(launches)));
        failures += launches != 1;
    }
    DPU_ASSERT(dpu_free(set));
    printf("%u DPUs: %s\n", nr_dpus, failures ? "FAIL" : "OK");
    return failures != 0;
}
