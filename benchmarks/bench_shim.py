"""Host time of one small SDK call through libdpu.so (measured, wall clock).

A C program built with `dpu-pkg-config --cflags --libs dpu` times N calls of each kind on a
64-byte transfer, then one call that books every queued cost (pimrl_sim_modelled_seconds),
so the figure includes all the work the simulator does for those calls. Each kind runs
twice in the same process: with the C fast path, and with PIMRL_SHIM_FAST_PATH=0 (every
call through the embedded Python interpreter, as before the fast path), the baseline.

    python benchmarks/bench_shim.py [--calls 20000]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pimrl.shim import build as shim_build  # noqa: E402

PROGRAM = r'''
#include <dpu.h>
#include <pimrl_sim.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void flush(struct dpu_set_t set) { double s; DPU_ASSERT(pimrl_sim_modelled_seconds(set, PIMRL_SIM_CPU_DPU, &s)); }
int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    uint8_t buf[64 * 64];
    for (int i = 0; i < (int)sizeof(buf); i++) buf[i] = (uint8_t)i;
    const uint32_t sizes[] = {1, 64};
    for (int k = 0; k < 2; k++) {
        struct dpu_set_t set, dpu;
        DPU_ASSERT(dpu_alloc(sizes[k], "hardware=upmem-640", &set));
        DPU_ASSERT(dpu_load(set, "pimrl:diag", NULL));
        const char *symbols[] = {"words", "buffer"};
        for (int s = 0; s < 2; s++) {
            const char *sym = symbols[s];
            uint32_t i;
            DPU_ASSERT(dpu_copy_to(set, sym, 0, buf, 64));        /* warm up: first touch */
            flush(set);
            double t0 = now();
            for (int c = 0; c < calls; c++) DPU_ASSERT(dpu_copy_to(set, sym, 0, buf, 64));
            flush(set);
            double t1 = now();
            for (int c = 0; c < calls; c++) {
                DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, buf + 64 * i)); }
                DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, sym, 0, 64, DPU_XFER_DEFAULT));
            }
            flush(set);
            double t2 = now();
            printf("%u %s copy_to %.3f prepare_push %.3f\n", sizes[k], sym, (t1 - t0) / calls * 1e6,
                   (t2 - t1) / calls * 1e6);
        }
        DPU_ASSERT(dpu_free(set));
    }
    return 0;
}
'''


def run(exe: Path, calls: int, fast: bool) -> dict:
    env = dict(os.environ, PIMRL_SHIM_FAST_PATH="1" if fast else "0")
    out = subprocess.run([str(exe), str(calls)], capture_output=True, text=True, env=env, check=True).stdout
    rows = {}
    for line in out.splitlines():
        dpus, sym, _, copy_us, _, push_us = line.split()
        rows[(int(dpus), sym)] = (float(copy_us), float(push_us))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per kind with the fast path")
    parser.add_argument("--baseline-calls", type=int, default=500, help="calls per kind through Python")
    args = parser.parse_args(argv)
    ok, why = shim_build.c_toolchain()
    if not ok:
        print(f"bench_shim: skipped ({why})")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build = Path(tmp) / "shim"
        lib = shim_build.build_shim(build, force=True)
        flags = shim_build.pkg_config_flags(build)
        src = Path(tmp) / "bench.c"
        src.write_text(PROGRAM)
        exe = Path(tmp) / "bench"
        subprocess.run([*shim_build.find_compiler().split(), "-O2", str(src), "-o", str(exe),
                        *flags["cflags"].split(), *flags["libs"].split()], check=True)
        fast = run(exe, args.calls, True)
        slow = run(exe, args.baseline_calls, False)
    print(f"libdpu host time per call, 64 bytes per DPU (measured wall clock, {lib.name}):")
    print(f"{'DPUs':>4} {'symbol':<7} {'call':<24} {'fast path us':>13} {'via Python us':>14} {'ratio':>7}")
    for (dpus, sym), (copy_us, push_us) in sorted(fast.items()):
        base_copy, base_push = slow[(dpus, sym)]
        for what, us, base in (("dpu_copy_to", copy_us, base_copy),
                               (f"{dpus} x prepare + push_xfer", push_us, base_push)):
            print(f"{dpus:>4} {sym:<7} {what:<24} {us:>13.2f} {base:>14.1f} {base / us:>6.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
