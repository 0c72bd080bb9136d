"""The plain-C CPU loop (``cpu_loop.c``): built with the system C compiler at run time, one
binary per variant, run on the same records and partitions as the numba CPU baseline.

``run_c_loop(records, n_states, n_actions, params, partitions, threads)`` returns the raw
tables, the lane streams, the saturation count and the measured training seconds (the C
program's own CLOCK_MONOTONIC around its threads, so process start and file reading are
excluded, as numba's compilation is from the numba figure; with ``repeats``, the shortest of
that many trainings in one process).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from pimrl.learners import fixedpoint
from pimrl.learners.variants import (
    P_ALPHA32, P_ALPHA_FX, P_EPS, P_GAMMA32, P_GAMMA_FX, Variant,
)

SOURCE = Path(__file__).with_name("cpu_loop.c")
KERNELS = Path(__file__).resolve().parents[1] / "kernels"     # the DPU kernels' shared headers
HEADERS = ("swiftrl_variants.h", "swiftrl_arith.h")
CFLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-pthread"]


def compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def build(variant: Variant, build_dir: Path | None = None) -> Path:
    """The binary of ``variant`` (built once per source and flags)."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc or gcc, or $CC) to build the C loop")
    defines = {**variant.c_defines(), "DRAW": variant.codes()["next_action"]}
    flags = CFLAGS + [f"-I{KERNELS}"] + [f"-D{k}={v}" for k, v in defines.items()]
    sources = SOURCE.read_bytes() + b"".join((KERNELS / h).read_bytes() for h in HEADERS)
    tag = hashlib.sha256(sources + " ".join([cc] + flags).encode()).hexdigest()[:12]
    out_dir = build_dir or Path(tempfile.gettempdir()) / "pimrl-cpu-loop"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"cpu_loop-{variant.key}-{tag}"
    if not out.exists():
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        subprocess.run([cc, *flags, str(SOURCE), "-o", str(tmp)], check=True)
        os.replace(tmp, out)
    return out


def run_c_loop(records, n_states, n_actions, params, partitions: int, threads: int,
               workdir: Path | None = None, repeats: int = 1) -> dict:
    """Train with the C loop; ``records`` as the numba baseline takes them. The training
    runs ``repeats`` times in the one process (each from zeroed tables) and the shortest
    time is returned, as ``cpu_baseline(repeats=)`` gives numba's."""
    variant = Variant.of(params)
    binary = build(variant)
    rec = (fixedpoint.records_with_fixed_rewards(records, params.frac_bits) if variant.is_int
           else np.ascontiguousarray(records).copy())
    scal = params.kernel_scalars()
    if variant.is_int:
        alpha, gamma = int(scal[P_ALPHA_FX]), int(scal[P_GAMMA_FX])
    else:
        alpha, gamma = int(scal[P_ALPHA32]), int(scal[P_GAMMA32])
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rpath, qpath = Path(tmp) / "records.bin", Path(tmp) / "q.bin"
        rec.tofile(rpath)
        args = [str(binary), str(rpath), str(len(rec)), str(n_states), str(n_actions),
                str(partitions), str(threads), str(params.epochs), str(params.stride),
                str(int(scal[P_EPS])), str(params.frac_bits), str(alpha), str(gamma),
                str(params.seed), str(qpath), str(int(repeats))]
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
        raw = np.fromfile(qpath, dtype=np.uint8)
    nq = partitions * n_states * n_actions * 4
    dtype = np.int32 if variant.is_int else np.float32
    return {"q_raw": raw[:nq].view(dtype).reshape(partitions, n_states, n_actions),
            "rng": raw[nq:].view(np.uint32).copy(), "train_measured_s": float(out[0]),
            "saturations": int(out[1])}
