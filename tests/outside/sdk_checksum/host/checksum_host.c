/* Checksum host program: written against the UPMEM SDK's dpu.h only. Each DPU gets its own
 * number of words and seed; the program checks every DPU's checksum and exits 0 when all
 * agree with its own. */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "checksum.h"

#ifndef DPU_BINARY
#define DPU_BINARY "./bin/checksum_dpu"
#endif
#ifndef NR_DPUS
#define NR_DPUS 4
#endif
#ifndef NR_TASKLETS
#define NR_TASKLETS 8
#endif
#define MAX_WORDS 4096

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t nr_dpus, i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));

    uint32_t *words = malloc((size_t)nr_dpus * MAX_WORDS * sizeof(uint32_t));
    uint32_t *expected = calloc(nr_dpus, sizeof(uint32_t));
    if (!words || !expected)
        return 2;
    DPU_FOREACH(set, dpu, i) {
        checksum_args_t args = {MAX_WORDS - 2 * (i % 512), 17 * i + 1};
        uint32_t *mine = words + (size_t)i * MAX_WORDS;
        for (uint32_t w = 0; w < MAX_WORDS; w++)
            mine[w] = w * 40503u + i * 7919u;
        for (uint32_t w = 0; w < args.n_words; w++)
            expected[i] += checksum_word(mine[w], w, args.seed);
        DPU_ASSERT(dpu_copy_to(dpu, "args", 0, &args, sizeof args));
        DPU_ASSERT(dpu_prepare_xfer(dpu, mine));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
                             MAX_WORDS * sizeof(uint32_t), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    int errors = 0;
    DPU_FOREACH(set, dpu, i) {
        uint32_t got;
        DPU_ASSERT(dpu_copy_from(dpu, "checksum", 0, &got, sizeof got));
        if (got != expected[i]) {
            fprintf(stderr, "DPU %u: checksum %08x, expected %08x\n", i, got, expected[i]);
            errors++;
        }
    }
    printf("%u DPUs, %d tasklets: %s\n", nr_dpus, NR_TASKLETS, errors ? "FAIL" : "OK");
    DPU_ASSERT(dpu_free(set));
    free(words);
    free(expected);
    return errors ? 1 : 0;
}
