"""Parameters fitted to published figures, by a rule that can be rerun: the values in
``pimrl.pim.hardware`` must equal what these functions return (a test checks it)."""
from __future__ import annotations


from pimrl.calibration.published import MRAM_MBPS_2048, STREAM_MBPS
from pimrl.pim.hardware import Hardware

STREAM_BLOCK_BYTES = 1024     # PrIM's STREAM default (BL=10)
#: Instructions PrIM's MRAM-Latency loop retires inside its timed interval per transfer, net
#: of the correction it subtracts (``timer_stop`` takes off the interval between two
#: back-to-back ``perfcounter_get`` calls), as a DPU runs it: the first reading kept (1) and
#: shifted (``>> 4``, a 64-bit shift: 2), the MRAM address added (1), the DMA instruction
#: (1) and the call of the stop reading (1), less the move and the call of the correction
#: interval (2). The DPU runtime counts 4 as well for the program built unmodified (its
#: x86-64 code shifts in one instruction but reloads the MRAM base from the stack);
#: tests/test_prim.py checks the cycles when PrIM's programs are there. One tasklet issues
#: them 11 cycles apart, so the published single-tasklet latencies hold ``11 * 4`` cycles
#: that a saturated DMA engine (STREAM COPY-DMA) does not.
MRAM_LATENCY_TIMED_INSTRUCTIONS = 4


def dma_figures(hw: Hardware, alpha_read: float, alpha_write: float) -> dict:
    """MB/s of the three DMA-bound published figures for given alphas (1 tasklet timing one
    2,048-B mram_read / mram_write with PrIM's MRAM-Latency loop; COPY-DMA: one read and one
    write of a 1,024-B block, the engine saturated)."""
    f, beta, b = hw.frequency_hz, hw.dma_beta, STREAM_BLOCK_BYTES
    timed = hw.issue_interval * MRAM_LATENCY_TIMED_INSTRUCTIONS
    return {
        "read": 2048 * f / (alpha_read + beta * 2048 + timed) / 1e6,
        "write": 2048 * f / (alpha_write + beta * 2048 + timed) / 1e6,
        "copy-dma": 2 * b * f / (alpha_read + alpha_write + 2 * beta * b) / 1e6,
    }


def fit_dma_alphas(hw: Hardware) -> tuple[int, int, float]:
    """Integer (alpha_read, alpha_write) minimising the largest relative error over the
    2,048-B mram_read and mram_write bandwidths (as PrIM's MRAM-Latency program times them:
    :data:`MRAM_LATENCY_TIMED_INSTRUCTIONS`) and STREAM COPY-DMA, with beta fixed at its
    published 0.5 cycle/byte. Returns the alphas and that largest error."""
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
