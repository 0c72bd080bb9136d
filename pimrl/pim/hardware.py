"""The hardware description every part of the simulator reads: one place for every number.

Sources are in docs/cost-model.md; figures marked uncertain there are starting points for
calibration. Presets: ``upmem-2556`` (the 2,556-DPU, 350 MHz PrIM server), ``upmem-640``
(10 ranks at 267 MHz), ``upmem-v1b`` (400 MHz, 63,488 B WRAM, 16 tasklets). What-if
variants come from ``Hardware.with_overrides`` (``--hw key=value`` on the command line).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pimrl.registry import Registry

import numpy as np

from pimrl.limits import MAX_DPUS, show

KiB, MiB = 1024, 1024 * 1024

#: Upper bounds of what-if numbers (``--hw``, profiles): far past any UPMEM system, short of
#: sizes the simulator cannot hold (it keeps every DPU's WRAM and IRAM in host memory, and
#: counts cycles in floats). Integers: per field, else ``MAX_INT``; numbers: ``MAX_NUMBER``.
MAX_INT = 2**40
MAX_FIELD = {"wram_bytes": 2**24, "iram_bytes": 2**24, "mram_bytes": 2**36, "max_tasklets": 1024}
MAX_NUMBER = 1e12

# Instructions per operation, derived from PrIM's arithmetic throughput at 350 MHz
# (throughput = f / (instructions of the loop), the loop adding 5 instructions for 32-bit
# and 6 for 64-bit element types): e.g. INT32 MUL 10.27 MOPS -> 34 - 5 = 29.
DEFAULT_OP_INSTRUCTIONS = {
    "int32_add": 1, "int32_sub": 1, "int32_mul": 29, "int32_div": 26,
    "int64_add": 1, "int64_sub": 1, "int64_mul": 131, "int64_div": 244,
    "float_add": 66, "float_sub": 71, "float_mul": 178, "float_div": 1024,
    "double_add": 99, "double_sub": 107, "double_mul": 654, "double_div": 2181,
    # Not measured by PrIM (uncertain): a soft-float compare, a mutex lock/unlock pair.
    "float_cmp": 24, "mutex": 4,
    # The UPMEM ISA's 8x8 multiply (mul_ul_ul rc, ra, rb and its eleven siblings: one byte
    # of each operand, signed or not, a 16-bit product): one instruction.
    "mul8": 1,
}
#: Where an operation's count comes from when PrIM did not measure it.
OP_SOURCES = {
    "float_cmp": "not measured by PrIM (assumed)",
    "mutex": "not measured by PrIM (assumed)",
    "mul8": "UPMEM ISA: mul_ul_ul rc, ra, rb and its 11 siblings (one byte of each operand, "
            "signed or unsigned), one instruction",
}

# Host <-> DPU parallel transfers across 32 ranks (SDK 2023.2): per-DPU bytes -> GB/s.
XFER_SIZES = (1 * KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 512 * KiB, 1 * MiB)
XFER_TO_DPU_GBPS_32R = (3.5, 6.3, 11.6, 14.2, 20.8, 22.6, 20.1)
XFER_FROM_DPU_GBPS_32R = (1.85, 3.45, 5.2, 8.2, 11.1, 11.0, 9.8)


@dataclass(frozen=True)
class Hardware:
    """One UPMEM system: shape, memories, pipeline, DMA and host-transfer figures."""

    name: str = "upmem-2556"
    n_ranks: int = 40
    dpus_per_rank: int = 64
    n_faulty_dpus: int = 4               # disabled DPUs (the 2,556-DPU server has 4)
    frequency_hz: float = 350e6
    mram_bytes: int = 64 * MiB
    wram_bytes: int = 64 * KiB
    iram_bytes: int = 24 * KiB
    max_tasklets: int = 24
    issue_interval: int = 11             # cycles between two instructions of one tasklet
    stack_bytes_per_tasklet: int = 256   # WRAM stack reserved per tasklet
    # DMA: alpha + beta * bytes cycles per transfer. beta is PrIM's; the alphas are fitted
    # jointly (minimax relative error, integer cycles) to the 2,048-B mram_read/mram_write
    # bandwidths as PrIM's MRAM-Latency loop times them and STREAM COPY-DMA:
    # pimrl.calibration.fit.fit_dma_alphas.
    dma_alpha_read: float = 69.0         # cycles per mram_read
    dma_alpha_write: float = 60.0        # cycles per mram_write
    dma_beta: float = 0.5                # cycles per byte
    # Single-rank host transfers (PrIM, SDK 2021.1), GB/s.
    serial_to_dpu_gbps: float = 0.27
    serial_from_dpu_gbps: float = 0.12
    parallel_to_dpu_gbps_1r: float = 6.68
    parallel_from_dpu_gbps_1r: float = 4.74
    broadcast_gbps_1r: float = 16.88
    single_rank_ref_bytes: int = 32 * MiB  # per-DPU size of PrIM's single-rank figures
    # Multi-rank parallel transfer curves (32 ranks) by per-DPU size.
    xfer_sizes: tuple = XFER_SIZES
    xfer_to_dpu_gbps_32r: tuple = XFER_TO_DPU_GBPS_32R
    xfer_from_dpu_gbps_32r: tuple = XFER_FROM_DPU_GBPS_32R
    op_instructions: dict = field(default_factory=lambda: dict(DEFAULT_OP_INSTRUCTIONS))
    # Fixed host-side latencies of every launch (uncertain estimates, no published
    # measurement: see docs/state-owned.md; 0 allowed for what-ifs): booting every rank of the
    # set, and the synchronisation that waits for their completion (a synchronous launch, or
    # dpu_sync). Charged as DPU kernel time; calibration microbenchmarks leave them out.
    launch_latency_s: float = 50e-6
    sync_latency_s: float = 20e-6

    def __post_init__(self):
        def bad(name, why):
            return ValueError(f"hardware {self.name}: {name}={getattr(self, name)!r} {why}")

        if not isinstance(self.xfer_sizes, tuple) or len(self.xfer_sizes) < 2:
            raise bad("xfer_sizes", "must be a tuple of at least two sizes")
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("name", "op_instructions"):
                continue
            if f.type in ("tuple", tuple):
                if not isinstance(value, tuple) or len(value) != len(self.xfer_sizes) or not all(
                        isinstance(v, (int, float)) and v > 0 for v in value):
                    raise bad(f.name, f"must be {len(self.xfer_sizes)} positive numbers")
            elif f.type in ("int", int):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise bad(f.name, "must be an integer")
                if value < 0 or (value == 0 and f.name != "n_faulty_dpus"):
                    raise bad(f.name, "must be positive")
                if value > MAX_FIELD.get(f.name, MAX_INT):
                    raise bad(f.name, f"must be at most {show(MAX_FIELD.get(f.name, MAX_INT))}")
            else:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                    raise bad(f.name, "must be a number")
                if value < 0 or (value == 0 and not f.name.endswith("_latency_s")):
                    raise bad(f.name, "must be positive")
                if value > MAX_NUMBER:
                    raise bad(f.name, f"must be at most {MAX_NUMBER:g}")
        if list(self.xfer_sizes) != sorted(set(self.xfer_sizes)):
            raise bad("xfer_sizes", "must increase")
        if self.n_ranks * self.dpus_per_rank > MAX_DPUS:
            raise bad("n_ranks", f"x dpus_per_rank={self.dpus_per_rank} must be at most "
                      f"{show(MAX_DPUS)} DPUs")
        if not self.n_faulty_dpus < self.n_ranks * self.dpus_per_rank:
            raise bad("n_faulty_dpus", f"leaves no functional DPU of {self.n_ranks * self.dpus_per_rank}")
        for op, cost_ in self.op_instructions.items():
            if isinstance(cost_, bool) or not isinstance(cost_, (int, float)) or not 0 < cost_ <= MAX_NUMBER:
                raise ValueError(f"hardware {self.name}: op_{op}={cost_!r} must be a positive number "
                                 f"(at most {MAX_NUMBER:g})")

    @property
    def n_dpu_slots(self) -> int:
        return self.n_ranks * self.dpus_per_rank

    @property
    def n_dpus(self) -> int:
        """Functional DPUs (slots less faulty ones)."""
        return self.n_dpu_slots - self.n_faulty_dpus

    def faulty_mask(self) -> np.ndarray:
        """bool per DPU slot: the faulty DPUs are the last slots of the last ranks."""
        mask = np.zeros(self.n_dpu_slots, dtype=bool)
        if self.n_faulty_dpus:
            mask[-self.n_faulty_dpus:] = True
        return mask

    def with_overrides(self, **overrides) -> "Hardware":
        """A what-if copy, e.g. ``with_overrides(frequency_hz=500e6, n_ranks=64)``.

        ``op_<name>=N`` overrides one instruction cost (``op_int32_mul=1`` for a native
        multiplier)."""
        ops = dict(self.op_instructions)
        plain = {}
        for key, value in overrides.items():
            if key.startswith("op_"):
                if key[3:] not in ops:
                    raise ValueError(f"unknown operation {key[3:]!r}; known: {', '.join(ops)}")
                try:
                    ops[key[3:]] = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"{key}={value!r} must be a number") from None
            elif key in {f.name for f in dataclasses.fields(self)}:
                plain[key] = value
            else:
                known = ", ".join(f.name for f in dataclasses.fields(self))
                raise ValueError(f"unknown hardware parameter {key!r}; known: {known}, op_<operation>")
        if "name" not in plain:
            plain["name"] = self.name + "*"
        ints = {f.name for f in dataclasses.fields(self) if f.type in ("int", int)}
        for key, value in list(plain.items()):
            if key in ints and isinstance(value, float) and value.is_integer():
                plain[key] = int(value)          # "n_ranks=64.0" or "2e3" mean integers
        return dataclasses.replace(self, op_instructions=ops, **plain)


PRESETS = Registry("hardware presets")
PRESETS.add("upmem-2556", Hardware(), "the PrIM server: 40 ranks, 2,556 functional DPUs at "
            "350 MHz")
PRESETS.add("upmem-2560", Hardware(name="upmem-2560", n_faulty_dpus=0),
            "the same server with all 2,560 DPUs working")
PRESETS.add("upmem-640", Hardware(name="upmem-640", n_ranks=10, n_faulty_dpus=0,
                                  frequency_hz=267e6), "PrIM's older 640-DPU system, 267 MHz")
PRESETS.add("upmem-v1b", Hardware(name="upmem-v1b", frequency_hz=400e6, wram_bytes=63488,
                                  max_tasklets=16),
            "a v1B DPU: 400 MHz, 62 KiB of usable WRAM, 16 tasklets")


def parse_overrides(items) -> dict:
    """``["frequency_hz=500e6", "n_ranks=64"]`` -> dict with numbers parsed."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"hardware override {item!r} must look like key=value")
        try:
            num = float(value)
            out[key.strip()] = int(num) if num.is_integer() and "." not in value and "e" not in value.lower() else num
        except ValueError:
            out[key.strip()] = value
    return out


def get_hardware(name: str = "upmem-2556", overrides=None) -> Hardware:
    if name not in PRESETS:
        raise ValueError(f"unknown hardware preset {name!r}; known: {', '.join(PRESETS)}")
    hw = PRESETS[name]
    return hw.with_overrides(**overrides) if overrides else hw
