"""The published UPMEM figures the cost model is checked against
(../shared/reference/upmem.md: PrIM, Gomez-Luna et al. 2022, and SDK 2023.2 transfer
measurements). ``uncertain`` figures are shown but not held to the 10 % target."""
from __future__ import annotations

from pimrl.pim.hardware import XFER_FROM_DPU_GBPS_32R, XFER_SIZES, XFER_TO_DPU_GBPS_32R

TARGET_REL_ERROR = 0.10

# Arithmetic throughput, 1 DPU, 350 MHz, >= 11 tasklets, MOPS: (value, uncertain).
ARITHMETIC_MOPS = {
    ("int32", "add"): (58.56, False), ("int32", "sub"): (58.56, False),
    ("int32", "mul"): (10.27, True), ("int32", "div"): (11.27, True),
    ("int64", "add"): (50.16, False), ("int64", "sub"): (50.16, False),
    ("int64", "mul"): (2.56, False), ("int64", "div"): (1.40, True),
    ("float", "add"): (4.91, True), ("float", "sub"): (4.59, True),
    ("float", "mul"): (1.91, True), ("float", "div"): (0.34, True),
    ("double", "add"): (3.32, True), ("double", "sub"): (3.11, True),
    ("double", "mul"): (0.53, True), ("double", "div"): (0.16, True),
}
ARITH_SATURATION_TASKLETS = 11

# MRAM <-> WRAM DMA at 2,048-byte transfers, MB/s (1e6 B/s).
MRAM_MBPS_2048 = {"read": 628.23, "write": 633.22}

# STREAM (INT64, MRAM, 1 DPU), MB/s counting bytes read plus bytes written.
STREAM_MBPS = {"copy-dma": 624.0, "scale": 42.01, "triad": 61.59}
# Tasklets at which each STREAM kernel saturates (published ranges, inclusive).
STREAM_SATURATION = {"copy-dma": (1, 3), "copy": (4, 6), "add": (4, 6), "scale": (11, 11),
                     "triad": (11, 11)}

# Host <-> DPU within one rank of 64 DPUs (PrIM, SDK 2021.1), GB/s.
SINGLE_RANK_GBPS = {"serial_to": 0.27, "serial_from": 0.12, "parallel_to": 6.68,
                    "parallel_from": 4.74, "broadcast": 16.88}

# 32 ranks / 2,048 DPUs, parallel push_xfer (SDK 2023.2): per-DPU bytes -> GB/s.
XFER_32R = {"to": dict(zip(XFER_SIZES, XFER_TO_DPU_GBPS_32R)),
            "from": dict(zip(XFER_SIZES, XFER_FROM_DPU_GBPS_32R))}
# "about 0.55 ms a call" / "about 1.05 ms" at 1 KiB per DPU.
XFER_32R_CALL_MS_1K = {"to": 0.55, "from": 1.05}
