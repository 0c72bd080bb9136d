"""CPU and GPU baselines: bit-exact against the reference learners on the same partitions."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pimrl.baselines import ALL_VARIANTS, parse_variant
from pimrl.baselines.cpu import cpu_baseline, max_threads
from pimrl.data import generate_dataset
from pimrl.envs import make
from pimrl.learners.params import LearnerParams
from pimrl.learners.reference import OfflineLearner, learn_partition
from pimrl.partition import even_bounds, lane_bounds

ROOT = Path(__file__).resolve().parents[1]


def _cases():
    for v in ALL_VARIANTS:
        yield v, "logged"
        if v.startswith("sarsa"):
            yield v, "epsilon-greedy"


@pytest.fixture(scope="module")
def taxi_data():
    env = make("Taxi-v3")
    return env, generate_dataset(env, 3001, seed=5)


def test_twelve_variants():
    assert len(ALL_VARIANTS) == 12 and len(set(ALL_VARIANTS)) == 12
    assert parse_variant("SARSA-int32-ran") == {"algo": "sarsa", "dtype": "int32", "sampling": "ran"}
    with pytest.raises(ValueError, match="unknown variant"):
        parse_variant("q-fp64-seq")


@pytest.mark.parametrize("variant,next_action", list(_cases()))
def test_cpu_multithreaded_bit_exact_with_reference(taxi_data, variant, next_action):
    env, rec = taxi_data
    p = LearnerParams(**parse_variant(variant), epochs=3, next_action=next_action, epsilon=0.3,
                      seed=11)
    parts, lanes = 3, 2
    res = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=max_threads(),
                       partitions=parts, lanes=lanes)
    bounds = lane_bounds(even_bounds(len(rec), parts), lanes)
    refs = [learn_partition(rec, env.n_states, env.n_actions, p, bounds[i],
                            lane_ids=np.arange(lanes) + lanes * i) for i in range(parts)]
    for i in range(parts):
        assert res.q_raw[i].dtype == refs[i].q_raw.dtype
        np.testing.assert_array_equal(res.q_raw[i], refs[i].q_raw)
    np.testing.assert_array_equal(res.q, np.mean([r.q_float(p) for r in refs], axis=0))
    assert res.saturations == sum(r.saturations for r in refs)
    assert np.abs(res.q_raw).sum() > 0          # something was learned


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_cpu_single_thread_is_the_offline_learner(taxi_data, variant):
    env, rec = taxi_data
    p = LearnerParams(**parse_variant(variant), epochs=2, seed=3)
    res = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=1, repeats=2)
    ref = OfflineLearner(p).fit(rec, env.n_states, env.n_actions)
    np.testing.assert_array_equal(res.q_raw[0], ref.q_raw_)
    assert res.partitions == 1 and res.threads == 1
    assert res.n_updates == len(rec) * 2
    assert len(res.repeat_seconds) == 2 and res.seconds > 0
    assert res.seconds == pytest.approx(res.train_seconds + res.aggregate_seconds, rel=0.5, abs=1e-3)
    assert np.isfinite(res.updates_per_s) and res.updates_per_s > 0


def test_cpu_saturations_counted_like_reference():
    env = make("CliffWalking-v1")
    rec = generate_dataset(env, 2000, seed=1)
    # Q7.24 (+-128): the random policy's values (SARSA, logged actions, gamma 0.99) overflow it.
    p = LearnerParams(algo="sarsa", dtype="int32", epochs=20, frac_bits=24, gamma=0.99)
    res = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=max_threads(), partitions=2)
    bounds = lane_bounds(even_bounds(len(rec), 2), 1)
    refs = [learn_partition(rec, env.n_states, env.n_actions, p, bounds[i], lane_ids=[i])
            for i in range(2)]
    assert res.saturations == sum(r.saturations for r in refs) > 0


def test_cpu_rejects_impossible_requests(taxi_data):
    env, rec = taxi_data
    p = LearnerParams()
    with pytest.raises(ValueError, match="threads"):
        cpu_baseline(rec, env.n_states, env.n_actions, p, threads=max_threads() + 1)
    with pytest.raises(ValueError, match="cannot feed"):
        cpu_baseline(rec[:2], env.n_states, env.n_actions, p, threads=1, partitions=3)


def test_gpu_not_measured_without_gpu():
    from pimrl.baselines.gpu import gpu_status

    ok, reason = gpu_status()
    if ok:
        pytest.skip(f"a GPU is present ({reason})")
    assert "no CUDA GPU" in reason or "numba-cuda" in reason, reason
    # A sweep on this machine leaves every GPU figure empty and says why.
    from pimrl.experiments.config import parse_config
    from pimrl.experiments.runner import read_results, run_scale

    cfg = parse_config({"learner": {"epochs": 1}, "sweep": [{
        "name": "s", "envs": ["FrozenLake-v1"], "dpus": [2], "transitions": 200,
        "variants": ["q-fp32-seq"], "tasklets": [2]}]})
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        run_scale(cfg, out, progress=False)
        rows = read_results(f"{out}/results.csv")
    assert rows and all(r["gpu_status"].startswith("not measured") for r in rows)
    assert all(r[c] == "" for r in rows for c in r if c.startswith("gpu_") and c != "gpu_status")


GPU_SIM_SCRIPT = textwrap.dedent("""
    import os
    SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"   # else: a real GPU
    import numpy as np
    from pimrl.baselines import ALL_VARIANTS, parse_variant
    from pimrl.baselines.gpu import gpu_baseline
    from pimrl.data import generate_dataset
    from pimrl.envs import make
    from pimrl.learners.params import LearnerParams
    from pimrl.learners.reference import learn_partition
    from pimrl.partition import even_bounds, lane_bounds
    from pimrl.swiftrl.trainer import PimTrainer

    n = 0
    for env_id in ("CliffWalking-v1", "FrozenLake-v1"):
        env = make(env_id)
        rec = generate_dataset(env, 97, seed=2)
        for v in ALL_VARIANTS:
            for na in (("logged", "epsilon-greedy") if v.startswith("sarsa") else ("logged",)):
                p = LearnerParams(**parse_variant(v), epochs=2, next_action=na, epsilon=0.4, seed=9)
                g = gpu_baseline(rec, env.n_states, env.n_actions, p, partitions=3, lanes=2,
                                 threads_per_block=4)
                assert g.measured != SIMULATED             # the simulator times nothing
                assert SIMULATED or g.kernel_seconds > 0
                # energy through NVML on a real GPU where it can be read; never invented
                if g.energy_status.startswith("measured: "):
                    assert not SIMULATED and g.energy_measured_j > 0, g.energy_status
                else:
                    assert g.energy_status.startswith("not measured: ")
                    assert np.isnan(g.energy_measured_j)
                b = lane_bounds(even_bounds(len(rec), 3), 2)
                for i in range(3):
                    r = learn_partition(rec, env.n_states, env.n_actions, p, b[i],
                                        lane_ids=[2 * i, 2 * i + 1])
                    assert np.array_equal(g.q_raw[i], r.q_raw), (env_id, v, na, i)
                    assert np.array_equal(g.rng[i], r.rng), (env_id, v, na, i)
                if env_id == "CliffWalking-v1":             # -1 a step: never all zero
                    assert np.abs(g.q_raw).sum() > 0
                n += 1
    # Saturating fixed point: counts agree with the reference.
    env = make("CliffWalking-v1")
    rec = generate_dataset(env, 150, seed=1)
    p = LearnerParams(algo="sarsa", dtype="int32", epochs=15, frac_bits=24, gamma=0.99)
    g = gpu_baseline(rec, env.n_states, env.n_actions, p, partitions=2, lanes=1, threads_per_block=2)
    b = lane_bounds(even_bounds(len(rec), 2), 1)
    sat = sum(learn_partition(rec, env.n_states, env.n_actions, p, b[i], lane_ids=[i]).saturations
              for i in range(2))
    assert g.saturations == sat > 0, (g.saturations, sat)
    # Partitions = DPUs and lanes = tasklets: the GPU computes exactly the DPUs' tables.
    env = make("Taxi-v3")
    rec = generate_dataset(env, 120, seed=4)
    p = LearnerParams(algo="sarsa", dtype="fp32", sampling="ran", epochs=2, seed=1)
    pim = PimTrainer(p, n_dpus=4, tasklets=3, keep_dpu_tables=True).fit(rec, 500, 6)
    g = gpu_baseline(rec, 500, 6, p, partitions=4, lanes=3, threads_per_block=4)
    assert np.array_equal(g.q_raw, pim.dpu_tables_)
    assert np.array_equal(g.q, pim.q_)
    # Tasklet modes rows (lanes grouped by state, a snapshot each epoch) and unlocked (the
    # ring's table): the DPUs' tables again.
    rec = generate_dataset(env, 400, seed=5)
    for v, na, mode in (("q-int32-seq", "logged", "rows"), ("q-fp32-str", "logged", "rows"),
                        ("sarsa-fp32-ran", "epsilon-greedy", "rows"),
                        ("sarsa-int32-seq", "logged", "rows"),
                        ("q-fp32-ran", "logged", "unlocked")):
        p = LearnerParams(**parse_variant(v), epochs=2, next_action=na, epsilon=0.4, seed=3,
                          tasklet_mode=mode)
        pim = PimTrainer(p, n_dpus=3, tasklets=4, keep_dpu_tables=True).fit(rec, 500, 6)
        g = gpu_baseline(rec, 500, 6, p, partitions=3, lanes=4, threads_per_block=4)
        assert np.array_equal(g.q_raw, pim.dpu_tables_), (v, mode)
        n += 1
    print("GPU-SIM-OK" if SIMULATED else "GPU-REAL-OK", n)
""")


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda is not installed (pip install 'pimrl[gpu]'): the CUDA "
                           "simulator that checks the GPU kernels comes with it")
@pytest.mark.slow
def test_gpu_kernels_in_cuda_simulator():
    # NUMBA_ENABLE_CUDASIM must be set before numba.cuda is imported: a fresh interpreter.
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = subprocess.run([sys.executable, "-c", GPU_SIM_SCRIPT], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "GPU-SIM-OK 41" in out.stdout     # 18 variant cases x 2 environments, 5 modes


@pytest.mark.needs_gpu
def test_gpu_kernels_on_a_real_gpu():
    """The same checks as in the simulator, compiled for and run on the GPU: bit for bit the
    reference's tables, streams and saturation counts, and the DPUs' tables; timed."""
    out = subprocess.run([sys.executable, "-c", GPU_SIM_SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "GPU-REAL-OK 41" in out.stdout


PTX_SCRIPT = textwrap.dedent("""
    from types import SimpleNamespace
    from numba import cuda, types
    import numba.cuda.dispatcher as disp
    if not cuda.is_available():   # compile for sm_90 without a device (NVVM only)
        disp.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))
    from pimrl.baselines import gpu
    A = lambda dt, nd: types.Array(dt, nd, "C")
    sig = (A(types.int32, 1), A(types.uint8, 1), A(types.float32, 1), A(types.int32, 1),
           A(types.int32, 1), A(types.uint8, 1), A(types.uint8, 1), A(types.int64, 3),
           A(types.uint32, 2), A(types.float32, 3), A(types.int32, 3), A(types.int64, 1),
           A(types.float32, 1), types.int64, A(types.int64, 1))
    ptx, _ = cuda.compile_ptx(gpu._build()[0].py_func, sig, cc=(9, 0))
    assert "fma.rn.f32" not in ptx, "FP32 update contracted into a fused multiply-add"
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx
    print("PTX-OK", len(ptx))
""")


def _nvvm_found() -> bool:
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvvm")
        load_nvidia_dynamic_lib("nvrtc")
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _nvvm_found(), reason="NVVM/NVRTC not found (pip install nvidia-nvvm "
                    "nvidia-cuda-nvrtc): needed to compile the real (non-simulated) CUDA kernel")
def test_gpu_kernel_compiles_for_hopper_without_fma():
    out = subprocess.run([sys.executable, "-c", PTX_SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={k: v for k, v in os.environ.items()
                                                      if k != "NUMBA_ENABLE_CUDASIM"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PTX-OK" in out.stdout


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="needs a C compiler")
@pytest.mark.parametrize("variant,next_action", [("q-fp32-seq", "logged"),
                                                 ("q-int32-ran", "logged"),
                                                 ("sarsa-fp32-str", "epsilon-greedy"),
                                                 ("sarsa-int32-seq", "logged")])
def test_plain_c_loop_computes_the_numba_baseline_tables(taxi_data, variant, next_action):
    """kernels/cpu_loop.c (the C baseline the benchmarks time numba against) does the same
    updates in the same order: equal tables and saturation counts, bit for bit."""
    from pimrl.baselines.c_loop import run_c_loop

    env, rec = taxi_data
    p = LearnerParams(**parse_variant(variant), epochs=2, next_action=next_action, epsilon=0.3,
                      seed=5)
    res = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=max_threads(), partitions=3)
    c = run_c_loop(rec, env.n_states, env.n_actions, p, partitions=3, threads=2)
    assert np.array_equal(c["q_raw"].view(np.uint32), res.q_raw.view(np.uint32))
    assert c["saturations"] == res.saturations


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="needs a C compiler")
@pytest.mark.parametrize("variant", ["q-int32-seq", "sarsa-int32-str"])
def test_plain_c_loop_saturates_like_the_numba_baseline(variant):
    """Where values leave Q7.24's range (+-128), the C loop's saturations (32-bit overflow
    tests) clamp and count as the numba baseline's do."""
    from pimrl.baselines.c_loop import run_c_loop

    env = make("CliffWalking-v1")
    rec = generate_dataset(env, 3000, seed=1)
    rec["reward"] *= 1.25            # the cliff's -125 fits; the values below it do not
    p = LearnerParams(**parse_variant(variant), epochs=20, frac_bits=24, gamma=0.99, stride=7)
    res = cpu_baseline(rec, env.n_states, env.n_actions, p, threads=max_threads(), partitions=2)
    c = run_c_loop(rec, env.n_states, env.n_actions, p, partitions=2, threads=2)
    assert res.saturations > 0
    assert np.array_equal(c["q_raw"], res.q_raw)
    assert c["saturations"] == res.saturations
