"""libdpu's C fast path for small transfers against the Python path: the same bytes land in
the same places, and the same modelled costs are booked in the same order, bit for bit."""
from __future__ import annotations

import pytest

from test_shim import cc_user, sh, shim  # noqa: F401  (session fixture)

PROGRAM = r'''
#include <dpu.h>
#include <pimrl_sim.h>
#include <stdio.h>
#include <string.h>
static void report(struct dpu_set_t set) {
    const char *cats[] = {PIMRL_SIM_CPU_DPU, PIMRL_SIM_DPU_KERNEL, PIMRL_SIM_INTER_DPU, PIMRL_SIM_DPU_CPU};
    for (int c = 0; c < 4; c++) { double s; DPU_ASSERT(pimrl_sim_modelled_seconds(set, cats[c], &s)); printf("%s %.17g\n", cats[c], s); }
}
int main(void) {
    struct dpu_set_t set, dpu, rank;
    uint32_t each;
    static uint8_t rows[70][256], back[70][256];
    uint64_t counter;
    for (int d = 0; d < 70; d++) for (int i = 0; i < 256; i++) rows[d][i] = (uint8_t)(d * 31 + i);
    DPU_ASSERT(dpu_alloc(70, "hardware=upmem-640", &set));
    DPU_ASSERT(dpu_load(set, "pimrl:diag", NULL));
    for (int round = 0; round < 3; round++) {
        DPU_FOREACH(set, dpu, each) { DPU_ASSERT(dpu_prepare_xfer(dpu, rows[each])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 8 * round, 256, DPU_XFER_DEFAULT));
        DPU_FOREACH(set, dpu, each) { if (each % 3 == 0) DPU_ASSERT(dpu_prepare_xfer(dpu, rows[each])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "words", 0, 128, DPU_XFER_NO_RESET));
        DPU_ASSERT(pimrl_sim_set_phase(set, PIMRL_SIM_INTER_DPU));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "words", 128, 64, DPU_XFER_DEFAULT));
        DPU_ASSERT(pimrl_sim_set_phase(set, NULL));
        DPU_RANK_FOREACH(set, rank) { DPU_ASSERT(dpu_copy_to(rank, "words", 192, rows[0], 64)); }
        DPU_ASSERT(dpu_broadcast_to(set, "buffer", 1024, rows[1], 64, DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH(set, dpu, each) {
            DPU_ASSERT(dpu_copy_from(dpu, "counter", 0, &counter, 8));
            if (counter != (uint64_t)round + 1) { printf("FAIL counter\n"); return 1; }
            DPU_ASSERT(dpu_prepare_xfer(dpu, back[each]));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "buffer", 8 * round, 256, DPU_XFER_DEFAULT));
        for (int d = 0; d < 70; d++) if (memcmp(back[d], rows[d], 256)) { printf("FAIL data\n"); return 1; }
        DPU_FOREACH(set, dpu, each) { DPU_ASSERT(dpu_prepare_xfer(dpu, back[each])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "words", 0, 256, DPU_XFER_DEFAULT));
        for (int d = 0; d < 70; d++) printf("%02x%02x%02x ", back[d][0], back[d][130], back[d][200]);
        printf("\n");
    }
    report(set);
    DPU_ASSERT(dpu_free(set));
    fprintf(stderr, "fast path transfers: %llu\n", pimrl_sim_fast_path_transfers());
    printf("OK\n");
    return 0;
}
'''


@pytest.mark.needs_c_shim
def test_fast_path_books_what_the_python_path_books(shim, tmp_path):  # noqa: F811
    _, env = shim
    src = tmp_path / "paths.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "paths"
    cc_user(src, exe, env)
    fast = sh(str(exe), dict(env, PIMRL_SHIM_FAST_PATH="1"))
    slow = sh(str(exe), dict(env, PIMRL_SHIM_FAST_PATH="0"))
    assert fast.returncode == 0 and slow.returncode == 0, fast.stdout + fast.stderr + slow.stderr
    assert fast.stdout.endswith("OK\n")
    assert fast.stdout == slow.stdout                  # data read back and modelled seconds
    # 3 rounds of 5 pushes, 2 rank copies, 1 broadcast and 70 single-DPU copies, less the
    # first push: it writes MRAM pages never written before, which Python backs
    assert "fast path transfers: 233" in fast.stderr, fast.stderr
    assert "fast path transfers: 0" in slow.stderr
    inter = [line for line in fast.stdout.splitlines() if line.startswith("inter_dpu")]
    assert inter and float(inter[0].split()[1]) > 0    # the phase reached the fast path


THREADS = r'''
#include <dpu.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#define N 4
static struct dpu_set_t dpus[N];
static int bad[N];
static void *work(void *arg) {
    int d = (int)(long)arg;
    uint32_t out[16], in[16];
    for (int i = 0; i < 3000; i++) {
        for (int k = 0; k < 16; k++) out[k] = (uint32_t)(d * 1000003 + i * 17 + k);
        if (dpu_copy_to(dpus[d], "words", 0, out, sizeof(out)) != DPU_OK) bad[d]++;
        if (dpu_copy_from(dpus[d], "words", 0, in, sizeof(in)) != DPU_OK) bad[d]++;
        if (memcmp(in, out, sizeof(in)) != 0) bad[d]++;
        if (i % 500 == 0 && dpu_launch(dpus[d], DPU_SYNCHRONOUS) != DPU_OK) bad[d]++;
    }
    return NULL;
}
int main(void) {
    struct dpu_set_t set, dpu;
    uint32_t each;
    pthread_t threads[N];
    DPU_ASSERT(dpu_alloc(N, "hardware=upmem-640", &set));
    DPU_ASSERT(dpu_load(set, "pimrl:diag", NULL));
    DPU_FOREACH(set, dpu, each) { dpus[each] = dpu; }
    for (long t = 0; t < N; t++) pthread_create(&threads[t], NULL, work, (void *)t);
    for (int t = 0; t < N; t++) pthread_join(threads[t], NULL);
    int failures = 0;
    for (int t = 0; t < N; t++) failures += bad[t];
    DPU_ASSERT(dpu_free(set));
    printf("%s\n", failures ? "FAIL" : "OK");
    return failures != 0;
}
'''


@pytest.mark.needs_c_shim
def test_host_threads_may_call_concurrently(shim, tmp_path):  # noqa: F811
    """Four host threads, one DPU each: transfers (C fast path) interleaved with launches
    (Python) never see another thread's bytes or a stale memory."""
    _, env = shim
    src = tmp_path / "threads.c"
    src.write_text(THREADS)
    exe = tmp_path / "threads"
    r = sh(f"cc -pthread {src} -o {exe} $(dpu-pkg-config --cflags --libs dpu)", env)
    assert r.returncode == 0, r.stderr
    r = sh(str(exe), env)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
