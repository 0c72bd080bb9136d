"""The GPU baseline: the twelve variants as CUDA kernels through numba-cuda (extra ``gpu``).

Parallelism: **one CUDA thread per partition**. The order of the updates inside a partition
is sequential by definition (docs/design.md: in tasklet modes ring and unlocked its lanes
take turns, round-robin, on one shared Q-table, and every update reads what the previous one
wrote; in mode rows each epoch's snapshot, then each lane to its end), so the only
parallelism that keeps the results bit-identical to the reference is across partitions, as
on the DPUs and in SwiftRL's threaded CPU version. A warp per partition would leave 31 of
its 32 threads idle except during the max over the actions (4 to 6 entries here), and would
need a warp barrier per update; one thread per partition, each with its own Q-table in
global memory (cached in L1/L2: 64 to 3,000 entries per table), keeps every thread busy when
there are thousands of partitions. By default the partitions are the PIM run's DPUs and the
lanes its tasklets, with the same global lane numbers seeding the xorshift32 streams, so the
GPU computes exactly the DPUs' tables and the comparison is of the same work.

Arithmetic follows docs/design.md. FP32 uses the round-to-nearest intrinsics
``__fmul_rn``/``__fadd_rn``/``__fsub_rn`` (libdevice), which the compiler never contracts
into fused multiply-adds, so a real GPU also matches the reference bit for bit; INT32 is the
saturating Q format with 64-bit products. The device code is written here independently of
the numba CPU functions and tested against the reference learner in numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, set before ``numba.cuda`` is imported).

Timing (only on a real GPU): CUDA events around the host-to-device copies (records, lane
streams; the tables are zeroed on the device), the learning kernel, the average (a second
kernel sums the partitions' tables on the device, in partition order, and the host divides:
numpy's ``mean(axis=0)`` bit for bit), and the device-to-host copies (the summed table, lane
streams, saturation counts), reported separately. Averaging on the device matters: copying
thousands of tables back and averaging them on the host took longer than the learning itself
(measured on an H200: at 2,000 partitions of Taxi, 17-30 ms of kernel against 30-45 ms of
copies and host average).
Energy (only on a real GPU): the board's NVML energy counter over a window of at least a
second of untimed back-to-back runs, divided by their number (pimrl.baselines.nvml).
A warm-up launch on a tiny input compiles the kernel first (excluded). Where no GPU is
present nothing is timed: :func:`gpu_status` says why, and callers write "GPU: not
measured" -- never an estimate.
"""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field

import numpy as np

from pimrl.baselines.gpu_kernels import MAX_LANES, _build, simulator_enabled
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import check_records, columns
from pimrl.partition import even_bounds, lane_bounds, state_lanes
from pimrl.rng import lane_seeds


def numba_cuda_installed() -> bool:
    return importlib.util.find_spec("numba_cuda") is not None


def gpu_status() -> tuple[bool, str]:
    """(whether GPU times can be measured here, a one-line reason)."""
    if not numba_cuda_installed():
        return False, "numba-cuda is not installed (pip install 'pimrl[gpu]')"
    if simulator_enabled():
        return False, "NUMBA_ENABLE_CUDASIM=1: the CUDA simulator checks results, it has no timings"
    try:
        from numba import cuda

        if not cuda.is_available():
            return False, "no CUDA GPU or driver found"
        name = cuda.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else str(name)
        return True, f"CUDA GPU: {name}"
    except Exception as exc:  # driver present but unusable
        return False, f"CUDA unavailable: {type(exc).__name__}: {exc}"


@dataclass
class GpuResult:
    """Outcome of a GPU run. ``measured`` is False in the simulator: its times are not
    GPU times and must not be reported."""

    q: np.ndarray                 # float64 (S, A): average of the partitions' tables
    q_raw: np.ndarray | None      # (P, S, A) float32 or Q-format int32 (keep_tables=True)
    rng: np.ndarray               # (P, T) lane streams after the run
    saturations: int
    partitions: int
    lanes: int
    n_updates: int
    measured: bool
    device: str
    h2d_seconds: float = float("nan")       # CUDA events, median over repeats
    kernel_seconds: float = float("nan")
    d2h_seconds: float = float("nan")
    aggregate_seconds: float = float("nan")  # average kernel (events) + host division
    repeat_seconds: list = field(default_factory=list)
    # the board's energy per run through NVML (pimrl.baselines.nvml), or NaN; the status
    # says how it was read or why not
    energy_measured_j: float = float("nan")
    energy_status: str = "not measured: no GPU"

    @property
    def seconds(self) -> float:
        return self.h2d_seconds + self.kernel_seconds + self.d2h_seconds + self.aggregate_seconds

    @property
    def updates_per_s(self) -> float:
        return self.n_updates / self.seconds if self.seconds > 0 else float("nan")


_WARM = set()


def _launch(cols, part_lanes, owners, seeds, params, n_states, n_actions, tpb, timed,
            keep_tables):
    from numba import cuda

    kernel, average, zero = _build()
    # The kernel takes both reward columns and uses the one of the run's dtype.
    state, action, reward, next_state, next_action, terminated = cols
    is_int = params.dtype == "int32"
    reward_f = np.zeros(1, np.float32) if is_int else reward
    reward_x = reward if is_int else np.zeros(1, np.int32)
    cols = (state, action, reward_f, reward_x, next_state, next_action, terminated)
    P = part_lanes.shape[0]
    shape = (P, n_states, n_actions)
    iparams = params.kernel_scalars()
    fparams = np.array([params.alpha, params.gamma], dtype=np.float32)
    # Events: start | copies in | learning kernel | average kernel | copies out.
    ev = [cuda.event(timing=True) for _ in range(5)] if timed else None
    if timed:
        ev[0].record()
    d_cols = [cuda.to_device(c) for c in cols]
    d_lanes = cuda.to_device(part_lanes)
    d_owners = [cuda.to_device(a) for a in owners]
    d_rng = cuda.to_device(seeds)
    # Tables start at zero: allocated and zeroed on the device, not copied from the host.
    d_qf = cuda.device_array((1, 1, 1) if is_int else shape, np.float32)
    d_qx = cuda.device_array(shape if is_int else (1, 1, 1), np.int32)
    d_ip = cuda.to_device(iparams)
    d_fp = cuda.to_device(fparams)
    d_sat = cuda.device_array(P, np.int64)
    # tasklet mode rows: each partition's snapshot (rows for table-bootstrap SARSA, else one
    # value per state), on the device
    rows = params.variant.rows and part_lanes.shape[1] > 1
    snap_shape = ((P, n_states, n_actions if params.variant.snapshot_rows else 1) if rows
                  else (1, 1, 1))
    d_snap_f = cuda.device_array(snap_shape if not is_int else (1, 1, 1), np.float32)
    d_snap_x = cuda.device_array(snap_shape if is_int else (1, 1, 1), np.int32)
    d_sum = cuda.device_array((n_states, n_actions), np.float64)
    zero[(d_qf.size + 255) // 256, 256](d_qf.reshape(d_qf.size))
    zero[(d_qx.size + 255) // 256, 256](d_qx.reshape(d_qx.size))
    if timed:
        ev[1].record()
    blocks = (P + tpb - 1) // tpb
    kernel[blocks, tpb](*d_cols, d_lanes, *d_owners, d_rng, d_qf, d_qx, d_snap_f, d_snap_x,
                        bool(params.variant.snapshot_rows), d_ip, d_fp, np.int64(n_actions), d_sat)
    if timed:
        ev[2].record()
    entries = n_states * n_actions
    average[(entries + 127) // 128, 128](d_qf, d_qx, is_int, float(1 << params.frac_bits), d_sum)
    if timed:
        ev[3].record()
    total = d_sum.copy_to_host()
    rng = d_rng.copy_to_host()
    sat = d_sat.copy_to_host()
    times = (0.0, 0.0, 0.0, 0.0)
    if timed:
        ev[4].record()
        ev[4].synchronize()
        times = tuple(cuda.event_elapsed_time(ev[k], ev[k + 1]) / 1e3 for k in range(4))
    else:
        cuda.synchronize()
    # The partitions' own tables, for checks: copied after the timed part, and only if asked.
    q_raw = (d_qx if is_int else d_qf).copy_to_host() if keep_tables else None
    return total, q_raw, rng, int(sat.sum()), times


def gpu_baseline(records: np.ndarray, n_states: int, n_actions: int, params: LearnerParams,
                 partitions: int, lanes: int = 1, threads_per_block: int = 64, repeats: int = 1,
                 check: bool = True, keep_tables: bool = True) -> GpuResult:
    """Train ``partitions`` partitions of ``lanes`` lanes each on the GPU (or in the CUDA
    simulator), average their tables on the GPU and, on a real GPU, time it.

    The average is computed on the device (one float64 sum per entry, in partition order,
    then a division on the host: numpy's ``mean(axis=0)`` bit for bit), so only one table
    crosses the bus. ``keep_tables`` also copies the partitions' own tables back (``q_raw``)
    for checks, after the timed part; without it ``q_raw`` is None."""
    if not numba_cuda_installed():
        raise RuntimeError("the GPU baseline needs numba-cuda: pip install 'pimrl[gpu]'")
    if check:
        check_records(records, n_states, n_actions, params)
    if not 1 <= lanes <= MAX_LANES:
        raise ValueError(f"lanes must lie in [1, {MAX_LANES}]; got {lanes}")
    if partitions < 1 or len(records) < partitions:
        raise ValueError(f"{len(records)} transitions cannot feed {partitions} partitions")
    measurable, device = gpu_status()
    sim = simulator_enabled()
    if not measurable and not sim:
        raise RuntimeError(f"GPU: not measured ({device})")
    bounds = even_bounds(len(records), partitions)
    if params.variant.rows and lanes > 1:
        # tasklet mode rows: each partition's records grouped by the lane that owns their state
        order, part_lanes, *owners = state_lanes(records["state"], bounds, lanes, n_states,
                                                 records["action"], n_actions)
        records = records[order]
    else:
        part_lanes = lane_bounds(bounds, lanes)
        owners = (np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.uint16),
                  np.zeros((1, 1), np.int64))
    cols = columns(records, params)
    part_lanes = np.ascontiguousarray(part_lanes)
    owners = [np.ascontiguousarray(a) for a in owners]
    seeds = lane_seeds(params.seed, np.arange(partitions * lanes)).reshape(partitions, lanes)
    if measurable and params.dtype not in _WARM:
        tiny = LearnerParams(**{**params.as_dict(), "epochs": 1})
        _launch(columns(records[:2], tiny), np.array([[[0, 1]]], np.int64),
                (np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.uint16),
                 np.zeros((1, 1), np.int64)), seeds[:1, :1].copy(), tiny, n_states, n_actions,
                threads_per_block, False, False)
        _WARM.add(params.dtype)
    parts = []
    for r in range(repeats if measurable else 1):
        total, q_raw, rng, sat, (h2d, kern, avg, d2h) = _launch(
            cols, part_lanes, owners, seeds.copy(), params, n_states, n_actions,
            threads_per_block, measurable, keep_tables and r == 0)
        t0 = time.perf_counter()
        q = total / partitions           # numpy's mean: the sum, then one division
        parts.append((h2d, kern, d2h, avg + time.perf_counter() - t0))
        if r == 0:
            first = (q_raw, rng, sat)
    q_raw, rng, sat = first
    med = np.median(np.array(parts), axis=0) if measurable else [float("nan")] * 4
    energy, energy_status = float("nan"), f"not measured: {device}"
    if measurable:
        energy, energy_status = _energy(lambda: _launch(
            cols, part_lanes, owners, seeds.copy(), params, n_states, n_actions,
            threads_per_block, False, False))
    return GpuResult(q=q, q_raw=q_raw, rng=rng, saturations=sat, partitions=partitions,
                     lanes=lanes, n_updates=len(records) * params.epochs, measured=measurable,
                     device=device, h2d_seconds=float(med[0]), kernel_seconds=float(med[1]),
                     d2h_seconds=float(med[2]), aggregate_seconds=float(med[3]),
                     repeat_seconds=[float(sum(x)) for x in parts] if measurable else [],
                     energy_measured_j=energy, energy_status=energy_status)


def _energy(run_once) -> tuple:
    """``(joules per run, status)`` of the board CUDA runs on, through NVML over a window of
    back-to-back runs (pimrl.baselines.nvml); NaN and the reason where it cannot be read."""
    from pimrl.baselines.nvml import (
        ENERGY_WINDOW_S, NvmlMeter, current_device_uuid, energy_per_run,
    )

    with NvmlMeter(current_device_uuid()) as meter:
        if not meter.available:
            return float("nan"), f"not measured: {meter.reason}"
        joules, _, _ = energy_per_run(run_once, meter)
        # the same text on every run (a rerun's columns compare equal): no run count or time
        return joules, (f"measured: NVML board energy of {meter.name or 'the GPU'}, per run "
                        f"over at least {ENERGY_WINDOW_S:g} s of runs")
