"""The CPU baseline written in plain C (``kernels/cpu_loop.c``): built with the system C
compiler at run time, one binary per variant, run on the same records and partitions as the
numba CPU baseline, with the same tables bit for bit.

``run_c_loop(records, n_states, n_actions, params, partitions, threads)`` returns the raw
tables, the lane streams, the saturation count and the measured training seconds (the C
program's own CLOCK_MONOTONIC around its threads, so process start and file reading are
excluded, as numba's compilation is from the numba figure; with ``repeats``, the shortest of
that many trainings in one process). The records reach the program through a file it maps
(populated before the clock starts), written here in chunks: a dataset of several GB costs
no second copy in this process and none in the program's.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from pimrl import resources
from pimrl.io import atomic_writer
from pimrl.learners import fixedpoint
from pimrl.learners.variants import (
    P_ALPHA32, P_ALPHA_FX, P_EPS, P_GAMMA32, P_GAMMA_FX, Variant,
)

SOURCE = resources.KERNEL_DIR / "cpu_loop.c"     # beside the DPU kernels, whose headers it shares
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
    flags = CFLAGS + [f"-I{resources.KERNEL_DIR}"] + [f"-D{k}={v}" for k, v in defines.items()]
    sources = SOURCE.read_bytes() + b"".join((resources.KERNEL_DIR / h).read_bytes() for h in HEADERS)
    tag = hashlib.sha256(sources + " ".join([cc] + flags).encode()).hexdigest()[:12]
    out_dir = build_dir or Path(tempfile.gettempdir()) / "pimrl-cpu-loop"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"cpu_loop-{variant.key.replace('/', '-')}-{tag}"
    if not out.exists():
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        subprocess.run([cc, *flags, str(SOURCE), "-o", str(tmp)], check=True)
        os.replace(tmp, out)
    return out


#: Records written per chunk (16 MiB): the file is built without a whole copy of the data.
CHUNK_RECORDS = 1 << 20


def write_records(path: Path, records, frac_bits: int | None) -> None:
    """``records`` as the C loop reads them, chunk by chunk: raw, or with the reward in Q
    format (``frac_bits``) for the INT32 variants."""
    with atomic_writer(path, "wb") as f:
        for lo in range(0, len(records), CHUNK_RECORDS):
            part = records[lo:lo + CHUNK_RECORDS]
            if frac_bits is not None:
                part = fixedpoint.records_with_fixed_rewards(part, frac_bits)
            f.write(np.ascontiguousarray(part).data)


def run_c_loop(records, n_states, n_actions, params, partitions: int, threads: int,
               workdir: Path | None = None, repeats: int = 1) -> dict:
    """Train with the C loop; ``records`` as the numba baseline takes them. The training
    runs ``repeats`` times in the one process (each from zeroed tables) and the shortest
    time is returned, as ``cpu_baseline(repeats=)`` gives numba's."""
    variant = Variant.of(params)
    binary = build(variant)
    scal = params.kernel_scalars()
    if variant.is_int:
        alpha, gamma = int(scal[P_ALPHA_FX]), int(scal[P_GAMMA_FX])
    else:
        alpha, gamma = int(scal[P_ALPHA32]), int(scal[P_GAMMA32])
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rpath, qpath = Path(tmp) / "records.bin", Path(tmp) / "q.bin"
        write_records(rpath, records, params.frac_bits if variant.is_int else None)
        args = [str(binary), str(rpath), str(len(records)), str(n_states), str(n_actions),
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
