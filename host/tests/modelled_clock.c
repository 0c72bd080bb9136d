/* modelled_clock.c: an ordinary host program that times its phases with the host clock, as
 * PrIM's do (gettimeofday) and as others do (clock_gettime). Run with PIMRL_MODELLED_CLOCK=1
 * it must report the phase times of the cost model (tests/test_shim.py). It prints, per
 * phase, the host-clock seconds and the modelled seconds the simulator's ledger holds. */
#include <dpu.h>
#include <pimrl_sim.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#define NR_DPUS 64
#define BYTES (1u << 20)

static double tod(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + 1e-6 * tv.tv_usec;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(void)
{
    struct dpu_set_t set, dpu;
    uint32_t i;
    uint8_t *buf = malloc((size_t)NR_DPUS * BYTES);
    for (size_t k = 0; k < (size_t)NR_DPUS * BYTES; k++)
        buf[k] = (uint8_t)k;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "pimrl:diag?cycles=3500000", NULL));

    double t0 = tod(), m0 = mono();
    DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, buf + (size_t)i * BYTES));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, BYTES,
                             DPU_XFER_DEFAULT));
    double t1 = tod(), m1 = mono();
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    double t2 = tod(), m2 = mono();
    DPU_FOREACH(set, dpu, i) DPU_ASSERT(dpu_prepare_xfer(dpu, buf + (size_t)i * BYTES));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, BYTES,
                             DPU_XFER_DEFAULT));
    double t3 = tod(), m3 = mono();

    double cpu_dpu, kernel, dpu_cpu;
    DPU_ASSERT(pimrl_sim_modelled_seconds(set, "cpu_dpu", &cpu_dpu));
    DPU_ASSERT(pimrl_sim_modelled_seconds(set, "dpu_kernel", &kernel));
    DPU_ASSERT(pimrl_sim_modelled_seconds(set, "dpu_cpu", &dpu_cpu));
    printf("cpu_dpu %.9f %.9f %.9f\n", t1 - t0, m1 - m0, cpu_dpu);
    printf("dpu_kernel %.9f %.9f %.9f\n", t2 - t1, m2 - m1, kernel);
    printf("dpu_cpu %.9f %.9f %.9f\n", t3 - t2, m3 - m2, dpu_cpu);
    DPU_ASSERT(dpu_free(set));
    free(buf);
    return 0;
}
