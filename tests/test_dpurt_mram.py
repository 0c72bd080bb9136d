"""MRAM variables of any size: the DPU code's direct reads and writes of its ``__mram``
variables, its DMA (``mram_read``/``mram_write``) and the host's transfers see one set of
bytes, whether the variables are copied in and out whole (small ones) or paged in on first
touch (large ones, or any size with ``PIMRL_DPURT_MRAM_SWAP`` below it)."""

import numpy as np
import pytest

from pimrl.dpurt.testing import dpu_sim  # noqa: F401  (fixture)

pytestmark = pytest.mark.needs_c

BIG_C = r"""
#include <defs.h>
#include <mram.h>
#include <stdint.h>
/* N_WORDS uint64 of MRAM variables (32 MiB by default), touched three ways */
__mram_noinit uint64_t big[N_WORDS];
__mram uint64_t small_init[4] = {5, 6, 7, 8};
__host uint64_t salt;
__host uint64_t host_sum;        /* sum of the words the host wrote, read directly */
__host uint64_t dma_seen;        /* a directly written word, read back by mram_read */
__host uint64_t direct_seen;     /* a word written by mram_write, read back directly */
int main(void) {
    if (me() != 0)
        return 0;
    uint64_t s = 0;
    for (uint32_t i = 0; i < N_WORDS; i += STRIDE)       /* the host's words, direct reads */
        s += big[i];
    host_sum = s + small_init[2];
    for (uint32_t i = 1; i < N_WORDS; i += STRIDE)       /* direct writes, sparse */
        big[i] = salt * 1000003u + i;
    big[N_WORDS - 1] = salt ^ 0xABCDEFull;                /* the very last word */
    uint64_t buf[2] __dma_aligned;
    mram_read(&big[1 + STRIDE], buf, 16);                 /* DMA sees the direct write */
    dma_seen = buf[0];
    buf[0] = salt + 77; buf[1] = salt + 78;
    mram_write(buf, &big[2], 16);                         /* direct reads see the DMA */
    direct_seen = big[2] + big[3];
    return 0;
}
"""


def run_big(dpu_sim, tmp_path, n_words, stride, nr_dpus=3, workers=2):
    (tmp_path / "big.c").write_text(BIG_C)
    sim = dpu_sim(tmp_path / "big.c", nr_dpus=nr_dpus, nr_tasklets=2, workers=workers,
                  defines={"N_WORDS": n_words, "STRIDE": stride})
    idx = np.arange(0, n_words, stride)
    for d in range(nr_dpus):
        words = np.zeros(n_words, dtype=np.uint64) if d == 0 else None
        host = (idx.astype(np.uint64) * 7 + d)
        if words is not None:                            # DPU 0: the whole array at once
            words[idx] = host
            sim.write("big", words, dpu=d)
        else:                                            # others: word by word
            for i, v in zip(idx, host):
                sim.write("big", np.uint64(v), dpu=d, offset=int(i) * 8)
        sim.write("salt", np.uint64(100 + d), dpu=d)
    for launch in range(2):
        sim.launch()
        for d in range(nr_dpus):
            salt = 100 + d
            host = idx.astype(np.uint64) * 7 + d        # the host's words (stride > 3)
            assert sim.read("host_sum", np.uint64, dpu=d)[0] == int(host.sum()) + 7, (launch, d)
            assert sim.read("dma_seen", np.uint64, dpu=d)[0] == salt * 1000003 + 1 + stride
            assert sim.read("direct_seen", np.uint64, dpu=d)[0] == 2 * salt + 155
            got = sim.read("big", np.uint64, n_words, dpu=d)
            assert got[1] == salt * 1000003 + 1
            assert got[n_words - 1] == salt ^ 0xABCDEF
            assert got[2] == salt + 77 and got[3] == salt + 78
            assert got[1 + 5 * stride] == salt * 1000003 + 1 + 5 * stride
            assert np.array_equal(got[idx], host)         # kept across launches
    return sim


def test_32_mib_mram_variable_written_directly_reads_back(dpu_sim, tmp_path):
    """A 32 MiB __mram array written directly by the DPU (every 64 KiB granule) and by the
    host, read back by the host, the DMA and the DPU code, over two launches."""
    run_big(dpu_sim, tmp_path, n_words=4 << 20, stride=4099, nr_dpus=2, workers=2)


@pytest.mark.parametrize("limit,n_words", [("", (2 << 20) // 8),        # 2 MiB: paged
                                          ("0x1000000", (2 << 20) // 8),  # copied whole
                                          ("0", 1024)])                    # 8 KiB: paged
def test_paged_and_copied_variables_agree(dpu_sim, tmp_path, monkeypatch, limit, n_words):
    """Variables above PIMRL_DPURT_MRAM_SWAP (1 MiB) are paged in, those below copied whole;
    every mode gives the same bytes."""
    if limit:
        monkeypatch.setenv("PIMRL_DPURT_MRAM_SWAP", limit)
    run_big(dpu_sim, tmp_path, n_words=n_words, stride=4099 if n_words > 4099 else 100)


def test_bad_swap_limit_is_named(dpu_sim, tmp_path, monkeypatch):
    from pimrl.pim.errors import DpuError
    monkeypatch.setenv("PIMRL_DPURT_MRAM_SWAP", "lots")
    with pytest.raises(DpuError, match="PIMRL_DPURT_MRAM_SWAP='lots'"):
        run_big(dpu_sim, tmp_path, n_words=1024, stride=100, nr_dpus=1, workers=1)


def test_noinit_variables_cost_no_memory_until_touched(dpu_sim, tmp_path):
    """Loading a program with 32 MiB of __mram_noinit on 16 DPUs writes only the initialised
    __mram variables (as the DPU's loader does), and a launch that touches one word of the
    array allocates one page per DPU, not 32 MiB each."""
    (tmp_path / "big.c").write_text(BIG_C)
    sim = dpu_sim(tmp_path / "big.c", nr_dpus=16, nr_tasklets=1,
                  defines={"N_WORDS": 4 << 20, "STRIDE": 4 << 20})
    mram = sim.dpus.alloc.mram
    assert mram.bytes_allocated == 16 * 4096               # small_init's page, per DPU
    sim.launch()
    # words 0, 1, 2-3 (one page), the last word (one page), of 32 MiB
    assert mram.bytes_allocated == 16 * 2 * 4096
