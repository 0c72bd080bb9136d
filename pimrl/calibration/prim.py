"""PrIM's own microbenchmark programs, built unmodified and run through pimrl.

``pimrl calibrate --prim [DIR]`` builds the programs of ``Microbenchmarks/`` of PrIM
(CMU-SAFARI/prim-benchmarks) with their own Makefiles, pimrl's ``bin`` first on ``PATH``
(so ``dpu-upmem-dpurte-clang`` builds the DPU side for the DPU runtime and
``dpu-pkg-config`` links the host side against the simulator), runs them at the published
settings, reads their own printed figures and post-processes them as PrIM does (MOPS or
MB/s from the DPU cycles the program itself measures with ``perfcounter_get``; host-transfer
GB/s from the host clock, under ``PIMRL_MODELLED_CLOCK=1``). Each figure is set beside the
published one and beside pimrl's cost model (:mod:`pimrl.calibration.bench`), each labelled.

pimrl ships none of PrIM's code: :func:`find_prim` takes a directory (``--prim DIR`` or
``PIMRL_PRIM_DIR``), or a copy fetched earlier into pimrl's cache, or fetches one with
``git`` when allowed, saying so; without network it says how to provide one.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pimrl.calibration import bench, published as P
from pimrl.calibration.calibrate import percent
from pimrl.pim.hardware import Hardware, get_hardware

PRIM_URL = "https://github.com/CMU-SAFARI/prim-benchmarks.git"
REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = ("Arithmetic-Throughput", "WRAM", "MRAM-Latency", "STREAM", "STRIDED",
              "Random-GUPS", "Operational-Intensity", "CPU-DPU")


class PrimUnavailable(RuntimeError):
    """PrIM's programs are not here (and were not fetched)."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pimrl" / "prim-benchmarks"


def _has_microbenchmarks(d: Path) -> bool:
    return all((d / "Microbenchmarks" / b / "Makefile").is_file() for b in BENCHMARKS)


def find_prim(path=None, fetch: bool = False, log=print) -> Path:
    """The root of a PrIM checkout (the folder holding ``Microbenchmarks/``).

    ``path`` or ``PIMRL_PRIM_DIR`` if given (an error if it holds no microbenchmarks), else
    pimrl's cache; with ``fetch`` a shallow clone of PrIM's repository into the cache.
    Raises :class:`PrimUnavailable` with what to do."""
    given = path or os.environ.get("PIMRL_PRIM_DIR")
    if given:
        d = Path(given).expanduser()
        if d.name == "Microbenchmarks":
            d = d.parent
        if not _has_microbenchmarks(d):
            raise PrimUnavailable(f"{given}: no PrIM microbenchmarks there (expected "
                                  f"Microbenchmarks/{{{','.join(BENCHMARKS)}}}/Makefile)")
        return d
    d = cache_dir()
    if _has_microbenchmarks(d):
        return d
    if not fetch:
        raise PrimUnavailable("PrIM's microbenchmark programs are not here (pimrl ships none "
                              f"of their code): pass --prim DIR or set PIMRL_PRIM_DIR to a "
                              f"checkout of {PRIM_URL}, or allow fetching it into {d}")
    if shutil.which("git") is None:
        raise PrimUnavailable(f"cannot fetch {PRIM_URL}: no git on PATH; pass --prim DIR")
    log(f"pimrl calibrate: fetching PrIM's programs from {PRIM_URL} into {d} (third-party "
        "code, not part of pimrl)")
    tmp = Path(tempfile.mkdtemp(prefix="prim-", dir=d.parent if d.parent.exists() else None))
    try:
        r = subprocess.run(["git", "clone", "--depth", "1", "--filter=blob:none", "--sparse",
                            PRIM_URL, str(tmp / "repo")], capture_output=True, text=True,
                           timeout=600)
        if r.returncode == 0:
            r = subprocess.run(["git", "-C", str(tmp / "repo"), "sparse-checkout", "set",
                                "Microbenchmarks"], capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not _has_microbenchmarks(tmp / "repo"):
            raise PrimUnavailable(f"could not fetch {PRIM_URL} (no network?): "
                                  f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}; "
                                  "pass --prim DIR")
        d.parent.mkdir(parents=True, exist_ok=True)
        if d.exists():
            shutil.rmtree(d)
        os.replace(tmp / "repo", d)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrimUnavailable(f"could not fetch {PRIM_URL}: {exc}; pass --prim DIR") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return d


# ----------------------------------------------------------------------------- running
@dataclass
class Run:
    """One build-and-run of a PrIM program: Makefile variables and host arguments."""

    bench: str
    make: dict
    args: list
    modelled_clock: bool = False
    #: whether the program's own "Outputs are equal" check must pass (STRIDED FINEFINE's
    #: compares elements its DPU code never writes, on hardware as here)
    check_output: bool = True
    out: str = field(default="", repr=False)

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.make.items()) + " " + " ".join(self.args)


def environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(REPO / "bin"), str(Path(os.sys.executable).parent),
                                   env.get("PATH", "")])
    env.pop("PIMRL_MODELLED_CLOCK", None)
    return env


def run_program(root: Path, run: Run, timeout: int = 900) -> str:
    """Build ``run.bench`` in a scratch copy with its own Makefile and run its host program;
    returns its standard output (errors name the program, the setting and the output)."""
    src = root / "Microbenchmarks" / run.bench
    env = environment()
    if run.modelled_clock:
        env["PIMRL_MODELLED_CLOCK"] = "1"
    with tempfile.TemporaryDirectory(prefix=f"prim-{run.bench}-") as tmp:
        work = Path(tmp) / run.bench
        shutil.copytree(src, work, ignore=shutil.ignore_patterns("bin", "profile*"))
        make = ["make", *(f"{k}={v}" for k, v in run.make.items()), "all"]
        b = subprocess.run(make, cwd=work, env=env, capture_output=True, text=True,
                           timeout=timeout)
        if b.returncode != 0:
            raise RuntimeError(f"PrIM {run.bench} ({run.label()}): build failed: "
                               f"{(b.stderr or b.stdout)[-1500:]}")
        r = subprocess.run(["./bin/host_code", *run.args], cwd=work, env=env,
                           capture_output=True, text=True, timeout=timeout)
        # (a program exits -1 when its own check fails)
        failed = r.returncode != 0 or "ERROR" in r.stdout
        if failed and (run.check_output or "DPU cycles" not in r.stdout):
            raise RuntimeError(f"PrIM {run.bench} ({run.label()}): run failed (exit "
                               f"{r.returncode}): {(r.stdout + r.stderr)[-1500:]}")
        run.out = r.stdout
        return r.stdout


def dpu_cycles(out: str) -> float:
    """The 'DPU cycles = X cc' line PrIM's host programs print (max over tasklets and DPUs,
    mean over repetitions)."""
    m = re.search(r"DPU cycles\s*=\s*([0-9.eE+-]+)\s*cc", out)
    if not m:
        raise ValueError(f"no 'DPU cycles' line in the program's output: {out[-500:]}")
    return float(m.group(1))


def bandwidths(out: str) -> dict:
    """CPU-DPU's 'CPU-DPU Bandwidth (GB/s): X' and 'DPU-CPU Bandwidth (GB/s): Y'."""
    got = {}
    for key, name in (("to", "CPU-DPU"), ("from", "DPU-CPU")):
        m = re.search(name + r" Bandwidth \(GB/s\):\s*([0-9.eE+-]+)", out)
        if m:
            got[key] = float(m.group(1))
    return got


# ----------------------------------------------------------------------------- the suite
ARITH_ELEMENTS = 1 << 20            # run.sh: -i 1048576 (32-bit and 64-bit elements alike)
MRAM_ELEMENTS = 1 << 21             # run.sh: -i 2097152 uint64 elements
CPU_DPU_ELEMENTS = 1 << 18          # per DPU (2 MiB of uint64); run.sh goes to 4194304
PRIM_TYPE = {"int32": "INT32", "int64": "INT64", "float": "FLOAT", "double": "DOUBLE"}


def _row(group, figure, runtime, published, model, unit, uncertain=False, note=""):
    err = None if published is None else runtime / published - 1.0
    return {"group": group, "figure": figure, "runtime": runtime, "published": published,
            "model": model, "unit": unit, "rel_error": err, "uncertain": bool(uncertain),
            "target": published is not None and not uncertain,
            "within_target": err is not None and abs(err) <= P.TARGET_REL_ERROR, "note": note}


def suite(quick: bool = False) -> list:
    """(name, Run, post-processing) of every experiment, at PrIM's published settings.
    ``quick``: the certain published figures only, without tasklet sweeps."""
    exps = []
    ops = [("int32", "add"), ("int64", "add"), ("int64", "mul")] if quick else \
        [(t, o) for t in bench.DTYPES for o in bench.OPS]
    for dtype, op in ops:
        exps.append((f"arith-{dtype}-{op}-16", Run("Arithmetic-Throughput",
                     {"NR_DPUS": 1, "NR_TASKLETS": 16, "BL": 10, "OP": op.upper(),
                      "TYPE": PRIM_TYPE[dtype]}, ["-w", "0", "-e", "1", "-i", str(ARITH_ELEMENTS)])))
    if not quick:
        for t in (1, 2, 4, 8, 11):             # and 16, above
            exps.append((f"arith-int32-add-{t}", Run("Arithmetic-Throughput",
                         {"NR_DPUS": 1, "NR_TASKLETS": t, "BL": 10, "OP": "ADD", "TYPE": "INT32"},
                         ["-w", "0", "-e", "1", "-i", str(ARITH_ELEMENTS)])))
    for kind in ("READ", "WRITE"):
        for bl in ((11,) if quick else (3, 8, 11)):
            exps.append((f"mram-{kind.lower()}-{1 << bl}", Run("MRAM-Latency",
                         {"NR_DPUS": 1, "NR_TASKLETS": 1, "BL": bl, "OP": kind},
                         ["-w", "0", "-e", "1", "-i", str(MRAM_ELEMENTS)])))
    stream = [("copy", 16), ("scale", 16), ("triad", 16)]
    if not quick:
        stream += [("copy", t) for t in (1, 2, 4)] + [("copyw", 16), ("add", 16)] + \
            [("scale", t) for t in (1, 4, 11)]
    for op, t in stream:
        exps.append((f"stream-{op}-{t}", Run("STREAM", {"NR_DPUS": 1, "NR_TASKLETS": t, "BL": 10,
                     "MEM": "MRAM", "OP": op}, ["-w", "0", "-e", "1", "-i", str(MRAM_ELEMENTS)])))
    if not quick:
        for op in ("streaming", "random"):
            exps.append((f"wram-{op}-16", Run("WRAM", {"NR_DPUS": 1, "NR_TASKLETS": 16, "BL": 10,
                         "MEM": "WRAM", "OP": op}, ["-w", "0", "-e", "1", "-i", str(MRAM_ELEMENTS)])))
        for op in ("COARSECOARSE", "FINEFINE"):
            exps.append((f"strided-{op.lower()}-16-s4", Run("STRIDED", {"NR_DPUS": 1,
                         "NR_TASKLETS": 16, "BL": 10, "OP": op},
                         ["-w", "0", "-e", "1", "-i", str(MRAM_ELEMENTS), "-s", "4"],
                         check_output=op == "COARSECOARSE")))
        exps.append(("gups-16", Run("Random-GUPS", {"NR_DPUS": 1, "NR_TASKLETS": 16, "BL": 10},
                                    ["-w", "0", "-e", "1", "-i", str(MRAM_ELEMENTS)])))
        for p in ("0.0625", "0.25", "1", "4"):
            exps.append((f"oi-int32-add-16-p{p}", Run("Operational-Intensity", {"NR_DPUS": 1,
                         "NR_TASKLETS": 16, "BL": 10, "OP": "ADD", "TYPE": "INT32"},
                         ["-w", "0", "-e", "1", "-i", str(ARITH_ELEMENTS), "-p", p])))
    for tr in ("SERIAL", "PUSH", "BROADCAST"):
        exps.append((f"cpu-dpu-{tr.lower()}-64", Run("CPU-DPU", {"NR_DPUS": 64, "NR_TASKLETS": 1,
                     "BL": 10, "TRANSFER": tr}, ["-w", "0", "-e", "1", "-i", str(CPU_DPU_ELEMENTS)],
                     modelled_clock=True)))
    return exps


def _stream_bytes(op: str) -> int:
    """Bytes read plus written per element (uint64): PrIM counts both."""
    return 8 * {"copy": 2, "copyw": 2, "add": 3, "scale": 2, "triad": 3}[op]


def run_suite(root: Path, hw: Hardware | None = None, quick: bool = False, log=None,
              only=None) -> dict:
    """Run every experiment (``only``: those named); rows of figures (runtime, published,
    model) and shape checks."""
    hw = hw or get_hardware()
    f = hw.frequency_hz
    raw = {}
    for name, run in suite(quick):
        if only is not None and name not in only:
            continue
        if log:
            log(f"  {run.bench}: {run.label()}")
        raw[name] = run_program(root, run)
    rows, shapes, extra = [], [], []

    for (dtype, op), (value, uncertain) in P.ARITHMETIC_MOPS.items():
        key = f"arith-{dtype}-{op}-16"
        if key not in raw:
            continue
        mops = ARITH_ELEMENTS / (dpu_cycles(raw[key]) / f) / 1e6
        rows.append(_row("Arithmetic-Throughput", f"{dtype.upper()} {op.upper()}, 16 tasklets",
                         mops, value, bench.arithmetic_mops(hw, dtype, op, 16), "MOPS", uncertain))
    sweep = {t: ARITH_ELEMENTS / (dpu_cycles(raw[k]) / f) / 1e6
             for t in (1, 2, 4, 8, 11, 16) if (k := f"arith-int32-add-{t}") in raw}
    if len(sweep) > 2:
        best = max(sweep.values())
        sat = min(t for t, v in sweep.items() if v >= bench.SATURATION_FRACTION * best)
        shapes.append({"check": "Arithmetic-Throughput INT32 ADD saturates at",
                       "expected": f"{P.ARITH_SATURATION_TASKLETS} tasklets",
                       "got": f"{sat} tasklets ({', '.join(f'{t}: {v:.1f}' for t, v in sweep.items())} MOPS)",
                       "ok": sat == P.ARITH_SATURATION_TASKLETS})

    for kind in ("read", "write"):
        for size in (8, 256, 2048):
            key = f"mram-{kind}-{size}"
            if key not in raw:
                continue
            transfers = MRAM_ELEMENTS * 8 // size
            latency = dpu_cycles(raw[key]) / transfers
            mbps = size * f / latency / 1e6
            model = bench.mram_mbps(hw, size, kind == "write")
            if size == 2048:
                rows.append(_row("MRAM-Latency", f"mram_{kind} 2,048 B, 1 tasklet", mbps,
                                 P.MRAM_MBPS_2048[kind], model, "MB/s",
                                 note=f"{latency:.0f} cycles a transfer"))
            else:
                extra.append(_row("MRAM-Latency", f"mram_{kind} {size} B, 1 tasklet", mbps, None,
                                  model, "MB/s", note=f"{latency:.0f} cycles a transfer"))

    curves = {}
    for key, text in raw.items():
        m = re.fullmatch(r"stream-(\w+)-(\d+)", key)
        if not m:
            continue
        op, t = m.group(1), int(m.group(2))
        mbps = MRAM_ELEMENTS * _stream_bytes(op) / (dpu_cycles(text) / f) / 1e6
        curves.setdefault(op, {})[t] = mbps
    names = {"copy": "copy-dma", "copyw": "copy", "add": "add", "scale": "scale", "triad": "triad"}
    for op, series in curves.items():
        kernel = names[op]
        for t, mbps in sorted(series.items()):
            published = P.STREAM_MBPS.get(kernel) if t == 16 else None
            r = _row("STREAM", f"{kernel.upper()} (INT64), {t} tasklets", mbps, published,
                     bench.stream_mbps(hw, kernel, t), "MB/s")
            (rows if published is not None else extra).append(r)
    if len(curves.get("copy", {})) > 2:
        c = curves["copy"]
        best = max(c.values())
        sat = min(t for t, v in c.items() if v >= bench.SATURATION_FRACTION * best)
        lo, hi = P.STREAM_SATURATION["copy-dma"]
        shapes.append({"check": "STREAM COPY-DMA saturates (memory bound) at",
                       "expected": f"{lo}-{hi} tasklets", "got": f"{sat} tasklets",
                       "ok": lo <= sat <= hi})
    if len(curves.get("scale", {})) > 2:
        c = curves["scale"]
        ok = c[11] >= bench.SATURATION_FRACTION * max(c.values()) and c[4] < 0.9 * c[11]
        shapes.append({"check": "STREAM SCALE saturates (compute bound) at", "expected": "11 tasklets",
                       "got": ", ".join(f"{t}: {v:.1f} MB/s" for t, v in sorted(c.items())),
                       "ok": bool(ok)})

    for key, text in raw.items():
        if key.startswith(("wram-", "strided-", "gups-", "oi-")):
            extra.append(_row(key.split("-")[0].upper(), key, dpu_cycles(text), None, None,
                              "DPU cycles", note="no published figure in the reference"))

    # Host transfers, 64 DPUs (one rank), timed by the program's host clock on the modelled clock
    gb = {k: bandwidths(raw[k]) for k in raw if k.startswith("cpu-dpu-")}
    size = CPU_DPU_ELEMENTS * 8
    pairs = [("cpu-dpu-serial-64", "to", "serial_to"), ("cpu-dpu-serial-64", "from", "serial_from"),
             ("cpu-dpu-push-64", "to", "parallel_to"), ("cpu-dpu-push-64", "from", "parallel_from"),
             ("cpu-dpu-broadcast-64", "to", "broadcast")]
    for key, direction, kind in pairs:
        if key in gb and direction in gb[key]:
            model, _ = bench.transfer_gbps(hw, kind, size, 64)
            rows.append(_row("CPU-DPU", f"{kind}, 64 DPUs, {size >> 20} MiB each (modelled clock)",
                             gb[key][direction], P.SINGLE_RANK_GBPS[kind], model, "GB/s",
                             note="published at 32 MiB per DPU"))
    targets = [r for r in rows if r["target"]]
    return {"hardware": hw.name, "rows": rows, "other": extra, "shapes": shapes,
            "summary": {"targets": len(targets),
                        "targets_within": sum(r["within_target"] for r in targets),
                        "max_target_abs_error": max((abs(r["rel_error"]) for r in targets), default=0.0),
                        "shape_checks": len(shapes),
                        "shape_checks_ok": sum(s["ok"] for s in shapes)}}


def format_rows(rows: list) -> str:
    head = ("program", "figure", "PrIM program on pimrl (modelled)", "published (measured)",
            "pimrl cost model (modelled)", "unit", "error vs published", "note")
    lines = []
    for r in rows:
        err = "" if r["rel_error"] is None else percent(r["rel_error"])
        if r["uncertain"]:
            err += " (published uncertain)"
        lines.append((r["group"], r["figure"], f"{r['runtime']:.4g}",
                      "-" if r["published"] is None else f"{r['published']:g}",
                      "-" if r["model"] is None else f"{r['model']:.4g}", r["unit"], err, r["note"]))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), *(fmt.format(*map(str, ln)) for ln in lines)])
