"""The GPU baseline of online learning (numba-cuda, extra ``gpu``): the same work as the DPUs.

One CUDA thread per item (a DPU's Q-table and its lanes): inside an item the lanes take
turns on one shared table (docs/design.md, "Online learning"), so, as in the offline GPU
baseline (:mod:`pimrl.baselines.gpu`), the only parallelism that keeps the results
bit-identical is across items. The device code is written here independently of the numba
CPU loop; FP32 uses the round-to-nearest intrinsics (no fused multiply-add). It is tested
against the CPU loop in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``). Timing only on a
real GPU (CUDA events around the kernel of each round); elsewhere "GPU: not measured".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pimrl.baselines.gpu import gpu_status, numba_cuda_installed
from pimrl.baselines.gpu_kernels import device_primitives, simulator_enabled
from pimrl.learners.variants import ALGO, DTYPE, ONLINE_COUNTERS, OP_STEPS
from pimrl.online import kernels
from pimrl.online.envtable import dpu_env, stack_envs
from pimrl.online.params import OnlineParams
from pimrl.partition import even_bounds
from pimrl.learners.aggregate import AGGREGATORS, float_to_raw, parse_aggregate, raw_scale
from pimrl.rng import lane_seeds

Q_CODE = ALGO.code("q")
INT32_CODE = DTYPE.code("int32")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_KERNEL = None
cuda = None   # numba.cuda, imported on first use (a module global: the simulator swaps it)


def _build():
    global _KERNEL, cuda
    if _KERNEL is not None:
        return _KERNEL
    from numba import cuda as _cuda, int64, uint64

    cuda = _cuda

    fmul, fadd, fsub, xs, below = device_primitives(cuda)

    @cuda.jit(device=True)
    def sat(x, c, p):
        if x > INT32_MAX:
            c[p, kernels.OC_SAT] += 1
            return INT32_MAX
        if x < INT32_MIN:
            c[p, kernels.OC_SAT] += 1
            return INT32_MIN
        return x

    @cuda.jit(device=True)
    def fxmul(a, b, frac, c, p):
        prod = int64(a) * int64(b)
        return sat((prod + (int64(1) << (frac - 1))) >> frac, c, p)

    @cuda.jit(device=True)
    def greedy(qf, qx, is_int, p, s, n_actions):
        best = 0
        if is_int:
            m = qx[p, s, 0]
            for a in range(1, n_actions):
                if qx[p, s, a] > m:
                    m = qx[p, s, a]
                    best = a
        else:
            mf = qf[p, s, 0]
            for a in range(1, n_actions):
                if qf[p, s, a] > mf:
                    mf = qf[p, s, a]
                    best = a
        return best

    @cuda.jit(device=True)
    def eps_at(w, n):
        e0, e1, decay = w[2], w[3], w[4]
        if decay <= 0:
            return e0
        if n >= decay:
            return e1
        return e1 + ((e0 - e1) * (decay - n)) // decay

    @cuda.jit(device=True)
    def eps_greedy(qf, qx, is_int, p, t, s, thr, rng, c, n_actions):
        x = xs(rng[p, t])
        rng[p, t] = x
        if uint64(x) < uint64(thr):
            x = xs(x)
            rng[p, t] = x
            c[p, kernels.OC_RNG] += 2
            c[p, kernels.OC_BELOW] += 1
            return below(x, n_actions)
        c[p, kernels.OC_RNG] += 1
        c[p, kernels.OC_ROWS] += 1
        return greedy(qf, qx, is_int, p, s, n_actions)

    @cuda.jit
    def kernel(thr, nxt, rew_f, rew_x, term, sthr, sstate, params, fparams, lanes, rng, qf, qx,
               visits, counters):
        p = cuda.grid(1)
        if p >= lanes.shape[0]:
            return
        w = params[p]
        is_q = w[0] == Q_CODE
        is_int = w[1] == INT32_CODE
        n_actions = thr.shape[1]
        K = thr.shape[2]
        T = lanes.shape[1]
        frac = w[5]
        alpha_f, gamma_f = fparams[p, 0], fparams[p, 1]
        alpha_x, gamma_x = w[8], w[9]
        max_steps, m_start = w[10], w[11]
        base, extra = w[OP_STEPS] // T, w[OP_STEPS] % T
        longest = base + (1 if extra else 0)
        for c in range(counters.shape[1]):
            counters[p, c] = 0
        for i in range(longest):
            for t in range(T):
                if i >= base + (1 if t < extra else 0):
                    continue
                s = lanes[p, t, 0]
                if s < 0:
                    m = 0
                    if m_start > 1:
                        x = xs(rng[p, t])
                        rng[p, t] = x
                        counters[p, kernels.OC_RNG] += 1
                        m = m_start - 1
                        for j in range(m_start - 1):
                            if uint64(x) < uint64(sthr[j]):
                                m = j
                                break
                        counters[p, kernels.OC_START_SCANS] += m + 1 if m < m_start - 1 else m_start - 1
                    s = sstate[m]
                    lanes[p, t, 1] = 0
                    lanes[p, t, 2] = -1
                    counters[p, kernels.OC_RESETS] += 1
                n = lanes[p, t, 3]
                if lanes[p, t, 2] >= 0:
                    a = lanes[p, t, 2]
                else:
                    a = eps_greedy(qf, qx, is_int, p, t, s, eps_at(w, n), rng, counters, n_actions)
                k = 0
                if K > 1:
                    x = xs(rng[p, t])
                    rng[p, t] = x
                    counters[p, kernels.OC_RNG] += 1
                    k = K - 1
                    for j in range(K - 1):
                        if uint64(x) < uint64(thr[s, a, j]):
                            k = j
                            break
                    counters[p, kernels.OC_OUTCOME_SCANS] += k + 1 if k < K - 1 else K - 1
                s2 = nxt[s, a, k]
                d = term[s, a, k] != 0
                n += 1
                ep = lanes[p, t, 1] + 1
                b = 0
                if not is_q and not d:
                    b = eps_greedy(qf, qx, is_int, p, t, s2, eps_at(w, n), rng, counters, n_actions)
                    counters[p, kernels.OC_ENTRIES] += 1
                if is_q and not d:
                    b = greedy(qf, qx, is_int, p, s2, n_actions)
                    counters[p, kernels.OC_ROWS] += 1
                if is_int:
                    r = int64(rew_x[s, a, k])
                    target = r
                    if not d:
                        target = sat(r + fxmul(gamma_x, qx[p, s2, b], frac, counters, p), counters, p)
                    cur = int64(qx[p, s, a])
                    td = sat(target - cur, counters, p)
                    qx[p, s, a] = sat(cur + fxmul(alpha_x, td, frac, counters, p), counters, p)
                else:
                    target = rew_f[s, a, k]
                    if not d:
                        target = fadd(target, fmul(gamma_f, qf[p, s2, b]))
                    cur = qf[p, s, a]
                    qf[p, s, a] = fadd(cur, fmul(alpha_f, fsub(target, cur)))
                if visits.shape[0] > 1 or visits.shape[1] > 1:
                    visits[p, s, a] += 1
                counters[p, kernels.OC_STEPS] += 1
                if d:
                    counters[p, kernels.OC_TERMINAL] += 1
                if d or ep >= max_steps:
                    lanes[p, t, 0] = -1
                    lanes[p, t, 2] = -1
                    counters[p, kernels.OC_EPISODES] += 1
                else:
                    lanes[p, t, 0] = s2
                    lanes[p, t, 2] = -1 if is_q else b
                lanes[p, t, 1] = ep
                lanes[p, t, 3] = n

    _KERNEL = kernel
    return kernel


@dataclass
class GpuOnlineResult:
    q: np.ndarray
    raw: np.ndarray
    counters: np.ndarray
    measured: bool
    device: str
    kernel_measured_s: float      # CUDA events, all rounds (nan when not measured)
    env_steps: int


def gpu_online(env, params: OnlineParams, n_items: int, tasklets: int, steps: int,
               aggregate: str = "mean", threads_per_block: int = 64) -> GpuOnlineResult:
    """The DPUs' online work on the GPU (or in the CUDA simulator): ``n_items`` tables of
    ``tasklets`` lanes, the rounds and aggregation of ``aggregate``."""
    if not numba_cuda_installed():
        raise RuntimeError("the GPU baseline needs numba-cuda: pip install 'pimrl[gpu]'")
    measurable, device = gpu_status()
    if not measurable and not simulator_enabled():
        raise RuntimeError(f"GPU: not measured ({device})")
    kernel = _build()
    spec = parse_aggregate(aggregate)
    de = dpu_env(env)
    tabs = stack_envs([de], params.dtype, params.frac_bits)
    is_int = params.dtype == "int32"
    S, A = de.n_states, de.n_actions
    rew_f = tabs["reward"][0] if not is_int else np.zeros((1, 1, 1), np.float32)
    rew_x = tabs["reward"][0] if is_int else np.zeros((1, 1, 1), np.int32)
    words = np.tile(params.words(de.max_episode_steps, de.n_start), (n_items, 1))
    fparams = np.tile(np.array([params.alpha, params.gamma], np.float32), (n_items, 1))
    lanes = kernels.new_lanes(n_items, tasklets)
    rng = lane_seeds(params.seed, np.arange(n_items * tasklets)).reshape(n_items, tasklets)
    qf = np.zeros((n_items, S, A) if not is_int else (1, 1, 1), np.float32)
    qx = np.zeros((n_items, S, A) if is_int else (1, 1, 1), np.int32)
    visits = np.zeros((n_items, S, A) if spec.needs_visits else (1, 1, 1), np.uint32)
    d = {k: cuda.to_device(np.ascontiguousarray(v)) for k, v in (
        ("thr", tabs["threshold"][0]), ("nxt", tabs["next_state"][0]), ("rew_f", rew_f),
        ("rew_x", rew_x), ("term", tabs["terminated"][0]), ("sthr", tabs["start_threshold"][0]),
        ("sstate", tabs["start_state"][0]), ("fparams", fparams), ("lanes", lanes), ("rng", rng),
        ("qf", qf), ("qx", qx), ("visits", visits))}
    counters = np.zeros((n_items, len(ONLINE_COUNTERS)), np.int64)
    d_counters = cuda.to_device(counters)
    blocks = (n_items + threads_per_block - 1) // threads_per_block
    kernel_s = 0.0
    total = np.zeros_like(counters)
    visits_before = 0
    agg = None
    round_steps = np.diff(even_bounds(int(steps), spec.rounds))
    for r, k in enumerate(round_steps):
        words[:, OP_STEPS] = k
        d_words = cuda.to_device(words)
        if measurable:
            e0, e1 = cuda.event(timing=True), cuda.event(timing=True)
            e0.record()
        kernel[blocks, threads_per_block](d["thr"], d["nxt"], d["rew_f"], d["rew_x"], d["term"],
                                          d["sthr"], d["sstate"], d_words, d["fparams"],
                                          d["lanes"], d["rng"], d["qf"], d["qx"], d["visits"],
                                          d_counters)
        if measurable:
            e1.record()
            e1.synchronize()
            kernel_s += cuda.event_elapsed_time(e0, e1) / 1e3
        total += d_counters.copy_to_host()
        raw = (d["qx"] if is_int else d["qf"]).copy_to_host()
        v = None
        if spec.needs_visits:
            cur = d["visits"].copy_to_host().astype(np.int64)
            v, visits_before = cur - visits_before, cur
        agg = AGGREGATORS[spec.name](raw, raw_scale(params.dtype, params.frac_bits), v)
        if r < len(round_steps) - 1:
            back = np.ascontiguousarray(np.broadcast_to(
                float_to_raw(agg, params.dtype, params.frac_bits), raw.shape))
            d["qx" if is_int else "qf"] = cuda.to_device(back)
    return GpuOnlineResult(agg, raw, total, measurable, device,
                           kernel_s if measurable else float("nan"), int(total[:, kernels.OC_STEPS].sum()))


__all__ = ["gpu_online", "GpuOnlineResult"]
