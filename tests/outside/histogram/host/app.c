/* Byte histogram host program: written against the UPMEM SDK's dpu.h only. DPU 0 gets a
 * full input array (its reader reads ahead past the end), the others an odd number of
 * bytes; every DPU's WRAM and MRAM histograms are checked against the host's count. */
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
#define NR_DPUS 3
#endif

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    int errors = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    uint8_t *data = calloc((size_t)nr_dpus, MAX_BYTES);
    uint32_t *want = calloc((size_t)nr_dpus * BINS, sizeof(uint32_t));
    uint32_t got[BINS];
    int32_t got_mram[BINS];
    uint32_t state = 12345;
    DPU_FOREACH(set, dpu, i) {
        dpu_args_t args = {i == 0 ? MAX_BYTES : MAX_BYTES / 3 + 7 * i, 0};
        uint8_t *mine = data + (size_t)i * MAX_BYTES;
        for (uint32_t k = 0; k < args.n_bytes; k++) {
            state = state * 1103515245u + 12345u;
            mine[k] = (uint8_t)((state >> 16) % (64 + 64 * i));
            want[i * BINS + mine[k]]++;
        }
        DPU_ASSERT(dpu_copy_to(dpu, "args", 0, &args, sizeof args));
        DPU_ASSERT(dpu_copy_to(dpu, "input", 0, mine, (args.n_bytes + 7) & ~7u));
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_copy_from(dpu, "histogram", 0, got, sizeof got));
        DPU_ASSERT(dpu_copy_from(dpu, "mram_histogram", 0, got_mram, sizeof got_mram));
        for (int b = 0; b < BINS; b++)
            if (got[b] != want[i * BINS + b] || (uint32_t)got_mram[b] != want[i * BINS + b]) {
                if (errors < 5)
                    fprintf(stderr, "DPU %u bin %d: %u and %d, expected %u\n", i, b, got[b],
                            got_mram[b], want[i * BINS + b]);
                errors++;
            }
        if (i == 0)
            DPU_ASSERT(dpu_log_read(dpu, stdout));
    }
    DPU_ASSERT(dpu_free(set));
    free(data);
    free(want);
    printf("%s\n", errors ? "FAIL" : "OK");
    return errors ? 1 : 0;
}
