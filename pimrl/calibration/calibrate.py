"""The calibration suite: every microbenchmark curve, every published figure beside its
modelled value with the relative error, and the shape checks (saturation, orderings)."""
from __future__ import annotations

import numpy as np

from pimrl.calibration import bench, published as P
from pimrl.calibration.fit import fit_dma_alphas
from pimrl.pim.hardware import Hardware, XFER_SIZES, get_hardware

KIB = 1024


def _row(group, label, published, modelled, unit, uncertain, basis, note=""):
    err = modelled / published - 1.0
    return {"group": group, "figure": label, "published": published, "modelled": modelled,
            "unit": unit, "rel_error": err, "uncertain": bool(uncertain), "basis": basis,
            "target": not uncertain, "within_target": abs(err) <= P.TARGET_REL_ERROR,
            "note": note}


def saturation_tasklets(values, fraction=bench.SATURATION_FRACTION) -> int:
    """The fewest tasklets reaching ``fraction`` of the best throughput (1-based)."""
    v = np.asarray(values, dtype=float)
    return int(np.flatnonzero(v >= fraction * v.max())[0]) + 1


def _size_label(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def run_calibration(hw: Hardware | None = None) -> dict:
    hw = hw or get_hardware()
    ts = bench.tasklet_range(hw)
    rows, shapes, curves = [], [], {}

    # Arithmetic throughput vs tasklets.
    curves["arithmetic_mops"] = {"tasklets": ts, "series": {}}
    for dtype in bench.DTYPES:
        for op in bench.OPS:
            series = [bench.arithmetic_mops(hw, dtype, op, t) for t in ts]
            curves["arithmetic_mops"]["series"][f"{dtype}_{op}"] = series
            value, uncertain = P.ARITHMETIC_MOPS[(dtype, op)]
            ops = hw.op_instructions[f"{dtype}_{op}"]
            rows.append(_row("arithmetic", f"{dtype.upper()} {op.upper()} (>=11 tasklets)", value,
                             max(series), "MOPS", uncertain, "fitted",
                             f"{bench.LOOP_OVERHEAD[dtype]} loop + {ops:g} op instructions"))
            sat = saturation_tasklets(series)
            shapes.append({"check": f"arithmetic {dtype} {op} saturates at",
                           "expected": f"{P.ARITH_SATURATION_TASKLETS} tasklets",
                           "got": f"{sat} tasklets", "ok": sat == P.ARITH_SATURATION_TASKLETS})

    # MRAM bandwidth vs transfer size.
    curves["mram_mbps"] = {"sizes": list(bench.MRAM_SIZES), "series": {}}
    fit = fit_dma_alphas(hw)
    for kind in ("read", "write"):
        series = [bench.mram_mbps(hw, s, kind == "write") for s in bench.MRAM_SIZES]
        curves["mram_mbps"]["series"][kind] = series
        rows.append(_row("mram", f"mram_{kind} 2,048 B", P.MRAM_MBPS_2048[kind], series[-1],
                         "MB/s", False, "fitted", "alpha fitted jointly with COPY-DMA (minimax)"))
        rising = bool(np.all(np.diff(series) > 0))
        shapes.append({"check": f"mram_{kind} bandwidth rises with size", "expected": "rising",
                       "got": "rising" if rising else "not monotone", "ok": rising})
    shapes.append({"check": "hardware DMA alphas equal the fit",
                   "expected": f"{fit[0]}/{fit[1]} cycles",
                   "got": f"{hw.dma_alpha_read:g}/{hw.dma_alpha_write:g} cycles",
                   "ok": (hw.dma_alpha_read, hw.dma_alpha_write) == (fit[0], fit[1])
                   or hw.name != "upmem-2556"})

    # STREAM vs tasklets.
    curves["stream_mbps"] = {"tasklets": ts, "series": {}}
    for kernel in bench.STREAM_KERNELS:
        series = [bench.stream_mbps(hw, kernel, t) for t in ts]
        curves["stream_mbps"]["series"][kernel] = series
        if kernel in P.STREAM_MBPS:
            basis = "fitted" if kernel == "copy-dma" else "predicted"
            note = ("alphas fitted to it" if kernel == "copy-dma"
                    else "from int64_mul (fitted to INT64 MUL) and the unrolled loop")
            rows.append(_row("stream", f"STREAM {kernel.upper()} INT64 (saturated)",
                             P.STREAM_MBPS[kernel], max(series), "MB/s", False, basis, note))
        lo, hi = P.STREAM_SATURATION[kernel]
        sat = saturation_tasklets(series)
        shapes.append({"check": f"STREAM {kernel} saturates at",
                       "expected": f"{lo}-{hi} tasklets" if lo != hi else f"{lo} tasklets",
                       "got": f"{sat} tasklets", "ok": lo <= sat <= hi})

    # Host transfers within one rank: vs DPU count at PrIM's size, vs size at 64 DPUs.
    ref = hw.single_rank_ref_bytes
    dpu_counts = [n for n in bench.RANK_DPUS if n <= hw.dpus_per_rank]
    curves["rank_vs_dpus"] = {"dpus": dpu_counts, "bytes_per_dpu": ref, "series": {}}
    curves["rank_vs_size"] = {"sizes": list(bench.RANK_SIZES), "dpus": hw.dpus_per_rank,
                              "series": {}}
    for kind in bench.TRANSFER_KINDS:
        curves["rank_vs_dpus"]["series"][kind] = [bench.transfer_gbps(hw, kind, ref, n)[0]
                                                  for n in dpu_counts]
        curves["rank_vs_size"]["series"][kind] = [
            bench.transfer_gbps(hw, kind, s, hw.dpus_per_rank)[0] for s in bench.RANK_SIZES]
        rows.append(_row("host-1rank", f"{kind.replace('_', ' ')} (64 DPUs, {_size_label(ref)}/DPU)",
                         P.SINGLE_RANK_GBPS[kind], curves["rank_vs_dpus"]["series"][kind][-1],
                         "GB/s", False, "fitted", "parameter is this figure"))
    s = curves["rank_vs_dpus"]["series"]
    for i, n in enumerate(dpu_counts):
        if n < 2:
            continue
        for direction, chain in (("to DPUs", ("serial_to", "parallel_to", "broadcast")),
                                 ("from DPUs", ("serial_from", "parallel_from"))):
            vals = [s[k][i] for k in chain]
            ok = all(a < b for a, b in zip(vals, vals[1:]))
            shapes.append({"check": f"{direction}, {n} DPUs: {' < '.join(chain)}",
                           "expected": "ordered", "got": " < ".join(f"{v:.3g}" for v in vals)
                           if ok else "not ordered", "ok": ok})
    for kind, series in curves["rank_vs_size"]["series"].items():
        rising = bool(np.all(np.diff(series[:-2]) > 0))
        shapes.append({"check": f"1-rank {kind.replace('_', ' ')} rises with size (8 B..256 KiB)",
                       "expected": "rising", "got": "rising" if rising else "not rising",
                       "ok": rising})

    # 32 ranks, 2,048 DPUs, parallel push_xfer vs size.
    n32 = 32 * hw.dpus_per_rank
    curves["xfer_32r"] = {"sizes": list(XFER_SIZES), "dpus": n32, "series": {}, "call_ms": {}}
    for direction in ("to", "from"):
        kind = f"parallel_{direction}"
        series = [bench.transfer_gbps(hw, kind, size, n32)[0] for size in XFER_SIZES]
        curves["xfer_32r"]["series"][direction] = series
        for size, got in zip(XFER_SIZES, series):
            rows.append(_row("host-32rank", f"push_xfer {direction} DPUs, {_size_label(size)}/DPU",
                             P.XFER_32R[direction][size], got, "GB/s", False, "fitted",
                             "interpolation table point"))
        call_ms = 1024 * n32 / (series[0] * 1e9) * 1e3
        rows.append(_row("host-32rank", f"push_xfer {direction} DPUs, 1 KiB/DPU: time of a call",
                         P.XFER_32R_CALL_MS_1K[direction], call_ms, "ms", False, "predicted",
                         "published 'about'; follows from the GB/s figure"))
        peak = int(np.argmax(series))
        pub_peak = int(np.argmax([P.XFER_32R[direction][z] for z in XFER_SIZES]))
        ok = peak == pub_peak and np.all(np.diff(series[:peak + 1]) > 0)
        shapes.append({"check": f"32-rank push_xfer {direction} DPUs rises then peaks",
                       "expected": f"peak at {_size_label(XFER_SIZES[pub_peak])}",
                       "got": f"peak at {_size_label(XFER_SIZES[peak])}", "ok": bool(ok)})
    # How far to trust sizes between the measured points: leave each interior point out.
    loo = []
    for direction in ("to", "from"):
        pts = [P.XFER_32R[direction][z] for z in XFER_SIZES]
        for i in range(1, len(XFER_SIZES) - 1):
            x = np.log(XFER_SIZES)
            guess = float(np.exp(np.interp(x[i], [x[i - 1], x[i + 1]],
                                           np.log([pts[i - 1], pts[i + 1]]))))
            loo.append({"direction": direction, "size": XFER_SIZES[i], "published": pts[i],
                        "interpolated_without_it": guess, "rel_error": guess / pts[i] - 1})

    targets = [r for r in rows if r["target"]]
    return {
        "hardware": hw.name,
        "rows": rows,
        "shapes": shapes,
        "curves": curves,
        "interpolation_check": loo,
        "dma_fit": {"alpha_read": fit[0], "alpha_write": fit[1], "max_rel_error": fit[2]},
        "summary": {
            "figures": len(rows), "targets": len(targets),
            "targets_within": sum(r["within_target"] for r in targets),
            "max_target_abs_error": max(abs(r["rel_error"]) for r in targets),
            "shape_checks": len(shapes), "shape_checks_ok": sum(s["ok"] for s in shapes),
            "ok": all(r["within_target"] for r in targets) and all(s["ok"] for s in shapes),
        },
    }


def percent(fraction: float) -> str:
    """``fraction`` as a signed percentage to one decimal; a value that rounds to zero prints
    "+0.0 %" whatever its sign (a -1e-17 from floating-point rounding is not a finding, and
    its sign differs from machine to machine)."""
    value = round(100 * float(fraction), 1)
    return f"{value + 0.0:+.1f} %"


def format_table(result: dict, markdown: bool = False) -> str:
    """The figure table (published, modelled, error, basis) as text or markdown."""
    head = ("group", "figure", "published", "modelled", "unit", "error", "basis", "status")
    lines = []
    for r in result["rows"]:
        status = ("uncertain" if r["uncertain"] else "ok" if r["within_target"] else "MISS")
        lines.append((r["group"], r["figure"], f"{r['published']:.4g}", f"{r['modelled']:.4g}",
                      r["unit"], percent(r["rel_error"]), r["basis"], status))
    return _table(head, lines, markdown)


def format_shapes(result: dict, markdown: bool = False) -> str:
    head = ("check", "expected", "modelled", "status")
    lines = [(s["check"], s["expected"], s["got"], "ok" if s["ok"] else "MISS")
             for s in result["shapes"]]
    return _table(head, lines, markdown)


def format_loo(result: dict, markdown: bool = False) -> str:
    head = ("direction", "per-DPU size", "published GB/s", "interpolated without it", "error")
    lines = [(f"{r['direction']} DPUs", _size_label(r["size"]), f"{r['published']:.3g}",
              f"{r['interpolated_without_it']:.3g}", percent(r["rel_error"]))
             for r in result["interpolation_check"]]
    return _table(head, lines, markdown)


def _table(head, lines, markdown):
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(str(c)) for c in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))]
                     + [fmt.format(*line) for line in lines])


def plot(result: dict, out_dir) -> list:
    """PNG curves with the published points: one file per benchmark family."""
    import os

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pimrl.io import atomic_savefig, ensure_folder

    ensure_folder(out_dir, "--plot")
    c, files = result["curves"], []

    def save(fig, name):
        path = os.path.join(out_dir, name)
        fig.tight_layout()
        atomic_savefig(fig, path, dpi=110)
        plt.close(fig)
        files.append(path)

    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    ts = c["arithmetic_mops"]["tasklets"]
    for ax, dtype in zip(axes, bench.DTYPES):
        for op in bench.OPS:
            line, = ax.plot(ts, c["arithmetic_mops"]["series"][f"{dtype}_{op}"], label=op.upper())
            pub, unc = P.ARITHMETIC_MOPS[(dtype, op)]
            ax.plot([11, ts[-1]], [pub, pub], ls=":" if unc else "--", color=line.get_color())
        ax.axvline(11, color="grey", lw=0.5)
        ax.set(title=dtype.upper(), xlabel="tasklets", ylabel="MOPS", yscale="log")
        ax.legend(fontsize=7)
    save(fig, "arithmetic.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for kind, series in c["mram_mbps"]["series"].items():
        line, = ax.plot(c["mram_mbps"]["sizes"], series, marker="o", label=f"mram_{kind}")
        ax.plot([2048], [P.MRAM_MBPS_2048[kind]], "x", ms=10, color=line.get_color())
    ax.set(xscale="log", xlabel="transfer size (B)", ylabel="MB/s", title="MRAM DMA, 1 DPU")
    ax.legend()
    save(fig, "mram.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for kernel, series in c["stream_mbps"]["series"].items():
        line, = ax.plot(c["stream_mbps"]["tasklets"], series, label=kernel.upper())
        if kernel in P.STREAM_MBPS:
            ax.axhline(P.STREAM_MBPS[kernel], ls="--", color=line.get_color(), lw=0.8)
    ax.set(yscale="log", xlabel="tasklets", ylabel="MB/s", title="STREAM INT64, 1 DPU")
    ax.legend(fontsize=7)
    save(fig, "stream.png")

    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    rd, rs = c["rank_vs_dpus"], c["rank_vs_size"]
    for kind in bench.TRANSFER_KINDS:
        line, = axes[0].plot(rd["dpus"], rd["series"][kind], marker="o", label=kind)
        axes[0].plot([rd["dpus"][-1]], [P.SINGLE_RANK_GBPS[kind]], "x", ms=10, color=line.get_color())
        axes[1].plot(rs["sizes"], rs["series"][kind], marker="o", label=kind)
    axes[0].set(xscale="log", yscale="log", xlabel="DPUs (one rank)", ylabel="GB/s",
                title=f"one rank, {_size_label(rd['bytes_per_dpu'])} per DPU")
    axes[1].set(xscale="log", yscale="log", xlabel="bytes per DPU", ylabel="GB/s",
                title="one rank, 64 DPUs")
    for direction, series in c["xfer_32r"]["series"].items():
        line, = axes[2].plot(c["xfer_32r"]["sizes"], series, label=f"{direction} DPUs (model)")
        axes[2].plot(list(P.XFER_32R[direction]), list(P.XFER_32R[direction].values()), "x",
                     ms=8, color=line.get_color(), label=f"{direction} DPUs (published)")
    axes[2].set(xscale="log", xlabel="bytes per DPU", ylabel="GB/s", title="32 ranks, push_xfer")
    for ax in axes:
        ax.legend(fontsize=7)
    save(fig, "transfers.png")
    return files
