"""Parameters fitted to published figures, by a rule that can be rerun: the values in
``pimrl.pim.hardware`` must equal what these functions return (a test checks it)."""
from __future__ import annotations


from pimrl.calibration.published import MRAM_MBPS_2048, STREAM_MBPS
from pimrl.pim.hardware import Hardware

STREAM_BLOCK_BYTES = 1024     # PrIM's STREAM default (BL=10)


def dma_figures(hw: Hardware, alpha_read: float, alpha_write: float) -> dict:
    """MB/s of the three DMA-bound published figures for given alphas (1 tasklet timing one
    2,048-B mram_read / mram_write; COPY-DMA: one read and one write of a 1,024-B block)."""
    f, beta, b = hw.frequency_hz, hw.dma_beta, STREAM_BLOCK_BYTES
    return {
        "read": 2048 * f / (alpha_read + beta * 2048) / 1e6,
        "write": 2048 * f / (alpha_write + beta * 2048) / 1e6,
        "copy-dma": 2 * b * f / (alpha_read + alpha_write + 2 * beta * b) / 1e6,
    }


def fit_dma_alphas(hw: Hardware) -> tuple[int, int, float]:
    """Integer (alpha_read, alpha_write) minimising the largest relative error over the
    2,048-B mram_read and mram_write bandwidths and STREAM COPY-DMA, with beta fixed at
    its published 0.5 cycle/byte. Returns the alphas and that largest error."""
    published = {"read": MRAM_MBPS_2048["read"], "write": MRAM_MBPS_2048["write"],
                 "copy-dma": STREAM_MBPS["copy-dma"]}
    best = None
    for a in range(0, 201):
        for w in range(0, 201):
            got = dma_figures(hw, a, w)
            err = max(abs(got[k] / v - 1) for k, v in published.items())
            if best is None or err < best[2] - 1e-12:
                best = (a, w, err)
    return best
