"""docs/cost-model.md's tables, generated from the code: ``pimrl cost-doc`` rewrites every
``<!-- BEGIN GENERATED: name -->`` ... ``<!-- END GENERATED -->`` region; ``--check`` only
reports whether the committed doc is stale (a test runs it)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pimrl.pim.hardware import OP_SOURCES, Hardware, get_hardware
from pimrl.resources import DOCS

DOC_PATH = DOCS / "cost-model.md"
REGION = re.compile(r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED -->)",
                    re.S)

# Where each hardware parameter comes from: (source, how it is used).
SOURCES = {
    "name": ("preset name", "-"),
    "n_ranks": ("PrIM server: 40 ranks", "published"),
    "dpus_per_rank": ("UPMEM: 8 chips x 8 DPUs", "published"),
    "n_faulty_dpus": ("PrIM server: 2,556 of 2,560 usable", "published"),
    "frequency_hz": ("PrIM server: 350 MHz", "published"),
    "mram_bytes": ("UPMEM: 64 MiB MRAM per DPU", "published"),
    "wram_bytes": ("UPMEM: 64 KiB WRAM", "published"),
    "iram_bytes": ("UPMEM: 24 KiB IRAM", "published"),
    "max_tasklets": ("UPMEM: 24 hardware threads", "published"),
    "issue_interval": ("PrIM: 11 cycles between a tasklet's instructions", "published"),
    "stack_bytes_per_tasklet": ("SDK default stack (assumed)", "assumed"),
    "dma_alpha_read": ("fit: MRAM-Latency read/write at 2,048 B + STREAM COPY-DMA (minimax)", "fitted"),
    "dma_alpha_write": ("fit: MRAM-Latency read/write at 2,048 B + STREAM COPY-DMA (minimax)", "fitted"),
    "dma_beta": ("PrIM: 0.5 cycle/byte", "published"),
    "serial_to_dpu_gbps": ("PrIM, 1 rank, serial CPU-DPU", "published figure = parameter"),
    "serial_from_dpu_gbps": ("PrIM, 1 rank, serial DPU-CPU", "published figure = parameter"),
    "parallel_to_dpu_gbps_1r": ("PrIM, 1 rank, parallel CPU-DPU", "published figure = parameter"),
    "parallel_from_dpu_gbps_1r": ("PrIM, 1 rank, parallel DPU-CPU", "published figure = parameter"),
    "broadcast_gbps_1r": ("PrIM, 1 rank, broadcast", "published figure = parameter"),
    "single_rank_ref_bytes": ("PrIM's per-DPU size for the 1-rank figures (our reading)", "assumed"),
    "xfer_sizes": ("SDK 2023.2, 32 ranks", "published"),
    "xfer_to_dpu_gbps_32r": ("SDK 2023.2, 32 ranks, push_xfer to DPUs", "interpolation table"),
    "xfer_from_dpu_gbps_32r": ("SDK 2023.2, 32 ranks, push_xfer from DPUs", "interpolation table"),
    "launch_latency_s": ("estimate, no published measurement (docs/state-owned.md); per "
                         "dpu_launch", "uncertain"),
    "sync_latency_s": ("estimate, no published measurement (docs/state-owned.md); per "
                       "completion wait (synchronous launch or dpu_sync)", "uncertain"),
}


def _fmt(v):
    if isinstance(v, tuple):
        return ", ".join(f"{x:g}" for x in v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def parameter_table(hw: Hardware) -> str:
    lines = ["| parameter | value | source | basis |", "|---|---|---|---|"]
    for f in dataclasses.fields(hw):
        if f.name == "op_instructions":
            continue
        src, basis = SOURCES.get(f.name, ("(undocumented)", "?"))
        lines.append(f"| `{f.name}` | {_fmt(getattr(hw, f.name))} | {src} | {basis} |")
    return "\n".join(lines)


def op_table(hw: Hardware) -> str:
    from pimrl.calibration.bench import LOOP_OVERHEAD
    from pimrl.calibration.published import ARITHMETIC_MOPS

    lines = ["| operation | instructions | source |", "|---|---|---|"]
    for name, n in hw.op_instructions.items():
        dtype, _, op = name.partition("_")
        if (dtype, op) in ARITHMETIC_MOPS:
            value, unc = ARITHMETIC_MOPS[(dtype, op)]
            src = (f"PrIM {value:g} MOPS{' (uncertain)' if unc else ''}: "
                   f"{hw.frequency_hz / 1e6:g} MHz / {value:g} - {LOOP_OVERHEAD[dtype]} loop")
        else:
            src = OP_SOURCES.get(name, "not measured by PrIM (assumed)")
        lines.append(f"| `{name}` | {n:g} | {src} |")
    return "\n".join(lines)


def energy_table() -> str:
    """The figures of the energy and host models (pimrl.pim.energy, pimrl.pim.host) and the
    CPU baseline's package powers (pimrl.baselines.energy), with their sources."""
    from pimrl.baselines.energy import DEFAULT_PACKAGE_NAME, DEFAULT_PACKAGE_W, PACKAGE_TDP_W
    from pimrl.pim.energy import ENERGY_SOURCES
    from pimrl.pim.host import HOST_SOURCES, PRIM_HOST

    lines = ["| figure | value | unit | source | certainty |", "|---|---|---|---|---|"]
    for name, (value, unit, src, certainty) in ENERGY_SOURCES.items():
        lines.append(f"| `{name}` | {value:g} | {unit} | {src} | {certainty} |")
    for name, (unit, src, certainty) in HOST_SOURCES.items():
        lines.append(f"| `PRIM_HOST.{name}` | {getattr(PRIM_HOST, name):.3g} | {unit} | {src} | "
                     f"{certainty} |")
    tdps = ", ".join(f"{name} {w:g}" for name, w in PACKAGE_TDP_W.items())
    lines.append(f"| `PACKAGE_TDP_W` | {tdps} | W a package | vendors' product pages (Intel "
                 f"ARK, AMD EPYC specifications): TDP | published |")
    lines.append(f"| `DEFAULT_PACKAGE_W` | {DEFAULT_PACKAGE_W:g} | W | {DEFAULT_PACKAGE_NAME}, "
                 f"for a CPU not in `PACKAGE_TDP_W` | published (for that CPU) |")
    return "\n".join(lines)


def calibration_regions(hw: Hardware | None = None) -> dict:
    """The regions that need no training run: parameters, operations, calibration (seconds)."""
    from pimrl.calibration.calibrate import format_loo, format_shapes, format_table, run_calibration

    hw = hw or get_hardware()
    cal = run_calibration(hw)
    s = cal["summary"]
    summary = (f"{s['targets_within']} of {s['targets']} published figures not marked uncertain "
               f"are within 10 % (largest error {100 * s['max_target_abs_error']:.1f} %); "
               f"{s['shape_checks_ok']} of {s['shape_checks']} shape checks hold. DMA fit: "
               f"alpha_read = {cal['dma_fit']['alpha_read']}, alpha_write = "
               f"{cal['dma_fit']['alpha_write']} cycles, largest error "
               f"{100 * cal['dma_fit']['max_rel_error']:.1f} %.")
    return {
        "parameters": parameter_table(hw),
        "energy": energy_table(),
        "operations": op_table(hw),
        "calibration-summary": summary,
        "calibration": format_table(cal, markdown=True),
        "shapes": format_shapes(cal, markdown=True),
        "interpolation": format_loo(cal, markdown=True),
    }


def sensitivity_regions(hw: Hardware | None = None, sensitivity_kwargs=None) -> dict:
    """The regions of the sensitivity study (24 training runs: the slow part)."""
    from pimrl.calibration.sensitivity import format_baseline, format_sensitivity, run_sensitivity

    sens = run_sensitivity(hw=hw or get_hardware(), **(sensitivity_kwargs or {}))
    st = sens["study"]
    study = (f"{st['env']}, {st['transitions']:,} transitions (seed {st['seed']}), {st['epochs']} "
             f"epoch(s), {st['tasklets']} tasklets, {st['variants']} variants, hardware "
             f"{st['hardware']}, each parameter x(1 +- {st['delta']:g}). Cells: mean change over "
             f"the variants (largest-magnitude change among them).")
    return {
        "sensitivity-study": study,
        "sensitivity-baseline": format_baseline(sens, markdown=True),
        "sensitivity": format_sensitivity(sens, markdown=True),
    }


def generate_regions(hw: Hardware | None = None, sensitivity_kwargs=None) -> dict:
    """Every generated region of the doc."""
    hw = hw or get_hardware()
    return {**calibration_regions(hw), **sensitivity_regions(hw, sensitivity_kwargs)}


def render(text: str, regions: dict) -> str:
    missing = set(regions) - {m.group("name") for m in REGION.finditer(text)}
    if missing:
        raise ValueError(f"doc has no generated region(s) {', '.join(sorted(missing))}")

    def sub(m):
        body = regions.get(m.group("name"))
        return m.group(0) if body is None else m.group(1) + body.rstrip("\n") + "\n" + m.group(4)

    return REGION.sub(sub, text)


def update_doc(path=DOC_PATH, check: bool = False, regions=None) -> bool:
    """Rewrite the generated regions; with ``check`` only compare. True if up to date."""
    path = Path(path)
    text = path.read_text()
    new = render(text, regions if regions is not None else generate_regions())
    if new == text:
        return True
    if not check:
        from pimrl.io import atomic_write_text

        atomic_write_text(path, new)
    return False
